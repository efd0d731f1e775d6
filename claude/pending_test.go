package claude_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
	"github.com/tetherhq/tether/internal/control"
)

// pendingLine is a control_request line as the CLI lists it in its answer
// to initialize.
func pendingLine(id, subtype string, body map[string]any) json.RawMessage {
	body["subtype"] = subtype
	b, _ := json.Marshal(map[string]any{"type": "control_request", "request_id": id, "request": body})
	return b
}

// TestPendingRequestsRedelivered: the requests an initialize answer lists
// as pending reach the same callbacks as live ones and get the same
// answers; one listed twice, or listed and then sent live, is served once
// (sent live, it gets the same answer again, byte for byte); entries of
// the wrong kind are ignored.
func TestPendingRequestsRedelivered(t *testing.T) {
	perm := map[string]any{"tool_name": "Bash", "input": map[string]any{"command": "ls"}, "tool_use_id": "toolu_1"}
	dialog := map[string]any{"dialog_kind": "confirm", "payload": map[string]any{"text": "Sure?"}}
	elicit := map[string]any{"mcp_server_name": "deploy", "message": "Which environment?"}
	clone := func(m map[string]any) map[string]any {
		c := map[string]any{}
		for k, v := range m {
			c[k] = v
		}
		return c
	}

	var mu sync.Mutex
	calls := map[string]int{}
	count := func(id string) {
		mu.Lock()
		calls[id]++
		mu.Unlock()
	}
	opts := &claude.Options{
		CanUseTool: func(ctx context.Context, req *claude.ToolPermissionRequest) (claude.PermissionResult, error) {
			count(req.RequestID)
			return &claude.PermissionDeny{Message: "not " + req.ToolName}, nil
		},
		OnUserDialog: func(ctx context.Context, req *claude.UserDialogRequest) (*claude.UserDialogResult, error) {
			count(req.RequestID)
			return &claude.UserDialogResult{Completed: true, Result: json.RawMessage(`{"ok":true}`)}, nil
		},
		SupportedDialogKinds: []string{"confirm"},
		OnElicitation: func(ctx context.Context, req *claude.ElicitationRequest) (*claude.ElicitationResult, error) {
			count(req.RequestID)
			return &claude.ElicitationResult{Action: claude.ElicitationAccept, Content: json.RawMessage(`{"env":"prod"}`)}, nil
		},
	}

	answers := make(chan map[string]string, 1)
	live := make(chan map[string]string, 1)
	scripted := make(chan struct{})
	s := connect(t, opts, func(ctx context.Context, c *claudetest.CLI) error {
		defer close(scripted)
		l, err := c.Expect(ctx, "control_request", "initialize")
		if err != nil {
			return err
		}
		// The first answer lists nothing; the second (Reinitialize) lists
		// three requests the host never saw live, one twice, and a can_use_tool
		// misfiled under dialogs.
		if err := c.Respond(l.RequestID, claudetest.InitializeResponse()); err != nil {
			return err
		}
		l, err = c.Expect(ctx, "control_request", "initialize")
		if err != nil {
			return err
		}
		body := &control.ResponseBody{
			Subtype: "success", RequestID: l.RequestID,
			Response:           json.RawMessage(`{"commands":[]}`),
			PendingPermission:  []json.RawMessage{pendingLine("p1", "can_use_tool", clone(perm)), pendingLine("p1", "can_use_tool", clone(perm))},
			PendingUserDialog:  []json.RawMessage{pendingLine("d1", "request_user_dialog", clone(dialog)), pendingLine("x1", "can_use_tool", clone(perm))},
			PendingElicitation: []json.RawMessage{pendingLine("e1", "elicitation", clone(elicit)), json.RawMessage(`{"nonsense":1}`)},
		}
		if err := c.Write(map[string]any{"type": "control_response", "response": body}); err != nil {
			return err
		}
		got := map[string]string{}
		var p1 []byte
		for len(got) < 3 {
			l, err := c.Expect(ctx, "control_response")
			if err != nil {
				return err
			}
			got[l.Response.RequestID] = string(l.Response.Response)
			if l.Response.RequestID == "p1" {
				p1 = l.Raw
			}
		}
		// p1 again, live: the same answer again, its callback not run
		// again. Then the same three live under new ids, whose answers
		// must equal the re-delivered ones.
		if err := c.Write(control.EncodeRequest("p1", mustBody("can_use_tool", perm))); err != nil {
			return err
		}
		answers <- got
		g := map[string]string{}
		for _, r := range []struct {
			sub  string
			body map[string]any
		}{{"can_use_tool", perm}, {"request_user_dialog", dialog}, {"elicitation", elicit}} {
			raw, err := c.Request(ctx, r.sub, r.body)
			if err != nil {
				return err
			}
			g[r.sub] = string(raw)
		}
		live <- g
		// The repeated p1's answer and the prompt, in either order: an
		// answer that holds up reading for long is finished by the old
		// reading goroutine while a new one goes on (handoff.go), so under
		// load it may be written after lines the host wrote later. Nothing
		// else may come.
		var sawP1, sawUser bool
		for range 2 {
			if l, err = c.Read(ctx); err != nil {
				return err
			}
			switch {
			case l.Type == "control_response" && string(l.Raw) == string(p1) && !sawP1:
				sawP1 = true
			case l.Type == "user" && !sawUser:
				sawUser = true
			default:
				return fmt.Errorf("host wrote %s; want the first answer to p1 again (%s) and the prompt, once each: a request answered once too often?", l.Raw, p1)
			}
		}
		return nil
	})
	ctx := testCtx(t)
	if _, err := s.Reinitialize(ctx); err != nil {
		t.Fatal(err)
	}
	got := <-answers
	want := <-live
	if err := s.Send(ctx, "done"); err != nil {
		t.Fatal(err)
	}
	// The script reads on until it has the repeated p1's answer, which
	// may come after the prompt: the session must not close (its close
	// interrupts first) before then.
	select {
	case <-scripted:
	case <-ctx.Done():
		t.Fatal("the fake CLI never got the repeated p1's answer and the prompt")
	}
	if len(got) != 3 || got["p1"] != want["can_use_tool"] || got["d1"] != want["request_user_dialog"] || got["e1"] != want["elicitation"] {
		t.Errorf("re-delivered answers %v, live answers %v", got, want)
	}
	if !strings.Contains(got["p1"], `"behavior":"deny"`) || !strings.Contains(got["e1"], `"prod"`) {
		t.Errorf("answers: %v", got)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, id := range []string{"p1", "d1", "e1"} {
		if calls[id] != 1 {
			t.Errorf("callback for %s ran %d times, want 1 (calls %v)", id, calls[id], calls)
		}
	}
	if calls["x1"] != 0 {
		t.Errorf("a can_use_tool listed among dialogs was served: %v", calls)
	}
}

func mustBody(subtype string, body map[string]any) json.RawMessage {
	m := map[string]any{"subtype": subtype}
	for k, v := range body {
		m[k] = v
	}
	b, err := json.Marshal(m)
	if err != nil {
		panic(fmt.Sprint(err))
	}
	return b
}
