package serve_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/tetherhq/tether/host"
	"github.com/tetherhq/tether/internal/telemetry"
	"github.com/tetherhq/tether/serve"
)

// metricsEnv is a server with metrics on its main port.
func metricsEnv(t *testing.T, so *serve.Options, j *host.JournalOptions) (*env, *prometheus.Registry) {
	reg := prometheus.NewRegistry()
	if so == nil {
		so = &serve.Options{}
	}
	so.Registerer = reg
	so.Metrics = promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
	return newEnv(t, &envOptions{serve: so, reg: reg, journal: j}), reg
}

// waitValue polls a series until want(v) holds.
func waitValue(t *testing.T, ctx context.Context, g prometheus.Gatherer, name string, labels map[string]string, what string, want func(float64) bool) {
	t.Helper()
	for {
		v, ok := telemetry.Value(g, name, labels)
		if ok && want(v) {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s: %s%v = %v (present %v)", what, name, labels, v, ok)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func eq(n float64) func(float64) bool { return func(v float64) bool { return v == n } }

// TestMetricsEndpoint: /metrics on the main port needs the token (like
// /api/), and shows the server's and the sessions' metrics; a server
// without Options.Metrics has no such route.
func TestMetricsEndpoint(t *testing.T) {
	ctx := testCtx(t)
	e, reg := metricsEnv(t, nil, nil)
	if code, ec, _ := e.httpDo("GET", "/metrics", "", nil); code != http.StatusUnauthorized || ec != serve.CodeUnauthorized {
		t.Errorf("no token: %d %s", code, ec)
	}
	if code, _, _ := e.httpDo("GET", "/metrics", "", map[string]string{"Authorization": "Bearer wrong"}); code != http.StatusUnauthorized {
		t.Errorf("wrong token: %d", code)
	}
	cl := e.dial(ctx)
	id := cl.start(ctx, e.cwd)
	n := 0
	cl.ok(ctx, map[string]any{"type": "subscribe", "session": id, "after": 0})
	turn(t, ctx, cl, id, "hello", &n)
	req, _ := http.NewRequest("GET", e.http.URL+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+e.srv.Token())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var body strings.Builder
	buf := make([]byte, 32<<10)
	for {
		k, err := resp.Body.Read(buf)
		body.Write(buf[:k])
		if err != nil {
			break
		}
	}
	resp.Body.Close()
	for _, want := range []string{"tether_browser_connections 1", `tether_sessions{state="idle"} 1`, "tether_cli_starts_total 1", "tether_turn_duration_seconds_count 1"} {
		if resp.StatusCode != 200 || !strings.Contains(body.String(), want) {
			t.Errorf("/metrics (%d) lacks %q:\n%.2000s", resp.StatusCode, want, body.String())
		}
	}
	cl.close()
	waitValue(t, ctx, reg, "tether_browser_connections", nil, "the connection to close", eq(0))

	plain := newEnv(t, nil)
	if code, _, r := plain.httpDo("GET", "/metrics", "", map[string]string{"Authorization": "Bearer " + plain.srv.Token()}); code == 200 && strings.HasPrefix(r.Header.Get("Content-Type"), "text/plain") {
		t.Errorf("a server without Metrics serves /metrics: %d %s", code, r.Header.Get("Content-Type"))
	}
}

// TestMetricsResync: a subscription whose events are gone gets a
// snapshot, and is counted.
func TestMetricsResync(t *testing.T) {
	ctx := testCtx(t)
	e, reg := metricsEnv(t, nil, nil)
	a := e.dial(ctx)
	id := a.start(ctx, e.cwd)
	n := 0
	a.ok(ctx, map[string]any{"type": "subscribe", "session": id, "after": 0})
	turn(t, ctx, a, id, "hello", &n)
	if v, _ := telemetry.Value(reg, "tether_browser_resyncs_total", nil); v != 0 {
		t.Errorf("resyncs before any gap = %v", v)
	}
	b := e.dial(ctx)
	b.ok(ctx, map[string]any{"type": "subscribe", "session": id, "after": 1 << 40})
	bn := 0
	b.waitFrame(ctx, &bn, "the snapshot", func(f *frame) bool { return f.Type == "snapshot" })
	waitValue(t, ctx, reg, "tether_browser_resyncs_total", nil, "the resync", eq(1))
}

// TestMetricsSlowDrop: a client that takes no frames for WriteTimeout is
// disconnected, and counted.
func TestMetricsSlowDrop(t *testing.T) {
	ctx := testCtx(t)
	// 24 MB of events, all kept: far more than socket buffers hold.
	e, reg := metricsEnv(t, &serve.Options{ClientQueue: 4, WriteTimeout: 500 * time.Millisecond}, &host.JournalOptions{MaxBytes: 32 << 20})
	// The stalled client subscribes, then reads nothing.
	slow := e.dialRaw(ctx)
	defer slow.CloseNow()
	// Another client starts the session and sends the burst; it takes no
	// subscription, so it has little to read.
	cl := e.dial(ctx)
	id := cl.start(ctx, e.cwd)
	b, _ := json.Marshal(map[string]any{"type": "subscribe", "session": id, "after": 0})
	if err := slow.Write(ctx, websocket.MessageText, b); err != nil {
		t.Fatal(err)
	}
	if f := cl.do(ctx, id, map[string]any{"type": "send", "text": "burst 24 1000000"}); f.Error != nil {
		t.Fatalf("send: %v", f.Error)
	}
	waitValue(t, ctx, reg, "tether_browser_slow_drops_total", nil, "the slow client's drop", func(v float64) bool { return v >= 1 })
	waitValue(t, ctx, reg, "tether_browser_connections", nil, "one connection left", eq(1))
}
