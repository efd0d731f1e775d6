package host_test

import (
	"context"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tetherhq/tether/claude/claudetest"
	"github.com/tetherhq/tether/host"
)

func init() {
	// stopped answers initialize, then stops itself (SIGSTOP), ignoring
	// SIGTERM: it neither reads nor writes again.
	scripts["stopped"] = func(ctx context.Context, c *claudetest.CLI) error {
		if _, err := c.HandleInitialize(ctx); err != nil {
			return err
		}
		signal.Ignore(syscall.SIGTERM)
		syscall.Kill(os.Getpid(), syscall.SIGSTOP)
		time.Sleep(time.Hour)
		return nil
	}
}

// host.Session.Close and Manager.Close inherit claude's bound: they return
// within CloseTimeout + 1 s although the CLI is stopped with a prompt
// larger than the pipe stuck in its stdin.
func TestCloseBoundStoppedCLI(t *testing.T) {
	const closeTimeout = 500 * time.Millisecond
	m := host.NewManager(nil)
	defer m.Close()
	start := func() *host.Session {
		o := claudetest.ExecOptions("stopped")
		o.CloseTimeout = closeTimeout
		s, err := m.Start(testCtx(t), &host.Options{CLI: o})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		begin := time.Now()
		if _, err := s.Send(ctx, strings.Repeat("x", 1<<20)); err == nil {
			t.Error("Send to a stopped CLI succeeded")
		}
		// How fast is logged, not asserted: a starved machine fails a
		// clock. A Send that ignored its ctx would never return.
		t.Logf("Send took %v with a 300 ms ctx", time.Since(begin))
		return s
	}
	s1 := start()
	s2 := start()
	for name, close := range map[string]func() error{"Session.Close": s1.Close, "Manager.Close": m.Close} {
		begin := time.Now()
		close()
		took := time.Since(begin)
		t.Logf("%s took %v (promised %v)", name, took, closeTimeout+time.Second)
	}
	select {
	case <-s2.Done():
	default:
		t.Error("Manager.Close left a session open")
	}
}
