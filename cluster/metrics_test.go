package cluster_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
	"github.com/tetherhq/tether/cluster"
	"github.com/tetherhq/tether/host"
	"github.com/tetherhq/tether/serve"
	"github.com/tetherhq/tether/serve/servetest"
)

// meteredCLI plays turns that each ask permission for a Bash call, then
// end with a result whose per-model totals (the process's running
// totals, as the CLI reports them) grow by 1234 input and 56 output
// tokens and $0.25.
func meteredCLI(ctx context.Context, c *claudetest.CLI) error {
	bg := context.Background()
	if _, err := c.HandleInitialize(bg); err != nil {
		return err
	}
	for turn := 1; ; turn++ {
		if _, err := c.ReadUser(bg); err != nil {
			if errors.Is(err, claudetest.ErrSessionEnded) || errors.Is(err, context.Canceled) || strings.Contains(err.Error(), "EOF") {
				return nil
			}
			return err
		}
		id := fmt.Sprint("toolu_", turn)
		c.Write(c.SystemInit(), c.AssistantToolUse(id, "Bash", map[string]string{"command": "ls"}))
		if _, err := c.CanUseTool(bg, id, "Bash", map[string]string{"command": "ls"}); err != nil {
			return err
		}
		n := int64(turn)
		c.Write(c.ToolResult(id, "ok", false), c.AssistantText("listed"), c.ResultSuccess("listed").
			With("total_cost_usd", 0.25*float64(n)).
			With("modelUsage", map[string]any{"claude-opus-4-8[1m]": map[string]any{
				"inputTokens": 1234 * n, "outputTokens": 56 * n, "costUSD": 0.25 * float64(n)}}))
	}
}

