package host_test

import (
	"errors"
	"testing"
	"time"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
	"github.com/tetherhq/tether/host"
)

func init() {
	addScenarios(scenario{
		name: "interrupt_before_turn",
		guards: "Interrupt right after Send, before the CLI has started the prompt's turn, interrupts that turn: " +
			"it returns nil only once the interrupt went out, and the turn ends interrupted, never with the " +
			"model's (delayed) answer.",
		api: func() *claudetest.MessagesOptions {
			return &claudetest.MessagesOptions{Replies: []*claudetest.Reply{
				{Content: []claudetest.ContentBlock{claudetest.TextBlock("too late")}, Delay: 3 * time.Second},
				claudetest.TextReply("second"),
			}}
		},
		run: func(t *testing.T, h *harness) {
			d, err := h.S.Send(h.Ctx, "hi")
			if err != nil {
				t.Fatal(err)
			}
			if err := h.S.Interrupt(h.Ctx); err != nil {
				t.Fatalf("Interrupt: %v", err)
			}
			r, err := d.Wait(h.Ctx)
			var re *claude.ResultError
			if !errors.As(err, &re) || !re.Interrupted() {
				t.Fatalf("delivery: result %q, %v; want an interrupted turn", resultText(r), err)
			}
			if r != nil && r.Result == "too late" {
				t.Errorf("the turn ran to its end: %+v", r)
			}
			h.states.waitState(t, h.Ctx, host.StateIdle)
		},
	})
}

func resultText(r *claude.ResultMessage) string {
	if r == nil {
		return "<none>"
	}
	return r.Result
}
