package claude_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
)

// A PreToolUse hook that defers: the CLI ends the turn without running
// the tool and hands the call back in the result's deferred_tool_use.
func init() {
	var (
		deferCalls  *hookCalls
		deferPrompt *noPrompt
	)
	addScenarios(scenario{
		name: "hooks_pretooluse_defer",
		guards: "A PreToolUse hook that defers: the tool never runs, CanUseTool is not asked, the turn ends with terminal reason " +
			"tool_deferred, and the result's DeferredToolUse carries the call (id, name, input) for the host to settle.",
		record: true,
		api: func() *claudetest.MessagesOptions {
			return &claudetest.MessagesOptions{Replies: []*claudetest.Reply{
				claudetest.ToolUseReply("toolu_defer_1", "Bash", map[string]string{"command": "touch deferred.txt"}),
			}}
		},
		opts: func(o *claude.Options) {
			deferCalls, deferPrompt = &hookCalls{}, &noPrompt{}
			o.CanUseTool = deferPrompt.canUseTool
			o.Hooks = map[claude.HookEvent][]claude.HookMatcher{
				claude.HookEventPreToolUse: {{Matcher: "Bash", Hooks: []claude.HookFunc{deferCalls.record(&claude.HookOutput{
					Event: &claude.PreToolUseHookOutput{PermissionDecision: claude.HookPermissionDecisionDefer},
				})}}},
			}
		},
		run: func(t *testing.T, h *harness) {
			msgs := h.turn(t, "make a file")
			deferPrompt.check(t)
			if n := len(deferCalls.all()); n != 1 {
				t.Fatalf("the hook was called %d times, want once", n)
			}
			r := result(t, msgs)
			if r.TerminalReason != claude.TerminalToolDeferred {
				t.Errorf("terminal reason = %q, want %q (result %s)", r.TerminalReason, claude.TerminalToolDeferred, r.Raw)
			}
			d := r.DeferredToolUse
			if d == nil {
				t.Fatalf("result has no DeferredToolUse: %s", r.Raw)
			}
			if d.ID != "toolu_defer_1" || d.Name != "Bash" || bashCommand(t, d.Input) != "touch deferred.txt" {
				t.Errorf("DeferredToolUse = %+v (input %s)", d, d.Input)
			}
			if h.Real() {
				if _, err := os.Stat(filepath.Join(h.CLI.Dir, "deferred.txt")); err == nil {
					t.Error("the deferred command ran: deferred.txt exists")
				}
				if n := len(h.API.MessagesRequests()); n != 1 {
					t.Errorf("the API got %d requests, want 1: the turn must end at the deferred call", n)
				}
			}
		},
	})
}
