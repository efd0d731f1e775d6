package cluster_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
	"github.com/tetherhq/tether/cluster"
	"github.com/tetherhq/tether/host"
)

// burstCLI answers each prompt with a turn of burstDeltas text deltas, each
// carrying the time it was written (ns), so subscribers can measure the
// latency from the CLI's line to them.
const burstDeltas = 20

func burstCLI(ctx context.Context, c *claudetest.CLI) error {
	bg := context.Background()
	if _, err := c.HandleInitialize(bg); err != nil {
		return err
	}
	for {
		if _, err := c.ReadUser(bg); err != nil {
			return nil
		}
		c.Write(c.SystemInit(), textStart(c))
		d := newDeltaLine(c)
		for range burstDeltas {
			c.Write(d.now())
		}
		c.Write(c.AssistantText("done"), c.ResultSuccess("done"))
	}
}

// deltaLine writes a session's text deltas carrying the time they are
// written from a template encoded once: the benchmarks run hundreds of
// fake CLIs on the two cores the bus under test has, and encoding each
// line through maps and reflection took a sixth of them.
type deltaLine struct{ pre, post []byte }

func newDeltaLine(c *claudetest.CLI) deltaLine {
	line, err := json.Marshal(c.TextDelta(0, "\x00"))
	if err != nil {
		panic(err)
	}
	i := bytes.Index(line, []byte(`\u0000`))
	return deltaLine{pre: line[:i], post: line[i+len(`\u0000`):]}
}

// now is a delta line whose text is the time (ns).
func (d deltaLine) now() []byte {
	b := make([]byte, 0, len(d.pre)+20+len(d.post))
	b = append(b, d.pre...)
	b = strconv.AppendInt(b, time.Now().UnixNano(), 10)
	return append(b, d.post...)
}

// latencies collects the delta latencies of every subscriber.
type latencies struct {
	mu   sync.Mutex
	ns   []int64
	at   []int64 // when each of ns was sent (windows)
	evs  atomic.Int64
	lost atomic.Int64
}

func (l *latencies) observe(ev host.Event) {
	l.evs.Add(1)
	if ev.Kind != host.EventMessage {
		return
	}
	// A delta's text is all digits (deltaLine); found without decoding
	// the line, for the subscribers' cost too is the bus's CPU here.
	_, text, ok := bytes.Cut(ev.Data, []byte(`"text":"`))
	if !ok || !bytes.Contains(ev.Data, []byte(`"text_delta"`)) {
		return
	}
	text, _, ok = bytes.Cut(text, []byte(`"`))
	if !ok {
		return
	}
	sent, err := strconv.ParseInt(string(text), 10, 64)
	if err != nil {
		return
	}
	d := time.Now().UnixNano() - sent
	l.mu.Lock()
	l.ns = append(l.ns, d)
	l.at = append(l.at, sent)
	l.mu.Unlock()
}

// consume reads one subscriber's events into l until they end: a gap or
// a repeat in the numbers counts as lost, an error before ctx ends as
// one lost; each turn's result is signalled on results.
func (l *latencies) consume(ctx context.Context, evs iter.Seq2[host.Event, error], results chan<- struct{}) {
	var last uint64
	for ev, err := range evs {
		if err != nil {
			if ctx.Err() == nil {
				l.lost.Add(1)
			}
			return
		}
		if ev.Seq != last+1 {
			l.lost.Add(int64(ev.Seq) - int64(last) - 1)
		}
		last = ev.Seq
		l.observe(ev)
		if ev.Kind == host.EventMessage && bytes.Contains(ev.Data, []byte(`"result"`)) && result("done")(ev) {
			results <- struct{}{}
		}
	}
}

func (l *latencies) report(b *testing.B, elapsed time.Duration) {
	if path := os.Getenv(envBenchWindows); path != "" {
		if err := os.WriteFile(path, l.windows(2*time.Second), 0o644); err != nil {
			b.Error(err)
		}
	}
	slices.Sort(l.ns)
	if len(l.ns) > 0 {
		b.ReportMetric(float64(l.ns[len(l.ns)/2])/1e3, "p50-µs")
		b.ReportMetric(float64(l.ns[len(l.ns)*99/100])/1e3, "p99-µs")
	}
	b.ReportMetric(float64(l.evs.Load())/elapsed.Seconds(), "events/s")
	b.ReportMetric(float64(l.lost.Load()), "lost")
	if rss := rssMB(); rss > 0 {
		b.ReportMetric(rss, "rss-MB")
	}
}

// envBenchWindows names a file where a benchmark's latencies are written
// per window of 2 s (by when each delta was sent): count, p50, p99 and max.
// With GODEBUG=gctrace=1 beside it, it shows which windows held a garbage
// collection (docs/cluster.md, "Scale").
const envBenchWindows = "TETHER_BENCH_WINDOWS"

// windows is l's latencies per window of d, a line each.
func (l *latencies) windows(d time.Duration) []byte {
	if len(l.at) == 0 {
		return nil
	}
	t0 := slices.Min(l.at)
	var per [][]int64
	for i, at := range l.at {
		k := int((at - t0) / int64(d))
		for len(per) <= k {
			per = append(per, nil)
		}
		per[k] = append(per[k], l.ns[i])
	}
	ms := func(ns int64) float64 { return float64(ns) / 1e6 }
	var out []byte
	for k, w := range per {
		if len(w) == 0 {
			continue
		}
		slices.Sort(w)
		out = fmt.Appendf(out, "window %3d (from %5.1f s): n=%d p50=%.1fms p99=%.1fms max=%.1fms\n",
			k, (time.Duration(k) * d).Seconds(), len(w), ms(w[len(w)/2]), ms(w[len(w)*99/100]), ms(w[len(w)-1]))
	}
	return out
}

