package claude_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
	"github.com/tetherhq/tether/internal/proctree"
)

// The real CLI starts its Bash tool in a session of its own (setsid), out
// of reach of a process-group kill and of the CLI's death signal. These
// tests run `sleep 300` in Bash, end the CLI or its host in every rude way,
// and count the processes below it through /proc: none may survive.

// envOrphanHost makes the test binary a host process for
// TestRealCLINoOrphansHostDies; its value is the orphanSpec as JSON.
const envOrphanHost = "TETHER_ORPHAN_HOST"

type orphanSpec struct {
	Path string
	Dir  string
	Env  map[string]string
	How  string // "exit", "panic" or "kill"
}

func init() {
	if v := os.Getenv(envOrphanHost); v != "" {
		orphanHost(v)
	}
}

// orphanHost connects the CLI, has it run `sleep 300` in Bash, prints
// "running", and dies without Close when told to (or when SIGKILLed).
func orphanHost(v string) {
	var spec orphanSpec
	if err := json.Unmarshal([]byte(v), &spec); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	ctx := context.Background()
	s, err := claude.Connect(ctx, &claude.Options{
		CLIPath: spec.Path, Cwd: spec.Dir, Env: spec.Env, EnvOnly: true,
		CanUseTool: func(context.Context, *claude.ToolPermissionRequest) (claude.PermissionResult, error) {
			return &claude.PermissionAllow{}, nil
		},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if err := s.Send(ctx, "run sleep"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	go func() {
		for range s.Receive(ctx) {
		}
	}()
	fmt.Println(s.PID())
	bufio.NewReader(os.Stdin).ReadString('\n') // the test has seen the sleep
	if spec.How == "panic" {
		panic("the host panics")
	}
	if spec.How == "kill" {
		time.Sleep(time.Hour) // until the test SIGKILLs us
	}
	os.Exit(0)
}

func sleepAPI() *claudetest.MessagesServer {
	return claudetest.NewMessagesServer(&claudetest.MessagesOptions{Replies: []*claudetest.Reply{
		claudetest.ToolUseReply("toolu_sleep", "Bash", map[string]any{"command": "sh -c 'sleep 300'", "description": "wait"}),
		claudetest.TextReply("done"),
	}})
}

func TestRealCLINoOrphansCLIDies(t *testing.T) {
	for _, how := range []string{"SIGKILL", "Close escalates to SIGKILL"} {
		t.Run(how, func(t *testing.T) {
			api := sleepAPI()
			t.Cleanup(api.Close)
			cli := claudetest.NewRealCLI(t, api)
			opts := cli.Options()
			opts.CanUseTool = func(context.Context, *claude.ToolPermissionRequest) (claude.PermissionResult, error) {
				return &claude.PermissionAllow{}, nil
			}
			opts.CloseTimeout = 200 * time.Millisecond
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			s, err := claude.Connect(ctx, opts)
			if err != nil {
				t.Fatal(err)
			}
			closed := false
			defer func() {
				if !closed {
					s.Close()
				}
			}()
			if err := s.Send(ctx, "run sleep"); err != nil {
				t.Fatal(err)
			}
			received := make(chan struct{})
			go func() {
				defer close(received)
				for m := range s.Receive(ctx) {
					if u, ok := m.(*claude.UserMessage); ok {
						for _, r := range u.ToolResults() {
							t.Logf("tool result (the sleep ended?): %s", r.Text())
						}
					}
				}
			}()
			before := waitForSleep(t, s.PID())
			switch how {
			case "SIGKILL":
				syscall.Kill(s.PID(), syscall.SIGKILL)
				<-received // the session saw the CLI die
			default:
				// A stopped CLI acts on nothing but SIGKILL.
				syscall.Kill(s.PID(), syscall.SIGSTOP)
				s.Close()
				closed = true
				<-received
			}
			allGone(t, before)
		})
	}
}

func TestRealCLINoOrphansHostDies(t *testing.T) {
	for _, how := range []string{"kill", "exit", "panic"} {
		t.Run(how, func(t *testing.T) {
			api := sleepAPI()
			t.Cleanup(api.Close)
			cli := claudetest.NewRealCLI(t, api)
			opts := cli.Options()
			spec, _ := json.Marshal(orphanSpec{Path: cli.Path, Dir: cli.Dir, Env: opts.Env, How: how})
			exe, err := os.Executable()
			if err != nil {
				t.Fatal(err)
			}
			host := exec.Command(exe, "-test.run=^$")
			host.Env = append(os.Environ(), envOrphanHost+"="+string(spec), "GORACE=atexit_sleep_ms=0")
			var stderr bytes.Buffer
			host.Stderr = &stderr
			in, _ := host.StdinPipe()
			out, _ := host.StdoutPipe()
			if err := host.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() {
				host.Process.Kill()
				host.Wait()
			}()
			line, err := bufio.NewReader(out).ReadString('\n')
			if err != nil {
				t.Fatalf("the host printed nothing: %v; stderr: %s", err, stderr.Bytes())
			}
			if _, err := strconv.Atoi(strings.TrimSpace(line)); err != nil {
				t.Fatalf("the host printed %q", line)
			}
			waitForSleep(t, host.Process.Pid)
			before := processTree(t, host.Process.Pid)[1:] // all but the host
			if how == "kill" {
				host.Process.Signal(syscall.SIGKILL)
			} else {
				io.WriteString(in, "die\n")
			}
			host.Wait()
			allGone(t, before)
		})
	}
}

// processTree lists root and every live process below it.
func processTree(t *testing.T, root int) []proctree.Proc {
	t.Helper()
	ids, err := proctree.Tree(root)
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

// waitForSleep waits until `sleep 300` runs below root and returns the
// tree then.
func waitForSleep(t *testing.T, root int) []proctree.Proc {
	t.Helper()
	for deadline := time.Now().Add(45 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		ids := processTree(t, root)
		for _, id := range ids {
			if id.Cmd == "sleep 300" {
				return ids
			}
		}
	}
	t.Fatalf("no `sleep 300` below process %d: %v", root, processTree(t, root))
	return nil
}

// allGone waits for every process in ids to end; it fails on (and kills)
// survivors.
func allGone(t *testing.T, ids []proctree.Proc) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for _, id := range ids {
		for id.Alive() {
			if time.Now().After(deadline) {
				t.Errorf("process %d (%s) survived", id.PID, id.Cmd)
				syscall.Kill(id.PID, syscall.SIGKILL)
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}
