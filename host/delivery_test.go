package host_test

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
	"github.com/tetherhq/tether/host"
)

// replayOf is the CLI's echo of a host user line.
func replayOf(c *claudetest.CLI, l *claudetest.Line) claudetest.Msg {
	var u struct {
		UUID    string `json:"uuid"`
		Message any    `json:"message"`
	}
	_ = jsonUnmarshal(l.Raw, &u)
	return claudetest.Msg{"type": "user", "message": u.Message, "session_id": c.SessionID(), "parent_tool_use_id": nil, "uuid": u.UUID, "isReplay": true}
}

func TestDeliveriesMergedAndEchoesDeduplicated(t *testing.T) {
	ctx := testCtx(t)
	release := make(chan struct{})
	s, _ := start(t, nil, func(ctx context.Context, c *claudetest.CLI) error {
		if _, err := c.HandleInitialize(ctx); err != nil {
			return err
		}
		one, err := c.ReadUser(ctx)
		if err != nil {
			return err
		}
		c.Write(c.SystemInit(), replayOf(c, one))
		two, err := c.ReadUser(ctx)
		if err != nil {
			return err
		}
		three, err := c.ReadUser(ctx)
		if err != nil {
			return err
		}
		<-release
		c.Write(c.AssistantText("first"), c.ResultSuccess("first"))
		// The queued two and three become one turn, echoed (twice, the
		// second a duplicate) under the last uuid, as the CLI does.
		c.Write(replayOf(c, two), c.SystemInit(), replayOf(c, three), replayOf(c, three), c.AssistantText("second"), c.ResultSuccess("second"))
		_, err = c.ReadUser(ctx)
		return err
	})
	msgs := s.Messages(ctx)
	d1, _ := s.Send(ctx, "one")
	d2, _ := s.Send(ctx, "two")
	d3, _ := s.Send(ctx, "three")
	if d2.Status() != host.DeliveryQueued {
		t.Errorf("d2 %v before the CLI took it", d2.Status())
	}
	close(release)
	r1, err1 := d1.Wait(ctx)
	r2, err2 := d2.Wait(ctx)
	r3, err3 := d3.Wait(ctx)
	if err1 != nil || err2 != nil || err3 != nil || r1.Result != "first" || r2 != r3 || r2.Result != "second" {
		t.Fatalf("results %v %v %v, errors %v %v %v", r1, r2, r3, err1, err2, err3)
	}
	if d3.Status() != host.DeliveryAnswered || len(s.Deliveries()) != 0 {
		t.Errorf("d3 %v, unresolved %v", d3.Status(), s.Deliveries())
	}
	echoes := 0
	results := 0
	for m, err := range msgs {
		if u, ok := m.(*claude.UserMessage); ok && u.IsReplay {
			echoes++
		}
		if _, ok := m.(*claude.ResultMessage); ok {
			if results++; results == 2 {
				break
			}
		}
		if m == nil {
			t.Fatal(err)
		}
	}
	if echoes != 3 {
		t.Errorf("%d echoes passed on, want 3 (the duplicate dropped)", echoes)
	}
}

func TestCancelMessage(t *testing.T) {
	ctx := testCtx(t)
	s, _ := start(t, nil, func(ctx context.Context, c *claudetest.CLI) error {
		if _, err := c.HandleInitialize(ctx); err != nil {
			return err
		}
		if _, err := c.ReadUser(ctx); err != nil { // the first prompt starts a turn
			return err
		}
		c.Write(c.SystemInit())
		if _, err := c.ReadUser(ctx); err != nil { // queued
			return err
		}
		l, err := c.Expect(ctx, "control_request", "cancel_async_message")
		if err != nil {
			return err
		}
		c.Respond(l.RequestID, map[string]bool{"cancelled": true})
		c.Write(c.AssistantText("ok"), c.ResultSuccess("ok"))
		if _, err := c.Expect(ctx, "user"); err != nil {
			return err
		}
		l, err = c.Expect(ctx, "control_request", "cancel_async_message")
		if err != nil {
			return err
		}
		c.Respond(l.RequestID, map[string]bool{"cancelled": false})
		_, err = c.ReadUser(ctx)
		return err
	})
	states := s.Watch(ctx)
	d1, _ := s.Send(ctx, "one")
	// Send the second prompt only once the host has seen the first turn
	// start: queued before that, this non-echoing fake's turn would be
	// taken to have merged it (and its result would race the cancel).
	for l := range states {
		if l.State == host.StateRequesting {
			break
		}
	}
	d2, _ := s.Send(ctx, "two")
	if err := s.CancelMessage(ctx, d2.UUID); err != nil {
		t.Fatal(err)
	}
	if _, err := d2.Wait(ctx); !errors.Is(err, host.ErrMessageCancelled) || d2.Status() != host.DeliveryCancelled {
		t.Errorf("cancelled delivery: %v, %v", d2.Status(), err)
	}
	if _, err := d1.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.CancelMessage(ctx, d1.UUID); !errors.Is(err, host.ErrNotQueued) {
		t.Errorf("cancelling an answered message: %v", err)
	}
	d3, _ := s.Send(ctx, "three")
	if err := s.CancelMessage(ctx, d3.UUID); !errors.Is(err, host.ErrNotQueued) {
		t.Errorf("cancelling a message the CLI took: %v", err)
	}
}

