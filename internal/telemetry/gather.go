package telemetry

import (
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Value reads one series from g: a counter's or gauge's value, a
// histogram's count, summed over the series whose labels include
// labels. ok is false when no series matched. For tests and tools.
func Value(g prometheus.Gatherer, name string, labels map[string]string) (v float64, ok bool) {
	mfs, err := g.Gather()
	if err != nil {
		return 0, false
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if !hasLabels(m, labels) {
				continue
			}
			ok = true
			switch {
			case m.Counter != nil:
				v += m.GetCounter().GetValue()
			case m.Gauge != nil:
				v += m.GetGauge().GetValue()
			case m.Histogram != nil:
				v += float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return v, ok
}

// Series counts g's series named with the tether_ prefix: a bound on
// label sets shows as a count that does not grow.
func Series(g prometheus.Gatherer) int {
	mfs, err := g.Gather()
	if err != nil {
		return -1
	}
	n := 0
	for _, mf := range mfs {
		if len(mf.GetName()) > 7 && mf.GetName()[:7] == "tether_" {
			n += len(mf.GetMetric())
		}
	}
	return n
}

func hasLabels(m *dto.Metric, want map[string]string) bool {
	found := 0
	for _, lp := range m.GetLabel() {
		if v, ok := want[lp.GetName()]; ok {
			if v != lp.GetValue() {
				return false
			}
			found++
		}
	}
	return found == len(want)
}
