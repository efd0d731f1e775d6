package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tetherhq/tether/claude/claudetest"
	"github.com/tetherhq/tether/host"
	"github.com/tetherhq/tether/serve"
	"github.com/tetherhq/tether/serve/servetest"
	"github.com/tetherhq/tether/team"
)

// TestRealCLIServeTeamNATSEmbedded runs `tether serve --team
// --nats-embedded` (people named by a trusted proxy's header): the team
// lives on the embedded cluster's JetStream, not a local one of its own;
// Alice's session runs a real CLI turn on the embedded agent, Bob's send
// into it is refused, and the audit log has the start and the prompt
// once each (the prompt recorded by the agent, where it ran) and Bob's
// refusal. Notifications are on (--notify); a session in a worktree
// runs and merges, and one of a repository outside the person's roots is
// refused.
func TestRealCLIServeTeamNATSEmbedded(t *testing.T) {
	requireCLI(t)
	api := claudetest.NewMessagesServer(&claudetest.MessagesOptions{Replies: []*claudetest.Reply{claudetest.TextReply("hi from the cluster")}})
	t.Cleanup(api.Close)
	cli := claudetest.NewRealCLI(t, api)
	for k, v := range cli.Env {
		t.Setenv(k, v)
	}
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	for _, u := range []string{"alice", "bob"} {
		os.MkdirAll(filepath.Join(ws, u), 0o755)
	}
	state := filepath.Join(dir, "state")
	file := filepath.Join(dir, "team.yaml")
	os.WriteFile(file, []byte(fmt.Sprintf(`people:
  - {email: alice@example.com, name: Alice, role: admin}
  - {email: bob@example.com, name: Bob, role: member}
policies:
  admin: {cwd_roots: ["%[1]s/{user}"]}
  member: {cwd_roots: ["%[1]s/{user}"]}
isolation: off
state_dir: %[2]s
`, ws, state)), 0o600)

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	sctx, stop := context.WithCancel(ctx)
	done := make(chan int, 1)
	out, outW := io.Pipe()
	errb := &syncWriter{}
	go func() {
		defer outW.Close()
		done <- Main(sctx, []string{"serve", "--team", file, "--proxy-header", "X-Forwarded-Email", "--trusted-proxy", "127.0.0.1",
			"--nats-embedded", "--nats-store", filepath.Join(dir, "nats"), "--cli", cli.Path, "--addr", "127.0.0.1:0",
			"--notify", "--notify-dir", filepath.Join(dir, "notify")}, strings.NewReader(""), outW, errb)
	}()
	defer func() {
		stop()
		if code := <-done; code != 0 {
			t.Errorf("exit %d; stderr %s", code, errb.String())
		}
	}()
	var base string
	sc := bufio.NewScanner(out)
	for base == "" && sc.Scan() {
		if u, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "open "); ok {
			base = strings.TrimSuffix(u, " and sign in")
		}
	}
	go io.Copy(io.Discard, out)
	if !strings.HasPrefix(base, "http://127.0.0.1:") {
		t.Fatalf("no address; stderr %s", errb.String())
	}
	get := func(who, path string) (int, []byte) {
		req, _ := http.NewRequestWithContext(ctx, "GET", base+path, nil)
		req.Header.Set("X-Forwarded-Email", who)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	dial := func(who string) *teamWS {
		return dialTeamWS(t, ctx, base, &servetest.DialOptions{Header: http.Header{"X-Forwarded-Email": {who}}})
	}

	// Notifications are on over the cluster (the bell's settings).
	if st, body := get("alice@example.com", "/api/notify"); st != 200 || !strings.Contains(string(body), `"vapid_public_key":"B`) {
		t.Fatalf("/api/notify with --nats: %d %s", st, body)
	}
	a := dial("alice@example.com")
	f := a.call(ctx, map[string]any{"type": "start"})
	if f.Error != nil {
		t.Fatalf("start: %+v", f.Error)
	}
	var started struct{ Session serve.SessionInfo }
	json.Unmarshal(f.Result, &started)
	id := started.Session.ID
	if started.Session.Person != "alice@example.com" || started.Session.Cwd != filepath.Join(ws, "alice") {
		t.Fatalf("started %+v", started.Session)
	}
	if f := a.call(ctx, map[string]any{"type": "subscribe", "session": id}); f.Error != nil {
		t.Fatal(f.Error)
	}
	if f := a.do(ctx, id, map[string]any{"type": "send", "text": "hello"}); f.Error != nil {
		t.Fatal(f.Error)
	}
	a.next(ctx, "the answer", func(f *servetest.Frame) bool {
		return servetest.IsEvent(id, host.EventDelivery)(f) && strings.Contains(string(f.Event.Data), `"answered"`)
	})
	b := dial("bob@example.com")
	if f := b.do(ctx, id, map[string]any{"type": "send", "text": "not yours"}); f.Error == nil || f.Error.Code != serve.CodeForbidden {
		t.Fatalf("bob's send: %+v", f.Error)
	}

	// The agent records the prompt when it has run it: wait for it.
	var evs []team.AuditEvent
	count := map[string]int{}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		st, body := get("alice@example.com", "/api/audit")
		evs = nil
		if err := json.Unmarshal(body, &evs); st != 200 || err != nil {
			t.Fatalf("/api/audit: %d %s", st, body)
		}
		clear(count)
		for _, e := range evs {
			count[e.Action+" "+e.Actor+" "+e.Session]++
		}
		if count[team.ActionPrompt+" alice@example.com "+id] > 0 || time.Now().After(deadline) {
			break
		}
	}
	for k, want := range map[string]int{
		team.ActionStart + " alice@example.com " + id:  1,
		team.ActionPrompt + " alice@example.com " + id: 1,
		team.ActionRefused + " bob@example.com " + id:  1,
	} {
		if count[k] != want {
			t.Errorf("%s: %d events, want %d: %+v", k, count[k], want, evs)
		}
	}
	// No JetStream of its own: the team is on the cluster's.
	if _, err := os.Stat(filepath.Join(state, "jetstream")); err == nil {
		t.Error("serve --nats-embedded --team started a local JetStream too")
	}

	// A session in a worktree, over the cluster: the agent makes it, the
	// real CLI runs a turn in it, a merge brings its work into main. A
	// worktree of a repository that is not wholly under Alice's roots is
	// refused, and nothing is made.
	git := func(dir string, args ...string) string {
		t.Helper()
		out, err := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false"}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	proj := filepath.Join(ws, "alice", "proj")
	os.MkdirAll(proj, 0o755)
	os.WriteFile(filepath.Join(proj, "README"), []byte("hello\n"), 0o644)
	git(proj, "init", "-q", "-b", "main")
	git(proj, "add", ".")
	git(proj, "commit", "-qm", "first")
	f = a.call(ctx, map[string]any{"type": "start", "cwd": proj, "worktree": true})
	if f.Error != nil {
		t.Fatalf("worktree start: %+v", f.Error)
	}
	json.Unmarshal(f.Result, &started)
	wid, wt := started.Session.ID, started.Session.Worktree
	if !strings.HasPrefix(wt.Path, filepath.Join(proj, ".claude", "worktrees")+"/") || wt.Base != "main" || started.Session.Cwd != wt.Path {
		t.Fatalf("worktree session %+v", started.Session)
	}
	if f := a.call(ctx, map[string]any{"type": "subscribe", "session": wid}); f.Error != nil {
		t.Fatal(f.Error)
	}
	api.Enqueue(claudetest.TextReply("hi from the worktree"))
	if f := a.do(ctx, wid, map[string]any{"type": "send", "text": "hello"}); f.Error != nil {
		t.Fatal(f.Error)
	}
	a.next(ctx, "the worktree turn's answer", func(f *servetest.Frame) bool {
		return servetest.IsEvent(wid, host.EventDelivery)(f) && strings.Contains(string(f.Event.Data), `"answered"`)
	})
	os.WriteFile(filepath.Join(wt.Path, "w.txt"), []byte("from the worktree\n"), 0o644)
	if f := a.do(ctx, wid, map[string]any{"type": "close"}); f.Error == nil || f.Error.Code != host.CodeWorktreeUnmerged {
		t.Fatalf("close of unmerged work: %+v", f.Error)
	}
	if f := a.do(ctx, wid, map[string]any{"type": "worktree_merge"}); f.Error != nil {
		t.Fatalf("merge: %+v", f.Error)
	}
	if got := git(proj, "show", "main:w.txt"); got != "from the worktree" {
		t.Fatalf("main's w.txt = %q", got)
	}
	git(ws, "init", "-q", "-b", "main") // Alice's folder is now inside a repository whose top, ws, is not hers
	if f := a.call(ctx, map[string]any{"type": "start", "cwd": filepath.Join(ws, "alice"), "worktree": true}); f.Error == nil || f.Error.Code != serve.CodeForbidden {
		t.Fatalf("a worktree of a repository outside the roots: %+v", f.Error)
	}
	if _, err := os.Stat(filepath.Join(ws, ".claude")); !os.IsNotExist(err) {
		t.Fatalf("a refused worktree start made something: %v", err)
	}
}

// syncWriter is a strings.Builder written by the server and read by
// the test.
type syncWriter struct {
	mu sync.Mutex
	b  strings.Builder
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *syncWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}
