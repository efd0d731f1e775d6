package serve_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// benchClient follows one session and checks every event arrives once,
// in order; it records the latency of each stamped delta (the fake CLI's
// stdout write to this socket's read).
type benchClient struct {
	c       *websocket.Conn
	session string

	mu      sync.Mutex
	last    uint64
	bad     error
	lat     []time.Duration
	results int
	changed chan struct{}
}

func (bc *benchClient) read(ctx context.Context) {
	var f struct {
		Type  string
		Event struct {
			Seq  uint64
			Kind string
			Data json.RawMessage
		}
		Snapshot *struct{ Seq uint64 }
	}
	for {
		_, b, err := bc.c.Read(ctx)
		now := time.Now()
		if err != nil {
			return
		}
		f.Type, f.Snapshot = "", nil
		json.Unmarshal(b, &f)
		bc.mu.Lock()
		switch f.Type {
		case "snapshot":
			bc.bad = fmt.Errorf("a snapshot: a reader fell behind")
		case "event":
			if f.Event.Seq != bc.last+1 && bc.bad == nil {
				bc.bad = fmt.Errorf("seq %d after %d", f.Event.Seq, bc.last)
			}
			bc.last = f.Event.Seq
			if i := bytes.Index(f.Event.Data, []byte(`ts:`)); i >= 0 && f.Event.Kind == "message" {
				j := bytes.IndexByte(f.Event.Data[i:], ';')
				if ns, err := strconv.ParseInt(string(f.Event.Data[i+3:i+j]), 10, 64); err == nil {
					bc.lat = append(bc.lat, now.Sub(time.Unix(0, ns)))
				}
			}
			if f.Event.Kind == "message" && bytes.Contains(f.Event.Data, []byte(`"type":"result"`)) {
				bc.results++
				close(bc.changed)
				bc.changed = make(chan struct{})
			}
		}
		bc.mu.Unlock()
	}
}

func (bc *benchClient) waitResults(ctx context.Context, n int) error {
	for {
		bc.mu.Lock()
		got, ch, bad := bc.results, bc.changed, bc.bad
		bc.mu.Unlock()
		if bad != nil {
			return bad
		}
		if got >= n {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("session %s: %d of %d turns seen", bc.session, got, n)
		}
	}
}

// BenchmarkServe: 50 sessions on the fake CLI, 3 WebSocket clients each,
// on one server, plus one client that subscribes to session 0 and never
// reads. Each iteration runs one turn of 20 stamped deltas in every
// session at once. Reported: p50/p99 latency from the CLI's stdout line
// to a client's socket, the same for session 0's readers (beside the
// stalled one), and the process's RSS (server and clients together).
// Every client checks that it got every event once and in order.
// backend=local is a lone tether serve; backend=nats is tether serve
// --nats with the sessions on an agent, every event crossing JetStream
// (an embedded NATS server and the agent share this process).
//
//	go test ./serve -run '^$' -bench BenchmarkServe -benchtime 20x
func BenchmarkServe(b *testing.B) {
	b.Run("backend=local", func(b *testing.B) { benchServe(b, false) })
	b.Run("backend=nats", func(b *testing.B) { benchServe(b, true) })
}

func benchServe(b *testing.B, overNATS bool) {
	const sessions, perSession, deltas = 50, 3, 20
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	e := newEnv(b, &envOptions{cluster: overNATS})
	ctl := e.dial(ctx)
	ids := make([]string, sessions)
	for i := range ids {
		ids[i] = ctl.start(ctx, e.cwd)
	}
	var clients []*benchClient
	var wg sync.WaitGroup
	for _, id := range ids {
		for range perSession {
			c := e.dialRaw(ctx)
			bc := &benchClient{c: c, session: id, changed: make(chan struct{})}
			msg, _ := json.Marshal(map[string]any{"type": "subscribe", "session": id, "after": 0})
			c.Write(ctx, websocket.MessageText, msg)
			clients = append(clients, bc)
			wg.Add(1)
			go func() { defer wg.Done(); bc.read(ctx) }()
		}
	}
	stalled := e.dialRaw(ctx)
	msg, _ := json.Marshal(map[string]any{"type": "subscribe", "session": ids[0], "after": 0})
	stalled.Write(ctx, websocket.MessageText, msg)
	defer func() {
		for _, bc := range clients {
			bc.c.CloseNow()
		}
		stalled.CloseNow()
		wg.Wait()
	}()
	b.ResetTimer()
	for i := range b.N {
		// One socket's requests run in order (and at most 16 wait), so
		// send one by one; the turns run at once.
		for _, id := range ids {
			if f := ctl.do(ctx, id, map[string]any{"type": "send", "text": fmt.Sprintf("stamp %d", deltas)}); f.Error != nil {
				b.Fatal(f.Error)
			}
		}
		for _, bc := range clients {
			if err := bc.waitResults(ctx, i+1); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.StopTimer()
	var all, peers []time.Duration
	for _, bc := range clients {
		bc.mu.Lock()
		all = append(all, bc.lat...)
		if bc.session == ids[0] {
			peers = append(peers, bc.lat...)
		}
		if want := b.N * deltas; len(bc.lat) != want {
			b.Errorf("a client saw %d stamped deltas, want %d", len(bc.lat), want)
		}
		bc.mu.Unlock()
	}
	pct := func(d []time.Duration, p float64) float64 {
		slices.Sort(d)
		if len(d) == 0 {
			return 0
		}
		return float64(d[int(float64(len(d)-1)*p)].Microseconds())
	}
	b.ReportMetric(pct(all, 0.50), "p50-µs")
	b.ReportMetric(pct(all, 0.99), "p99-µs")
	b.ReportMetric(pct(peers, 0.99), "p99-stalled-peers-µs")
	b.ReportMetric(float64(rssBytes())/(1<<20), "rss-MiB")
	b.ReportMetric(float64(len(all))/b.Elapsed().Seconds(), "deltas-delivered/s")
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "heap-MiB")
}

// rssBytes returns the process's resident set (Linux), 0 elsewhere.
func rssBytes() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}
