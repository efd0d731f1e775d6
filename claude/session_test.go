package claude_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
)

// connect starts a session on an in-process fake running script. Script
// errors fail the test.
func connect(t *testing.T, opts *claude.Options, script claudetest.Script) *claude.Session {
	t.Helper()
	return connectScript(t, opts, func(ctx context.Context, c *claudetest.CLI) error {
		err := script(ctx, c)
		if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, context.Canceled) {
			t.Errorf("fake CLI script: %v", err)
		}
		return err
	})
}

// connectScript is connect for scripts that fail on purpose.
func connectScript(t *testing.T, opts *claude.Options, script claudetest.Script) *claude.Session {
	t.Helper()
	if opts == nil {
		opts = &claude.Options{}
	}
	o := *opts
	o.Transport = &claudetest.FakeCLI{Script: script}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := claude.Connect(ctx, &o)
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// cliCtx is testCtx for a test of the real CLI: node starts in a second or
// two, but with both cores busy and the suite under -race it has taken
// over 20 s to answer initialize, so the bound is two minutes (a hang
// detector, not a speed goal).
func cliCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// collect gathers a turn's messages and errors.
func collect(t *testing.T, seq func(func(claude.Message, error) bool)) (msgs []claude.Message, errs []error) {
	t.Helper()
	for m, err := range seq {
		if m != nil {
			msgs = append(msgs, m)
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	return msgs, errs
}

func types(msgs []claude.Message) []string {
	var out []string
	for _, m := range msgs {
		out = append(out, fmt.Sprintf("%T", m))
	}
	return out
}

func TestSessionTurn(t *testing.T) {
	ctx := testCtx(t)
	got := make(chan string, 1)
	s := connect(t, nil, func(ctx context.Context, c *claudetest.CLI) error {
		if _, err := c.HandleInitialize(ctx); err != nil {
			return err
		}
		u, err := c.Turn(ctx, "pong")
		if err != nil {
			return err
		}
		got <- claudetest.UserText(u.Raw)
		_, err = c.ReadUser(ctx)
		return err
	})
	if s.Initialize() == nil || s.Initialize().PID != 4242 || len(s.Initialize().Commands) == 0 {
		t.Errorf("Initialize() = %+v", s.Initialize())
	}
	if err := s.Send(ctx, "ping"); err != nil {
		t.Fatal(err)
	}
	msgs, errs := collect(t, s.ReceiveTurn(ctx))
	if len(errs) > 0 {
		t.Fatalf("errors: %v", errs)
	}
	want := []string{"*claude.InitMessage", "*claude.AssistantMessage", "*claude.ResultMessage"}
	if diff := cmp.Diff(want, types(msgs)); diff != "" {
		t.Fatalf("turn (-want +got):\n%s", diff)
	}
	if txt := msgs[1].(*claude.AssistantMessage).Text(); txt != "pong" {
		t.Errorf("assistant text = %q", txt)
	}
	if r := msgs[2].(*claude.ResultMessage); r.Result != "pong" || r.IsError {
		t.Errorf("result = %+v", r)
	}
	if p := <-got; p != "ping" {
		t.Errorf("the CLI received %q", p)
	}
}

func TestResultErrorYieldedWithMessage(t *testing.T) {
	ctx := testCtx(t)
	s := connect(t, nil, func(ctx context.Context, c *claudetest.CLI) error {
		if _, err := c.HandleInitialize(ctx); err != nil {
			return err
		}
		if _, err := c.ReadUser(ctx); err != nil {
			return err
		}
		if err := c.Write(c.SystemInit(), c.ResultAPIError(500, "API Error: 500")); err != nil {
			return err
		}
		_, err := c.ReadUser(ctx)
		return err
	})
	if err := s.Send(ctx, "hi"); err != nil {
		t.Fatal(err)
	}
	var res *claude.ResultMessage
	var rerr error
	for m, err := range s.ReceiveTurn(ctx) {
		if r, ok := m.(*claude.ResultMessage); ok {
			res, rerr = r, err
		}
	}
	if res == nil {
		t.Fatal("no result")
	}
	var re *claude.ResultError
	if !errors.As(rerr, &re) || re.APIErrorStatus != 500 {
		t.Errorf("error yielded with the result = %#v, want a *ResultError with status 500", rerr)
	}
}

// A slow or absent reader does not hold up a permission answer while the
// unread messages fit in Options.MaxBufferedBytes (1 MiB; 2000 deltas are
// about 600 KB): the read loop queues messages and serves requests on their
// own goroutines. Past the bound it stops reading (TestBufferBoundStopsReading).
func TestPermissionAnsweredWhileNobodyReads(t *testing.T) {
	ctx := testCtx(t)
	answered := make(chan json.RawMessage, 1)
	s := connect(t, &claude.Options{
		CanUseTool: func(ctx context.Context, req *claude.ToolPermissionRequest) (claude.PermissionResult, error) {
			return &claude.PermissionAllow{}, nil
		},
	}, func(ctx context.Context, c *claudetest.CLI) error {
		if _, err := c.HandleInitialize(ctx); err != nil {
			return err
		}
		for i := range 2000 {
			if err := c.Write(c.TextDelta(0, fmt.Sprint(i))); err != nil {
				return err
			}
		}
		resp, err := c.CanUseTool(ctx, "toolu_1", "Bash", map[string]any{"command": "ls"})
		if err != nil {
			return err
		}
		answered <- resp
		_, err = c.ReadUser(ctx)
		return err
	})
	select {
	case resp := <-answered:
		var got map[string]any
		json.Unmarshal(resp, &got)
		want := map[string]any{"behavior": "allow", "updatedInput": map[string]any{"command": "ls"}}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("answer (-want +got):\n%s", diff)
		}
	case <-ctx.Done():
		t.Fatal("the permission request was not answered while nobody read messages")
	}
	// Nothing was dropped: all 2000 deltas are still there, in order.
	n := 0
	for m, err := range s.Receive(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		ev, ok := m.(*claude.StreamEvent)
		if !ok {
			t.Fatalf("message %d is %T", n, m)
		}
		d := ev.Event.(*claude.ContentBlockDeltaEvent).Delta.(*claude.TextDelta)
		if d.Text != fmt.Sprint(n) {
			t.Fatalf("delta %d has text %q", n, d.Text)
		}
		if n++; n == 2000 {
			break
		}
	}
}

func TestCanUseToolAnswers(t *testing.T) {
	input := map[string]any{"command": "echo hi > hi.txt"}
	suggestion := claude.PermissionUpdate{
		Type: claude.PermissionAddRules, Rules: []claude.PermissionRule{{ToolName: "Bash", RuleContent: "echo hi *"}},
		Behavior: claude.PermissionBehaviorAllow, Destination: claude.DestinationSession,
	}
	for _, tc := range []struct {
		name    string
		cb      claude.CanUseToolFunc
		want    map[string]any
		wantErr string
	}{
		{
			name: "allow keeps the input",
			cb: func(ctx context.Context, r *claude.ToolPermissionRequest) (claude.PermissionResult, error) {
				return &claude.PermissionAllow{}, nil
			},
			want: map[string]any{"behavior": "allow", "updatedInput": input},
		},
		{
			name: "allow with changed input",
			cb: func(ctx context.Context, r *claude.ToolPermissionRequest) (claude.PermissionResult, error) {
				return &claude.PermissionAllow{UpdatedInput: json.RawMessage(`{"command":"echo safe"}`)}, nil
			},
			want: map[string]any{"behavior": "allow", "updatedInput": map[string]any{"command": "echo safe"}},
		},
		{
			name: "allow always applies the suggestion",
			cb: func(ctx context.Context, r *claude.ToolPermissionRequest) (claude.PermissionResult, error) {
				return &claude.PermissionAllow{UpdatedPermissions: r.Suggestions[:1]}, nil
			},
			want: map[string]any{"behavior": "allow", "updatedInput": input, "updatedPermissions": []any{map[string]any{
				"type": "addRules", "rules": []any{map[string]any{"toolName": "Bash", "ruleContent": "echo hi *"}},
				"behavior": "allow", "destination": "session"}}},
		},
		{
			name: "deny",
			cb: func(ctx context.Context, r *claude.ToolPermissionRequest) (claude.PermissionResult, error) {
				return &claude.PermissionDeny{Message: "not today"}, nil
			},
			want: map[string]any{"behavior": "deny", "message": "not today"},
		},
		{
			name: "deny and interrupt",
			cb: func(ctx context.Context, r *claude.ToolPermissionRequest) (claude.PermissionResult, error) {
				return &claude.PermissionDeny{Message: "stop", Interrupt: true}, nil
			},
			want: map[string]any{"behavior": "deny", "message": "stop", "interrupt": true},
		},
		{
			name: "error",
			cb: func(ctx context.Context, r *claude.ToolPermissionRequest) (claude.PermissionResult, error) {
				return nil, errors.New("policy service down")
			},
			wantErr: "policy service down",
		},
		{
			name: "panic",
			cb: func(ctx context.Context, r *claude.ToolPermissionRequest) (claude.PermissionResult, error) {
				panic("callback bug")
			},
			wantErr: "callback bug",
		},
		{
			name: "nil result",
			cb: func(ctx context.Context, r *claude.ToolPermissionRequest) (claude.PermissionResult, error) {
				return nil, nil
			},
			wantErr: "no result",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var seen *claude.ToolPermissionRequest
			type answer struct {
				resp json.RawMessage
				err  error
			}
			done := make(chan answer, 1)
			connect(t, &claude.Options{CanUseTool: func(ctx context.Context, r *claude.ToolPermissionRequest) (claude.PermissionResult, error) {
				seen = r
				return tc.cb(ctx, r)
			}}, func(ctx context.Context, c *claudetest.CLI) error {
				if _, err := c.HandleInitialize(ctx); err != nil {
					return err
				}
				resp, err := c.Request(ctx, "can_use_tool", map[string]any{
					"tool_name": "Bash", "display_name": "Bash", "input": input, "description": "Write hi",
					"tool_use_id": "toolu_bash_1", "blocked_path": "/w/hi.txt",
					"permission_suggestions": []any{suggestion},
				})
				done <- answer{resp, err}
				_, err = c.ReadUser(ctx)
				return err
			})
			a := <-done
			if tc.wantErr != "" {
				var ce *claude.ControlError
				if !errors.As(a.err, &ce) || !strings.Contains(ce.Message, tc.wantErr) {
					t.Fatalf("answer = %s, %v; want an error response containing %q", a.resp, a.err, tc.wantErr)
				}
				return
			}
			if a.err != nil {
				t.Fatal(a.err)
			}
			var got map[string]any
			json.Unmarshal(a.resp, &got)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("answer (-want +got):\n%s", diff)
			}
			if seen.ToolName != "Bash" || seen.ToolUseID != "toolu_bash_1" || seen.BlockedPath != "/w/hi.txt" ||
				seen.Description != "Write hi" || len(seen.Suggestions) != 1 || seen.RequestID == "" {
				t.Errorf("request = %+v", seen)
			}
		})
	}
}