// TestPrometheusScrapesServeAndAgent runs Debian's prometheus server
// against a tether serve (a local backend, /metrics on its main port
// behind the bearer token) and an agent (its own /metrics), drives a
// turn with an approval on each, and asks prometheus, in PromQL, for what
// the turn must have counted.
func TestPrometheusScrapesServeAndAgent(t *testing.T) {
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("prometheus not installed (apt-get install prometheus): %v", err)
		}
		t.Skip("prometheus not installed (apt-get install prometheus); skipping")
	}
	ctx := testCtx(t)

	// The agent, with /metrics on a listener of its own.
	ns := newNATS(t, nil)
	regA := prometheus.NewRegistry()
	a, err := cluster.NewAgent(ctx, &cluster.AgentOptions{
		URL: ns.URL(), ID: "metered", Capacity: 3, Limits: limits, Registerer: regA, Logger: testLogger(),
		Session: &host.Options{CLI: &claude.Options{Transport: &claudetest.FakeCLI{Script: meteredCLI},
			Env: map[string]string{claude.EnvConfigDir: t.TempDir()}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	agentHTTP := httptest.NewServer(promhttp.HandlerFor(regA, promhttp.HandlerOpts{}))
	t.Cleanup(agentHTTP.Close)

	// tether serve, /metrics on its main port.
	regS := prometheus.NewRegistry()
	m := host.NewManager(&host.ManagerOptions{Registerer: regS})
	t.Cleanup(func() { m.Close() })
	b := serve.NewLocalBackend(m, &serve.LocalOptions{DefaultCwd: t.TempDir(),
		Session: &host.Options{CLI: &claude.Options{Transport: &claudetest.FakeCLI{Script: meteredCLI}}}})
	srv := serve.NewServer(b, &serve.Options{Registerer: regS, Metrics: promhttp.HandlerFor(regS, promhttp.HandlerOpts{})})
	t.Cleanup(func() { srv.Close() })
	serveHTTP := httptest.NewServer(srv)
	t.Cleanup(serveHTTP.Close)

	// A turn on each, an approval answered by a person in each.
	c := newClient(t, ns.URL())
	info := mustStart(ctx, t, c, nil)
	f := follow(t, c, info.ID, 0)
	send(t, c, info.ID, "list")
	ev := f.wait(t, "the approval", func(ev host.Event) bool { return ev.Kind == host.EventApproval })
	var ap host.ApprovalInfo
	json.Unmarshal(ev.Data, &ap)
	if _, err := c.Command(ctx, info.ID, &host.Command{Type: host.CommandAnswer, Approval: ap.ID, Behavior: "allow"}); err != nil {
		t.Fatal(err)
	}
	f.wait(t, "the result", result("listed"))
	f.wait(t, "idle", state("idle"))

	si, err := b.Start(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := m.Get(si.ID)
	d, err := s.Send(ctx, "list")
	if err != nil {
		t.Fatal(err)
	}
	for len(s.Approvals()) == 0 {
		select {
		case <-ctx.Done():
			t.Fatal("no approval on the serve session")
		case <-time.After(5 * time.Millisecond):
		}
	}
	if err := s.Approvals()[0].Allow(); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	// A browser connected to serve.
	ws, err := servetest.Dial(ctx, serveHTTP.URL, &servetest.DialOptions{Token: srv.Token()})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close() // it reads, so the connection lives

	// Prometheus, scraping both on loopback every 200 ms.
	dir := t.TempDir()
	config := fmt.Sprintf(`global:
  scrape_interval: 200ms
  scrape_timeout: 150ms
scrape_configs:
  - job_name: serve
    authorization:
      type: Bearer
      credentials: %q
    static_configs:
      - targets: [%q]
  - job_name: agent
    static_configs:
      - targets: [%q]
`, srv.Token(), strings.TrimPrefix(serveHTTP.URL, "http://"), strings.TrimPrefix(agentHTTP.URL, "http://"))
	cfg := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfg, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	cmd := exec.Command(bin, "--config.file="+cfg, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr, "--log.level=warn")
	var logs strings.Builder
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	}
	defer stop()

	want := []struct {
		query string
		ok    func(float64) bool
		what  string
	}{
		{`up{job="serve"}`, is(1), "1"},
		{`up{job="agent"}`, is(1), "1"},
		{`tether_cli_starts_total{job="serve"}`, atLeast(1), ">= 1"},
		{`tether_cli_starts_total{job="agent"}`, atLeast(1), ">= 1"},
		{`sum(tether_tokens_total{job="agent",kind="input"})`, is(1234), "1234"},
		{`sum(tether_tokens_total{job="serve",kind="input"})`, is(1234), "1234"},
		{`sum(tether_tokens_total{kind="output"})`, is(112), "112"},
		{`tether_cost_usd_total{job="agent",model="claude-opus-4-8"}`, is(0.25), "0.25"},
		{`tether_approval_wait_seconds_count{job="agent",answered_by="person"}`, is(1), "1"},
		{`tether_approval_wait_seconds_count{job="serve",answered_by="person"}`, is(1), "1"},
		{`tether_turn_duration_seconds_count{job="serve"}`, is(1), "1"},
		{`tether_sessions{job="serve",state="idle"}`, is(1), "1"},
		{`tether_sessions{job="agent",state="idle"}`, is(1), "1"},
		{`tether_pending_approvals{job="agent",kind="tool"}`, is(0), "0"},
		{`tether_browser_connections{job="serve"}`, is(1), "1"},
		{`tether_nats_connected{job="agent"}`, is(1), "1"},
		{`tether_agent_capacity{job="agent"}`, is(3), "3"},
		{`tether_agent_slots_used{job="agent"}`, is(1), "1"},
		{`tether_events_published_total{job="agent"}`, atLeast(5), ">= 5"},
		{`tether_event_publish_lag_seconds_count{job="agent"}`, atLeast(5), ">= 5"},
	}
	api := "http://" + addr + "/api/v1/query?query="
	for _, w := range want {
		deadline := time.Now().Add(time.Minute)
		for {
			v, found, err := promQuery(ctx, api+url.QueryEscape(w.query))
			if w.ok == nil && err == nil && !found {
				break
			}
			if w.ok != nil && err == nil && found && w.ok(v) {
				break
			}
			if time.Now().After(deadline) || cmd.ProcessState != nil {
				t.Fatalf("%s: got %v (found %v, err %v), want %s\nprometheus said:\n%s", w.query, v, found, err, w.what, logs.String())
			}
			time.Sleep(50 * time.Millisecond)
		}
	}

	stop()
	if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err == nil {
		t.Errorf("prometheus (pid %d) survived", pid)
	}
	if survivors := procsWith(cfg); len(survivors) > 0 {
		t.Errorf("processes running with our config: %v", survivors)
	}
}

func is(n float64) func(float64) bool      { return func(v float64) bool { return v == n } }
func atLeast(n float64) func(float64) bool { return func(v float64) bool { return v >= n } }

// promQuery runs an instant query and returns the first sample's value.
func promQuery(ctx context.Context, u string) (float64, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", u, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, false, err
	}
	defer resp.Body.Close()
	var r struct {
		Status string `json:"status"`
		Data   struct {
			Result []struct {
				Value [2]any `json:"value"`
			} `json:"result"`
		} `json:"data"`
		Error string `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return 0, false, err
	}
	if r.Status != "success" {
		return 0, false, errors.New(r.Error)
	}
	if len(r.Data.Result) == 0 {
		return 0, false, nil
	}
	s, _ := r.Data.Result[0].Value[1].(string)
	v, err := strconv.ParseFloat(s, 64)
	return v, err == nil, err
}

func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// procsWith lists the pids whose command line mentions s.
func procsWith(s string) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(b), s) {
			out = append(out, pid)
		}
	}
	return out
}

// TestAgentReady: an agent is ready while connected with its streams
// there, not while NATS is away, and not once closed.
func TestAgentReady(t *testing.T) {
	ctx := testCtx(t)
	ns := newNATS(t, nil)
	a := newAgent(t, ns.URL(), "ready", 1)
	if err := a.Ready(ctx); err != nil {
		t.Fatalf("Ready: %v", err)
	}
	ns.stop()
	waitFor(t, "not ready without NATS", func() bool { return errors.Is(a.Ready(ctx), cluster.ErrUnavailable) })
	ns.start()
	waitFor(t, "ready again", func() bool { return a.Ready(ctx) == nil })
	a.Close()
	if err := a.Ready(ctx); !errors.Is(err, cluster.ErrAgentClosed) {
		t.Errorf("Ready after Close: %v", err)
	}
}
