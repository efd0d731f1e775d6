package cluster_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tetherhq/tether/cluster"
	"github.com/tetherhq/tether/host"
	"github.com/tetherhq/tether/internal/gittest"
	"github.com/tetherhq/tether/team"
)

func codeOf(err error) string {
	var ce *host.CommandError
	if errors.As(err, &ce) {
		return ce.Code
	}
	return ""
}

// startInWorktree starts a NATS server, agent a1, a client and its
// backend, and a session in a worktree of a new repository.
func startInWorktree(t *testing.T) (repo string, ns *natsServer, a1 *cluster.Agent, c *cluster.Client, b *cluster.Backend, hi host.SessionInfo) {
	t.Helper()
	repo = gittest.NewRepo(t, t.TempDir(), nil)
	ns = newNATS(t, nil)
	a1 = newAgent(t, ns.URL(), "a1", 4)
	c = newClient(t, ns.URL())
	b = cluster.NewBackend(c, nil)
	hi, err := b.Start(testCtx(t), &host.StartRequest{Cwd: repo, Worktree: true})
	if err != nil {
		t.Fatal(err)
	}
	return repo, ns, a1, c, b, hi
}

// applesThenExit runs a turn ("apples") on session id, waits for its
// mirror, and ends the session's CLI on its own ("exit"): the session is
// then listed ended, to be resumed from its mirror.
func applesThenExit(t *testing.T, url string, c *cluster.Client, id string) {
	t.Helper()
	f := follow(t, c, id, 0)
	send(t, c, id, "apples")
	f.wait(t, "the first turn", result("echo: apples"))
	waitFor(t, "the transcript mirrored", mirrored(t, url, id, "apples"))
	send(t, c, id, "exit")
	f.wait(t, "the end", func(ev host.Event) bool { return ev.Kind == host.EventClosed })
	waitFor(t, "the session ended", func() bool {
		s, err := c.Session(testCtx(t), id)
		return err == nil && s.Ended && !s.Closed
	})
}

// A session in a worktree whose CLI ended on its own is resumed as a
// lone serve resumes it: a new session in its place, the conversation
// restored, in the same worktree; the ended one leaves the list and is
// not resumed twice. A closed session is not resumed.
func TestEndedWorktreeSessionResumedOverTheCluster(t *testing.T) {
	ctx := testCtx(t)
	_, ns, _, c, b, hi := startInWorktree(t)
	wt := hi.Worktree
	applesThenExit(t, ns.URL(), c, hi.ID)

	res, err := b.Do(ctx, hi.ID, &host.Command{Type: host.CommandResume})
	if err != nil {
		t.Fatal(err)
	}
	next := *res.Session
	if next.ID == hi.ID || next.SessionID != hi.SessionID || next.Cwd != wt.Path || next.Worktree.Path != wt.Path ||
		next.Worktree.Branch != wt.Branch || next.Worktree.State != host.WorktreeActive || next.Title != "apples" || next.Ended {
		t.Fatalf("resumed: %+v, want a new session of %s in %s", next, hi.SessionID, wt.Path)
	}
	waitFor(t, "the new session in the ended one's place", func() bool {
		list, err := b.List(ctx)
		return err == nil && len(list) == 1 && list[0].ID == next.ID && list[0].Worktree.Path == wt.Path
	})
	if _, err := b.Do(ctx, hi.ID, &host.Command{Type: host.CommandResume}); !errors.Is(err, host.ErrNoSession) {
		t.Fatalf("a second resume of the ended session: %v, want no_session", err)
	}
	// A list is the caller's to change: the next one is as it was (the
	// client decodes each registry entry once and hands out copies).
	for range 2 {
		list, err := c.Sessions(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range list {
			if s.Worktree == nil || s.Worktree.Path != wt.Path {
				t.Fatalf("listed %s with worktree %+v", s.ID, s.Worktree)
			}
			s.Worktree.Path = "changed by the caller"
			s.Owners = append(s.Owners[:0], "changed")
		}
	}
	nf := follow(t, c, next.ID, 0)
	send(t, c, next.ID, "recall")
	nf.wait(t, "the recall in the worktree", resultContaining("remember: apples"))
	snap, err := b.Snapshot(ctx, next.ID)
	if err != nil || snap.Worktree == nil || snap.Worktree.Path != wt.Path {
		t.Fatalf("snapshot of the resumed session: %+v, %v", snap, err)
	}

	// Closed (its work kept) is closed: not resumed.
	if _, err := b.Do(ctx, next.ID, &host.Command{Type: host.CommandClose, Worktree: host.WorktreeKeep}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the session closed", func() bool {
		s, err := c.Session(ctx, next.ID)
		return err == nil && s.Closed
	})
	if _, err := b.Do(ctx, next.ID, &host.Command{Type: host.CommandResume}); !errors.Is(err, host.ErrNoSession) {
		t.Fatalf("resume of a closed session: %v, want no_session", err)
	}
}

