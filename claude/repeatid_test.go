package claude_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
	"github.com/tetherhq/tether/internal/control"
)

// msgWatch is a slog handler that signals when a record with a given
// message is logged.
type msgWatch struct {
	msg  string
	once sync.Once
	seen chan struct{}
}

func (w *msgWatch) Enabled(context.Context, slog.Level) bool { return true }
func (w *msgWatch) Handle(_ context.Context, r slog.Record) error {
	if strings.Contains(r.Message, w.msg) {
		w.once.Do(func() { close(w.seen) })
	}
	return nil
}
func (w *msgWatch) WithAttrs([]slog.Attr) slog.Handler { return w }
func (w *msgWatch) WithGroup(string) slog.Handler      { return w }

// TestRepeatedRequestIDAnswered: a control_request whose request_id
// repeats an earlier one is answered, with the first answer's very bytes,
// and its callback runs once: a repeat that comes while the first is
// being served (the permission callback is still deciding), and one that
// comes after it was answered. Before, a repeat got no answer and the CLI
// waited for it forever.
func TestRepeatedRequestIDAnswered(t *testing.T) {
	var perms, hooks atomic.Int32
	release := make(chan struct{})
	watch := &msgWatch{msg: "repeated while being served", seen: make(chan struct{})}
	opts := hooksFor(claude.HookEventPreToolUse, func(context.Context, *claude.HookInput) (*claude.HookOutput, error) {
		hooks.Add(1)
		return &claude.HookOutput{SystemMessage: "checked"}, nil
	})
	opts.Logger = slog.New(watch)
	opts.CanUseTool = func(ctx context.Context, req *claude.ToolPermissionRequest) (claude.PermissionResult, error) {
		perms.Add(1)
		select {
		case <-release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return &claude.PermissionAllow{UpdatedInput: req.Input}, nil
	}

	perm := mustBody("can_use_tool", map[string]any{"tool_name": "Bash", "input": map[string]any{"command": "ls"}, "tool_use_id": "toolu_1"})
	hook := mustBody("hook_callback", map[string]any{"callback_id": "hook_0", "tool_use_id": "toolu_1",
		"input": map[string]any{"hook_event_name": "PreToolUse", "session_id": "s", "tool_name": "Bash", "tool_input": map[string]any{}}})
	type answers struct{ perm, hook [][]byte }
	done := make(chan answers, 1)
	// answersTo reads n answers to request id.
	answersTo := func(ctx context.Context, c *claudetest.CLI, id string, n int) ([][]byte, error) {
		var out [][]byte
		for len(out) < n {
			l, err := c.Read(ctx)
			if err != nil {
				return nil, fmt.Errorf("waiting for answer %d of %d to %s: %w", len(out)+1, n, id, err)
			}
			if l.Type != "control_response" || l.Response == nil || l.Response.RequestID != id {
				return nil, fmt.Errorf("host wrote %s, want an answer to %s", l.Raw, id)
			}
			out = append(out, l.Raw)
		}
		return out, nil
	}
	s := connect(t, opts, func(ctx context.Context, c *claudetest.CLI) error {
		if _, err := c.HandleInitialize(ctx); err != nil {
			return err
		}
		// The same permission request twice while the callback decides,
		// then once more after it has been answered.
		if err := c.Write(control.EncodeRequest("perm_1", perm), control.EncodeRequest("perm_1", perm)); err != nil {
			return err
		}
		select {
		case <-watch.seen:
		case <-ctx.Done():
			return ctx.Err()
		}
		close(release)
		var a answers
		var err error
		if a.perm, err = answersTo(ctx, c, "perm_1", 2); err != nil {
			return err
		}
		if err := c.Write(control.EncodeRequest("perm_1", perm)); err != nil {
			return err
		}
		third, err := answersTo(ctx, c, "perm_1", 1)
		if err != nil {
			return err
		}
		a.perm = append(a.perm, third...)
		// A hook callback twice in a row.
		if err := c.Write(control.EncodeRequest("hook_req_1", hook), control.EncodeRequest("hook_req_1", hook)); err != nil {
			return err
		}
		if a.hook, err = answersTo(ctx, c, "hook_req_1", 2); err != nil {
			return err
		}
		done <- a
		_, err = c.ReadUser(ctx)
		return err
	})
	ctx := testCtx(t)
	var a answers
	select {
	case a = <-done:
	case <-ctx.Done():
		t.Fatal("the fake CLI did not get an answer to every repeated request")
	}
	if err := s.Send(ctx, "done"); err != nil {
		t.Fatal(err)
	}
	for i, b := range a.perm {
		if !bytes.Equal(b, a.perm[0]) {
			t.Errorf("answer %d to perm_1 = %s, want the first one's bytes %s", i+1, b, a.perm[0])
		}
	}
	if !bytes.Contains(a.perm[0], []byte(`"behavior":"allow"`)) {
		t.Errorf("answer to perm_1 = %s, want an allow", a.perm[0])
	}
	if !bytes.Equal(a.hook[0], a.hook[1]) || !bytes.Contains(a.hook[0], []byte(`"checked"`)) {
		t.Errorf("answers to hook_req_1 = %s and %s, want the same hook output twice", a.hook[0], a.hook[1])
	}
	if n := perms.Load(); n != 1 {
		t.Errorf("CanUseTool ran %d times, want 1", n)
	}
	if n := hooks.Load(); n != 1 {
		t.Errorf("the hook ran %d times, want 1", n)
	}
}
