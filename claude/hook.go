package claude

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"
)

// HookEvent names a point in the CLI's agent loop where hooks run.
type HookEvent string

// The hook events the CLI knows. Each one's input is typed as the
// HookInput.Event variant named after it (*PreToolUseHookInput, …).
//
// CLI 2.1.197 knows all of them but PreModelSwitch, PostModelSwitch and
// DirectoryAdded, which came later (2.1.330 has them); it accepts hooks
// for events it does not know and never calls them. Which events fire
// depends on what the session does; docs/hooks.md lists, for each event,
// the real-CLI test that fires it offline on which versions, or why it
// cannot be. In stream-json mode SessionStart for the session's startup
// (and Setup) runs before the initialize request registers the host's
// hooks, and SessionEnd at exit after the host has closed the CLI's
// stdin, so neither reaches a HookFunc; both fire for /compact and
// /clear (2.1.197, 2.1.330). CwdChanged and FileChanged run only when a
// settings hook is registered for one of them too.
const (
	// Tool use.
	HookEventPreToolUse         HookEvent = "PreToolUse"         // before a tool runs: allow, deny, ask, or rewrite its input
	HookEventPostToolUse        HookEvent = "PostToolUse"        // after a tool succeeded, with its response
	HookEventPostToolUseFailure HookEvent = "PostToolUseFailure" // after a tool failed
	HookEventPostToolBatch      HookEvent = "PostToolBatch"      // once all tool calls of a model response are done
	HookEventPermissionRequest  HookEvent = "PermissionRequest"  // a permission prompt is about to be shown
	HookEventPermissionDenied   HookEvent = "PermissionDenied"   // a tool call was refused

	// Prompts and turns.
	HookEventUserPromptSubmit    HookEvent = "UserPromptSubmit"    // a prompt is about to be sent to the model
	HookEventUserPromptExpansion HookEvent = "UserPromptExpansion" // a slash command or MCP prompt expanded into a prompt
	HookEventStop                HookEvent = "Stop"                // the model finished its answer; block to make it go on
	HookEventStopFailure         HookEvent = "StopFailure"         // the turn ended on an API error
	HookEventInterrupt           HookEvent = "Interrupt"           // an interrupt ended the turn (CLI 2.1.335 and later; its output is ignored)
	HookEventNotification        HookEvent = "Notification"        // the CLI wants the user's attention
	HookEventMessageDisplay      HookEvent = "MessageDisplay"      // lines of an assistant message are shown

	// Sessions.
	HookEventSessionStart       HookEvent = "SessionStart"
	HookEventSessionEnd         HookEvent = "SessionEnd"
	HookEventSetup              HookEvent = "Setup"
	HookEventPreCompact         HookEvent = "PreCompact"
	HookEventPostCompact        HookEvent = "PostCompact"
	HookEventConfigChange       HookEvent = "ConfigChange"
	HookEventInstructionsLoaded HookEvent = "InstructionsLoaded" // a CLAUDE.md or rules file was loaded
	HookEventCwdChanged         HookEvent = "CwdChanged"
	HookEventFileChanged        HookEvent = "FileChanged" // a watched file changed
	HookEventPreModelSwitch     HookEvent = "PreModelSwitch"
	HookEventPostModelSwitch    HookEvent = "PostModelSwitch"
	HookEventDirectoryAdded     HookEvent = "DirectoryAdded"

	// Subagents, tasks and teammates.
	HookEventSubagentStart HookEvent = "SubagentStart"
	HookEventSubagentStop  HookEvent = "SubagentStop"
	HookEventTaskCreated   HookEvent = "TaskCreated"
	HookEventTaskCompleted HookEvent = "TaskCompleted"
	HookEventTeammateIdle  HookEvent = "TeammateIdle"

	// MCP elicitation.
	HookEventElicitation       HookEvent = "Elicitation"       // an MCP server asks the user for input
	HookEventElicitationResult HookEvent = "ElicitationResult" // the user answered an elicitation

	// Git worktrees.
	HookEventWorktreeCreate HookEvent = "WorktreeCreate"
	HookEventWorktreeRemove HookEvent = "WorktreeRemove"
)

// HookFunc is a hook callback: the CLI calls it at the event it was
// registered for, and it answers with what the CLI should do. A nil
// *HookOutput (or an empty one) lets the CLI carry on as it would have.
//
// It runs on its own goroutine, so it may block without stalling the
// session; ctx is cancelled when the CLI withdraws the call (the matcher's
// Timeout passed, or an interrupt) or the session closes. A PreToolUse
// call that times out refuses the tool.
//
// Returning an error, or panicking, answers the CLI with an error and the
// session goes on. The CLI acts as if the hook had returned nothing and
// reports the failure (2.1.197 on its stderr; 2.1.330 also as an
// *InformationalMessage), so a hook that guards something should answer
// with a denial rather than fail, or set its matcher's OnFailure to
// HookFailureBlock (CLI 2.1.330 and later).
type HookFunc func(ctx context.Context, in *HookInput) (*HookOutput, error)

