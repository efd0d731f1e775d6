package claude_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
	"github.com/tetherhq/tether/internal/proc"
)

// Errors, limits, interrupts and a CLI that goes away: what a user sees
// when a turn does not simply succeed.
func init() {
	addScenarios(
		scenario{
			name:   "api_500_retried",
			guards: "An HTTP 500 is retried by the CLI: a system/api_retry (attempt 1, status 500, server_error) reaches the user as *APIRetryMessage, then the retried call's answer ends the turn successfully.",
			record: true,
			api: func() *claudetest.MessagesOptions {
				return &claudetest.MessagesOptions{
					MaxRetries: 2,
					Replies:    []*claudetest.Reply{claudetest.ErrorReply(500, "", "fake internal error"), claudetest.TextReply("recovered")},
				}
			},
			run: func(t *testing.T, h *harness) {
				out := errsTurn(t, h, "hi")
				if out.rerr != nil || out.res.IsError || out.res.Result != "recovered" {
					t.Errorf("result = %+v, error %v; want the retried answer", out.res, out.rerr)
				}
				rs := find[*claude.APIRetryMessage](out.msgs)
				if len(rs) != 1 {
					t.Fatalf("got %d *APIRetryMessage, want 1, in %v", len(rs), types(out.msgs))
				}
				if r := rs[0]; r.Attempt != 1 || r.MaxRetries != 2 || r.ErrorStatus != 500 || r.Error != "server_error" || r.RetryDelayMS <= 0 {
					t.Errorf("api_retry = %+v, want attempt 1 of 2, 500 server_error, a delay", r)
				}
				wantTypesInOrder(t, out.msgs, "*claude.APIRetryMessage", "*claude.AssistantMessage", "*claude.ResultMessage")
				if h.Real() {
					errsWantSameRequestTwice(t, h)
				}
			},
		},
		scenario{
			name:   "api_529_retried",
			guards: "An HTTP 529 overloaded_error with retry-after: 1 is retried after that second: *APIRetryMessage (529, overloaded, retry_delay_ms ≈ 1000), then success.",
			record: true,
			api: func() *claudetest.MessagesOptions {
				return &claudetest.MessagesOptions{
					MaxRetries: 2,
					Replies:    []*claudetest.Reply{claudetest.OverloadedReply("1"), claudetest.TextReply("recovered")},
				}
			},
			run: func(t *testing.T, h *harness) {
				out := errsTurn(t, h, "hi")
				if out.rerr != nil || out.res.IsError || out.res.Result != "recovered" {
					t.Errorf("result = %+v, error %v; want the retried answer", out.res, out.rerr)
				}
				rs := find[*claude.APIRetryMessage](out.msgs)
				if len(rs) != 1 {
					t.Fatalf("got %d *APIRetryMessage, want 1, in %v", len(rs), types(out.msgs))
				}
				if r := rs[0]; r.Attempt != 1 || r.MaxRetries != 2 || r.ErrorStatus != 529 || r.Error != "overloaded" {
					t.Errorf("api_retry = %+v, want attempt 1 of 2, 529 overloaded", r)
				}
				if d := rs[0].RetryDelayMS; d < 1000 || d >= 2000 {
					t.Errorf("retry_delay_ms = %.0f, want retry-after: 1 honoured (1000 ≤ d < 2000)", d)
				}
				wantTypesInOrder(t, out.msgs, "*claude.APIRetryMessage", "*claude.AssistantMessage", "*claude.ResultMessage")
				if h.Real() {
					reqs := errsWantSameRequestTwice(t, h)
					if gap := reqs[1].Time.Sub(reqs[0].Time); gap < time.Second {
						t.Errorf("the retry came %v after the 529; want at least the 1 s of retry-after", gap)
					}
				}
			},
		},
		scenario{
			name:   "api_401",
			guards: "An HTTP 401 ends the turn with result subtype success and is_error true (api_error_status 401), yielded with a *ResultError; the session stays usable.",
			record: true,
			api: func() *claudetest.MessagesOptions {
				// The CLI retries 401s too: route on the prompt so that
				// however many times it asks, the first turn fails and the
				// second succeeds.
				return &claudetest.MessagesOptions{
					MaxRetries: 1,
					Respond: errsRespondByPrompt(map[string]*claudetest.Reply{
						"who am I":  claudetest.ErrorReply(401, "", ""),
						"try again": claudetest.TextReply("welcome back"),
					}),
				}
			},
			run: func(t *testing.T, h *harness) {
				out := errsTurn(t, h, "who am I")
				if out.res.Subtype != claude.ResultSuccess || !out.res.IsError || out.res.APIErrorStatus != 401 {
					t.Errorf("result = %+v, want subtype success, is_error, api_error_status 401", out.res)
				}
				if out.rerr == nil || out.rerr.APIErrorStatus != 401 || out.rerr.Interrupted() {
					t.Fatalf("*ResultError = %+v, want one with APIErrorStatus 401", out.rerr)
				}
				for _, r := range find[*claude.APIRetryMessage](out.msgs) {
					if r.ErrorStatus != 401 || r.Error != "authentication_failed" {
						t.Errorf("api_retry = %+v, want 401 authentication_failed", r)
					}
				}
				errsWantUsable(t, h, "try again", "welcome back")
			},
		},
		scenario{
			name:   "retries_exhausted",
			guards: "With CLAUDE_CODE_MAX_RETRIES=2 and a 500 on every call, the user sees api_retry attempts 1 and 2, then a failed turn (*ResultError, status 500); the next turn works.",
			record: true,
			api: func() *claudetest.MessagesOptions {
				return &claudetest.MessagesOptions{
					MaxRetries: 2,
					Respond: errsRespondByPrompt(map[string]*claudetest.Reply{
						"doomed":    claudetest.ErrorReply(500, "", "fake internal error"),
						"try again": claudetest.TextReply("back again"),
					}),
				}
			},
			run: func(t *testing.T, h *harness) {
				out := errsTurn(t, h, "doomed")
				if !out.res.IsError || out.res.APIErrorStatus != 500 {
					t.Errorf("result = %+v, want is_error with api_error_status 500", out.res)
				}
				if out.rerr == nil || out.rerr.APIErrorStatus != 500 {
					t.Fatalf("*ResultError = %+v, want one with APIErrorStatus 500", out.rerr)
				}
				var attempts []int
				for _, r := range find[*claude.APIRetryMessage](out.msgs) {
					attempts = append(attempts, r.Attempt)
					if r.ErrorStatus != 500 || r.Error != "server_error" || r.MaxRetries != 2 {
						t.Errorf("api_retry = %+v, want 500 server_error of 2", r)
					}
				}
				if diff := cmp.Diff([]int{1, 2}, attempts); diff != "" {
					t.Errorf("api_retry attempts (-want +got):\n%s", diff)
				}
				if h.Real() {
					if n := len(h.API.MessagesRequests()); n != 3 {
						t.Errorf("the API got %d requests, want 3 (one and two retries)", n)
					}
				}
				errsWantUsable(t, h, "try again", "back again")
			},
		},
		scenario{
			name:   "sse_error_mid_stream",
			guards: "An SSE error event mid-stream. Before any block is complete (turn 1) both versions ask again without streaming and show only that answer. After a complete block (turn 2) the block is kept; 2.1.197 then fails the turn (is_error, \"API Error: …\", no status) while 2.1.330 asks the model to resume (a user message \"…cut off mid-stream…\") and succeeds.",
			record: true,
			api: func() *claudetest.MessagesOptions {
				return &claudetest.MessagesOptions{
					Replies: []*claudetest.Reply{
						{
							Content:     []claudetest.ContentBlock{claudetest.TextBlock("this answer is cut short before it ends")},
							ChunkSize:   8,
							StreamError: &claudetest.StreamError{AfterEvents: 4, Message: "fake overload mid-block"}, // two deltas in
						},
						{
							Content:     []claudetest.ContentBlock{claudetest.TextBlock("complete block"), claudetest.TextBlock("never sent")},
							ChunkSize:   100,
							StreamError: &claudetest.StreamError{AfterEvents: 4, Message: "fake overload after a block"}, // after content_block_stop
						},
					},
					Respond: func(r *claudetest.Request) *claudetest.Reply {
						switch {
						case !r.Stream():
							return claudetest.TextReply("second try")
						case strings.Contains(r.Params.LastUser().Text(), "cut off mid-stream"):
							return claudetest.TextReply("resumed")
						}
						return nil // the queue
					},
				}
			},
			run: func(t *testing.T, h *harness) {
				// Turn 1: broken before the first block completed.
				out := errsTurn(t, h, "first")
				if out.rerr != nil || out.res.IsError || out.res.Result != "second try" {
					t.Errorf("turn 1: result = %+v, error %v; want the non-streamed answer", out.res, out.rerr)
				}
				if got := errsAssistantTexts(out.msgs); !cmp.Equal(got, []string{"second try"}) {
					t.Errorf("turn 1: assistant texts = %q, want only the second try (the cut text dropped)", got)
				}
				if h.Real() {
					reqs := h.API.MessagesRequests()
					if len(reqs) != 2 || !reqs[0].Stream() || reqs[1].Stream() {
						t.Fatalf("turn 1: %d requests; want a streamed one then a non-streamed one", len(reqs))
					}
					if a, b := reqs[0].Params.LastUser().Text(), reqs[1].Params.LastUser().Text(); a != b {
						t.Errorf("turn 1: the fallback asks %q, want the same prompt %q", b, a)
					}
				}

				// Turn 2: broken after a complete block.
				out = errsTurn(t, h, "second")
				version := errsVersion(t, out.msgs)
				texts := errsAssistantTexts(out.msgs)
				if len(texts) == 0 || texts[0] != "complete block" {
					t.Errorf("CLI %s, turn 2: assistant texts = %q, want the complete block kept first", version, texts)
				}
				for _, s := range texts {
					if strings.Contains(s, "never sent") {
						t.Errorf("CLI %s, turn 2: assistant text %q was never sent by the API", version, s)
					}
				}
				resumed := errsUserSays(out.msgs, "cut off mid-stream")
				if proc.CompareVersions(version, "2.1.330") >= 0 {
					if !resumed {
						t.Errorf("CLI %s, turn 2: no user message asking to resume in %v", version, types(out.msgs))
					}
					if out.rerr != nil || out.res.IsError || out.res.Result != "resumed" || !slices.Contains(texts, "resumed") {
						t.Errorf("CLI %s, turn 2: result = %+v, error %v, texts %q; want the resumed answer", version, out.res, out.rerr, texts)
					}
				} else {
					if resumed {
						t.Errorf("CLI %s, turn 2: unexpected resume message", version)
					}
					if out.rerr == nil || !out.res.IsError || out.res.Result != "API Error: fake overload after a block" || out.rerr.APIErrorStatus != 0 {
						t.Errorf("CLI %s, turn 2: result = %+v, error %v; want is_error with the stream's error, no status", version, out.res, out.rerr)
					}
				}
				if h.Real() {
					want := 3 // 2.1.197: the broken request only
					if proc.CompareVersions(version, "2.1.330") >= 0 {
						want = 4 // and the resume request
					}
					reqs := h.API.MessagesRequests()
					if len(reqs) != want {
						t.Fatalf("CLI %s: the API got %d requests, want %d", version, len(reqs), want)
					}
					if want == 4 && !reqs[3].Stream() {
						t.Errorf("CLI %s: the resume request is not streamed", version)
					}
				}
			},
		},
		scenario{
			name:   "max_tokens_continuation",
			guards: "A reply that stops with max_tokens is continued by the CLI within the same turn: both parts shown, one successful result, a second API request asking to resume.",
			record: true,
			api: func() *claudetest.MessagesOptions {
				return &claudetest.MessagesOptions{Replies: []*claudetest.Reply{
					{Content: []claudetest.ContentBlock{claudetest.TextBlock("the first half")}, StopReason: claudetest.StopReasonMaxTokens},
					claudetest.TextReply("and the rest"),
				}}
			},
			run: func(t *testing.T, h *harness) {
				out := errsTurn(t, h, "write a lot")
				if out.rerr != nil || out.res.IsError || out.res.Result != "and the rest" {
					t.Errorf("result = %+v, error %v; want the continuation's text", out.res, out.rerr)
				}
				texts := errsAssistantTexts(out.msgs)
				if !slices.Contains(texts, "the first half") || !slices.Contains(texts, "and the rest") {
					t.Errorf("assistant texts = %q, want both halves", texts)
				}
				if v := errsVersion(t, out.msgs); proc.CompareVersions(v, "2.1.330") >= 0 && !errsUserSays(out.msgs, "Output token limit hit") {
					t.Errorf("CLI %s: no user message showing the continuation prompt in %v", v, types(out.msgs))
				}
				if h.Real() {
					reqs := h.API.MessagesRequests()
					if len(reqs) != 2 {
						t.Fatalf("the API got %d requests, want 2", len(reqs))
					}
					if got := reqs[1].Params.LastUser().Text(); !strings.Contains(got, "Output token limit hit") {
						t.Errorf("continuation prompt = %q, want it to ask to resume", got)
					}
				}
			},
		},
		scenario{
			name:   "max_turns",
			guards: "Options.MaxTurns=1 with a tool loop: the turn ends after one model call with error_max_turns, terminal_reason max_turns, a *ResultError.",
			record: true,
			api: func() *claudetest.MessagesOptions {
				return &claudetest.MessagesOptions{Replies: []*claudetest.Reply{
					claudetest.ToolUseReply("", "Bash", map[string]string{"command": "echo looked around", "description": "Look"}),
				}}
			},
			opts: func(o *claude.Options) {
				o.MaxTurns = 1
				o.AllowedTools = []string{"Bash"}
			},
			run: func(t *testing.T, h *harness) {
				out := errsTurn(t, h, "look around")
				r := out.res
				if r.Subtype != claude.ResultErrorMaxTurns || !r.IsError || r.TerminalReason != claude.TerminalMaxTurns {
					t.Errorf("result = %+v, want error_max_turns, is_error, terminal_reason max_turns", r)
				}
				if out.rerr == nil || out.rerr.Subtype != claude.ResultErrorMaxTurns || out.rerr.TerminalReason != claude.TerminalMaxTurns {
					t.Fatalf("*ResultError = %+v, want error_max_turns / max_turns", out.rerr)
				}
				var results []string
				for _, u := range find[*claude.UserMessage](out.msgs) {
					for _, tr := range u.ToolResults() {
						results = append(results, tr.Text())
					}
				}
				if len(results) != 1 || !strings.Contains(results[0], "looked around") {
					t.Errorf("tool results = %q, want the one Bash call's output", results)
				}
				if !strings.Contains(strings.Join(r.Errors, "\n"), "maximum number of turns") {
					t.Errorf("errors = %q, want the turn limit named", r.Errors)
				}
				if h.Real() {
					if n := len(h.API.MessagesRequests()); n != 1 {
						t.Errorf("the API got %d requests, want 1", n)
					}
				}
			},
		},
		scenario{
			name:   "max_budget",
			guards: "Options.MaxBudgetUSD tiny: the turn ends after the first model call with error_max_budget_usd and a *ResultError.",
			record: true,
			api: func() *claudetest.MessagesOptions {
				costly := claudetest.ToolUseReply("", "Bash", map[string]string{"command": "echo spent", "description": "Spend"})
				costly.Usage = claudetest.Usage{InputTokens: 200000, OutputTokens: 20000}
				return &claudetest.MessagesOptions{Replies: []*claudetest.Reply{costly}}
			},
			opts: func(o *claude.Options) { o.MaxBudgetUSD = 0.0001 },
			run: func(t *testing.T, h *harness) {
				out := errsTurn(t, h, "spend")
				r := out.res
				if r.Subtype != claude.ResultErrorMaxBudgetUSD || !r.IsError {
					t.Errorf("result = %+v, want error_max_budget_usd, is_error", r)
				}
				if out.rerr == nil || out.rerr.Subtype != claude.ResultErrorMaxBudgetUSD {
					t.Fatalf("*ResultError = %+v, want error_max_budget_usd", out.rerr)
				}
				if r.TotalCostUSD <= 0.0001 {
					t.Errorf("total_cost_usd = %g, want over the budget", r.TotalCostUSD)
				}
				if !strings.Contains(strings.Join(r.Errors, "\n"), "maximum budget") {
					t.Errorf("errors = %q, want the budget named", r.Errors)
				}
				if h.Real() {
					if n := len(h.API.MessagesRequests()); n != 1 {
						t.Errorf("the API got %d requests, want 1", n)
					}
				}
			},
		},
		scenario{
			name:   "interrupt_mid_stream",
			guards: "Interrupt while the reply streams (stalled after a few text deltas): the turn ends with error_during_execution / aborted_streaming (ResultError.Interrupted), a \"[Request interrupted by user]\" user message appears, and the next turn works.",
			record: true,
			api: func() *claudetest.MessagesOptions {
				return &claudetest.MessagesOptions{Replies: []*claudetest.Reply{
					{
						Content:          []claudetest.ContentBlock{claudetest.TextBlock("partial answer that never finishes")},
						ChunkSize:        8,
						StallAfterEvents: 4, // message_start, content_block_start, two deltas
					},
					claudetest.TextReply("after the interrupt"),
				}}
			},
			opts: func(o *claude.Options) { o.IncludePartialMessages = true },
			run: func(t *testing.T, h *harness) {
				if err := h.S.Send(h.Ctx, "start talking"); err != nil {
					t.Fatal(err)
				}
				interrupted := false
				out := errsCollect(t, h, func(m claude.Message) {
					if !interrupted && errsIsTextDelta(m) {
						interrupted = true
						if err := h.S.Interrupt(h.Ctx); err != nil {
							t.Errorf("Interrupt: %v", err)
						}
					}
				})
				if !interrupted {
					t.Fatalf("no text delta before the result: %v", types(out.msgs))
				}
				errsWantInterrupted(t, out, claude.TerminalAbortedStreaming, "[Request interrupted by user]")
				errsWantUsable(t, h, "carry on", "after the interrupt")
			},
		},
		scenario{
			name:   "interrupt_running_tool",
			guards: "Interrupt while a Bash tool runs (sleep 30): the turn ends with error_during_execution / aborted_tools, a \"[Request interrupted by user for tool use]\" user message appears, and the next turn works.",
			record: true,
			api: func() *claudetest.MessagesOptions {
				return &claudetest.MessagesOptions{Replies: []*claudetest.Reply{
					// The command tells the test it runs by opening a FIFO
					// the test reads, then sleeps.
					claudetest.ToolUseReply("", "Bash", map[string]string{
						"command":     "echo running > " + errsFIFO + " && sleep 30",
						"description": "Wait a long time",
					}),
					claudetest.TextReply("after the interrupt"),
				}}
			},
			opts: func(o *claude.Options) { o.AllowedTools = []string{"Bash"} },
			run: func(t *testing.T, h *harness) {
				var running <-chan error
				if h.Real() {
					running = errsWaitFIFO(t, filepath.Join(h.CLI.Dir, errsFIFO))
				}
				if err := h.S.Send(h.Ctx, "wait for me"); err != nil {
					t.Fatal(err)
				}
				interrupted := false
				out := errsCollect(t, h, func(m claude.Message) {
					a, ok := m.(*claude.AssistantMessage)
					if interrupted || !ok || len(a.ToolUses()) == 0 {
						return
					}
					interrupted = true
					if running != nil {
						// The tool_use message comes before the tool runs:
						// wait until the shell has really started.
						select {
						case err := <-running:
							if err != nil {
								t.Fatalf("waiting for the tool to run: %v", err)
							}
						case <-h.Ctx.Done():
							t.Fatalf("the Bash tool never ran: %v", h.Ctx.Err())
						}
					}
					if err := h.S.Interrupt(h.Ctx); err != nil {
						t.Errorf("Interrupt: %v", err)
					}
				})
				if !interrupted {
					t.Fatalf("no tool_use before the result: %v", types(out.msgs))
				}
				errsWantInterrupted(t, out, claude.TerminalAbortedTools, "[Request interrupted by user for tool use]")
				errsWantUsable(t, h, "carry on", "after the interrupt")
			},
		},
		scenario{
			name:   "close_mid_turn",
			guards: "Close while a reply streams: Close returns, Receive ends with ErrClosed, the CLI process is gone.",
			api: func() *claudetest.MessagesOptions {
				return &claudetest.MessagesOptions{Replies: []*claudetest.Reply{{
					Content:          []claudetest.ContentBlock{claudetest.TextBlock("an answer that never finishes")},
					ChunkSize:        8,
					StallAfterEvents: 4,
				}}}
			},
			opts: func(o *claude.Options) { o.IncludePartialMessages = true },
			run: func(t *testing.T, h *harness) {
				pid := h.S.PID()
				if pid <= 0 {
					t.Fatalf("PID = %d", pid)
				}
				if err := h.S.Send(h.Ctx, "talk forever"); err != nil {
					t.Fatal(err)
				}
				rx := errsReceiveAll(h)
				select {
				case <-rx.streaming:
				case <-rx.done:
					t.Fatalf("Receive ended before streaming: %v after %v", rx.errs, types(rx.msgs))
				}
				if err := h.S.Close(); err != nil {
					t.Errorf("Close: %v", err)
				}
				select {
				case <-rx.done:
				case <-h.Ctx.Done():
					t.Fatal("Receive did not end after Close")
				}
				if n := len(rx.errs); n == 0 || !errors.Is(rx.errs[n-1], claude.ErrClosed) {
					t.Errorf("Receive's errors = %v, want ErrClosed last", rx.errs)
				}
				for _, err := range rx.errs[:max(len(rx.errs)-1, 0)] {
					var re *claude.ResultError
					if !errors.As(err, &re) {
						t.Errorf("Receive yielded %v before ErrClosed", err)
					}
				}
				if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
					t.Errorf("kill(%d, 0) after Close = %v, want ESRCH (the CLI gone)", pid, err)
				}
				// Wait reports how the CLI exited: interrupted mid-turn with
				// its stdin closed, the CLI exits 1 (a *ProcessError).
				var pe *claude.ProcessError
				if err := h.S.Wait(); err != nil && !errors.As(err, &pe) {
					t.Errorf("Wait after Close = %v, want nil or a *ProcessError", err)
				}
				if err := h.S.Send(h.Ctx, "anyone?"); !errors.Is(err, claude.ErrClosed) {
					t.Errorf("Send after Close = %v, want ErrClosed", err)
				}
			},
		},
		errsKilledScenario(),
		scenario{
			name:   "malformed_option",
			guards: "An option the CLI rejects (an unknown flag) makes it exit at start: Connect returns a *ProcessError carrying the CLI's complaint from stderr.",
			run: func(t *testing.T, h *harness) {
				o := *h.Opts
				o.Transport = nil
				o.Stderr = nil
				o.ExtraArgs = []string{"--no-such-flag"}
				s, err := claude.Connect(h.Ctx, &o)
				if err == nil {
					s.Close()
					t.Fatal("Connect succeeded with --no-such-flag")
				}
				var pe *claude.ProcessError
				if !errors.As(err, &pe) {
					t.Fatalf("Connect = %v (%T), want a *ProcessError", err, err)
				}
				if pe.ExitCode == 0 && pe.Signal == "" {
					t.Errorf("ProcessError = %+v, want a failing exit", pe)
				}
				if stderr := strings.Join(pe.Stderr, "\n"); !strings.Contains(stderr, "no-such-flag") {
					t.Errorf("ProcessError.Stderr = %q, want the CLI's complaint about --no-such-flag", stderr)
				}
			},
		},
	)
}

