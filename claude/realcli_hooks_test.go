package claude_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
)

// hookCalls records what hooks were called with. A scenario's opts and run
// share one through a variable that opts sets afresh, so that every run,
// real or replayed, starts empty.
type hookCalls struct {
	mu    sync.Mutex
	ins   []*claude.HookInput
	names []string // which hook was called, for scenarios with several
}

func (c *hookCalls) add(in *claude.HookInput) {
	c.mu.Lock()
	c.ins = append(c.ins, in)
	c.mu.Unlock()
}

func (c *hookCalls) addNamed(name string, in *claude.HookInput) {
	c.mu.Lock()
	c.ins = append(c.ins, in)
	c.names = append(c.names, name)
	c.mu.Unlock()
}

// sortedNames returns the names of the hooks called, sorted.
func (c *hookCalls) sortedNames() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Sorted(slices.Values(c.names))
}

func (c *hookCalls) all() []*claude.HookInput {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*claude.HookInput(nil), c.ins...)
}

// record returns a hook that records its input and answers out.
func (c *hookCalls) record(out *claude.HookOutput) claude.HookFunc {
	return func(_ context.Context, in *claude.HookInput) (*claude.HookOutput, error) {
		c.add(in)
		return out, nil
	}
}

// noPrompt is a CanUseTool that records that it was asked, for scenarios
// where a hook must settle the call without a permission prompt.
type noPrompt struct {
	mu    sync.Mutex
	asked []string
}

func (p *noPrompt) canUseTool(_ context.Context, r *claude.ToolPermissionRequest) (claude.PermissionResult, error) {
	p.mu.Lock()
	p.asked = append(p.asked, r.ToolName+" "+string(r.Input))
	p.mu.Unlock()
	return &claude.PermissionDeny{Message: "the test's CanUseTool denies everything"}, nil
}

func (p *noPrompt) check(t *testing.T) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.asked) > 0 {
		t.Errorf("CanUseTool was asked %q; the hook should have settled the call", p.asked)
	}
}

func bashCommand(t *testing.T, input json.RawMessage) string {
	t.Helper()
	var in struct{ Command string }
	if err := json.Unmarshal(input, &in); err != nil {
		t.Fatalf("tool input %s: %v", input, err)
	}
	return in.Command
}

