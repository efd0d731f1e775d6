package claude_test

import (
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
)

// TestRealCLIGoalLoop: /goal, sent as a prompt, runs the CLI's goal loop
// through a Session. The CLI asks a side request whether the condition
// holds each time the model stops; while it does not, it feeds the reason
// back as a synthetic user message and the turn goes on; once it holds,
// the turn ends with one result. Every line of it decodes to a typed
// message. (No pinned CLI wrote an active_goal line in this loop, so
// ActiveGoalMessage stays proven from a golden line only.)
func TestRealCLIGoalLoop(t *testing.T) {
	t.Parallel()
	const cond = "the reply names the tether-goal"
	var asked atomic.Int32
	r := newRealSession(t, &claudetest.MessagesOptions{
		Replies: []*claudetest.Reply{claudetest.TextReply("working on it"), claudetest.TextReply("tether-goal")},
		RespondSide: func(r *claudetest.Request) *claudetest.Reply {
			if r.Params == nil || !r.Params.Contains(cond) {
				return nil
			}
			if asked.Add(1) == 1 {
				return claudetest.TextReply(`{"ok": false, "reason": "not named yet"}`)
			}
			return claudetest.TextReply(`{"ok": true, "reason": "named"}`)
		},
	}, nil)
	msgs := turnOf(t, r.Ctx, r.S, "/goal "+cond)

	if res := result(t, msgs); res.IsError || res.Result != "tether-goal" {
		t.Errorf("result = %+v, want success with the second reply", res)
	}
	if n := asked.Load(); n != 2 {
		t.Errorf("the condition was checked %d times, want 2", n)
	}
	if n := len(r.API.MessagesRequests()); n != 2 {
		t.Errorf("%d main-loop requests, want 2 (one per model stop)", n)
	}
	var feedback bool
	for _, u := range find[*claude.UserMessage](msgs) {
		if u.IsSynthetic && strings.Contains(string(u.RawJSON()), "not named yet") {
			feedback = true
		}
	}
	if !feedback {
		t.Errorf("no synthetic user message with the reason in %v", types(msgs))
	}
	for _, m := range msgs {
		switch m.(type) {
		case *claude.UnknownMessage, *claude.UnknownSystemMessage:
			t.Errorf("undecoded line: %.300s", m.RawJSON())
		}
	}
}