// errsKilledScenario kills the CLI while a turn streams and a control
// request waits for an answer that cannot come: a generate_session_title
// whose side request to the API never gets its answer.
func errsKilledScenario() scenario {
	var (
		mu       sync.Mutex
		sideSeen chan struct{} // closed when the title request reaches the API
	)
	return scenario{
		name:   "cli_killed_mid_turn",
		guards: "SIGKILL to the CLI while a turn streams and a control request is pending: Receive yields a *ProcessError (SIGKILL), the pending request fails at once with it, Wait returns it, Send fails after.",
		api: func() *claudetest.MessagesOptions {
			seen := make(chan struct{})
			var once sync.Once
			mu.Lock()
			sideSeen = seen
			mu.Unlock()
			return &claudetest.MessagesOptions{
				Replies: []*claudetest.Reply{{
					Content:          []claudetest.ContentBlock{claudetest.TextBlock("an answer that never finishes")},
					ChunkSize:        8,
					StallAfterEvents: 4,
				}},
				RespondSide: func(r *claudetest.Request) *claudetest.Reply {
					once.Do(func() { close(seen) })
					// Held until the server closes.
					return &claudetest.Reply{Content: []claudetest.ContentBlock{claudetest.TextBlock(`{"title":"never"}`)}, Delay: time.Hour}
				},
			}
		},
		opts: func(o *claude.Options) { o.IncludePartialMessages = true },
		run: func(t *testing.T, h *harness) {
			mu.Lock()
			seen := sideSeen
			mu.Unlock()
			pid := h.S.PID()
			if pid <= 0 {
				t.Fatalf("PID = %d", pid) // and never kill(0, …): that is our own group
			}
			if err := h.S.Send(h.Ctx, "talk forever"); err != nil {
				t.Fatal(err)
			}
			rx := errsReceiveAll(h)
			select {
			case <-rx.streaming:
			case <-rx.done:
				t.Fatalf("Receive ended before streaming: %v after %v", rx.errs, types(rx.msgs))
			}

			pending := make(chan error, 1)
			go func() {
				_, err := h.S.Control(h.Ctx, "generate_session_title", map[string]any{"description": "a title that cannot come", "persist": false})
				pending <- err
			}()
			select {
			case <-seen:
			case err := <-pending:
				t.Fatalf("generate_session_title answered before the kill: %v", err)
			case <-h.Ctx.Done():
				t.Fatal("the title request never reached the API")
			}

			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}

			var cerr error
			select {
			case cerr = <-pending:
			case <-h.Ctx.Done():
				t.Fatal("the pending control request did not fail after the kill")
			}
			select {
			case <-rx.done:
			case <-h.Ctx.Done():
				t.Fatal("Receive did not end after the kill")
			}
			werr := h.S.Wait()

			var wpe *claude.ProcessError
			if !errors.As(werr, &wpe) {
				t.Fatalf("Wait = %v, want a *ProcessError", werr)
			}
			if wpe.Signal != "SIGKILL" && wpe.ExitCode == 0 {
				t.Errorf("ProcessError = %+v, want signal SIGKILL or a failing exit code", wpe)
			}
			var cpe *claude.ProcessError
			if !errors.As(cerr, &cpe) || cpe != wpe {
				t.Errorf("pending Control = %v, want Wait's *ProcessError", cerr)
			}
			var rpe *claude.ProcessError
			if n := len(rx.errs); n == 0 || !errors.As(rx.errs[n-1], &rpe) || rpe != wpe {
				t.Errorf("Receive's errors = %v, want Wait's *ProcessError last", rx.errs)
			}
			var spe *claude.ProcessError
			if err := h.S.Send(h.Ctx, "still there?"); !errors.As(err, &spe) {
				t.Errorf("Send after the kill = %v, want the *ProcessError", err)
			}
			if _, err := h.S.Control(h.Ctx, "generate_session_title", map[string]any{"description": "x"}); !errors.As(err, &spe) {
				t.Errorf("Control after the kill = %v, want the *ProcessError", err)
			}
		},
	}
}

