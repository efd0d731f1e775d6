package proc

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// The CLI dies with the host: a host that exits without Close takes it
// along (Pdeathsig).
func TestDiesWithHost(t *testing.T) {
	host := selfCmd("host")
	out, err := host.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := host.Start(); err != nil {
		t.Fatal(err)
	}
	line, readErr := bufio.NewReader(out).ReadString('\n')
	if err := host.Wait(); err != nil || readErr != nil {
		t.Fatalf("host: %v, reading its output: %v", err, readErr)
	}
	pid, err := strconv.Atoi(line[:len(line)-1])
	if err != nil {
		t.Fatalf("host printed %q", line)
	}
	eventuallyDead(t, pid)
}

// The thread Start is called on may go away (its goroutine exits while
// locked to it) without the CLI getting its death signal: Start forks
// from a thread of its own.
func TestSurvivesCallerThreadExit(t *testing.T) {
	pc := make(chan *Process, 1)
	callerTID := make(chan int, 1)
	call := func() {
		runtime.LockOSThread() // never unlocked: the thread ends with this goroutine
		callerTID <- syscall.Gettid()
		p, err := Start(Config{Path: selfPath(), Env: childEnv("echo")})
		if err != nil {
			t.Error(err)
		}
		pc <- p
	}
	// The runtime never ends the main thread, so call Start on another:
	// hold this goroutine's thread while it runs, and if that is the main
	// thread, call from a nested goroutine, which cannot run on it then.
	go func() {
		runtime.LockOSThread()
		if syscall.Gettid() != os.Getpid() {
			call()
			return // still locked: the thread ends
		}
		done := make(chan struct{})
		go func() { defer close(done); call() }()
		<-done
		runtime.UnlockOSThread()
	}()
	p := <-pc
	if p == nil {
		return
	}
	t.Cleanup(func() { closeOrFail(t, p) })
	tid := <-callerTID
	if tid == os.Getpid() {
		t.Fatal("Start was called on the main thread, which never exits")
	}
	// Wait for the caller's thread to end, then give a death signal time
	// to land, had that thread been the CLI's parent.
	for deadline := time.Now().Add(hangGuard); threadExists(tid); {
		if time.Now().After(deadline) {
			t.Fatalf("the caller's thread %d did not end", tid)
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond)
	br := bufio.NewReader(p.Stdout())
	if _, err := io.WriteString(p.Stdin(), "still here\n"); err != nil {
		t.Fatalf("writing to the CLI: %v", err)
	}
	if got := readLine(t, br); got != "still here" {
		t.Errorf("echoed %q", got)
	}
	closeOrFail(t, p)
	if st := p.Exit(); st.Code != 0 || st.Signal != "" {
		t.Errorf("Exit() = %+v; want a clean exit", st)
	}
}

func threadExists(tid int) bool {
	_, err := os.Stat(fmt.Sprintf("/proc/self/task/%d", tid))
	return err == nil
}
