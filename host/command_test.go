package host_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
	"github.com/tetherhq/tether/host"
)

// Malformed commands are refused with a stable code before anything
// runs; the policy's rules apply to every command.
func TestCommandValidate(t *testing.T) {
	big := strings.Repeat("A", 8<<10)
	for _, tc := range []struct {
		cmd    host.Command
		policy *host.CommandPolicy
		code   string
	}{
		{host.Command{}, nil, host.CodeBadRequest},
		{host.Command{Type: "format_disk"}, nil, host.CodeUnknownType},
		{host.Command{Type: host.CommandSend}, nil, host.CodeBadRequest},
		{host.Command{Type: host.CommandSend, Text: "  "}, nil, host.CodeBadRequest},
		{host.Command{Type: host.CommandSend, Images: []host.Image{{MediaType: "image/svg+xml", Data: "aGk="}}}, nil, host.CodeBadRequest},
		{host.Command{Type: host.CommandSend, Images: []host.Image{{MediaType: "image/png", Data: "%%%"}}}, nil, host.CodeBadRequest},
		{host.Command{Type: host.CommandSend, Images: []host.Image{{MediaType: "image/png", Data: big}}}, &host.CommandPolicy{MaxImageBytes: 1024}, host.CodeBadRequest},
		{host.Command{Type: host.CommandAnswer, Behavior: "allow"}, nil, host.CodeBadRequest},
		{host.Command{Type: host.CommandAnswer, Approval: "a", Behavior: "maybe"}, nil, host.CodeBadRequest},
		{host.Command{Type: host.CommandCancel}, nil, host.CodeBadRequest},
		{host.Command{Type: host.CommandSetMode}, nil, host.CodeBadRequest},
		{host.Command{Type: host.CommandSetMode, Mode: "yolo"}, nil, host.CodeBadRequest},
		{host.Command{Type: host.CommandSetMode, Mode: "bypassPermissions"}, nil, host.CodeForbidden},
		{host.Command{Type: host.CommandSetMode, Mode: "bypassPermissions"}, &host.CommandPolicy{AllowBypassPermissions: true}, ""},
		{host.Command{Type: host.CommandSend, Text: "hi"}, nil, ""},
		{host.Command{Type: host.CommandAnswer, Approval: "a", Answers: map[string]string{"q": "a"}}, nil, ""},
	} {
		err := tc.cmd.Validate(tc.policy)
		if got := host.ErrorCode(err); got != tc.code {
			t.Errorf("%+v: %v (code %q), want code %q", tc.cmd, err, got, tc.code)
		}
		if tc.code == host.CodeBadRequest && !errors.Is(err, host.ErrBadCommand) {
			t.Errorf("%+v: %v does not match ErrBadCommand", tc.cmd, err)
		}
	}
}

// ErrorCode names every sentinel a command can end with.
func TestErrorCode(t *testing.T) {
	for err, want := range map[error]string{
		nil: "", host.ErrAlreadyAnswered: host.CodeAlreadyAnswered, host.ErrNoApproval: host.CodeNoApproval,
		host.ErrWithdrawn: host.CodeWithdrawn, host.ErrNotAQuestion: host.CodeNotAQuestion, host.ErrNotQueued: host.CodeNotQueued,
		claude.ErrClosed: host.CodeSessionClosed, host.ErrManagerClosed: host.CodeSessionClosed, context.DeadlineExceeded: host.CodeTimeout,
		host.ErrBusy: host.CodeBusy, errors.New("boom"): host.CodeInternal,
	} {
		if got := host.ErrorCode(fmt.Errorf("wrapped: %w", err)); err != nil && got != want {
			t.Errorf("%v: %q, want %q", err, got, want)
		}
	}
}

