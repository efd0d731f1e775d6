package claude_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/tetherhq/tether/claude/claudetest"
)

// scripts are the fake CLIs the subprocess tests run (the test binary
// re-executes itself as the CLI).
var scripts = map[string]claudetest.Script{
	"echo": claudetest.Echo,
	"crash-after-init": func(ctx context.Context, c *claudetest.CLI) error {
		if _, err := c.HandleInitialize(ctx); err != nil {
			return err
		}
		if _, err := c.ReadUser(ctx); err != nil {
			return err
		}
		c.Write(c.SystemInit())
		fmt.Fprintln(os.Stderr, "fatal: out of cheese")
		os.Exit(3)
		return nil
	},
	"bad-flag": func(ctx context.Context, c *claudetest.CLI) error {
		return errors.New("error: unknown option '--bogus'")
	},
	"stderr-chatter": func(ctx context.Context, c *claudetest.CLI) error {
		fmt.Fprintln(os.Stderr, "warning: settings ignored")
		return claudetest.Echo(ctx, c)
	},
}

func TestMain(m *testing.M) {
	claudetest.RunScriptIfChild(scripts)
	if v := os.Getenv("TETHER_HUGE_LINE_HOST"); v != "" {
		hugeLineHost(v)
	}
	if os.Getenv(envStdioDeploy) != "" {
		serveDeployStdio()
	}
	goleak.VerifyTestMain(m)
}

type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
