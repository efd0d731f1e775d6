//go:build unix

package proc

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// envChild selects the behaviour of a re-executed test binary: the tests
// run copies of themselves as the CLI, and as the CLI's children.
const envChild = "TETHER_PROC_TEST_CHILD"

func TestMain(m *testing.M) {
	if mode, ok := os.LookupEnv(envChild); ok {
		os.Exit(child(mode, os.Args[1:]))
	}
	goleak.VerifyTestMain(m)
}

// child plays one behaviour and returns the exit code.
func child(mode string, args []string) int {
	switch mode {
	case "echo": // copy stdin to stdout; exit 0 at EOF
		io.Copy(os.Stdout, os.Stdin)
		return 0

	case "stderr": // write the lines the stderr test expects, then exit 3
		w := bufio.NewWriter(os.Stderr)
		for i := range 100 {
			fmt.Fprintf(w, "line %d\n", i)
		}
		fmt.Fprintf(w, "%s\n", strings.Repeat("x", 100<<10))
		fmt.Fprint(w, "crlf line\r\n\nno newline")
		w.Flush()
		return 3

	case "ignore-eof": // read stdin to EOF, then wait; SIGTERM kills it
		io.Copy(io.Discard, os.Stdin)
		time.Sleep(time.Hour)
		return 0

	case "trap-term": // ignore EOF; exit 143 on SIGTERM, as the CLI does
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, syscall.SIGTERM)
		fmt.Println("ready")
		io.Copy(io.Discard, os.Stdin)
		<-sig
		fmt.Fprintln(os.Stderr, "got SIGTERM")
		return 143

	case "ignore-term": // survive EOF and SIGTERM
		signal.Ignore(syscall.SIGTERM)
		fmt.Println("ready")
		io.Copy(io.Discard, os.Stdin)
		time.Sleep(time.Hour)
		return 0

	case "spew": // spew N: write N numbered lines to stderr, exit 0
		n, _ := strconv.Atoi(args[0])
		w := bufio.NewWriter(os.Stderr)
		for i := range n {
			fmt.Fprintf(w, "line %d\n", i)
		}
		w.Flush()
		return 0

	case "exit": // exit at once with the code in args[0]
		code, _ := strconv.Atoi(args[0])
		return code

	case "sleep": // a grandchild: just stay alive
		time.Sleep(time.Hour)
		return 0

	case "spawn": // spawn N [setsid] THEN: start N sleeping grandchildren
		// that share our stdout and stderr, print their PIDs, then behave
		// as THEN. With "setsid" they leave our process group.
		n, _ := strconv.Atoi(args[0])
		setsid := args[1] == "setsid"
		if setsid {
			args = args[1:]
		}
		var pids []string
		for range n {
			c := selfCmd("sleep")
			c.Stdout, c.Stderr = os.Stdout, os.Stderr
			c.SysProcAttr = &syscall.SysProcAttr{Setsid: setsid}
			if err := c.Start(); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 2
			}
			pids = append(pids, strconv.Itoa(c.Process.Pid))
		}
		fmt.Println(strings.Join(pids, " "))
		return child(args[1], args[2:])

	case "host": // start a sleeping CLI, print its PID, die without Close
		p, err := Start(Config{Path: selfPath(), Env: childEnv("sleep")})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		fmt.Println(p.PID())
		return 0

	case "host-tree": // host-tree HOW: start a CLI that spawns two setsid
		// grandchildren, print the CLI's PID and theirs, then die without
		// Close once the test writes a line: HOW is "exit" (os.Exit),
		// "panic", or "kill" (wait for the test to SIGKILL us).
		p, err := Start(Config{Path: selfPath(), Args: []string{"2", "setsid", "ignore-eof"}, Env: childEnv("spawn")})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		line, err := bufio.NewReader(p.Stdout()).ReadString('\n')
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		fmt.Printf("%d %s", p.PID(), line)
		bufio.NewReader(os.Stdin).ReadString('\n') // the test has looked
		switch args[0] {
		case "panic":
			panic("host-tree panics")
		case "kill":
			time.Sleep(time.Hour)
		}
		os.Exit(0)
	}
	fmt.Fprintf(os.Stderr, "unknown child mode %q\n", mode)
	return 2
}

func selfPath() string {
	exe, err := os.Executable()
	if err != nil {
		panic(err) // the test binary can always find itself on unix
	}
	return exe
}

