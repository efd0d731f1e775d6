package claude_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
)

// Weather is the answer the examples ask for. The jsonschema tags become
// the properties' descriptions, which the model reads.
type Weather struct {
	City  string   `json:"city" jsonschema:"the city the forecast is for"`
	TempC float64  `json:"temp_c" jsonschema:"the temperature in degrees Celsius"`
	Notes []string `json:"notes,omitempty"`
}

// Structured output: ask for a Go type, get a Go value. The schema comes
// from the type; the CLI makes the model answer with a StructuredOutput
// tool call that fits it, checks it, and puts it in the result.
func ExampleDecodeOutput() {
	ctx := context.Background()
	schema, err := claude.JSONSchemaFor[Weather]()
	if err != nil {
		fmt.Println(err)
		return
	}
	opts := &claude.Options{
		JSONSchema: schema,
		Transport:  &claudetest.FakeCLI{Script: weatherCLI}, // drop this to ask the real CLI
	}
	for msg, err := range claude.Query(ctx, "What's the weather in Oslo?", opts) {
		if err != nil {
			fmt.Println("error:", err)
			return
		}
		if r, ok := msg.(*claude.ResultMessage); ok {
			w, err := claude.DecodeOutput[Weather](r)
			if errors.Is(err, claude.ErrNoStructuredOutput) {
				fmt.Println("the model answered in plain text:", r.Result)
				return
			}
			if err != nil {
				fmt.Println(err)
				return
			}
			fmt.Printf("%s: %.1f°C\n", w.City, w.TempC)
		}
	}
	// Output:
	// Oslo: -3.5°C
}

func ExampleJSONSchemaFor() {
	schema, err := claude.JSONSchemaFor[Weather]()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(string(schema))
	// Output:
	// {"type":"object","properties":{"city":{"type":"string","description":"the city the forecast is for"},"temp_c":{"type":"number","description":"the temperature in degrees Celsius"},"notes":{"type":["null","array"],"items":{"type":"string"}}},"required":["city","temp_c"],"additionalProperties":false}
}

// weatherCLI plays a CLI whose model answers with a StructuredOutput
// tool call when the host asked for structured output, and in plain text
// when it did not.
func weatherCLI(ctx context.Context, c *claudetest.CLI) error {
	req, err := c.HandleInitialize(ctx)
	if err != nil {
		return err
	}
	var init struct {
		JSONSchema json.RawMessage `json:"jsonSchema"`
	}
	if err := json.Unmarshal(req, &init); err != nil {
		return err
	}
	if _, err := c.ReadUser(ctx); err != nil {
		return err
	}
	if init.JSONSchema == nil {
		return c.Write(c.SystemInit(), c.AssistantText("It's cold."), c.ResultSuccess("It's cold."))
	}
	out := map[string]any{"city": "Oslo", "temp_c": -3.5}
	text, _ := json.Marshal(out)
	return c.Write(
		c.SystemInit(),
		c.AssistantToolUse("toolu_1", "StructuredOutput", out),
		c.ToolResult("toolu_1", "Structured output provided successfully", false),
		c.ResultSuccess(string(text)).With("structured_output", out).With("stop_reason", "tool_use"),
	)
}
