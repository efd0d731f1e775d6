package claude_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
)

// A permission callback reads the built-in tools' inputs as Go values and
// answers the model's questions. Here the fake CLI asks about a command
// and a question; the callback refuses the command and picks an answer.
func ExampleDecodeToolInput() {
	ctx := context.Background()
	canUseTool := func(ctx context.Context, req *claude.ToolPermissionRequest) (claude.PermissionResult, error) {
		in, err := claude.DecodeToolInput(req.ToolName, req.Input)
		if err != nil {
			return nil, err
		}
		switch in := in.(type) {
		case *claude.BashInput:
			if strings.HasPrefix(in.Command, "rm ") {
				return &claude.PermissionDeny{Message: "no deleting"}, nil
			}
		case *claude.AskUserQuestionInput:
			q := in.Questions[0]
			fmt.Printf("%s %d options\n", q.Question, len(q.Options))
			return claude.AnswerQuestions(req, map[string]string{q.Question: q.Options[1].Label})
		}
		return &claude.PermissionAllow{}, nil
	}
	done := make(chan struct{})
	script := func(ctx context.Context, c *claudetest.CLI) error {
		defer close(done)
		if _, err := c.HandleInitialize(ctx); err != nil {
			return err
		}
		answer, err := c.CanUseTool(ctx, "toolu_1", "Bash", map[string]string{"command": "rm -rf build"})
		if err != nil {
			return err
		}
		fmt.Println("Bash:", string(answer))
		answer, err = c.CanUseTool(ctx, "toolu_2", "AskUserQuestion", json.RawMessage(`{"questions":[{"question":"Which database?","header":"DB",`+
			`"options":[{"label":"SQLite","description":"a file"},{"label":"Postgres","description":"a server"}],"multiSelect":false}]}`))
		if err != nil {
			return err
		}
		var allow struct {
			UpdatedInput claude.AskUserQuestionInput `json:"updatedInput"`
		}
		json.Unmarshal(answer, &allow)
		fmt.Println("AskUserQuestion:", allow.UpdatedInput.Answers)
		return nil
	}
	s, err := claude.Connect(ctx, &claude.Options{CanUseTool: canUseTool, Transport: &claudetest.FakeCLI{Script: script}})
	if err != nil {
		fmt.Println(err)
		return
	}
	<-done // the fake CLI has asked both
	s.Close()
	// Output:
	// Bash: {"behavior":"deny","message":"no deleting"}
	// Which database? 2 options
	// AskUserQuestion: map[Which database?:Postgres]
}
