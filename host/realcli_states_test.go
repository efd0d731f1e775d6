package host_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
	"github.com/tetherhq/tether/host"
)

// The liveness table: for each kind of turn, the exact states a UI shows.
func init() {
	partial := func(o *host.Options) { o.CLI.IncludePartialMessages = true }
	addScenarios(
		scenario{
			name:   "states_plain_turn",
			guards: "A plain streamed turn goes ready, requesting, streaming, idle; the prompt is queued, accepted and answered by the turn's result.",
			record: true,
			api: func() *claudetest.MessagesOptions {
				return &claudetest.MessagesOptions{Replies: []*claudetest.Reply{{Content: []claudetest.ContentBlock{claudetest.TextBlock("Hello there")}, ChunkSize: 4, Usage: claudetest.Usage{InputTokens: 120, OutputTokens: 9}}}}
			},
			opts: partial,
			run: func(t *testing.T, h *harness) {
				began := time.Now()
				d := h.turn(t, "hi")
				h.states.waitState(t, h.Ctx, host.StateIdle)
				if h.S.LastEvent().Before(began) {
					t.Errorf("LastEvent %v is before the turn began (%v)", h.S.LastEvent(), began)
				}
				h.wantStates(t, "ready", "requesting", "streaming", "idle")
				r, err := d.Wait(h.Ctx)
				if err != nil || r == nil || r.Result != "Hello there" || d.Status() != host.DeliveryAnswered {
					t.Errorf("delivery: %v %v %v", d.Status(), r, err)
				}
				c := h.S.Cost()
				if c.Turns != 1 || c.LastTurn.Tokens != c.LastTurn.Counted || c.LastTurn.Messages != 1 || c.Tokens != c.LastTurn.Tokens {
					t.Errorf("cost = %+v", c)
				}
				if h.Real() && (c.LastTurn.Tokens.Input != 120 || c.LastTurn.Tokens.Output != 9 || c.USD <= 0 || len(c.Models) != 1) {
					t.Errorf("cost = %+v", c)
				}
				if len(h.S.Drafts()) != 0 {
					t.Errorf("drafts after the turn: %v", h.S.Drafts())
				}
			},
		},
		scenario{
			name:   "states_tool_approval",
			guards: "A tool call that needs approval: the session shows the tool being typed, running, awaiting approval with the request, running again once allowed, then the next API call and the answer.",
			record: true,
			api: func() *claudetest.MessagesOptions {
				return &claudetest.MessagesOptions{Replies: []*claudetest.Reply{
					claudetest.ToolUseReply("toolu_1", "Bash", map[string]string{"command": "echo hi > hi.txt", "description": "Write hi"}),
					claudetest.TextReply("Wrote it."),
				}}
			},
			opts: partial,
			run: func(t *testing.T, h *harness) {
				d, err := h.S.Send(h.Ctx, "write hi to hi.txt")
				if err != nil {
					t.Fatal(err)
				}
				l := h.states.waitState(t, h.Ctx, host.StateAwaitingApproval)
				a := l.Approval
				if a == nil || a.Request.ToolName != "Bash" || a.Kind != host.ApprovalTool || len(h.S.Approvals()) != 1 || h.S.Approvals()[0] != a {
					t.Fatalf("approval = %+v, pending %v", a, h.S.Approvals())
				}
				if got, err := h.S.Approval(a.ID()); err != nil || got != a {
					t.Errorf("Approval(%s) = %v, %v", a.ID(), got, err)
				}
				if err := a.Allow(); err != nil {
					t.Fatal(err)
				}
				var ae *host.ApprovalError
				if err := a.Deny("too late"); !errors.As(err, &ae) || !errors.Is(err, host.ErrAlreadyAnswered) {
					t.Errorf("second answer: %v", err)
				}
				if _, err := d.Wait(h.Ctx); err != nil {
					t.Fatal(err)
				}
				h.states.waitState(t, h.Ctx, host.StateIdle)
				h.wantStates(t, "ready", "requesting", "streaming Bash", "running_tool Bash", "awaiting_approval Bash",
					"running_tool Bash", "requesting", "streaming", "idle")
				if h.Real() {
					if b, err := os.ReadFile(filepath.Join(h.CLI.Dir, "hi.txt")); err != nil || string(b) != "hi\n" {
						t.Errorf("hi.txt = %q, %v", b, err)
					}
				}
			},
		},
		scenario{
			name:   "states_interrupt",
			guards: "Interrupting a streaming turn: interrupting until the result, then idle (an interrupt is not shown as an error); the draft ends interrupted.",
			record: true,
			api: func() *claudetest.MessagesOptions {
				return &claudetest.MessagesOptions{Replies: []*claudetest.Reply{{Content: []claudetest.ContentBlock{claudetest.TextBlock("A long answer that never ends")}, ChunkSize: 4, StallAfterEvents: 5}}}
			},
			opts: partial,
			run: func(t *testing.T, h *harness) {
				d, err := h.S.Send(h.Ctx, "talk")
				if err != nil {
					t.Fatal(err)
				}
				h.states.waitState(t, h.Ctx, host.StateStreaming)
				// The draft grows while the stream stalls half way.
				for {
					ds := h.S.Drafts()
					if len(ds) == 1 && ds[0].Status == claude.DraftStreaming && len(ds[0].Content) == 1 {
						if tb, ok := ds[0].Content[0].(*claude.TextBlock); ok && strings.HasPrefix("A long answer that never ends", tb.Text) && tb.Text != "" {
							break
						}
					}
					select {
					case <-h.Ctx.Done():
						t.Fatalf("no draft with text: %+v", h.S.Drafts())
					case <-time.After(5 * time.Millisecond):
					}
				}
				if err := h.S.Interrupt(h.Ctx); err != nil {
					t.Fatal(err)
				}
				r, err := d.Wait(h.Ctx)
				var re *claude.ResultError
				if !errors.As(err, &re) || !re.Interrupted() || r == nil {
					t.Errorf("delivery: %v, %v", r, err)
				}
				l := h.states.waitState(t, h.Ctx, host.StateIdle)
				if !errors.As(l.Err, &re) {
					t.Errorf("idle after interrupt has Err %v", l.Err)
				}
				h.wantStates(t, "ready", "requesting", "streaming", "interrupting", "idle")
			},
		},
		scenario{
			name:   "states_api_retry",
			guards: "An overloaded API retried twice: requesting, then requesting with each retry attempt, then the answer.",
			record: true,
			api: func() *claudetest.MessagesOptions {
				return &claudetest.MessagesOptions{MaxRetries: 3, Replies: []*claudetest.Reply{
					claudetest.OverloadedReply("0"), claudetest.OverloadedReply("0"), claudetest.TextReply("finally"),
				}}
			},
			opts: partial,
			run: func(t *testing.T, h *harness) {
				h.turn(t, "hi")
				h.states.waitState(t, h.Ctx, host.StateIdle)
				h.wantStates(t, "ready", "requesting", "requesting retry 1", "requesting retry 2", "streaming", "idle")
			},
		},
		scenario{
			name:   "states_crash",
			guards: "The CLI killed mid-turn: disconnected with the *claude.ProcessError; the prompt is lost with it.",
			api: func() *claudetest.MessagesOptions {
				return &claudetest.MessagesOptions{Replies: []*claudetest.Reply{{Content: []claudetest.ContentBlock{claudetest.TextBlock("never finished")}, StallAfterEvents: 4}}}
			},
			opts: partial,
			run: func(t *testing.T, h *harness) {
				d, err := h.S.Send(h.Ctx, "hi")
				if err != nil {
					t.Fatal(err)
				}
				h.states.waitState(t, h.Ctx, host.StateStreaming)
				if err := syscall.Kill(h.S.Claude().PID(), syscall.SIGKILL); err != nil {
					t.Fatal(err)
				}
				l := h.states.waitState(t, h.Ctx, host.StateDisconnected)
				var pe *claude.ProcessError
				if !errors.As(l.Err, &pe) || pe.Signal == "" {
					t.Errorf("disconnected with %v", l.Err)
				}
				if _, err := d.Wait(h.Ctx); !errors.As(err, &pe) || d.Status() != host.DeliveryLost {
					t.Errorf("delivery %v: %v", d.Status(), err)
				}
				<-h.S.Done()
				h.wantStates(t, "ready", "requesting", "streaming", "disconnected: "+pe.Error())
			},
		},
	)
}
