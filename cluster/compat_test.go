package cluster_test

// The mixed-version test: this tree's tether and the previous release's
// (the commit named in compat/previous, built from this repository's own
// history) run side by side as OS processes on one NATS server, as they
// do during a rolling upgrade. Browsers are played over the real serve
// protocol (a WebSocket per client), the agents run the fake CLI
// (memoryCLI, this test binary run again behind a wrapper script), and
// every fleet must lose nothing: every event once, in order, stored once
// in the stream, every command answered, approvals answered once.
//
// Under CI=true a missing git history, Go toolchain or build fails the
// test; elsewhere it skips with the reason.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
	"github.com/tetherhq/tether/cluster"
	"github.com/tetherhq/tether/host"
)

// compatScript names memoryCLI for the tether processes' fake CLI.
const compatScript = "compat-memory"

// compatToken is the serve processes' login token.
const compatToken = "compat-test-token-0123456789abcdef0123456789"

// unavailable skips the test, or fails it under CI=true.
func unavailable(t *testing.T, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf(format, args...)
	}
	t.Skipf(format+" (CI=true fails instead)", args...)
}

var commitPattern = regexp.MustCompile(`^[0-9a-f]{40}$`)

// tetherBuilds returns the tether command of the previous release, built
// from this repository's history and cached by commit under the user
// cache folder, and of this tree.
func tetherBuilds(t *testing.T) (prev, cur string) {
	t.Helper()
	goCmd, err := exec.LookPath("go")
	if err != nil {
		unavailable(t, "no Go toolchain to build tether with: %v", err)
	}
	out, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		unavailable(t, "not in a git checkout: %v", err)
	}
	root := strings.TrimSpace(string(out))
	data, err := os.ReadFile(filepath.Join(root, "compat", "previous"))
	if err != nil {
		t.Fatalf("compat/previous: %v", err)
	}
	commit := strings.TrimSpace(string(data))
	if !commitPattern.MatchString(commit) {
		t.Fatalf("compat/previous: %q is not a full commit id", commit)
	}
	if err := exec.Command("git", "-C", root, "cat-file", "-e", commit+"^{commit}").Run(); err != nil {
		unavailable(t, "the previous release %s is not in this clone's history (a shallow clone? fetch it whole): %v", commit, err)
	}
	build := func(dir, dst string) {
		t.Helper()
		cmd := exec.Command(goCmd, "build", "-o", dst, "./cmd/tether")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOWORK=off", "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			unavailable(t, "building tether in %s: %v\n%s", dir, err, out)
		}
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = t.TempDir()
	}
	prev = filepath.Join(cache, "tether", "compat", commit, "tether")
	if _, err := os.Stat(prev); err != nil {
		src := t.TempDir()
		tar := filepath.Join(src, "src.tar")
		if out, err := exec.Command("git", "-C", root, "archive", "--format=tar", "-o", tar, commit).CombinedOutput(); err != nil {
			unavailable(t, "git archive %s: %v\n%s", commit, err, out)
		}
		if out, err := exec.Command("tar", "-xf", tar, "-C", src).CombinedOutput(); err != nil {
			unavailable(t, "unpacking %s: %v\n%s", commit, err, out)
		}
		if err := os.MkdirAll(filepath.Dir(prev), 0o755); err != nil {
			t.Fatal(err)
		}
		tmp := prev + fmt.Sprintf(".%d.tmp", os.Getpid())
		build(src, tmp)
		if err := os.Rename(tmp, prev); err != nil {
			t.Fatal(err)
		}
	}
	cur = filepath.Join(t.TempDir(), "tether")
	build(root, cur)
	return prev, cur
}

// previousWire is the wire revision of the release in compat/previous,
// read from its source in this repository's history: 1 for a release
// before the revisions (it has no cluster/revision.go).
func previousWire(t *testing.T) int {
	t.Helper()
	out, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Fatalf("not in a git checkout: %v", err)
	}
	root := strings.TrimSpace(string(out))
	data, err := os.ReadFile(filepath.Join(root, "compat", "previous"))
	if err != nil {
		t.Fatalf("compat/previous: %v", err)
	}
	src, err := exec.Command("git", "-C", root, "show", strings.TrimSpace(string(data))+":cluster/revision.go").Output()
	if err != nil {
		return 1
	}
	m := regexp.MustCompile(`(?m)^\s*WireRevision\s*=\s*(\d+)`).FindSubmatch(src)
	if m == nil {
		t.Fatalf("compat/previous: no WireRevision in its cluster/revision.go")
	}
	n, _ := strconv.Atoi(string(m[1]))
	return n
}