// Do runs the command set on a live session: a send, the answer of its
// approval (once), and the policy's Authorize sees every command, a
// panicking one refusing it.
func TestDo(t *testing.T) {
	ctx := testCtx(t)
	answer := make(chan json.RawMessage, 1)
	var seen []host.CommandType
	refuse := ""
	o := &host.Options{Commands: &host.CommandPolicy{Authorize: func(ctx context.Context, s *host.Session, c *host.Command) error {
		seen = append(seen, c.Type)
		switch {
		case c.Type == host.CommandSetModel && refuse == "panic":
			panic("a bug in the hook")
		case c.Type == host.CommandSetModel && refuse != "":
			return errors.New(refuse)
		}
		return nil
	}}}
	s, l := start(t, o, toolTurn("Bash", map[string]string{"command": "ls"}, answer))
	res, err := s.Do(ctx, &host.Command{Type: host.CommandSend, Text: "list", UUID: "11111111-2222-4333-8444-555555555555"})
	if err != nil || res.UUID != "11111111-2222-4333-8444-555555555555" {
		t.Fatalf("send: %+v, %v", res, err)
	}
	a := l.waitState(t, ctx, host.StateAwaitingApproval).Approval
	if _, err := s.Do(ctx, &host.Command{Type: host.CommandAnswer, Approval: a.ID(), Behavior: "allow", Actor: "Alice Example"}); err != nil {
		t.Fatal(err)
	}
	// The answer is journaled with who gave it (the front end's Actor).
	var resolved host.ApprovalResolved
	for e, err := range s.Events(ctx, 0) {
		if err != nil {
			t.Fatal(err)
		}
		if e.Kind == host.EventApprovalResolved {
			if err := json.Unmarshal(e.Data, &resolved); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	if resolved.ID != a.ID() || resolved.AnsweredBy != "Alice Example" || !strings.Contains(string(mustJSON(t, resolved)), `"answered_by":"Alice Example"`) {
		t.Fatalf("approval_resolved %+v, want answered_by Alice Example", resolved)
	}
	// A client cannot name the actor: it is not part of a command's JSON.
	var forged host.Command
	if err := json.Unmarshal([]byte(`{"type":"answer","approval":"x","behavior":"allow","Actor":"Mallory","actor":"Mallory"}`), &forged); err != nil || forged.Actor != "" {
		t.Fatalf("a command's JSON set Actor %q (%v)", forged.Actor, err)
	}
	_, err = s.Do(ctx, &host.Command{Type: host.CommandAnswer, Approval: a.ID(), Behavior: "deny"})
	if host.ErrorCode(err) != host.CodeAlreadyAnswered {
		t.Fatalf("second answer: %v", err)
	}
	if resp := <-answer; !strings.Contains(string(resp), `"allow"`) {
		t.Fatalf("the CLI got %s", resp)
	}
	for _, r := range []string{"not you", "panic"} {
		refuse = r
		_, err = s.Do(ctx, &host.Command{Type: host.CommandSetModel, Model: "m"})
		var ce *host.CommandError
		if !errors.As(err, &ce) || ce.Code != host.CodeForbidden || !errors.Is(err, host.ErrForbidden) {
			t.Fatalf("Authorize %s: %v, want forbidden", r, err)
		}
	}
	if _, err := s.Do(ctx, &host.Command{Type: host.CommandResume}); host.ErrorCode(err) != host.CodeBadRequest {
		t.Fatalf("resume on a session: %v", err)
	}
	if _, err := s.Do(ctx, &host.Command{Type: host.CommandClose}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Do(ctx, &host.Command{Type: host.CommandSend, Text: "again"}); host.ErrorCode(err) != host.CodeSessionClosed {
		t.Fatalf("send after close: %v", err)
	}
	want := []host.CommandType{"send", "answer", "answer", "set_model", "set_model", "close", "send"}
	if fmt.Sprint(seen) != fmt.Sprint(want) {
		t.Fatalf("Authorize saw %v, want %v", seen, want)
	}
}

// Lanes: a person's Stop and answers never queue behind prompts.
func TestCommandLanes(t *testing.T) {
	for typ, want := range map[host.CommandType]host.Lane{
		host.CommandInterrupt: host.LaneQuick, host.CommandForceInterrupt: host.LaneQuick, host.CommandAnswer: host.LaneQuick,
		host.CommandSend: host.LaneOrdered, host.CommandCancel: host.LaneOrdered, host.CommandSetMode: host.LaneOrdered,
		host.CommandSetModel: host.LaneOrdered, host.CommandClose: host.LaneOrdered, host.CommandResume: host.LaneOrdered,
	} {
		if got := (&host.Command{Type: typ}).Lane(); got != want {
			t.Errorf("%s: lane %v, want %v", typ, got, want)
		}
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// slash_commands answers with the CLI's answer to initialize, then with
// what system/commands_changed says (the CLI reloaded its plugins).
func TestSlashCommandsChanged(t *testing.T) {
	changed := make(chan struct{})
	s, _ := start(t, nil, func(ctx context.Context, c *claudetest.CLI) error {
		if _, err := c.HandleInitialize(ctx); err != nil {
			return err
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
		c.Write(claudetest.Msg{"type": "system", "subtype": "commands_changed", "session_id": c.SessionID(), "uuid": "cc1",
			"commands": []any{map[string]any{"name": "deploy", "description": "Ship it", "argumentHint": "<env>"}}})
		_, err := c.ReadUser(ctx)
		return err
	})
	ctx := testCtx(t)
	list := func() []claude.SlashCommand {
		t.Helper()
		res, err := s.Do(ctx, &host.Command{Type: host.CommandSlashCommands})
		if err != nil {
			t.Fatalf("slash_commands: %v", err)
		}
		return res.SlashCommands
	}
	if got := list(); len(got) != 1 || got[0].Name != "cost" || got[0].Description != "Show the total cost" {
		t.Errorf("from initialize: %+v", got)
	}
	close(changed)
	for {
		if got := list(); len(got) == 1 && got[0].Name == "deploy" {
			if got[0].ArgumentHint != "<env>" {
				t.Errorf("after commands_changed: %+v", got)
			}
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("commands_changed never applied: %+v", list())
		case <-time.After(5 * time.Millisecond):
		}
	}
	if (&host.Command{Type: host.CommandSlashCommands}).Lane() != host.LaneQuick {
		t.Error("slash_commands waits in the ordered lane behind prompts")
	}
}
