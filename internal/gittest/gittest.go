// Package gittest runs Debian's git for tests: the repositories that
// sessions start in, worktrees are made from and changes are read
// against. Tests run the real git, never a fake; under CI=true a machine
// without it fails the test instead of skipping it, as the real CLI's
// tests do.
package gittest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Path is Debian's git, which the tests run (and hand to
// host.WorktreeOptions.Git).
const Path = "/usr/bin/git"

// Need fails the test under CI=true when git is missing, and skips it
// elsewhere.
func Need(t testing.TB) {
	t.Helper()
	if _, err := os.Stat(Path); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("git is required under CI=true (apt-get install git)")
		}
		t.Skip("no git at", Path)
	}
}

// Run runs git in dir with args, as an author of its own (no user
// configuration needed), and returns its trimmed output; a failure
// fails the test.
func Run(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command(Path, append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=T", "GIT_AUTHOR_EMAIL=t@example.com",
		"GIT_COMMITTER_NAME=T", "GIT_COMMITTER_EMAIL=t@example.com")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// NewRepo makes dir (created if missing; a temporary folder when "") a
// repository on branch main with one commit holding files (name →
// content; nil: a README) and returns its path.
func NewRepo(t testing.TB, dir string, files map[string]string) string {
	t.Helper()
	Need(t)
	if dir == "" {
		dir = t.TempDir()
	}
	if files == nil {
		files = map[string]string{"README": "hello\n"}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	Run(t, dir, "init", "-q", "-b", "main")
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	Run(t, dir, "add", ".")
	Run(t, dir, "commit", "-q", "-m", "first")
	return dir
}
