package host_test

import (
	"context"
	"testing"

	"github.com/tetherhq/tether/claude/claudetest"
)

// A turn stopped midway reports no usage in its result; the session's
// cost keeps what its messages used and the earlier turns' per-model
// totals instead of falling back.
func TestCostKeptAcrossAnInterruptedTurn(t *testing.T) {
	ctx := testCtx(t)
	s, _ := start(t, nil, func(ctx context.Context, c *claudetest.CLI) error {
		if _, err := c.HandleInitialize(ctx); err != nil {
			return err
		}
		if _, err := c.ReadUser(ctx); err != nil {
			return err
		}
		c.Write(c.SystemInit(), c.AssistantText("one"), c.ResultSuccess("one"))
		if _, err := c.ReadUser(ctx); err != nil {
			return err
		}
		stopped := c.ResultInterrupted().With("usage", map[string]any{"input_tokens": 0, "output_tokens": 0,
			"cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}).With("modelUsage", map[string]any{})
		c.Write(c.AssistantText("two, but"), stopped)
		_, err := c.ReadUser(ctx)
		return err
	})
	for _, p := range []string{"one", "two"} {
		d, err := s.Send(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		d.Wait(ctx)
	}
	c := s.Cost()
	if c.Tokens.Input != 20 || c.Tokens.Output != 10 {
		t.Errorf("session tokens %+v, want both turns' (20 in, 10 out)", c.Tokens)
	}
	if m := c.Models["claude-opus-4-8"]; m.Tokens.Input != 10 || m.USD != 0.0001 {
		t.Errorf("per-model totals %+v after the stopped turn, want the first turn's kept", c.Models)
	}
	if c.LastTurn.Tokens.Input != 10 {
		t.Errorf("the stopped turn %+v, want its counted 10 in", c.LastTurn)
	}
}
