package claude_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
)

// elicitAnswers sends each request body as an elicitation and reports
// the CLI-side answers, in order.
func elicitAnswers(t *testing.T, opts *claude.Options, bodies ...any) []string {
	t.Helper()
	answers := make(chan string, len(bodies))
	s := connect(t, opts, func(ctx context.Context, c *claudetest.CLI) error {
		if _, err := c.HandleInitialize(ctx); err != nil {
			return err
		}
		for _, b := range bodies {
			raw, err := c.Request(ctx, "elicitation", b)
			if err != nil {
				answers <- "error: " + err.Error()
				continue
			}
			answers <- string(raw)
		}
		_, err := c.ReadUser(ctx)
		return err
	})
	defer s.Close()
	var out []string
	for range bodies {
		out = append(out, <-answers)
	}
	return out
}

func TestElicitation(t *testing.T) {
	form := map[string]any{
		"mcp_server_name": "deploy", "message": "Which environment?", "mode": "form",
		"requested_schema": map[string]any{"type": "object", "properties": map[string]any{"env": map[string]any{"type": "string"}}},
		"property_order":   []string{"env"}, "title": "Deploy",
	}
	// Without a callback every request is declined.
	got := elicitAnswers(t, &claude.Options{}, form)
	if got[0] != `{"action":"decline"}` {
		t.Errorf("no callback: %s", got[0])
	}

	var seen []*claude.ElicitationRequest
	calls := 0
	opts := &claude.Options{OnElicitation: func(ctx context.Context, req *claude.ElicitationRequest) (*claude.ElicitationResult, error) {
		calls++
		seen = append(seen, req)
		switch calls {
		case 1:
			return &claude.ElicitationResult{Action: claude.ElicitationAccept, Content: json.RawMessage(`{"env":"staging"}`)}, nil
		case 2:
			return nil, nil // declines
		case 3:
			return nil, errors.New("no person at the keyboard")
		case 4:
			return &claude.ElicitationResult{Action: "maybe"}, nil
		default:
			panic("callback bug")
		}
	}}
	url := map[string]any{"mcp_server_name": "auth", "message": "Sign in", "mode": "url", "url": "https://example.com/login", "elicitation_id": "el-1"}
	got = elicitAnswers(t, opts, form, url, form, form, form)
	want := []string{`{"action":"accept","content":{"env":"staging"}}`, `{"action":"decline"}`, "error: ", "error: ", "error: "}
	for i := range want {
		if want[i] == "error: " {
			if len(got[i]) < 7 || got[i][:7] != "error: " {
				t.Errorf("answer %d = %s, want an error", i, got[i])
			}
			continue
		}
		if got[i] != want[i] {
			t.Errorf("answer %d = %s, want %s", i, got[i], want[i])
		}
	}
	if r := seen[0]; r.ServerName != "deploy" || r.Message != "Which environment?" || r.Mode != "form" || r.Title != "Deploy" ||
		len(r.PropertyOrder) != 1 || len(r.RequestedSchema) == 0 || r.RequestID == "" || len(r.Raw) == 0 {
		t.Errorf("form request = %+v", r)
	}
	if r := seen[1]; r.Mode != "url" || r.URL != "https://example.com/login" || r.ElicitationID != "el-1" {
		t.Errorf("url request = %+v", r)
	}
}

func TestUserDialog(t *testing.T) {
	answers := make(chan string, 3)
	var got []*claude.UserDialogRequest
	n := 0
	opts := &claude.Options{
		SupportedDialogKinds: []string{"pick_color"},
		OnUserDialog: func(ctx context.Context, req *claude.UserDialogRequest) (*claude.UserDialogResult, error) {
			got = append(got, req)
			n++
			if n == 1 {
				return &claude.UserDialogResult{Completed: true, Result: json.RawMessage(`{"color":"blue"}`)}, nil
			}
			return nil, nil
		},
	}
	s := connect(t, opts, func(ctx context.Context, c *claudetest.CLI) error {
		init, err := c.HandleInitialize(ctx)
		if err != nil {
			return err
		}
		var ir struct {
			Kinds []string `json:"supportedDialogKinds"`
		}
		json.Unmarshal(init, &ir)
		answers <- fmt.Sprint(ir.Kinds)
		for range 2 {
			raw, err := c.Request(ctx, "request_user_dialog", map[string]any{"dialog_kind": "pick_color", "payload": map[string]any{"choices": []string{"red", "blue"}}, "tool_use_id": "toolu_1"})
			if err != nil {
				return err
			}
			answers <- string(raw)
		}
		_, err = c.ReadUser(ctx)
		return err
	})
	defer s.Close()
	for _, want := range []string{"[pick_color]", `{"behavior":"completed","result":{"color":"blue"}}`, `{"behavior":"cancelled"}`} {
		if a := <-answers; a != want {
			t.Errorf("got %s, want %s", a, want)
		}
	}
	if r := got[0]; r.DialogKind != "pick_color" || r.ToolUseID != "toolu_1" || string(r.Payload) != `{"choices":["red","blue"]}` {
		t.Errorf("request = %+v", r)
	}
}

// Without OnUserDialog a dialog is not answered (an answer would count as
// the user's), until the CLI withdraws it.
func TestUserDialogUnanswered(t *testing.T) {
	done := make(chan error, 1)
	s := connect(t, &claude.Options{}, func(ctx context.Context, c *claudetest.CLI) error {
		if _, err := c.HandleInitialize(ctx); err != nil {
			return err
		}
		id, ch, err := c.SendRequest("request_user_dialog", map[string]any{"dialog_kind": "pick_color", "payload": map[string]any{}})
		if err != nil {
			return err
		}
		// The host answers the next request (an elicitation) while the
		// dialog stays unanswered: it was not dropped, it is pending.
		if _, err := c.Request(ctx, "elicitation", map[string]any{"mcp_server_name": "x", "message": "m"}); err != nil {
			return err
		}
		select {
		case r := <-ch:
			done <- fmt.Errorf("the dialog was answered: %+v", r)
		default:
			done <- c.Cancel(id)
		}
		_, err = c.ReadUser(ctx)
		return err
	})
	defer s.Close()
	if err := <-done; err != nil {
		t.Error(err)
	}
}