// errsFIFO is the FIFO, in the CLI's working directory, through which the
// interrupt_running_tool command says it runs.
const errsFIFO = "tool-running.fifo"

// errsWaitFIFO makes a FIFO at path and returns a channel that receives
// once a writer (the tool's shell) has written to it.
func errsWaitFIFO(t *testing.T, path string) <-chan error {
	t.Helper()
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	ch := make(chan error, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, err := os.ReadFile(path) // opening blocks until a writer opens
		ch <- err
	}()
	t.Cleanup(func() {
		// Unblock the reader if the tool never ran: opening for writing
		// without blocking succeeds while a reader waits.
		if f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
		<-done
	})
	return ch
}

// errsOutcome is what one turn yielded.
type errsOutcome struct {
	msgs []claude.Message
	res  *claude.ResultMessage
	// rerr is the *ResultError yielded with res; nil for a successful turn.
	rerr *claude.ResultError
}

func errsTurn(t *testing.T, h *harness, prompt string) errsOutcome {
	t.Helper()
	if err := h.S.Send(h.Ctx, prompt); err != nil {
		t.Fatalf("Send: %v", err)
	}
	return errsCollect(t, h, nil)
}

// errsCollect receives one turn, calling each (if set) on every message
// as it arrives. A *ResultError must come with the *ResultMessage; any
// other error fails the test.
func errsCollect(t *testing.T, h *harness, each func(claude.Message)) errsOutcome {
	t.Helper()
	var out errsOutcome
	for m, err := range h.S.ReceiveTurn(h.Ctx) {
		if err != nil {
			var re *claude.ResultError
			if !errors.As(err, &re) {
				t.Fatalf("ReceiveTurn: %v (after %v)", err, types(out.msgs))
			}
			if _, ok := m.(*claude.ResultMessage); !ok {
				t.Errorf("*ResultError yielded with %T, want its *ResultMessage", m)
			}
			out.rerr = re
		}
		if m != nil {
			out.msgs = append(out.msgs, m)
			if each != nil {
				each(m)
			}
		}
	}
	out.res = result(t, out.msgs)
	if out.res.IsError != (out.rerr != nil) {
		t.Errorf("result is_error %v but ResultError %v", out.res.IsError, out.rerr)
	}
	if out.rerr != nil {
		if out.rerr.Subtype != out.res.Subtype || out.rerr.TerminalReason != out.res.TerminalReason ||
			out.rerr.APIErrorStatus != out.res.APIErrorStatus || out.rerr.SessionID != out.res.SessionID {
			t.Errorf("ResultError %+v does not match its result %+v", out.rerr, out.res)
		}
	}
	return out
}