// A session in a worktree, through the bus: the agent makes the
// worktree, the registry (and so serve's list) carries it, its commands
// run on the agent (a close of unmerged work asks first, a merge reaches
// the base, a discard removes it and ends the session), and a failover
// goes on in the same worktree.
func TestWorktreeOverTheCluster(t *testing.T) {
	ctx := testCtx(t)
	repo, ns, a1, c, b, hi := startInWorktree(t)
	wt := hi.Worktree
	if wt.Path == "" || wt.Base != "main" || !strings.HasPrefix(wt.Branch, "tether/") || wt.Repo != repo || hi.Cwd != wt.Path ||
		wt.State != host.WorktreeActive {
		t.Fatalf("started %+v", hi)
	}
	if got := gittest.Run(t, wt.Path, "rev-parse", "--abbrev-ref", "HEAD"); got != wt.Branch {
		t.Fatalf("the worktree is on %s, want %s", got, wt.Branch)
	}
	// The list (the registry, read by every serve) says where it runs.
	waitFor(t, "the worktree in the list", func() bool {
		list, err := b.List(ctx)
		return err == nil && len(list) == 1 && list[0].Worktree.Path == wt.Path && list[0].Worktree.Branch == wt.Branch
	})
	f := follow(t, c, hi.ID, 0)
	send(t, c, hi.ID, "apples")
	f.wait(t, "first turn", result("echo: apples"))
	if err := os.WriteFile(filepath.Join(wt.Path, "a.txt"), []byte("from a\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	// A close asks what to do with unmerged work, as on a lone serve.
	if _, err := b.Do(ctx, hi.ID, &host.Command{Type: host.CommandClose}); codeOf(err) != host.CodeWorktreeUnmerged {
		t.Fatalf("close of unmerged work: %v, want worktree_unmerged", err)
	}
	if _, err := os.Stat(filepath.Join(wt.Path, "a.txt")); err != nil {
		t.Fatalf("a refused close touched the worktree: %v", err)
	}

	// Its agent dies; another takes it over in the same worktree.
	newAgent(t, ns.URL(), "a2", 4)
	waitFor(t, "the transcript mirrored", mirrored(t, ns.URL(), hi.ID, "apples"))
	waitFor(t, "the registry holds the worktree", func() bool {
		s, err := c.Session(ctx, hi.ID)
		return err == nil && s.Worktree != nil
	})
	cluster.Crash(a1)
	waitDisconnected(t, ctx, c, hi.ID)
	res, err := b.Do(ctx, hi.ID, &host.Command{Type: host.CommandResume})
	if err != nil {
		t.Fatal(err)
	}
	if res.Session.Owner != "a2" || res.Session.Cwd != wt.Path || res.Session.Worktree.Path != wt.Path {
		t.Fatalf("after failover: %+v", res.Session)
	}
	send(t, c, hi.ID, "recall")
	f.wait(t, "the recall in the worktree", resultContaining("remember: apples"))
	snap, err := b.Snapshot(ctx, hi.ID)
	if err != nil || snap.Worktree == nil || snap.Worktree.Path != wt.Path {
		t.Fatalf("snapshot after failover: cwd %q, %+v, %v", snap.Cwd, snap.Worktree, err)
	}

	// Merge, on the new agent.
	mr, err := b.Do(ctx, hi.ID, &host.Command{Type: host.CommandWorktreeMerge})
	if err != nil {
		t.Fatal(err)
	}
	if mr.Worktree == nil || mr.Worktree.State != host.WorktreeMerged || mr.Worktree.Commit != gittest.Run(t, repo, "rev-parse", "main") {
		t.Fatalf("merge result %+v", mr.Worktree)
	}
	if got := gittest.Run(t, repo, "show", "main:a.txt"); got != "from a" {
		t.Fatalf("main's a.txt = %q", got)
	}
	waitFor(t, "the merge in the list", func() bool {
		list, err := b.List(ctx)
		return err == nil && len(list) == 1 && list[0].Worktree.State == host.WorktreeMerged
	})

	// A second session: discard needs confirm, then removes the worktree
	// and its branch and ends the session (it leaves the list).
	other, err := b.Start(ctx, &host.StartRequest{Cwd: repo, Worktree: true})
	if err != nil {
		t.Fatal(err)
	}
	if other.Worktree.Path == wt.Path {
		t.Fatal("two sessions share a worktree")
	}
	if _, err := b.Do(ctx, other.ID, &host.Command{Type: host.CommandWorktreeDiscard}); codeOf(err) != host.CodeBadRequest {
		t.Fatalf("discard without confirm: %v", err)
	}
	dr, err := b.Do(ctx, other.ID, &host.Command{Type: host.CommandWorktreeDiscard, Confirm: true})
	if err != nil || dr.Worktree == nil || dr.Worktree.State != host.WorktreeDiscarded {
		t.Fatalf("discard: %+v, %v", dr, err)
	}
	if _, err := os.Stat(other.Worktree.Path); !os.IsNotExist(err) {
		t.Fatalf("the discarded worktree is still there: %v", err)
	}
	if out := gittest.Run(t, repo, "branch", "--list", other.Worktree.Branch); out != "" {
		t.Fatalf("the discarded branch is still there: %q", out)
	}
	waitFor(t, "the discarded session out of the list", func() bool {
		list, err := b.List(ctx)
		return err == nil && len(list) == 1 && list[0].ID == hi.ID
	})

	// A resumed conversation does not go into a new worktree.
	if _, err := b.Start(ctx, &host.StartRequest{Cwd: repo, Worktree: true, Resume: "6f1d7a52-8ad3-4c55-9d35-ef9f3c7d1a11"}); codeOf(err) != host.CodeBadRequest {
		t.Fatalf("a resume into a new worktree: %v", err)
	}
	// Nor does a folder outside any repository make one.
	if _, err := b.Start(ctx, &host.StartRequest{Cwd: t.TempDir(), Worktree: true}); codeOf(err) != host.CodeBadRequest {
		t.Fatalf("a worktree outside a repository: %v", err)
	}
}

// fakeAgent keeps a registry entry for an agent that advertises wire
// revision rev (as a process of an older release would), until the test
// ends. It takes nothing from the queue.
func fakeAgent(t *testing.T, url, id string, rev int) {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	started := time.Now().UTC()
	beat := func() error {
		m := nats.NewMsg("$KV." + cluster.BucketAgents + "." + id)
		m.Header.Set("Tether-Wire", itoa(rev))
		m.Data = []byte(`{"id":"` + id + `","capacity":1,"sessions":0,"heartbeat":"` + time.Now().UTC().Format(time.RFC3339Nano) +
			`","started":"` + started.Format(time.RFC3339Nano) + `"}`)
		_, err := js.PublishMsg(testCtx(t), m)
		return err
	}
	if err := beat(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		tk := time.NewTicker(heartbeat / 3)
		defer tk.Stop()
		for {
			select {
			case <-done:
				return
			case <-tk.C:
				_ = beat()
			}
		}
	}()
	t.Cleanup(func() { close(done); <-stopped })
}

// A worktree start is refused, before anything is queued, while a live
// agent speaks a revision before 4 (it would ignore the field and start
// the session in cwd itself); other starts go on.
func TestWorktreeStartRefusedByOldAgent(t *testing.T) {
	ctx := testCtx(t)
	repo := gittest.NewRepo(t, t.TempDir(), nil)
	ns := newNATS(t, nil)
	newAgent(t, ns.URL(), "a1", 4)
	c := newClient(t, ns.URL())
	fakeAgent(t, ns.URL(), "old3", 3)
	waitFor(t, "the old agent live", func() bool { return cluster.AgentWire(ctx, c, "old3") == 3 })

	_, err := c.Start(ctx, &cluster.StartOptions{ID: "wt1", Cwd: repo, Worktree: true})
	var ue *cluster.UnsupportedError
	if !errors.As(err, &ue) || !errors.Is(err, cluster.ErrUnsupported) || ue.Revision != 3 || !strings.Contains(err.Error(), "worktree") {
		t.Fatalf("a worktree start with a revision 3 agent live: %v", err)
	}
	// Through serve's backend: the protocol's unsupported.
	if _, err := cluster.NewBackend(c, nil).Start(ctx, &host.StartRequest{Cwd: repo, Worktree: true}); codeOf(err) != host.CodeUnsupported {
		t.Fatalf("through the backend: %v, want unsupported", err)
	}
	if _, err := c.Session(ctx, "wt1"); !errors.Is(err, cluster.ErrNoSession) {
		t.Fatalf("the refused start is in the registry: %v", err)
	}
	if out := gittest.Run(t, repo, "worktree", "list"); strings.Count(out, "\n") != 0 {
		t.Fatalf("a worktree was made: %s", out)
	}
	js, _ := jetstream.New(natsConn(t, ns.URL()))
	st, err := js.Stream(ctx, cluster.StreamStart)
	if err != nil {
		t.Fatal(err)
	}
	if info, err := st.Info(ctx); err != nil || info.State.Msgs != 0 {
		t.Fatalf("start queue: %+v, %v", info.State, err)
	}
	// A session without a worktree still starts.
	if _, err := c.Start(ctx, &cluster.StartOptions{Cwd: repo}); err != nil {
		t.Fatal(err)
	}
}

func natsConn(t *testing.T, url string) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// An agent serving a team checks a worktree start itself: the whole
// repository must be under the person's roots, not just cwd (the
// worktree goes under its top folder); nothing is made when refused.
func TestTeamAgentWorktreeRoots(t *testing.T) {
	ns := newNATS(t, nil)
	repo := gittest.NewRepo(t, t.TempDir(), nil)
	root := filepath.Join(repo, "sub")
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	tt := newTestTeamIn(t, ns.URL(), root)
	teamAgent(t, ns.URL(), "a1", tt)
	c := newClient(t, ns.URL())
	actx := team.NewContext(testCtx(t), alice)

	// cwd alone is allowed.
	if _, err := c.Start(actx, &cluster.StartOptions{Cwd: root}); err != nil {
		t.Fatal(err)
	}
	_, err := c.Start(actx, &cluster.StartOptions{ID: "wt", Cwd: root, Worktree: true})
	if !isForbidden(err) || !strings.Contains(err.Error(), "whole repository under your roots") {
		t.Fatalf("a worktree of a repository outside the roots: %v, want forbidden", err)
	}
	if _, err := c.Session(actx, "wt"); !errors.Is(err, cluster.ErrNoSession) {
		t.Fatalf("the refused start is in the registry: %v", err)
	}
	if out := gittest.Run(t, repo, "worktree", "list"); strings.Count(out, "\n") != 0 {
		t.Fatalf("a worktree was made: %s", out)
	}

	// A repository wholly under the roots: allowed, the session is the
	// person's.
	inside := gittest.NewRepo(t, filepath.Join(root, "proj"), nil)
	info := mustStart(actx, t, c, &cluster.StartOptions{Cwd: inside, Worktree: true})
	if info.Worktree == nil || info.Worktree.Repo != inside || info.Person != alice.Subject {
		t.Fatalf("started %+v", info)
	}
}
