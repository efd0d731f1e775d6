package host_test

import (
	"context"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/tetherhq/tether/claude/claudetest"
	"github.com/tetherhq/tether/host"
)

// OnTurnCost hears each ended turn's own cost (the growth of the CLI's
// running total), once per turn, and may call back into the session: it
// runs without the session's lock. A panic in it leaves the session
// working.
func TestOnTurnCostTellsEachTurnsCost(t *testing.T) {
	ctx := testCtx(t)
	var mu sync.Mutex
	var got []float64
	var s *host.Session
	ready := make(chan struct{})
	o := &host.Options{OnTurnCost: func(usd float64) {
		<-ready
		_ = s.Cost() // takes the session's lock: must not deadlock
		mu.Lock()
		got = append(got, usd)
		n := len(got)
		mu.Unlock()
		if n == 2 {
			panic("a careless hook")
		}
	}}
	s, _ = start(t, o, func(ctx context.Context, c *claudetest.CLI) error {
		if _, err := c.HandleInitialize(ctx); err != nil {
			return err
		}
		for _, total := range []float64{0.25, 0.75, 1.0} {
			if _, err := c.ReadUser(ctx); err != nil {
				return err
			}
			c.Write(c.SystemInit(), c.AssistantText("ok"), c.ResultSuccess("ok").With("total_cost_usd", total))
		}
		_, err := c.ReadUser(ctx)
		return err
	})
	close(ready)
	for _, p := range []string{"one", "two", "three"} {
		d, err := s.Send(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := d.Wait(ctx); err != nil {
			t.Fatal(err)
		}
	}
	want := []float64{0.25, 0.5, 0.25}
	// The hook runs just after the delivery is answered: wait for it.
	for {
		mu.Lock()
		n := len(got)
		mu.Unlock()
		if n >= len(want) || ctx.Err() != nil {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != len(want) {
		t.Fatalf("OnTurnCost heard %v, want %v", got, want)
	}
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-9 {
			t.Fatalf("OnTurnCost heard %v, want %v", got, want)
		}
	}
}
