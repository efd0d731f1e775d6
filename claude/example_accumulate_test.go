package claude_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
)

// An Accumulator shows a tool call as the model types it: the draft's
// tool input is valid JSON at every step.
func ExampleAccumulator() {
	stream := func(ctx context.Context, c *claudetest.CLI) error {
		if _, err := c.HandleInitialize(ctx); err != nil {
			return err
		}
		if _, err := c.ReadUser(ctx); err != nil {
			return err
		}
		ev := func(e string) string {
			return `{"type":"stream_event","event":` + e + `,"session_id":"s","parent_tool_use_id":null,"uuid":"u"}`
		}
		c.Write(c.SystemInit(),
			ev(`{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[]}}`),
			ev(`{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"Bash","input":{}}}`),
			ev(`{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"command\": \"git"}}`),
			ev(`{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":" log --one"}}`),
			ev(`{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"line\"}"}}`),
			c.ResultInterrupted())
		_, err := c.ReadUser(ctx)
		return ignoreEOF(err)
	}
	ctx := context.Background()
	s, err := claude.Connect(ctx, &claude.Options{Transport: &claudetest.FakeCLI{Script: stream}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	s.Send(ctx, "show the log")

	var acc claude.Accumulator
	for m := range s.ReceiveTurn(ctx) {
		d := acc.Add(m)
		if d == nil || len(d.Content) == 0 {
			continue
		}
		if tu, ok := d.Content[0].(*claude.ToolUseBlock); ok {
			var in struct{ Command string }
			json.Unmarshal(tu.Input, &in)
			fmt.Printf("%s: %q (%s)\n", tu.Name, in.Command, d.Status)
		}
	}
	// Output:
	// Bash: "" (streaming)
	// Bash: "git" (streaming)
	// Bash: "git log --one" (streaming)
	// Bash: "git log --oneline" (streaming)
	// Bash: "git log --oneline" (interrupted)
}
