package serve_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	cdpruntime "github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
	"github.com/tetherhq/tether/cluster/clustertest"
	"github.com/tetherhq/tether/host"
	"github.com/tetherhq/tether/serve"
	"golang.org/x/tools/txtar"
)

// The browser suite: the UI as a person uses it, in headless Chromium
// (the Debian package chromium; scripts/test.sh installs it), driven by
// chromedp. One browser serves the whole suite; each scenario opens its
// own tabs. Screenshots of each step go to $TETHER_SCREENSHOTS (default
// $TMPDIR/tether-screenshots), at desktop and phone width, light and
// dark, for a person to look at.

// browser is the suite's one Chromium.
type browser struct {
	ctx   context.Context // the browser's context; tabs derive from it
	shots string
	// cluster runs the scenarios against `tether serve --nats`: a whole
	// cluster (embedded NATS, an agent) behind the server, instead of a
	// local manager.
	cluster bool

	mu   sync.Mutex
	seen map[string]bool // screenshot names taken, to keep them unique
}

// chromiumPath finds Chromium, or returns "".
func chromiumPath() string {
	if p := os.Getenv("TETHER_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if _, err := os.Stat("/usr/bin/chromium"); err == nil {
		return "/usr/bin/chromium"
	}
	return ""
}

// newBrowser starts Chromium for the suite, or skips (fails under
// CI=true) when it is not installed. It is closed when t ends.
func newBrowser(t *testing.T) *browser {
	t.Helper()
	path := chromiumPath()
	if path == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("chromium required under CI=true: install the Debian package chromium (scripts/test.sh does)")
		}
		t.Skip("chromium not found: install the Debian package chromium to run the browser tests")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.NoSandbox, // CI runs as root
		chromedp.DisableGPU,
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-background-timer-throttling", true),
		chromedp.Flag("disable-renderer-backgrounding", true),
		chromedp.Flag("disable-backgrounding-occluded-windows", true),
		chromedp.WindowSize(1280, 900),
	)
	actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
	// chromedp logs CDP events it does not know (a newer Chromium has
	// more); they are not the test's business.
	bctx, bcancel := chromedp.NewContext(actx, chromedp.WithErrorf(func(string, ...any) {}))
	if err := chromedp.Run(bctx); err != nil {
		bcancel()
		acancel()
		t.Fatalf("start chromium %s: %v", path, err)
	}
	t.Cleanup(func() {
		bcancel()
		acancel()
	})
	dir := os.Getenv("TETHER_SCREENSHOTS")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "tether-screenshots")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshots in %s", dir)
	return &browser{ctx: bctx, shots: dir, seen: map[string]bool{}}
}

// tab is one browser tab on the server under test.
type tab struct {
	t      *testing.T
	b      *browser
	ctx    context.Context
	origin string
	name   string

	mu      sync.Mutex
	foreign []string // requests to anything but the server
	errors  []string // uncaught exceptions and console.error calls
}

// newTab opens a tab; it closes when t ends. Every request the page makes
// is checked: the UI must reach nothing but its own server.
func (b *browser) newTab(t *testing.T, origin, name string) *tab {
	t.Helper()
	ctx, cancel := chromedp.NewContext(b.ctx)
	tb := &tab{t: t, b: b, ctx: ctx, origin: origin, name: name}
	tb.watch(cancel, []string{origin}, nil)
	return tb
}

// consoleLine is a console call as one line: "console.<type>: " and
// its arguments.
func consoleLine(e *cdpruntime.EventConsoleAPICalled) string {
	parts := make([]string, 0, len(e.Args))
	for _, a := range e.Args {
		parts = append(parts, string(a.Value)+a.Description)
	}
	return "console." + string(e.Type) + ": " + strings.Join(parts, " ")
}