// HookMatcher registers hooks for the events a pattern selects.
type HookMatcher struct {
	// Matcher selects what the hooks run for; the CLI does the matching.
	// For tool events it is a tool name ("Bash"), several ("Write|Edit")
	// or a regular expression ("mcp__.*"); other events match on their
	// own key (SessionStart on its source, Notification on its type …).
	// Empty matches everything.
	Matcher string
	// Hooks are called for every match, each with its own call. The CLI
	// makes the calls of all matching hooks at once and combines their
	// outputs: for PreToolUse a denial from any of them wins.
	Hooks []HookFunc
	// Timeout bounds each call; when it passes the CLI withdraws the call
	// (the hook's ctx is cancelled) and goes on without its output, but
	// refuses the tool when the hook was a PreToolUse one. 0 means the
	// CLI's default (10 minutes in 2.1.197).
	Timeout time.Duration
	// OnFailure says what a failure of these hooks does: a hook that
	// returns an error, panics, or answers with output the CLI rejects.
	// The default, HookFailureContinue, reports the failure and lets the
	// action go ahead; HookFailureBlock blocks the action the event
	// guards (a tool call, a permission request, a prompt), as a hook
	// that guards something should. The CLI ignores it on Stop,
	// SubagentStop, TaskCompleted and TeammateIdle.
	//
	// CLI 2.1.330 and later: an older CLI ignores OnFailure and would let
	// the action run, so Connect refuses to start a session that sets
	// HookFailureBlock on a CLI that does not say it honours it
	// (ErrHookOnFailureUnsupported).
	OnFailure HookFailure
}

// HookFailure is what a failed hook does to the action its event guards.
type HookFailure string

// What a failed hook does.
const (
	// HookFailureContinue reports the failure and lets the action go
	// ahead (the default).
	HookFailureContinue HookFailure = "continue"
	// HookFailureBlock blocks the action, as a denial would.
	HookFailureBlock HookFailure = "block"
)

// ErrHookOnFailureUnsupported is returned by Connect when a HookMatcher
// sets OnFailure to HookFailureBlock and the CLI's initialize response
// does not say it honours onFailure (hook_on_failure_supported, CLI
// 2.1.330 and later): such a CLI would let the guarded action run when
// the hook fails. Upgrade the CLI, or drop HookFailureBlock.
var ErrHookOnFailureUnsupported = errors.New("claude: the CLI does not honour HookMatcher.OnFailure (needs CLI 2.1.330 or later), so a failing hook would not block")

// ErrHooksNotApplied is returned by Connect when a HookMatcher sets
// OnFailure to HookFailureBlock and the CLI says it did not register the
// session's hooks (hooks_applied false: a CLI already configured by
// another client), so nothing would guard the actions.
var ErrHooksNotApplied = errors.New("claude: the CLI did not register this session's hooks")

// hookTable maps the callback ids sent in initialize to their functions.
// It is built once per session, so changing Options.Hooks afterwards has
// no effect on a running session.
type hookTable struct {
	funcs map[string]HookFunc
	// block is set when a matcher's OnFailure is HookFailureBlock: the
	// initialize response must then say the CLI honours it.
	block bool
	// wire is the initialize request's "hooks" value.
	wire json.RawMessage
}

// wireHookMatcher is one matcher as the initialize request carries it.
// The keys are camelCase: snake_case hook_callback_ids hangs CLI 2.1.197
// and is silently ignored by 2.1.330.
type wireHookMatcher struct {
	Matcher         string   `json:"matcher,omitempty"`
	HookCallbackIDs []string `json:"hookCallbackIds"`
	Timeout         float64  `json:"timeout,omitempty"` // seconds
	OnFailure       string   `json:"onFailure,omitempty"`
}

