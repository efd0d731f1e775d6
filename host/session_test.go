package host_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
	"github.com/tetherhq/tether/host"
)

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// start starts a host session on an in-process fake CLI.
func start(t *testing.T, o *host.Options, script claudetest.Script) (*host.Session, *stateLog) {
	t.Helper()
	if o == nil {
		o = &host.Options{}
	}
	if o.CLI == nil {
		o.CLI = &claude.Options{}
	}
	o.CLI.Transport = &claudetest.FakeCLI{Script: func(ctx context.Context, c *claudetest.CLI) error {
		err := script(ctx, c)
		if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, context.Canceled) && !strings.Contains(err.Error(), "crash") {
			t.Errorf("fake CLI: %v", err)
		}
		return err
	}}
	ctx := testCtx(t)
	s, err := host.Start(ctx, o)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	l := watchStates(ctx, s)
	t.Cleanup(func() { s.Close(); <-l.done })
	return s, l
}

func wantSeq(t *testing.T, l *stateLog, want ...string) {
	t.Helper()
	if diff := cmp.Diff(want, l.strings()); diff != "" {
		t.Errorf("state sequence (-want +got):\n%s", diff)
	}
}

// toolTurn plays a turn that asks permission for a Bash call and returns
// the host's answer to the script's caller through answer.
func toolTurn(tool string, input any, answer chan<- json.RawMessage) claudetest.Script {
	return func(ctx context.Context, c *claudetest.CLI) error {
		if _, err := c.HandleInitialize(ctx); err != nil {
			return err
		}
		if _, err := c.ReadUser(ctx); err != nil {
			return err
		}
		c.Write(c.SystemInit(), c.AssistantToolUse("toolu_1", tool, input))
		resp, err := c.CanUseTool(ctx, "toolu_1", tool, input)
		answer <- resp
		if err != nil {
			return err
		}
		c.Write(c.ToolResult("toolu_1", "ok", false), c.AssistantText("done"), c.ResultSuccess("done"))
		_, err = c.ReadUser(ctx)
		return err
	}
}

func TestApprovalAnsweredOnceFromManyGoroutines(t *testing.T) {
	ctx := testCtx(t)
	answer := make(chan json.RawMessage, 1)
	s, l := start(t, nil, toolTurn("Bash", map[string]string{"command": "rm -rf build"}, answer))
	d, err := s.Send(ctx, "clean")
	if err != nil {
		t.Fatal(err)
	}
	a := l.waitState(t, ctx, host.StateAwaitingApproval).Approval
	var wins atomic.Int32
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var err error
			if i%2 == 0 {
				err = s.Respond(a.ID(), &claude.PermissionAllow{})
			} else {
				err = a.Deny("no")
			}
			switch {
			case err == nil:
				wins.Add(1)
			case !errors.Is(err, host.ErrAlreadyAnswered):
				t.Errorf("answer: %v", err)
			}
		}()
	}
	wg.Wait()
	if wins.Load() != 1 {
		t.Errorf("%d answers taken, want 1", wins.Load())
	}
	if resp := <-answer; !strings.Contains(string(resp), `"behavior"`) {
		t.Errorf("CLI got %s", resp)
	}
	if _, err := d.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Respond(a.ID(), &claude.PermissionAllow{}); !errors.Is(err, host.ErrAlreadyAnswered) {
		t.Errorf("answer after the turn: %v", err)
	}
	var ae *host.ApprovalError
	if err := s.Respond("nope", &claude.PermissionAllow{}); !errors.As(err, &ae) || ae.ID != "nope" || !errors.Is(err, host.ErrNoApproval) {
		t.Errorf("unknown id: %v", err)
	}
}

func TestApprovalWithdrawnByCLI(t *testing.T) {
	ctx := testCtx(t)
	s, l := start(t, nil, func(ctx context.Context, c *claudetest.CLI) error {
		if _, err := c.HandleInitialize(ctx); err != nil {
			return err
		}
		if _, err := c.ReadUser(ctx); err != nil {
			return err
		}
		c.Write(c.SystemInit(), c.AssistantToolUse("toolu_1", "Bash", map[string]string{"command": "sleep 100"}))
		id, _, err := c.SendRequest("can_use_tool", map[string]any{"tool_name": "Bash", "input": map[string]string{"command": "sleep 100"}, "tool_use_id": "toolu_1"})
		if err != nil {
			return err
		}
		il, err := c.Expect(ctx, "control_request", "interrupt")
		if err != nil {
			return err
		}
		c.Cancel(id) // before the interrupt's answer, as the CLI does
		c.Respond(il.RequestID, nil)
		c.Write(c.ResultInterrupted())
		_, err = c.ReadUser(ctx)
		return err
	})
	s.Send(ctx, "wait")
	a := l.waitState(t, ctx, host.StateAwaitingApproval).Approval
	if err := s.Interrupt(ctx); err != nil {
		t.Fatal(err)
	}
	l.waitState(t, ctx, host.StateIdle)
	if err := a.Allow(); !errors.Is(err, host.ErrWithdrawn) {
		t.Errorf("answer after the cancel: %v", err)
	}
	wantSeq(t, l, "ready", "requesting", "running_tool Bash", "awaiting_approval Bash", "interrupting", "idle")
	if len(s.Approvals()) != 0 {
		t.Errorf("pending after the cancel: %v", s.Approvals())
	}
}

