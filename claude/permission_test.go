package claude_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
)

var askInput = json.RawMessage(`{"questions":[{"question":"Which colour?","header":"Colour","options":[` +
	`{"label":"Red","description":"warm"},{"label":"Blue","description":"cool","preview":"<b>blue</b>"}],"multiSelect":false},` +
	`{"question":"Which sizes?","header":"Size","options":[{"label":"S","description":"small"},{"label":"L","description":"large"}],"multiSelect":true}],` +
	`"metadata":{"source":"test"}}`)

func TestQuestions(t *testing.T) {
	req := &claude.ToolPermissionRequest{ToolName: "AskUserQuestion", Input: askInput}
	qs, err := req.Questions()
	if err != nil {
		t.Fatal(err)
	}
	want := []claude.Question{
		{Question: "Which colour?", Header: "Colour", Options: []claude.QuestionOption{
			{Label: "Red", Description: "warm"}, {Label: "Blue", Description: "cool", Preview: "<b>blue</b>"}}},
		{Question: "Which sizes?", Header: "Size", MultiSelect: true, Options: []claude.QuestionOption{
			{Label: "S", Description: "small"}, {Label: "L", Description: "large"}}},
	}
	if diff := cmp.Diff(want, qs); diff != "" {
		t.Errorf("questions (-want +got):\n%s", diff)
	}

	if _, err := (&claude.ToolPermissionRequest{ToolName: "Bash", Input: json.RawMessage(`{"command":"ls"}`)}).Questions(); err == nil {
		t.Error("Questions of a Bash request: no error")
	}
	if _, err := (&claude.ToolPermissionRequest{ToolName: "AskUserQuestion", Input: json.RawMessage(`{"questions":"what?"}`)}).Questions(); err == nil {
		t.Error("Questions of a malformed input: no error")
	}
}

// What the CLI receives: an allow whose updatedInput carries the
// questions and the answers.
func TestAnswerQuestionsOnTheWire(t *testing.T) {
	done := make(chan json.RawMessage, 1)
	connect(t, &claude.Options{CanUseTool: func(ctx context.Context, r *claude.ToolPermissionRequest) (claude.PermissionResult, error) {
		qs, err := r.Questions()
		if err != nil {
			return nil, err
		}
		return claude.AnswerQuestions(r, map[string]string{qs[0].Question: qs[0].Options[1].Label})
	}}, func(ctx context.Context, c *claudetest.CLI) error {
		if _, err := c.HandleInitialize(ctx); err != nil {
			return err
		}
		resp, err := c.CanUseTool(ctx, "toolu_ask", "AskUserQuestion", askInput)
		if err != nil {
			return err
		}
		done <- resp
		_, err = c.ReadUser(ctx)
		return err
	})
	resp := <-done
	var got map[string]any
	if err := json.Unmarshal(resp, &got); err != nil {
		t.Fatal(err)
	}
	var in map[string]any
	json.Unmarshal(askInput, &in)
	in["answers"] = map[string]any{"Which colour?": "Blue"}
	if diff := cmp.Diff(map[string]any{"behavior": "allow", "updatedInput": in}, got); diff != "" {
		t.Errorf("answer (-want +got):\n%s", diff)
	}
}

func ExampleAnswerQuestions() {
	opts := &claude.Options{
		CanUseTool: func(ctx context.Context, req *claude.ToolPermissionRequest) (claude.PermissionResult, error) {
			if req.ToolName != "AskUserQuestion" {
				return &claude.PermissionAllow{}, nil
			}
			qs, err := req.Questions()
			if err != nil {
				return nil, err
			}
			// Pick each question's first option; a real host would ask
			// a person.
			answers := map[string]string{}
			for _, q := range qs {
				if len(q.Options) > 0 {
					answers[q.Question] = q.Options[0].Label
				}
			}
			return claude.AnswerQuestions(req, answers)
		},
	}
	_ = opts
}

// TestPermissionFieldsOnTheWire checks the can_use_tool fields the
// TypeScript SDK declares past the basic ones, both ways: the request's
// UI hints reach the callback, and the answer's toolUseID and
// decisionClassification reach the CLI.
func TestPermissionFieldsOnTheWire(t *testing.T) {
	reqs := make(chan *claude.ToolPermissionRequest, 2)
	answers := make(chan json.RawMessage, 2)
	connect(t, &claude.Options{CanUseTool: func(ctx context.Context, r *claude.ToolPermissionRequest) (claude.PermissionResult, error) {
		reqs <- r
		if r.ToolName == "Bash" {
			return &claude.PermissionAllow{ToolUseID: r.ToolUseID, DecisionClassification: claude.DecisionUserTemporary}, nil
		}
		return &claude.PermissionDeny{Message: "no", ToolUseID: r.ToolUseID, DecisionClassification: claude.DecisionUserReject}, nil
	}}, func(ctx context.Context, c *claudetest.CLI) error {
		if _, err := c.HandleInitialize(ctx); err != nil {
			return err
		}
		for _, body := range []claudetest.Msg{
			{"tool_name": "Bash", "tool_use_id": "toolu_1", "input": map[string]any{"command": "ls"},
				"suppress_always_allow_rule": true, "default_to_no": true, "requires_user_interaction": true,
				"matched_ask_rule": map[string]any{"source": "userSettings", "tool_name": "Bash", "rule_content": "ls *"}},
			{"tool_name": "Write", "tool_use_id": "toolu_2", "input": map[string]any{"file_path": "/x"}},
		} {
			resp, err := c.Request(ctx, "can_use_tool", body)
			if err != nil {
				return err
			}
			answers <- resp
		}
		return nil
	})
	r := <-reqs
	if !r.SuppressAlwaysAllowRule || !r.DefaultToNo || !r.RequiresUserInteraction ||
		r.MatchedAskRule == nil || *r.MatchedAskRule != (claude.MatchedAskRule{Source: "userSettings", ToolName: "Bash", RuleContent: "ls *"}) {
		t.Errorf("request = %+v (matched %+v), want every hint set", r, r.MatchedAskRule)
	}
	for _, want := range []map[string]any{
		{"behavior": "allow", "updatedInput": map[string]any{"command": "ls"}, "toolUseID": "toolu_1", "decisionClassification": "user_temporary"},
		{"behavior": "deny", "message": "no", "toolUseID": "toolu_2", "decisionClassification": "user_reject"},
	} {
		var got map[string]any
		if err := json.Unmarshal(<-answers, &got); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("answer (-want +got):\n%s", diff)
		}
	}
}

// TestCanUseToolTypedNil: a CanUseTool that returns a nil
// *PermissionAllow has given no answer; the CLI is told so, in an error
// answer that says it, not in the message of a recovered panic.
func TestCanUseToolTypedNil(t *testing.T) {
	errs := make(chan error, 1)
	connect(t, &claude.Options{CanUseTool: func(ctx context.Context, r *claude.ToolPermissionRequest) (claude.PermissionResult, error) {
		var none *claude.PermissionAllow
		return none, nil
	}}, func(ctx context.Context, c *claudetest.CLI) error {
		if _, err := c.HandleInitialize(ctx); err != nil {
			return err
		}
		_, err := c.Request(ctx, "can_use_tool", claudetest.Msg{"tool_name": "Bash", "tool_use_id": "toolu_1", "input": map[string]any{"command": "ls"}})
		errs <- err
		return nil
	})
	if err := <-errs; err == nil || !strings.Contains(err.Error(), "CanUseTool returned no result") || strings.Contains(err.Error(), "panicked") {
		t.Errorf("the CLI got %v, want an error saying CanUseTool returned no result", err)
	}
}