func TestMessagesSubscribersAndWatchEnd(t *testing.T) {
	ctx := testCtx(t)
	s, _ := start(t, nil, claudetest.Echo)
	slow := s.Messages(ctx) // never read until the end: must not block anything
	fast := s.Messages(ctx)
	for i := range 3 {
		d, err := s.Send(ctx, fmt.Sprint("m", i))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := d.Wait(ctx); err != nil {
			t.Fatal(err)
		}
	}
	count := func(seq func(func(claude.Message, error) bool)) (n int, last error) {
		for m, err := range seq {
			if _, ok := m.(*claude.ResultMessage); ok {
				n++
			}
			if m == nil {
				last = err
			}
		}
		return
	}
	w := s.Watch(ctx)
	go s.Close()
	for _, seq := range []func(func(claude.Message, error) bool){fast, slow} {
		if n, last := count(seq); n != 3 || !errors.Is(last, claude.ErrClosed) {
			t.Errorf("subscriber saw %d results, ended with %v", n, last)
		}
	}
	var final host.Liveness
	for l := range w {
		final = l
	}
	if final.State != host.StateDisconnected || !errors.Is(final.Err, claude.ErrClosed) {
		t.Errorf("last watched state %v", final)
	}
	if n, last := count(s.Messages(ctx)); n != 0 || !errors.Is(last, claude.ErrClosed) {
		t.Errorf("Messages after Close: %d, %v", n, last)
	}
}

func TestWatchCoalescesForASlowWatcher(t *testing.T) {
	ctx := testCtx(t)
	const turns = 400
	s, l := start(t, nil, func(ctx context.Context, c *claudetest.CLI) error {
		if _, err := c.HandleInitialize(ctx); err != nil {
			return err
		}
		if _, err := c.ReadUser(ctx); err != nil {
			return err
		}
		for range turns {
			c.Write(c.SystemInit(), c.AssistantText("x"), c.ResultSuccess("x"))
		}
		_, err := c.ReadUser(ctx)
		return err
	})
	slow := s.Watch(ctx)
	s.Send(ctx, "go")
	const final = 2 + 3*turns // starting, ready, then three per turn
	l.waitFor(t, ctx, "all turns", func(v host.Liveness) bool { return v.Seq >= final })
	var got []host.Liveness
	for v := range slow {
		got = append(got, v)
		if v.Seq >= final {
			break
		}
	}
	missed := uint64(0)
	for _, v := range got {
		missed += v.Missed
	}
	last := got[len(got)-1]
	if len(got) > 257 || last.State != host.StateIdle || last.Seq != final || uint64(len(got))+missed != final-1 {
		t.Errorf("slow watcher got %d values, missed %d, last %v (seq %d)", len(got), missed, last, last.Seq)
	}
}

func TestForceInterrupt(t *testing.T) {
	for _, c := range []struct {
		script string
		want   host.InterruptStep
	}{
		{"honours-interrupt", host.InterruptedByRequest},
		{"ignores-interrupt", host.InterruptedBySignal},
		{"ignores-sigint", host.InterruptedByKill},
	} {
		t.Run(c.script, func(t *testing.T) {
			ctx := testCtx(t)
			o := &host.Options{CLI: claudetest.ExecOptions(c.script), InterruptTimeout: 500 * time.Millisecond}
			s, err := host.Start(ctx, o)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			l := watchStates(ctx, s)
			pid := s.Claude().PID()
			s.Send(ctx, "go")
			l.waitState(t, ctx, host.StateStreaming)
			step, err := s.ForceInterrupt(ctx)
			if err != nil || step != c.want {
				t.Fatalf("ForceInterrupt = %v, %v; want %v", step, err, c.want)
			}
			if c.want == host.InterruptedByRequest {
				return
			}
			<-s.Done()
			<-l.done
			if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
				t.Errorf("CLI %d still there: %v", pid, err)
			}
			last := l.strings()
			if c.want == host.InterruptedByKill && !strings.Contains(last[len(last)-1], host.ErrKilled.Error()) {
				t.Errorf("states %q", last)
			}
		})
	}
}