func TestWithdrawnBeforeAnswerIsRefused(t *testing.T) {
	ctx := testCtx(t)
	cancelled := make(chan struct{})
	s, l := start(t, nil, func(ctx context.Context, c *claudetest.CLI) error {
		if _, err := c.HandleInitialize(ctx); err != nil {
			return err
		}
		if _, err := c.ReadUser(ctx); err != nil {
			return err
		}
		c.Write(c.SystemInit(), c.AssistantToolUse("toolu_1", "Bash", map[string]string{"command": "x"}))
		id, _, err := c.SendRequest("can_use_tool", map[string]any{"tool_name": "Bash", "input": map[string]string{"command": "x"}, "tool_use_id": "toolu_1"})
		if err != nil {
			return err
		}
		<-cancelled
		c.Cancel(id)
		c.Write(c.ToolResult("toolu_1", "Tool permission request failed", true), c.AssistantText("ok"))
		<-cancelled
		_, err = c.ReadUser(ctx)
		return err
	})
	s.Send(ctx, "go")
	a := l.waitState(t, ctx, host.StateAwaitingApproval).Approval
	cancelled <- struct{}{}
	l.waitState(t, ctx, host.StateStreaming)
	if err := a.Allow(); !errors.Is(err, host.ErrWithdrawn) {
		t.Errorf("answer after the CLI withdrew it: %v", err)
	}
	var ae *host.ApprovalError
	if _, err := s.Approval(a.ID()); !errors.As(err, &ae) {
		t.Errorf("Approval after withdrawal: %v", err)
	}
	close(cancelled)
}

func TestQuestionAnswered(t *testing.T) {
	ctx := testCtx(t)
	answer := make(chan json.RawMessage, 1)
	input := map[string]any{"questions": []any{map[string]any{
		"question": "Which color?", "header": "Color", "multiSelect": false,
		"options": []any{map[string]any{"label": "Red", "description": "warm"}, map[string]any{"label": "Blue", "description": "cold"}},
	}}}
	s, l := start(t, nil, toolTurn("AskUserQuestion", input, answer))
	s.Send(ctx, "ask me")
	lv := l.waitState(t, ctx, host.StateAwaitingAnswer)
	a := lv.Approval
	if a.Kind != host.ApprovalQuestion || len(a.Questions) != 1 || a.Questions[0].Options[1].Label != "Blue" {
		t.Fatalf("question approval = %+v", a)
	}
	if err := a.Answer(map[string]string{"Which color?": "Blue"}); err != nil {
		t.Fatal(err)
	}
	var resp struct {
		Behavior     string `json:"behavior"`
		UpdatedInput struct {
			Questions []any             `json:"questions"`
			Answers   map[string]string `json:"answers"`
		} `json:"updatedInput"`
	}
	if err := json.Unmarshal(<-answer, &resp); err != nil {
		t.Fatal(err)
	}
	if resp.Behavior != "allow" || resp.UpdatedInput.Answers["Which color?"] != "Blue" || len(resp.UpdatedInput.Questions) != 1 {
		t.Errorf("CLI got %+v", resp)
	}
	l.waitState(t, ctx, host.StateIdle)
	wantSeq(t, l, "ready", "requesting", "running_tool AskUserQuestion", "awaiting_answer AskUserQuestion", "running_tool AskUserQuestion", "requesting", "streaming", "idle")
}

