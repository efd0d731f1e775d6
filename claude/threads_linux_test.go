package claude_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
)

// envThreadsHost makes the test binary a host for TestManySessionsFewThreads.
const envThreadsHost = "TETHER_THREADS_HOST"

func init() {
	if v := os.Getenv(envThreadsHost); v != "" {
		os.Unsetenv(envThreadsHost) // the fake CLIs it starts must not be hosts too
		threadsHost(v)
	}
}

// threadsHost lowers the thread limit just above what the process uses,
// then holds n sessions open at once. Were a session to cost an OS thread,
// the runtime would abort the process ("thread exhaustion").
func threadsHost(v string) {
	n, _ := strconv.Atoi(v)
	ents, _ := os.ReadDir("/proc/self/task")
	debug.SetMaxThreads(len(ents) + 12)
	ctx := context.Background()
	var ss []*claude.Session
	for i := range n {
		s, err := claude.Connect(ctx, claudetest.ExecOptions("echo"))
		if err != nil {
			fmt.Printf("Connect %d: %v\n", i, err)
			break
		}
		ss = append(ss, s)
	}
	for _, s := range ss {
		s.Close()
	}
	fmt.Printf("ok %d\n", len(ss))
	os.Exit(0)
}

// Sessions cost no OS thread each: a host whose thread limit is a dozen
// above its use holds 40 sessions open, where a thread per session (for the
// parent-death signal) used to abort the whole process.
func TestManySessionsFewThreads(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 80 processes")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	const n = 40
	host := exec.Command(exe, "-test.run=^$")
	host.Env = append(os.Environ(), envThreadsHost+"="+strconv.Itoa(n), "GORACE=atexit_sleep_ms=0")
	var out, stderr bytes.Buffer
	host.Stdout, host.Stderr = &out, &stderr
	err = host.Run()
	if err != nil || strings.TrimSpace(out.String()) != fmt.Sprintf("ok %d", n) {
		tail := stderr.String()
		if len(tail) > 2000 {
			tail = tail[:2000]
		}
		t.Fatalf("host: %v; stdout %q; stderr:\n%s", err, out.String(), tail)
	}
}
