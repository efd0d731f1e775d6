package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tetherhq/tether/claude/claudetest"
	"github.com/tetherhq/tether/host"
	"github.com/tetherhq/tether/serve"
	"github.com/tetherhq/tether/serve/servetest"
)

func TestServeRefusesNonLoopbackWithoutTLS(t *testing.T) {
	requireCLI(t)
	path, _ := claudetest.FindCLI("")
	var out, errb bytes.Buffer
	code := Main(context.Background(), []string{"serve", "--addr", "0.0.0.0:0", "--cli", path}, strings.NewReader(""), &out, &errb)
	if code != 2 || !strings.Contains(errb.String(), "refusing to serve 0.0.0.0:0 without TLS") || strings.Contains(out.String(), "token") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out.String(), errb.String())
	}
	code = Main(context.Background(), []string{"serve", "--tls-cert", "x.pem", "--cli", path}, strings.NewReader(""), &out, &errb)
	if code != 2 {
		t.Errorf("--tls-cert alone: exit %d", code)
	}
}

// TestRealCLIDemoServe runs `tether demo --serve` and plays the demo
// through the protocol as the browser UI would: log in with the printed
// link, start a session, allow the shell command, answer the question.
func TestRealCLIDemoServe(t *testing.T) {
	t.Parallel()
	requireCLI(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	srvCtx, stop := context.WithCancel(ctx)
	pr, pw := io.Pipe()
	var errb bytes.Buffer
	exit := make(chan int, 1)
	go func() {
		exit <- Main(srvCtx, []string{"demo", "--serve", "--addr", "127.0.0.1:0"}, strings.NewReader(""), pw, &errb)
		pw.Close()
	}()
	defer func() {
		stop()
		if code := <-exit; code != 0 {
			t.Errorf("exit code %d; stderr %s", code, errb.String())
		}
	}()
	login := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		re := regexp.MustCompile(`open (http://\S+)`)
		for sc.Scan() {
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				login <- m[1]
			}
		}
	}()
	var link string
	select {
	case link = <-login:
	case <-ctx.Done():
		t.Fatalf("no login URL; stderr %s", errb.String())
	}
	u, _ := url.Parse(link)
	token := strings.TrimPrefix(u.Fragment, "token=")
	origin := u.Scheme + "://" + u.Host
	req, _ := http.NewRequest("POST", origin+"/auth", strings.NewReader(`{"token":"`+token+`"}`))
	req.Header.Set("Origin", origin)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("login: %v %v", resp, err)
	}
	resp.Body.Close()
	c, err := servetest.Dial(ctx, origin, &servetest.DialOptions{Cookie: resp.Cookies()[0]})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	info, err := c.Start(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	id := info.ID
	if _, err := c.OK(ctx, map[string]any{"type": "subscribe", "session": id}); err != nil {
		t.Fatal(err)
	}
	// do runs a command that must succeed.
	do := func(cmd map[string]any) {
		t.Helper()
		if _, err := c.OK(ctx, map[string]any{"type": "do", "session": id, "command": cmd}); err != nil {
			t.Fatalf("%s: %v", cmd["type"], err)
		}
	}
	n := 0
	next := func(what string, ok func(*servetest.Frame) bool) *servetest.Frame {
		t.Helper()
		f, err := c.WaitFrame(ctx, &n, ok)
		if err != nil {
			t.Fatalf("waiting for %s: %v", what, err)
		}
		return f
	}
	do(map[string]any{"type": "send", "text": demoPrompt})
	approval := func(tool string) string {
		f := next(tool+"'s approval", func(f *servetest.Frame) bool {
			return servetest.IsEvent(id, host.EventApproval)(f) && strings.Contains(string(f.Event.Data), `"tool_name":"`+tool+`"`)
		})
		var a struct{ ID string }
		json.Unmarshal(f.Event.Data, &a)
		return a.ID
	}
	do(map[string]any{"type": "answer", "approval": approval("Bash"), "behavior": "allow"})
	q := approval("AskUserQuestion")
	do(map[string]any{"type": "answer", "approval": q, "answers": map[string]string{demoQuestion: "host"}})
	next("the goodbye", func(f *servetest.Frame) bool {
		return servetest.IsEvent(id, host.EventMessage)(f) && strings.Contains(string(f.Event.Data), `"type":"result"`) && strings.Contains(string(f.Event.Data), "Goodbye!")
	})
}

// TestServeTrustedProxyFlag: --trusted-proxy takes CIDRs and bare
// addresses, and refuses anything else before listening.
func TestServeTrustedProxyFlag(t *testing.T) {
	var l prefixList
	for _, v := range []string{"10.0.0.0/8", "127.0.0.1", "::1", "192.168.1.7/24"} {
		if err := l.Set(v); err != nil {
			t.Errorf("%s: %v", v, err)
		}
	}
	if got := l.String(); got != "10.0.0.0/8,127.0.0.1/32,::1/128,192.168.1.0/24" {
		t.Errorf("parsed %s", got)
	}
	var out, errb bytes.Buffer
	code := Main(context.Background(), []string{"serve", "--trusted-proxy", "proxy.example"}, strings.NewReader(""), &out, &errb)
	if code != 2 || !strings.Contains(errb.String(), "not a CIDR") {
		t.Errorf("a bad --trusted-proxy: exit %d, stderr %q", code, errb.String())
	}
}