// watch records the tab's uncaught exceptions, console errors and
// requests to anything but the allowed origins, and reports them when
// the test ends; then it cancels the tab and runs closed (if set).
func (tb *tab) watch(cancel context.CancelFunc, allowed []string, closed func()) {
	t := tb.t
	t.Helper()
	chromedp.ListenTarget(tb.ctx, func(ev any) {
		switch e := ev.(type) {
		case *cdpruntime.EventExceptionThrown:
			tb.mu.Lock()
			tb.errors = append(tb.errors, e.ExceptionDetails.Error())
			tb.mu.Unlock()
		case *cdpruntime.EventConsoleAPICalled:
			if e.Type == cdpruntime.APITypeError {
				tb.mu.Lock()
				tb.errors = append(tb.errors, consoleLine(e))
				tb.mu.Unlock()
			}
		case *page.EventJavascriptDialogOpening:
			// A dialog blocks the page: every later eval would wait for
			// it until its deadline. Record it as an error, with its
			// message, and dismiss it so the test goes on to report it.
			tb.mu.Lock()
			tb.errors = append(tb.errors, fmt.Sprintf("%s dialog: %s", e.Type, e.Message))
			tb.mu.Unlock()
			go func() { _ = chromedp.Run(tb.ctx, page.HandleJavaScriptDialog(false)) }()
		case *network.EventRequestWillBeSent:
			u := e.Request.URL
			if strings.HasPrefix(u, "data:") || strings.HasPrefix(u, "blob:") || strings.HasPrefix(u, "about:") {
				return
			}
			if pu, err := url.Parse(u); err != nil || (!slices.Contains(allowed, pu.Scheme+"://"+pu.Host) && !slices.Contains(allowed, "http://"+pu.Host)) {
				tb.mu.Lock()
				tb.foreign = append(tb.foreign, u)
				tb.mu.Unlock()
			}
		}
	})
	if err := chromedp.Run(tb.ctx, network.Enable()); err != nil {
		cancel()
		t.Fatalf("open tab: %v", err)
	}
	t.Cleanup(func() {
		tb.mu.Lock()
		foreign, errs := tb.foreign, tb.errors
		tb.mu.Unlock()
		if len(foreign) > 0 {
			t.Errorf("%s: the page made requests off %q: %q", tb.name, allowed, foreign)
		}
		if len(errs) > 0 {
			t.Errorf("%s: errors in the page:\n%s", tb.name, strings.Join(errs, "\n"))
		}
		cancel()
		if closed != nil {
			closed()
		}
	})
}

// run runs chromedp actions with a deadline.
func (tb *tab) run(actions ...chromedp.Action) {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 60*time.Second)
	defer cancel()
	if err := chromedp.Run(ctx, actions...); err != nil {
		tb.capture("failure")
		tb.t.Fatalf("%s: %v", tb.name, err)
	}
}

// eval evaluates a JS expression (awaiting a promise) into out.
func (tb *tab) eval(js string, out any) {
	tb.t.Helper()
	tb.run(chromedp.Evaluate(js, out, func(p *cdpruntime.EvaluateParams) *cdpruntime.EvaluateParams { return p.WithAwaitPromise(true) }))
}

// waitJS waits until the JS expression is truthy, polling in the page
// (requestAnimationFrame-free, so background tabs poll too).
func (tb *tab) waitJS(what, js string) {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 60*time.Second)
	defer cancel()
	// No polling timeout of chromedp's own (30 s by default, which
	// came first under a heavy load): the minute above is the bound.
	err := chromedp.Run(ctx, chromedp.Poll(js, nil, chromedp.WithPollingInterval(25*time.Millisecond), chromedp.WithPollingTimeout(0)))
	if err != nil {
		tb.capture("failure-" + slug(what))
		var body string
		_ = chromedp.Run(tb.ctx, chromedp.Evaluate(`document.querySelector("#transcript")?.innerText ?? ""`, &body))
		tb.t.Fatalf("%s: waiting for %s: %v\ntranscript:\n%s", tb.name, what, err, body)
	}
}

// view sets the viewport: desktop or phone width, light or dark.
func (tb *tab) view(phone, dark bool) {
	tb.t.Helper()
	w, h, mobile := int64(1280), int64(900), false
	if phone {
		w, h, mobile = 390, 844, true
	}
	scheme := "light"
	if dark {
		scheme = "dark"
	}
	tb.run(
		emulation.SetDeviceMetricsOverride(w, h, 1, mobile),
		// Reduced motion: screenshots show the page at rest, not mid-transition.
		emulation.SetEmulatedMedia().WithFeatures([]*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}, {Name: "prefers-reduced-motion", Value: "reduce"}}),
	)
}

