package claude_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
)

// floodCount messages of about 600 bytes each: far more than the 2 KiB bound
// the test sets, far less than a pipe holds, so the fake writes them all
// and exits while the session has stopped reading.
const floodCount = 30

func init() {
	scripts["flood-exit"] = func(ctx context.Context, c *claudetest.CLI) error {
		if _, err := c.HandleInitialize(ctx); err != nil {
			return err
		}
		if _, err := c.ReadUser(ctx); err != nil {
			return err
		}
		pad := strings.Repeat("x", 200)
		for i := range floodCount {
			if err := c.Write(c.AssistantText(fmt.Sprintf("msg %d %s", i, pad))); err != nil {
				return err
			}
		}
		return errors.New("fake CLI died mid-turn")
	}
}

// TestDoneWithOutputUnreceived: a CLI that dies with more than
// MaxBufferedBytes of output nobody has received is seen to end: Done
// closes and Wait returns without a Receive, and Receive then yields
// every message, in order, and the *ProcessError. Before, the read loop
// waited for room and never reached the end of stdout: Done never closed.
func TestDoneWithOutputUnreceived(t *testing.T) {
	ctx := testCtx(t)
	o := claudetest.ExecOptions("flood-exit")
	o.MaxBufferedBytes = 2 << 10
	s, err := claude.Connect(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Send(ctx, "go"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.Done():
	case <-ctx.Done():
		t.Fatal("Done not closed after the CLI died with output unreceived")
	}
	var pe *claude.ProcessError
	if err := s.Wait(); !errors.As(err, &pe) || pe.ExitCode != 1 {
		t.Errorf("Wait = %v, want the *ProcessError of exit code 1", err)
	}

	msgs, errs := collect(t, s.Receive(ctx))
	if len(msgs) != floodCount {
		t.Fatalf("received %d messages (%v), want %d", len(msgs), types(msgs), floodCount)
	}
	for i, m := range msgs {
		a, ok := m.(*claude.AssistantMessage)
		if !ok || !strings.HasPrefix(a.Text(), fmt.Sprintf("msg %d ", i)) {
			t.Fatalf("message %d = %T %v, want assistant text \"msg %d …\"", i, m, m, i)
		}
	}
	if len(errs) != 1 || !errors.As(errs[0], &pe) || pe.ExitCode != 1 {
		t.Errorf("errors = %v, want one *ProcessError of exit code 1", errs)
	}
}
