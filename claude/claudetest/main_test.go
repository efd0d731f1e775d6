package claudetest

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks, after all tests, that no goroutine and no child process
// outlived its test: a CLI left running by a real-CLI test would keep its
// server's port and temp dirs busy and slow every later run.
func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		if kids := childProcesses(); len(kids) > 0 {
			fmt.Fprintf(os.Stderr, "leaked child processes: %s\n", strings.Join(kids, ", "))
			code = 1
		}
	}
	if code == 0 {
		// The tests' plain clients keep idle keep-alive connections.
		http.DefaultClient.CloseIdleConnections()
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "leaked goroutines: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// childProcesses lists this process's live children (Linux only; elsewhere
// it finds none).
func childProcesses() []string {
	files, _ := filepath.Glob("/proc/self/task/*/children")
	var kids []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, pid := range strings.Fields(string(b)) {
			cmd, _ := os.ReadFile("/proc/" + pid + "/cmdline")
			kids = append(kids, pid+" "+strings.ReplaceAll(strings.TrimSpace(string(cmd)), "\x00", " "))
		}
	}
	return kids
}
