package telemetry

import (
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// TestModelLabelBounded: models beyond maxModels count as "other", so a
// stream of odd model names cannot grow the series without bound.
func TestModelLabelBounded(t *testing.T) {
	reg := prometheus.NewRegistry()
	h := NewHost(reg, []string{"idle"}, func(*Counts) {})
	for i := range 100 {
		h.Used(fmt.Sprint("model-", i), Usage{Input: 1})
	}
	mfs, _ := reg.Gather()
	models := map[string]bool{}
	for _, mf := range mfs {
		if mf.GetName() != "tether_tokens_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if lp.GetName() == "model" {
					models[lp.GetValue()] = true
				}
			}
		}
	}
	if len(models) != maxModels+1 || !models["other"] {
		t.Errorf("%d model labels (other: %v), want %d", len(models), models["other"], maxModels+1)
	}
	if v, _ := Value(reg, "tether_tokens_total", map[string]string{"model": "other"}); v != 100-maxModels {
		t.Errorf("other = %v, want %d", v, 100-maxModels)
	}
}

// TestSharedRegistry: two hosts and two agents on one registry add up
// (no registration panic); a released source stops counting.
func TestSharedRegistry(t *testing.T) {
	reg := prometheus.NewRegistry()
	one := func(c *Counts) { c.States["idle"]++ }
	h1 := NewHost(reg, []string{"idle"}, one)
	h2 := NewHost(reg, []string{"idle"}, one)
	h1.CLIStarted(nil)
	h2.CLIStarted(nil)
	if v, _ := Value(reg, "tether_cli_starts_total", nil); v != 2 {
		t.Errorf("starts = %v, want 2", v)
	}
	if v, _ := Value(reg, "tether_sessions", map[string]string{"state": "idle"}); v != 2 {
		t.Errorf("sessions = %v, want 2", v)
	}
	h2.Release()
	if v, _ := Value(reg, "tether_sessions", map[string]string{"state": "idle"}); v != 1 {
		t.Errorf("sessions after a release = %v, want 1", v)
	}
	up, down := func() bool { return true }, func() bool { return false }
	a1 := NewAgent(reg, up, 4, func() int { return 1 })
	a2 := NewAgent(reg, down, 2, func() int { return 2 })
	NewClusterClient(reg, up)
	if v, _ := Value(reg, "tether_agent_capacity", nil); v != 6 {
		t.Errorf("capacity = %v, want 6", v)
	}
	if v, _ := Value(reg, "tether_nats_connected", nil); v != 0 {
		t.Errorf("nats connected with one connection down = %v, want 0", v)
	}
	a2.Release()
	if v, _ := Value(reg, "tether_nats_connected", nil); v != 1 {
		t.Errorf("nats connected = %v, want 1", v)
	}
	a1.Release()
	if v, _ := Value(reg, "tether_agent_slots_used", nil); v != 0 {
		t.Errorf("slots used with no agent = %v, want no value", v)
	}
}

// TestNilIsOff: every method of nil metrics is a no-op.
func TestNilIsOff(t *testing.T) {
	var h *Host
	h.CLIStarted(nil)
	h.CLIExited(ExitClosed)
	h.TurnEnded(1)
	h.ApprovalEnded(ByPerson, 1)
	h.Used("m", Usage{Input: 1})
	h.Release()
	var s *Serve
	s.Connected(1)
	s.Resynced()
	s.SlowDropped()
	var c *Cluster
	c.Published(1)
	c.Retried()
	c.Release()
	if NewHost(nil, nil, nil) != nil || NewServe(nil) != nil || NewAgent(nil, nil, 1, nil) != nil || NewClusterClient(nil, nil) != nil {
		t.Error("a nil Registerer made metrics")
	}
}

// BenchmarkResultHooks is what metrics add per result (a turn's time and
// one model's usage), on and off (nil):
//
//	go test ./internal/telemetry -run '^$' -bench ResultHooks
func BenchmarkResultHooks(b *testing.B) {
	for _, on := range []bool{false, true} {
		b.Run(fmt.Sprint("on=", on), func(b *testing.B) {
			var h *Host
			if on {
				h = NewHost(prometheus.NewRegistry(), []string{"idle"}, func(*Counts) {})
			}
			b.ReportAllocs()
			for b.Loop() {
				h.TurnEnded(1500 * time.Millisecond)
				h.Used("claude-opus-4-8", Usage{Input: 100, Output: 200, CacheRead: 50, USD: 0.01})
			}
		})
	}
}
