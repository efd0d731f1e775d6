package host_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/tetherhq/tether/claude/claudetest"
	"github.com/tetherhq/tether/host"
)

// Interrupt after Send waits for the prompt's turn to begin and then
// interrupts it; if ctx ends first it says so, and the state is no longer
// interrupting. (The real-CLI scenario interrupt_before_turn checks the
// turn itself ends interrupted.)
func TestInterruptBeforeTheTurnBegins(t *testing.T) {
	ctx := testCtx(t)
	begin := make(chan struct{})
	s, l := start(t, nil, func(ctx context.Context, c *claudetest.CLI) error {
		if _, err := c.HandleInitialize(ctx); err != nil {
			return err
		}
		if _, err := c.ReadUser(ctx); err != nil {
			return err
		}
		select { // the turn begins only when the test says so
		case <-begin:
		case <-ctx.Done():
			return nil
		}
		c.Write(c.SystemInit())
		il, err := c.Expect(ctx, "control_request", "interrupt")
		if err != nil {
			return err
		}
		c.Respond(il.RequestID, nil)
		c.Write(c.ResultInterrupted())
		_, err = c.ReadUser(ctx)
		return err
	})
	if _, err := s.Send(ctx, "hi"); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if err := s.Interrupt(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Interrupt with the turn not begun before ctx ended = %v; want DeadlineExceeded", err)
	}
	if st := s.State().State; st == host.StateInterrupting {
		t.Errorf("state after a failed Interrupt = %v", st)
	}
	errc := make(chan error, 1)
	go func() { errc <- s.Interrupt(ctx) }()
	l.waitState(t, ctx, host.StateInterrupting) // before the turn began
	close(begin)
	if err := <-errc; err != nil {
		t.Fatalf("Interrupt: %v", err)
	}
	l.waitState(t, ctx, host.StateIdle)
}
