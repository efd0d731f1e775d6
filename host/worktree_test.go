package host_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
	"github.com/tetherhq/tether/host"
	"github.com/tetherhq/tether/internal/gittest"
)

// idle is a fake CLI that starts and waits for its end.
func idle(ctx context.Context, c *claudetest.CLI) error {
	if _, err := c.HandleInitialize(ctx); err != nil {
		return err
	}
	<-ctx.Done()
	return ctx.Err()
}

func startIn(t *testing.T, repo string) *host.Session {
	t.Helper()
	s, _ := start(t, &host.Options{CLI: &claude.Options{Cwd: repo}, Worktree: &host.WorktreeOptions{Git: gittest.Path}}, idle)
	return s
}

func TestWorktreeSessionsApartAndMerge(t *testing.T) {
	repo := gitRepo(t, map[string]string{"a.txt": "one\n"})
	a, b := startIn(t, repo), startIn(t, repo)
	wa, wb := a.Worktree(), b.Worktree()
	if wa == nil || wb == nil || wa.Path == wb.Path || wa.Branch == wb.Branch {
		t.Fatalf("worktrees %+v and %+v: want two apart", wa, wb)
	}
	if wa.Base != "main" || wa.State != host.WorktreeActive || wa.Repo != repo {
		t.Fatalf("worktree = %+v", wa)
	}
	if snap := a.Snapshot(); snap.Cwd != wa.Path || snap.Worktree == nil || snap.Worktree.Branch != wa.Branch {
		t.Fatalf("snapshot cwd %q worktree %+v; want the worktree", snap.Cwd, snap.Worktree)
	}
	writeFile(t, filepath.Join(wa.Path, "from-a.txt"), "a\n")
	writeFile(t, filepath.Join(wb.Path, "from-b.txt"), "b\n")
	if _, err := os.Stat(filepath.Join(wb.Path, "from-a.txt")); !os.IsNotExist(err) {
		t.Fatalf("b sees a's file: %v", err)
	}

	ctx := testCtx(t)
	res, err := a.Do(ctx, &host.Command{Type: host.CommandWorktreeMerge})
	if err != nil {
		t.Fatal(err)
	}
	if res.Worktree == nil || res.Worktree.State != host.WorktreeMerged || res.Worktree.Commit != gittest.Run(t, repo, "rev-parse", "main") {
		t.Fatalf("merge result %+v", res.Worktree)
	}
	if _, err := os.Stat(filepath.Join(repo, "from-a.txt")); err != nil {
		t.Fatalf("main's checkout lacks the merged file: %v", err)
	}
	if _, err := os.Stat(filepath.Join(repo, "from-b.txt")); !os.IsNotExist(err) {
		t.Fatalf("b's file reached main: %v", err)
	}
	// Merged and clean: the close removes the worktree and its branch.
	res, err = a.Do(ctx, &host.Command{Type: host.CommandClose})
	if err != nil {
		t.Fatal(err)
	}
	if res.Worktree == nil || res.Worktree.State != host.WorktreeRemoved {
		t.Fatalf("close result %+v", res.Worktree)
	}
	if _, err := os.Stat(wa.Path); !os.IsNotExist(err) {
		t.Fatalf("merged worktree left after close: %v", err)
	}
	if out := gittest.Run(t, repo, "branch", "--list", wa.Branch); out != "" {
		t.Fatalf("merged branch left: %q", out)
	}
}

func TestWorktreeMergeConflictChangesNothing(t *testing.T) {
	repo := gitRepo(t, map[string]string{"a.txt": "one\n"})
	s := startIn(t, repo)
	w := s.Worktree()
	writeFile(t, filepath.Join(w.Path, "a.txt"), "one from the session\n")
	writeFile(t, filepath.Join(repo, "a.txt"), "one from main\n")
	gittest.Run(t, repo, "commit", "-q", "-am", "main too")
	state := func() string {
		return gittest.Run(t, repo, "rev-parse", "main", w.Branch) + gittest.Run(t, repo, "status", "--porcelain") + gittest.Run(t, w.Path, "status", "--porcelain")
	}
	was := state()
	_, err := s.Do(testCtx(t), &host.Command{Type: host.CommandWorktreeMerge})
	var ce *host.WorktreeConflictError
	if !errors.As(err, &ce) || !errors.Is(err, host.ErrWorktreeConflict) || host.ErrorCode(err) != host.CodeWorktreeConflict {
		t.Fatalf("err = %v (code %s), want a worktree conflict", err, host.ErrorCode(err))
	}
	if len(ce.Files) != 1 || ce.Files[0] != "a.txt" || !strings.Contains(err.Error(), "a.txt") {
		t.Fatalf("conflict %+v / %q: want a.txt named", ce, err)
	}
	if now := state(); now != was {
		t.Fatalf("a refused merge changed something:\n%s\n%s", was, now)
	}
	if got := s.Worktree().State; got != host.WorktreeActive {
		t.Fatalf("state after a refused merge = %s", got)
	}
}

