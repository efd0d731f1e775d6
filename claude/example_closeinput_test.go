package claude_test

import (
	"context"
	"fmt"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
)

// A batch job sends its prompts, then ends the input: the CLI finishes the
// turns it has, writes their results and exits on its own, with no
// interrupt. Receive delivers everything up to the end; Wait says how the
// CLI exited.
func ExampleSession_CloseInput() {
	ctx := context.Background()
	s, err := claude.Connect(ctx, &claude.Options{Transport: &claudetest.FakeCLI{Script: claudetest.Echo}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	if err := s.Send(ctx, "summarize the log"); err != nil {
		fmt.Println(err)
		return
	}
	done := make(chan error, 1)
	go func() { done <- s.CloseInput(ctx) }()
	for msg, err := range s.Receive(ctx) {
		if err != nil {
			fmt.Println(err)
			return
		}
		if r, ok := msg.(*claude.ResultMessage); ok {
			fmt.Println("result:", r.Result)
		}
	}
	fmt.Println("CloseInput:", <-done)
	fmt.Println("exit:", s.Wait())
	// Output:
	// result: echo: summarize the log
	// CloseInput: <nil>
	// exit: <nil>
}