// withdrawal drives one CLI→host request that the CLI withdraws
// (control_cancel_request) while the host's callback runs, as it does
// when an interrupt aborts a permission prompt or a hook times out.
type withdrawal struct {
	started   chan struct{}
	cancelled chan error
}

func newWithdrawal() *withdrawal {
	return &withdrawal{started: make(chan struct{}), cancelled: make(chan error, 1)}
}

// wait is the callback's body: it blocks until its ctx ends and reports
// why.
func (w *withdrawal) wait(ctx context.Context) {
	close(w.started)
	<-ctx.Done()
	w.cancelled <- context.Cause(ctx)
}

// check connects with opts, has the fake CLI send the request and
// withdraw it once the callback has started, and asserts that the
// callback's ctx was cancelled by the CLI and that the host wrote no late
// answer: the next line it writes must be the next user message.
func (w *withdrawal) check(t *testing.T, opts *claude.Options, subtype string, body func(c *claudetest.CLI) any) {
	t.Helper()
	ctx := testCtx(t)
	next := make(chan string, 1)
	s := connect(t, opts, func(ctx context.Context, c *claudetest.CLI) error {
		if _, err := c.HandleInitialize(ctx); err != nil {
			return err
		}
		id, _, err := c.SendRequest(subtype, body(c))
		if err != nil {
			return err
		}
		select {
		case <-w.started:
		case <-ctx.Done():
			return ctx.Err()
		}
		if err := c.Cancel(id); err != nil {
			return err
		}
		l, err := c.Read(ctx)
		if err != nil {
			return err
		}
		next <- l.Type
		return nil
	})
	select {
	case cause := <-w.cancelled:
		if cause == nil || !strings.Contains(cause.Error(), "cancelled by the CLI") {
			t.Errorf("cause = %v", cause)
		}
	case <-ctx.Done():
		t.Fatalf("the %s callback's ctx was not cancelled", subtype)
	}
	// Give a wrongly sent late answer time to be written before our probe.
	time.Sleep(20 * time.Millisecond)
	if err := s.Send(ctx, "next"); err != nil {
		t.Fatal(err)
	}
	if typ := <-next; typ != "user" {
		t.Errorf("after the cancel the host wrote a %s line, want only the next user message", typ)
	}
}