// errsWantUsable runs one more turn and wants it to succeed with text.
func errsWantUsable(t *testing.T, h *harness, prompt, text string) {
	t.Helper()
	out := errsTurn(t, h, prompt)
	if out.rerr != nil || out.res.IsError || out.res.Result != text {
		t.Errorf("next turn: result = %+v, error %v; want success with %q", out.res, out.rerr, text)
	}
}

// errsWantInterrupted checks a turn ended by an interrupt.
func errsWantInterrupted(t *testing.T, out errsOutcome, reason claude.TerminalReason, marker string) {
	t.Helper()
	r := out.res
	if r.Subtype != claude.ResultErrorDuringExecution || !r.IsError || r.TerminalReason != reason {
		t.Errorf("result = %+v, want error_during_execution, is_error, terminal_reason %s", r, reason)
	}
	if out.rerr == nil || !out.rerr.Interrupted() || out.rerr.TerminalReason != reason {
		t.Errorf("*ResultError = %+v, want Interrupted() with %s", out.rerr, reason)
	}
	found := false
	for _, u := range find[*claude.UserMessage](out.msgs) {
		found = found || strings.TrimSpace(u.Text()) == marker
	}
	if !found {
		var said []string
		for _, u := range find[*claude.UserMessage](out.msgs) {
			said = append(said, u.Text())
		}
		t.Errorf("no user message %q; user messages say %q", marker, said)
	}
}