func TestWorktreeCloseAsksFirst(t *testing.T) {
	repo := gitRepo(t, map[string]string{"a.txt": "one\n"})
	ctx := testCtx(t)

	s := startIn(t, repo)
	w := s.Worktree()
	writeFile(t, filepath.Join(w.Path, "work.txt"), "work\n")
	_, err := s.Do(ctx, &host.Command{Type: host.CommandClose})
	if host.ErrorCode(err) != host.CodeWorktreeUnmerged || !errors.Is(err, host.ErrWorktreeUnmerged) {
		t.Fatalf("close of unmerged work: err = %v, want worktree_unmerged", err)
	}
	if st := s.State().State; st == host.StateDisconnected || s.Snapshot().Ended {
		t.Fatalf("a refused close ended the session (%s)", st)
	}
	if _, err := s.Do(ctx, &host.Command{Type: host.CommandClose, Worktree: "discard"}); host.ErrorCode(err) != host.CodeBadRequest {
		t.Fatalf("discard without confirm: err = %v", err)
	}
	if _, err := s.Do(ctx, &host.Command{Type: host.CommandWorktreeDiscard}); host.ErrorCode(err) != host.CodeBadRequest {
		t.Fatalf("worktree_discard without confirm: err = %v", err)
	}
	if _, err := os.Stat(filepath.Join(w.Path, "work.txt")); err != nil {
		t.Fatalf("refusals lost the work: %v", err)
	}
	// Keep: the branch takes the work, the folder stays.
	res, err := s.Do(ctx, &host.Command{Type: host.CommandClose, Worktree: "keep"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Worktree.State != host.WorktreeKept || res.Worktree.Commit != gittest.Run(t, repo, "rev-parse", w.Branch) {
		t.Fatalf("kept %+v", res.Worktree)
	}
	if got := gittest.Run(t, repo, "show", w.Branch+":work.txt"); got != "work" {
		t.Fatalf("kept branch's work.txt = %q", got)
	}
	if _, err := os.Stat(filepath.Join(w.Path, "work.txt")); err != nil {
		t.Fatalf("kept worktree lost its file: %v", err)
	}

	// Discard, confirmed: folder and branch gone, main untouched.
	d := startIn(t, repo)
	dw := d.Worktree()
	writeFile(t, filepath.Join(dw.Path, "scrap.txt"), "scrap\n")
	mainWas := gittest.Run(t, repo, "rev-parse", "main")
	res, err = d.Do(ctx, &host.Command{Type: host.CommandWorktreeDiscard, Confirm: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Worktree.State != host.WorktreeDiscarded || !d.Snapshot().Ended {
		t.Fatalf("discard: %+v, ended %v", res.Worktree, d.Snapshot().Ended)
	}
	if _, err := os.Stat(dw.Path); !os.IsNotExist(err) {
		t.Fatalf("discarded folder left: %v", err)
	}
	if out := gittest.Run(t, repo, "branch", "--list", dw.Branch); out != "" {
		t.Fatalf("discarded branch left: %q", out)
	}
	if now := gittest.Run(t, repo, "rev-parse", "main"); now != mainWas {
		t.Fatal("discard moved main")
	}
}

func TestWorktreeStartRefusals(t *testing.T) {
	gittest.Need(t)
	_, err := host.Start(testCtx(t), &host.Options{
		CLI:      &claude.Options{Cwd: t.TempDir(), Transport: &claudetest.FakeCLI{Script: idle}},
		Worktree: &host.WorktreeOptions{Git: gittest.Path},
	})
	if !errors.Is(err, host.ErrWorktree) || host.ErrorCode(err) != host.CodeBadRequest {
		t.Fatalf("start outside a repository: err = %v (code %s)", err, host.ErrorCode(err))
	}
	// No worktree: its commands are refused.
	s, _ := start(t, nil, idle)
	if _, err := s.Do(testCtx(t), &host.Command{Type: host.CommandWorktreeMerge}); host.ErrorCode(err) != host.CodeBadRequest {
		t.Fatalf("merge without a worktree: err = %v", err)
	}
}

// A session whose CLI ended on its own keeps its worktree's commands:
// the work is there to merge. Its journal ends with closed all the same.
func TestWorktreeMergeAfterTheCLIEnded(t *testing.T) {
	repo := gitRepo(t, map[string]string{"a.txt": "one\n"})
	exits := func(ctx context.Context, c *claudetest.CLI) error {
		_, err := c.HandleInitialize(ctx)
		return err
	}
	s, _ := start(t, &host.Options{CLI: &claude.Options{Cwd: repo}, Worktree: &host.WorktreeOptions{Git: gittest.Path}}, exits)
	<-s.Done()
	w := s.Worktree()
	writeFile(t, filepath.Join(w.Path, "late.txt"), "late\n")
	seq := s.Snapshot().Seq
	res, err := s.Do(testCtx(t), &host.Command{Type: host.CommandWorktreeMerge})
	if err != nil {
		t.Fatalf("merge after the CLI ended: %v", err)
	}
	if res.Worktree.State != host.WorktreeMerged || gittest.Run(t, repo, "show", "main:late.txt") != "late" {
		t.Fatalf("merge result %+v", res.Worktree)
	}
	if now := s.Snapshot().Seq; now != seq {
		t.Fatalf("an event after closed: seq %d → %d", seq, now)
	}
	if _, err := s.Do(testCtx(t), &host.Command{Type: host.CommandSend, Text: "hi"}); host.ErrorCode(err) != host.CodeSessionClosed {
		t.Fatalf("send after the end: %v", err)
	}
}
