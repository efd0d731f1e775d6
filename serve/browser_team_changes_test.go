package serve_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/tetherhq/tether/claude/claudetest"
	"github.com/tetherhq/tether/team"
)

// TestBrowserTeamChanges: in a team, a viewer sees what a session
// changed but is offered no revert, and a revert sent by hand is refused
// by the one authorization point (nothing changes on disk); the owner's
// revert goes through and is audited. Through a lone serve and through
// the cluster.
func TestBrowserTeamChanges(t *testing.T) {
	b := newBrowser(t)
	t.Run("Local", func(t *testing.T) { testTeamChanges(t, b, false) })
	t.Run("Cluster", func(t *testing.T) { testTeamChanges(t, b, true) })
}

func testTeamChanges(t *testing.T, b *browser, clustered bool) {
	w := newTeamWorld(t, clustered,
		claudetest.ToolUseReply("toolu_plan", "Write", map[string]any{"file_path": "PLAN.md", "content": "# Plan\n\n1. Measure.\n2. Cut.\n"}),
		claudetest.TextReply("Wrote the plan."),
	)
	ws := w.workspace("alice@example.com")
	plan := filepath.Join(ws, "PLAN.md")

	alice := b.personTab(t, w, "alice")
	alice.signIn(w, "alice@example.com")
	id := alice.newSession(ws)
	alice.prompt("write a plan")
	alice.waitJS("Alice's approval card", `document.querySelector(".approval:not(.answered) .allow")`)
	alice.key(kb.Enter)
	alice.waitText("Wrote the plan.")
	alice.waitTurns(1)
	if _, err := os.Stat(plan); err != nil {
		t.Fatalf("PLAN.md: %v", err)
	}
	if r := alice.fetchAs("POST", "api/sessions/"+id+"/share", `{"grants":[{"person":"bob@example.com","level":"viewer"}]}`, nil); r.Status != 200 {
		t.Fatalf("share: %d %s", r.Status, r.Body)
	}

	// Bob, a viewer, sees the change, with nothing to revert it.
	bob := b.personTab(t, w, "bob")
	bob.signIn(w, "bob@example.com")
	bob.waitJS("the shared session listed", fmt.Sprintf(`document.querySelector('#sessions li[data-id=%q] .access.viewer')`, id))
	bob.run(chromedp.Click(fmt.Sprintf(`#sessions li[data-id=%q]`, id), chromedp.ByQuery))
	bob.waitJS("the Changes button", `document.querySelector("#changes-btn").textContent === "Changes (1)"`)
	bob.run(chromedp.Click("#changes-btn", chromedp.ByID))
	bob.waitJS("the panel", `document.querySelectorAll("#changes-dlg .change.created").length === 1`)
	if s := bob.text("#changes-dlg"); !strings.Contains(s, "PLAN.md") || !strings.Contains(s, "2. Cut.") || !strings.Contains(s, "Only the owner and collaborators can revert") {
		t.Errorf("the viewer's panel:\n%s", s)
	}
	var offered []string
	bob.eval(`["#changes-revert-all", "#changes-dlg button.revert"].filter((s) => {
		const e = document.querySelector(s);
		return e && e.offsetParent !== null;
	})`, &offered)
	if len(offered) > 0 {
		t.Errorf("a viewer is offered %v", offered)
	}
	if !clustered {
		bob.shots("viewer-changes")
	}
	replies := bob.wsFrames(
		map[string]any{"type": "do", "session": id, "command": map[string]any{"type": "revert_changes"}},
		map[string]any{"type": "do", "session": id, "command": map[string]any{"type": "revert_changes", "paths": []string{"PLAN.md"}}},
		map[string]any{"type": "do", "session": id, "command": map[string]any{"type": "changes"}},
	)
	for i := 1; i <= 2; i++ {
		if c := replyCode(replies[fmt.Sprint(i)]); c != "forbidden" {
			t.Errorf("Bob's revert %d: reply %s; want forbidden", i, replies[fmt.Sprint(i)])
		}
	}
	var got struct {
		Result struct {
			Changes []struct{ Rel, Kind string }
		}
	}
	if json.Unmarshal(replies["3"], &got); len(got.Result.Changes) != 1 || got.Result.Changes[0].Rel != "PLAN.md" || got.Result.Changes[0].Kind != "created" {
		t.Errorf("Bob's changes: %s", replies["3"])
	}
	if _, err := os.Stat(plan); err != nil {
		t.Fatalf("PLAN.md after the viewer's refused reverts: %v", err)
	}
	if !w.auditHas(t, func(ev *team.AuditEvent) bool {
		return ev.Action == team.ActionRefused && ev.Session == id && strings.HasPrefix(ev.Detail, "revert_changes:")
	}) {
		t.Error("the viewer's refused revert is not in the audit log")
	}

	// Alice, the owner, reverts: done, audited, and Bob's panel follows.
	replies = alice.wsFrames(map[string]any{"type": "do", "session": id, "command": map[string]any{"type": "revert_changes", "paths": []string{"PLAN.md"}}})
	if c := replyCode(replies["1"]); c != "" {
		t.Fatalf("Alice's revert: %s", replies["1"])
	}
	if _, err := os.Stat(plan); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("PLAN.md after Alice's revert: %v", err)
	}
	bob.waitJS("the viewer's panel to follow", `document.querySelectorAll("#changes-dlg .change").length === 0 && document.querySelector("#changes-btn").textContent === "Changes"`)
	waitFor(t, "the revert in the audit log", func() bool {
		return w.auditHas(t, func(ev *team.AuditEvent) bool {
			return ev.Action == team.ActionRevert && ev.Session == id && strings.Contains(ev.Detail, "PLAN.md")
		})
	})
}