// errsReceiver is a Receive loop running on its own goroutine.
type errsReceiver struct {
	streaming chan struct{} // closed at the first text delta
	done      chan struct{} // closed when Receive has ended
	msgs      []claude.Message
	errs      []error // read after done
}

func errsReceiveAll(h *harness) *errsReceiver {
	rx := &errsReceiver{streaming: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(rx.done)
		var once sync.Once
		for m, err := range h.S.Receive(h.Ctx) {
			if err != nil {
				rx.errs = append(rx.errs, err)
			}
			if m != nil {
				rx.msgs = append(rx.msgs, m)
				if errsIsTextDelta(m) {
					once.Do(func() { close(rx.streaming) })
				}
			}
		}
	}()
	return rx
}

func errsIsTextDelta(m claude.Message) bool {
	se, ok := m.(*claude.StreamEvent)
	if !ok {
		return false
	}
	d, ok := se.Event.(*claude.ContentBlockDeltaEvent)
	if !ok {
		return false
	}
	_, ok = d.Delta.(*claude.TextDelta)
	return ok
}

// errsRespondByPrompt answers each request by the key found last in its
// last user message (after a failed turn the CLI may send that prompt and
// the next one together, in one message); nil (the queue) when none is.
func errsRespondByPrompt(replies map[string]*claudetest.Reply) claudetest.RespondFunc {
	return func(r *claudetest.Request) *claudetest.Reply {
		last := r.Params.LastUser()
		if last == nil {
			return nil
		}
		text := last.Text()
		var reply *claudetest.Reply
		at := -1
		for k, rep := range replies {
			if i := strings.LastIndex(text, k); i > at {
				reply, at = rep, i
			}
		}
		return reply
	}
}

