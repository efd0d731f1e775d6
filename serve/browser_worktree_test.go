package serve_test

import (
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/tetherhq/tether/claude/claudetest"
	"github.com/tetherhq/tether/cluster/clustertest"
	"github.com/tetherhq/tether/host"
	"github.com/tetherhq/tether/internal/gittest"
	"github.com/tetherhq/tether/serve"
)

// TestBrowserWorktree: "New session in a worktree" in the real UI, on
// the real CLI. The session's Write lands in its worktree only; a click
// on "Merge into main" brings it into the main branch and its checkout;
// a close of a second session with unmerged work asks, in a dialog that
// says what would be lost, and keeps the branch when told to; Discard
// asks first too. The same on a lone serve and over the cluster
// (`tether serve --nats`: the agent makes the worktree and runs its
// commands).
func TestBrowserWorktree(t *testing.T) {
	b := newBrowser(t)
	t.Run("Local", func(t *testing.T) { testBrowserWorktree(t, b, false) })
	t.Run("Cluster", func(t *testing.T) { testBrowserWorktree(t, b, true) })
}

func testBrowserWorktree(t *testing.T, b *browser, overCluster bool) {
	repo := gittest.NewRepo(t, filepath.Join(t.TempDir(), "proj"), nil)

	api := claudetest.NewMessagesServer(nil)
	t.Cleanup(api.Close)
	cli := claudetest.NewRealCLI(t, api)
	var (
		backend      serve.Backend
		m            *host.Manager
		closeBackend = func() {}
	)
	if overCluster {
		backend = clustertest.New(t, &clustertest.Options{Session: &host.Options{CLI: cli.Options()}}).Backend(nil)
	} else {
		m = host.NewManager(nil)
		backend = serve.NewLocalBackend(m, &serve.LocalOptions{Session: &host.Options{CLI: cli.Options()}})
		closeBackend = func() { m.Close() }
	}
	srv := serve.NewServer(backend, nil)
	hs := httptest.NewServer(srv)
	t.Cleanup(func() {
		hs.Close()
		srv.Close()
		closeBackend()
	})
	e := &uiEnv{url: srv.LoginURL(hs.URL), origin: hs.URL, cwd: repo, api: api, m: m}

	tb := b.newTab(t, e.origin, "worktree")
	tb.open(e)
	// newWorktreeSession starts a session in a worktree of repo from the
	// New session dialog, in acceptEdits, and returns its worktree folder.
	newWorktreeSession := func() string {
		var was string
		tb.eval(`window.tether.current || ""`, &was)
		tb.run(
			chromedp.Click("#new-btn", chromedp.ByID),
			chromedp.WaitVisible("#new-dlg", chromedp.ByID),
			chromedp.SetValue("#new-cwd", repo, chromedp.ByID),
			chromedp.SetValue(`#new-form select[name="permission_mode"]`, "acceptEdits", chromedp.ByQuery),
		)
		// The box keeps the last choice: tick it when it is not.
		tb.eval(`document.querySelector("#new-worktree").checked || document.querySelector("#new-worktree").click()`, nil)
		tb.shot("new-session-dialog")
		tb.run(chromedp.Click("#new-submit", chromedp.ByID))
		tb.waitJS("the session to open", fmt.Sprintf(`window.tether.view && window.tether.current !== %q && !document.querySelector("#session").hidden`, was))
		tb.waitState("ready", "idle")
		tb.waitJS("the worktree panel", `!document.querySelector("#worktree").hidden`)
		var path string
		tb.eval(`window.tether.sessions.get(window.tether.current).worktree.path`, &path)
		if !strings.HasPrefix(path, filepath.Join(repo, ".claude", "worktrees")+"/") {
			t.Fatalf("worktree folder %q", path)
		}
		return path
	}
	writeFile := func(dir, name string) {
		api.Enqueue(
			claudetest.ToolUseReply("toolu_"+strings.TrimSuffix(name, ".txt"), "Write", map[string]string{"file_path": filepath.Join(dir, name), "content": "hello from " + name + "\n"}),
			claudetest.TextReply("Wrote "+name+"."),
		)
		tb.prompt("write " + name)
		tb.waitText("Wrote " + name + ".")
		tb.waitState("idle")
	}

	wa := newWorktreeSession()
	var idA string
	tb.eval(`window.tether.current`, &idA)
	writeFile(wa, "one.txt")
	if _, err := os.Stat(filepath.Join(repo, "one.txt")); !os.IsNotExist(err) {
		t.Fatalf("the session's file reached the main checkout before the merge: %v", err)
	}
	if got := tb.text("#worktree .wt-state"); got != "not merged yet" {
		t.Fatalf("panel state %q", got)
	}
	tb.shots("before-merge")

	tb.run(chromedp.Click("#worktree .wt-merge", chromedp.ByQuery))
	tb.waitJS("the merge's outcome", `document.querySelector("#worktree .wt-note")?.innerText.startsWith("Merged into main")`)
	if got := gittest.Run(t, repo, "show", "main:one.txt"); got != "hello from one.txt" {
		t.Fatalf("main's one.txt = %q", got)
	}
	if b, err := os.ReadFile(filepath.Join(repo, "one.txt")); err != nil || string(b) != "hello from one.txt\n" {
		t.Fatalf("main's checkout one.txt = %q, %v", b, err)
	}
	tb.waitJS("the merged state", `document.querySelector("#worktree .wt-state")?.innerText === "merged"`)
	tb.shots("merged")

	// Discard asks first, saying what is lost; Cancel keeps everything.
	tb.run(chromedp.Click("#worktree .wt-discard", chromedp.ByQuery))
	tb.waitJS("the discard dialog", `document.querySelector("#wt-dlg").open`)
	if got := tb.text("#wt-dlg"); !strings.Contains(got, wa) || !strings.Contains(got, "cannot be undone") {
		t.Fatalf("discard dialog says %q", got)
	}
	tb.shots("discard-dialog")
	tb.run(chromedp.Click("#wt-dlg .wt-dlg-cancel", chromedp.ByQuery))
	tb.waitJS("the dialog closed", `!document.querySelector("#wt-dlg").open`)
	if _, err := os.Stat(wa); err != nil {
		t.Fatalf("a cancelled discard removed the worktree: %v", err)
	}

	// A second session: its work unmerged, Close asks what to do with it.
	wb := newWorktreeSession()
	if wb == wa {
		t.Fatal("two sessions share a worktree")
	}
	writeFile(wb, "two.txt")
	if _, err := os.Stat(filepath.Join(wa, "two.txt")); !os.IsNotExist(err) {
		t.Fatalf("the first session sees the second's file: %v", err)
	}
	var id string
	tb.eval(`window.tether.current`, &id)
	tb.eval(`window.confirm = () => true`, nil)
	tb.run(chromedp.Click("#close-btn", chromedp.ByID))
	tb.waitJS("the close dialog", `document.querySelector("#wt-dlg").open && !document.querySelector("#wt-dlg .wt-dlg-keep").hidden`)
	if got := tb.text("#wt-dlg"); !strings.Contains(got, "not merged") || !strings.Contains(got, "two") && !strings.Contains(got, wb) {
		t.Fatalf("close dialog says %q", got)
	}
	tb.shots("close-unmerged")
	tb.run(chromedp.Click("#wt-dlg .wt-dlg-keep", chromedp.ByQuery))
	tb.waitJS("the session to leave the list", fmt.Sprintf(`!window.tether.sessions.has(%q)`, id))
	branch := gittest.Run(t, repo, "worktree", "list", "--porcelain")
	if !strings.Contains(branch, wb) {
		t.Fatalf("the kept worktree is gone: %s", branch)
	}
	// The session leaves the list as its CLI closes; the commit that
	// keeps its work comes right after (over the cluster, on the agent).
	waitFor(t, "the kept branch's commit of two.txt", func() bool {
		return gittest.Run(t, repo, "log", "--all", "--format=%s", "--", "two.txt") != ""
	})
	if _, err := os.Stat(filepath.Join(repo, "two.txt")); !os.IsNotExist(err) {
		t.Fatalf("the kept work reached main: %v", err)
	}

	// Back to the first session: Discard, confirmed, removes its
	// worktree and branch and ends it; main keeps what was merged.
	tb.run(chromedp.Click(fmt.Sprintf(`#sessions li[data-id=%q]`, idA), chromedp.ByQuery))
	tb.waitJS("the first session's panel", fmt.Sprintf(`window.tether.current === %q && !document.querySelector("#worktree").hidden`, idA))
	branchA := gittest.Run(t, repo, "rev-parse", "--abbrev-ref", "HEAD") // main
	tb.run(chromedp.Click("#worktree .wt-discard", chromedp.ByQuery))
	tb.waitJS("the discard dialog", `document.querySelector("#wt-dlg").open`)
	tb.run(chromedp.Click("#wt-dlg .wt-dlg-discard", chromedp.ByQuery))
	tb.waitJS("the discarded session to leave the list", fmt.Sprintf(`!window.tether.sessions.has(%q)`, idA))
	// As with the kept branch: over the cluster the session leaves the
	// list as its CLI closes, and the agent removes the worktree and then
	// the branch right after.
	waitFor(t, "the discarded worktree and branch removed", func() bool {
		_, err := os.Stat(wa)
		return os.IsNotExist(err) && gittest.Run(t, repo, "branch", "--list", "tether/"+filepath.Base(wa)) == ""
	})
	if got := gittest.Run(t, repo, "show", branchA+":one.txt"); got != "hello from one.txt" {
		t.Fatalf("main lost the merged one.txt: %q", got)
	}
	tb.shot("after-discard")
}
