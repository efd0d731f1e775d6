package proc

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/tetherhq/tether/internal/proctree"
)

// tree lists root and every live process below it, through /proc.
func tree(t *testing.T, root int) []proctree.Proc {
	t.Helper()
	ids, err := proctree.Tree(root)
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

// allDie waits for every process in ids to be gone, and kills and reports
// those that are not.
func allDie(t *testing.T, ids []proctree.Proc) {
	t.Helper()
	deadline := time.Now().Add(hangGuard)
	for _, id := range ids {
		for id.Alive() {
			if time.Now().After(deadline) {
				t.Errorf("process %d survived", id.PID)
				syscall.Kill(id.PID, syscall.SIGKILL)
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// pidsIn reports whether every pid is among ids.
func pidsIn(t *testing.T, ids []proctree.Proc, pids ...int) {
	t.Helper()
	have := make(map[int]bool)
	for _, id := range ids {
		have[id.PID] = true
	}
	for _, pid := range pids {
		if !have[pid] {
			t.Fatalf("process %d is not in the CLI's tree %v", pid, ids)
		}
	}
}

// Nothing the CLI started survives the CLI, whatever ended it, even
// processes that left its session (the CLI starts its Bash tool with
// setsid).
func TestNoOrphansWhenTheCLIEnds(t *testing.T) {
	for _, how := range []string{"exits", "SIGKILL", "Close escalates to SIGKILL"} {
		t.Run(how, func(t *testing.T) {
			then := "ignore-term"
			if how == "exits" {
				then = "echo"
			}
			p := startChild(t, Config{}, "spawn", "2", "setsid", then)
			br := bufio.NewReader(p.Stdout())
			kids := parsePIDs(t, readLine(t, br))
			if then == "echo" {
				io.WriteString(p.Stdin(), "ready\n")
			}
			readLine(t, br) // ready, or the echo of it
			before := tree(t, os.Getpid())
			pidsIn(t, before, append(kids, p.PID())...)
			switch how {
			case "exits":
				p.Stdin().(*os.File).Close()
			case "SIGKILL":
				syscall.Kill(p.PID(), syscall.SIGKILL)
			default:
				closeOrFail(t, p)
				if st := p.Exit(); st.Signal != "SIGKILL" {
					t.Errorf("Exit().Signal = %q; want SIGKILL", st.Signal)
				}
			}
			waitDone(t, p)
			allDie(t, before[1:]) // all but the test itself
		})
	}
}

// Nothing the CLI started survives the host, however the host dies without
// Close.
func TestNoOrphansWhenTheHostDies(t *testing.T) {
	for _, how := range []string{"exit", "panic", "kill"} {
		t.Run(how, func(t *testing.T) {
			host := selfCmd("host-tree", how)
			out, err := host.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			in, err := host.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			host.Stderr = nil
			if err := host.Start(); err != nil {
				t.Fatal(err)
			}
			line, err := bufio.NewReader(out).ReadString('\n')
			if err != nil {
				host.Process.Kill()
				host.Wait()
				t.Fatalf("reading the host's output: %v", err)
			}
			pids := parsePIDs(t, line)
			before := tree(t, host.Process.Pid)
			pidsIn(t, before, pids...)
			if how == "kill" {
				host.Process.Signal(syscall.SIGKILL)
			} else {
				io.WriteString(in, "die\n")
			}
			err = host.Wait()
			if how == "panic" || how == "kill" {
				if _, ok := err.(*exec.ExitError); !ok {
					t.Errorf("host: %v; want it to have died", err)
				}
			}
			allDie(t, before[1:]) // all but the (reaped) host
		})
	}
}

// The host holds no OS thread per running process: waiting for one parks
// a goroutine in the poller, not a thread in a system call.
func TestNoThreadPerProcess(t *testing.T) {
	if supervisorPath() == "" {
		t.Skip("no supervisor here")
	}
	const n = 16
	before := threads(t)
	var ps []*Process
	for range n {
		ps = append(ps, startChild(t, Config{}, "echo"))
	}
	runtime.Gosched()
	grown := threads(t) - before
	for _, p := range ps {
		p.Stdin().(*os.File).Close()
	}
	if grown >= n/2 {
		t.Errorf("%d running processes took %d more OS threads", n, grown)
	}
}

func threads(t *testing.T) int {
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", os.Getpid()))
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}
