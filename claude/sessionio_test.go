package claude_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
)

// Session I/O under faults (issue 10): writes to a CLI that stopped
// reading, a CLI that never answers initialize, a start that fails with a
// result line. The fakes run as real subprocesses, so pipes, signals and
// process states are real.

func init() {
	// stop-after-init answers initialize, then stops itself (SIGSTOP) with
	// SIGTERM ignored; continued (SIGCONT), it echoes like Echo.
	scripts["stop-after-init"] = func(ctx context.Context, c *claudetest.CLI) error {
		if _, err := c.HandleInitialize(ctx); err != nil {
			return err
		}
		signal.Ignore(syscall.SIGTERM)
		syscall.Kill(os.Getpid(), syscall.SIGSTOP)
		for {
			u, err := c.ReadUser(context.Background())
			if err != nil {
				return nil
			}
			text := "echo: " + claudetest.UserText(u.Raw)
			if len(text) > 40 {
				text = text[:40]
			}
			if err := c.Write(c.SystemInit(), c.AssistantText(text), c.ResultSuccess(text)); err != nil {
				return err
			}
		}
	}
	// never-read answers initialize, then neither reads nor writes, and
	// ignores SIGTERM.
	scripts["never-read"] = func(ctx context.Context, c *claudetest.CLI) error {
		if _, err := c.HandleInitialize(ctx); err != nil {
			return err
		}
		signal.Ignore(syscall.SIGTERM)
		// Stopped, it reads nothing more: the fake's own loop would
		// otherwise read a line ahead of the script, a long one whole,
		// which on a quiet machine takes less than a test's deadline.
		// SIGKILL (Close's last resort) ends it stopped.
		syscall.Kill(os.Getpid(), syscall.SIGSTOP)
		time.Sleep(time.Hour)
		return nil
	}
	// no-initialize says something on stderr and never answers.
	scripts["no-initialize"] = func(ctx context.Context, c *claudetest.CLI) error {
		fmt.Fprintln(os.Stderr, "loading plugins…")
		signal.Ignore(syscall.SIGTERM)
		time.Sleep(time.Hour)
		return nil
	}
	// resume-unknown fails its start the way the CLI does for an unknown
	// --resume id: a result line with is_error and errors[], then exit 1.
	scripts["resume-unknown"] = func(ctx context.Context, c *claudetest.CLI) error {
		c.Write(map[string]any{
			"type": "result", "subtype": "error_during_execution", "is_error": true, "duration_ms": 0,
			"num_turns": 0, "session_id": "0b6c1c9e-0000-4000-8000-000000000000", "total_cost_usd": 0,
			"errors": []string{"No conversation found with session ID: 0b6c1c9e-0000-4000-8000-000000000000"},
		})
		return errors.New("Error: no conversation found")
	}
}

// fdCount is the number of this process's open file descriptors.
func fdCount(t *testing.T) int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	return len(ents)
}

// checkFDs fails unless the fd count drops back to before (briefly polled:
// the runtime may close a few asynchronously).
func checkFDs(t *testing.T, before int) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for {
		n := fdCount(t)
		if n <= before {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("%d fds open after Close, %d before", n, before)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// checkGoroutines fails unless the goroutine count drops back to before
// (briefly polled: exiting goroutines take a moment to be counted out).
func checkGoroutines(t *testing.T, before int) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			t.Errorf("%d goroutines after Close, %d before", runtime.NumGoroutine(), before)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitStopped waits until process pid is stopped (state T).
func waitStopped(t *testing.T, pid int) {
	t.Helper()
	for range 500 {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			t.Fatalf("reading the CLI's state: %v", err)
		}
		if f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:])); len(f) > 0 && (f[0] == "T" || f[0] == "t") {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("the CLI did not stop")
}