// errsWantSameRequestTwice checks that the API got two main-loop requests
// with the same body, and returns them.
func errsWantSameRequestTwice(t *testing.T, h *harness) []*claudetest.Request {
	t.Helper()
	reqs := h.API.MessagesRequests()
	if len(reqs) != 2 {
		t.Fatalf("the API got %d requests, want 2", len(reqs))
	}
	if diff := cmp.Diff(string(reqs[0].Body), string(reqs[1].Body)); diff != "" {
		t.Errorf("the retried request differs (-first +retry):\n%s", diff)
	}
	return reqs
}

func errsAssistantTexts(msgs []claude.Message) []string {
	var out []string
	for _, a := range find[*claude.AssistantMessage](msgs) {
		if s := a.Text(); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// errsUserSays reports whether a user message of msgs contains s.
func errsUserSays(msgs []claude.Message, s string) bool {
	for _, u := range find[*claude.UserMessage](msgs) {
		if strings.Contains(u.Text(), s) {
			return true
		}
	}
	return false
}

// errsVersion is the CLI version the turn's system/init reports.
func errsVersion(t *testing.T, msgs []claude.Message) string {
	t.Helper()
	inits := find[*claude.InitMessage](msgs)
	if len(inits) == 0 || inits[0].ClaudeCodeVersion == "" {
		t.Fatalf("no system/init with a version in %v", types(msgs))
	}
	return inits[0].ClaudeCodeVersion
}
