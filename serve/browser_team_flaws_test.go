package serve_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/tetherhq/tether/claude/claudetest"
)

// TestBrowserTeamFlaws: the flaws a new user met in a team signed in
// through the provider (issue 26, part 4), each tried again as they met
// it: who allowed an approval, seen by a viewer who opens the session
// later; the list's cost with the turn's result; the answered card
// folded into one line; the share dialog by name; signing out reaching
// the other tab at once (the periodic recheck is an hour here); and the
// "not allowed" page leading to another sign-in.
func TestBrowserTeamFlaws(t *testing.T) {
	b := newBrowser(t)
	t.Run("Local", func(t *testing.T) { testTeamFlaws(t, b, false) })
	t.Run("Cluster", func(t *testing.T) { testTeamFlaws(t, b, true) })
}

func testTeamFlaws(t *testing.T, b *browser, clustered bool) {
	w := newTeamWorldWith(t, clustered, time.Hour,
		claudetest.ToolUseReply("toolu_flaw", "Bash", map[string]string{"command": "echo flaws > flaws.txt", "description": "Write flaws.txt"}),
		&claudetest.Reply{Content: []claudetest.ContentBlock{claudetest.TextBlock("wrote it")}, Usage: claudetest.Usage{InputTokens: 20_000, OutputTokens: 300}},
	)

	// ---- Alice starts a session that needs her approval ----
	alice := b.personTab(t, w, "alice")
	alice.signIn(w, "alice@example.com")
	id := alice.newSession(w.workspace("alice@example.com"))
	alice.prompt("write flaws.txt")
	alice.waitJS("Alice's approval card", `document.querySelector(".approval:not(.answered) .allow")`)

	// ---- The share dialog names people; a name typed finds the address ----
	alice.run(chromedp.Click("#share-btn", chromedp.ByID), chromedp.WaitVisible("#share-dlg", chromedp.ByID))
	alice.waitJS("the share dialog read, with the team's names", `document.querySelector("#share-dlg").dataset.loaded === "yes" &&
		[...document.querySelectorAll("#people option")].some((o) => o.value === "bob@example.com" && o.label.includes("Bob Builder"))`)
	alice.run(
		chromedp.SetValue("#share-who", "bob builder", chromedp.ByID),
		chromedp.SetValue("#share-level", "viewer", chromedp.ByID),
		chromedp.Click("#share-add", chromedp.ByID),
	)
	alice.waitJS("Bob in the list by name", `document.querySelector('#share-list li[data-who="bob@example.com"] .name')?.innerText === "Bob Builder"`)
	if s := alice.text(`#share-list li[data-who="bob@example.com"] .email`); s != "bob@example.com" {
		t.Errorf("Bob's address beside his name: %q", s)
	}
	var offersSelf bool
	alice.eval(`[...document.querySelectorAll("#people option")].some((o) => o.value === "alice@example.com")`, &offersSelf)
	if offersSelf {
		t.Error("the dialog offers to share with oneself")
	}
	if !clustered {
		alice.shots("share-by-name")
	}
	alice.run(chromedp.Click("#share-save", chromedp.ByID))
	alice.waitJS("the dialog closed", `!document.querySelector("#share-dlg").open`)

	// ---- Alice allows; the list's cost is the turn's when the turn ends ----
	// Whenever the session's cost line changes, the list must say the
	// same already: both move with the turn's result, not the list a
	// moment later.
	alice.eval(fmt.Sprintf(`(() => {
		window.__costs = [];
		new MutationObserver(() => {
			window.__costs.push({ list: window.tether.sessions.get(%q)?.cost_usd || 0, view: window.tether.view?.cost?.usd || 0,
				shown: document.querySelector('#sessions li[data-id=%q] .usd')?.innerText || "" });
		}).observe(document.querySelector("#s-cost"), { childList: true, subtree: true, characterData: true });
		return true;
	})()`, id, id), nil)
	alice.run(chromedp.Click(".approval .allow", chromedp.ByQuery))
	alice.waitText("wrote it")
	alice.waitTurns(1)
	alice.waitState("idle")
	alice.waitJS("the turn's cost", `window.__costs.some((c) => c.view > 0)`)
	var costs []struct {
		List  float64 `json:"list"`
		View  float64 `json:"view"`
		Shown string  `json:"shown"`
	}
	alice.eval(`window.__costs`, &costs)
	for _, c := range costs {
		if c.View > 0 && (c.List != c.View || c.Shown == "") {
			t.Errorf("the session's cost became $%v while the list said $%v (%q); want the same at once", c.View, c.List, c.Shown)
		}
	}

	// ---- The answered card folds into one line; no greyed buttons stay ----
	alice.waitJS("the card folded into a record", `!document.querySelector("#approvals .approval") && document.querySelector("#transcript .approval-record")`)
	const wantRecord = "Allowed by Alice Example · Bash echo flaws > flaws.txt"
	if s := alice.text("#transcript .approval-record"); s != wantRecord {
		t.Errorf("the record reads %q; want %q", s, wantRecord)
	}
	if n := alice.count("#approvals button"); n != 0 {
		t.Errorf("%d buttons left in the approvals area after the turn", n)
	}
	if !clustered {
		alice.shots("approval-record")
	}

	// ---- Bob, a viewer, opens the session afterwards: who allowed it ----
	bob := b.personTab(t, w, "bob")
	bob.signIn(w, "bob@example.com")
	bob.waitJS("the shared session listed", fmt.Sprintf(`document.querySelector('#sessions li[data-id=%q]')`, id))
	bob.run(chromedp.Click(fmt.Sprintf(`#sessions li[data-id=%q]`, id), chromedp.ByQuery))
	bob.waitJS("the session from a snapshot", `window.tether.view && window.tether.snapshots > 0 && document.querySelector('details.tool[data-tool="Bash"]')`)
	bob.waitJS("who allowed it, on the call", `document.querySelector('details.tool[data-tool="Bash"] .tool-by')?.innerText === "allowed by Alice Example"`)
	if s := bob.text("#transcript .approval-record"); s != wantRecord {
		t.Errorf("Bob's record reads %q; want %q", s, wantRecord)
	}
	bob.run(chromedp.Evaluate(`document.querySelector('details.tool[data-tool="Bash"]').open = true`, nil))
	if !clustered {
		bob.shots("viewer-sees-who-allowed")
	}

	// ---- Signing out in one tab signs the other out at once ----
	alice2 := b.sameBrowser(t, w, alice, "alice-2")
	alice2.run(chromedp.Navigate(w.origin + "/#s=" + id))
	alice2.waitJS("Alice's second tab live", `document.querySelector("#conn").classList.contains("live") && window.tether.view`)
	alice2.eval(`(() => {
		window.__conn = [];
		new MutationObserver(() => window.__conn.push(document.querySelector("#conn").innerText)).observe(document.querySelector("#conn"), { childList: true, characterData: true, subtree: true });
		return true;
	})()`, nil)
	signedOut := time.Now()
	alice.run(chromedp.Click("#me > summary", chromedp.ByQuery), chromedp.Click("#signout-btn", chromedp.ByID))
	alice.waitAcross("the sign-in page after signing out", `!document.querySelector("#signin").hidden`)
	alice2.waitJS("the second tab signed out", `!document.querySelector("#signin").hidden && document.querySelector(".layout").offsetParent === null`)
	if d := time.Since(signedOut); d > 10*time.Second {
		t.Errorf("the second tab showed the sign-in page %v after signing out", d)
	}
	var seen []string
	alice2.eval(`window.__conn`, &seen)
	for _, s := range seen {
		if strings.Contains(s, "offline") || strings.Contains(s, "retry") {
			t.Errorf("the second tab said %q on its way to the sign-in page", s)
		}
	}
	if s := alice2.text("#signin-btn"); s != "Sign in again" {
		t.Errorf("the signed-out page's button reads %q; want Sign in again", s)
	}
	if s := alice2.text("#signin-why"); !strings.Contains(s, "signed out") {
		t.Errorf("the signed-out page says %q; want it to say why", s)
	}
	if !clustered {
		alice2.shots("signed-out-elsewhere")
	}

	// ---- Not allowed: sign in as someone else ----
	mallory := b.personTab(t, w, "mallory")
	mallory.run(chromedp.Navigate(w.origin + "/"))
	mallory.waitJS("the sign-in page", `!document.querySelector("#signin").hidden`)
	mallory.run(chromedp.Click("#signin-btn", chromedp.ByID))
	mallory.atProvider(w, "mallory@example.com")
	mallory.waitAcross("the not-allowed page", `document.querySelector("#title")?.innerText === "Not allowed" && !!document.querySelector("#switch")`)
	if !clustered {
		mallory.shots("not-allowed")
	}
	mallory.run(chromedp.Click("#switch", chromedp.ByID))
	mallory.atProvider(w, "carol@example.com")
	mallory.waitAcross("signed in as Carol", `location.origin === `+jsString(w.origin)+` && document.querySelector("#conn")?.classList.contains("live") && document.querySelector("#me-name")?.innerText === "Carol Jones"`)
}