// fakeCLIPath writes the CLI the tether processes run: this test binary
// playing memoryCLI, with the version probe answered.
func fakeCLIPath(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "claude")
	script := fmt.Sprintf("#!/bin/sh\nfor a in \"$@\"; do if [ \"$a\" = --version ]; then echo '%s (Claude Code)'; exit 0; fi; done\n%s=%s exec '%s' \"$@\"\n",
		claude.MinCLIVersion, claudetest.EnvScript, compatScript, exe)
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// fleet is one NATS server and tether processes of both versions on it.
type fleet struct {
	t    *testing.T
	bins map[string]string // "old", "new" → the tether command
	cli  string
	work string // the sessions' working directory, shared
	ns   *natsProc
	raw  *rawBus
	c    *cluster.Client // this process's view of the registry
	// procs are the agents, by id.
	procs map[string]*child
}

func newFleet(t *testing.T, prev, cur string) *fleet {
	t.Helper()
	ns := spawnNATS(t)
	f := &fleet{t: t, bins: map[string]string{"old": prev, "new": cur}, cli: fakeCLIPath(t), work: t.TempDir(), ns: ns,
		procs: map[string]*child{}}
	// The client creates the streams and buckets with the tests' short
	// heartbeat, which the tether processes then use.
	f.c = newClient(t, ns.URL())
	f.raw = newRawBus(t, ns.URL())
	return f
}

// agent starts a tether agent of version ver and waits until it is live.
func (f *fleet) agent(ver, id string) *child {
	f.t.Helper()
	cmd := exec.Command(f.bins[ver], "agent", "--nats", f.ns.URL(), "--id", id, "--capacity", "4", "--cli", f.cli,
		"--http-addr", "off", "-v", "--drain-timeout", "1m")
	cmd.Dir = f.work
	cmd.Env = append(os.Environ(), claude.EnvConfigDir+"="+f.t.TempDir())
	c := startChild(f.t, ver+" agent "+id, cmd)
	c.printOnFailure()
	c.waitReady(func() bool {
		agents, _ := f.c.Agents(testCtx(f.t))
		for _, a := range agents {
			if a.ID == id {
				return true
			}
		}
		return false
	})
	f.procs[id] = c
	return c
}

var listening = regexp.MustCompile(`listening on (\S+)`)

// serve starts a tether serve --nats of version ver and returns its
// address once it listens.
func (f *fleet) serve(ver string) string {
	f.t.Helper()
	cmd := exec.Command(f.bins[ver], "serve", "--nats", f.ns.URL(), "--addr", "127.0.0.1:0", "--cwd", f.work, "-v")
	cmd.Dir = f.work
	cmd.Env = append(os.Environ(), "TETHER_SERVE_TOKEN="+compatToken)
	c := startChild(f.t, ver+" serve", cmd)
	c.printOnFailure()
	var addr string
	c.waitReady(func() bool {
		m := listening.FindStringSubmatch(c.out.String())
		if m != nil {
			addr = m[1]
		}
		return m != nil
	})
	return addr
}

// browser is a browser of the serve protocol: requests with ids, and
// every session's events and snapshots as they come.
type browser struct {
	t    *testing.T
	name string
	addr string
	c    *websocket.Conn
	done chan struct{}

	mu      sync.Mutex
	change  chan struct{} // closed and replaced on every frame
	nextID  int
	replies map[int]browserFrame
	events  map[string][]host.Event
	snaps   map[string][]*host.Snapshot
	err     error
}

type browserError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

type browserFrame struct {
	Type     string          `json:"type"`
	ID       *int            `json:"id"`
	Result   json.RawMessage `json:"result"`
	Error    *browserError   `json:"error"`
	Session  json.RawMessage `json:"session"`
	Event    *host.Event     `json:"event"`
	Snapshot *host.Snapshot  `json:"snapshot"`
}