// hangGuard is how long a call with a bound of its own (a ctx deadline,
// CloseTimeout) may take before these tests call it hung. The bug they
// guard against is a call that never returns; how fast it returns is not
// asserted, since a clock assertion fails on a starved machine and speed
// goals belong in benchmarks. The guard is far above any bound here.
const hangGuard = time.Minute

// returns runs f and fails the test if f has not returned within
// hangGuard. promised is the bound the API documents: it is logged beside
// the time taken, for whoever reads a slow run's log, not asserted.
func returns(t *testing.T, what string, promised time.Duration, f func()) {
	t.Helper()
	start := time.Now()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	guard := time.NewTimer(hangGuard)
	defer guard.Stop()
	select {
	case <-done:
		t.Logf("%s took %v (promised %v; 0 is none)", what, time.Since(start).Round(time.Millisecond), promised)
	case <-guard.C:
		t.Fatalf("%s has not returned after %v (promised %v): hung", what, hangGuard, promised)
	}
}

// A stopped CLI: a prompt larger than the pipe is cut at Send's deadline,
// which breaks the input; every later write returns at once; Close kills
// the CLI within CloseTimeout + 1 s although it ignores SIGTERM.
func TestWriteToStoppedCLI(t *testing.T) {
	fds, gs := fdCount(t), runtime.NumGoroutine()
	o := claudetest.ExecOptions("stop-after-init")
	o.CloseTimeout = 500 * time.Millisecond
	s, err := claude.Connect(testCtx(t), o)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	waitStopped(t, s.PID())

	big := strings.Repeat("x", 1<<20)
	// 3 s: long enough for the writer to start the line even on a loaded
	// machine (a line whose ctx ends before it starts is dropped whole,
	// and the input is not broken; 1 s was not always enough in CI).
	returns(t, "Send to a stopped CLI", 3*time.Second, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		err = s.Send(ctx, big)
	})
	// It says ErrInputBroken too unless the writer was slow to report
	// (abandonWait); the writes below say it in any case.
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Send = %v, want DeadlineExceeded", err)
	}
	// Each later write returns within its ctx whatever happened. If the
	// line was cut (the usual case: the writer started it and the pipe
	// filled), each fails at once with ErrInputBroken (or, if the writer
	// is still busy with the cut line on a loaded machine, as soon as it
	// is done, well within the ctx). On a starved CI machine the writer
	// has been seen to reach the line only after its deadline: then
	// nothing of it went out, it was dropped whole, and the input is not
	// broken (the first write below then fits in the empty pipe).
	cut := false
	for i, c := range []struct {
		name string
		call func(ctx context.Context) error
	}{
		{"Send", func(ctx context.Context) error { return s.Send(ctx, "hi") }},
		{"Interrupt", func(ctx context.Context) error { return s.Interrupt(ctx) }},
		{"SetModel", func(ctx context.Context) error { return s.SetModel(ctx, "haiku") }},
	} {
		returns(t, c.name, 2*time.Second, func() {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			err = c.call(ctx)
		})
		if i == 0 {
			cut = errors.Is(err, claude.ErrInputBroken)
			if !cut {
				t.Logf("the 1 MiB line was not started before its deadline (Send after it = %v): dropped whole, input not broken", err)
				if err != nil {
					t.Errorf("Send into an unbroken, empty pipe = %v", err)
				}
			}
			continue
		}
		if cut && !errors.Is(err, claude.ErrInputBroken) {
			t.Errorf("%s after a cut line = %v, want ErrInputBroken", c.name, err)
		}
		if !cut && !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%s to a stopped CLI = %v, want DeadlineExceeded", c.name, err)
		}
	}
	returns(t, "Close", o.CloseTimeout+time.Second, func() { err = s.Close() })
	if err != nil {
		t.Errorf("Close = %v", err)
	}
	var pe *claude.ProcessError
	if err := s.Wait(); !errors.As(err, &pe) || pe.Signal != "SIGKILL" {
		t.Errorf("Wait after Close = %v, want a *ProcessError saying SIGKILL", err)
	}
	checkFDs(t, fds)
	checkGoroutines(t, gs)
}

