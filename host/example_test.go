package host_test

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
	"github.com/tetherhq/tether/host"
)

// approvalCLI is a fake CLI whose turn asks to run a Bash command.
func approvalCLI(ctx context.Context, c *claudetest.CLI) error {
	if _, err := c.HandleInitialize(ctx); err != nil {
		return err
	}
	if _, err := c.ReadUser(ctx); err != nil {
		return err
	}
	input := map[string]string{"command": "make test"}
	c.Write(c.SystemInit(), c.AssistantToolUse("toolu_1", "Bash", input))
	if _, err := c.CanUseTool(ctx, "toolu_1", "Bash", input); err != nil {
		return err
	}
	c.Write(c.ToolResult("toolu_1", "PASS", false), c.AssistantText("Tests pass."), c.ResultSuccess("Tests pass."))
	_, err := c.ReadUser(ctx)
	return ignoreEOF(err)
}

// A UI follows the session's state and answers the approval it shows.
func ExampleSession_Watch() {
	ctx := context.Background()
	s, err := host.Start(ctx, &host.Options{CLI: &claude.Options{Transport: &claudetest.FakeCLI{Script: approvalCLI}}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()

	states := s.Watch(ctx)
	d, _ := s.Send(ctx, "run the tests")
	for l := range states {
		fmt.Println(l)
		if l.State == host.StateAwaitingApproval {
			fmt.Printf("  allow %s %s? yes\n", l.Tool, l.Approval.Request.Input)
			l.Approval.Allow()
		}
		if l.State == host.StateIdle {
			break
		}
	}
	r, _ := d.Wait(ctx)
	fmt.Println(d.Status(), r.Result)
	// Output:
	// ready
	// requesting
	// running_tool Bash
	// awaiting_approval Bash
	//   allow Bash {"command":"make test"}? yes
	// running_tool Bash
	// requesting
	// streaming
	// idle
	// answered Tests pass.
}

// Approvals can be answered from anywhere by id: here, as a web handler
// would, from the list of pending requests.
func ExampleSession_Respond() {
	ctx := context.Background()
	s, _ := host.Start(ctx, &host.Options{CLI: &claude.Options{Transport: &claudetest.FakeCLI{Script: approvalCLI}}})
	defer s.Close()
	d, _ := s.Send(ctx, "run the tests")
	for l := range s.Watch(ctx) {
		if l.State == host.StateAwaitingApproval {
			break
		}
	}
	for _, a := range s.Approvals() {
		fmt.Println("pending:", a.Request.ToolName, a.Kind == host.ApprovalTool)
		fmt.Println(s.Respond(a.ID(), &claude.PermissionDeny{Message: "not now"}))
		fmt.Println(s.Respond(a.ID(), &claude.PermissionAllow{}))
	}
	d.Wait(ctx)
	// Output:
	// pending: Bash true
	// <nil>
	// host: approval already answered: cli-req-1
}

// A Delivery follows a prompt to the result that answered it.
func ExampleDelivery() {
	ctx := context.Background()
	s, _ := host.Start(ctx, &host.Options{CLI: &claude.Options{Transport: &claudetest.FakeCLI{Script: claudetest.Echo}}})
	defer s.Close()
	d, _ := s.Send(ctx, "ping")
	r, err := d.Wait(ctx)
	fmt.Println(d.Status(), r.Result, err)
	c := s.Cost()
	fmt.Println(c.Turns, c.LastTurn.Tokens.Input, c.LastTurn.Tokens.Output, c.USD)
	// Output:
	// answered echo: ping <nil>
	// 1 10 5 0.0001
}

// A Manager keeps spares warm and hands them out.
func ExampleManager() {
	ctx := context.Background()
	m := host.NewManager(&host.ManagerOptions{
		Session: &host.Options{CLI: &claude.Options{Transport: &claudetest.FakeCLI{Script: claudetest.Echo}}},
		Spares:  1,
	})
	defer m.Close()
	s, err := m.Start(ctx, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	d, _ := s.Send(ctx, "hi")
	r, _ := d.Wait(ctx)
	fmt.Println(r.Result, len(m.Sessions()), m.Get(s.ID()) == s)
	// Output:
	// echo: hi 1 true
}

func ignoreEOF(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}