// The CLI withdraws a pending permission request when an interrupt aborts
// it; the callback's ctx must be cancelled and no late answer sent.
func TestCanUseToolCancelledByCLI(t *testing.T) {
	w := newWithdrawal()
	w.check(t, &claude.Options{CanUseTool: func(ctx context.Context, r *claude.ToolPermissionRequest) (claude.PermissionResult, error) {
		w.wait(ctx)
		return &claude.PermissionAllow{}, nil
	}}, "can_use_tool", func(*claudetest.CLI) any {
		return map[string]any{"tool_name": "Bash", "input": map[string]any{}, "tool_use_id": "t1"}
	})
}

func TestControlRequests(t *testing.T) {
	ctx := testCtx(t)
	reqs := make(chan *claudetest.Line, 10)
	s := connect(t, nil, func(ctx context.Context, c *claudetest.CLI) error {
		if _, err := c.HandleInitialize(ctx); err != nil {
			return err
		}
		for {
			l, err := c.Read(ctx)
			if err != nil {
				return err
			}
			reqs <- l
			switch l.Subtype {
			case "set_permission_mode":
				if err := c.RespondError(l.RequestID, "Cannot set permission mode to bypassPermissions"); err != nil {
					return err
				}
			case "get_thing":
				if err := c.Respond(l.RequestID, map[string]int{"n": 7}); err != nil {
					return err
				}
			case "hang":
				// never answered
			default:
				if err := c.AnswerIdle(l); err != nil {
					return err
				}
			}
		}
	})
	if err := s.SetModel(ctx, "claude-sonnet-4-5"); err != nil {
		t.Fatal(err)
	}
	if l := <-reqs; string(l.Request) != `{"subtype":"set_model","model":"claude-sonnet-4-5"}` {
		t.Errorf("set_model request = %s", l.Request)
	}
	if err := s.SetMaxThinkingTokens(ctx, 2048, ""); err != nil {
		t.Fatal(err)
	}
	if l := <-reqs; string(l.Request) != `{"subtype":"set_max_thinking_tokens","max_thinking_tokens":2048}` {
		t.Errorf("set_max_thinking_tokens request = %s", l.Request)
	}
	if err := s.SetMaxThinkingTokens(ctx, 1024, claude.ThinkingDisplaySummarized); err != nil {
		t.Fatal(err)
	}
	if l := <-reqs; string(l.Request) != `{"subtype":"set_max_thinking_tokens","max_thinking_tokens":1024,"thinking_display":"summarized"}` {
		t.Errorf("set_max_thinking_tokens request with a display = %s", l.Request)
	}
	if err := s.Interrupt(ctx); err != nil {
		t.Fatal(err)
	}
	<-reqs
	err := s.SetPermissionMode(ctx, claude.PermissionModeBypassPermissions)
	var ce *claude.ControlError
	if !errors.As(err, &ce) || ce.Subtype != "set_permission_mode" || !strings.Contains(ce.Message, "Cannot set") {
		t.Errorf("SetPermissionMode error = %v, want a *ControlError", err)
	}
	<-reqs
	raw, err := s.Control(ctx, "get_thing", map[string]string{"x": "y"})
	if err != nil || string(raw) != `{"n":7}` {
		t.Errorf("Control = %s, %v", raw, err)
	}
	if l := <-reqs; string(l.Request) != `{"subtype":"get_thing","x":"y"}` {
		t.Errorf("generic request = %s", l.Request)
	}

	// Cancelling ctx returns at once and tells the CLI in the background.
	cctx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() { _, err := s.Control(cctx, "hang", nil); errc <- err }()
	hang := <-reqs
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled request returned %v", err)
	}
	if l := <-reqs; l.Type != "control_cancel_request" || l.RequestID != hang.RequestID {
		t.Errorf("after cancel the CLI got %s, want a control_cancel_request for %s", l.Raw, hang.RequestID)
	}
}

