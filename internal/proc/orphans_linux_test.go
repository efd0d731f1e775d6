package proc

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A process identity that survives PID reuse: the PID and its start time.
type procID struct {
	pid   int
	start string
}

// statFields returns the fields of /proc/pid/stat after the command name:
// state is [0], ppid [1], starttime [19].
func statFields(pid int) []string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return nil
	}
	return strings.Fields(s[i+1:])
}

// tree lists root and every live process below it, through /proc.
func tree(t *testing.T, root int) []procID {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	kids := make(map[int][]int)
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if f := statFields(pid); len(f) > 1 {
			ppid, _ := strconv.Atoi(f[1])
			kids[ppid] = append(kids[ppid], pid)
		}
	}
	var out []procID
	queue := []int{root}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		if f := statFields(pid); len(f) > 19 && f[0] != "Z" && f[0] != "X" {
			out = append(out, procID{pid, f[19]})
		}
		queue = append(queue, kids[pid]...)
	}
	return out
}

// aliveID reports whether the very process id is still running.
func aliveID(id procID) bool {
	f := statFields(id.pid)
	return len(f) > 19 && f[19] == id.start && f[0] != "Z" && f[0] != "X"
}

// allDie waits for every process in ids to be gone, and kills and reports
// those that are not.
func allDie(t *testing.T, ids []procID) {
	t.Helper()
	deadline := time.Now().Add(hangGuard)
	for _, id := range ids {
		for aliveID(id) {
			if time.Now().After(deadline) {
				t.Errorf("process %d survived", id.pid)
				syscall.Kill(id.pid, syscall.SIGKILL)
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// pidsIn reports whether every pid is among ids.
func pidsIn(t *testing.T, ids []procID, pids ...int) {
	t.Helper()
	have := make(map[int]bool)
	for _, id := range ids {
		have[id.pid] = true
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
