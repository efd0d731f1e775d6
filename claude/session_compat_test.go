package claude_test

import (
	"context"
	"errors"
	"testing"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
)

// Both call shapes of SetMaxThinkingTokens compile: the original
// (ctx, n), which programs written before the display existed use, and
// (ctx, n, display). Compiling this file is the test.
var _ = func(ctx context.Context, s *claude.Session) {
	_ = s.SetMaxThinkingTokens(ctx, 1024)
	_ = s.SetMaxThinkingTokens(ctx, 1024, claude.ThinkingDisplaySummarized)
	_ = s.SetPermissionMode(ctx, claude.PermissionModeDefault)
}

// TestSetMaxThinkingTokensShapes: the two-argument form sends no display,
// the three-argument form sends it, and two displays are refused with a
// typed error before anything is sent.
func TestSetMaxThinkingTokensShapes(t *testing.T) {
	ctx := testCtx(t)
	s, bodies := controlFake(t, nil)
	if err := s.SetMaxThinkingTokens(ctx, 2048); err != nil {
		t.Fatal(err)
	}
	if b := <-bodies; b != `{"subtype":"set_max_thinking_tokens","max_thinking_tokens":2048}` {
		t.Errorf("SetMaxThinkingTokens(ctx, 2048) sent %s", b)
	}
	if err := s.SetMaxThinkingTokens(ctx, 0, claude.ThinkingDisplayOmitted); err != nil {
		t.Fatal(err)
	}
	if b := <-bodies; b != `{"subtype":"set_max_thinking_tokens","max_thinking_tokens":null,"thinking_display":"omitted"}` {
		t.Errorf("SetMaxThinkingTokens(ctx, 0, omitted) sent %s", b)
	}
	err := s.SetMaxThinkingTokens(ctx, 1, claude.ThinkingDisplayOmitted, claude.ThinkingDisplaySummarized)
	var ae *claude.ArgumentError
	if !errors.Is(err, claude.ErrInvalidArgument) || !errors.As(err, &ae) || ae.Call != "SetMaxThinkingTokens" {
		t.Errorf("two displays: err = %v, want an *ArgumentError matching ErrInvalidArgument", err)
	}
	// Nothing was sent for the refused call: the next request is the
	// next one the CLI reads.
	if err := s.Interrupt(ctx); err != nil {
		t.Fatal(err)
	}
	if b := <-bodies; b != `{"subtype":"interrupt"}` {
		t.Errorf("after the refused call the CLI read %s", b)
	}
}

// TestSetPermissionModeWith: the mode the CLI says is in effect (it may
// differ from the one asked for) is returned; SetPermissionMode, the
// older form, sends the same request. An answer with no payload (which
// the SDK allows of other hosts) gives an empty Mode.
func TestSetPermissionModeWith(t *testing.T) {
	ctx := testCtx(t)
	answers := make(chan any, 3)
	answers <- map[string]any{"mode": "default"}
	answers <- map[string]any{}
	answers <- map[string]any{"mode": "acceptEdits"}
	s, bodies := controlFake(t, func(*claudetest.Line) any { return <-answers })
	r, err := s.SetPermissionModeWith(ctx, &claude.SetPermissionModeParams{Mode: claude.PermissionModePlan})
	if err != nil || r.Mode != claude.PermissionModeDefault || string(r.Raw) != `{"mode":"default"}` {
		t.Errorf("SetPermissionModeWith(plan) = %+v, %v; want the mode in effect, default", r, err)
	}
	if b := <-bodies; b != `{"subtype":"set_permission_mode","mode":"plan"}` {
		t.Errorf("request = %s", b)
	}
	if r, err := s.SetPermissionModeWith(ctx, &claude.SetPermissionModeParams{Mode: claude.PermissionModePlan}); err != nil || r.Mode != "" {
		t.Errorf("an answer without a mode = %+v, %v; want an empty Mode", r, err)
	}
	<-bodies
	if err := s.SetPermissionMode(ctx, claude.PermissionModeAcceptEdits); err != nil {
		t.Errorf("SetPermissionMode = %v", err)
	}
	if b := <-bodies; b != `{"subtype":"set_permission_mode","mode":"acceptEdits"}` {
		t.Errorf("SetPermissionMode request = %s", b)
	}
}