// When the CLI dies, every pending request fails at once with the
// process error, and Receive ends with it.
func TestCLIDiesWithPendingRequest(t *testing.T) {
	ctx := testCtx(t)
	s := connectScript(t, nil, func(ctx context.Context, c *claudetest.CLI) error {
		if _, err := c.HandleInitialize(ctx); err != nil {
			return err
		}
		if _, err := c.Expect(ctx, "control_request", "hang"); err != nil {
			return err
		}
		c.Write(c.SystemInit())
		return errors.New("segfault")
	})
	_, err := s.Control(ctx, "hang", nil)
	var pe *claude.ProcessError
	if !errors.As(err, &pe) || !strings.Contains(strings.Join(pe.Stderr, "\n"), "segfault") {
		t.Fatalf("pending request failed with %v, want a *ProcessError carrying stderr", err)
	}
	msgs, errs := collect(t, s.Receive(ctx))
	if len(msgs) != 1 || len(errs) != 1 || !errors.As(errs[0], &pe) {
		t.Errorf("Receive after the crash: %v, %v", types(msgs), errs)
	}
	if err := s.Wait(); !errors.As(err, &pe) {
		t.Errorf("Wait = %v", err)
	}
	if err := s.Send(ctx, "hello?"); !errors.As(err, &pe) {
		t.Errorf("Send after the crash = %v", err)
	}
}

