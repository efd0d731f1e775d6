package claude_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
)

// The examples run against claudetest's fake CLI, so they need no CLI and
// no network. Drop the Transport option to run them against the real one.

func ExampleQuery() {
	ctx := context.Background()
	fake := &claudetest.FakeCLI{Script: claudetest.Echo}
	for msg, err := range claude.Query(ctx, "What is 2+2?", &claude.Options{Transport: fake}) {
		if err != nil {
			fmt.Println("error:", err)
			return
		}
		switch m := msg.(type) {
		case *claude.AssistantMessage:
			fmt.Println(m.Text())
		case *claude.ResultMessage:
			fmt.Printf("done in %d turn(s)\n", m.NumTurns)
		}
	}
	// Output:
	// echo: What is 2+2?
	// done in 1 turn(s)
}

func ExampleSession() {
	ctx := context.Background()
	s, err := claude.Connect(ctx, &claude.Options{Transport: &claudetest.FakeCLI{Script: claudetest.Echo}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	for _, prompt := range []string{"first", "second"} {
		if err := s.Send(ctx, prompt); err != nil {
			fmt.Println(err)
			return
		}
		for msg, err := range s.ReceiveTurn(ctx) {
			if err != nil {
				fmt.Println(err)
				return
			}
			if m, ok := msg.(*claude.AssistantMessage); ok {
				fmt.Println(m.Text())
			}
		}
	}
	// Output:
	// echo: first
	// echo: second
}

// A permission callback decides tool use in Go. Here the fake CLI asks to
// run two commands; the callback lets one through and refuses the other.
func ExampleOptions_canUseTool() {
	ctx := context.Background()
	script := func(ctx context.Context, c *claudetest.CLI) error {
		if _, err := c.HandleInitialize(ctx); err != nil {
			return err
		}
		if _, err := c.ReadUser(ctx); err != nil {
			return err
		}
		for _, cmd := range []string{"ls", "rm -rf /"} {
			answer, err := c.CanUseTool(ctx, "toolu_"+cmd, "Bash", map[string]string{"command": cmd})
			if err != nil {
				return err
			}
			var a struct{ Behavior, Message string }
			json.Unmarshal(answer, &a)
			c.Write(c.AssistantText(strings.TrimSpace(fmt.Sprintf("%s: %s %s", cmd, a.Behavior, a.Message))))
		}
		c.Write(c.ResultSuccess("done"))
		_, err := c.ReadUser(ctx)
		return ignoreEOF(err)
	}
	opts := &claude.Options{
		Transport: &claudetest.FakeCLI{Script: script},
		CanUseTool: func(ctx context.Context, req *claude.ToolPermissionRequest) (claude.PermissionResult, error) {
			var in struct{ Command string }
			if err := json.Unmarshal(req.Input, &in); err != nil {
				return nil, err
			}
			if in.Command == "ls" {
				return &claude.PermissionAllow{}, nil
			}
			return &claude.PermissionDeny{Message: "not on my watch"}, nil
		},
	}
	for msg, err := range claude.Query(ctx, "tidy up", opts) {
		if err != nil {
			fmt.Println("error:", err)
			return
		}
		if m, ok := msg.(*claude.AssistantMessage); ok {
			fmt.Println(m.Text())
		}
	}
	// Output:
	// ls: allow
	// rm -rf /: deny not on my watch
}

// A turn that fails is yielded as its *ResultMessage together with a
// *ResultError; the session lives on.
func ExampleResultError() {
	ctx := context.Background()
	script := func(ctx context.Context, c *claudetest.CLI) error {
		if _, err := c.HandleInitialize(ctx); err != nil {
			return err
		}
		if _, err := c.ReadUser(ctx); err != nil {
			return err
		}
		c.Write(c.SystemInit(), c.ResultAPIError(529, "API Error: Repeated 529 Overloaded errors"))
		_, err := c.ReadUser(ctx)
		return ignoreEOF(err)
	}
	for _, err := range claude.Query(ctx, "hi", &claude.Options{Transport: &claudetest.FakeCLI{Script: script}}) {
		var re *claude.ResultError
		if errors.As(err, &re) {
			fmt.Println("status", re.APIErrorStatus, "-", re.Result)
		}
	}
	// Output:
	// status 529 - API Error: Repeated 529 Overloaded errors
}

func ignoreEOF(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// In auto mode behind a gateway that does not pass the safety check
// through, CLI 2.1.337 ends a turn whose calls it refused unchecked as
// failed, though it ran to its end: the error says which calls did not
// run, and the result keeps the final text.
func ExampleErrAutoModeUnchecked() {
	ctx := context.Background()
	script := func(ctx context.Context, c *claudetest.CLI) error {
		if _, err := c.HandleInitialize(ctx); err != nil {
			return err
		}
		if _, err := c.ReadUser(ctx); err != nil {
			return err
		}
		r := c.ResultSuccess("I could not run the installer.")
		r["is_error"], r["errors"] = true, []string{"Auto mode could not check some actions Claude tried, so they did not run: Bash. [auto_mode_unchecked]"}
		c.Write(c.SystemInit(), r)
		_, err := c.ReadUser(ctx)
		return ignoreEOF(err)
	}
	opts := &claude.Options{PermissionMode: claude.PermissionModeAuto, Transport: &claudetest.FakeCLI{Script: script}}
	for m, err := range claude.Query(ctx, "install it", opts) {
		if errors.Is(err, claude.ErrAutoModeUnchecked) {
			fmt.Println(m.(*claude.ResultMessage).Result)
			fmt.Println(err)
		}
	}
	// Output:
	// I could not run the installer.
	// claude: Auto mode could not check some actions Claude tried, so they did not run: Bash. [auto_mode_unchecked]
}
