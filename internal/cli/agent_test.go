package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/tetherhq/tether/claude/claudetest"
	"github.com/tetherhq/tether/cluster"
	"github.com/tetherhq/tether/host"
	"github.com/tetherhq/tether/internal/natstest"
)

func TestAgentUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"agent", "extra"},
		{"agent", "--permission-mode", "bypassPermissions"},
		{"agent", "--nats-cert", "c.pem"},
		{"serve", "--nats", "nats://x", "--nats-embedded"},
	} {
		if code, _, stderr := tether(t, args...); code != 2 {
			t.Errorf("%q: exit %d, %s", args, code, stderr)
		}
	}
	// Flags that would do nothing are refused with a message, before
	// anything starts.
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "--nats", "nats://127.0.0.1:1", "--cli", "/bin/true"}, "--cli has no effect with --nats"},
		{[]string{"serve", "--capacity", "4"}, "--capacity goes with --nats-embedded"},
		{[]string{"serve", "--nats", "nats://127.0.0.1:1", "--nats-store", "/tmp/x"}, "--nats-store goes with --nats-embedded"},
		{[]string{"serve", "--heartbeat", "2s"}, "--heartbeat goes with --nats or --nats-embedded"},
		{[]string{"serve", "--replicas", "3"}, "--replicas goes with --nats or --nats-embedded"},
		{[]string{"serve", "--nats", "nats://127.0.0.1:1", "--sleep-after", "20m"}, "--sleep-after has no effect with --nats"},
		{[]string{"serve", "--nats", "nats://127.0.0.1:1", "--prompt-suggestions"}, "--prompt-suggestions has no effect with --nats"},
		{[]string{"demo", "--serve", "--prompt-suggestions"}, "flag provided but not defined: -prompt-suggestions"},
		{[]string{"run", "--prompt-suggestions", "hello"}, "--prompt-suggestions needs -i"},
		{[]string{"agent", "--sleep-after", "10s"}, "too short"},
		{[]string{"agent", "--sleep-after", "-1m"}, "give 0 (never)"},
		{[]string{"serve", "--permission-mode", "acceptedits"}, `--permission-mode "acceptedits": want one of default, acceptEdits, plan, dontAsk, auto, bypassPermissions`},
		{[]string{"agent", "--nats", "nats://127.0.0.1:1", "--permission-mode", "yolo"}, `--permission-mode "yolo": want one of default, acceptEdits, plan, dontAsk, auto` + "\n"},
	} {
		if code, _, stderr := tether(t, c.args...); code != 2 || !strings.Contains(stderr, c.want) {
			t.Errorf("%q: exit %d, %q; want 2 and %q", c.args, code, stderr, c.want)
		}
	}
	if code, _, stderr := tether(t, "agent", "-h"); code != 0 || !strings.Contains(stderr, "tether agent --nats URL") {
		t.Errorf("agent -h: %d %s", code, stderr)
	} else if want := "default, acceptEdits, plan, dontAsk, auto (not bypassPermissions"; !strings.Contains(stderr, want) {
		t.Errorf("agent -h does not list the default permission modes it takes (%q):\n%s", want, stderr)
	}
}

func TestRedactURL(t *testing.T) {
	got := redactURL("nats://u:pw@n1:4222,nats://n2:4222,tls://tok@n3")
	if want := "nats://***@n1:4222,nats://n2:4222,tls://***@n3"; got != want {
		t.Errorf("redactURL = %q, want %q", got, want)
	}
}