func TestAllowAlwaysAndDenyAndInterrupt(t *testing.T) {
	ctx := testCtx(t)
	for _, c := range []struct {
		name string
		act  func(s *host.Session, a *host.Approval) error
		want string
	}{
		{"allow always", func(s *host.Session, a *host.Approval) error { return a.AllowAlways() }, `"updatedPermissions":[{"type":"addRules","rules":[{"toolName":"Bash","ruleContent":"make *"}],"behavior":"allow","destination":"session"}]`},
		{"deny and interrupt", func(s *host.Session, a *host.Approval) error { return s.DenyAndInterrupt(ctx, "stop") }, `"behavior":"deny","message":"stop","interrupt":true`},
	} {
		t.Run(c.name, func(t *testing.T) {
			answer := make(chan json.RawMessage, 1)
			s, l := start(t, nil, func(ctx context.Context, cli *claudetest.CLI) error {
				if _, err := cli.HandleInitialize(ctx); err != nil {
					return err
				}
				if _, err := cli.ReadUser(ctx); err != nil {
					return err
				}
				cli.Write(cli.SystemInit(), cli.AssistantToolUse("toolu_1", "Bash", map[string]string{"command": "make"}))
				resp, err := cli.Request(ctx, "can_use_tool", map[string]any{"tool_name": "Bash", "input": map[string]string{"command": "make"}, "tool_use_id": "toolu_1",
					"permission_suggestions": []any{map[string]any{"type": "addRules", "rules": []any{map[string]string{"toolName": "Bash", "ruleContent": "make *"}}, "behavior": "allow", "destination": "session"}}})
				answer <- resp
				if err != nil {
					return err
				}
				cli.Write(cli.ResultSuccess("ok"))
				_, err = cli.ReadUser(ctx)
				return err
			})
			s.Send(ctx, "build")
			a := l.waitState(t, ctx, host.StateAwaitingApproval).Approval
			if err := c.act(s, a); err != nil {
				t.Fatal(err)
			}
			if got := string(<-answer); !strings.Contains(got, c.want) {
				t.Errorf("CLI got %s, want %s in it", got, c.want)
			}
		})
	}
}

// A policy that returns a typed nil (a nil *claude.PermissionAllow) has
// not answered, as with nil: the request waits for a person, and the
// session goes on (run it with -count: a panic under the session's lock
// used to hang it).
func TestPolicyTypedNil(t *testing.T) {
	ctx := testCtx(t)
	answer := make(chan json.RawMessage, 1)
	o := &host.Options{CLI: &claude.Options{CanUseTool: func(ctx context.Context, req *claude.ToolPermissionRequest) (claude.PermissionResult, error) {
		var p *claude.PermissionAllow
		return p, nil
	}}}
	s, l := start(t, o, toolTurn("Bash", map[string]string{"command": "ls"}, answer))
	s.Send(ctx, "go")
	a := l.waitState(t, ctx, host.StateAwaitingApproval).Approval
	if err := a.Deny("no"); err != nil {
		t.Fatal(err)
	}
	if got := string(<-answer); !strings.Contains(got, `"deny"`) {
		t.Errorf("the CLI got %s, want the person's deny", got)
	}
	l.waitState(t, ctx, host.StateIdle)
}

func TestPolicyDecidesFirst(t *testing.T) {
	ctx := testCtx(t)
	answer := make(chan json.RawMessage, 2)
	o := &host.Options{CLI: &claude.Options{CanUseTool: func(ctx context.Context, req *claude.ToolPermissionRequest) (claude.PermissionResult, error) {
		if strings.Contains(string(req.Input), "ls") {
			return &claude.PermissionAllow{}, nil
		}
		return nil, nil // ask a person
	}}}
	s, l := start(t, o, func(ctx context.Context, c *claudetest.CLI) error {
		if _, err := c.HandleInitialize(ctx); err != nil {
			return err
		}
		if _, err := c.ReadUser(ctx); err != nil {
			return err
		}
		for i, cmd := range []string{"ls", "rm x"} {
			id := []string{"toolu_1", "toolu_2"}[i]
			c.Write(c.AssistantToolUse(id, "Bash", map[string]string{"command": cmd}))
			resp, err := c.CanUseTool(ctx, id, "Bash", map[string]string{"command": cmd})
			answer <- resp
			if err != nil {
				return err
			}
			c.Write(c.ToolResult(id, "ok", false))
		}
		c.Write(c.ResultSuccess("ok"))
		_, err := c.ReadUser(ctx)
		return err
	})
	s.Send(ctx, "go")
	// The policy's answer says that nobody was asked; a person's does
	// not.
	if got := string(<-answer); !strings.Contains(got, `"allow"`) || !strings.Contains(got, `"decisionClassification":"config"`) {
		t.Errorf("policy answer %s", got)
	}
	a := l.waitFor(t, ctx, "approval of rm", func(v host.Liveness) bool {
		return v.State == host.StateAwaitingApproval && strings.Contains(string(v.Approval.Request.Input), "rm")
	}).Approval
	a.Deny("no")
	if got := string(<-answer); !strings.Contains(got, `"deny"`) || strings.Contains(got, "decisionClassification") {
		t.Errorf("person's answer %s", got)
	}
	l.waitState(t, ctx, host.StateIdle)
}
