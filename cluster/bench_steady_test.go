package cluster_test

import (
	"context"
	"fmt"
	"iter"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
	"github.com/tetherhq/tether/cluster"
	"github.com/tetherhq/tether/host"
)

// The steady load of issue 25, nearer real use than BenchmarkCluster's
// burst: many sessions, each streaming a turn at a model's pace (30
// deltas a second, each carrying the time its line was written) for a
// minute, every session's events followed by one subscriber. What it
// measures is the latency from the CLI's line to the subscriber when the
// bus is busy but not flooded: the goal is p99 ≤ 25 ms through the bus.
//
//	go test -run '^$' -bench 'Steady' -benchtime 1x ./cluster
//
// -short runs 50 sessions for 5 s (a smoke run, not the goal's load).
type steadyLoad struct {
	sessions, agents int
	rate             int // deltas a second, per session
	dur              time.Duration
}

func steady() steadyLoad {
	if testing.Short() {
		return steadyLoad{sessions: 50, agents: 2, rate: 30, dur: 5 * time.Second}
	}
	return steadyLoad{sessions: 500, agents: 4, rate: 30, dur: time.Minute}
}

// steadyCLI answers each prompt with a turn that streams l.rate text
// deltas a second for l.dur, starting at a random phase so that the
// sessions' lines do not all fall on the same instant.
func steadyCLI(l steadyLoad) func(context.Context, *claudetest.CLI) error {
	return func(ctx context.Context, c *claudetest.CLI) error {
		bg := context.Background()
		if _, err := c.HandleInitialize(bg); err != nil {
			return err
		}
		every := time.Second / time.Duration(l.rate)
		for {
			if _, err := c.ReadUser(bg); err != nil {
				return nil
			}
			c.Write(c.SystemInit(), textStart(c))
			time.Sleep(rand.N(every))
			t := time.NewTicker(every)
			d := newDeltaLine(c)
			for end := time.Now().Add(l.dur); time.Now().Before(end); {
				<-t.C
				c.Write(d.now())
			}
			t.Stop()
			c.Write(c.AssistantText("done"), c.ResultSuccess("done"))
		}
	}
}

// BenchmarkClusterSteady: the steady load through the bus, the agents and
// the subscribers in this one process. NATS runs as a process of its own
// (nats=process), as it does in a fleet, or in this process too
// (nats=embedded): then its heap is this process's, and the garbage
// collector's cycles over it (a few hundred megabytes live under this
// load) are what the latency's tail is made of.
func BenchmarkClusterSteady(b *testing.B) {
	l := steady()
	for _, where := range []string{"process", "embedded"} {
		b.Run(fmt.Sprintf("nats=%s/sessions=%d/agents=%d/rate=%d", where, l.sessions, l.agents, l.rate), func(b *testing.B) {
			var url string
			if where == "process" {
				url = spawnNATS(b).URL()
			} else {
				url = newNATS(b, nil).URL()
			}
			clusterSteady(b, l, url)
		})
	}
}

func clusterSteady(b *testing.B, l steadyLoad, url string) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	lim := &cluster.Limits{Heartbeat: time.Second}
	for i := range l.agents {
		a, err := cluster.NewAgent(ctx, &cluster.AgentOptions{URL: url, ID: fmt.Sprint("a", i), Capacity: l.sessions,
			Limits: lim, Session: &host.Options{CLI: &claude.Options{Transport: &claudetest.FakeCLI{Script: steadyCLI(l)},
				IncludePartialMessages: true}}})
		if err != nil {
			b.Fatal(err)
		}
		defer a.Close()
	}
	c, err := cluster.NewClient(ctx, &cluster.ClientOptions{URL: url, Limits: lim})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	ids := startMany(b, l.sessions, func() (string, error) {
		info, err := c.Start(ctx, nil)
		return info.ID, err
	})
	runSteady(b, l, ids, func(ctx context.Context, id string) iter.Seq2[host.Event, error] {
		return c.Events(ctx, id, 0)
	}, func(ctx context.Context, id string) error {
		_, err := c.Command(ctx, id, &host.Command{Type: host.CommandSend, Text: "go"})
		return err
	})
}

// BenchmarkLocalSteady: the same load on one host.Manager, subscribers
// reading the journal (the reference the bus is measured against).
func BenchmarkLocalSteady(b *testing.B) {
	l := steady()
	b.Run(fmt.Sprintf("sessions=%d/rate=%d", l.sessions, l.rate), func(b *testing.B) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		m := host.NewManager(&host.ManagerOptions{Session: &host.Options{CLI: &claude.Options{
			Transport: &claudetest.FakeCLI{Script: steadyCLI(l)}, IncludePartialMessages: true}}})
		defer m.Close()
		ids := startMany(b, l.sessions, func() (string, error) {
			s, err := m.Start(ctx, nil)
			if err != nil {
				return "", err
			}
			return s.ID(), nil
		})
		runSteady(b, l, ids, func(ctx context.Context, id string) iter.Seq2[host.Event, error] {
			return m.Get(id).Events(ctx, 0)
		}, func(ctx context.Context, id string) error {
			_, err := m.Get(id).Send(ctx, "go")
			return err
		})
	})
}

// startMany starts n sessions at once and returns their ids.
func startMany(b *testing.B, n int, start func() (string, error)) []string {
	ids := make([]string, n)
	var wg sync.WaitGroup
	for i := range ids {
		wg.Go(func() {
			id, err := start()
			if err != nil {
				b.Error(err)
			}
			ids[i] = id
		})
	}
	wg.Wait()
	if b.Failed() {
		b.FailNow()
	}
	return ids
}

// runSteady follows every session with one subscriber, prompts them all,
// waits for every turn's result and reports the latencies.
func runSteady(b *testing.B, l steadyLoad, ids []string,
	events func(context.Context, string) iter.Seq2[host.Event, error],
	send func(context.Context, string) error) {
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	var lat latencies
	results := make(chan struct{}, len(ids))
	var subs sync.WaitGroup
	for _, id := range ids {
		subs.Go(func() { lat.consume(ctx, events(ctx, id), results) })
	}
	b.ResetTimer()
	start := time.Now()
	for b.Loop() {
		var wg sync.WaitGroup
		for _, id := range ids {
			wg.Go(func() {
				if err := send(ctx, id); err != nil {
					b.Error(err)
				}
			})
		}
		wg.Wait()
		for range ids {
			<-results
		}
	}
	elapsed := time.Since(start)
	b.StopTimer()
	stop()
	subs.Wait()
	lat.report(b, elapsed)
}