// Hooks: Go callbacks registered in initialize and called back with
// hook_callback requests.
func init() {
	var (
		denyCalls, allowCalls, promptCalls, stopCalls, postCalls, failCalls *hookCalls
		denyPrompt, allowPrompt                                             *noPrompt
		timeoutCause                                                        chan error
		matchCalls                                                          *hookCalls
		askRequests                                                         chan *claude.ToolPermissionRequest
	)
	const (
		denyReason     = "hooks say no shell for this test"
		promptContext  = "HOOK-CONTEXT: the secret word is quokka"
		stopFeedback   = "Check your answer once more before you stop."
		postContext    = "POST-HOOK-CONTEXT: output inspected"
		postToolOutput = "post-hook-sees-this"
	)
	addScenarios(
		scenario{
			name: "hooks_pretooluse_deny",
			guards: "A PreToolUse hook that denies: the tool never runs, CanUseTool is not asked, the model gets the hook's reason as the " +
				"tool's error and the result lists the denial. The hook gets a typed input with the tool's name and input.",
			record: true,
			api: func() *claudetest.MessagesOptions {
				return &claudetest.MessagesOptions{Replies: []*claudetest.Reply{
					claudetest.ToolUseReply("toolu_deny_1", "Bash", map[string]string{"command": "touch pwned.txt"}),
					claudetest.TextReply("understood"),
				}}
			},
			opts: func(o *claude.Options) {
				denyCalls, denyPrompt = &hookCalls{}, &noPrompt{}
				o.CanUseTool = denyPrompt.canUseTool
				o.Hooks = map[claude.HookEvent][]claude.HookMatcher{
					claude.HookEventPreToolUse: {{Matcher: "Bash", Hooks: []claude.HookFunc{denyCalls.record(&claude.HookOutput{
						Event: &claude.PreToolUseHookOutput{
							PermissionDecision:       claude.HookPermissionDecisionDeny,
							PermissionDecisionReason: denyReason,
						},
					})}}},
				}
			},
			run: func(t *testing.T, h *harness) {
				msgs := h.turn(t, "make a file")
				denyPrompt.check(t)
				calls := denyCalls.all()
				if len(calls) != 1 {
					t.Fatalf("the hook was called %d times, want once", len(calls))
				}
				in := calls[0]
				pre, ok := in.Event.(*claude.PreToolUseHookInput)
				if !ok {
					t.Fatalf("hook input event = %T, want *PreToolUseHookInput (raw %s)", in.Event, in.Raw)
				}
				if in.HookEventName != claude.HookEventPreToolUse || pre.ToolName != "Bash" || pre.ToolUseID != "toolu_deny_1" ||
					in.ToolUseID != "toolu_deny_1" || bashCommand(t, pre.ToolInput) != "touch pwned.txt" ||
					in.SessionID == "" || in.Cwd == "" || in.TranscriptPath == "" || in.PermissionMode != claude.PermissionModeDefault {
					t.Errorf("hook input = %+v, event %+v", in, pre)
				}
				_, tr := toolResult(t, msgs, "toolu_deny_1")
				if !tr.IsError || !strings.Contains(tr.Text(), denyReason) {
					t.Errorf("tool result = %+v (%q), want an error with the hook's reason", tr, tr.Text())
				}
				r := result(t, msgs)
				if r.IsError || len(r.PermissionDenials) != 1 || r.PermissionDenials[0].ToolUseID != "toolu_deny_1" || r.PermissionDenials[0].ToolName != "Bash" {
					t.Errorf("result = %+v, want success with one denial of toolu_deny_1", r)
				}
				if h.Real() {
					if _, err := os.Stat(filepath.Join(h.CLI.Dir, "pwned.txt")); err == nil {
						t.Error("the denied command ran: pwned.txt exists")
					}
					reqs := h.API.MessagesRequests()
					if len(reqs) != 2 || !reqs[1].Params.Contains(denyReason) {
						t.Errorf("the API got %d requests; want the second to carry the hook's reason", len(reqs))
					}
				}
			},
		},
		scenario{
			name: "hooks_pretooluse_updated_input",
			guards: "A PreToolUse hook that allows with a rewritten input: what runs is the hook's command, not the model's, and no " +
				"permission prompt is shown although the command needs one.",
			record: true,
			api: func() *claudetest.MessagesOptions {
				return &claudetest.MessagesOptions{Replies: []*claudetest.Reply{
					claudetest.ToolUseReply("toolu_rw_1", "Bash", map[string]string{"command": "touch model-made.txt && echo from-the-model"}),
					claudetest.TextReply("done"),
				}}
			},
			opts: func(o *claude.Options) {
				allowCalls, allowPrompt = &hookCalls{}, &noPrompt{}
				o.CanUseTool = allowPrompt.canUseTool
				o.Hooks = map[claude.HookEvent][]claude.HookMatcher{
					claude.HookEventPreToolUse: {{Matcher: "Bash", Hooks: []claude.HookFunc{allowCalls.record(&claude.HookOutput{
						Event: &claude.PreToolUseHookOutput{
							PermissionDecision:       claude.HookPermissionDecisionAllow,
							PermissionDecisionReason: "rewritten by the host",
							UpdatedInput:             json.RawMessage(`{"command":"touch hook-made.txt && echo from-the-hook"}`),
						},
					})}}},
				}
			},
			run: func(t *testing.T, h *harness) {
				msgs := h.turn(t, "make a file")
				allowPrompt.check(t)
				if n := len(allowCalls.all()); n != 1 {
					t.Errorf("the hook was called %d times, want once", n)
				}
				_, tr := toolResult(t, msgs, "toolu_rw_1")
				if tr.IsError || !strings.Contains(tr.Text(), "from-the-hook") || strings.Contains(tr.Text(), "from-the-model") {
					t.Errorf("tool result = %q (error %v), want the hook's command's output", tr.Text(), tr.IsError)
				}
				if r := result(t, msgs); r.IsError || len(r.PermissionDenials) != 0 {
					t.Errorf("result = %+v", r)
				}
				if h.Real() {
					if _, err := os.Stat(filepath.Join(h.CLI.Dir, "hook-made.txt")); err != nil {
						t.Errorf("the hook's command did not run: %v", err)
					}
					if _, err := os.Stat(filepath.Join(h.CLI.Dir, "model-made.txt")); err == nil {
						t.Error("the model's command ran: model-made.txt exists")
					}
				}
			},
		},
		scenario{
			name: "hooks_pretooluse_ask",
			guards: "A PreToolUse hook that answers ask sends the call to CanUseTool although a rule allows it, with the hook's " +
				"reason as the request's decision reason; CanUseTool's allow lets it run.",
			record: true,
			api: func() *claudetest.MessagesOptions {
				return &claudetest.MessagesOptions{Replies: []*claudetest.Reply{
					claudetest.ToolUseReply("toolu_ask_1", "Bash", map[string]string{"command": "echo asked"}),
					claudetest.TextReply("done"),
				}}
			},
			opts: func(o *claude.Options) {
				askRequests = make(chan *claude.ToolPermissionRequest, 4)
				o.AllowedTools = []string{"Bash"}
				o.CanUseTool = func(_ context.Context, r *claude.ToolPermissionRequest) (claude.PermissionResult, error) {
					askRequests <- r
					return &claude.PermissionAllow{}, nil
				}
				o.Hooks = map[claude.HookEvent][]claude.HookMatcher{
					claude.HookEventPreToolUse: {{Matcher: "Bash", Hooks: []claude.HookFunc{
						func(context.Context, *claude.HookInput) (*claude.HookOutput, error) {
							return &claude.HookOutput{Event: &claude.PreToolUseHookOutput{
								PermissionDecision:       claude.HookPermissionDecisionAsk,
								PermissionDecisionReason: "a human should look at this",
							}}, nil
						},
					}}},
				}
			},
			run: func(t *testing.T, h *harness) {
				msgs := h.turn(t, "echo something")
				if len(askRequests) != 1 {
					t.Fatalf("CanUseTool was asked %d times, want once", len(askRequests))
				}
				if r := <-askRequests; r.ToolUseID != "toolu_ask_1" || r.DecisionReason != "a human should look at this" {
					t.Errorf("permission request = %+v", r)
				}
				if _, tr := toolResult(t, msgs, "toolu_ask_1"); tr.IsError || !strings.Contains(tr.Text(), "asked") {
					t.Errorf("tool result = %q (error %v), want the command's output", tr.Text(), tr.IsError)
				}
			},
		},
		scenario{
			name:   "hooks_user_prompt_context",
			guards: "A UserPromptSubmit hook sees the prompt (typed) and its additionalContext reaches the model in the same request.",
			record: true,
			api: func() *claudetest.MessagesOptions {
				return &claudetest.MessagesOptions{Respond: func(r *claudetest.Request) *claudetest.Reply {
					if r.Params.Contains(promptContext) {
						return claudetest.TextReply("the context arrived")
					}
					return claudetest.TextReply("no context")
				}}
			},
			opts: func(o *claude.Options) {
				promptCalls = &hookCalls{}
				o.Hooks = map[claude.HookEvent][]claude.HookMatcher{
					claude.HookEventUserPromptSubmit: {{Hooks: []claude.HookFunc{promptCalls.record(&claude.HookOutput{
						Event: &claude.UserPromptSubmitHookOutput{AdditionalContext: promptContext},
					})}}},
				}
			},
			run: func(t *testing.T, h *harness) {
				msgs := h.turn(t, "what is the secret word?")
				if got := assistantText(msgs); got != "the context arrived" {
					t.Errorf("assistant text = %q: the hook's context did not reach the model", got)
				}
				calls := promptCalls.all()
				if len(calls) != 1 {
					t.Fatalf("the hook was called %d times, want once", len(calls))
				}
				ups, ok := calls[0].Event.(*claude.UserPromptSubmitHookInput)
				if !ok || ups.Prompt != "what is the secret word?" || calls[0].HookEventName != claude.HookEventUserPromptSubmit {
					t.Errorf("hook input = %+v, event %#v", calls[0], calls[0].Event)
				}
				if h.Real() {
					reqs := h.API.MessagesRequests()
					if len(reqs) != 1 || !reqs[0].Params.Contains(promptContext) {
						t.Errorf("the API got %d requests; want one carrying the hook's context", len(reqs))
					}
				}
			},
		},
		scenario{
			name: "hooks_stop_block",
			guards: "A Stop hook that blocks makes the model go on: a second API request carries the hook's reason, the CLI writes " +
				"the synthetic Stop-hook feedback and a notification, and the hook is called again with stop_hook_active.",
			record: true,
			api: func() *claudetest.MessagesOptions {
				return &claudetest.MessagesOptions{Replies: []*claudetest.Reply{
					claudetest.TextReply("first answer"),
					claudetest.TextReply("second answer"),
				}}
			},
			opts: func(o *claude.Options) {
				stopCalls = &hookCalls{}
				o.Hooks = map[claude.HookEvent][]claude.HookMatcher{
					claude.HookEventStop: {{Hooks: []claude.HookFunc{func(_ context.Context, in *claude.HookInput) (*claude.HookOutput, error) {
						stopCalls.add(in)
						if st, ok := in.Event.(*claude.StopHookInput); ok && !st.StopHookActive {
							return &claude.HookOutput{Decision: claude.HookDecisionBlock, Reason: stopFeedback}, nil
						}
						return nil, nil
					}}}},
				}
			},
			run: func(t *testing.T, h *harness) {
				msgs := h.turn(t, "answer carefully")
				r := result(t, msgs)
				if r.IsError || r.Result != "second answer" {
					t.Errorf("result = %+v, want the answer after the Stop hook", r)
				}
				calls := stopCalls.all()
				if len(calls) != 2 {
					t.Fatalf("the Stop hook was called %d times, want twice", len(calls))
				}
				first, ok1 := calls[0].Event.(*claude.StopHookInput)
				second, ok2 := calls[1].Event.(*claude.StopHookInput)
				if !ok1 || !ok2 || first.StopHookActive || !second.StopHookActive ||
					first.LastAssistantMessage != "first answer" || second.LastAssistantMessage != "second answer" {
					t.Errorf("Stop hook inputs = %+v, %+v", calls[0].Event, calls[1].Event)
				}
				var feedback *claude.UserMessage
				for _, u := range find[*claude.UserMessage](msgs) {
					if u.IsSynthetic && strings.Contains(u.Text(), "Stop hook feedback") && strings.Contains(u.Text(), stopFeedback) {
						feedback = u
					}
				}
				if feedback == nil {
					t.Errorf("no synthetic Stop hook feedback message in %v", types(msgs))
				}
				if ns := find[*claude.NotificationMessage](msgs); len(ns) == 0 {
					t.Errorf("no notification message in %v", types(msgs))
				}
				if h.Real() {
					reqs := h.API.MessagesRequests()
					if len(reqs) != 2 || !reqs[1].Params.Contains(stopFeedback) || reqs[0].Params.Contains(stopFeedback) {
						t.Errorf("the API got %d requests; want a second one carrying the Stop hook's reason", len(reqs))
					}
				}
			},
		},
		scenario{
			name: "hooks_posttooluse_response",
			guards: "A PostToolUse hook gets the tool's structured response in its typed input, and its additionalContext reaches " +
				"the model's next request.",
			record: true,
			api: func() *claudetest.MessagesOptions {
				return &claudetest.MessagesOptions{Replies: []*claudetest.Reply{
					claudetest.ToolUseReply("toolu_post_1", "Bash", map[string]string{"command": "echo " + postToolOutput}),
					claudetest.TextReply("done"),
				}}
			},
			opts: func(o *claude.Options) {
				postCalls = &hookCalls{}
				o.AllowedTools = []string{"Bash(echo *)"}
				o.Hooks = map[claude.HookEvent][]claude.HookMatcher{
					claude.HookEventPostToolUse: {{Matcher: "Bash", Hooks: []claude.HookFunc{postCalls.record(&claude.HookOutput{
						Event: &claude.PostToolUseHookOutput{AdditionalContext: postContext},
					})}}},
				}
			},
			run: func(t *testing.T, h *harness) {
				msgs := h.turn(t, "echo something")
				if r := result(t, msgs); r.IsError {
					t.Errorf("result = %+v", r)
				}
				calls := postCalls.all()
				if len(calls) != 1 {
					t.Fatalf("the hook was called %d times, want once", len(calls))
				}
				post, ok := calls[0].Event.(*claude.PostToolUseHookInput)
				if !ok {
					t.Fatalf("hook input event = %T (raw %s)", calls[0].Event, calls[0].Raw)
				}
				var resp struct {
					Stdout      string `json:"stdout"`
					Interrupted bool   `json:"interrupted"`
				}
				if err := json.Unmarshal(post.ToolResponse, &resp); err != nil || strings.TrimSpace(resp.Stdout) != postToolOutput || resp.Interrupted {
					t.Errorf("tool response = %s (%v), want stdout %q", post.ToolResponse, err, postToolOutput)
				}
				if post.ToolName != "Bash" || post.ToolUseID != "toolu_post_1" || bashCommand(t, post.ToolInput) != "echo "+postToolOutput {
					t.Errorf("hook input = %+v", post)
				}
				if h.Real() {
					reqs := h.API.MessagesRequests()
					if len(reqs) != 2 || !reqs[1].Params.Contains(postContext) {
						t.Errorf("the API got %d requests; want the second to carry the hook's context", len(reqs))
					}
				}
			},
		},
		scenario{
			name: "hooks_matchers",
			guards: "Matchers select by tool name: a Bash call fires the \"Bash\" and the empty matcher's hooks, not \"Write|Edit\"'s; " +
				"several hooks for one call all run and a denial from any of them wins over another's allow.",
			record: true,
			api: func() *claudetest.MessagesOptions {
				return &claudetest.MessagesOptions{Replies: []*claudetest.Reply{
					claudetest.ToolUseReply("toolu_match_1", "Bash", map[string]string{"command": "touch matched.txt"}),
					claudetest.TextReply("done"),
				}}
			},
			opts: func(o *claude.Options) {
				matchCalls = &hookCalls{}
				decide := func(name string, d claude.HookPermissionDecision) claude.HookFunc {
					return func(_ context.Context, in *claude.HookInput) (*claude.HookOutput, error) {
						matchCalls.addNamed(name, in)
						return &claude.HookOutput{Event: &claude.PreToolUseHookOutput{PermissionDecision: d, PermissionDecisionReason: "reason of " + name}}, nil
					}
				}
				o.AllowedTools = []string{"Bash"}
				o.Hooks = map[claude.HookEvent][]claude.HookMatcher{
					claude.HookEventPreToolUse: {
						{Matcher: "Write|Edit", Hooks: []claude.HookFunc{decide("edits", claude.HookPermissionDecisionDeny)}},
						{Matcher: "Bash", Hooks: []claude.HookFunc{
							decide("bash-allow", claude.HookPermissionDecisionAllow),
							decide("bash-deny", claude.HookPermissionDecisionDeny),
						}},
						{Hooks: []claude.HookFunc{decide("any", "")}},
					},
				}
			},
			run: func(t *testing.T, h *harness) {
				msgs := h.turn(t, "touch a file")
				if called := matchCalls.sortedNames(); !slices.Equal(called, []string{"any", "bash-allow", "bash-deny"}) {
					t.Errorf("hooks called: %q, want any, bash-allow and bash-deny", called)
				}
				_, tr := toolResult(t, msgs, "toolu_match_1")
				if !tr.IsError || !strings.Contains(tr.Text(), "reason of bash-deny") {
					t.Errorf("tool result = %q (error %v), want the denying hook's reason", tr.Text(), tr.IsError)
				}
				if r := result(t, msgs); len(r.PermissionDenials) != 1 {
					t.Errorf("result denials = %+v", r.PermissionDenials)
				}
				if h.Real() {
					if _, err := os.Stat(filepath.Join(h.CLI.Dir, "matched.txt")); err == nil {
						t.Error("the denied command ran")
					}
				}
			},
		},
		scenario{
			name: "hooks_continue_false",
			guards: "A PostToolUse hook that answers continue:false (HookOutput.Stop) ends the turn after the tool: no further " +
				"request to the model, a successful result with terminal reason hook_stopped.",
			record: true,
			api: func() *claudetest.MessagesOptions {
				return &claudetest.MessagesOptions{Replies: []*claudetest.Reply{
					claudetest.ToolUseReply("toolu_halt_1", "Bash", map[string]string{"command": "echo halting"}),
				}}
			},
			opts: func(o *claude.Options) {
				o.AllowedTools = []string{"Bash(echo *)"}
				o.Hooks = map[claude.HookEvent][]claude.HookMatcher{
					claude.HookEventPostToolUse: {{Hooks: []claude.HookFunc{func(context.Context, *claude.HookInput) (*claude.HookOutput, error) {
						return &claude.HookOutput{Stop: true, StopReason: "the host has seen enough"}, nil
					}}}},
				}
			},
			run: func(t *testing.T, h *harness) {
				msgs := h.turn(t, "echo and stop")
				if _, tr := toolResult(t, msgs, "toolu_halt_1"); tr.IsError || !strings.Contains(tr.Text(), "halting") {
					t.Errorf("tool result = %q: the tool should have run", tr.Text())
				}
				r := result(t, msgs)
				if r.IsError || r.TerminalReason != claude.TerminalHookStopped {
					t.Errorf("result = %+v", r)
				}
				if n := len(find[*claude.AssistantMessage](msgs)); n != 1 {
					t.Errorf("%d assistant messages, want only the tool call", n)
				}
				if h.Real() {
					if n := len(h.API.MessagesRequests()); n != 1 {
						t.Errorf("the API got %d requests, want 1: the turn should end after the tool", n)
					}
				}
			},
		},
		scenario{
			name: "hooks_timeout_cancels",
			guards: "A PreToolUse hook slower than its matcher's Timeout: the CLI withdraws the call with control_cancel_request, " +
				"the hook's ctx is cancelled, no late answer is sent, the tool call is refused and the turn goes on.",
			record: true,
			api: func() *claudetest.MessagesOptions {
				return &claudetest.MessagesOptions{Replies: []*claudetest.Reply{
					claudetest.ToolUseReply("toolu_slow_1", "Bash", map[string]string{"command": "touch slow.txt"}),
					claudetest.TextReply("done"),
				}}
			},
			opts: func(o *claude.Options) {
				timeoutCause = make(chan error, 1)
				o.AllowedTools = []string{"Bash"}
				o.Hooks = map[claude.HookEvent][]claude.HookMatcher{
					claude.HookEventPreToolUse: {{Matcher: "Bash", Timeout: time.Second, Hooks: []claude.HookFunc{
						func(ctx context.Context, in *claude.HookInput) (*claude.HookOutput, error) {
							<-ctx.Done()
							timeoutCause <- context.Cause(ctx)
							return &claude.HookOutput{Event: &claude.PreToolUseHookOutput{PermissionDecision: claude.HookPermissionDecisionDeny}}, nil
						},
					}}},
				}
			},
			run: func(t *testing.T, h *harness) {
				msgs := h.turn(t, "echo slowly")
				select {
				case cause := <-timeoutCause:
					if cause == nil || !strings.Contains(cause.Error(), "cancelled by the CLI") {
						t.Errorf("the hook's ctx ended with %v, want the CLI's cancel", cause)
					}
				case <-h.Ctx.Done():
					// In a replay the cancel and the rest of the turn
					// arrive together, so the hook may still be waking up
					// when the turn ends: wait for it rather than race.
					t.Fatal("the hook's ctx was never cancelled")
				}
				// A PreToolUse hook that times out refuses the call, although
				// the rules allow it.
				_, tr := toolResult(t, msgs, "toolu_slow_1")
				if !tr.IsError {
					t.Errorf("tool result = %q, want the call refused", tr.Text())
				}
				if h.Real() {
					if _, err := os.Stat(filepath.Join(h.CLI.Dir, "slow.txt")); err == nil {
						t.Error("the command ran although its PreToolUse hook timed out")
					}
				}
				if r := result(t, msgs); r.IsError {
					t.Errorf("result = %+v", r)
				}
			},
		},
		scenario{
			name: "hooks_error_continues",
			guards: "A hook that fails (an error, or a panic) is answered with an error response; the CLI carries on as if the " +
				"hook had said nothing and the session lives on.",
			record: true,
			api: func() *claudetest.MessagesOptions {
				return &claudetest.MessagesOptions{Replies: []*claudetest.Reply{
					claudetest.TextReply("first"),
					claudetest.TextReply("second"),
				}}
			},
			opts: func(o *claude.Options) {
				failCalls = &hookCalls{}
				o.Hooks = map[claude.HookEvent][]claude.HookMatcher{
					claude.HookEventUserPromptSubmit: {{Hooks: []claude.HookFunc{func(_ context.Context, in *claude.HookInput) (*claude.HookOutput, error) {
						failCalls.add(in)
						if ups, ok := in.Event.(*claude.UserPromptSubmitHookInput); ok && ups.Prompt == "panic" {
							panic("hook exploded")
						}
						return nil, errors.New("hook failed on purpose")
					}}}},
				}
			},
			run: func(t *testing.T, h *harness) {
				for i, prompt := range []string{"fail", "panic"} {
					msgs := h.turn(t, prompt)
					want := []string{"first", "second"}[i]
					if r := result(t, msgs); r.IsError || r.Result != want {
						t.Errorf("turn %q: result = %+v, want success %q", prompt, r, want)
					}
				}
				if n := len(failCalls.all()); n != 2 {
					t.Errorf("the hook was called %d times, want twice", n)
				}
			},
		},
	)
}
