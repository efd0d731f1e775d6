package cli

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/tetherhq/tether/claude/claudetest"
)

// /diff and /revert in tether run -i: in a git repository the real CLI
// writes a file and deletes another with Bash; /diff lists both with
// their diffs, /revert of one names what is lost and, once confirmed,
// puts back that one only.
func TestRealCLIRunDiff(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("git"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("git is required under CI=true (apt-get install git)")
		}
		t.Skip("no git")
	}
	ctx, _, cli := realCLI(t, &claudetest.MessagesOptions{Replies: []*claudetest.Reply{
		claudetest.ToolUseReply("toolu_w", "Write", map[string]any{"file_path": "notes.txt", "content": "hello\nworld\n"}),
		claudetest.ToolUseReply("toolu_b", "Bash", map[string]any{"command": "rm old.txt", "description": "Remove old.txt"}),
		claudetest.TextReply("Wrote notes, removed old."),
	}})
	if err := os.WriteFile(filepath.Join(cli.Dir, "old.txt"), []byte("obsolete\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "old.txt"}, {"-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false", "commit", "-qm", "start"}} {
		if out, err := exec.Command("git", append([]string{"-C", cli.Dir}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	term := startTerminal(t, ctx, cli.Environ(), cli.Dir, runArgs(cli, "-i", "tidy up")...)
	term.waitFor("? Write wants to run")
	term.typeLine("y")
	term.waitFor("? Bash wants to run")
	term.typeLine("y")
	term.waitFor("Wrote notes, removed old.")
	term.waitFor("✓ done")
	term.waitFor("> ")
	term.typeLine("/diff")
	term.waitFor("2 files changed since the session started (+2 −1)")
	term.waitFor("created notes.txt  +2 −0  (Write)")
	term.waitFor("+hello")
	term.waitFor("+world")
	term.waitFor("deleted old.txt  +0 −1  (seen by git)")
	term.waitFor("-obsolete")
	term.waitFor("> ")
	term.typeLine("/revert old.txt")
	term.waitFor("revert 1 file to the session's start? This is lost:")
	term.waitFor("old.txt: deleted by the session; it will be restored")
	term.waitFor("type y to revert")
	term.typeLine("y")
	term.waitFor("reverted 1 file")
	term.waitFor("> ")
	if b, err := os.ReadFile(filepath.Join(cli.Dir, "old.txt")); err != nil || string(b) != "obsolete\n" {
		t.Errorf("old.txt after /revert: %q %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(cli.Dir, "notes.txt")); err != nil {
		t.Errorf("notes.txt was reverted too: %v", err)
	}
	term.typeLine("/revert")
	term.waitFor("notes.txt: created by the session; it will be deleted")
	term.typeLine("n")
	term.waitFor("not reverted")
	if _, err := os.Stat(filepath.Join(cli.Dir, "notes.txt")); errors.Is(err, os.ErrNotExist) {
		t.Error("notes.txt deleted without a yes")
	}
	term.waitFor("> ")
	term.send("\x03")
	term.waitFor("quitting")
	if code := term.exitCode(); code != 130 {
		t.Errorf("exit code %d, want 130", code)
	}
	if os.Getenv("SHOW") != "" {
		t.Log(term.text())
	}
	noProcessIn(t, cli.Dir)
}
