package cluster_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
	"github.com/tetherhq/tether/cluster"
	"github.com/tetherhq/tether/host"
	"github.com/tetherhq/tether/serve"
)

// gatedAgent starts an agent whose sessions' command policy holds every
// send until release is closed: a send as slow as a person could wish.
func gatedAgent(t *testing.T, url, id string, release <-chan struct{}, held chan<- struct{}) *cluster.Agent {
	t.Helper()
	a, err := cluster.NewAgent(testCtx(t), &cluster.AgentOptions{
		URL: url, ID: id, Capacity: 2, Limits: limits, Logger: testLogger(),
		Session: &host.Options{
			CLI: &claude.Options{Transport: &claudetest.FakeCLI{Script: memoryCLI}, Env: map[string]string{claude.EnvConfigDir: t.TempDir()}},
			Commands: &host.CommandPolicy{Authorize: func(ctx context.Context, s *host.Session, c *host.Command) error {
				if c.Type == host.CommandSend && c.Text == "slow" {
					held <- struct{}{}
					select {
					case <-release:
					case <-ctx.Done():
						return ctx.Err()
					}
				}
				return nil
			}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return a
}

// An interrupt or an answer never waits behind a slow send: the agent
// serves a session's commands in lanes.
func TestCommandLanes(t *testing.T) {
	ctx := testCtx(t)
	ns := newNATS(t, nil)
	release, held := make(chan struct{}), make(chan struct{}, 1)
	gatedAgent(t, ns.URL(), "a1", release, held)
	c := newClient(t, ns.URL())
	info := mustStart(ctx, t, c, nil)
	slow := make(chan error, 1)
	go func() {
		_, err := c.Command(ctx, info.ID, &host.Command{Type: host.CommandSend, Text: "slow"})
		slow <- err
	}()
	<-held // the send is being served, and will be until released
	if _, err := c.Command(ctx, info.ID, &host.Command{Type: host.CommandInterrupt}); err != nil {
		t.Fatalf("interrupt behind a slow send: %v", err)
	}
	_, err := c.Command(ctx, info.ID, &host.Command{Type: host.CommandAnswer, Approval: "nope", Behavior: "allow"})
	if !errors.Is(err, host.ErrNoApproval) {
		t.Fatalf("answer behind a slow send: %v, want no_approval", err)
	}
	select {
	case err := <-slow:
		t.Fatalf("the slow send finished early: %v", err)
	default:
	}
	close(release)
	if err := <-slow; err != nil {
		t.Fatal(err)
	}
}

// The session's policy refuses through the bus with host's code: the
// agent's sessions are the one place commands are checked.
func TestCommandPolicyAcrossTheBus(t *testing.T) {
	ctx := testCtx(t)
	ns := newNATS(t, nil)
	newAgent(t, ns.URL(), "a1", 1)
	c := newClient(t, ns.URL())
	info := mustStart(ctx, t, c, nil)
	// The agent's template does not allow bypassPermissions.
	_, err := c.Command(ctx, info.ID, &host.Command{Type: host.CommandSetMode, Mode: "bypassPermissions"})
	var ce *host.CommandError
	if !errors.As(err, &ce) || ce.Code != host.CodeForbidden || !errors.Is(err, host.ErrForbidden) {
		t.Fatalf("set_mode bypassPermissions: %v, want forbidden", err)
	}
	// Through serve's backend, the same refusal is the protocol's code.
	b := cluster.NewBackend(c, &cluster.BackendOptions{AllowBypassPermissions: true})
	_, err = b.Do(ctx, info.ID, &host.Command{Type: host.CommandSetMode, Mode: "bypassPermissions"})
	if host.ErrorCode(err) != serve.CodeForbidden {
		t.Fatalf("through the backend: %v (%s), want forbidden", err, host.ErrorCode(err))
	}
}

// An agent asking for another heartbeat than the cluster's is refused;
// one asking for none uses the cluster's.
func TestHeartbeatIsTheCluster(t *testing.T) {
	ctx := testCtx(t)
	ns := newNATS(t, nil)
	newAgent(t, ns.URL(), "a1", 1) // creates the registry with the tests' heartbeat
	_, err := cluster.NewAgent(ctx, &cluster.AgentOptions{URL: ns.URL(), ID: "a2", Limits: &cluster.Limits{Heartbeat: 7 * time.Second}})
	var he *cluster.HeartbeatError
	if !errors.Is(err, cluster.ErrHeartbeatMismatch) || !errors.As(err, &he) || he.Cluster != heartbeat {
		t.Fatalf("mismatched heartbeat: %v", err)
	}
	a, err := cluster.NewAgent(ctx, &cluster.AgentOptions{URL: ns.URL(), ID: "a3",
		Session: &host.Options{CLI: &claude.Options{Transport: &claudetest.FakeCLI{Script: memoryCLI}}}})
	if err != nil {
		t.Fatalf("no heartbeat asked: %v", err)
	}
	a.Close()
}

// serve --nats's --model and --permission-mode are the defaults of the
// sessions it starts.
func TestBackendDefaults(t *testing.T) {
	ctx := testCtx(t)
	ns := newNATS(t, nil)
	newAgent(t, ns.URL(), "a1", 1)
	c := newClient(t, ns.URL())
	b := cluster.NewBackend(c, &cluster.BackendOptions{DefaultModel: "claude-test-model", DefaultPermissionMode: "plan"})
	info, err := b.Start(ctx, &serve.StartRequest{})
	if err != nil {
		t.Fatal(err)
	}
	snap, err := b.Snapshot(ctx, info.ID)
	if err != nil {
		t.Fatal(err)
	}
	if snap.Model != "claude-test-model" || snap.PermissionMode != "plan" {
		t.Fatalf("session started with model %q, mode %q", snap.Model, snap.PermissionMode)
	}
	if info.Model != "claude-test-model" {
		t.Fatalf("listed with model %q", info.Model)
	}
}

// Readiness tells the truth: ready with an agent with room; not with the
// agents full; not with NATS down, and the list then fails at once as
// unavailable instead of timing out.
func TestReadiness(t *testing.T) {
	ctx := testCtx(t)
	ns := newNATS(t, nil)
	c := newClient(t, ns.URL())
	if err := c.Ready(ctx); err == nil || !strings.Contains(err.Error(), "no live agent") {
		t.Fatalf("no agent: %v", err)
	}
	newAgent(t, ns.URL(), "a1", 1)
	waitFor(t, "ready", func() bool { return c.Ready(ctx) == nil })
	if _, err := c.Start(ctx, nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "not ready: full", func() bool {
		err := c.Ready(ctx)
		return err != nil && strings.Contains(err.Error(), "full")
	})

	srv := serve.NewServer(cluster.NewBackend(c, nil), nil)
	defer srv.Close()
	hs := httptest.NewServer(srv)
	defer hs.Close()
	get := func(path string) (int, string) {
		req, _ := http.NewRequestWithContext(ctx, "GET", hs.URL+path, nil)
		req.Host = "localhost"
		req.Header.Set("Authorization", "Bearer "+srv.Token())
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b strings.Builder
		buf := make([]byte, 4096)
		for {
			n, err := resp.Body.Read(buf)
			b.Write(buf[:n])
			if err != nil {
				break
			}
		}
		return resp.StatusCode, b.String()
	}
	if code, body := get("/readyz"); code != 503 || !strings.Contains(body, "full") {
		t.Fatalf("/readyz with the agents full: %d %s", code, body)
	}
	ns.stop()
	waitFor(t, "the client to see NATS gone", func() bool { return errors.Is(c.Ready(ctx), cluster.ErrUnavailable) })
	if code, body := get("/healthz"); code != 200 {
		t.Fatalf("/healthz while NATS is down: %d %s (the process is alive)", code, body)
	}
	if code, body := get("/readyz"); code != 503 || !strings.Contains(body, "unavailable") {
		t.Fatalf("/readyz with NATS down: %d %s", code, body)
	}
	if code, body := get("/api/sessions"); code != 503 || !strings.Contains(body, `"unavailable"`) {
		t.Fatalf("list with NATS down: %d %s", code, body)
	}
}

// A start on a full cluster says it is queued, with its place, ends in
// busy when no room comes, and the socket's other requests are answered
// meanwhile.
func TestQueuedStartThroughServe(t *testing.T) {
	ctx := testCtx(t)
	ns := newNATS(t, nil)
	newAgent(t, ns.URL(), "a1", 1)
	c, err := cluster.NewClient(ctx, &cluster.ClientOptions{URL: ns.URL(), Limits: limits, StartTimeout: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Start(ctx, nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the agent's record full", func() bool {
		as, err := c.Agents(ctx)
		return err == nil && len(as) == 1 && as[0].Sessions == 1
	})
	srv := serve.NewServer(cluster.NewBackend(c, nil), nil)
	defer srv.Close()
	hs := httptest.NewServer(srv)
	defer hs.Close()
	w := dialServe(t, hs.URL, srv.Token())
	start := w.send(map[string]any{"type": "start"})
	q := w.next("the queued frame", isType("queued"))
	if string(q["position"]) != "1" || string(q["id"]) != itoa(start) {
		t.Fatalf("queued frame %v", q)
	}
	list := w.send(map[string]any{"type": "list"})
	f := w.next("the list's reply", func(f map[string]json.RawMessage) bool { return replyTo(list)(f) || replyTo(start)(f) })
	if !replyTo(list)(f) {
		t.Fatalf("the start was answered before the list: %v", f)
	}
	f = w.next("the start's reply", replyTo(start))
	if !strings.Contains(string(f["error"]), `"busy"`) {
		t.Fatalf("start on a full cluster: %s", f["error"])
	}
}

// A snapshot bigger than a NATS message comes from the agent in parts
// and is put back together whole; one bigger than the client's
// ClientOptions.MaxSnapshot is refused with ErrTooLarge, at once. And
// the transcript is mirrored under a max_payload smaller than the
// mirror's chunks (its chunks were refused at every try, and the agent's
// close waited 10 s on them).
func TestSnapshotInParts(t *testing.T) {
	ns := newNATS(t, func(o *server.Options) { o.MaxPayload = 16 << 10 })
	newAgent(t, ns.URL(), "a1", 1)
	c := newClient(t, ns.URL())
	ctx := testCtx(t)
	info := mustStart(ctx, t, c, nil)
	f := follow(t, c, info.ID, 0)
	var prompts []string
	for i := range 4 {
		prompts = append(prompts, fmt.Sprintf("p%d %s", i, strings.Repeat("apples ", 1200)))
		send(t, c, info.ID, prompts[i])
		f.wait(t, "the echo", resultContaining(prompts[i]))
	}
	snap, err := c.Snapshot(ctx, info.ID)
	if err != nil {
		t.Fatal(err)
	}
	size := 0
	var all strings.Builder
	for _, l := range snap.Transcript {
		size += len(l)
		all.Write(l)
	}
	if size < 4*(16<<10) {
		t.Fatalf("the transcript is %d bytes: too small to need parts", size)
	}
	for _, p := range prompts {
		if !strings.Contains(all.String(), "echo: "+p) {
			t.Errorf("the snapshot lacks the echo of %.10q…", p)
		}
	}
	waitFor(t, "the transcript mirrored", mirrored(t, ns.URL(), info.ID, prompts[3]))
	small, err := cluster.NewClient(ctx, &cluster.ClientOptions{URL: ns.URL(), Limits: limits, MaxSnapshot: 32 << 10, Logger: testLog(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer small.Close()
	if _, err := small.Snapshot(ctx, info.ID); !errors.Is(err, cluster.ErrTooLarge) {
		t.Errorf("a snapshot over MaxSnapshot: %v, want ErrTooLarge", err)
	}
}