func TestBadLinesAreReportedInOrder(t *testing.T) {
	ctx := testCtx(t)
	s := connect(t, &claude.Options{MaxLineSize: 1000}, func(ctx context.Context, c *claudetest.CLI) error {
		if _, err := c.HandleInitialize(ctx); err != nil {
			return err
		}
		big := c.AssistantText(strings.Repeat("x", 5000))
		if err := c.Write(c.SystemInit(), "this is not json", big, `{"type":"brand_new_type","x":1}`, c.ResultSuccess("ok")); err != nil {
			return err
		}
		_, err := c.ReadUser(ctx)
		return err
	})
	var got []string
	for m, err := range s.ReceiveTurn(ctx) {
		var le *claude.LineError
		switch {
		case errors.As(err, &le) && errors.Is(err, claude.ErrLineTooLong):
			got = append(got, fmt.Sprintf("too long: line %d, %d bytes", le.Line, le.Size))
		case errors.As(err, &le):
			got = append(got, fmt.Sprintf("bad line %d: %q", le.Line, le.Prefix))
		case err != nil:
			t.Fatal(err)
		default:
			got = append(got, fmt.Sprintf("%T", m))
		}
	}
	if len(got) != 5 || got[0] != "*claude.InitMessage" || !strings.HasPrefix(got[1], `bad line 3: "this is not json"`) ||
		!strings.HasPrefix(got[2], "too long: line 4") || got[3] != "*claude.UnknownMessage" || got[4] != "*claude.ResultMessage" {
		t.Errorf("stream = %q", got)
	}
}

func TestCloseIsIdempotentAndConcurrent(t *testing.T) {
	ctx := testCtx(t)
	s := connect(t, nil, claudetest.Echo)
	recvDone := make(chan error, 1)
	go func() {
		var last error
		for _, err := range s.Receive(ctx) {
			last = err
		}
		recvDone <- last
	}()
	var wg sync.WaitGroup
	for range 10 {
		wg.Add(1)
		go func() { defer wg.Done(); s.Close() }()
	}
	wg.Wait()
	if err := <-recvDone; !errors.Is(err, claude.ErrClosed) {
		t.Errorf("Receive ended with %v, want ErrClosed", err)
	}
	if err := s.Send(ctx, "x"); !errors.Is(err, claude.ErrClosed) {
		t.Errorf("Send after Close = %v", err)
	}
	if err := s.Interrupt(ctx); !errors.Is(err, claude.ErrClosed) {
		t.Errorf("Interrupt after Close = %v", err)
	}
	if err := s.Wait(); err != nil {
		t.Errorf("Wait after Close = %v", err)
	}
}

func TestQuery(t *testing.T) {
	ctx := testCtx(t)
	fake := &claudetest.FakeCLI{Script: claudetest.Echo}
	var text string
	var result *claude.ResultMessage
	for m, err := range claude.Query(ctx, "hello", &claude.Options{Transport: fake, Model: "opus"}) {
		if err != nil {
			t.Fatal(err)
		}
		switch m := m.(type) {
		case *claude.AssistantMessage:
			text += m.Text()
		case *claude.ResultMessage:
			result = m
		}
	}
	if text != "echo: hello" || result == nil {
		t.Errorf("text %q, result %v", text, result)
	}
	if l := fake.Launches(); len(l) != 1 || !contains(l[0].Args, "--model=opus") {
		t.Errorf("launches = %+v", l)
	}
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

func TestQueryConnectError(t *testing.T) {
	ctx := testCtx(t)
	var got []error
	for _, err := range claude.Query(ctx, "x", &claude.Options{CLIPath: "/nonexistent/claude"}) {
		got = append(got, err)
	}
	if len(got) != 1 || !errors.Is(got[0], claude.ErrCLINotFound) {
		t.Fatalf("errors = %v, want ErrCLINotFound", got)
	}
	var nf *claude.CLINotFoundError
	if !errors.As(got[0], &nf) || len(nf.Searched) == 0 || nf.Searched[0] != "/nonexistent/claude" {
		t.Errorf("not-found error = %#v", got[0])
	}
}
