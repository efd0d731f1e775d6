package claude_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
)

// jsonEqual fails unless got and want hold the same JSON value.
func jsonEqual(t *testing.T, what string, got json.RawMessage, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("%s: %s is not JSON: %v", what, got, err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("%s: bad want %s: %v", what, want, err)
	}
	if diff := cmp.Diff(w, g); diff != "" {
		t.Errorf("%s (-want +got):\n%s\ngot %s", what, diff, got)
	}
}

// initHooks connects with opts and returns the initialize request's
// "hooks" value (nil when absent).
func initHooks(t *testing.T, opts *claude.Options) json.RawMessage {
	t.Helper()
	_, init := launched(t, opts)
	h, ok := init["hooks"]
	if !ok {
		return nil
	}
	b, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func noop(context.Context, *claude.HookInput) (*claude.HookOutput, error) { return nil, nil }

func TestHooksRegistration(t *testing.T) {
	got := initHooks(t, &claude.Options{Hooks: map[claude.HookEvent][]claude.HookMatcher{
		claude.HookEventStop: {{Hooks: []claude.HookFunc{noop}}},
		claude.HookEventPreToolUse: {
			{Matcher: "Bash", Hooks: []claude.HookFunc{noop, noop}, Timeout: 1500 * time.Millisecond},
			{Matcher: "Write|Edit", Hooks: []claude.HookFunc{noop}, Timeout: 30 * time.Second},
		},
		claude.HookEventPostToolUse: {{Hooks: []claude.HookFunc{noop}}},
		claude.HookEventSessionEnd:  nil, // no matchers: not registered
	}})
	// Events in name order, ids numbered in that order, camelCase keys
	// (snake_case hangs CLI 2.1.197), timeouts in seconds.
	jsonEqual(t, "initialize hooks", got, `{
		"PostToolUse": [{"hookCallbackIds": ["hook_0"]}],
		"PreToolUse": [
			{"matcher": "Bash", "hookCallbackIds": ["hook_1", "hook_2"], "timeout": 1.5},
			{"matcher": "Write|Edit", "hookCallbackIds": ["hook_3"], "timeout": 30}
		],
		"Stop": [{"hookCallbackIds": ["hook_4"]}]
	}`)

	if h := initHooks(t, &claude.Options{}); h != nil {
		t.Errorf("initialize without hooks has hooks %s", h)
	}
	// A sub-millisecond timeout must not round to 0, which means the
	// CLI's default of minutes.
	got = initHooks(t, &claude.Options{Hooks: map[claude.HookEvent][]claude.HookMatcher{
		claude.HookEventStop: {{Hooks: []claude.HookFunc{noop}, Timeout: time.Microsecond}},
	}})
	jsonEqual(t, "tiny timeout", got, `{"Stop": [{"hookCallbackIds": ["hook_0"], "timeout": 0.001}]}`)
}

func TestHooksValidation(t *testing.T) {
	for name, hooks := range map[string]map[claude.HookEvent][]claude.HookMatcher{
		"no hooks":         {claude.HookEventStop: {{Matcher: "x"}}},
		"nil hook":         {claude.HookEventStop: {{Hooks: []claude.HookFunc{nil}}}},
		"negative timeout": {claude.HookEventStop: {{Hooks: []claude.HookFunc{noop}, Timeout: -time.Second}}},
		"empty event":      {"": {{Hooks: []claude.HookFunc{noop}}}},
	} {
		o := &claude.Options{Hooks: hooks, Transport: &claudetest.FakeCLI{Script: claudetest.Echo}}
		if s, err := claude.Connect(context.Background(), o); err == nil {
			s.Close()
			t.Errorf("%s: Connect accepted invalid hooks", name)
		}
	}
}

type hookAnswer struct {
	raw json.RawMessage
	err error
}

// callHooks connects with opts and has the fake CLI call the hooks in
// calls (callback id -> input), in order; it returns the host's answers.
func callHooks(t *testing.T, opts *claude.Options, calls ...hookCall) []hookAnswer {
	t.Helper()
	ctx := testCtx(t)
	done := make(chan []hookAnswer, 1)
	connect(t, opts, func(ctx context.Context, c *claudetest.CLI) error {
		if _, err := c.HandleInitialize(ctx); err != nil {
			return err
		}
		var out []hookAnswer
		for _, call := range calls {
			raw, err := c.HookCallback(ctx, call.id, call.toolUseID, call.input(c))
			out = append(out, hookAnswer{raw, err})
		}
		done <- out
		_, err := c.ReadUser(ctx)
		return err
	})
	select {
	case out := <-done:
		return out
	case <-ctx.Done():
		t.Fatal("the host did not answer the hook callbacks")
		return nil
	}
}

type hookCall struct {
	id, toolUseID string
	input         func(c *claudetest.CLI) any
}

func eventCall(id, event string, fields claudetest.Msg) hookCall {
	return hookCall{id: id, toolUseID: "toolu_1", input: func(c *claudetest.CLI) any { return c.HookInput(event, fields) }}
}

func hooksFor(event claude.HookEvent, fs ...claude.HookFunc) *claude.Options {
	return &claude.Options{Hooks: map[claude.HookEvent][]claude.HookMatcher{event: {{Hooks: fs}}}}
}

func TestHookDispatchByCallbackID(t *testing.T) {
	named := func(name string) claude.HookFunc {
		return func(_ context.Context, in *claude.HookInput) (*claude.HookOutput, error) {
			return &claude.HookOutput{SystemMessage: name + " saw " + string(in.HookEventName)}, nil
		}
	}
	opts := &claude.Options{Hooks: map[claude.HookEvent][]claude.HookMatcher{
		claude.HookEventPreToolUse: {{Matcher: "Bash", Hooks: []claude.HookFunc{named("a"), named("b")}}},
		claude.HookEventStop:       {{Hooks: []claude.HookFunc{named("c")}}},
	}}
	// PreToolUse sorts first: hook_0 and hook_1 are its; Stop's is hook_2.
	got := callHooks(t, opts,
		eventCall("hook_2", "Stop", claudetest.Msg{"stop_hook_active": false}),
		eventCall("hook_1", "PreToolUse", claudetest.Msg{"tool_name": "Bash", "tool_input": map[string]string{}}),
		eventCall("hook_0", "PreToolUse", claudetest.Msg{"tool_name": "Bash", "tool_input": map[string]string{}}),
		eventCall("hook_9", "Stop", nil),
	)
	for i, want := range []string{"c saw Stop", "b saw PreToolUse", "a saw PreToolUse"} {
		if got[i].err != nil {
			t.Errorf("call %d: %v", i, got[i].err)
			continue
		}
		jsonEqual(t, "answer", got[i].raw, `{"systemMessage": "`+want+`"}`)
	}
	var ce *claude.ControlError
	if !errors.As(got[3].err, &ce) || !strings.Contains(ce.Message, "hook_9") {
		t.Errorf("unknown callback id: err = %v, want a *ControlError naming it", got[3].err)
	}
}

func TestHookOutputsOnTheWire(t *testing.T) {
	for _, tc := range []struct {
		name  string
		event claude.HookEvent
		out   *claude.HookOutput
		want  string
	}{
		{"nil", claude.HookEventStop, nil, `{}`},
		{"empty", claude.HookEventStop, &claude.HookOutput{}, `{}`},
		{"common fields", claude.HookEventStop, &claude.HookOutput{
			Stop: true, StopReason: "enough", SuppressOutput: true, SystemMessage: "careful",
			Decision: claude.HookDecisionBlock, Reason: "check again",
		}, `{"continue": false, "stopReason": "enough", "suppressOutput": true, "systemMessage": "careful",
			"decision": "block", "reason": "check again"}`},
		{"pre tool use deny", claude.HookEventPreToolUse, &claude.HookOutput{Event: &claude.PreToolUseHookOutput{
			PermissionDecision: claude.HookPermissionDecisionDeny, PermissionDecisionReason: "no",
		}}, `{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": "no"}}`},
		{"pre tool use defer", claude.HookEventPreToolUse, &claude.HookOutput{Event: &claude.PreToolUseHookOutput{
			PermissionDecision: claude.HookPermissionDecisionDefer,
		}}, `{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "defer"}}`},
		{"pre tool use allow with input", claude.HookEventPreToolUse, &claude.HookOutput{Event: &claude.PreToolUseHookOutput{
			PermissionDecision: claude.HookPermissionDecisionAllow, UpdatedInput: json.RawMessage(`{"command":"ls"}`),
			AdditionalContext: "rewritten",
		}}, `{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow",
			"updatedInput": {"command": "ls"}, "additionalContext": "rewritten"}}`},
		{"user prompt submit", claude.HookEventUserPromptSubmit, &claude.HookOutput{Event: &claude.UserPromptSubmitHookOutput{
			AdditionalContext: "ctx", SessionTitle: "title",
		}}, `{"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": "ctx", "sessionTitle": "title"}}`},
		{"session start", claude.HookEventSessionStart, &claude.HookOutput{Event: &claude.SessionStartHookOutput{
			AdditionalContext: "hello", WatchPaths: []string{"/a"},
		}}, `{"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": "hello", "watchPaths": ["/a"]}}`},
		{"post tool use", claude.HookEventPostToolUse, &claude.HookOutput{Event: &claude.PostToolUseHookOutput{
			AdditionalContext: "seen", UpdatedToolOutput: json.RawMessage(`"redacted"`),
		}}, `{"hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": "seen", "updatedToolOutput": "redacted"}}`},
		{"permission request allow", claude.HookEventPermissionRequest, &claude.HookOutput{Event: &claude.PermissionRequestHookOutput{
			Decision: &claude.PermissionAllow{},
		}}, `{"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": {"behavior": "allow", "updatedInput": {"command": "ls"}}}}`},
		{"permission request deny", claude.HookEventPermissionRequest, &claude.HookOutput{Event: &claude.PermissionRequestHookOutput{
			Decision: &claude.PermissionDeny{Message: "no", Interrupt: true},
		}}, `{"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": {"behavior": "deny", "message": "no", "interrupt": true}}}`},
		{"permission request typed nil", claude.HookEventPermissionRequest, &claude.HookOutput{Event: &claude.PermissionRequestHookOutput{
			Decision: (*claude.PermissionAllow)(nil), // no decision, as a nil Decision
		}}, `{"hookSpecificOutput": {"hookEventName": "PermissionRequest"}}`},
		{"worktree create", claude.HookEventWorktreeCreate, &claude.HookOutput{Event: &claude.WorktreeCreateHookOutput{WorktreePath: "/w"}},
			`{"hookSpecificOutput": {"hookEventName": "WorktreeCreate", "worktreePath": "/w"}}`},
		{"elicitation", claude.HookEventElicitation, &claude.HookOutput{Event: &claude.ElicitationHookOutput{
			Action: "accept", Content: json.RawMessage(`{"name":"x"}`),
		}}, `{"hookSpecificOutput": {"hookEventName": "Elicitation", "action": "accept", "content": {"name": "x"}}}`},
		{"terminal sequence", claude.HookEventStop, &claude.HookOutput{TerminalSequence: "\a"}, `{"terminalSequence": "\u0007"}`},
		{"async", claude.HookEventStop, &claude.HookOutput{Async: true, AsyncTimeout: 30000, Reason: "not sent"},
			`{"async": true, "asyncTimeout": 30000}`},
		{"post tool use classifier context", claude.HookEventPostToolUse, &claude.HookOutput{Event: &claude.PostToolUseHookOutput{
			ClassifierContext: "the user asked for this",
		}}, `{"hookSpecificOutput": {"hookEventName": "PostToolUse", "classifierContext": "the user asked for this"}}`},
		{"user prompt expansion suppress", claude.HookEventUserPromptExpansion, &claude.HookOutput{Decision: claude.HookDecisionBlock,
			Event: &claude.UserPromptExpansionHookOutput{SuppressOriginalPrompt: true}},
			`{"decision": "block", "hookSpecificOutput": {"hookEventName": "UserPromptExpansion", "suppressOriginalPrompt": true}}`},
		{"raw", claude.HookEventStop, &claude.HookOutput{Raw: json.RawMessage(` {"continue":true,"futureField":1}`), Reason: "ignored"},
			`{"continue": true, "futureField": 1}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hook := func(context.Context, *claude.HookInput) (*claude.HookOutput, error) { return tc.out, nil }
			got := callHooks(t, hooksFor(tc.event, hook), eventCall("hook_0", string(tc.event), claudetest.Msg{
				"tool_name": "Bash", "tool_input": map[string]string{"command": "ls"},
			}))
			if got[0].err != nil {
				t.Fatal(got[0].err)
			}
			jsonEqual(t, "hook output", got[0].raw, tc.want)
		})
	}
}

func TestHookInputsTyped(t *testing.T) {
	type check func(t *testing.T, in *claude.HookInput)
	for _, tc := range []struct {
		event  string
		fields claudetest.Msg
		check  check
	}{
		{"PreToolUse", claudetest.Msg{"tool_name": "Bash", "tool_input": map[string]string{"command": "ls"}, "tool_use_id": "toolu_1",
			"mcp_server": map[string]string{"name": "calc", "source": "sdk"}, "effort": map[string]string{"level": "high"}, "prompt_id": "p1"},
			func(t *testing.T, in *claude.HookInput) {
				e := in.Event.(*claude.PreToolUseHookInput)
				if e.ToolName != "Bash" || string(e.ToolInput) != `{"command":"ls"}` || e.ToolUseID != "toolu_1" ||
					e.MCPServer == nil || e.MCPServer.Source != "sdk" || in.Effort != "high" || in.PromptID != "p1" {
					t.Errorf("%+v %+v", in, e)
				}
			}},
		{"PostToolUse", claudetest.Msg{"tool_name": "Bash", "tool_input": map[string]string{}, "tool_use_id": "toolu_1",
			"tool_response": map[string]string{"stdout": "hi"}, "duration_ms": 169},
			func(t *testing.T, in *claude.HookInput) {
				e := in.Event.(*claude.PostToolUseHookInput)
				if string(e.ToolResponse) != `{"stdout":"hi"}` || e.DurationMS != 169 {
					t.Errorf("%+v", e)
				}
			}},
		{"PostToolBatch", claudetest.Msg{"tool_calls": []any{map[string]any{"tool_name": "Bash", "tool_input": map[string]string{},
			"tool_use_id": "toolu_1", "tool_response": "hi"}}},
			func(t *testing.T, in *claude.HookInput) {
				e := in.Event.(*claude.PostToolBatchHookInput)
				if len(e.ToolCalls) != 1 || e.ToolCalls[0].ToolUseID != "toolu_1" || string(e.ToolCalls[0].ToolResponse) != `"hi"` {
					t.Errorf("%+v", e)
				}
			}},
		{"UserPromptSubmit", claudetest.Msg{"prompt": "hello"}, func(t *testing.T, in *claude.HookInput) {
			if e := in.Event.(*claude.UserPromptSubmitHookInput); e.Prompt != "hello" {
				t.Errorf("%+v", e)
			}
		}},
		{"Stop", claudetest.Msg{"stop_hook_active": true, "last_assistant_message": "done", "background_tasks": []any{},
			"session_crons": []any{map[string]any{"id": "c1", "schedule": "0 9 * * *", "recurring": true, "prompt": "wake"}}},
			func(t *testing.T, in *claude.HookInput) {
				e := in.Event.(*claude.StopHookInput)
				if !e.StopHookActive || e.LastAssistantMessage != "done" || len(e.SessionCrons) != 1 || !e.SessionCrons[0].Recurring {
					t.Errorf("%+v", e)
				}
			}},
		{"PreCompact", claudetest.Msg{"trigger": "auto", "custom_instructions": nil}, func(t *testing.T, in *claude.HookInput) {
			if e := in.Event.(*claude.PreCompactHookInput); e.Trigger != "auto" || e.CustomInstructions != "" {
				t.Errorf("%+v", e)
			}
		}},
		{"SubagentStop", claudetest.Msg{"stop_hook_active": false, "agent_id": "a1", "agent_type": "general-purpose",
			"agent_transcript_path": "/t.jsonl"}, func(t *testing.T, in *claude.HookInput) {
			e := in.Event.(*claude.SubagentStopHookInput)
			if e.AgentID != "a1" || in.AgentID != "a1" || e.AgentTranscriptPath != "/t.jsonl" {
				t.Errorf("%+v %+v", in, e)
			}
		}},
		{"FileChanged", claudetest.Msg{"file_path": "/x", "event": "unlink"}, func(t *testing.T, in *claude.HookInput) {
			if e := in.Event.(*claude.FileChangedHookInput); e.FilePath != "/x" || e.Change != "unlink" {
				t.Errorf("%+v", e)
			}
		}},
		{"MessageDisplay", claudetest.Msg{"turn_id": "t", "message_id": "m", "index": 2, "final": true, "delta": "done"},
			func(t *testing.T, in *claude.HookInput) {
				if e := in.Event.(*claude.MessageDisplayHookInput); e.Index != 2 || !e.Final || e.Delta != "done" {
					t.Errorf("%+v", e)
				}
			}},
		// An event this Tether does not know: no Event, everything in Raw.
		{"FutureEvent", claudetest.Msg{"novel": 1}, func(t *testing.T, in *claude.HookInput) {
			if in.Event != nil || !strings.Contains(string(in.Raw), `"novel":1`) || in.HookEventName != "FutureEvent" {
				t.Errorf("%+v", in)
			}
		}},
	} {
		t.Run(tc.event, func(t *testing.T) {
			var got atomic.Pointer[claude.HookInput]
			hook := func(_ context.Context, in *claude.HookInput) (*claude.HookOutput, error) {
				got.Store(in)
				return nil, nil
			}
			ans := callHooks(t, hooksFor(claude.HookEvent(tc.event), hook), eventCall("hook_0", tc.event, tc.fields))
			if ans[0].err != nil {
				t.Fatal(ans[0].err)
			}
			in := got.Load()
			if in.HookEventName != claude.HookEvent(tc.event) || in.SessionID == "" || in.Cwd != "/fake" ||
				in.PermissionMode != claude.PermissionModeDefault || in.ToolUseID != "toolu_1" || !json.Valid(in.Raw) {
				t.Errorf("common fields: %+v", in)
			}
			if in.Event != nil && in.Event.HookEvent() != in.HookEventName {
				t.Errorf("Event %T is for %s", in.Event, in.Event.HookEvent())
			}
			tc.check(t, in)
		})
	}
}

// A field whose type changed in a newer CLI must not cost the user the
// hook: it runs with Event nil and the input in Raw, and the logger says
// why.
func TestHookInputTypeChange(t *testing.T) {
	var log strings.Builder
	var got atomic.Pointer[claude.HookInput]
	opts := hooksFor(claude.HookEventPreToolUse, func(_ context.Context, in *claude.HookInput) (*claude.HookOutput, error) {
		got.Store(in)
		return nil, nil
	})
	opts.Logger = slog.New(slog.NewTextHandler(&syncWriter{w: &log}, nil))
	ans := callHooks(t, opts, eventCall("hook_0", "PreToolUse", claudetest.Msg{"tool_name": map[string]string{"now": "an object"}}))
	if ans[0].err != nil {
		t.Fatal(ans[0].err)
	}
	if in := got.Load(); in.Event != nil || in.SessionID == "" || !strings.Contains(string(in.Raw), "an object") {
		t.Errorf("input = %+v", in)
	}
	if !strings.Contains(log.String(), "unexpected type") {
		t.Errorf("log = %q", log.String())
	}
}

// A hook's error or panic, an output for the wrong event and an output
// that cannot be encoded are error answers; the session lives on.
func TestHookFailuresAreErrorAnswers(t *testing.T) {
	opts := &claude.Options{Hooks: map[claude.HookEvent][]claude.HookMatcher{
		// PreToolUse sorts first: hook_0, hook_1.
		claude.HookEventPreToolUse: {{Hooks: []claude.HookFunc{
			noop,
			func(context.Context, *claude.HookInput) (*claude.HookOutput, error) {
				return &claude.HookOutput{Event: &claude.PreToolUseHookOutput{UpdatedInput: json.RawMessage(`{bad`)}}, nil
			},
		}}},
		// hook_2 … hook_6.
		claude.HookEventUserPromptSubmit: {{Hooks: []claude.HookFunc{
			func(context.Context, *claude.HookInput) (*claude.HookOutput, error) { return nil, errors.New("boom") },
			func(context.Context, *claude.HookInput) (*claude.HookOutput, error) { panic("kaboom") },
			func(context.Context, *claude.HookInput) (*claude.HookOutput, error) {
				return &claude.HookOutput{Event: &claude.StopHookOutput{AdditionalContext: "x"}}, nil
			},
			func(context.Context, *claude.HookInput) (*claude.HookOutput, error) {
				return &claude.HookOutput{Raw: json.RawMessage(`[1]`)}, nil
			},
			noop,
		}}},
	}}
	prompt := claudetest.Msg{"prompt": "hi"}
	tool := claudetest.Msg{"tool_name": "Bash", "tool_input": map[string]string{}}
	got := callHooks(t, opts,
		eventCall("hook_2", "UserPromptSubmit", prompt),
		eventCall("hook_3", "UserPromptSubmit", prompt),
		eventCall("hook_4", "UserPromptSubmit", prompt),
		eventCall("hook_5", "UserPromptSubmit", prompt),
		eventCall("hook_1", "PreToolUse", tool),
		hookCall{id: "hook_6", input: func(*claudetest.CLI) any { return "not an object" }},
		eventCall("hook_0", "PreToolUse", tool),
		eventCall("hook_6", "UserPromptSubmit", prompt),
	)
	for i, want := range []string{
		"boom", "panicked: kaboom", "UserPromptSubmit hook returned Stop output",
		"not a JSON object", "encoding response", "not a JSON object",
	} {
		var ce *claude.ControlError
		if !errors.As(got[i].err, &ce) || !strings.Contains(ce.Message, want) {
			t.Errorf("call %d: err = %v, want a *ControlError with %q", i, got[i].err, want)
		}
	}
	for _, a := range got[6:] {
		if a.err != nil || string(a.raw) != "{}" {
			t.Errorf("the session did not live on: %s, %v", a.raw, a.err)
		}
	}
}

// The CLI withdraws a hook call (its timeout passed, or an interrupt):
// the hook's ctx is cancelled and no late answer is written.
func TestHookCancelledByCLI(t *testing.T) {
	w := newWithdrawal()
	w.check(t, hooksFor(claude.HookEventPreToolUse, func(ctx context.Context, in *claude.HookInput) (*claude.HookOutput, error) {
		w.wait(ctx)
		return &claude.HookOutput{Event: &claude.PreToolUseHookOutput{PermissionDecision: claude.HookPermissionDecisionAllow}}, nil
	}), "hook_callback", func(c *claudetest.CLI) any {
		return map[string]any{
			"callback_id": "hook_0", "tool_use_id": "toolu_1",
			"input": c.HookInput("PreToolUse", claudetest.Msg{"tool_name": "Bash"}),
		}
	})
}

// Close cancels a running hook's ctx and waits for it.
func TestHookCancelledOnClose(t *testing.T) {
	ctx := testCtx(t)
	started := make(chan struct{})
	var ended atomic.Bool
	s := connect(t, hooksFor(claude.HookEventStop, func(ctx context.Context, in *claude.HookInput) (*claude.HookOutput, error) {
		close(started)
		<-ctx.Done()
		ended.Store(true)
		return nil, ctx.Err()
	}), func(ctx context.Context, c *claudetest.CLI) error {
		if _, err := c.HandleInitialize(ctx); err != nil {
			return err
		}
		_, _, err := c.SendRequest("hook_callback", map[string]any{
			"callback_id": "hook_0", "input": c.HookInput("Stop", nil),
		})
		if err != nil {
			return err
		}
		_, err = c.ReadUser(ctx)
		return err
	})
	select {
	case <-started:
	case <-ctx.Done():
		t.Fatal("the hook was not called")
	}
	s.Close()
	if !ended.Load() {
		t.Error("Close returned before the hook saw its ctx cancelled")
	}
}

// allHookEvents lists every HookEvent constant.
var allHookEvents = []claude.HookEvent{
	claude.HookEventPreToolUse, claude.HookEventPostToolUse, claude.HookEventPostToolUseFailure,
	claude.HookEventPostToolBatch, claude.HookEventPermissionRequest, claude.HookEventPermissionDenied,
	claude.HookEventUserPromptSubmit, claude.HookEventUserPromptExpansion, claude.HookEventStop,
	claude.HookEventStopFailure, claude.HookEventInterrupt, claude.HookEventNotification, claude.HookEventMessageDisplay,
	claude.HookEventSessionStart, claude.HookEventSessionEnd, claude.HookEventSetup, claude.HookEventPreCompact,
	claude.HookEventPostCompact, claude.HookEventConfigChange, claude.HookEventInstructionsLoaded,
	claude.HookEventCwdChanged, claude.HookEventFileChanged, claude.HookEventPreModelSwitch,
	claude.HookEventPostModelSwitch, claude.HookEventDirectoryAdded, claude.HookEventSubagentStart,
	claude.HookEventSubagentStop, claude.HookEventTaskCreated, claude.HookEventTaskCompleted,
	claude.HookEventTeammateIdle, claude.HookEventElicitation, claude.HookEventElicitationResult,
	claude.HookEventWorktreeCreate, claude.HookEventWorktreeRemove,
}

// Every event the CLI knows decodes into its own typed variant.
func TestEveryHookEventHasATypedInput(t *testing.T) {
	got := make(chan claude.HookEventInput, len(allHookEvents))
	hook := func(_ context.Context, in *claude.HookInput) (*claude.HookOutput, error) {
		got <- in.Event
		return nil, nil
	}
	hooks := map[claude.HookEvent][]claude.HookMatcher{}
	var calls []hookCall
	for _, ev := range allHookEvents {
		hooks[ev] = []claude.HookMatcher{{Hooks: []claude.HookFunc{hook}}}
	}
	// Ids follow the events' name order.
	sorted := slices.Sorted(slices.Values(allHookEvents))
	for i, ev := range sorted {
		calls = append(calls, eventCall(fmt.Sprintf("hook_%d", i), string(ev), nil))
	}
	for i, a := range callHooks(t, &claude.Options{Hooks: hooks}, calls...) {
		if a.err != nil {
			t.Errorf("%s: %v", sorted[i], a.err)
			continue
		}
		ev := <-got
		if ev == nil || ev.HookEvent() != sorted[i] {
			t.Errorf("%s decoded as %T", sorted[i], ev)
		}
	}
}

// Every output variant names its own event on the wire, as the CLI
// requires.
func TestEveryHookOutputNamesItsEvent(t *testing.T) {
	outputs := []claude.HookEventOutput{
		&claude.PreToolUseHookOutput{}, &claude.PostToolUseHookOutput{}, &claude.PostToolUseFailureHookOutput{},
		&claude.PostToolBatchHookOutput{}, &claude.PermissionRequestHookOutput{}, &claude.PermissionDeniedHookOutput{},
		&claude.UserPromptSubmitHookOutput{}, &claude.UserPromptExpansionHookOutput{}, &claude.StopHookOutput{},
		&claude.NotificationHookOutput{}, &claude.MessageDisplayHookOutput{}, &claude.SessionStartHookOutput{},
		&claude.SetupHookOutput{}, &claude.CwdChangedHookOutput{}, &claude.FileChangedHookOutput{},
		&claude.PreModelSwitchHookOutput{}, &claude.PostModelSwitchHookOutput{}, &claude.SubagentStartHookOutput{},
		&claude.SubagentStopHookOutput{}, &claude.ElicitationHookOutput{}, &claude.ElicitationResultHookOutput{},
		&claude.WorktreeCreateHookOutput{},
	}
	hooks := map[claude.HookEvent][]claude.HookMatcher{}
	byEvent := map[claude.HookEvent]claude.HookEventOutput{}
	for _, o := range outputs {
		ev := o.HookEvent()
		byEvent[ev] = o
		hooks[ev] = []claude.HookMatcher{{Hooks: []claude.HookFunc{func(context.Context, *claude.HookInput) (*claude.HookOutput, error) {
			return &claude.HookOutput{Event: o}, nil
		}}}}
	}
	sorted := slices.Sorted(maps.Keys(byEvent))
	var calls []hookCall
	for i, ev := range sorted {
		calls = append(calls, eventCall(fmt.Sprintf("hook_%d", i), string(ev), nil))
	}
	for i, a := range callHooks(t, &claude.Options{Hooks: hooks}, calls...) {
		if a.err != nil {
			t.Errorf("%s: %v", sorted[i], a.err)
			continue
		}
		var out struct {
			HookSpecificOutput struct{ HookEventName string }
		}
		if err := json.Unmarshal(a.raw, &out); err != nil || out.HookSpecificOutput.HookEventName != string(sorted[i]) {
			t.Errorf("%T: answer %s", byEvent[sorted[i]], a.raw)
		}
	}
}