func browse(t *testing.T, name, addr string) *browser {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	c, _, err := websocket.Dial(ctx, "ws://"+addr+"/ws", &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + compatToken}}})
	if err != nil {
		cancel()
		t.Fatalf("%s: %v", name, err)
	}
	c.SetReadLimit(64 << 20)
	w := &browser{t: t, name: name, addr: addr, c: c, done: make(chan struct{}), change: make(chan struct{}),
		replies: map[int]browserFrame{}, events: map[string][]host.Event{}, snaps: map[string][]*host.Snapshot{}}
	go w.read(ctx)
	t.Cleanup(func() {
		cancel()
		c.CloseNow()
		<-w.done
	})
	return w
}

func (w *browser) read(ctx context.Context) {
	defer close(w.done)
	for {
		_, data, err := w.c.Read(ctx)
		w.mu.Lock()
		if err != nil {
			w.err = err
		} else {
			var f browserFrame
			if err := json.Unmarshal(data, &f); err != nil {
				w.err = fmt.Errorf("a frame that is not JSON: %w", err)
			}
			var session string
			json.Unmarshal(f.Session, &session)
			switch {
			case f.Type == "reply" && f.ID != nil:
				w.replies[*f.ID] = f
			case f.Type == "event" && f.Event != nil:
				w.events[session] = append(w.events[session], *f.Event)
			case f.Type == "snapshot" && f.Snapshot != nil:
				w.snaps[session] = append(w.snaps[session], f.Snapshot)
			}
		}
		close(w.change)
		w.change = make(chan struct{})
		w.mu.Unlock()
		if err != nil {
			return
		}
	}
}

// call sends a request and returns its reply.
func (w *browser) call(req map[string]any) browserFrame {
	w.t.Helper()
	w.mu.Lock()
	w.nextID++
	id := w.nextID
	w.mu.Unlock()
	req["id"] = id
	data, _ := json.Marshal(req)
	ctx := testCtx(w.t)
	if err := w.c.Write(ctx, websocket.MessageText, data); err != nil {
		w.t.Fatalf("%s: %v", w.name, err)
	}
	var f browserFrame
	w.until(fmt.Sprintf("the reply to %s", data), func() bool {
		var ok bool
		f, ok = w.replies[id]
		return ok
	})
	return f
}

// until waits (w.mu held while cond runs) until cond holds.
func (w *browser) until(what string, cond func() bool) {
	w.t.Helper()
	timeout := time.After(time.Minute)
	for {
		w.mu.Lock()
		ok, err, change := cond(), w.err, w.change
		w.mu.Unlock()
		if ok {
			return
		}
		if err != nil {
			w.t.Fatalf("%s: waiting for %s: %v", w.name, what, err)
		}
		select {
		case <-change:
		case <-timeout:
			w.t.Fatalf("%s: no %s", w.name, what)
		}
	}
}

// do runs a command and fails the test on an error reply.
func (w *browser) do(id string, cmd map[string]any) json.RawMessage {
	w.t.Helper()
	f := w.call(map[string]any{"type": "do", "session": id, "command": cmd})
	if f.Error != nil {
		w.t.Fatalf("%s: %v: %s: %s", w.name, cmd, f.Error.Code, f.Error.Message)
	}
	return f.Result
}

// list returns a copy of a session's events so far.
func (w *browser) list(id string) []host.Event {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]host.Event(nil), w.events[id]...)
}

// wait waits for an event at index from or later that satisfies ok, and
// returns it with its index.
func (w *browser) wait(id, what string, from int, ok func(host.Event) bool) (host.Event, int) {
	w.t.Helper()
	var ev host.Event
	i := from
	w.until(what, func() bool {
		evs := w.events[id]
		for ; i < len(evs); i++ {
			if ok(evs[i]) {
				ev = evs[i]
				return true
			}
		}
		return false
	})
	return ev, i
}

