package serve_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
	"github.com/tetherhq/tether/host"
	"github.com/tetherhq/tether/internal/gittest"
	"github.com/tetherhq/tether/serve"
	"github.com/tetherhq/tether/team"
)

// startWorktree starts a session in a worktree of repo and returns its
// SessionInfo.
func startWorktree(t *testing.T, ctx context.Context, cl *wsClient, repo string) serve.SessionInfo {
	t.Helper()
	var r struct{ Session serve.SessionInfo }
	if err := json.Unmarshal(cl.ok(ctx, map[string]any{"type": "start", "cwd": repo, "worktree": true}), &r); err != nil {
		t.Fatal(err)
	}
	return r.Session
}

// A session started with "worktree" runs in a worktree of its own; a
// merge reaches the base branch; a close of unmerged work is refused
// with worktree_unmerged until it says keep or discard. The same over
// the cluster (`tether serve --nats`): the agent makes the worktree and
// runs its commands, the registry lists it.
func TestWorktreeOverTheProtocol(t *testing.T) {
	t.Run("Local", func(t *testing.T) { testWorktreeOverTheProtocol(t, false) })
	t.Run("Cluster", func(t *testing.T) { testWorktreeOverTheProtocol(t, true) })
}

func testWorktreeOverTheProtocol(t *testing.T, overCluster bool) {
	repo := gittest.NewRepo(t, t.TempDir(), nil)
	e := newEnv(t, &envOptions{cluster: overCluster})
	ctx := testCtx(t)
	cl := e.dial(ctx)

	a, b := startWorktree(t, ctx, cl, repo), startWorktree(t, ctx, cl, repo)
	if a.Worktree.Path == "" || a.Worktree.Path == b.Worktree.Path || a.Cwd != a.Worktree.Path || a.Worktree.Base != "main" {
		t.Fatalf("sessions %+v and %+v: want two worktrees of main", a.Worktree, b.Worktree)
	}
	if err := os.WriteFile(filepath.Join(a.Worktree.Path, "a.txt"), []byte("from a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(b.Worktree.Path, "b.txt"), []byte("from b\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	// Closing b asks first; nothing of it is touched.
	f := cl.do(ctx, b.ID, map[string]any{"type": "close"})
	if f.Error == nil || f.Error.Code != host.CodeWorktreeUnmerged {
		t.Fatalf("close of unmerged work: %+v, want worktree_unmerged", f.Error)
	}
	if f = cl.do(ctx, b.ID, map[string]any{"type": "worktree_discard"}); f.Error == nil || f.Error.Code != serve.CodeBadRequest {
		t.Fatalf("discard without confirm: %+v", f.Error)
	}
	if _, err := os.Stat(filepath.Join(b.Worktree.Path, "b.txt")); err != nil {
		t.Fatalf("a refused close touched the worktree: %v", err)
	}

	var res host.CommandResult
	if err := json.Unmarshal(cl.ok(ctx, map[string]any{"type": "do", "session": a.ID, "command": map[string]any{"type": "worktree_merge"}}), &res); err != nil {
		t.Fatal(err)
	}
	if res.Worktree == nil || res.Worktree.State != host.WorktreeMerged || res.Worktree.Commit != gittest.Run(t, repo, "rev-parse", "main") {
		t.Fatalf("merge result %+v", res.Worktree)
	}
	if got := gittest.Run(t, repo, "show", "main:a.txt"); got != "from a" {
		t.Fatalf("main's a.txt = %q", got)
	}
	if _, err := os.Stat(filepath.Join(repo, "b.txt")); !os.IsNotExist(err) {
		t.Fatalf("b's file reached the main checkout: %v", err)
	}
	// The list says so.
	from := 0
	cl.waitFrame(ctx, &from, "a session frame with the merge", func(f *frame) bool {
		var si serve.SessionInfo
		return f.Type == "session" && json.Unmarshal(f.Session, &si) == nil && si.ID == a.ID && si.Worktree.State == host.WorktreeMerged
	})

	if err := json.Unmarshal(cl.ok(ctx, map[string]any{"type": "do", "session": b.ID, "command": map[string]any{"type": "close", "worktree": "keep"}}), &res); err != nil {
		t.Fatal(err)
	}
	if res.Worktree.State != host.WorktreeKept || gittest.Run(t, repo, "show", b.Worktree.Branch+":b.txt") != "from b" {
		t.Fatalf("kept %+v", res.Worktree)
	}
}

// teamRepoServer serves a team under the real team.Authorizer, members'
// roots <root>/{user}, on a local backend over the fake CLI.
func teamRepoServer(t *testing.T, root string) *teamEnv {
	t.Helper()
	ctx := testCtx(t)
	st := localTeamStore(t, ctx)
	cfg, err := team.ParseConfig([]byte(`people:
  - {email: alice@example.com, name: Alice, role: member}
  - {email: bob@example.com, name: Bob, role: member}
  - {email: vera@example.com, name: Vera, role: viewer}
policies:
  member: {cwd_roots: ["` + root + `/{user}"]}
  viewer: {cwd_roots: ["` + root + `/{user}"]}
isolation: off
`))
	if err != nil {
		t.Fatal(err)
	}
	rec := &memRecorder{}
	authz := team.NewAuthorizer(cfg, st, &team.AuthorizerOptions{Recorder: rec})
	to := &serve.TeamOptions{Auth: fakeAuth{}, Config: cfg, Authorizer: serve.NewTeamAuthorizer(authz, st)}
	m := host.NewManager(nil)
	b := serve.NewLocalBackend(m, &serve.LocalOptions{Session: &host.Options{
		CLI: &claude.Options{Transport: &claudetest.FakeCLI{Script: fakeCLI}},
	}, Team: to})
	srv := serve.NewServer(b, &serve.Options{Team: to})
	hs := httptest.NewServer(srv)
	t.Cleanup(func() {
		hs.Close()
		srv.Close()
		m.Close()
	})
	return &teamEnv{t: t, http: hs, m: m}
}

// Team policy holds: a worktree needs its whole repository under the
// person's roots (the worktree goes under the repository's top, and the
// session needs its git directory); only the owner merges or discards.
func TestTeamWorktreePolicy(t *testing.T) {
	root := t.TempDir()
	// root is a repository; alice's root, root/alice, is inside it, and
	// so is a repository of her own, root/alice/proj.
	gittest.NewRepo(t, root, nil)
	proj := gittest.NewRepo(t, filepath.Join(root, "alice", "proj"), nil)
	e := teamRepoServer(t, root)
	ctx := testCtx(t)
	alice, bob, vera := e.dial(ctx, "alice@example.com"), e.dial(ctx, "bob@example.com"), e.dial(ctx, "vera@example.com")

	f := alice.call(ctx, map[string]any{"type": "start", "cwd": filepath.Join(root, "alice"), "worktree": true})
	if f.Error == nil || f.Error.Code != serve.CodeForbidden || !strings.Contains(f.Error.Message, "worktree") {
		t.Fatalf("a worktree of a repository outside her roots: %+v, want forbidden", f.Error)
	}
	if out := gittest.Run(t, root, "worktree", "list"); strings.Count(out, "\n") != 0 {
		t.Fatalf("a refused start made a worktree: %s", out)
	}
	if _, err := os.Stat(filepath.Join(root, ".claude")); !os.IsNotExist(err) {
		t.Fatalf("a refused start left a folder: %v", err)
	}

	si := startWorktree(t, ctx, alice, proj)
	if !strings.HasPrefix(si.Worktree.Path, proj+string(filepath.Separator)) {
		t.Fatalf("worktree %s not under %s", si.Worktree.Path, proj)
	}
	if err := os.WriteFile(filepath.Join(si.Worktree.Path, "x.txt"), []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if st, _, body := e.as("alice@example.com", "POST", "/api/sessions/"+si.ID+"/share",
		`{"grants":[{"person":"bob@example.com","level":"collaborator"},{"person":"vera@example.com","level":"viewer"}]}`); st != 200 {
		t.Fatalf("share: %d %s", st, body)
	}
	mainWas := gittest.Run(t, proj, "rev-parse", "main")
	for _, who := range []*wsClient{bob, vera} {
		for _, cmd := range []map[string]any{{"type": "worktree_merge"}, {"type": "worktree_discard", "confirm": true}, {"type": "worktree_keep"}} {
			if f := who.do(ctx, si.ID, cmd); f.Error == nil || f.Error.Code != serve.CodeForbidden {
				t.Fatalf("%v by a non-owner: %+v, want forbidden", cmd, f.Error)
			}
		}
	}
	if now := gittest.Run(t, proj, "rev-parse", "main"); now != mainWas {
		t.Fatal("a refused merge moved main")
	}
	if _, err := os.Stat(filepath.Join(si.Worktree.Path, "x.txt")); err != nil {
		t.Fatalf("a refused discard removed: %v", err)
	}
	if f := alice.do(ctx, si.ID, map[string]any{"type": "worktree_merge"}); f.Error != nil {
		t.Fatalf("the owner's merge: %+v", f.Error)
	}
	if got := gittest.Run(t, proj, "show", "main:x.txt"); got != "x" {
		t.Fatalf("main's x.txt = %q", got)
	}
}

// TestRealCLITeamIsolatedWorktree: a worktree session under bubblewrap,
// its repository outside the person's workspace. The sandbox gets the
// repository (the worktree and the git directory its .git file points
// into): git works inside, the session's Bash writes in its worktree,
// and the owner's merge brings that into main.
func TestRealCLITeamIsolatedWorktree(t *testing.T) {
	ctx := testCtx(t)
	iso := newIsolation(t, ctx)
	cfg := &fakeConfig{root: t.TempDir()}
	if err := os.MkdirAll(cfg.Workspace(&me_alice), 0o755); err != nil {
		t.Fatal(err)
	}
	// The session starts in a folder of the repository, not at its top:
	// the sandbox must still get the top (the worktree and .git).
	repo := gittest.NewRepo(t, filepath.Join(t.TempDir(), "proj"), nil)
	sub := filepath.Join(repo, "sub")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sub, "keep"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	gittest.Run(t, repo, "add", ".")
	gittest.Run(t, repo, "commit", "-q", "-m", "sub")
	api := claudetest.NewMessagesServer(&claudetest.MessagesOptions{Replies: []*claudetest.Reply{
		claudetest.ToolUseReply("toolu_git", "Bash", map[string]any{
			"command": "git rev-parse --abbrev-ref HEAD && echo sandboxed > sandboxed.txt && git status --porcelain", "description": "git"}),
		claudetest.TextReply("done"),
		claudetest.ToolUseReply("toolu_git2", "Bash", map[string]any{
			"command": "git rev-parse --abbrev-ref HEAD && echo again > again.txt && git status --porcelain", "description": "git"}),
		claudetest.TextReply("done again"),
	}})
	t.Cleanup(api.Close)
	cli := claudetest.NewRealCLI(t, api)
	to := &serve.TeamOptions{Auth: fakeAuth{}, Config: cfg, Authorizer: newFakeAuthz(), Isolation: iso}
	m := host.NewManager(nil)
	srv := serve.NewServer(serve.NewLocalBackend(m, &serve.LocalOptions{Session: &host.Options{CLI: cli.Options()}, Team: to}), &serve.Options{Team: to})
	hs := httptest.NewServer(srv)
	t.Cleanup(func() { hs.Close(); srv.Close(); m.Close() })
	e := &teamEnv{t: t, http: hs, cfg: cfg}

	alice := e.dial(ctx, "alice@example.com")
	si := startWorktree(t, ctx, alice, sub)
	if si.Cwd != filepath.Join(si.Worktree.Path, "sub") {
		t.Fatalf("cwd %s, want the worktree's sub", si.Cwd)
	}
	alice.ok(ctx, map[string]any{"type": "subscribe", "session": si.ID})
	n := 0
	gitTurn := func(toolUseID, file string) {
		t.Helper()
		if f := alice.do(ctx, si.ID, map[string]any{"type": "send", "text": "run git"}); f.Error != nil {
			t.Fatal(f.Error)
		}
		ev := alice.waitFrame(ctx, &n, "the approval", isKind(si.ID, host.EventApproval))
		var ai host.ApprovalInfo
		json.Unmarshal(ev.Event.Data, &ai)
		if f := alice.do(ctx, si.ID, map[string]any{"type": "answer", "approval": ai.ID, "behavior": "allow"}); f.Error != nil {
			t.Fatal(f.Error)
		}
		alice.waitFrame(ctx, &n, "idle", isState(si.ID, "idle"))
		reqs := api.MessagesRequests()
		tr := reqs[len(reqs)-1].Params.ToolResult(toolUseID)
		if tr == nil || len(tr.Content) == 0 {
			t.Fatal("the Bash result did not reach the API")
		}
		if out := tr.Content[0].Text; !strings.Contains(out, si.Worktree.Branch) || !strings.Contains(out, "?? sub/"+file) {
			t.Fatalf("git in the sandboxed worktree said %q; want its branch and the new file", out)
		}
	}
	gitTurn("toolu_git", "sandboxed.txt")
	// Asleep and woken by the next prompt: confined again with the
	// repository, git still works.
	if err := m.Get(si.ID).Sleep(ctx); err != nil {
		t.Fatal(err)
	}
	gitTurn("toolu_git2", "again.txt")
	if f := alice.do(ctx, si.ID, map[string]any{"type": "worktree_merge"}); f.Error != nil {
		t.Fatalf("merge: %+v", f.Error)
	}
	if got := gittest.Run(t, repo, "show", "main:sub/sandboxed.txt"); got != "sandboxed" {
		t.Fatalf("main's sandboxed.txt = %q", got)
	}
}

// A merge waits for the turn: during one it is refused with busy. A
// session brought back with resume continues in its worktree.
func TestWorktreeBusyAndResume(t *testing.T) {
	repo := gittest.NewRepo(t, t.TempDir(), nil)
	e := newEnv(t, nil)
	ctx := testCtx(t)
	cl := e.dial(ctx)
	si := startWorktree(t, ctx, cl, repo)
	cl.ok(ctx, map[string]any{"type": "subscribe", "session": si.ID})
	n := 0
	if f := cl.do(ctx, si.ID, map[string]any{"type": "send", "text": "tool ls"}); f.Error != nil {
		t.Fatal(f.Error)
	}
	ev := cl.waitFrame(ctx, &n, "the approval", isKind(si.ID, host.EventApproval))
	if f := cl.do(ctx, si.ID, map[string]any{"type": "worktree_merge"}); f.Error == nil || f.Error.Code != serve.CodeBusy {
		t.Fatalf("merge during a turn: %+v, want busy", f.Error)
	}
	var ai host.ApprovalInfo
	json.Unmarshal(ev.Event.Data, &ai)
	cl.ok(ctx, map[string]any{"type": "do", "session": si.ID, "command": map[string]any{"type": "answer", "approval": ai.ID, "behavior": "allow"}})
	cl.waitFrame(ctx, &n, "idle", isState(si.ID, "idle"))

	// Its CLI gone (the session ended without a close), resume.
	e.m.Get(si.ID).Close()
	f := cl.do(ctx, si.ID, map[string]any{"type": "resume"})
	if f.Error != nil {
		t.Fatalf("resume: %+v", f.Error)
	}
	var rr serve.Result
	json.Unmarshal(f.Result, &rr)
	if rr.Session == nil || rr.Session.Worktree.Path != si.Worktree.Path || rr.Session.Cwd != si.Cwd {
		t.Fatalf("resumed %+v; want it in %s", rr.Session, si.Worktree.Path)
	}
	if out := gittest.Run(t, repo, "worktree", "list"); strings.Count(out, "\n") != 1 {
		t.Fatalf("resume made another worktree: %s", out)
	}
}

// A conversation resumed from disk cannot move into a new worktree (the
// CLI finds it by the folder it ran in): refused, nothing made.
func TestWorktreeResumeFromDiskRefused(t *testing.T) {
	repo := gittest.NewRepo(t, t.TempDir(), nil)
	e := newEnv(t, nil)
	ctx := testCtx(t)
	cl := e.dial(ctx)
	f := cl.call(ctx, map[string]any{"type": "start", "cwd": repo, "worktree": true, "resume": "0b9a3c1e-0000-4000-8000-000000000000"})
	if f.Error == nil || f.Error.Code != serve.CodeBadRequest {
		t.Fatalf("resume into a new worktree: %+v, want bad_request", f.Error)
	}
	if out := gittest.Run(t, repo, "worktree", "list"); strings.Contains(out, "\n") {
		t.Fatalf("a refused start made a worktree: %s", out)
	}
}