// childEnv is the environment of a child in the given mode. A race-enabled
// binary sleeps a second on exit unless told not to, which would outlast
// the short grace periods these tests use.
func childEnv(mode string) []string {
	return append(os.Environ(), envChild+"="+mode, "GORACE=atexit_sleep_ms=0")
}

func selfCmd(mode string, args ...string) *exec.Cmd {
	c := exec.Command(selfPath(), args...)
	c.Env = childEnv(mode)
	return c
}

// hangGuard bounds every wait in these tests. It only turns a hang into a
// failure; nothing here asserts how fast anything is.
const hangGuard = 60 * time.Second

// startChild starts the test binary as a CLI in the given mode, with short
// shutdown steps, and closes it when the test ends.
func startChild(t *testing.T, c Config, mode string, args ...string) *Process {
	t.Helper()
	c.Path = selfPath()
	c.Args = args
	c.Env = childEnv(mode)
	// A step of Close the child honours gets a long wait (it ends early,
	// costing nothing), a step it ignores a short one: on a busy machine
	// a Go child may take more than 200 ms to die of SIGTERM or to exit
	// at EOF, and Close must not have escalated past what the test
	// expects by then.
	then := mode
	if len(args) > 0 {
		then = args[len(args)-1]
	}
	if c.Grace == 0 {
		c.Grace = time.Minute
		if then == "ignore-eof" || then == "trap-term" || then == "ignore-term" {
			c.Grace = 200 * time.Millisecond
		}
	}
	if c.TermWait == 0 {
		c.TermWait = time.Minute
		if then == "ignore-term" {
			c.TermWait = 200 * time.Millisecond
		}
	}
	p, err := Start(c)
	if err != nil {
		t.Fatalf("Start(%s): %v", mode, err)
	}
	t.Cleanup(func() { closeOrFail(t, p) })
	return p
}

// closeOrFail closes p and fails the test if Close hangs or errs.
func closeOrFail(t *testing.T, p *Process) {
	t.Helper()
	errc := make(chan error, 1)
	go func() { errc <- p.Close() }()
	select {
	case err := <-errc:
		if err != nil {
			t.Errorf("Close: %v", err)
		}
	case <-time.After(hangGuard):
		t.Fatalf("Close hung")
	}
}

// waitDone waits for p to exit on its own.
func waitDone(t *testing.T, p *Process) {
	t.Helper()
	select {
	case <-p.Done():
	case <-time.After(hangGuard):
		t.Fatalf("process %d did not finish", p.PID())
	}
}

// readLine reads one line of stdout.
func readLine(t *testing.T, br *bufio.Reader) string {
	t.Helper()
	line, err := br.ReadString('\n')
	if err != nil {
		t.Fatalf("reading stdout: %v (got %q)", err, line)
	}
	return strings.TrimSuffix(line, "\n")
}

// alive reports whether pid runs. A zombie is not alive: orphans are
// reparented to init, which on some machines never reaps them.
func alive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		if _, statErr := os.Stat("/proc/self/stat"); statErr != nil {
			return syscall.Kill(pid, 0) == nil // no procfs: best effort
		}
		return false
	}
	s := string(stat)
	i := strings.LastIndexByte(s, ')') // the command name may hold anything
	if i < 0 || i+2 >= len(s) {
		return false
	}
	state := s[i+2]
	return state != 'Z' && state != 'X'
}

// exists reports whether pid is in the process table at all, zombie or
// not: for a direct child of the test, "exists" after Close means it was
// not reaped.
func exists(pid int) bool {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		return syscall.Kill(pid, 0) == nil
	}
	_, err := os.Stat(fmt.Sprintf("/proc/%d", pid))
	return err == nil
}

// eventuallyDead waits for each pid to die: SIGKILL is delivered at once
// but a process takes a moment to go.
func eventuallyDead(t *testing.T, pids ...int) {
	t.Helper()
	deadline := time.Now().Add(hangGuard)
	for _, pid := range pids {
		for alive(pid) {
			if time.Now().After(deadline) {
				t.Errorf("process %d still alive", pid)
				syscall.Kill(pid, syscall.SIGKILL)
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// parsePIDs parses a line of space-separated PIDs.
func parsePIDs(t *testing.T, line string) []int {
	t.Helper()
	var pids []int
	for _, f := range strings.Fields(line) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("bad pid line %q", line)
		}
		pids = append(pids, pid)
	}
	return pids
}