// shot saves a screenshot of the viewport as <test>-<name>.png and checks
// the page as it is for accessibility (tab.accessible) and for fitting
// its viewport (tab.fits).
func (tb *tab) shot(name string) {
	tb.t.Helper()
	tb.capture(name)
	tb.accessible(name)
	tb.fits(name)
}

// onOrigin says whether the tab shows a page of the server under test:
// the checks of shot judge our pages, not an identity provider's.
func (tb *tab) onOrigin() bool {
	tb.t.Helper()
	var loc string
	tb.eval(`location.href`, &loc)
	u, err := url.Parse(loc)
	return err == nil && u.Scheme+"://"+u.Host == tb.origin
}

// capture saves a screenshot of the viewport as <test>-<name>.png, and
// nothing else: what a failure keeps.
func (tb *tab) capture(name string) {
	tb.t.Helper()
	var png []byte
	ctx, cancel := context.WithTimeout(tb.ctx, 20*time.Second)
	defer cancel()
	if err := chromedp.Run(ctx, chromedp.CaptureScreenshot(&png)); err != nil {
		tb.t.Logf("screenshot %s: %v", name, err)
		return
	}
	base := slug(tb.t.Name()) + "-" + slug(name)
	tb.b.mu.Lock()
	for i := 2; tb.b.seen[base]; i++ {
		base = fmt.Sprintf("%s-%s-%d", slug(tb.t.Name()), slug(name), i)
	}
	tb.b.seen[base] = true
	tb.b.mu.Unlock()
	if err := os.WriteFile(filepath.Join(tb.b.shots, base+".png"), png, 0o644); err != nil {
		tb.t.Logf("screenshot %s: %v", name, err)
	}
}

// shots saves the four looks of the page: desktop and phone, light and
// dark, ending at desktop light, each checked for accessibility.
func (tb *tab) shots(name string) {
	tb.t.Helper()
	for _, v := range []struct {
		phone, dark bool
		suffix      string
	}{{false, true, "desktop-dark"}, {true, false, "phone-light"}, {true, true, "phone-dark"}, {false, false, "desktop-light"}} {
		tb.view(v.phone, v.dark)
		tb.shot(name + "-" + v.suffix)
	}
}

func slug(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '_'
	}, s)
}

// staticUI serves the UI's files alone (no server behind them), for the
// renderer's own tests.
func staticUI(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.FileServer(http.Dir("ui")))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestUI runs the UI's own code in Chromium with nothing behind it: the
// renderer, the stores, the helpers, the layout check. No CLI is involved,
// so it is deliberately not named TestBrowser…: scripts/test.sh runs the
// RealCLI and Browser tests again on every pinned CLI, and these would
// only repeat (about 16 s a pass).
func TestUI(t *testing.T) {
	b := newBrowser(t)
	t.Run("Markdown", func(t *testing.T) { testMarkdown(t, b) })
	t.Run("Helpers", func(t *testing.T) { testHelpers(t, b) })
	t.Run("TeamHelpers", func(t *testing.T) { testTeamHelpers(t, b) })
	t.Run("Transcript", func(t *testing.T) { testTranscript(t, b) })
	t.Run("Stores", func(t *testing.T) { testStores(t, b) })
	t.Run("LayoutCheck", func(t *testing.T) { testLayoutCheck(t, b) })
}

func TestBrowser(t *testing.T) {
	b := newBrowser(t)
	browserFlows(t, b)
	// The same UI over the cluster (`tether serve --nats`): the scenarios
	// that cross the bus in every direction — a streamed turn, an approval
	// answered, a reload mid-turn resuming from the last seq, one
	// approval in two tabs answered once, a session asleep woken, one
	// whose CLI died resumed with its earlier conversation shown, and a
	// background agent stopped on its own.
	t.Run("Cluster", func(t *testing.T) {
		cb := &browser{ctx: b.ctx, shots: b.shots, cluster: true, seen: map[string]bool{}}
		t.Run("Streams", func(t *testing.T) { testStreams(t, cb) })
		t.Run("ApprovalAllowed", func(t *testing.T) { testApprovalAllowed(t, cb) })
		t.Run("ReloadMidTurn", func(t *testing.T) { testReloadMidTurn(t, cb) })
		t.Run("TwoTabs", func(t *testing.T) { testTwoTabs(t, cb) })
		t.Run("SleepWake", func(t *testing.T) { testSleepWake(t, cb) })
		t.Run("WakeWaitsForRoom", func(t *testing.T) { testWakeWaitsForRoom(t, cb) })
		t.Run("ResumeDisconnected", func(t *testing.T) { testResumeDisconnected(t, cb) })
		t.Run("PromptSuggestion", func(t *testing.T) { testPromptSuggestion(t, cb) })
		t.Run("Elicitation", func(t *testing.T) { testElicitation(t, cb) })
		t.Run("BackgroundTask", func(t *testing.T) { testBackgroundTask(t, cb) })
	})
}