// rssMB is this process's resident memory.
func rssMB() float64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(data)) {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb / 1024
		}
	}
	return 0
}

// loads are the benchmarks' sizes: one session and one subscriber (the
// latency of a quiet bus), and the load, 200 sessions on 4 agents
// with 3 subscribers each, all turns at once (the latency then is mostly
// queueing behind the burst). -short shrinks the second.
func loads() []struct{ sessions, agents, subs int } {
	big := struct{ sessions, agents, subs int }{200, 4, 3}
	if testing.Short() {
		big = struct{ sessions, agents, subs int }{20, 2, 3}
	}
	return []struct{ sessions, agents, subs int }{{1, 1, 1}, big}
}

// BenchmarkCluster runs 200 sessions on the fake CLI across 4 agents, each
// session followed by 3 subscribers through the bus; each iteration is one
// turn of every session. It reports events delivered per second, the
// latency from the CLI's line to a subscriber (p50, p99), events lost
// (gaps or duplicates: must be 0) and the process's RSS (all agents,
// the NATS server and the subscribers share this process).
//
//	go test -run '^$' -bench Cluster -benchtime 5x ./cluster
func BenchmarkCluster(b *testing.B) {
	for _, l := range loads() {
		b.Run(fmt.Sprintf("sessions=%d/agents=%d/subs=%d", l.sessions, l.agents, l.subs), func(b *testing.B) {
			benchCluster(b, l.sessions, l.agents, l.subs)
		})
	}
}

func benchCluster(b *testing.B, nSessions, nAgents, nSubs int) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := newNATS(b, nil)
	l := &cluster.Limits{Heartbeat: time.Second}
	for i := range nAgents {
		a, err := cluster.NewAgent(ctx, &cluster.AgentOptions{URL: ns.URL(), ID: fmt.Sprint("a", i), Capacity: nSessions,
			Limits: l, Session: &host.Options{CLI: &claude.Options{Transport: &claudetest.FakeCLI{Script: burstCLI},
				IncludePartialMessages: true}}})
		if err != nil {
			b.Fatal(err)
		}
		defer a.Close()
	}
	clients := make([]*cluster.Client, nSubs)
	for i := range clients {
		c, err := cluster.NewClient(ctx, &cluster.ClientOptions{URL: ns.URL(), Limits: l})
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		clients[i] = c
	}
	ids := make([]string, nSessions)
	var wg sync.WaitGroup
	for i := range ids {
		wg.Go(func() {
			info, err := clients[0].Start(ctx, nil)
			if err != nil {
				b.Error(err)
				return
			}
			ids[i] = info.ID
		})
	}
	wg.Wait()
	if b.Failed() {
		return
	}
	var lat latencies
	results := make(chan struct{}, nSessions*nSubs*2)
	var subs sync.WaitGroup
	sctx, stop := context.WithCancel(ctx)
	for _, id := range ids {
		for _, c := range clients {
			subs.Go(func() { lat.consume(sctx, c.Events(sctx, id, 0), results) })
		}
	}
	b.ResetTimer()
	start := time.Now()
	for b.Loop() {
		for _, id := range ids {
			wg.Go(func() {
				if _, err := clients[0].Command(ctx, id, &host.Command{Type: host.CommandSend, Text: "go"}); err != nil {
					b.Error(err)
				}
			})
		}
		wg.Wait()
		for range nSessions * nSubs {
			<-results
		}
	}
	elapsed := time.Since(start)
	b.StopTimer()
	stop()
	subs.Wait()
	lat.report(b, elapsed)
}

// BenchmarkLocal is BenchmarkCluster's load without NATS: the sessions on
// one host.Manager, the subscribers reading the journal directly (what
// `tether serve` does before its WebSocket).
func BenchmarkLocal(b *testing.B) {
	for _, l := range loads() {
		b.Run(fmt.Sprintf("sessions=%d/subs=%d", l.sessions, l.subs), func(b *testing.B) {
			benchLocal(b, l.sessions, l.subs)
		})
	}
}

func benchLocal(b *testing.B, nSessions, nSubs int) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m := host.NewManager(&host.ManagerOptions{Session: &host.Options{CLI: &claude.Options{
		Transport: &claudetest.FakeCLI{Script: burstCLI}, IncludePartialMessages: true}}})
	defer m.Close()
	ss := make([]*host.Session, nSessions)
	var wg sync.WaitGroup
	for i := range ss {
		wg.Go(func() {
			s, err := m.Start(ctx, nil)
			if err != nil {
				b.Error(err)
				return
			}
			ss[i] = s
		})
	}
	wg.Wait()
	if b.Failed() {
		return
	}
	var lat latencies
	results := make(chan struct{}, nSessions*nSubs*2)
	var subs sync.WaitGroup
	sctx, stop := context.WithCancel(ctx)
	for _, s := range ss {
		for range nSubs {
			subs.Go(func() { lat.consume(sctx, s.Events(sctx, 0), results) })
		}
	}
	b.ResetTimer()
	start := time.Now()
	for b.Loop() {
		for _, s := range ss {
			wg.Go(func() {
				if _, err := s.Send(ctx, "go"); err != nil {
					b.Error(err)
				}
			})
		}
		wg.Wait()
		for range nSessions * nSubs {
			<-results
		}
	}
	elapsed := time.Since(start)
	b.StopTimer()
	stop()
	subs.Wait()
	lat.report(b, elapsed)
}
