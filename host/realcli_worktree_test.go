package host_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
	"github.com/tetherhq/tether/host"
	"github.com/tetherhq/tether/internal/gittest"
	"github.com/tetherhq/tether/internal/proc"
)

// Two sessions of the real CLI in worktrees of one repository: each
// writes a file with its Write tool (the fake Messages API scripts the
// model), neither sees the other's, and one merged reaches the base
// branch while the other's stays on its branch.
func TestRealCLIWorktrees(t *testing.T) {
	repo := gitRepo(t, map[string]string{"a.txt": "one\n"})
	api := claudetest.NewMessagesServer(nil)
	t.Cleanup(api.Close) // first, so it closes after the CLIs
	cli := claudetest.NewRealCLI(t, api)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	startOne := func() (*host.Session, *stateLog) {
		co := cli.Options()
		co.Cwd = repo
		co.PermissionMode = claude.PermissionModeAcceptEdits
		s, err := host.Start(ctx, &host.Options{CLI: co, Worktree: &host.WorktreeOptions{Git: gittest.Path}})
		if err != nil {
			t.Fatalf("Start: %v", err)
		}
		l := watchStates(ctx, s)
		t.Cleanup(func() { s.Close(); <-l.done })
		return s, l
	}
	write := func(s *host.Session, l *stateLog, name string) string {
		t.Helper()
		p := filepath.Join(s.Worktree().Path, name)
		api.Enqueue(
			claudetest.ToolUseReply("toolu_"+name[4:5], "Write", map[string]string{"file_path": p, "content": "written by " + name + "\n"}),
			claudetest.TextReply("wrote "+name),
		)
		d, err := s.Send(ctx, "write "+name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := d.Wait(ctx); err != nil {
			t.Fatalf("turn: %v", err)
		}
		l.waitFor(t, ctx, "idle", func(v host.Liveness) bool { return v.State == host.StateIdle })
		// A worktree under .claude/worktrees must not make every edit
		// ask: acceptEdits holds there as in any folder.
		for _, st := range l.strings() {
			if strings.HasPrefix(st, "awaiting_approval") {
				t.Errorf("the Write in %s asked for approval in acceptEdits mode: %q", s.Worktree().Path, l.strings())
			}
		}
		return p
	}

	a, la := startOne()
	b, lb := startOne()
	if a.Snapshot().Cwd != a.Worktree().Path {
		t.Fatalf("the CLI runs in %s, not in its worktree %s", a.Snapshot().Cwd, a.Worktree().Path)
	}
	pa := write(a, la, "new-a.txt")
	pb := write(b, lb, "new-b.txt")
	for _, c := range []struct {
		path string
		want bool
	}{
		{pa, true}, {pb, true},
		{filepath.Join(b.Worktree().Path, "new-a.txt"), false},
		{filepath.Join(a.Worktree().Path, "new-b.txt"), false},
		{filepath.Join(repo, "new-a.txt"), false},
		{filepath.Join(repo, "new-b.txt"), false},
	} {
		_, err := os.Stat(c.path)
		if got := err == nil; got != c.want {
			t.Errorf("%s exists = %v, want %v", c.path, got, c.want)
		}
	}

	res, err := a.Do(ctx, &host.Command{Type: host.CommandWorktreeMerge})
	if err != nil {
		t.Fatal(err)
	}
	if got := gittest.Run(t, repo, "show", "main:new-a.txt"); got != "written by new-a.txt" || res.Worktree.State != host.WorktreeMerged {
		t.Fatalf("after the merge main's a.txt = %q, state %s", got, res.Worktree.State)
	}
	if _, err := os.Stat(filepath.Join(b.Worktree().Path, "new-a.txt")); !os.IsNotExist(err) {
		t.Fatalf("b sees the merged file in its worktree: %v", err)
	}
	if _, err := b.Do(ctx, &host.Command{Type: host.CommandClose}); host.ErrorCode(err) != host.CodeWorktreeUnmerged {
		t.Fatalf("closing b with its work unmerged: %v", err)
	}
	if res, err = b.Do(ctx, &host.Command{Type: host.CommandClose, Worktree: host.WorktreeKeep}); err != nil || res.Worktree.State != host.WorktreeKept {
		t.Fatalf("close b keeping: %+v, %v", res, err)
	}
	if got := gittest.Run(t, repo, "show", b.Worktree().Branch+":new-b.txt"); got != "written by new-b.txt" {
		t.Fatalf("b's branch b.txt = %q", got)
	}
}

// A start in a worktree claims a prewarmed spare like any start in
// another folder: the CLI (2.1.330 and newer: parked) then runs, and
// says it runs, in the worktree.
func TestManagerWorktreeFromSpareRealCLI(t *testing.T) {
	repo := gitRepo(t, map[string]string{"a.txt": "one\n"})
	run := claudetest.NewRealRun(t, nil)
	tr := &pidTransport{}
	tmpl := run.Options
	tmpl.Transport = tr
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	m := host.NewManager(&host.ManagerOptions{Session: &host.Options{CLI: tmpl}, Spares: 1})
	defer m.Close()
	for m.Spares() != 1 {
		select {
		case <-ctx.Done():
			t.Fatal("no spare")
		case <-time.After(5 * time.Millisecond):
		}
	}
	before := tr.started()
	req := *tmpl
	req.Cwd = repo
	s, err := m.Start(ctx, &host.Options{CLI: &req, Worktree: &host.WorktreeOptions{Git: gittest.Path}})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	w := s.Worktree()
	if w == nil || s.Snapshot().Cwd != w.Path {
		t.Fatalf("worktree %+v, cwd %s", w, s.Snapshot().Cwd)
	}
	warm := slices.Contains(before, s.Claude().PID())
	if canClaim := proc.CompareVersions(claudetest.CLIVersion(), claude.ClaimVersion) >= 0; warm != canClaim {
		t.Fatalf("CLI %s: worktree session on a pre-started CLI = %v, want %v", claudetest.CLIVersion(), warm, canClaim)
	}
	d, err := s.Send(ctx, "hi")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Wait(ctx); err != nil {
		t.Fatalf("delivery: %v", err)
	}
	// The CLI's own init says where it runs.
	if got := s.Snapshot().Cwd; got != w.Path {
		t.Errorf("the CLI reports cwd %q, want the worktree %q", got, w.Path)
	}
}