// uiEnv is one scenario's world: a tether server, the fake Messages API
// its CLIs talk to, and a working directory.
type uiEnv struct {
	url    string // the login URL, token in the fragment
	origin string
	cwd    string
	api    *claudetest.MessagesServer
	m      *host.Manager   // the sessions, to kill a CLI (nil over the cluster)
	agentM *host.Manager   // over the cluster, the agent's sessions
	cli    *claude.Options // the CLI's options (its config folder)
}

// newUIEnv starts the fake API with replies, and a tether server whose
// sessions run the real CLI against it, serving the embedded UI.
func newUIEnv(t *testing.T, b *browser, replies ...*claudetest.Reply) *uiEnv {
	t.Helper()
	return newUIEnvWith(t, b, 0, replies...)
}

// newUIEnvWith is newUIEnv whose cluster agent (over the cluster) has
// capacity slots (0 = clustertest's default).
func newUIEnvWith(t *testing.T, b *browser, capacity int, replies ...*claudetest.Reply) *uiEnv {
	t.Helper()
	return newUIEnvOpts(t, b, &uiEnvOptions{Capacity: capacity, API: &claudetest.MessagesOptions{Replies: replies}})
}

// uiEnvOptions change a scenario's world from newUIEnv's.
type uiEnvOptions struct {
	Capacity int                         // the cluster agent's slots (0: clustertest's default)
	API      *claudetest.MessagesOptions // the fake API's script
	CLI      func(o *claude.Options)     // changes the sessions' CLI options (nil: none)
}

// newUIEnvOpts is newUIEnv with its options.
func newUIEnvOpts(t *testing.T, b *browser, o *uiEnvOptions) *uiEnv {
	t.Helper()
	api := claudetest.NewMessagesServer(o.API)
	t.Cleanup(api.Close) // first, so it closes after the CLIs
	cli := claudetest.NewRealCLI(t, api)
	co := cli.Options()
	if o.CLI != nil {
		o.CLI(co)
	}
	capacity := o.Capacity
	var (
		backend      serve.Backend
		m, agentM    *host.Manager
		closeBackend = func() {}
	)
	if b.cluster {
		// SleepAfter: agents hand off what host puts to sleep (no
		// session idles that long here).
		// Elicitations as tether agent's template has them.
		c := clustertest.New(t, &clustertest.Options{Session: &host.Options{CLI: co, Elicitations: true}, SleepAfter: time.Hour, Capacity: capacity})
		backend = c.Backend(nil)
		agentM = c.Agents[0].Manager()
	} else {
		m = host.NewManager(nil)
		backend = serve.NewLocalBackend(m, &serve.LocalOptions{Session: &host.Options{CLI: co}, DefaultCwd: cli.Dir})
		closeBackend = func() { m.Close() }
	}
	srv := serve.NewServer(backend, nil)
	hs := httptest.NewServer(srv)
	t.Cleanup(func() {
		hs.Close()
		srv.Close()
		closeBackend()
	})
	return &uiEnv{url: srv.LoginURL(hs.URL), origin: hs.URL, cwd: cli.Dir, api: api, m: m, agentM: agentM, cli: co}
}

// recorded returns the CLI's stdout lines of a recorded transcript.
func recorded(t *testing.T, name string) []json.RawMessage {
	t.Helper()
	ar, err := txtar.ParseFile(filepath.Join("..", "claude", "testdata", "transcripts", name+".txtar"))
	if err != nil {
		t.Fatal(err)
	}
	var out []json.RawMessage
	for _, f := range ar.Files {
		if f.Name != "stdio" {
			continue
		}
		for l := range strings.Lines(string(f.Data)) {
			if rest, ok := strings.CutPrefix(l, "< "); ok && !strings.HasPrefix(rest, `{"type":"control_`) {
				out = append(out, json.RawMessage(strings.TrimSpace(rest)))
			}
		}
	}
	return out
}