// TestServeSleepAfterFlag: --sleep-after is 0 (never) or at least a
// minute, refused with a message before anything starts.
func TestServeSleepAfterFlag(t *testing.T) {
	for _, tc := range []struct{ v, want string }{
		{"-1m", "give 0 (never)"},
		{"10s", "too short"},
		{"soon", "invalid value"},
	} {
		var out, errb bytes.Buffer
		code := Main(context.Background(), []string{"serve", "--sleep-after", tc.v}, strings.NewReader(""), &out, &errb)
		if code != 2 || !strings.Contains(errb.String(), tc.want) {
			t.Errorf("--sleep-after %s: exit %d, stderr %q", tc.v, code, errb.String())
		}
	}
}

// TETHER_SERVE_TOKEN is the login token when set (replicas share it): a
// short one is refused, and the token never reaches the log.
func TestServeTokenFromEnv(t *testing.T) {
	requireCLI(t)
	path, _ := claudetest.FindCLI("")
	var out, errb bytes.Buffer
	t.Setenv(envServeToken, "short")
	if code := Main(context.Background(), []string{"serve", "--addr", "127.0.0.1:0", "--cli", path}, strings.NewReader(""), &out, &errb); code != 2 || !strings.Contains(errb.String(), "at least 32") {
		t.Fatalf("a short token: exit %d, %q", code, errb.String())
	}
	token := strings.Repeat("k", 40)
	t.Setenv(envServeToken, token)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	urls := make(chan string, 1)
	sf := &serveFlags{addr: "127.0.0.1:0"}
	m := host.NewManager(nil)
	defer m.Close()
	out.Reset()
	done := make(chan int, 1)
	go func() {
		done <- runServe(ctx, sf, &serve.LocalOptions{DefaultCwd: t.TempDir()}, func(u string) { urls <- u }, &out, &errb)
	}()
	u := <-urls
	if !strings.HasSuffix(u, "#token="+token) {
		t.Fatalf("login URL %q does not carry the operator's token", u)
	}
	base := strings.TrimSuffix(u, "/#token="+token)
	req, _ := http.NewRequest("GET", base+"/api/sessions", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("the operator's token: %d", resp.StatusCode)
	}
	cancel()
	<-done
	if strings.Contains(out.String(), token) || strings.Contains(errb.String(), token) {
		t.Fatalf("the token reached the log: %q %q", out.String(), errb.String())
	}
}

// TestServeMetricsAddr: with --metrics-addr, /metrics is served there
// without login, and not on the main port.
func TestServeMetricsAddr(t *testing.T) {
	requireCLI(t)
	path, _ := claudetest.FindCLI("")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srvCtx, stop := context.WithCancel(ctx)
	pr, pw := io.Pipe()
	var errb bytes.Buffer
	exit := make(chan int, 1)
	go func() {
		exit <- Main(srvCtx, []string{"serve", "--addr", "127.0.0.1:0", "--metrics-addr", "127.0.0.1:0", "--cli", path, "--cwd", t.TempDir()},
			strings.NewReader(""), pw, &errb)
		pw.Close()
	}()
	defer func() {
		stop()
		if code := <-exit; code != 0 {
			t.Errorf("exit code %d; stderr %s", code, errb.String())
		}
	}()
	var metricsURL, link string
	sc := bufio.NewScanner(pr)
	for link == "" && sc.Scan() {
		if m := regexp.MustCompile(`metrics \(no login\) at (http://\S+)`).FindStringSubmatch(sc.Text()); m != nil {
			metricsURL = m[1]
		}
		if m := regexp.MustCompile(`open (http://\S+)`).FindStringSubmatch(sc.Text()); m != nil {
			link = m[1]
		}
	}
	go io.Copy(io.Discard, pr)
	if metricsURL == "" || link == "" {
		t.Fatalf("metrics %q, link %q; stderr %s", metricsURL, link, errb.String())
	}
	code, body := httpGet(t, ctx, metricsURL, "")
	for _, want := range []string{"\ntether_browser_connections 0\n", "\ntether_sessions{state=\"idle\"} 0\n", "\ngo_goroutines "} {
		if code != 200 || !strings.Contains(body, want) {
			t.Errorf("%s: %d, lacks %q:\n%.2000s", metricsURL, code, want, body)
		}
	}
	u, _ := url.Parse(link)
	token := strings.TrimPrefix(u.Fragment, "token=")
	if code, body := httpGet(t, ctx, u.Scheme+"://"+u.Host+"/metrics", token); strings.Contains(body, "tether_") {
		t.Errorf("the main port serves /metrics too: %d", code)
	}
}
