package serve_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/tetherhq/tether/internal/gittest"
)

// TestBrowserTeamWorktree: team policy on sessions in worktrees, in the
// UI, signed in through the provider. A worktree of a repository that
// reaches above Alice's roots is refused in the New session dialog,
// saying why, and nothing is made; one of her own repository starts;
// Bob, a viewer of it, sees its worktree but is offered no merge, keep
// or discard, and his hand-made merge is refused. The same over the
// cluster, where the agent makes the worktree and checks the roots again.
func TestBrowserTeamWorktree(t *testing.T) {
	b := newBrowser(t)
	t.Run("Local", func(t *testing.T) { testBrowserTeamWorktree(t, b, false) })
	t.Run("Cluster", func(t *testing.T) { testBrowserTeamWorktree(t, b, true) })
}

func testBrowserTeamWorktree(t *testing.T, b *browser, clustered bool) {
	w := newTeamWorld(t, clustered)
	// The world's root is a repository: Alice's workspace is inside it.
	gittest.NewRepo(t, w.root, nil)
	proj := gittest.NewRepo(t, filepath.Join(w.workspace("alice@example.com"), "proj"), nil)

	alice := b.personTab(t, w, "alice")
	alice.signIn(w, "alice@example.com")
	startIn := func(cwd string) {
		alice.run(
			chromedp.Click("#new-btn", chromedp.ByID),
			chromedp.WaitVisible("#new-dlg", chromedp.ByID),
			chromedp.SetValue("#new-cwd", cwd, chromedp.ByID),
		)
		alice.eval(`document.querySelector("#new-worktree").checked || document.querySelector("#new-worktree").click()`, nil)
		alice.run(chromedp.Click("#new-submit", chromedp.ByID))
	}

	startIn(w.workspace("alice@example.com"))
	alice.waitJS("the refusal", `document.querySelector("#new-err").innerText.includes("worktree")`)
	if msg := alice.text("#new-err"); !strings.Contains(msg, "needs its whole repository under your roots") || !strings.Contains(msg, w.root) {
		t.Errorf("refusal says %q; want the repository and the roots", msg)
	}
	alice.shots("refused")
	if out := gittest.Run(t, w.root, "worktree", "list"); strings.Contains(out, "\n") {
		t.Fatalf("a refused start made a worktree: %s", out)
	}
	alice.run(chromedp.Click(`#new-dlg [data-close]`, chromedp.ByQuery))

	startIn(proj)
	alice.waitJS("the worktree session", `window.tether.view && !document.querySelector("#worktree").hidden && document.querySelector("#worktree .wt-merge")`)
	var id string
	alice.eval(`window.tether.current`, &id)
	if r := alice.fetchAs("POST", "/api/sessions/"+id+"/share", `{"grants":[{"person":"bob@example.com","level":"viewer"}]}`, nil); r.Status != 200 {
		t.Fatalf("share: %+v", r)
	}

	bob := b.personTab(t, w, "bob")
	bob.signIn(w, "bob@example.com")
	bob.waitJS("the shared session listed", fmt.Sprintf(`document.querySelector('#sessions li[data-id=%q]')`, id))
	bob.run(chromedp.Click(fmt.Sprintf(`#sessions li[data-id=%q]`, id), chromedp.ByQuery))
	bob.waitJS("the worktree panel", `window.tether.current && !document.querySelector("#worktree").hidden`)
	if n := bob.count("#worktree button"); n != 0 {
		t.Errorf("a viewer is offered %d worktree buttons", n)
	}
	if s := bob.text("#worktree"); !strings.Contains(s, "tether/") || !strings.Contains(s, "main") {
		t.Errorf("the viewer's panel says %q; want the branch and its base", s)
	}
	bob.shots("viewer")
	replies := bob.wsFrames(
		map[string]any{"type": "do", "id": 1, "session": id, "command": map[string]any{"type": "worktree_merge"}},
		map[string]any{"type": "do", "id": 2, "session": id, "command": map[string]any{"type": "worktree_discard", "confirm": true}},
	)
	for k, raw := range replies {
		if code := replyCode(raw); code != "forbidden" {
			t.Errorf("viewer's command %s: %s, want forbidden", k, raw)
		}
	}
}
