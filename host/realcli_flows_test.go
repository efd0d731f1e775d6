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

// waitSessionFile waits until the CLI's transcript of session sid holds
// want.
func waitSessionFile(t *testing.T, h *harness, sid, want string) {
	t.Helper()
	for {
		files, _ := filepath.Glob(filepath.Join(h.CLI.Home, ".claude", "projects", "*", sid+".jsonl"))
		for _, f := range files {
			if b, err := os.ReadFile(f); err == nil && strings.Contains(string(b), want) {
				return
			}
		}
		select {
		case <-h.Ctx.Done():
			t.Fatalf("session file of %s never held %q", sid, want)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Questions, deny-and-interrupt, queued prompts and restarts against the
// real CLI.
func init() {
	partial := func(o *host.Options) { o.CLI.IncludePartialMessages = true }
	question := map[string]any{"questions": []any{map[string]any{
		"question": "Which color?", "header": "Color", "multiSelect": false,
		"options": []any{map[string]any{"label": "Red", "description": "warm"}, map[string]any{"label": "Blue", "description": "cold"}},
	}}}
	addScenarios(
		scenario{
			name:   "states_question",
			guards: "AskUserQuestion waits for an answer (awaiting_answer), and the answer reaches the model in the tool result.",
			record: true,
			api: func() *claudetest.MessagesOptions {
				return &claudetest.MessagesOptions{Replies: []*claudetest.Reply{
					claudetest.ToolUseReply("toolu_q", "AskUserQuestion", question),
					claudetest.TextReply("Blue it is."),
				}}
			},
			opts: partial,
			run: func(t *testing.T, h *harness) {
				d, err := h.S.Send(h.Ctx, "pick a color with me")
				if err != nil {
					t.Fatal(err)
				}
				a := h.states.waitState(t, h.Ctx, host.StateAwaitingAnswer).Approval
				if a.Kind != host.ApprovalQuestion || len(a.Questions) != 1 || a.Questions[0].Question != "Which color?" {
					t.Fatalf("question = %+v", a)
				}
				if err := a.Answer(map[string]string{"Which color?": "Blue"}); err != nil {
					t.Fatal(err)
				}
				if _, err := d.Wait(h.Ctx); err != nil {
					t.Fatal(err)
				}
				h.states.waitState(t, h.Ctx, host.StateIdle)
				h.wantStates(t, "ready", "requesting", "streaming AskUserQuestion", "running_tool AskUserQuestion",
					"awaiting_answer AskUserQuestion", "running_tool AskUserQuestion", "requesting", "streaming", "idle")
				if h.Real() {
					reqs := h.API.MessagesRequests()
					if len(reqs) != 2 || !strings.Contains(string(reqs[1].Body), "Blue") {
						t.Errorf("the answer did not reach the model: %d requests", len(reqs))
					}
				}
			},
		},
		scenario{
			name:   "states_deny_and_interrupt",
			guards: "Denying a pending approval with interrupt ends the turn in one answer: awaiting_approval, interrupting, idle; no further API call.",
			record: true,
			api: func() *claudetest.MessagesOptions {
				return &claudetest.MessagesOptions{Replies: []*claudetest.Reply{
					claudetest.ToolUseReply("toolu_1", "Bash", map[string]string{"command": "rm -rf /tmp/x > /dev/null"}),
				}}
			},
			opts: partial,
			run: func(t *testing.T, h *harness) {
				d, err := h.S.Send(h.Ctx, "clean up")
				if err != nil {
					t.Fatal(err)
				}
				h.states.waitState(t, h.Ctx, host.StateAwaitingApproval)
				if err := h.S.DenyAndInterrupt(h.Ctx, "no deleting"); err != nil {
					t.Fatal(err)
				}
				_, err = d.Wait(h.Ctx)
				var re *claude.ResultError
				if !errors.As(err, &re) || !re.Interrupted() {
					t.Errorf("turn ended with %v", err)
				}
				h.states.waitState(t, h.Ctx, host.StateIdle)
				h.wantStates(t, "ready", "requesting", "streaming Bash", "running_tool Bash", "awaiting_approval Bash", "interrupting", "idle")
				if h.Real() && len(h.API.MessagesRequests()) != 1 {
					t.Errorf("%d API calls after deny+interrupt", len(h.API.MessagesRequests()))
				}
			},
		},
		scenario{
			name:   "deliveries_merged",
			guards: "Prompts sent during a turn are queued, then accepted together and answered by one merged turn's result; a queued prompt can be cancelled before the CLI takes it.",
			record: true,
			api: func() *claudetest.MessagesOptions {
				return &claudetest.MessagesOptions{Replies: []*claudetest.Reply{
					{Content: []claudetest.ContentBlock{claudetest.TextBlock("first answer, slowly")}, ChunkSize: 4, EventDelay: 100 * time.Millisecond},
					claudetest.TextReply("merged answer"),
				}}
			},
			opts: partial,
			run: func(t *testing.T, h *harness) {
				d1, err := h.S.Send(h.Ctx, "one")
				if err != nil {
					t.Fatal(err)
				}
				h.states.waitState(t, h.Ctx, host.StateStreaming)
				d2, _ := h.S.Send(h.Ctx, "two")
				d3, _ := h.S.Send(h.Ctx, "three")
				d4, _ := h.S.Send(h.Ctx, "never mind")
				if st := d2.Status(); st != host.DeliveryQueued {
					t.Errorf("two is %v during the first turn", st)
				}
				if err := h.S.CancelMessage(h.Ctx, d4.UUID); err != nil {
					t.Errorf("CancelMessage: %v", err)
				}
				r1, err := d1.Wait(h.Ctx)
				if err != nil || r1.Result != "first answer, slowly" {
					t.Fatalf("one: %v, %v", r1, err)
				}
				r2, err2 := d2.Wait(h.Ctx)
				r3, err3 := d3.Wait(h.Ctx)
				if err2 != nil || err3 != nil || r2 != r3 || r2.Result != "merged answer" {
					t.Errorf("two %v (%v), three %v (%v): want one merged result", r2, err2, r3, err3)
				}
				if _, err := d4.Wait(h.Ctx); !errors.Is(err, host.ErrMessageCancelled) {
					t.Errorf("cancelled prompt: %v, %v", d4.Status(), err)
				}
				h.states.waitFor(t, h.Ctx, "second idle", func(l host.Liveness) bool { return l.State == host.StateIdle && l.Seq > 5 })
				h.wantStates(t, "ready", "requesting", "streaming", "idle", "requesting", "streaming", "idle")
				if h.Real() {
					reqs := h.API.MessagesRequests()
					if len(reqs) != 2 || strings.Contains(string(reqs[1].Body), "never mind") || !strings.Contains(string(reqs[1].Body), "three") {
						t.Errorf("the merged request is wrong (%d requests)", len(reqs))
					}
				}
			},
		},
		scenario{
			name:   "restart_resumes",
			guards: "A CLI killed between turns is restarted by the RestartPolicy with --resume: disconnected, starting, ready, and the next turn sees the earlier conversation.",
			api: func() *claudetest.MessagesOptions {
				return &claudetest.MessagesOptions{Replies: []*claudetest.Reply{claudetest.TextReply("remembered"), claudetest.TextReply("still here")}}
			},
			opts: func(o *host.Options) { o.Restart = &host.RestartPolicy{Delay: 10 * time.Millisecond} },
			run: func(t *testing.T, h *harness) {
				h.turn(t, "remember the word teapot")
				h.states.waitState(t, h.Ctx, host.StateIdle)
				before := h.S.Cost()
				sid := h.S.SessionID()
				// The CLI writes its session file lazily; kill it only once
				// the turn is on disk (else there is nothing to resume: see
				// TestRestartStartsFreshWhenNothingToResume).
				waitSessionFile(t, h, sid, "remembered")
				if err := syscall.Kill(h.S.Claude().PID(), syscall.SIGKILL); err != nil {
					t.Fatal(err)
				}
				h.states.waitFor(t, h.Ctx, "ready again", func(l host.Liveness) bool { return l.State == host.StateReady && l.Seq > 3 })
				d := h.turn(t, "what was the word?")
				if r, err := d.Wait(h.Ctx); err != nil || r.Result != "still here" {
					t.Fatalf("after the restart: %v, %v", r, err)
				}
				h.states.waitFor(t, h.Ctx, "idle again", func(l host.Liveness) bool { return l.State == host.StateIdle && l.Seq > 8 })
				got := h.states.strings()
				if len(got) != 10 || !strings.HasPrefix(got[4], "disconnected: claude: CLI exited on signal") {
					t.Errorf("states %q", got)
				}
				h.wantStates(t, "ready", "requesting", "streaming", "idle", got[4], "starting", "ready", "requesting", "streaming", "idle")
				if h.S.SessionID() != sid {
					t.Errorf("session id %s after resuming %s", h.S.SessionID(), sid)
				}
				reqs := h.API.MessagesRequests()
				if len(reqs) != 2 || !strings.Contains(string(reqs[1].Body), "teapot") {
					t.Errorf("the resumed turn lacks the earlier conversation")
				}
				after := h.S.Cost()
				t.Logf("cost before %.6f after %.6f (last turn %.6f)", before.USD, after.USD, after.LastTurn.USD)
				if after.Turns != 2 || after.USD <= before.USD || after.USD > before.USD+after.LastTurn.USD+1e-9 {
					t.Errorf("cost across the restart: before %+v, after %+v", before, after)
				}
			},
		},
	)
}
