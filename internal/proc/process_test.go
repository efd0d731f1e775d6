//go:build unix

package proc

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestStartErrors(t *testing.T) {
	if _, err := Start(Config{}); err == nil {
		t.Error("Start with no path succeeded")
	}
	missing := t.TempDir() + "/no-such-cli"
	_, err := Start(Config{Path: missing})
	if err == nil || !strings.Contains(err.Error(), "no-such-cli") {
		t.Errorf("Start(%s) = %v; want an error naming it", missing, err)
	}
	_, err = Start(Config{Path: selfPath(), Dir: missing})
	if err == nil {
		t.Errorf("Start with a missing Dir succeeded")
	}
	// goleak in TestMain proves the failed starts left no goroutines.
}

// A CLI that exits when its stdin closes is given the chance to: Close
// reports a clean exit, sends no signal, and reaps it.
func TestCloseExitsOnEOF(t *testing.T) {
	p := startChild(t, Config{}, "echo")
	if p.PID() <= 0 {
		t.Fatalf("PID = %d", p.PID())
	}
	br := bufio.NewReader(p.Stdout())
	if _, err := io.WriteString(p.Stdin(), "hello\n"); err != nil {
		t.Fatal(err)
	}
	if got := readLine(t, br); got != "hello" {
		t.Errorf("echoed %q, want hello", got)
	}
	closeOrFail(t, p)
	st := p.Exit()
	if st.Code != 0 || st.Signal != "" || st.Err != nil {
		t.Errorf("Exit() = %+v; want code 0, no signal, no error", st)
	}
	if exists(p.PID()) {
		t.Errorf("process %d was not reaped", p.PID())
	}
	if _, err := io.WriteString(p.Stdin(), "late\n"); err == nil {
		t.Error("writing to stdin after Close succeeded")
	}
}

// A process that exits by itself gets Done, its code and its stderr, with
// lines of any length, in order, without Close being called.
func TestExitOnItsOwn(t *testing.T) {
	var got []string // written by the stderr goroutine, read after last
	last := make(chan struct{})
	p := startChild(t, Config{
		StderrTail: 4,
		Stderr: func(line string) {
			got = append(got, line)
			if line == "no newline" {
				close(last)
			}
		},
	}, "stderr")
	waitDone(t, p)
	select {
	case <-last:
	case <-time.After(hangGuard):
		t.Fatal("the Stderr callback never got the last line")
	}

	var want []string
	for i := range 100 {
		want = append(want, fmt.Sprintf("line %d", i))
	}
	long := strings.Repeat("x", 100<<10)
	want = append(want, long, "crlf line", "", "no newline")
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Stderr callback lines (-want +got):\n%s", diff)
	}

	st := p.Exit()
	var exitErr *exec.ExitError
	if st.Code != 3 || st.Signal != "" || !errors.As(st.Err, &exitErr) {
		t.Errorf("Exit() = code %d, signal %q, err %v; want 3, none, *exec.ExitError", st.Code, st.Signal, st.Err)
	}
	wantTail := []string{truncate(long, maxTailLine), "crlf line", "", "no newline"}
	if diff := cmp.Diff(wantTail, st.Stderr); diff != "" {
		t.Errorf("Exit().Stderr (-want +got):\n%s", diff)
	}
	if n := len(st.Stderr[0]); n > maxTailLine {
		t.Errorf("kept a %d-byte line in the tail; max %d", n, maxTailLine)
	}
	if diff := cmp.Diff(wantTail, p.StderrTail()); diff != "" {
		t.Errorf("StderrTail() (-want +got):\n%s", diff)
	}
	closeOrFail(t, p) // after the fact: nothing to do, no error
	if st2 := p.Exit(); st2.Code != 3 || st2.Signal != "" {
		t.Errorf("Close changed the exit status to %+v", st2)
	}
}

func TestCloseSignals(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mode   string
		code   int
		signal string
		stderr string // a line the tail must hold
	}{
		// Ignores EOF, dies of SIGTERM's default action.
		{name: "SIGTERM", mode: "ignore-eof", code: -1, signal: "SIGTERM"},
		// Traps SIGTERM and exits 143, like the CLI: the code is kept and
		// Signal still says Close had to signal it.
		{name: "trapped SIGTERM", mode: "trap-term", code: 143, signal: "SIGTERM", stderr: "got SIGTERM"},
		// Ignores SIGTERM, so only SIGKILL ends it.
		{name: "SIGKILL", mode: "ignore-term", code: -1, signal: "SIGKILL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := startChild(t, Config{}, tc.mode)
			if tc.mode != "ignore-eof" {
				// A signal before the handler is set would kill it outright.
				readLine(t, bufio.NewReader(p.Stdout()))
			}
			closeOrFail(t, p)
			st := p.Exit()
			if st.Code != tc.code || st.Signal != tc.signal {
				t.Errorf("Exit() = code %d, signal %q; want %d, %q", st.Code, st.Signal, tc.code, tc.signal)
			}
			var exitErr *exec.ExitError
			if !errors.As(st.Err, &exitErr) {
				t.Errorf("Exit().Err = %v; want an *exec.ExitError", st.Err)
			}
			if tc.stderr != "" && !strings.Contains(strings.Join(st.Stderr, "\n"), tc.stderr) {
				t.Errorf("Exit().Stderr = %q; want it to hold %q", st.Stderr, tc.stderr)
			}
			if exists(p.PID()) {
				t.Errorf("process %d was not reaped", p.PID())
			}
		})
	}
}

