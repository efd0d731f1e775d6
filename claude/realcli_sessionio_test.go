package claude_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
)

// Session I/O against the real CLI (issue 10): a background subagent in a
// one-shot Query, a stopped CLI, a failed resume, Close on an idle session
// after an in-process MCP call.

// One-shot Query with a subagent: on 2.1.330 the Agent tool runs in the
// background, so the first result comes before the subagent's report;
// Query must go on until the follow-up turn has used it. On 2.1.197 the
// agent runs in the foreground and one turn does it all.
func TestRealCLIQueryBackgroundAgent(t *testing.T) {
	run := claudetest.NewRealRun(t, &claudetest.MessagesOptions{Respond: func(r *claudetest.Request) *claudetest.Reply {
		switch {
		case r.Subagent():
			return claudetest.TextReply("REVIEW-7F3A: looks good")
		case r.Params.Contains("REVIEW-7F3A"):
			return claudetest.TextReply("FINAL: the reviewer approves")
		case r.Params.ToolResult("toolu_agent1") != nil:
			return claudetest.TextReply("waiting for the reviewer")
		default:
			return claudetest.ToolUseReply("toolu_agent1", "Agent", map[string]any{
				"description": "Review the diff", "prompt": "Review main.go", "subagent_type": "reviewer",
			})
		}
	}})
	o := run.Options
	o.Agents = map[string]claude.AgentDefinition{
		"reviewer": {Description: "Reviews Go code", Prompt: "You review Go code.", Tools: []string{"Read"}, Model: "haiku"},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var (
		msgs    []claude.Message
		results []*claude.ResultMessage
	)
	for m, err := range claude.Query(ctx, "review my change", o) {
		if err != nil {
			var re *claude.ResultError
			if !errors.As(err, &re) {
				t.Fatalf("Query: %v (after %v)", err, types(msgs))
			}
		}
		msgs = append(msgs, m)
		if r, ok := m.(*claude.ResultMessage); ok {
			results = append(results, r)
		}
	}
	t.Logf("messages: %v", types(msgs))
	if len(results) == 0 {
		t.Fatalf("no result in %v", types(msgs))
	}
	last := results[len(results)-1]
	if last.IsError || last.Result != "FINAL: the reviewer approves" {
		t.Errorf("last result = %q (is_error %v), want the turn that used the subagent's report; results: %d", last.Result, last.IsError, len(results))
	}
	if _, ok := msgs[len(msgs)-1].(*claude.ResultMessage); !ok {
		t.Errorf("Query did not end with a result: %v", types(msgs))
	}
	if len(find[*claude.TaskNotificationMessage](msgs)) == 0 {
		t.Errorf("no task_notification reached the caller: %v", types(msgs))
	}
}

// A stopped real CLI: Send of a prompt larger than the pipe returns at its
// deadline, later writes return at theirs, Close within CloseTimeout + 1 s.
func TestRealCLIStopped(t *testing.T) {
	api := claudetest.NewMessagesServer(nil)
	t.Cleanup(api.Close)
	cli := claudetest.NewRealCLI(t, api)
	o := cli.Options()
	o.SkipVersionCheck = true
	o.CloseTimeout = time.Second
	fds := fdCount(t)
	s, err := claude.Connect(cliCtx(t), o)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := syscall.Kill(s.PID(), syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	waitStopped(t, s.PID())
	big := strings.Repeat("x", 1<<20)
	returns(t, "Send", 2*time.Second, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		err = s.Send(ctx, big)
	})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Send = %v, want DeadlineExceeded", err)
	}
	for name, call := range map[string]func(context.Context) error{
		"Interrupt": s.Interrupt,
		"SetModel":  func(ctx context.Context) error { return s.SetModel(ctx, "haiku") },
	} {
		returns(t, name, 500*time.Millisecond, func() {
			ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
			defer cancel()
			err = call(ctx)
		})
		if err == nil {
			t.Errorf("%s on a stopped CLI succeeded", name)
		}
	}
	returns(t, "Close", o.CloseTimeout+time.Second, func() { s.Close() })
	var pe *claude.ProcessError
	if err := s.Wait(); !errors.As(err, &pe) || pe.Signal != "SIGKILL" {
		t.Errorf("Wait after Close = %v, want a *ProcessError saying SIGKILL", err)
	}
	checkFDs(t, fds)
}

// A resume the CLI refuses: it writes a result line saying why and exits;
// Connect's error carries that line as a *ResultError.
func TestRealCLIResumeRefused(t *testing.T) {
	for name, set := range map[string]func(o *claude.Options){
		"unknown id": func(o *claude.Options) { o.Resume = "5d1c2b3a-0000-4000-8000-00000000abcd" },
		"no persistence": func(o *claude.Options) {
			o.Resume = "5d1c2b3a-0000-4000-8000-00000000abcd"
			o.NoSessionPersistence = true
		},
	} {
		t.Run(name, func(t *testing.T) {
			run := claudetest.NewRealRun(t, nil)
			set(run.Options)
			_, err := claude.Connect(cliCtx(t), run.Options)
			var re *claude.ResultError
			var pe *claude.ProcessError
			if !errors.As(err, &re) || !errors.As(err, &pe) {
				t.Fatalf("Connect = %v, want a *ResultError and a *ProcessError", err)
			}
			if len(re.Errors) == 0 {
				t.Errorf("ResultError without the CLI's errors: %+v", re)
			}
			t.Logf("Connect: %v", err)
		})
	}
}

var _ = fmt.Sprint

// Close on an idle session after an in-process MCP call sends no interrupt:
// on 2.1.197 an interrupt made the CLI cancel the finished tools/call,
// sending the server a stray notifications/cancelled.
func TestRealCLICloseIdleAfterMCP(t *testing.T) {
	run := claudetest.NewRealRun(t, &claudetest.MessagesOptions{Replies: []*claudetest.Reply{
		claudetest.ToolUseReply("toolu_mcp_add_1", "mcp__calc__add", map[string]int{"a": 2, "b": 3}),
		claudetest.TextReply("2 + 3 = 5"),
	}})
	o := run.Options
	withCalc(o)
	o.CanUseTool = func(ctx context.Context, req *claude.ToolPermissionRequest) (claude.PermissionResult, error) {
		return &claude.PermissionAllow{}, nil
	}
	ctx := cliCtx(t)
	s, err := claude.Connect(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Send(ctx, "what is 2 + 3?"); err != nil {
		t.Fatal(err)
	}
	for _, err := range s.ReceiveTurn(ctx) {
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close = %v", err)
	}
	if err := s.Wait(); err != nil {
		t.Errorf("Wait after closing an idle CLI = %v, want a clean exit", err)
	}
	tr := run.Recorder.Transcript("")
	for _, l := range tr.Lines {
		if l.FromHost && strings.Contains(string(l.JSON), `"subtype":"interrupt"`) {
			t.Errorf("Close interrupted an idle session: %s", l.JSON)
		}
		if !l.FromHost && strings.Contains(string(l.JSON), "notifications/cancelled") {
			t.Errorf("the MCP server got a stray cancel: %s", l.JSON)
		}
	}
}
