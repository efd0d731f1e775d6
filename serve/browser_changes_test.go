package serve_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/tetherhq/tether/claude/claudetest"
)

// gitRepo makes dir a repository with files committed.
func gitRepo(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("git is required under CI=true (apt-get install git)")
		}
		t.Skip("no git")
	}
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false"}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	git("init", "-q")
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git("add", "-A")
	git("commit", "-qm", "start")
}

const changesGo = "package calc\n\n// Add adds.\nfunc Add(a, b int) int {\n\treturn a + b\n}\n"

// TestBrowserChanges: the real CLI edits a file, writes a new one and
// deletes a third with Bash, in a git repository; the Changes button
// counts them as they come (no click), the panel shows each with its
// highlighted diff, and reverting one file, after a confirmation that
// says what is lost, puts it back on disk and takes it off the list.
func TestBrowserChanges(t *testing.T) {
	b := newBrowser(t)
	repo := filepath.Join(t.TempDir(), "repo")
	gitRepo(t, repo, map[string]string{"calc.go": changesGo, "old.txt": "obsolete\n"})
	calc := filepath.Join(repo, "calc.go")
	e := newUIEnv(t, b,
		claudetest.ToolUseReply("toolu_r", "Read", map[string]any{"file_path": calc}),
		claudetest.ToolUseReply("toolu_e", "Edit", map[string]any{"file_path": calc, "old_string": "return a + b", "new_string": "return b + a // commutes"}),
		claudetest.ToolUseReply("toolu_w", "Write", map[string]any{"file_path": filepath.Join(repo, "README.md"), "content": "# calc\n\nAdds numbers.\n"}),
		claudetest.ToolUseReply("toolu_b", "Bash", map[string]any{"command": "rm old.txt", "description": "Remove old.txt"}),
		claudetest.TextReply("Edited calc.go, wrote README.md, removed old.txt."),
	)
	tb := b.newTab(t, e.origin, "changes")
	tb.open(e)
	tb.newSession(repo)
	tb.prompt("tidy the repository")
	// Three approvals (Edit, Write, Bash), each allowed with Enter.
	for i := range 3 {
		tb.waitJS("an approval", `window.tether.view.approvals.size > 0 && !window.tether.view.approvals.has(window.lastAnswered)`)
		tb.eval(`window.lastAnswered = window.tether.view.approvals.keys().next().value`, nil)
		if i == 0 {
			tb.shot("edit-approval")
		}
		if i == 1 {
			// Live, mid-turn: the Edit's result is counted while the
			// Write waits for its approval.
			tb.waitJS("the Edit counted mid-turn", `document.querySelector("#changes-btn").textContent === "Changes (1)"`)
		}
		tb.key(kb.Enter)
	}
	tb.waitText("Edited calc.go")
	tb.waitTurns(1)
	// Live: the count came with the events, before any click.
	tb.waitJS("the button to count three changes", `document.querySelector("#changes-btn").textContent === "Changes (3)"`)

	tb.view(true, false)
	tb.shot("phone-head") // the button among the session's controls
	tb.view(false, false)
	tb.run(chromedp.Click("#changes-btn", chromedp.ByID))
	tb.waitJS("the panel", `document.querySelector("#changes-dlg").open && document.querySelectorAll("#changes-dlg .change").length === 3`)
	list := tb.text("#changes-dlg .changes-list")
	for _, want := range []string{"calc.go", "README.md", "old.txt", "return b + a // commutes", "# calc", "obsolete", "seen by git"} {
		if !strings.Contains(list, want) {
			t.Errorf("the panel lacks %q:\n%s", want, list)
		}
	}
	if n := tb.count(`#changes-dlg .change.modified pre.diff .del`); n != 1 {
		t.Errorf("calc.go's diff has %d removed lines; want 1", n)
	}
	if n := tb.count(`#changes-dlg .change.modified pre.diff.hljs span[class^="hljs-"]`); n == 0 {
		t.Errorf("calc.go's diff is not highlighted")
	}
	if got := tb.text("#changes-dlg .changes-sum"); got != "3 files · +4 −2" {
		t.Errorf("summary %q", got)
	}
	tb.shots("panel")

	// A file folds and unfolds from the keyboard: its header is a button
	// that says whether it is open, beside (not around) its Revert button.
	const fold = `#changes-dlg .change.created .fold`
	tb.run(chromedp.Focus(fold, chromedp.ByQuery))
	tb.key(kb.Enter)
	tb.waitJS("README.md folded", `document.querySelector("#changes-dlg .change.created .change-body").hidden`)
	var expanded string
	tb.eval(`document.querySelector("`+fold+`").getAttribute("aria-expanded")`, &expanded)
	if expanded != "false" {
		t.Errorf("folded: aria-expanded %q", expanded)
	}
	tb.key(" ")
	tb.waitJS("README.md unfolded", `!document.querySelector("#changes-dlg .change.created .change-body").hidden`)
	if n := tb.count(`#changes-dlg .fold button, #changes-dlg .fold a`); n != 0 {
		t.Errorf("%d controls inside the fold buttons", n)
	}

	// Revert calc.go: the confirmation names it and what is lost.
	tb.run(chromedp.Click(`#changes-dlg .change.modified button.revert`, chromedp.ByQuery))
	tb.waitJS("the confirmation", `document.querySelector("#changes-confirm").open`)
	if got := tb.text("#changes-confirm"); !strings.Contains(got, "calc.go: the session's changes will be lost (+1 −1 lines)") || !strings.Contains(got, "cannot be undone") {
		t.Errorf("confirmation:\n%s", got)
	}
	tb.shots("confirm")
	tb.run(chromedp.Click("#changes-confirm-yes", chromedp.ByID))
	tb.waitJS("two changes left", `!document.querySelector("#changes-confirm").open && document.querySelectorAll("#changes-dlg .change").length === 2 && document.querySelector("#changes-btn").textContent === "Changes (2)"`)
	if b, err := os.ReadFile(calc); err != nil || string(b) != changesGo {
		t.Errorf("calc.go after the revert: %q %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(repo, "README.md")); err != nil {
		t.Errorf("README.md was reverted too: %v", err)
	}
	if _, err := os.Stat(filepath.Join(repo, "old.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("old.txt came back: %v", err)
	}

	// Revert all: the confirmation lists both, saying what happens to each.
	tb.run(chromedp.Click("#changes-revert-all", chromedp.ByID))
	tb.waitJS("the confirmation", `document.querySelector("#changes-confirm").open`)
	got := tb.text("#changes-confirm")
	for _, want := range []string{"README.md: created by the session; it will be deleted", "old.txt: deleted by the session; it will be restored"} {
		if !strings.Contains(got, want) {
			t.Errorf("confirmation lacks %q:\n%s", want, got)
		}
	}
	tb.shot("confirm-all")
	tb.run(chromedp.Click("#changes-confirm-yes", chromedp.ByID))
	tb.waitJS("no change left", `document.querySelectorAll("#changes-dlg .change").length === 0 && document.querySelector("#changes-btn").textContent === "Changes"`)
	if _, err := os.Stat(filepath.Join(repo, "README.md")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("README.md after revert all: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(repo, "old.txt")); err != nil || string(b) != "obsolete\n" {
		t.Errorf("old.txt after revert all: %q %v", b, err)
	}
	tb.shot("reverted")
}