// testTranscript renders the items of recorded CLI sessions: text grown
// from deltas must end exactly as the complete lines alone render it, tool calls are
// cards with their results, subagents nest under their call, thinking
// stays collapsed.
func testTranscript(t *testing.T, b *browser) {
	origin := staticUI(t)
	tb := b.newTab(t, origin, "transcript")
	tb.run(chromedp.Navigate(origin + "/"))
	type view struct {
		Text      string   `json:"text"`
		Tools     []string `json:"tools"`
		Nested    int      `json:"nested"`
		Thinking  int      `json:"thinking"`
		Open      int      `json:"open"`
		Streaming int      `json:"streaming"`
		Diff      int      `json:"diff"`
	}
	render := func(name string, lines []json.RawMessage, streamed bool) view {
		t.Helper()
		if !streamed {
			lines = slices.DeleteFunc(slices.Clone(lines), func(l json.RawMessage) bool {
				return strings.HasPrefix(string(l), `{"type":"stream_event"`)
			})
		}
		// The server's items of these lines, as a subscriber with items gets them.
		z := serve.NewItemizer()
		var items []serve.Item
		for _, l := range lines {
			items = append(items, z.Add(l)...)
		}
		js, _ := json.Marshal(items)
		title, _ := json.Marshal(name)
		var v view
		tb.eval(`(async () => {
			const { Transcript } = await import("./transcript.js");
			document.querySelector("#welcome").hidden = true;
			document.querySelector("#session").hidden = false;
			document.querySelector("#s-title").textContent = `+string(title)+`;
			const root = document.querySelector("#transcript");
			const tr = new Transcript(root);
			for (const it of `+string(js)+`) tr.apply(it);
			tr.flush();
			const collapsed = root.querySelectorAll("details.thinking[open]").length;
			for (const d of root.querySelectorAll("details")) d.open = true; // for the screenshot
			return {
				text: root.innerText,
				tools: [...root.querySelectorAll("details.tool")].map((d) => d.dataset.tool + ":" + d.dataset.status),
				nested: root.querySelectorAll("details.tool .tool-children > *").length,
				thinking: root.querySelectorAll("details.thinking").length,
				open: collapsed,
				streaming: root.querySelectorAll(".streaming").length,
				diff: root.querySelectorAll("pre.diff .add, pre.diff .del").length,
			};
		})()`, &v)
		tb.shot(name)
		return v
	}
	// Halfway through a message: its text so far, and a Bash call whose
	// input is being typed (the server completed the partial JSON).
	data, err := os.ReadFile(filepath.Join("testdata", "items_turn.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var half []json.RawMessage
	for l := range strings.Lines(string(data)) {
		if half = append(half, json.RawMessage(strings.TrimSpace(l))); strings.Contains(l, `"uuid":"u-s9"`) {
			break
		}
	}
	mid := render("mid-tool-input", half, true)
	if !strings.Contains(mid.Text, "I'll list them.") || !strings.Contains(mid.Text, "$ ls -l") || !slices.Contains(mid.Tools, "Bash:running") || mid.Streaming == 0 {
		t.Errorf("halfway: want the text and the half-typed command, streaming: %+v", mid)
	}
	// Prompts queued during a turn, echoed alone and then merged (in
	// either CLI's shape): each shown once, from the items alone.
	data, err = os.ReadFile(filepath.Join("testdata", "items_queued.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var queued []json.RawMessage
	for l := range strings.Lines(string(data)) {
		queued = append(queued, json.RawMessage(strings.TrimSpace(l)))
	}
	q := render("queued-prompts", queued, false)
	shown := strings.Split(q.Text, "\n")
	for text, want := range map[string]int{"two": 1, "three": 1, "five": 1, "six": 2, "five more": 1, "okay then": 1} {
		if n := len(slices.DeleteFunc(slices.Clone(shown), func(l string) bool { return strings.TrimSpace(l) != text })); n != want {
			t.Errorf("queued prompts: %q shown %d times, want %d:\n%s", text, n, want, q.Text)
		}
	}
	for _, name := range []string{"basic_turn_partial", "thinking", "bash_allowed", "subagent", "tool_inputs_bash_and_ask", "control_rewind_files"} {
		lines := recorded(t, name)
		if name == "subagent" {
			// The recorded subagent answered at once; give it a step of
			// its own, as the CLI writes one (parent_tool_use_id set).
			i := slices.IndexFunc(lines, func(l json.RawMessage) bool {
				return strings.Contains(string(l), `"parent_tool_use_id":"toolu_agent_0001"`)
			})
			if i < 0 {
				t.Fatal("subagent: no subagent line in the recording")
			}
			lines = slices.Insert(lines, i+1,
				json.RawMessage(`{"type":"assistant","message":{"id":"msg_sub_1","type":"message","role":"assistant","model":"claude-haiku-4-5","content":[{"type":"tool_use","id":"toolu_sub_ls","name":"Bash","input":{"command":"ls | wc -l","description":"Count files"}}]},"parent_tool_use_id":"toolu_agent_0001","uuid":"sub-a1"}`),
				json.RawMessage(`{"type":"user","message":{"role":"user","content":[{"tool_use_id":"toolu_sub_ls","type":"tool_result","content":"0","is_error":false}]},"parent_tool_use_id":"toolu_agent_0001","uuid":"sub-u1","tool_use_result":{"stdout":"0","stderr":"","interrupted":false}}`),
			)
		}
		streamed := render(name, lines, true)
		plain := render(name+"-complete-lines", lines, false)
		if streamed.Text != plain.Text {
			t.Errorf("%s: built from deltas:\n%s\nbuilt from complete lines:\n%s", name, streamed.Text, plain.Text)
		}
		if streamed.Streaming != 0 {
			t.Errorf("%s: %d blocks still marked streaming after the result", name, streamed.Streaming)
		}
		if streamed.Open != 0 {
			t.Errorf("%s: thinking shown open", name)
		}
		switch name {
		case "basic_turn_partial":
			if !strings.Contains(streamed.Text, "Hello, streaming world") {
				t.Errorf("%s: text missing:\n%s", name, streamed.Text)
			}
		case "thinking":
			if streamed.Thinking == 0 {
				t.Errorf("%s: no thinking block", name)
			}
		case "bash_allowed":
			if !slices.Contains(streamed.Tools, "Bash:done") || !strings.Contains(streamed.Text, "$ echo hi > hi.txt") {
				t.Errorf("%s: no finished Bash card with its command: %v\n%s", name, streamed.Tools, streamed.Text)
			}
		case "control_rewind_files":
			// Two Writes of notes.txt: each card shows its content as
			// added lines.
			if streamed.Diff < 2 || !slices.Contains(streamed.Tools, "Write:done") {
				t.Errorf("%s: no Write card with its content as a diff: %v, %d diff lines", name, streamed.Tools, streamed.Diff)
			}
		case "subagent":
			if streamed.Nested == 0 || !slices.Contains(streamed.Tools, "Agent:done") || !slices.Contains(streamed.Tools, "Bash:done") {
				t.Errorf("%s: subagent work not nested under its Agent card: %v, %d nested", name, streamed.Tools, streamed.Nested)
			}
		}
	}
	// The card of a call whose task runs on: "in the background" for
	// work, "watching" for a watcher (ambient), "done" once it is gone.
	var statuses string
	tb.eval(`(async () => {
		const { Transcript } = await import("./transcript.js");
		const tr = new Transcript(document.createElement("div"));
		tr.apply({ id: "a", kind: "tool_use", tool_use_id: "toolu_w", name: "Bash", input: { command: "tail -f build.log" } });
		tr.apply({ id: "r", kind: "tool_result", tool_use_id: "toolu_w", content: "started" });
		const seen = [];
		const status = () => seen.push(tr.root.querySelector("details.tool .tool-status").textContent);
		tr.background(new Map([["toolu_w", true]]));
		status();
		tr.background(new Map([["toolu_w", false]]));
		status();
		tr.background(new Map());
		status();
		return seen.join(" | ");
	})()`, &statuses)
	if want := "watching | in the background | done"; statuses != want {
		t.Errorf("a background call's card: %q, want %q", statuses, want)
	}
}

// testHelpers checks the UI's small helpers: the line diff shown for
// edits, costs and model names. (A tool input still being typed is
// completed by the server: claude's partial JSON, in the items.)
func testHelpers(t *testing.T, b *browser) {
	origin := staticUI(t)
	tb := b.newTab(t, origin, "helpers")
	tb.run(chromedp.Navigate(origin + "/"))
	var got map[string]string
	tb.eval(`(async () => {
		const { diffLines } = await import("./diff.js");
		const d = (a, b) => diffLines(a, b).map(([op, l]) => op + l).join("|");
		const { fmtUSD, modelLabel } = await import("./transcript.js");
		const { matches } = await import("./sessions.js");
		const s = { id: "0b5e7f", cwd: "/src/Zürich", state: "awaiting_approval", model: "claude-opus-4-8", person: "ana@example.com", person_name: "Ana Lima", first_prompt: "Fix the build" };
		const m = (q, title) => String(matches(s, q, title));
		return {
			matchEmpty: m("  "),
			matchWords: m("fix ZURICH"),
			matchOwner: m("ana lima opus"),
			matchState: m("awaiting 0b5e"),
			matchTitle: m("renamed", "Renamed by hand"),
			matchEnded: String(matches({ ...s, ended: true }, "closed")),
			matchOneMissing: m("fix deploy"),
			edit: d("a\nb\nc\n", "a\nB\nc\n"),
			add: d("", "x\ny"),
			del: d("x\ny", ""),
			same: d("k\n", "k\n"),
			usdCent: fmtUSD(0.0123),
			usdTiny: fmtUSD(0.0001),
			usdTinier: fmtUSD(0.00002),
			usdZero: fmtUSD(0),
			usdBig: fmtUSD(12.345),
			model1m: modelLabel("claude-opus-4-8[1m]"),
			modelDated: modelLabel("claude-sonnet-4-5-20250929"),
			modelOld: modelLabel("claude-3-5-haiku-20241022"),
			modelAlias: modelLabel("sonnet"),
			modelOther: modelLabel("my-proxy-model"),
			modelNone: modelLabel(""),
		};
	})()`, &got)
	want := map[string]string{
		"edit": " a|-b|+B| c",
		"add":  "+x|+y",
		"del":  "-x|-y",
		"same": " k",
		// Small costs are not rounded to nothing.
		"usdCent":   "$0.01",
		"usdTiny":   "$0.0001",
		"usdTinier": "<$0.0001",
		"usdZero":   "$0",
		"usdBig":    "$12.35",
		// Model ids as a person reads them.
		"model1m":    "Opus 4.8 · 1M",
		"modelDated": "Sonnet 4.5",
		"modelOld":   "Haiku 3.5",
		"modelAlias": "Sonnet",
		"modelOther": "my-proxy-model",
		"modelNone":  "default",
		// The sessions filter: every word, in any of a session's facts,
		// ignoring case and accents.
		"matchEmpty":      "true",
		"matchWords":      "true",
		"matchOwner":      "true",
		"matchState":      "true",
		"matchTitle":      "true",
		"matchEnded":      "true",
		"matchOneMissing": "false",
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s: got %q, want %q", k, got[k], w)
		}
	}
}

// testMarkdown feeds the renderer hostile and ordinary Markdown: no
// markup in a reply may become live HTML, and the text must survive.
func testMarkdown(t *testing.T, b *browser) {
	origin := staticUI(t)
	tb := b.newTab(t, origin, "md")
	tb.run(chromedp.Navigate(origin + "/"))
	var got struct {
		Live  int      `json:"live"`
		Hrefs []string `json:"hrefs"`
		Text  string   `json:"text"`
		XSS   bool     `json:"xss"`
		Tags  []string `json:"tags"`
	}
	tb.eval(`(async () => {
		const md = await import("./md.js");
		const box = document.createElement("div");
		box.id = "md-test";
		const src = [
			"<script>window.__xss = true</script>",
			"<img src=x onerror=\"window.__xss = true\">",
			"[click](javascript:window.__xss=true) [ok](https://example.com/a?b=1)",
			"![pic](https://example.com/p.png) [rel](/ws)",
			"**bold <b>not bold</b>** and `+"`"+`<i>code</i>`+"`"+`",
			"`+"```"+`html\n<iframe src=x></iframe>\n`+"```"+`",
			"| a | <u>b</u> |\n|---|---|\n| 1 | 2 |",
			"- item <svg onload=alert(1)>\n- two",
			"> quote <style>body{display:none}</style>",
		].join("\n\n");
		box.appendChild(md.render(src));
		document.querySelector("#main").appendChild(box); // in the page's main landmark, as the UI's own text is
		await new Promise((r) => setTimeout(r, 50));
		return {
			live: box.querySelectorAll("script, img, iframe, style, svg, u, i, b:not(strong b), [onerror], [onload], [onclick]").length,
			hrefs: [...box.querySelectorAll("a")].map((a) => a.href),
			text: box.innerText,
			xss: !!window.__xss,
			tags: [...new Set([...box.querySelectorAll("*")].map((e) => e.tagName.toLowerCase()))].sort(),
		};
	})()`, &got)
	if got.Live != 0 || got.XSS {
		t.Errorf("markup became live: %d elements, xss=%v; tags %v", got.Live, got.XSS, got.Tags)
	}
	for _, h := range got.Hrefs {
		if !strings.HasPrefix(h, "https://") {
			t.Errorf("unsafe link kept: %q", h)
		}
	}
	for _, want := range []string{"<script>window.__xss = true</script>", "<i>code</i>", "<iframe src=x></iframe>", "click", "<svg onload=alert(1)>", "[image: pic]"} {
		if !strings.Contains(got.Text, want) {
			t.Errorf("text lost: %q not in\n%s", want, got.Text)
		}
	}
	for _, want := range []string{"strong", "code", "pre", "table", "ul", "blockquote", "a"} {
		if !slices.Contains(got.Tags, want) {
			t.Errorf("no <%s> rendered; tags %v", want, got.Tags)
		}
	}
	tb.run(chromedp.ScrollIntoView("#md-test"))
	tb.shot("rendered")

	// Headings hang under the page's (the session's h2, a card's h3) and
	// skip no level, whatever the Markdown's # counts: a screen reader's
	// outline of the page.
	for _, c := range []struct {
		src  string
		top  int
		want string
	}{
		{"# a\n\n## b\n\n### c", 3, "h3 a, h4 b, h5 c"},
		{"## a\n\n#### b\n\n## c", 3, "h3 a, h4 b, h3 c"},
		{"### a\n\n# b\n\n## c", 3, "h3 a, h3 b, h4 c"},
		{"## plan\n\n### step", 4, "h4 plan, h5 step"},
		{"# 1\n\n## 2\n\n### 3\n\n#### 4\n\n##### 5", 3, "h3 1, h4 2, h5 3, h6 4, h6 5"},
		{"> ## quoted\n\n### after", 3, "h3 quoted, h4 after"},
		{"1. ## first\n   text\n2. ## second", 3, "h3 first, h3 second"},
	} {
		src, _ := json.Marshal(c.src)
		var got string
		tb.eval(fmt.Sprintf(`import("./md.js").then((md) => [...md.render(%s, %d).querySelectorAll("h1, h2, h3, h4, h5, h6")].map((h) => h.tagName.toLowerCase() + " " + h.textContent).join(", "))`, src, c.top), &got)
		if got != c.want {
			t.Errorf("headings of %q under h%d: %s; want %s", c.src, c.top-1, got, c.want)
		}
	}

	// A list item may open with a block: a heading (above), a fence, a quote.
	var items []string
	tb.eval(`import("./md.js").then((md) => [...md.render("- `+"```"+`sh\n  make test\n  `+"```"+`\n- > said\n- plain *text*").querySelectorAll("ul > li")].map((li) => [...li.children].map((c) => c.tagName.toLowerCase() + (c.className ? "." + c.className : "")).join("+") + " " + (li.querySelector("pre") || li).textContent.trim()))`, &items)
	if want := []string{"div.code-block make test", "blockquote said", "em plain text"}; !slices.Equal(items, want) {
		t.Errorf("list items opening with blocks: %q; want %q", items, want)
	}
}
