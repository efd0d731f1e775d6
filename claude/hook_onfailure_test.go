package claude_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
)

// TestHookOnFailure: a matcher's OnFailure reaches the CLI as onFailure,
// and Connect refuses a session whose HookFailureBlock the CLI would not
// enforce, as the TypeScript SDK does.
func TestHookOnFailure(t *testing.T) {
	hooks := map[claude.HookEvent][]claude.HookMatcher{
		claude.HookEventPreToolUse: {
			{Matcher: "Bash", Hooks: []claude.HookFunc{noop}, OnFailure: claude.HookFailureBlock},
			{Matcher: "Read", Hooks: []claude.HookFunc{noop}, OnFailure: claude.HookFailureContinue},
			{Hooks: []claude.HookFunc{noop}},
		},
	}
	raw := initHooksSupported(t, hooks)
	regs, err := claudetest.Hooks(json.RawMessage(`{"hooks":` + string(raw) + `}`))
	if err != nil || len(regs["PreToolUse"]) != 3 || regs["PreToolUse"][0].OnFailure != "block" || regs["PreToolUse"][2].OnFailure != "" {
		t.Errorf("claudetest.Hooks = %+v (%v)", regs, err)
	}
	jsonEqual(t, "initialize hooks", raw, `{"PreToolUse": [
		{"matcher": "Bash", "hookCallbackIds": ["hook_0"], "onFailure": "block"},
		{"matcher": "Read", "hookCallbackIds": ["hook_1"], "onFailure": "continue"},
		{"hookCallbackIds": ["hook_2"]}
	]}`)

	for _, tc := range []struct {
		name    string
		hooks   map[claude.HookEvent][]claude.HookMatcher
		extra   claudetest.Msg // added to the initialize response
		wantErr error
	}{
		{"block on an old CLI", hooks, nil, claude.ErrHookOnFailureUnsupported},
		{"block, CLI says false", hooks, claudetest.Msg{"hook_on_failure_supported": false}, claude.ErrHookOnFailureUnsupported},
		{"block on a CLI that honours it", hooks, claudetest.Msg{"hook_on_failure_supported": true}, nil},
		{"block, hooks not applied", hooks, claudetest.Msg{"hook_on_failure_supported": true, "hooks_applied": false}, claude.ErrHooksNotApplied},
		{"continue on an old CLI", map[claude.HookEvent][]claude.HookMatcher{
			claude.HookEventStop: {{Hooks: []claude.HookFunc{noop}, OnFailure: claude.HookFailureContinue}},
		}, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stdinClosed := make(chan struct{})
			o := &claude.Options{Hooks: tc.hooks, Transport: &claudetest.FakeCLI{Script: func(ctx context.Context, c *claudetest.CLI) error {
				l, err := c.Expect(ctx, "control_request", "initialize")
				if err != nil {
					return err
				}
				resp := claudetest.InitializeResponse()
				for k, v := range tc.extra {
					resp[k] = v
				}
				if err := c.Respond(l.RequestID, resp); err != nil {
					return err
				}
				// Returns once the host closed stdin, ended the session
				// or stopped the fake.
				_, err = c.ReadUser(ctx)
				close(stdinClosed)
				return err
			}}}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			s, err := claude.Connect(ctx, o)
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) {
				t.Fatalf("Connect: %v, want %v", err, tc.wantErr)
			}
			if err == nil {
				s.Close()
				return
			}
			if s != nil {
				t.Error("Connect returned a session with its error")
			}
			// The refused CLI is not left running.
			select {
			case <-stdinClosed:
			case <-ctx.Done():
				t.Fatal("the refused CLI was left running")
			}
		})
	}

	bad := &claude.Options{
		Hooks:     map[claude.HookEvent][]claude.HookMatcher{claude.HookEventStop: {{Hooks: []claude.HookFunc{noop}, OnFailure: "ignore"}}},
		Transport: &claudetest.FakeCLI{Script: claudetest.Echo},
	}
	if s, err := claude.Connect(context.Background(), bad); err == nil {
		s.Close()
		t.Error("Connect accepted OnFailure \"ignore\"")
	}
}

// initHooksSupported connects to a fake CLI that honours onFailure and
// returns the initialize request's "hooks".
func initHooksSupported(t *testing.T, hooks map[claude.HookEvent][]claude.HookMatcher) json.RawMessage {
	t.Helper()
	got := make(chan json.RawMessage, 1)
	s := connect(t, &claude.Options{Hooks: hooks}, func(ctx context.Context, c *claudetest.CLI) error {
		l, err := c.Expect(ctx, "control_request", "initialize")
		if err != nil {
			return err
		}
		var req struct{ Hooks json.RawMessage }
		if err := json.Unmarshal(l.Request, &req); err != nil {
			return err
		}
		got <- req.Hooks
		resp := claudetest.InitializeResponse()
		resp["hook_on_failure_supported"] = true
		if err := c.Respond(l.RequestID, resp); err != nil {
			return err
		}
		_, err = c.ReadUser(ctx)
		return err
	})
	s.Close()
	return <-got
}

// A hook that guards something sets OnFailure to HookFailureBlock, so that
// the hook failing (an error, a panic) blocks the action instead of letting
// it through. A CLI that cannot honour it (older than 2.1.330; here a fake
// CLI that does not say it can) is refused at Connect.
func ExampleHookMatcher_onFailure() {
	guard := func(ctx context.Context, in *claude.HookInput) (*claude.HookOutput, error) {
		return nil, errors.New("policy service unreachable") // fails: the call is blocked
	}
	opts := &claude.Options{
		Transport: &claudetest.FakeCLI{Script: claudetest.Echo},
		Hooks: map[claude.HookEvent][]claude.HookMatcher{
			claude.HookEventPreToolUse: {{Matcher: "Bash", Hooks: []claude.HookFunc{guard}, OnFailure: claude.HookFailureBlock}},
		},
	}
	s, err := claude.Connect(context.Background(), opts)
	if err == nil {
		s.Close()
	}
	fmt.Println(errors.Is(err, claude.ErrHookOnFailureUnsupported))
	// Output:
	// true
}