// TestRealCLIAgentAndServeNATS runs `tether agent` and `tether serve
// --nats` against an embedded NATS server (with token auth from the
// environment): a session started on the cluster runs a real CLI turn on
// the agent, and the server lists it.
func TestRealCLIAgentAndServeNATS(t *testing.T) {
	api := claudetest.NewMessagesServer(&claudetest.MessagesOptions{Replies: []*claudetest.Reply{claudetest.TextReply("hi from the agent")}})
	t.Cleanup(api.Close)
	cli := claudetest.NewRealCLI(t, api)
	for k, v := range cli.Env {
		t.Setenv(k, v)
	}
	const natsToken = "nats-test-token"
	t.Setenv(envNATSToken, natsToken)
	ns := natstest.Start(t, &natstest.Options{Token: natsToken})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	actx, stopAgent := context.WithCancel(ctx)
	agentDone := make(chan int, 1)
	aout, aoutW := io.Pipe()
	go func() {
		defer aoutW.Close()
		agentDone <- Main(actx, []string{"agent", "--nats", ns.ClientURL(), "--id", "cli-agent", "--cli", cli.Path,
			"--cwd", cli.Dir, "--capacity", "1", "--heartbeat", "300ms", "--http-addr", "127.0.0.1:0"}, strings.NewReader(""), aoutW, io.Discard)
	}()
	ar := bufio.NewReader(aout)
	line, err := ar.ReadString('\n')
	if err != nil || !strings.Contains(line, "tether agent cli-agent") {
		t.Fatalf("agent said %q, %v", line, err)
	}
	line, err = ar.ReadString('\n')
	agentOps, _, ok := strings.Cut(strings.TrimPrefix(strings.TrimSpace(line), "metrics and health: "), "/metrics")
	if err != nil || !ok || !strings.HasPrefix(agentOps, "http://127.0.0.1:") {
		t.Fatalf("agent said %q, %v", line, err)
	}
	go io.Copy(io.Discard, ar)

	sctx, stopServe := context.WithCancel(ctx)
	serveDone := make(chan int, 1)
	sout, soutW := io.Pipe()
	go func() {
		defer soutW.Close()
		serveDone <- Main(sctx, []string{"serve", "--nats", ns.ClientURL(), "--addr", "127.0.0.1:0"}, strings.NewReader(""), soutW, io.Discard)
	}()
	var loginURL string
	sc := bufio.NewScanner(sout)
	for sc.Scan() {
		if u, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "open "); ok {
			loginURL = u
			break
		}
	}
	go io.Copy(io.Discard, sout)
	base, token, ok := strings.Cut(loginURL, "/#token=")
	if !ok {
		t.Fatalf("no login URL: %q", loginURL)
	}

	c, err := cluster.NewClient(ctx, &cluster.ClientOptions{URL: ns.ClientURL(), NATS: mustNATSOptions(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	info, err := c.Start(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Command(ctx, info.ID, &host.Command{Type: host.CommandSend, Text: "hello"}); err != nil {
		t.Fatal(err)
	}
	for ev, err := range c.Events(ctx, info.ID, 0) {
		if err != nil {
			t.Fatal(err)
		}
		var m struct{ Type, Result string }
		if ev.Kind == host.EventMessage && json.Unmarshal(ev.Data, &m) == nil && m.Type == "result" {
			if m.Result != "hi from the agent" {
				t.Fatalf("result %q", m.Result)
			}
			break
		}
	}
	req, _ := http.NewRequestWithContext(ctx, "GET", base+"/api/sessions", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var list struct {
		Sessions []struct{ ID, Owner string }
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		t.Fatal(err)
	}
	if len(list.Sessions) != 1 || list.Sessions[0].ID != info.ID || list.Sessions[0].Owner != "cli-agent" {
		t.Errorf("serve lists %+v", list.Sessions)
	}
	// The agent's operations port: metrics of the real CLI's turn (tokens
	// by model from its result), health and readiness, without login.
	if code, body := httpGet(t, ctx, agentOps+"/healthz", ""); code != 200 || body != "ok\n" {
		t.Errorf("agent /healthz: %d %q", code, body)
	}
	if code, body := httpGet(t, ctx, agentOps+"/readyz", ""); code != 200 || body != "ready\n" {
		t.Errorf("agent /readyz: %d %q", code, body)
	}
	_, metrics := httpGet(t, ctx, agentOps+"/metrics", "")
	for _, re := range []string{`(?m)^tether_cli_starts_total 1$`, `(?m)^tether_agent_capacity 1$`, `(?m)^tether_nats_connected 1$`,
		`(?m)^tether_tokens_total\{kind="input",model="[a-z0-9.-]+"\} [1-9]`, `(?m)^tether_events_published_total [1-9]`, `(?m)^go_goroutines `} {
		if !regexp.MustCompile(re).MatchString(metrics) {
			t.Errorf("agent /metrics lacks %s:\n%.3000s", re, metrics)
		}
	}
	// serve's /metrics is on its main port, behind the token.
	if code, _ := httpGet(t, ctx, base+"/metrics", ""); code != http.StatusUnauthorized {
		t.Errorf("serve /metrics without the token: %d", code)
	}
	if code, metrics := httpGet(t, ctx, base+"/metrics", token); code != 200 || !strings.Contains(metrics, "\ntether_nats_connected 1\n") {
		t.Errorf("serve /metrics: %d\n%.3000s", code, metrics)
	}
	stopServe()
	stopAgent()
	if code := <-serveDone; code != 0 {
		t.Errorf("serve exited %d", code)
	}
	if code := <-agentDone; code != 0 {
		t.Errorf("agent exited %d", code)
	}
	c.Close()
}

// httpGet GETs u (with a bearer token unless "") and returns the status
// and the body.
func httpGet(t *testing.T, ctx context.Context, u, token string) (int, string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "GET", u, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func mustNATSOptions(t *testing.T) []nats.Option {
	var nf natsFlags
	o, err := nf.options()
	if err != nil {
		t.Fatal(err)
	}
	return o
}