// A line whose ctx ends before any of it could go out (the pipe is full)
// is dropped whole: the session stays usable, and once the CLI reads again
// it sees every line but the dropped one.
func TestWriteDroppedWholeStaysUsable(t *testing.T) {
	ctx := testCtx(t)
	s, err := claude.Connect(ctx, claudetest.ExecOptions("stop-after-init"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	waitStopped(t, s.PID())

	// Fill the pipe with lines of exactly one page each, so that it ends
	// full on a line boundary.
	pad := func(i, size int) string {
		prefix := fmt.Sprintf("p%03d ", i)
		b, _ := json.Marshal(claude.NewUserMessage(prefix))
		return prefix + strings.Repeat("y", size-len(b)-1)
	}
	sent := 0
	for i := 0; ; i++ {
		wctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		err := s.Send(wctx, pad(i, 4096))
		cancel()
		if err == nil {
			sent++
			continue
		}
		if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, claude.ErrInputBroken) {
			t.Fatalf("Send %d into a full pipe = %v, want DeadlineExceeded without breaking the input", i, err)
		}
		break
	}
	if sent == 0 {
		t.Fatal("no line fitted in the pipe")
	}
	syscall.Kill(s.PID(), syscall.SIGCONT)
	if err := s.Send(ctx, "after"); err != nil {
		t.Fatalf("Send after SIGCONT = %v", err)
	}
	var got []string
	for m, err := range s.Receive(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		if a, ok := m.(*claude.AssistantMessage); ok {
			got = append(got, a.Text())
			if a.Text() == "echo: after" {
				break
			}
		}
	}
	if len(got) != sent+1 || got[sent] != "echo: after" || !strings.HasPrefix(got[sent-1], fmt.Sprintf("echo: p%03d", sent-1)) {
		t.Errorf("the CLI echoed %d lines (last %q), want the %d that fitted and then \"after\"", len(got), got[len(got)-1], sent)
	}
}

// A CLI that never reads stdin and ignores SIGTERM, over a transport
// without write deadlines (in-process pipes): Send and later writes still
// return at their own deadlines, and Close within its bound.
func TestWriteNeverReadInProcess(t *testing.T) {
	o := &claude.Options{
		CloseTimeout: 300 * time.Millisecond,
		Transport: &claudetest.FakeCLI{Script: func(ctx context.Context, c *claudetest.CLI) error {
			if _, err := c.HandleInitialize(ctx); err != nil {
				return err
			}
			<-ctx.Done() // never reads again
			return nil
		}},
	}
	s, err := claude.Connect(testCtx(t), o)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// The fake reads one line ahead of its script: after this one it
	// reads nothing more.
	if err := s.Send(testCtx(t), "read ahead"); err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("z", 1<<20)
	for i, call := range []func(ctx context.Context) error{
		func(ctx context.Context) error { return s.Send(ctx, big) },
		func(ctx context.Context) error { return s.SetModel(ctx, "haiku") },
		func(ctx context.Context) error { return s.Interrupt(ctx) },
	} {
		returns(t, fmt.Sprintf("write %d", i), 200*time.Millisecond, func() {
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()
			err = call(ctx)
		})
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("write %d = %v, want DeadlineExceeded", i, err)
		}
	}
	returns(t, "Close", o.CloseTimeout+time.Second, func() { s.Close() })
}

// A subprocess that never reads: Close returns within its bound, and a
// permission answer queued behind a stuck write gives up at its own
// deadline.
func TestCloseNeverReadingCLI(t *testing.T) {
	fds, gs := fdCount(t), runtime.NumGoroutine()
	o := claudetest.ExecOptions("never-read")
	o.CloseTimeout = 500 * time.Millisecond
	s, err := claude.Connect(testCtx(t), o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if err := s.Send(ctx, strings.Repeat("w", 4<<20)); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Send = %v", err)
	}
	returns(t, "Close", o.CloseTimeout+time.Second, func() { err = s.Close() })
	if err != nil {
		t.Errorf("Close = %v", err)
	}
	checkFDs(t, fds)
	checkGoroutines(t, gs)
}

