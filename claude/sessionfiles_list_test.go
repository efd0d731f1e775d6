package claude_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/tetherhq/tether/claude"
)

// TestListSessionsOptions checks the listing options the TypeScript SDK's
// ListSessionsOptions has: every project with dir "", Offset, leaving out
// SDK-started sessions, and the sessions of a repository's worktrees.
func TestListSessionsOptions(t *testing.T) {
	all, err := claude.ListSessions("", &claude.ListSessionsOptions{ConfigDir: testConfigDir})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 2 {
		t.Fatalf(`ListSessions(""): %d sessions, want the 2 of both projects`, len(all))
	}
	off, err := claude.ListSessions("", &claude.ListSessionsOptions{ConfigDir: testConfigDir, Offset: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(off) != 1 || off[0].ID != all[1].ID {
		t.Fatalf("Offset 1: %v, want only %s", off, all[1].ID)
	}
	if !all[0].Programmatic() {
		t.Fatalf("a session with entrypoint %q is not Programmatic", all[0].Entrypoint)
	}
	none, err := claude.ListSessions("", &claude.ListSessionsOptions{ConfigDir: testConfigDir, ExcludeProgrammatic: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(none) != 0 {
		t.Fatalf("ExcludeProgrammatic: %d sessions, want none (both were started by an SDK)", len(none))
	}

	// A repository with a linked worktree, whose session is in the
	// worktree's project folder.
	root := t.TempDir()
	repo, wt := filepath.Join(root, "repo"), filepath.Join(root, "wt")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(repo, ".git", "worktrees", "wt"), 0o755))
	must(os.MkdirAll(wt, 0o755))
	must(os.WriteFile(filepath.Join(repo, ".git", "worktrees", "wt", "gitdir"), []byte(filepath.Join(wt, ".git")+"\n"), 0o644))
	must(os.WriteFile(filepath.Join(repo, ".git", "worktrees", "wt", "commondir"), []byte("../..\n"), 0o644))
	must(os.WriteFile(filepath.Join(wt, ".git"), []byte("gitdir: "+filepath.Join(repo, ".git", "worktrees", "wt")+"\n"), 0o644))
	config := filepath.Join(root, "config")
	src, err := os.ReadFile(all[0].Path)
	must(err)
	dst := claude.SessionFilePath(config, wt, all[0].ID)
	must(os.MkdirAll(filepath.Dir(dst), 0o755))
	must(os.WriteFile(dst, src, 0o644))

	for _, dir := range []string{repo, wt} {
		got, err := claude.ListSessions(dir, &claude.ListSessionsOptions{ConfigDir: config, IncludeWorktrees: true})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || got[0].ID != all[0].ID {
			t.Errorf("IncludeWorktrees from %s: %v, want the worktree's session", dir, got)
		}
	}
	got, err := claude.ListSessions(repo, &claude.ListSessionsOptions{ConfigDir: config})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 0 {
		t.Errorf("without IncludeWorktrees: %d sessions, want none", len(got))
	}
}