// buildHooks numbers every hook function ("hook_0", "hook_1", …) and
// builds the initialize request's "hooks" value. Events go in name order
// so that the same options give the same ids every time: recorded
// transcripts depend on it.
func buildHooks(hooks map[HookEvent][]HookMatcher) (*hookTable, error) {
	t := &hookTable{funcs: map[string]HookFunc{}}
	if len(hooks) == 0 {
		return t, nil
	}
	events := make([]HookEvent, 0, len(hooks))
	for ev := range hooks {
		events = append(events, ev)
	}
	slices.Sort(events)
	wire := map[HookEvent][]wireHookMatcher{}
	for _, ev := range events {
		ms := hooks[ev]
		if len(ms) == 0 {
			continue
		}
		out := make([]wireHookMatcher, 0, len(ms))
		for _, m := range ms {
			wm := wireHookMatcher{Matcher: m.Matcher, HookCallbackIDs: make([]string, 0, len(m.Hooks)), OnFailure: string(m.OnFailure)}
			if m.OnFailure == HookFailureBlock {
				t.block = true
			}
			if m.Timeout > 0 {
				// The CLI takes seconds and multiplies by 1000; keep
				// millisecond precision.
				wm.Timeout = math.Ceil(float64(m.Timeout)/float64(time.Millisecond)) / 1000
			}
			for _, f := range m.Hooks {
				id := "hook_" + strconv.Itoa(len(t.funcs))
				t.funcs[id] = f
				wm.HookCallbackIDs = append(wm.HookCallbackIDs, id)
			}
			out = append(out, wm)
		}
		wire[ev] = out
	}
	b, err := json.Marshal(wire)
	if err != nil {
		return nil, fmt.Errorf("claude: encoding hooks: %w", err)
	}
	t.wire = b
	return t, nil
}

// validateHooks reports programmer errors in Options.Hooks.
func validateHooks(hooks map[HookEvent][]HookMatcher) error {
	for ev, ms := range hooks {
		if ev == "" {
			return errors.New("claude: Options.Hooks has an empty event name")
		}
		for i, m := range ms {
			if len(m.Hooks) == 0 {
				return fmt.Errorf("claude: Options.Hooks[%s][%d] has no Hooks", ev, i)
			}
			if m.Timeout < 0 {
				return fmt.Errorf("claude: Options.Hooks[%s][%d].Timeout is negative (%v)", ev, i, m.Timeout)
			}
			switch m.OnFailure {
			case "", HookFailureContinue, HookFailureBlock:
			default:
				return fmt.Errorf("claude: Options.Hooks[%s][%d].OnFailure is %q, want %q or %q", ev, i, m.OnFailure, HookFailureContinue, HookFailureBlock)
			}
			for j, f := range m.Hooks {
				if f == nil {
					return fmt.Errorf("claude: Options.Hooks[%s][%d].Hooks[%d] is nil", ev, i, j)
				}
			}
		}
	}
	return nil
}

// checkInitialize refuses an initialize response that would leave a
// HookFailureBlock matcher unenforced, as the TypeScript SDK does.
func (t *hookTable) checkInitialize(raw json.RawMessage) error {
	if t == nil || !t.block {
		return nil
	}
	var r struct {
		Supported *bool `json:"hook_on_failure_supported"`
		Applied   *bool `json:"hooks_applied"`
	}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &r); err != nil {
			return fmt.Errorf("%w: initialize response not understood: %v", ErrHookOnFailureUnsupported, err)
		}
	}
	if r.Supported == nil || !*r.Supported {
		return ErrHookOnFailureUnsupported
	}
	if r.Applied != nil && !*r.Applied {
		return ErrHooksNotApplied
	}
	return nil
}

// wireHookCallback is the body of the CLI's hook_callback request.
type wireHookCallback struct {
	CallbackID string          `json:"callback_id"`
	Input      json.RawMessage `json:"input"`
	ToolUseID  string          `json:"tool_use_id"`
}

// serveHookCallback runs the hook the CLI names and answers with its
// output.
func (s *Session) serveHookCallback(ctx context.Context, _ string, raw json.RawMessage) (any, error) {
	var req wireHookCallback
	if err := unmarshal(raw, &req); err != nil {
		return nil, fmt.Errorf("decoding hook_callback: %w", err)
	}
	t := s.hooks.Load()
	var f HookFunc
	if t != nil {
		f = t.funcs[req.CallbackID]
	}
	if f == nil {
		return nil, fmt.Errorf("no hook is registered as %q", req.CallbackID)
	}
	in, err := decodeHookInput(req.Input, req.ToolUseID)
	if err != nil {
		return nil, err
	}
	if in.typeErr != nil {
		s.log.Warn("claude: hook input has fields of an unexpected type; HookInput.Event is nil",
			"event", in.HookEventName, "err", in.typeErr)
	}
	out, err := f(ctx, in)
	if err == nil {
		var payload any
		if payload, err = out.encode(in); err == nil {
			return payload, nil
		}
	}
	if ctx.Err() == nil {
		s.log.Warn("claude: hook failed", "event", in.HookEventName, "callback_id", req.CallbackID, "err", err)
	}
	return nil, err
}