func (w *browser) start() string {
	w.t.Helper()
	f := w.call(map[string]any{"type": "start"})
	if f.Error != nil {
		w.t.Fatalf("%s: start: %s: %s", w.name, f.Error.Code, f.Error.Message)
	}
	var r struct {
		Session struct {
			ID string `json:"id"`
		} `json:"session"`
	}
	if json.Unmarshal(f.Result, &r) != nil || r.Session.ID == "" {
		w.t.Fatalf("%s: start: %s", w.name, f.Result)
	}
	return r.Session.ID
}

func (w *browser) subscribe(id string, after uint64, snapshot bool) {
	w.t.Helper()
	if f := w.call(map[string]any{"type": "subscribe", "session": id, "after": after, "snapshot": snapshot}); f.Error != nil {
		w.t.Fatalf("%s: subscribe: %s: %s", w.name, f.Error.Code, f.Error.Message)
	}
}

// snapshot reads a session's snapshot over HTTP.
func (w *browser) snapshot(id string) *host.Snapshot {
	w.t.Helper()
	req, _ := http.NewRequestWithContext(testCtx(w.t), "GET", "http://"+w.addr+"/api/sessions/"+id+"/snapshot", nil)
	req.Header.Set("Authorization", "Bearer "+compatToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		w.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var snap host.Snapshot
	if resp.StatusCode != 200 || json.Unmarshal(body, &snap) != nil {
		w.t.Fatalf("%s: snapshot: %d %s", w.name, resp.StatusCode, body)
	}
	return &snap
}

// streamTurn sends "stream n" and checks that the whole reply arrives.
func (w *browser) streamTurn(id string, n int) {
	w.t.Helper()
	from := len(w.list(id))
	w.do(id, map[string]any{"type": "send", "text": fmt.Sprintf("stream %d", n)})
	w.wait(id, "the streamed reply", from, result(streamed(n)))
	if got := textAfter(w.list(id), from); !strings.HasPrefix(got, streamed(n)) {
		w.t.Fatalf("%s: streamed text: got %d characters, want %d", w.name, len(got), len(streamed(n)))
	}
}

// floodTurn sends "flood n" through w (deltas as fast as the session
// takes them: where an agent of this release would write batches) and
// checks that the whole reply reaches every client, one event at a time.
func floodTurn(t *testing.T, w *browser, id string, n int, clients ...*browser) {
	t.Helper()
	from := map[*browser]int{}
	for _, c := range clients {
		from[c] = len(c.list(id))
	}
	w.do(id, map[string]any{"type": "send", "text": fmt.Sprintf("flood %d", n)})
	for _, c := range clients {
		c.wait(id, "the flooded reply", from[c], result(streamed(n)))
		if got := textAfter(c.list(id), from[c]); !strings.HasPrefix(got, streamed(n)) {
			t.Fatalf("%s: flooded text: got %d characters, want %d", c.name, len(got), len(streamed(n)))
		}
	}
}

// noBatches fails if the session's stream holds a batch while a serve of
// the previous release followed it throughout and could not have read
// one (a release before wire revision 3). A previous release of revision 3
// or later reads batches, and agents write them to it.
func noBatches(t *testing.T, f *fleet, id string) {
	t.Helper()
	if previousWire(t) >= 3 {
		return
	}
	if msgs, b := f.raw.batches(t, id); b != 0 {
		t.Fatalf("%d batches among %d messages, with a reader of the previous release about", b, msgs)
	}
}

// approval waits for a new approval and returns its id.
func (w *browser) approval(id string, from int) string {
	w.t.Helper()
	ev, _ := w.wait(id, "an approval", from, func(ev host.Event) bool { return ev.Kind == host.EventApproval })
	var a host.ApprovalInfo
	if err := json.Unmarshal(ev.Data, &a); err != nil || a.ID == "" {
		w.t.Fatalf("%s: approval %s", w.name, ev.Data)
	}
	return a.ID
}

// everyCommand runs each command through w (answers through both w and
// other, at once: exactly one of them wins), and checks its effect.
func everyCommand(t *testing.T, w, other *browser, id string) {
	t.Helper()
	w.streamTurn(id, 60)

	from := len(w.list(id))
	w.do(id, map[string]any{"type": "send", "text": "approve"})
	aid := w.approval(id, from)
	answers := make(chan browserFrame, 2)
	for _, c := range []*browser{w, other} {
		go func() {
			answers <- c.call(map[string]any{"type": "do", "session": id, "command": map[string]any{"type": "answer", "approval": aid, "behavior": "allow"}})
		}()
	}
	won, lost := 0, 0
	for range 2 {
		f := <-answers
		switch {
		case f.Error == nil:
			won++
		case f.Error.Code == "already_answered":
			lost++
		default:
			t.Fatalf("answer: %s: %s", f.Error.Code, f.Error.Message)
		}
	}
	if won != 1 || lost != 1 {
		t.Fatalf("an approval answered twice through %s and %s: %d won, %d already answered", w.name, other.name, won, lost)
	}
	w.wait(id, "the approved turn's result", from, result("tool allow"))

	from = len(w.list(id))
	w.do(id, map[string]any{"type": "send", "text": "hold"})
	w.wait(id, "the held turn's text", from, func(ev host.Event) bool { s, ok := deltaText(ev); return ok && s == "working" })
	w.do(id, map[string]any{"type": "interrupt"})
	w.wait(id, "the interrupted turn's end", from, result(""))
	// Commands whose answer is a refusal still cross both ways, with
	// host's code.
	if f := w.call(map[string]any{"type": "do", "session": id, "command": map[string]any{"type": "cancel", "uuid": "no-such-prompt"}}); f.Error == nil || f.Error.Code != "not_queued" {
		t.Fatalf("%s: cancel of no prompt: %+v", w.name, f.Error)
	}
	w.call(map[string]any{"type": "do", "session": id, "command": map[string]any{"type": "force_interrupt"}})

	w.do(id, map[string]any{"type": "set_model", "model": "claude-compat-1"})
	w.do(id, map[string]any{"type": "set_mode", "mode": "plan"})
	w.do(id, map[string]any{"type": "set_mode", "mode": "default"})

	evs := w.list(id)
	if snap := w.snapshot(id); snap.Seq < evs[len(evs)-1].Seq {
		t.Fatalf("%s: snapshot at %d, events up to %d", w.name, snap.Seq, evs[len(evs)-1].Seq)
	}

	// Replays through the other serve: from the middle, and from a
	// snapshot.
	last := evs[len(evs)-1].Seq
	mid := browse(t, other.name+" from the middle", other.addr)
	mid.subscribe(id, last/2, false)
	mid.until("the replay up to the last event", func() bool {
		e := mid.events[id]
		return len(e) > 0 && e[len(e)-1].Seq >= last
	})
	if e := mid.list(id); e[0].Seq != last/2+1 {
		t.Fatalf("%s: replay after %d began at %d", mid.name, last/2, e[0].Seq)
	}
	checkSeqs(t, mid.list(id), last/2+1)
	snap := browse(t, other.name+" from a snapshot", other.addr)
	snap.subscribe(id, 0, true)
	var first *host.Snapshot
	snap.until("a snapshot", func() bool {
		if len(snap.snaps[id]) > 0 {
			first = snap.snaps[id][0]
		}
		return first != nil
	})
	if first.Seq < last {
		t.Fatalf("%s: snapshot at %d, events up to %d", snap.name, first.Seq, last)
	}
}

// closeSession closes the session through w. Its closed event reaches
// every client when its agent is of this release; the previous one
// (f95a7ed) stops publishing as the session ends, and may lose its last
// events: then the registry says it closed.
func closeSession(t *testing.T, f *fleet, id, ownerVersion string, clients ...*browser) {
	t.Helper()
	clients[0].do(id, map[string]any{"type": "close"})
	if ownerVersion == "new" {
		for _, c := range clients {
			c.wait(id, "the session's end", 0, func(ev host.Event) bool { return ev.Kind == host.EventClosed })
		}
		return
	}
	waitFor(t, "the session closed", func() bool {
		s, err := f.c.Session(testCtx(t), id)
		return err == nil && s.Closed
	})
}

// checkSession checks what every client saw of a session and what the
// stream stored: each number once, from 1, in order.
func checkSession(t *testing.T, f *fleet, id string, clients ...*browser) {
	t.Helper()
	for _, w := range clients {
		evs := w.list(id)
		if len(evs) == 0 {
			t.Fatalf("%s saw no event", w.name)
		}
		checkSeqs(t, evs, evs[0].Seq)
	}
	checkStored(t, f.raw, id)
}

// failover kills the session's agent, waits for every client to see the
// session disconnected, resumes it through w on the agent left, and
// checks the conversation carried over.
func failover(t *testing.T, w *browser, id string, dead *child, next string, clients ...*browser) {
	t.Helper()
	from := map[*browser]int{}
	for _, c := range clients {
		from[c] = len(c.list(id))
	}
	dead.kill()
	for _, c := range clients {
		c.wait(id, "the disconnected state", from[c], state("disconnected"))
	}
	var r struct {
		Session struct {
			Owner string `json:"owner"`
		} `json:"session"`
	}
	res := w.do(id, map[string]any{"type": "resume"})
	if json.Unmarshal(res, &r) != nil || r.Session.Owner != next {
		t.Fatalf("resumed: %s, want owner %s", res, next)
	}
	n := len(w.list(id))
	w.do(id, map[string]any{"type": "send", "text": "recall"})
	w.wait(id, "the recalled conversation", n, func(ev host.Event) bool {
		var m struct {
			Type   string `json:"type"`
			Result string `json:"result"`
		}
		return json.Unmarshal(ev.Data, &m) == nil && m.Type == "result" && strings.Contains(m.Result, "stream 60|approve|hold")
	})
	w.streamTurn(id, 40)
}

// TestCompatMixedVersions runs the previous release and this one side by
// side, every way round a rolling upgrade mixes them.
func TestCompatMixedVersions(t *testing.T) {
	prev, cur := tetherBuilds(t)

	// An agent of one version under a serve of the other; its session
	// fails over to an agent of the version given third, through that
	// serve, with a serve of the other version watching.
	for _, v := range []struct{ agent, serve, next string }{
		{"old", "new", "new"},
		{"new", "old", "new"},
		{"new", "old", "old"},
		{"old", "new", "old"},
	} {
		other := map[string]string{"old": "new", "new": "old"}[v.serve]
		t.Run(fmt.Sprintf("%s agent, %s serve, failover to %s", v.agent, v.serve, v.next), func(t *testing.T) {
			f := newFleet(t, prev, cur)
			a1 := f.agent(v.agent, "a1")
			w := browse(t, v.serve+" serve", f.serve(v.serve))
			o := browse(t, other+" serve", f.serve(other))
			id := w.start()
			w.subscribe(id, 0, false)
			o.subscribe(id, 0, false)
			everyCommand(t, w, o, id)
			slashCommands(t, w, id, v.agent == "new" && v.serve == "new")
			addedCommand(t, w, id, "wake", v.agent == "new" && v.serve == "new") // awake: nothing to do
			stopTaskAcross(t, w, id, v.agent == "new" && v.serve == "new")
			floodTurn(t, w, id, 2000, w, o)
			f.agent(v.next, "a2")
			failover(t, w, id, a1, "a2", w, o)
			o.wait(id, "the last reply on the other serve", 0, result(streamed(40)))
			floodTurn(t, o, id, 2000, w, o)
			noBatches(t, f, id)
			closeSession(t, f, id, v.next, w, o)
			checkSession(t, f, id, w, o)
		})
	}

	// Agents drained (SIGTERM) in the middle of a turn: an old one into a
	// new one, then that one into an old one, with a serve of each
	// version watching.
	t.Run("drain old into new into old", func(t *testing.T) {
		f := newFleet(t, prev, cur)
		f.agent("old", "a1")
		w := browse(t, "new serve", f.serve("new"))
		o := browse(t, "old serve", f.serve("old"))
		id := w.start()
		w.subscribe(id, 0, false)
		o.subscribe(id, 0, false)
		w.streamTurn(id, 20)
		drainMidTurn(t, f, w, o, id, "a1", "new", "a2")
		floodTurn(t, o, id, 2000, w, o)
		noBatches(t, f, id)
		drainMidTurn(t, f, o, w, id, "a2", "old", "a3")
		closeSession(t, f, id, "old", w, o)
		checkSession(t, f, id, w, o)
	})
}

// slashCommands asks for the session's slash commands through w: a
// release that knows the command answers with the CLI's list; where the
// serve or the agent is older, the command is refused as one it does not
// run (nothing else happens), which a UI takes as no list.
func slashCommands(t *testing.T, w *browser, id string, known bool) {
	t.Helper()
	var res host.CommandResult
	if r := addedCommand(t, w, id, "slash_commands", known); known && (json.Unmarshal(r, &res) != nil || len(res.SlashCommands) == 0 || res.SlashCommands[0].Name != "cost") {
		t.Fatalf("%s: slash_commands: %s", w.name, r)
	}
}

// addedCommand sends w a command of a type this release added: a release
// that knows it runs it, and its result is returned; where the serve or
// the agent is older, it is refused as one it does not run (nothing else
// happens), which a UI ignores.
func addedCommand(t *testing.T, w *browser, id, typ string, known bool) json.RawMessage {
	t.Helper()
	f := w.call(map[string]any{"type": "do", "session": id, "command": map[string]any{"type": typ}})
	if !known {
		if f.Error == nil || (f.Error.Code != "unsupported" && f.Error.Code != "unknown_type") {
			t.Fatalf("%s: %s across an older release: %+v %s", w.name, typ, f.Error, f.Result)
		}
		return nil
	}
	if f.Error != nil {
		t.Fatalf("%s: %s: %+v %s", w.name, typ, f.Error, f.Result)
	}
	return f.Result
}

// stopTaskAcross sends a stop_task naming no task: refused with no_task
// where both sides know the command, as unsupported (or an unknown
// type) across an older release.
func stopTaskAcross(t *testing.T, w *browser, id string, known bool) {
	t.Helper()
	f := w.call(map[string]any{"type": "do", "session": id, "command": map[string]any{"type": "stop_task", "task_id": "no-such-task"}})
	want := map[bool][]string{true: {"no_task"}, false: {"unsupported", "unknown_type"}}[known]
	if f.Error == nil || !slices.Contains(want, f.Error.Code) {
		t.Fatalf("%s: stop_task (both sides know it: %v): %+v %s", w.name, known, f.Error, f.Result)
	}
}

// drainMidTurn starts an agent of version ver, sends a long turn through
// w, drains the session's agent (oldID) in the middle of it and checks
// that the turn ends whole, the session moves to the new agent, and a
// prompt through o reaches it there. A new agent is drained by SIGTERM,
// as a rolling restart does; an agent of the previous release by the
// bus (`tether agent --drain`), the same Drain: its SIGTERM drain could
// take its own signal for a second one and stop waiting for the turn
// under load (fixed since, fa276a3), which no test of today's code can
// mend.
func drainMidTurn(t *testing.T, f *fleet, w, o *browser, id, oldID, ver, next string) {
	t.Helper()
	old := f.procs[oldID]
	f.agent(ver, next)
	from := len(w.list(id))
	w.do(id, map[string]any{"type": "send", "text": "stream 150"})
	w.wait(id, "the turn under way", from, func(ev host.Event) bool { _, ok := deltaText(ev); return ok })
	if strings.HasPrefix(old.name, "old ") {
		if err := f.c.DrainAgent(testCtx(t), oldID); err != nil {
			t.Fatalf("drain %s: %v", old.name, err)
		}
	} else {
		old.signal(syscall.SIGTERM)
	}
	for _, c := range []*browser{w, o} {
		c.wait(id, "the drained turn's whole reply", from, result(streamed(150)))
	}
	select {
	case <-old.done:
	case <-time.After(time.Minute):
		t.Fatalf("%s did not exit after its drain: %s", old.name, old.out.String())
	}
	waitFor(t, "the session on "+next, func() bool {
		s, err := f.c.Session(testCtx(t), id)
		return err == nil && s.Agent == next && s.State != host.StateStarting.String() && s.State != host.StateDisconnected.String()
	})
	n := len(o.list(id))
	var res browserFrame
	waitFor(t, "a prompt taken after the drain", func() bool {
		res = o.call(map[string]any{"type": "do", "session": id, "command": map[string]any{"type": "send", "text": "after " + next}})
		return res.Error == nil
	})
	for _, c := range []*browser{w, o} {
		c.wait(id, "the turn after the drain", n, result("echo: after "+next))
	}
}
