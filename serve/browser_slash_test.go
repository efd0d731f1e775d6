package serve_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/tetherhq/tether/claude/claudetest"
)

// TestBrowserSlashCommands: typing "/" in the prompt lists the commands
// the real CLI takes as a prompt (its own and the project's), narrowed as
// one types; Tab completes a command that takes arguments, Enter runs one
// that takes none, Esc closes the menu and leaves the prompt as typed; a
// command added and loaded with /reload-skills shows after that turn.
func TestBrowserSlashCommands(t *testing.T) {
	b := newBrowser(t)
	e := newUIEnv(t, b, claudetest.TextReply("Hello, Ada."), claudetest.TextReply("Standup written."))
	cmds := filepath.Join(e.cwd, ".claude", "commands")
	if err := os.MkdirAll(cmds, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{
		"greet.md":   "---\ndescription: Greet someone by name\nargument-hint: <name>\n---\nGreet $ARGUMENTS warmly.\n",
		"standup.md": "---\ndescription: Write today's standup note\n---\nWrite the standup note for today.\n",
	} {
		if err := os.WriteFile(filepath.Join(cmds, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tb := b.newTab(t, e.origin, "slash")
	tb.open(e)
	tb.newSession(e.cwd)
	options := func() string {
		t.Helper()
		var s []string
		tb.eval(`[...document.querySelectorAll("#slash-menu:not([hidden]) [role=option] .slash-name")].map((n) => n.textContent)`, &s)
		return strings.Join(s, " ")
	}

	tb.run(chromedp.Click("#prompt", chromedp.ByID), chromedp.SendKeys("#prompt", "/", chromedp.ByID))
	tb.waitJS("the menu", `!document.querySelector("#slash-menu").hidden && document.querySelectorAll("#slash-menu [role=option]").length > 2`)
	// The CLI offers dozens: eight show, a window the arrows move (up from
	// the first goes to the last), and the menu says where one is.
	setsize := func() int {
		t.Helper()
		var n int
		tb.eval(`+(document.querySelector("#slash-menu [role=option]")?.getAttribute("aria-setsize") || 0)`, &n)
		return n
	}
	n := setsize()
	if shown := tb.count("#slash-menu [role=option]"); n <= 8 || shown != 8 {
		t.Fatalf("%d options shown of %d; want 8 of the CLI's dozens", shown, n)
	}
	tb.shot("menu-all")
	tb.key(kb.ArrowUp)
	tb.waitJS("the last option chosen", fmt.Sprintf(`document.querySelector("#prompt").getAttribute("aria-activedescendant") === "slash-opt-%d" && document.querySelector("#slash-opt-%d[aria-selected=true]") !== null && document.querySelector("#slash-menu").dataset.more === "%d of %d: the arrows move, typing narrows"`, n-1, n-1, n, n))
	tb.key(kb.ArrowDown)
	tb.waitJS("the first option again", `document.querySelector("#prompt").getAttribute("aria-activedescendant") === "slash-opt-0" && document.querySelector("#slash-opt-0")`)
	tb.run(chromedp.SendKeys("#prompt", "gr", chromedp.ByID))
	tb.waitJS("the menu narrowed", `[...document.querySelectorAll("#slash-menu [role=option] .slash-name")].map((n) => n.textContent).join() === "/greet"`)
	if got := tb.text("#slash-menu [role=option]"); !strings.Contains(got, "<name>") || !strings.Contains(got, "Greet someone by name") {
		t.Errorf("the greet option: %q", got)
	}
	tb.shots("menu")
	var active string
	tb.eval(`document.querySelector("#prompt").getAttribute("aria-activedescendant")`, &active)
	if active != "slash-opt-0" {
		t.Errorf("the prompt's active option: %q", active)
	}

	// Esc closes the menu and keeps what was typed.
	tb.key(kb.Escape)
	tb.waitJS("the menu closed", `document.querySelector("#slash-menu").hidden && document.querySelector("#prompt").value === "/gr"`)
	// Typing opens it again; Tab completes a command that takes arguments.
	tb.run(chromedp.SendKeys("#prompt", "e", chromedp.ByID))
	tb.waitJS("the menu again", `!document.querySelector("#slash-menu").hidden`)
	tb.key(kb.Tab)
	tb.waitJS("the name completed", `document.querySelector("#slash-menu").hidden && document.querySelector("#prompt").value === "/greet "`)
	tb.run(chromedp.SendKeys("#prompt", "Ada", chromedp.ByID), enterKey)
	tb.waitText("Hello, Ada.")
	tb.waitTurns(1)
	reqs := e.api.MessagesRequests()
	if len(reqs) == 0 || !strings.Contains(string(reqs[len(reqs)-1].Body), "Greet Ada warmly.") {
		t.Errorf("the model was not asked to greet Ada warmly")
	}

	// Enter runs a command that takes no arguments, chosen with the arrows.
	tb.run(chromedp.SendKeys("#prompt", "/st", chromedp.ByID))
	tb.waitJS("the menu for /st", `!document.querySelector("#slash-menu").hidden`)
	n = setsize()
	for i := range n {
		if tb.text(`#slash-menu [aria-selected="true"] .slash-name`) == "/standup" {
			break
		}
		if i == n-1 {
			t.Fatalf("no /standup among %s", options())
		}
		tb.key(kb.ArrowDown)
	}
	tb.key(kb.Enter)
	tb.waitText("Standup written.")
	tb.waitTurns(2)
	var left string
	tb.eval(`document.querySelector("#prompt").value`, &left)
	if left != "" {
		t.Errorf("the prompt after the command ran: %q", left)
	}
	reqs = e.api.MessagesRequests()
	if !strings.Contains(string(reqs[len(reqs)-1].Body), "Write the standup note for today.") {
		t.Errorf("the model was not asked for the standup note")
	}
	tb.shot("ran")
	// The CLI echoes each as tags; the bubbles show them as typed.
	var bubbles []string
	tb.eval(`[...document.querySelectorAll("#transcript .msg.user")].map((m) => m.innerText.trim())`, &bubbles)
	if got := strings.Join(bubbles, "|"); got != "/greet Ada|/standup" {
		t.Errorf("the prompt bubbles say %q; want /greet Ada and /standup", got)
	}

	// The CLI's own commands are there too.
	tb.run(chromedp.SendKeys("#prompt", "/compa", chromedp.ByID))
	tb.waitJS("the menu for /compa", `!document.querySelector("#slash-menu").hidden`)
	if got := options(); !strings.Contains(got, "/compact") {
		t.Errorf("/compa lists %s; want /compact", got)
	}

	// A command added to the project shows once /reload-skills has run
	// (every pinned CLI has it; /reload-plugins came later): the CLI says
	// so (commands_changed), and the menu asks again after the turn.
	if err := os.WriteFile(filepath.Join(cmds, "wave.md"), []byte("---\ndescription: Wave goodbye\n---\nWave.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tb.key(kb.Escape)
	contextShown := regexp.MustCompile(`context \d+% of \S+`)
	before := contextShown.FindString(tb.text("#s-cost"))
	var cleared bool
	tb.eval(`(() => { const p = document.querySelector("#prompt"); p.value = ""; p.dispatchEvent(new Event("input")); return true })()`, &cleared)
	tb.run(chromedp.SendKeys("#prompt", "/reload-skills", chromedp.ByID))
	tb.waitJS("the menu for /reload-skills", `!document.querySelector("#slash-menu").hidden`)
	tb.key(kb.Enter) // runs it, or completes the name if the CLI gives an argument hint
	tb.waitJS("/reload-skills chosen", `document.querySelector("#slash-menu").hidden`)
	var rest string
	tb.eval(`document.querySelector("#prompt").value`, &rest)
	if rest != "" {
		tb.key(kb.Enter)
	}
	tb.waitTurns(3)
	tb.waitState("idle")
	// A local command calls no model: the context shown stays.
	if after := contextShown.FindString(tb.text("#s-cost")); before == "" || after != before {
		t.Errorf("the header's context: %q before /reload-skills, %q after; want it unchanged", before, after)
	}
	// The CLI's answer is its own text, not an error: not in red.
	if found, red := tb.inRed("#transcript .msg.assistant .text", "Reloaded"); !found || red {
		t.Errorf("/reload-skills' answer: found %v, in red %v; want it found, not in red", found, red)
	}
	tb.run(chromedp.SendKeys("#prompt", "/wa", chromedp.ByID))
	tb.waitJS("the new command in the menu", `!document.querySelector("#slash-menu").hidden && [...document.querySelectorAll("#slash-menu [role=option] .slash-name")].some((n) => n.textContent === "/wave")`)
	tb.shots("reloaded") // the muted answer checked in both themes
}
