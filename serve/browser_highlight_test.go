package serve_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/tetherhq/tether/claude/claudetest"
)

// TestBrowserHighlight: the reply's fenced Go block and the Edit's diff
// (its language from the file's extension) are coloured by the vendored
// highlighter, served by the UI itself, in the approval card and in the
// finished tool card; the page reaches nothing but its server (newTab
// checks) and raises no error, CSP included.
func TestBrowserHighlight(t *testing.T) {
	b := newBrowser(t)
	const before = "package main\n\nfunc main() {\n\t// say hello\n\tprintln(\"hello\")\n}\n"
	e := newUIEnv(t, b)
	file := filepath.Join(e.cwd, "main.go")
	e.api.Enqueue(
		&claudetest.Reply{Content: []claudetest.ContentBlock{
			claudetest.TextBlock("Here is the change:\n\n```go\nfunc main() {\n\tfor i := 0; i < 3; i++ {\n\t\tprintln(\"hi\", i) // greet\n\t}\n}\n```\n\nReading the file first."),
			claudetest.ToolUseBlock("toolu_read", "Read", map[string]any{"file_path": file}),
		}},
		claudetest.ToolUseReply("toolu_edit", "Edit", map[string]any{
			"file_path":  file,
			"old_string": "func main() {\n\t// say hello\n\tprintln(\"hello\")\n}",
			"new_string": "func main() {\n\t// say hello, three times\n\tfor i := 0; i < 3; i++ {\n\t\tprintln(\"hello\")\n\t}\n}",
		}),
		claudetest.TextReply("Edited."),
	)
	if err := os.WriteFile(file, []byte(before), 0o644); err != nil {
		t.Fatal(err)
	}
	tb := b.newTab(t, e.origin, "highlight")
	tb.open(e)
	tb.newSession(e.cwd)
	tb.prompt("loop the greeting")
	tb.waitJS("the Edit's approval card", `document.querySelector(".approval:not(.answered) pre.diff")`)
	if n := tb.count(`.msg.assistant pre code[data-lang="go"] .hljs-keyword`); n == 0 {
		t.Errorf("no highlighted keyword in the reply's Go block:\n%s", tb.text(".msg.assistant pre"))
	}
	if n := tb.count(`.msg.assistant pre code[data-lang="go"] .hljs-string`); n == 0 {
		t.Error("no highlighted string in the reply's Go block")
	}
	if n := tb.count(`.approval pre.diff .add .hljs-keyword`); n == 0 {
		t.Errorf("no highlighted keyword on the diff's added lines:\n%s", tb.text(".approval pre.diff"))
	}
	if n := tb.count(`.approval pre.diff .del .hljs-comment`); n == 0 {
		t.Errorf("no highlighted comment on the diff's removed lines:\n%s", tb.text(".approval pre.diff"))
	}
	if s := tb.text(".approval pre.diff"); !strings.Contains(s, "+ \tfor i := 0; i < 3; i++ {") || !strings.Contains(s, "- \t// say hello") {
		t.Errorf("the diff's text changed with highlighting:\n%s", s)
	}
	tb.shots("approval")
	tb.run(chromedp.ScrollIntoView(`.msg.assistant pre code[data-lang="go"]`, chromedp.ByQuery))
	tb.shots("code-block")
	// Its Copy button copies the code as written.
	tb.run(
		cdpbrowser.GrantPermissions([]cdpbrowser.PermissionType{cdpbrowser.PermissionTypeClipboardReadWrite, cdpbrowser.PermissionTypeClipboardSanitizedWrite}).WithOrigin(e.origin),
		chromedp.Click(`.msg.assistant .code-block button.copy`, chromedp.ByQuery),
	)
	tb.waitJS("Copied", `document.querySelector(".msg.assistant .code-block button.copy").textContent === "Copied code"`)
	tb.shot("copied")
	var copied string
	tb.eval(`navigator.clipboard.readText()`, &copied)
	want := "func main() {\n\tfor i := 0; i < 3; i++ {\n\t\tprintln(\"hi\", i) // greet\n\t}\n}"
	if copied != want {
		t.Errorf("copied %q; want %q", copied, want)
	}
	// A page with no secure context (a server reached by plain http on a
	// LAN) has no Clipboard API for it: the button copies the older way,
	// from a hidden field.
	var plain bool
	tb.eval(`(async () => {
		await navigator.clipboard.writeText("something else");
		Object.defineProperty(window, "isSecureContext", { value: false });
		window.__execs = [];
		const exec = document.execCommand.bind(document);
		document.execCommand = (...a) => (window.__execs.push(a[0]), exec(...a));
		return !window.isSecureContext;
	})()`, &plain)
	if !plain {
		t.Fatal("the page still says it is a secure context")
	}
	tb.waitJS("the button says Copy again", `document.querySelector(".msg.assistant .code-block button.copy").textContent === "Copy code"`)
	tb.run(chromedp.Click(`.msg.assistant .code-block button.copy`, chromedp.ByQuery))
	tb.waitJS("Copied without the Clipboard API", `document.querySelector(".msg.assistant .code-block button.copy").textContent === "Copied code"`)
	var execs []string
	tb.eval(`window.__execs`, &execs)
	tb.eval(`navigator.clipboard.readText()`, &copied)
	if copied != want || len(execs) != 1 || execs[0] != "copy" {
		t.Errorf("copied %q the older way (%q); want %q", copied, execs, want)
	}
	if n := tb.count("body > textarea"); n != 0 {
		t.Errorf("%d hidden fields left behind", n)
	}
	tb.key(kb.Enter)
	tb.waitText("Edited.")
	tb.waitTurns(1)
	if n := tb.count(`details.tool[data-tool="Edit"] pre.diff .hljs-keyword`); n == 0 {
		t.Error("no highlighted keyword in the finished Edit card's diff")
	}
	if got, err := os.ReadFile(file); err != nil || !strings.Contains(string(got), "for i := 0") {
		t.Errorf("main.go after the edit: %q, %v", got, err)
	}
	tb.eval(`for (const d of document.querySelectorAll("details.tool")) d.open = true`, nil)
	tb.shots("done")
}