// Nothing in the CLI's process group survives Close, whichever step ended
// the CLI, and grandchildren holding stdout and stderr do not hold up
// Close.
func TestCloseKillsGroup(t *testing.T) {
	for _, tc := range []struct {
		then   string // what the CLI does after spawning
		signal string
	}{
		{then: "echo", signal: ""}, // exits at EOF, leaving its children behind
		{then: "ignore-eof", signal: "SIGTERM"},
		{then: "ignore-term", signal: "SIGKILL"},
	} {
		t.Run(tc.then, func(t *testing.T) {
			p := startChild(t, Config{}, "spawn", "3", tc.then)
			br := bufio.NewReader(p.Stdout())
			kids := parsePIDs(t, readLine(t, br))
			if tc.then == "ignore-term" {
				readLine(t, br) // ready
			}
			for _, pid := range kids {
				if !alive(pid) {
					t.Fatalf("grandchild %d not running before Close", pid)
				}
			}
			closeOrFail(t, p)
			if st := p.Exit(); st.Signal != tc.signal {
				t.Errorf("Exit().Signal = %q, want %q", st.Signal, tc.signal)
			}
			if exists(p.PID()) {
				t.Errorf("process %d was not reaped", p.PID())
			}
			eventuallyDead(t, kids...)
		})
	}
}

// When the CLI exits on its own, what it left in its group is killed then,
// without waiting for Close, and Done does not wait on the pipes the
// leftovers held.
func TestExitKillsLeftovers(t *testing.T) {
	p := startChild(t, Config{}, "spawn", "2", "exit", "0")
	br := bufio.NewReader(p.Stdout())
	kids := parsePIDs(t, readLine(t, br))
	waitDone(t, p)
	eventuallyDead(t, kids...)
	if rest, err := io.ReadAll(br); err != nil || len(rest) != 0 {
		t.Errorf("stdout after exit: %q, %v; want EOF", rest, err)
	}
	if st := p.Exit(); st.Code != 0 || st.Signal != "" || st.Err != nil {
		t.Errorf("Exit() = %+v; want a clean exit", st)
	}
}

// A grandchild that left the process group cannot be killed with it where
// there is no supervisor, but holding stdout and stderr open must neither
// hang Close nor leave a read of Stdout blocked after it.
func TestEscapedGrandchildDoesNotHang(t *testing.T) {
	t.Setenv(envNoSupervisor, "1")
	p := startChild(t, Config{}, "spawn", "1", "setsid", "echo")
	br := bufio.NewReader(p.Stdout())
	kids := parsePIDs(t, readLine(t, br))
	t.Cleanup(func() {
		for _, pid := range kids {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	readErr := make(chan error, 1)
	go func() {
		_, err := io.Copy(io.Discard, br)
		readErr <- err
	}()
	closeOrFail(t, p)
	if st := p.Exit(); st.Code != 0 || st.Signal != "" {
		t.Errorf("Exit() = %+v; want a clean exit", st)
	}
	waitErr(t, readErr) // the blocked read ended
	if !alive(kids[0]) {
		t.Errorf("escaped grandchild %d died; the test proves nothing", kids[0])
	}
}

// Close is idempotent and safe to call concurrently: every call returns
// once the process is gone.
func TestCloseConcurrent(t *testing.T) {
	p := startChild(t, Config{}, "ignore-eof")
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			closeOrFail(t, p)
			select {
			case <-p.Done():
			default:
				t.Error("Close returned before Done")
			}
		})
	}
	wg.Wait()
	closeOrFail(t, p)
	if st := p.Exit(); st.Signal != "SIGTERM" {
		t.Errorf("Exit().Signal = %q, want SIGTERM", st.Signal)
	}
}

func waitErr(t *testing.T, c <-chan error) error {
	t.Helper()
	select {
	case err := <-c:
		return err
	case <-time.After(hangGuard):
		t.Fatal("read of Stdout still blocked after Close")
		return nil
	}
}

// A Stderr callback that panics is recovered: the host lives and the next
// lines are still delivered.
func TestStderrCallbackPanics(t *testing.T) {
	var mu sync.Mutex
	var got []string
	last := make(chan struct{})
	p := startChild(t, Config{Stderr: func(line string) {
		mu.Lock()
		got = append(got, line)
		mu.Unlock()
		if line == "no newline" {
			close(last)
		}
		panic("callback panics on " + line)
	}}, "stderr")
	waitDone(t, p)
	select {
	case <-last:
	case <-time.After(hangGuard):
		t.Fatal("lines after the first panic were not delivered")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 104 {
		t.Errorf("delivered %d lines; want 104", len(got))
	}
}

// A Stderr callback that blocks delays neither Done nor Close; the lines it
// could not take are dropped and counted, and its goroutine ends once it
// returns (goleak in TestMain).
func TestStderrCallbackBlocks(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan struct{}, 1)
	var calls int
	p := startChild(t, Config{Stderr: func(string) {
		calls++
		select {
		case entered <- struct{}{}:
		default:
		}
		<-release
	}}, "spew", "5000")
	waitDone(t, p)
	closeOrFail(t, p)
	<-entered
	st := p.Exit()
	if st.Code != 0 {
		t.Errorf("Exit() = %+v", st)
	}
	// One line in the callback, at most a queue's worth waiting, the rest
	// dropped.
	if st.StderrDropped < 5000-1-stderrQueueLines {
		t.Errorf("StderrDropped = %d; want at least %d", st.StderrDropped, 5000-1-stderrQueueLines)
	}
	if len(st.Stderr) == 0 || st.Stderr[len(st.Stderr)-1] != "line 4999" {
		t.Errorf("the tail lost lines: ends %q", st.Stderr[len(st.Stderr)-1:])
	}
	close(release)
}
