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
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/tetherhq/tether/host"
	"github.com/tetherhq/tether/internal/proctree"
	"github.com/tetherhq/tether/serve/servetest"
)

// benchClient follows one session and checks every event arrives once,
// in order; it records the latency of each stamped delta (the fake CLI's
// stdout write to this socket's read).
type benchClient struct {
	c       *servetest.Client
	session string
	from    int // frames looked at
	last    uint64
	lat     []time.Duration
	results int
}

// benchBuffer is how many frames a bench client keeps (its session's
// events and snapshots only): a turn's (about 30) with room to spare, so
// that the clients' memory stays small beside the server's in rss-MiB;
// more would fail the wait (ErrDropped), not pass unseen.
const benchBuffer = 256

// waitResults takes the frames received until the session's n-th result.
func (bc *benchClient) waitResults(ctx context.Context, n int) error {
	for bc.results < n {
		f, err := bc.c.WaitFrame(ctx, &bc.from, nil)
		if err != nil {
			return fmt.Errorf("session %s: %d of %d turns seen: %w", bc.session, bc.results, n, err)
		}
		switch f.Type {
		case "snapshot":
			return fmt.Errorf("a snapshot: a reader fell behind")
		case "event":
			ev := f.Event
			if ev.Seq != bc.last+1 {
				return fmt.Errorf("seq %d after %d", ev.Seq, bc.last)
			}
			bc.last = ev.Seq
			if i := bytes.Index(ev.Data, []byte(`ts:`)); i >= 0 && ev.Kind == host.EventMessage {
				j := bytes.IndexByte(ev.Data[i:], ';')
				if ns, err := strconv.ParseInt(string(ev.Data[i+3:i+j]), 10, 64); err == nil {
					bc.lat = append(bc.lat, f.Received.Sub(time.Unix(0, ns)))
				}
			}
			if ev.Kind == host.EventMessage && bytes.Contains(ev.Data, []byte(`"type":"result"`)) {
				bc.results++
			}
		}
	}
	return nil
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
	defer func() {
		for _, bc := range clients {
			bc.c.Close()
		}
	}()
	for _, id := range ids {
		for range perSession {
			keep := func(f *servetest.Frame) bool { return (f.Type == "event" || f.Type == "snapshot") && f.SessionID == id }
			c, err := servetest.Dial(ctx, e.http.URL, &servetest.DialOptions{Cookie: e.cookie, Buffer: benchBuffer, Keep: keep})
			if err != nil {
				b.Fatal(err)
			}
			clients = append(clients, &benchClient{c: c, session: id})
			if err := c.Send(ctx, map[string]any{"type": "subscribe", "session": id, "after": 0}); err != nil {
				b.Fatal(err)
			}
		}
	}
	stalled := e.dialRaw(ctx)
	defer stalled.CloseNow()
	msg, _ := json.Marshal(map[string]any{"type": "subscribe", "session": ids[0], "after": 0})
	stalled.Write(ctx, websocket.MessageText, msg)
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
		all = append(all, bc.lat...)
		if bc.session == ids[0] {
			peers = append(peers, bc.lat...)
		}
		if want := b.N * deltas; len(bc.lat) != want {
			b.Errorf("a client saw %d stamped deltas, want %d", len(bc.lat), want)
		}
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
func rssBytes() int64 { return proctree.StatusKB(os.Getpid(), "VmRSS") << 10 }
