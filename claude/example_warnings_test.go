package claude_test

import (
	"context"
	"fmt"

	"github.com/tetherhq/tether/claude"
)

// OptionWarnings tells a program, before it connects, that its CanUseTool
// will never see some tool calls.
func ExampleOptionWarnings() {
	opts := &claude.Options{
		AllowedTools: []string{"Bash", "Read(./docs/**)"},
		CanUseTool: func(ctx context.Context, req *claude.ToolPermissionRequest) (claude.PermissionResult, error) {
			return &claude.PermissionDeny{Message: "ask me first"}, nil
		},
	}
	for _, w := range claude.OptionWarnings(opts) {
		fmt.Println(w.Option, w.Tools)
	}
	// Output:
	// AllowedTools [Bash]
}