// Connect returns at its ctx's deadline against a CLI that never answers
// initialize, with an *InitializeError carrying the CLI's stderr; with no
// deadline, Options.InitializeTimeout bounds it.
func TestConnectInitializeTimeout(t *testing.T) {
	fds := fdCount(t)
	o := claudetest.ExecOptions("no-initialize")
	// The ctx's deadline passes once the CLI has said something on stderr:
	// a state, not a time, so that a starved machine (where the fake CLI,
	// this test binary started again, takes seconds to start) still sees
	// the stderr tail in the error.
	said := make(chan struct{})
	var once sync.Once
	o.Stderr = func(line string) {
		if strings.Contains(line, "loading plugins") {
			once.Do(func() { close(said) })
		}
	}
	var err error
	returns(t, "Connect (ctx ends after stderr)", 0, func() { _, err = claude.Connect(deadlineWhen{context.Background(), said}, o) })
	var ie *claude.InitializeError
	if !errors.As(err, &ie) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Connect = %v, want an *InitializeError matching DeadlineExceeded", err)
	}
	if !strings.Contains(strings.Join(ie.Stderr, "\n"), "loading plugins") || !strings.Contains(err.Error(), "did not answer initialize") {
		t.Errorf("error = %v, want the stderr tail and what failed", err)
	}
	if !strings.Contains(err.Error(), "before the caller's context ended") || strings.Contains(err.Error(), "bound") {
		t.Errorf("error = %v, want it to say the caller's ctx ended, not the bound", err)
	}
	o.Stderr = nil

	o.InitializeTimeout = 2 * time.Second
	returns(t, "Connect (InitializeTimeout 2 s)", 2*time.Second, func() { _, err = claude.Connect(context.Background(), o) })
	if !errors.As(err, &ie) || !errors.Is(err, context.DeadlineExceeded) || ie.Timeout != 2*time.Second {
		t.Fatalf("Connect = %v, want an *InitializeError after 2 s", err)
	}
	if !strings.Contains(err.Error(), "(bound 2s)") {
		t.Errorf("error = %v, want it to name the bound that ended it", err)
	}

	ctx2, cancel2 := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel2)
	if _, err = claude.Connect(ctx2, o); !errors.Is(err, context.Canceled) {
		t.Errorf("Connect with a cancelled ctx = %v, want context.Canceled", err)
	}
	checkFDs(t, fds)
}

// deadlineWhen is a ctx whose deadline passes when done closes: a test
// ends it on a state it has seen, and the code under test gets the
// DeadlineExceeded a timer would have given it.
type deadlineWhen struct {
	context.Context
	done <-chan struct{}
}

func (c deadlineWhen) Done() <-chan struct{} { return c.done }

func (c deadlineWhen) Err() error {
	select {
	case <-c.done:
		return context.DeadlineExceeded
	default:
		return nil
	}
}

// A CLI that fails its start with a result line (an unknown --resume id):
// Connect's error carries that line's *ResultError besides the
// *ProcessError.
func TestConnectFailureKeepsResult(t *testing.T) {
	_, err := claude.Connect(testCtx(t), claudetest.ExecOptions("resume-unknown"))
	var re *claude.ResultError
	var pe *claude.ProcessError
	if !errors.As(err, &re) || !errors.As(err, &pe) {
		t.Fatalf("Connect = %v, want a *ResultError and a *ProcessError", err)
	}
	if len(re.Errors) != 1 || !strings.Contains(re.Errors[0], "No conversation found") || pe.ExitCode != 1 {
		t.Errorf("ResultError = %+v, ProcessError = %+v", re, pe)
	}
}