func TestRestartResumesAfterCrash(t *testing.T) {
	ctx := testCtx(t)
	fake := &claudetest.FakeCLI{}
	fake.Script = func(ctx context.Context, c *claudetest.CLI) error {
		if len(fake.Launches()) == 1 {
			if _, err := c.HandleInitialize(ctx); err != nil {
				return err
			}
			if _, err := c.ReadUser(ctx); err != nil {
				return err
			}
			c.Write(c.SystemInit(), textStart(c), c.TextDelta(0, "hal"))
			return errors.New("crash: out of memory")
		}
		return claudetest.Echo(ctx, c)
	}
	o := &host.Options{CLI: &claude.Options{Transport: fake}, Restart: &host.RestartPolicy{Delay: time.Millisecond}}
	s, err := host.Start(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	l := watchStates(ctx, s)
	d, _ := s.Send(ctx, "hello")
	if _, err := d.Wait(ctx); err == nil || d.Status() != host.DeliveryLost {
		t.Errorf("delivery across the crash: %v, %v", d.Status(), err)
	}
	l.waitState(t, ctx, host.StateStarting)
	l.waitFor(t, ctx, "ready again", func(v host.Liveness) bool { return v.State == host.StateReady && v.Seq > 2 })
	sid := s.SessionID() // the CLI's, as its messages said
	ls := fake.Launches()
	if len(ls) != 2 || !contains(ls[1].Args, "--resume="+sid) || s.ID() == "" {
		t.Fatalf("restart launched %v (session %s)", ls[len(ls)-1].Args, sid)
	}
	d, err = s.Send(ctx, "again")
	if err != nil {
		t.Fatal(err)
	}
	if r, err := d.Wait(ctx); err != nil || r.Result != "echo: again" {
		t.Errorf("after restart: %v, %v", r, err)
	}
	l.waitState(t, ctx, host.StateIdle)
	got := l.strings()
	want := []string{"ready", "requesting", "streaming", "disconnected: claude: CLI exited with code 1: crash: out of memory", "starting", "ready", "requesting", "streaming", "idle"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("states\n got %q\nwant %q", got, want)
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

func TestRestartStartsFreshWhenNothingToResume(t *testing.T) {
	ctx := testCtx(t)
	fake := &claudetest.FakeCLI{}
	fake.Script = func(ctx context.Context, c *claudetest.CLI) error {
		if contains(c.Launch.Args, "--resume="+c.SessionID()) {
			return errors.New("No conversation found with session ID: " + c.SessionID())
		}
		if len(fake.Launches()) == 1 {
			if _, err := c.HandleInitialize(ctx); err != nil {
				return err
			}
			if _, err := c.ReadUser(ctx); err != nil {
				return err
			}
			c.Write(c.SystemInit(), c.AssistantText("hi"), c.ResultSuccess("hi"))
			return errors.New("crash")
		}
		return claudetest.Echo(ctx, c)
	}
	o := &host.Options{CLI: &claude.Options{Transport: fake}, Restart: &host.RestartPolicy{Delay: time.Millisecond}}
	s, err := host.Start(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	msgs := s.Messages(ctx)
	l := watchStates(ctx, s)
	d, _ := s.Send(ctx, "hello")
	d.Wait(ctx)
	l.waitState(t, ctx, host.StateStarting)
	l.waitFor(t, ctx, "ready again", func(v host.Liveness) bool { return v.State == host.StateReady && v.Seq > 2 })
	ls := fake.Launches()
	if len(ls) != 3 || contains(ls[2].Args, "--resume=00000000-0000-4000-8000-000000000001") {
		t.Errorf("launches: %d, last %v", len(ls), ls[len(ls)-1].Args)
	}
	var notResumed bool
	for m, err := range msgs {
		if errors.Is(err, host.ErrNotResumed) {
			notResumed = true
			break
		}
		if m == nil && err != nil && !strings.Contains(err.Error(), "crash") {
			t.Fatal(err)
		}
	}
	if !notResumed {
		t.Error("subscribers were not told the conversation was lost")
	}
	d, _ = s.Send(ctx, "again")
	if r, err := d.Wait(ctx); err != nil || r.Result != "echo: again" {
		t.Errorf("after a fresh start: %v, %v", r, err)
	}
}
