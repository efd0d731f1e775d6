package cluster_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
	"github.com/tetherhq/tether/cluster"
	"github.com/tetherhq/tether/host"
	"github.com/tetherhq/tether/internal/syncbuf"
)

// heartbeat is short so that a dead agent shows within the tests' patience.
const heartbeat = 250 * time.Millisecond

var limits = &cluster.Limits{Heartbeat: heartbeat, StartAckWait: 5 * time.Second}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// newAgent starts an agent on the fake CLI, with a CLI config folder of
// its own (so that a failover must carry the transcript over).
func newAgent(t *testing.T, url, id string, capacity int, nopts ...nats.Option) *cluster.Agent {
	t.Helper()
	return newAgentWith(t, url, id, capacity, nil, nopts...)
}

// newAgentWith is newAgent with set, when not nil, changing its options
// before it starts (AgentOptions.SleepAfter, …).
func newAgentWith(t *testing.T, url, id string, capacity int, set func(*cluster.AgentOptions), nopts ...nats.Option) *cluster.Agent {
	t.Helper()
	o := &cluster.AgentOptions{
		URL: url, NATS: nopts, ID: id, Capacity: capacity, Limits: limits, MirrorInterval: 20 * time.Millisecond,
		Logger: testLog(t),
		Session: &host.Options{CLI: &claude.Options{
			Transport: &claudetest.FakeCLI{Script: memoryCLI},
			Env:       map[string]string{claude.EnvConfigDir: t.TempDir()},
		}},
	}
	if set != nil {
		set(o)
	}
	a, err := cluster.NewAgent(testCtx(t), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return a
}

// testLogger logs to stderr with TETHER_TEST_LOG=1.
func testLogger() *slog.Logger {
	if os.Getenv("TETHER_TEST_LOG") == "" {
		return nil
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// testLog is testLogger for one test, and more: without TETHER_TEST_LOG
// the debug log of every agent and client the test starts is kept in a
// bounded ring (the last logRingLines lines), printed only when the test
// fails, so that a failure seen once in a long run (a busy CI machine)
// comes with what the processes were doing.
func testLog(t *testing.T) *slog.Logger {
	if l := testLogger(); l != nil {
		return l
	}
	r, loaded := logRings.LoadOrStore(t, &logRing{})
	ring := r.(*logRing)
	if !loaded {
		t.Cleanup(func() {
			logRings.Delete(t)
			if t.Failed() {
				t.Logf("the last %d lines of the agents' and clients' debug log:\n%s", logRingLines, ring.String())
			}
		})
	}
	return slog.New(slog.NewTextHandler(ring, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

var logRings sync.Map // *testing.T → *logRing

const logRingLines = 3000

// logRing keeps the last logRingLines lines written to it, each cut at
// 400 bytes.
type logRing struct {
	mu    sync.Mutex
	lines []string
	next  int
}

func (r *logRing) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, l := range strings.Split(strings.TrimRight(string(p), "\n"), "\n") {
		if len(l) > 400 {
			l = l[:400] + "…"
		}
		if len(r.lines) < logRingLines {
			r.lines = append(r.lines, l)
			continue
		}
		r.lines[r.next] = l
		r.next = (r.next + 1) % logRingLines
	}
	return len(p), nil
}

func (r *logRing) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(append(slices.Clone(r.lines[r.next:]), r.lines[:r.next]...), "\n")
}

func newClient(t *testing.T, url string, nopts ...nats.Option) *cluster.Client {
	t.Helper()
	c, err := cluster.NewClient(testCtx(t), &cluster.ClientOptions{URL: url, NATS: nopts, Limits: limits, Logger: testLog(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// follower reads a session's events into a list, from a given seq.
type follower struct {
	mu     sync.Mutex
	events []host.Event
	err    error
	ended  bool // the events ended without an error (the session closed, or a reader gave up)
	change chan struct{}
	cancel context.CancelFunc
	done   chan struct{}
}

// echoed starts a session on c, follows it from its first event, sends
// prompt and waits for the fake CLI's echo of it: a session with one turn
// done.
func echoed(t *testing.T, c *cluster.Client, prompt string) (string, *follower) {
	t.Helper()
	info := mustStart(testCtx(t), t, c, nil)
	f := follow(t, c, info.ID, 0)
	send(t, c, info.ID, prompt)
	f.wait(t, "a turn", result("echo: "+prompt))
	return info.ID, f
}

// follow reads the session's events after after until the test ends.
// Its bound is generous (a flood of events under the race detector on a
// busy machine takes minutes); wait fails on a stall well before it.
func follow(t *testing.T, c *cluster.Client, id string, after uint64) *follower {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	f := &follower{change: make(chan struct{}, 1), cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(f.done)
		for ev, err := range c.Events(ctx, id, after) {
			f.mu.Lock()
			if err != nil {
				f.err = err
			} else {
				f.events = append(f.events, ev)
			}
			f.mu.Unlock()
			select {
			case f.change <- struct{}{}:
			default:
			}
			if err != nil {
				return
			}
		}
		f.mu.Lock()
		f.ended = ctx.Err() == nil
		f.mu.Unlock()
		select {
		case f.change <- struct{}{}:
		default:
		}
	}()
	t.Cleanup(f.stop)
	return f
}

func (f *follower) stop() {
	f.cancel()
	<-f.done
}

// stall is how long a follower may get no event at all while a test
// waits for one: the test then fails as stuck. A stream that still moves
// is waited for however slow it is (the load of the machine decides
// that, not the code under test).
const stall = time.Minute

// wait waits until an event satisfies ok, and returns it. It fails when
// no event came for stall.
func (f *follower) wait(t *testing.T, what string, ok func(host.Event) bool) host.Event {
	t.Helper()
	timer := time.NewTimer(stall)
	defer timer.Stop()
	seen := 0
	for {
		f.mu.Lock()
		evs, err, ended := f.events[seen:], f.err, f.ended
		seen = len(f.events)
		f.mu.Unlock()
		for _, ev := range evs {
			if ok(ev) {
				return ev
			}
		}
		if err != nil {
			t.Fatalf("waiting for %s: %v", what, err)
		}
		if ended {
			t.Fatalf("waiting for %s: the events ended, with no error, after %d events", what, seen)
		}
		if len(evs) > 0 {
			timer.Reset(stall)
		}
		select {
		case <-f.change:
		case <-timer.C:
			t.Fatalf("no %s among %d events, and none for %s", what, seen, stall)
		}
	}
}

// end waits until the events end and returns their error (nil: they
// ended without one). It fails when they go on for stall.
func (f *follower) end(t *testing.T) error {
	t.Helper()
	select {
	case <-f.done:
	case <-time.After(stall):
		t.Fatalf("the events did not end within %s", stall)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}

// count returns how many of evs satisfy ok.
func count(evs []host.Event, ok func(host.Event) bool) int {
	n := 0
	for _, ev := range evs {
		if ok(ev) {
			n++
		}
	}
	return n
}

func (f *follower) list() []host.Event {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]host.Event(nil), f.events...)
}

// result matches the result message of a turn, with its text.
func result(text string) func(host.Event) bool {
	return func(ev host.Event) bool {
		if ev.Kind != host.EventMessage {
			return false
		}
		var m struct {
			Type   string `json:"type"`
			Result string `json:"result"`
		}
		return json.Unmarshal(ev.Data, &m) == nil && m.Type == "result" && (text == "" || m.Result == text)
	}
}

func state(name string) func(host.Event) bool {
	return func(ev host.Event) bool {
		if ev.Kind != host.EventState {
			return false
		}
		var s host.StateInfo
		return json.Unmarshal(ev.Data, &s) == nil && s.State == name
	}
}

// mustStart starts a session through c, failing the test if it cannot.
func mustStart(ctx context.Context, t *testing.T, c *cluster.Client, opts *cluster.StartOptions) cluster.SessionInfo {
	t.Helper()
	info, err := c.Start(ctx, opts)
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	return info
}

func send(t *testing.T, c *cluster.Client, id, prompt string) {
	t.Helper()
	if _, err := c.Command(testCtx(t), id, &host.Command{Type: host.CommandSend, Text: prompt}); err != nil {
		t.Fatalf("send %q: %v", prompt, err)
	}
}

// checkSeqs fails unless the events are numbered from..from+len-1.
func checkSeqs(t *testing.T, evs []host.Event, from uint64) {
	t.Helper()
	for i, ev := range evs {
		if ev.Seq != from+uint64(i) {
			t.Fatalf("event %d has seq %d, want %d (a gap or a duplicate)", i, ev.Seq, from+uint64(i))
		}
	}
}

// TestPlacementRespectsCapacity: start requests land on agents with room,
// never more than an agent's capacity; a request waits in the queue while
// every agent is full and lands when a slot frees; one whose caller gave
// up is never started.
// A start that takes longer than the start queue's ack wait (a CLI slow
// to answer initialize, a worktree being made) stays with the agent
// working on it: the request is not delivered to a second agent, whose
// "already exists" would reach the client while the first start goes on.
func TestSlowStartNotDeliveredTwice(t *testing.T) {
	ctx := testCtx(t)
	ns := newNATS(t, nil)
	const ackWait = time.Second
	release := make(chan struct{})
	slow := func(ctx context.Context, c *claudetest.CLI) error {
		<-release
		return memoryCLI(ctx, c)
	}
	agents := make([]*cluster.Agent, 2)
	for i := range agents {
		agents[i] = newAgentWith(t, ns.URL(), fmt.Sprint("a", i+1), 2, func(o *cluster.AgentOptions) {
			l := *limits
			l.StartAckWait = ackWait
			o.Limits = &l
			o.Session.CLI.Transport = &claudetest.FakeCLI{Script: slow}
		})
	}
	c := newClient(t, ns.URL())
	// The CLI answers after three ack waits: long enough for the
	// request to be delivered again, were the agent silent about it.
	go func() {
		time.Sleep(3 * ackWait)
		close(release)
	}()
	info, err := c.Start(ctx, nil)
	if err != nil {
		t.Fatalf("a slow start: %v", err)
	}
	f := follow(t, c, info.ID, 0)
	send(t, c, info.ID, "hello")
	f.wait(t, "the turn", result("echo: hello"))
	if n := agents[0].Sessions() + agents[1].Sessions(); n != 1 {
		t.Fatalf("%d sessions run for one start", n)
	}
}

func TestPlacementRespectsCapacity(t *testing.T) {
	ctx := testCtx(t)
	ns := newNATS(t, nil)
	agents := []*cluster.Agent{newAgent(t, ns.URL(), "a1", 2), newAgent(t, ns.URL(), "a2", 1), newAgent(t, ns.URL(), "a3", 2)}
	c := newClient(t, ns.URL())
	var wg sync.WaitGroup
	ids := make([]string, 5)
	errs := make([]error, 5)
	for i := range 5 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			info, err := c.Start(ctx, &cluster.StartOptions{Title: fmt.Sprint("s", i)})
			ids[i], errs[i] = info.ID, err
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("start %d: %v", i, err)
		}
	}
	want := map[string]int{"a1": 2, "a2": 1, "a3": 2}
	for _, a := range agents {
		if got := a.Sessions(); got != want[a.ID()] {
			t.Errorf("agent %s runs %d sessions, capacity %d", a.ID(), got, want[a.ID()])
		}
	}
	// The list is the client's copy of the registry, kept by a watch: a
	// session's "ready" entry may reach it a moment after the start's
	// reply did (its "starting" one first).
	var list []cluster.SessionInfo
	waitFor(t, "five sessions listed ready", func() bool {
		var err error
		list, err = c.Sessions(ctx)
		if err != nil || len(list) != 5 {
			return false
		}
		for _, s := range list {
			if s.State != "ready" {
				return false
			}
		}
		return true
	})
	perAgent := map[string]int{}
	for _, s := range list {
		perAgent[s.Agent]++
	}
	for id, n := range perAgent {
		if n > want[id] {
			t.Errorf("agent %s got %d sessions, capacity %d", id, n, want[id])
		}
	}

	// Full (as the agents' heartbeats say): a start is told its place in
	// the queue, and a request whose deadline passes ends in busy and is
	// never started.
	waitFor(t, "the agents' records full", func() bool {
		as, err := c.Agents(ctx)
		full := err == nil && len(as) > 0
		for _, a := range as {
			full = full && a.Sessions == a.Capacity
		}
		return full
	})
	var positions []int
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	expired, err := c.Start(short, &cluster.StartOptions{ID: "expired", OnQueued: func(p int) { positions = append(positions, p) }})
	cancel()
	if !errors.Is(err, host.ErrBusy) || host.ErrorCode(err) != host.CodeBusy {
		t.Fatalf("start on a full cluster: %v, %v; want busy", expired, err)
	}
	if len(positions) == 0 || positions[0] != 1 {
		t.Fatalf("queue positions reported %v, want 1 first", positions)
	}
	// A waiting request lands once a session closes.
	started := make(chan error, 1)
	go func() {
		_, err := c.Start(ctx, &cluster.StartOptions{ID: "late"})
		started <- err
	}()
	if _, err := c.Command(ctx, list[0].ID, &host.Command{Type: host.CommandClose}); err != nil {
		t.Fatal(err)
	}
	if err := <-started; err != nil {
		t.Fatal(err)
	}
	late, err := c.Session(ctx, "late")
	if err != nil {
		t.Fatal(err)
	}
	if late.Agent != list[0].Agent {
		t.Errorf("late session on %s, the free slot was on %s", late.Agent, list[0].Agent)
	}
	if _, err := c.Session(ctx, "expired"); !errors.Is(err, cluster.ErrNoSession) {
		t.Errorf("the expired request was started: %v", err)
	}
	for _, a := range agents {
		if got := a.Sessions(); got > want[a.ID()] {
			t.Errorf("agent %s runs %d sessions, capacity %d", a.ID(), got, want[a.ID()])
		}
	}
	if closed, err := c.Session(ctx, list[0].ID); err != nil || !closed.Closed || !closed.Ended {
		t.Errorf("closed session: %+v, %v", closed, err)
	}
}

// TestEventsResumeWithoutGap: a subscriber that stops at event N and
// subscribes again after N, also through another client (another `serve`),
// gets exactly the rest: no gap, no duplicate; and the bus carries the
// host journal's events unchanged.
func TestEventsResumeWithoutGap(t *testing.T) {
	ctx := testCtx(t)
	ns := newNATS(t, nil)
	a := newAgent(t, ns.URL(), "a1", 4)
	c1 := newClient(t, ns.URL())
	c2 := newClient(t, ns.URL())
	info := mustStart(ctx, t, c1, nil)
	all := follow(t, c1, info.ID, 0)
	send(t, c1, info.ID, "one")
	all.wait(t, "first result", result("echo: one"))
	first := all.list()
	n := len(first) / 2
	part := follow(t, c1, info.ID, 0)
	part.wait(t, "event N", func(ev host.Event) bool { return ev.Seq == uint64(n) })
	part.stop() // disconnects at N (or a little after: keep only up to N)
	got := part.list()[:n]
	send(t, c1, info.ID, "two")
	send(t, c1, info.ID, "three")
	last := all.wait(t, "last result", result("echo: three"))
	rest := follow(t, c2, info.ID, uint64(n))
	rest.wait(t, "last result again", result("echo: three"))
	got = append(got, rest.list()...)
	want := all.list()
	// Both have the last result; events after it may still be on their way.
	got, want = got[:last.Seq], want[:last.Seq]
	checkSeqs(t, got, 1)
	checkSeqs(t, want, 1)
	if len(got) != len(want) {
		t.Fatalf("resumed subscriber got %d events, the full one %d", len(got), len(want))
	}
	for i := range got {
		if got[i].Kind != want[i].Kind || string(got[i].Data) != string(want[i].Data) {
			t.Fatalf("event %d differs: %s %s vs %s %s", i+1, got[i].Kind, got[i].Data, want[i].Kind, want[i].Data)
		}
	}
	// The host's own journal holds the same events with the same numbers.
	hs := a.Manager().Sessions()[0]
	var local []host.Event
	lctx, cancel := context.WithCancel(ctx)
	for ev, err := range hs.Events(lctx, 0) {
		if err != nil {
			t.Fatal(err)
		}
		local = append(local, ev)
		if ev.Seq == want[len(want)-1].Seq {
			break
		}
	}
	cancel()
	for i := range local {
		if local[i].Seq != want[i].Seq || local[i].Kind != want[i].Kind || string(local[i].Data) != string(want[i].Data) {
			t.Fatalf("bus event %d differs from the journal's", i+1)
		}
	}
	// A snapshot is consistent with the events: Seq is the last one.
	snap, err := c2.Snapshot(ctx, info.ID)
	if err != nil {
		t.Fatal(err)
	}
	if snap.Seq < want[len(want)-1].Seq || snap.State.State != "idle" {
		t.Errorf("snapshot seq %d state %s; last event %d", snap.Seq, snap.State.State, want[len(want)-1].Seq)
	}
}

// TestApprovalAnsweredOnce: two clients answer one approval at the same
// moment; one answer is applied, the other is refused with a typed error.
func TestApprovalAnsweredOnce(t *testing.T) {
	ctx := testCtx(t)
	ns := newNATS(t, nil)
	newAgent(t, ns.URL(), "a1", 2)
	c1, c2 := newClient(t, ns.URL()), newClient(t, ns.URL())
	info := mustStart(ctx, t, c1, nil)
	f := follow(t, c1, info.ID, 0)
	send(t, c1, info.ID, "approve")
	ev := f.wait(t, "approval", func(ev host.Event) bool { return ev.Kind == host.EventApproval })
	var ap host.ApprovalInfo
	if err := json.Unmarshal(ev.Data, &ap); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, c := range []*cluster.Client{c1, c2} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			behavior := []string{"allow", "deny"}[i]
			_, errs[i] = c.Command(ctx, info.ID, &host.Command{Type: host.CommandAnswer, Approval: ap.ID, Behavior: behavior, Message: "no"})
		}()
	}
	wg.Wait()
	ok, refused := 0, 0
	var outcome string
	for i, err := range errs {
		var ce *host.CommandError
		switch {
		case err == nil:
			ok++
			outcome = []string{"tool allow", "tool deny"}[i]
		case errors.As(err, &ce) && (errors.Is(err, host.ErrAlreadyAnswered) || errors.Is(err, host.ErrNoApproval)):
			refused++
		default:
			t.Errorf("answer %d: %v", i, err)
		}
	}
	if ok != 1 || refused != 1 {
		t.Fatalf("%d answers applied, %d refused: %v", ok, refused, errs)
	}
	f.wait(t, "the turn's end", result(outcome))
	resolved := 0
	for _, ev := range f.list() {
		if ev.Kind == host.EventApprovalResolved {
			resolved++
		}
	}
	if resolved != 1 {
		t.Errorf("%d approval_resolved events", resolved)
	}
}

// TestInterruptThroughTheBus stops a running turn from a client, and asks
// for the slash commands while it runs.
func TestInterruptThroughTheBus(t *testing.T) {
	ctx := testCtx(t)
	ns := newNATS(t, nil)
	newAgent(t, ns.URL(), "a1", 2)
	c := newClient(t, ns.URL())
	info := mustStart(ctx, t, c, nil)
	f := follow(t, c, info.ID, 0)
	send(t, c, info.ID, "hold")
	f.wait(t, "streaming", state("streaming"))
	// The session's slash commands, as its CLI listed them, come in the
	// middle of the turn too (the quick lane, not behind the turn).
	res, err := c.Command(ctx, info.ID, &host.Command{Type: host.CommandSlashCommands})
	if err != nil || len(res.SlashCommands) != 1 || res.SlashCommands[0].Name != "cost" || res.SlashCommands[0].Description != "Show the total cost" {
		t.Fatalf("slash_commands mid-turn: %+v, %v", res, err)
	}
	if _, err := c.Command(ctx, info.ID, &host.Command{Type: host.CommandInterrupt}); err != nil {
		t.Fatal(err)
	}
	f.wait(t, "idle after the interrupt", state("idle"))
	send(t, c, info.ID, "after")
	f.wait(t, "the next turn", result("echo: after"))
}

// TestMalformedMessagesHaveNoEffect sends broken and oversized messages
// straight to the bus: each is refused with a typed error and changes
// nothing.
func TestMalformedMessagesHaveNoEffect(t *testing.T) {
	ctx := testCtx(t)
	// A server that takes messages bigger than the agent's limit.
	ns := newNATS(t, func(o *server.Options) { o.MaxPayload = 2 * cluster.MaxCommandSize })
	// The agent pings its server every heartbeat (250 ms here) and drops
	// a connection that leaves two pings unanswered; the server's answer
	// waits behind the 16 MiB message, which a starved agent (both cores
	// busy, the race detector) can take longer than that to read: it
	// would drop its connection, and the message, on every try. Pings
	// 5 s apart leave it 10 s.
	a := newAgent(t, ns.URL(), "a1", 2, nats.PingInterval(5*time.Second))
	c := newClient(t, ns.URL())
	info := mustStart(ctx, t, c, nil)
	nc, err := nats.Connect(ns.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	big := make([]byte, cluster.MaxCommandSize+1)
	for i := range big {
		big[i] = 'x'
	}
	for _, tc := range []struct {
		name string
		data []byte
		want error
	}{
		{"not JSON", []byte("{nope"), cluster.ErrMalformed},
		// Another release's: an operation this one does not know.
		{"unknown type", []byte(`{"type":"format_disk"}`), cluster.ErrUnsupported},
		// The compatibility rule: a field this release does not know is
		// ignored (a later one may add it).
		{"unknown field", []byte(`{"type":"interrupt","sudo":true}`), nil},
		{"send without text", []byte(`{"type":"send"}`), cluster.ErrMalformed},
		{"two values", []byte(`{"type":"interrupt"}{"type":"close"}`), cluster.ErrMalformed},
		{"oversized", big, cluster.ErrTooLarge},
	} {
		// A request on core NATS is lost when the agent's connection is
		// replaced meanwhile: on a loaded machine the agent, starved,
		// can outlast the server's write deadline taking 16 MiB, and
		// reconnects. The refusal changes nothing, so ask again.
		var r *nats.Msg
		for try := 1; ; try++ {
			rctx, cancel := context.WithTimeout(ctx, 20*time.Second)
			r, err = nc.RequestWithContext(rctx, "tether.v1.cmd."+info.ID, tc.data)
			cancel()
			if err == nil || ctx.Err() != nil || try == 5 {
				break
			}
			t.Logf("%s: try %d: %v; asking again", tc.name, try, err)
		}
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var rep struct {
			Error *struct{ Code string } `json:"error"`
		}
		json.Unmarshal(r.Data, &rep)
		if rep.Error == nil {
			if tc.want != nil {
				t.Errorf("%s: accepted", tc.name)
			}
			continue
		}
		if err := (&cluster.CommandError{Code: rep.Error.Code}); !errors.Is(err, tc.want) {
			t.Errorf("%s: refused with %q, want %v", tc.name, rep.Error.Code, tc.want)
		}
	}
	// Client-side validation catches the same before sending.
	if _, err := c.Command(ctx, info.ID, &host.Command{Type: host.CommandSend, Text: string(big)}); !errors.Is(err, cluster.ErrTooLarge) {
		t.Errorf("client sent an oversized command: %v", err)
	}
	if _, err := c.Command(ctx, info.ID, &host.Command{Type: "format_disk"}); !errors.Is(err, cluster.ErrUnsupported) {
		t.Errorf("client sent an unknown op: %v", err)
	}
	if _, err := c.Command(ctx, "../etc", &host.Command{Type: host.CommandInterrupt}); !errors.Is(err, cluster.ErrNoSession) {
		t.Errorf("bad session id: %v", err)
	}
	// A broken start request is dropped from the queue, starting nothing.
	js, _ := nc.JetStream()
	if _, err := js.Publish("tether.v1.start", []byte(`{"id":"x y"}`)); err != nil {
		t.Fatal(err)
	}
	// The queue is FIFO: once a later start is served the broken one was
	// taken and refused.
	if _, err := c.Start(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if a.Sessions() != 2 {
		t.Errorf("agent runs %d sessions, want 2", a.Sessions())
	}
	s, err := c.Session(ctx, info.ID)
	if err != nil || s.State != "ready" || s.Ended {
		t.Errorf("session after the bad commands: %+v %v", s, err)
	}
}

func resultContaining(sub string) func(host.Event) bool {
	return func(ev host.Event) bool {
		var m struct {
			Type   string `json:"type"`
			Result string `json:"result"`
		}
		return ev.Kind == host.EventMessage && json.Unmarshal(ev.Data, &m) == nil && m.Type == "result" && strings.Contains(m.Result, sub)
	}
}

// waitFor polls cond (a state of another process: the bus) until it holds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// mirrored reports whether the session's transcript mirror holds text.
func mirrored(t *testing.T, url, id, text string, nopts ...nats.Option) func() bool {
	return mirroredOn(t, url, "tether.v1.tx."+id, text, nopts...)
}

// mirroredOn is mirrored for any subject of the transcript stream.
func mirroredOn(t *testing.T, url, subject, text string, nopts ...nats.Option) func() bool {
	nc, err := nats.Connect(url, nopts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return func() bool {
		st, err := js.Stream(context.Background(), cluster.StreamTranscripts)
		if err != nil {
			return false
		}
		var all []byte
		for seq := uint64(1); ; {
			m, err := st.GetMsg(context.Background(), seq, jetstream.WithGetMsgSubject(subject))
			if err != nil {
				break
			}
			all = append(all, m.Data...)
			seq = m.Sequence + 1
		}
		return strings.Contains(string(all), text)
	}
}

// TestDisconnectedEventAfterAFailedAppend: a client that marked a
// session disconnected in the registry but could not append the
// "disconnected" event (the bus refused it, or the look ran out of time on
// a starved machine) appends it at a later look, so subscribers see the
// session disconnected, once, and numbered in order.
func TestDisconnectedEventAfterAFailedAppend(t *testing.T) {
	l := startLone(t, "apples")
	f := l.f
	left := cluster.FailMarkerAppends(l.c, 3)
	cluster.Crash(l.a)
	f.wait(t, "a disconnected event", state("disconnected"))
	if n := left(); n > 0 {
		t.Errorf("%d of the 3 failed appends still to come: the event came some other way", n)
	}
	s, err := l.c.Session(l.ctx, l.id)
	if err != nil || s.State != "disconnected" {
		t.Fatalf("session = %+v, %v; want disconnected", s, err)
	}
	if n := count(f.list(), state("disconnected")); n != 1 {
		t.Errorf("%d disconnected events, want 1", n)
	}
	checkSeqs(t, f.list(), 1)
}

// TestAgentCrashFailover kills an agent in the middle of a turn: its
// session shows disconnected within three heartbeats (in the registry and
// as an event to its subscribers), and resumes on another agent with its
// conversation, its events carrying on with no gap.
func TestAgentCrashFailover(t *testing.T) {
	ctx := testCtx(t)
	ns := newNATS(t, nil)
	a1 := newAgent(t, ns.URL(), "a1", 2)
	c := newClient(t, ns.URL())
	info, err := c.Start(ctx, nil) // a1 is the only agent
	if err != nil {
		t.Fatal(err)
	}
	newAgent(t, ns.URL(), "a2", 2)
	f := follow(t, c, info.ID, 0)
	send(t, c, info.ID, "apples")
	f.wait(t, "first turn", result("echo: apples"))
	if _, err := c.Resume(ctx, info.ID); !errors.Is(err, cluster.ErrOwned) {
		t.Fatalf("failover of a live agent's session: %v", err)
	}
	send(t, c, info.ID, "hold")
	f.wait(t, "the second turn running", state("streaming"))
	waitFor(t, "the transcript mirrored", mirrored(t, ns.URL(), info.ID, "apples"))

	crashed := time.Now()
	cluster.Crash(a1)
	waitDisconnected(t, ctx, c, info.ID)
	elapsed := time.Since(crashed)
	// The promise is 3 heartbeats from the last beat; it is logged, not
	// asserted, since a loaded machine fails a clock. An agent that never
	// marked the session would fail the wait above.
	t.Logf("disconnected %v after the crash (heartbeat %v, promised %v)", elapsed, heartbeat, 3*heartbeat)
	f.wait(t, "a disconnected event", state("disconnected"))
	list, err := c.Sessions(ctx)
	if err != nil || len(list) != 1 || list[0].State != "disconnected" {
		t.Fatalf("sessions: %+v, %v", list, err)
	}
	if _, err := c.Command(ctx, info.ID, &host.Command{Type: host.CommandSend, Text: "x"}); !errors.Is(err, cluster.ErrDisconnected) {
		t.Errorf("command to a dead agent's session: %v", err)
	}
	snap, err := c.Snapshot(ctx, info.ID)
	if err != nil || snap.State.State != "disconnected" || len(snap.Transcript) == 0 {
		t.Errorf("offline snapshot: %+v, %v", snap, err)
	}

	resumed, err := c.Resume(ctx, info.ID)
	if err != nil {
		t.Fatal(err)
	}
	if resumed.Agent != "a2" {
		t.Errorf("resumed on %s", resumed.Agent)
	}
	send(t, c, info.ID, "recall")
	r := f.wait(t, "the recall", resultContaining("remember: apples"))
	t.Logf("after failover: %s", r.Data)
	checkSeqs(t, f.list(), 1)
	// A second subscriber from scratch reads the same history.
	g := follow(t, c, info.ID, 0)
	g.wait(t, "the recall again", resultContaining("remember: apples"))
	checkSeqs(t, g.list(), 1)
	s, err := c.Session(ctx, info.ID)
	if err != nil || s.Agent != "a2" || s.Takeovers != 1 {
		t.Errorf("after failover: %+v, %v", s, err)
	}
}

// TestNATSRestart restarts the NATS server under a running session:
// agent and client reconnect, the subscriber carries on with no gap or
// duplicate, and everything acknowledged before is still there.
func TestNATSRestart(t *testing.T) {
	ctx := testCtx(t)
	ns := newNATS(t, nil)
	newAgent(t, ns.URL(), "a1", 2)
	c := newClient(t, ns.URL())
	info := mustStart(ctx, t, c, nil)
	f := follow(t, c, info.ID, 0)
	send(t, c, info.ID, "before")
	f.wait(t, "the turn before", result("echo: before"))
	before := f.list()

	ns.restart()
	// Commands fail while the agent has not resubscribed; none is
	// delivered then (no responders), so retrying is safe. A request
	// sent while the client itself reconnects can go unanswered (its
	// reply lost on the way): each try waits a bounded time, and a
	// prompt that did arrive twice only makes a second turn.
	waitFor(t, "the agent back", func() bool {
		tctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		_, err := c.Command(tctx, info.ID, &host.Command{Type: host.CommandSend, Text: "after"})
		return err == nil
	})
	f.wait(t, "the turn after", result("echo: after"))
	checkSeqs(t, f.list(), 1)
	g := follow(t, c, info.ID, 0)
	last := g.wait(t, "the turn after, from scratch", result("echo: after"))
	got := g.list()
	checkSeqs(t, got, 1)
	for i, ev := range before {
		if got[i].Kind != ev.Kind || string(got[i].Data) != string(ev.Data) {
			t.Fatalf("event %d changed across the restart", ev.Seq)
		}
	}
	if want := f.list(); len(want) < int(last.Seq) {
		t.Fatalf("live subscriber has %d events, the new one %d", len(want), last.Seq)
	}
	// Placement works again too.
	if _, err := c.Start(ctx, nil); err != nil {
		t.Fatal(err)
	}
}

// TestNATSOutageLongerThanHeartbeats: NATS is gone for longer than the
// heartbeat bound, so the agent's entry lapses and a client may mark its
// session disconnected (if it reconnects before the agent); when NATS is
// back the agent has its session, and the events go on with no gap. Then
// the marking is forced: the agent takes the session back, its events
// numbered after the "disconnected" one.
func TestNATSOutageLongerThanHeartbeats(t *testing.T) {
	ctx := testCtx(t)
	ns := newNATS(t, nil)
	newAgent(t, ns.URL(), "a1", 2)
	c := newClient(t, ns.URL())
	info := mustStart(ctx, t, c, nil)
	f := follow(t, c, info.ID, 0)
	send(t, c, info.ID, "one")
	f.wait(t, "a turn", result("echo: one"))
	ns.stop()
	time.Sleep(4 * heartbeat) // the outage: the agent's entry's TTL passes
	ns.start()
	waitFor(t, "the agent back", func() bool {
		_, err := c.Command(ctx, info.ID, &host.Command{Type: host.CommandSend, Text: "two"})
		return err == nil
	})
	f.wait(t, "the turn after", result("echo: two"))
	checkSeqs(t, f.list(), 1)
	takenBack := func() bool {
		s, err := c.Session(ctx, info.ID)
		return err == nil && s.Agent == "a1" && !s.Orphaned && s.State == "idle"
	}
	waitFor(t, "the session taken back", takenBack)

	// A reap loses to the agent rewriting its entry at that moment:
	// force it until the marker is there.
	reapUntilMarked(t, c, f, info.ID)
	waitFor(t, "the session taken back again", takenBack)
	stateAfterMarker(t, f, "idle")
	send(t, c, info.ID, "three")
	f.wait(t, "the turn after the marking", result("echo: three"))
	checkSeqs(t, f.list(), 1)
}

// stateAfterMarker waits for a "disconnected" marker followed by the
// state name, with no marker after it: an agent that takes a session
// back says what it does now, though its CLI has nothing to say.
func stateAfterMarker(t *testing.T, f *follower, name string) {
	t.Helper()
	waitFor(t, "the state "+name+" after the disconnected marker", func() bool {
		evs := f.list()
		ms := markers(evs)
		if len(ms) == 0 {
			return false
		}
		last := ms[len(ms)-1]
		return slices.ContainsFunc(evs, func(ev host.Event) bool { return ev.Seq > last.Seq && state(name)(ev) })
	})
}

// TestTakenBackUnmarked: a client marks a live agent's idle session
// disconnected in the registry but cannot store the marker (the bus
// stalled for it too, as for the agent's heartbeats). The agent takes
// the session back, and its stream shows what the registry did: the
// disconnection, then the session's state as of now, numbered on.
func TestTakenBackUnmarked(t *testing.T) {
	ctx := testCtx(t)
	ns := newNATS(t, nil)
	newAgent(t, ns.URL(), "a1", 2)
	c := newClient(t, ns.URL())
	id, f := echoed(t, c, "one")
	f.wait(t, "idle", state("idle"))
	cluster.FailMarkerAppends(c, 1<<20)
	reapOnce(t, c, id)
	stateAfterMarker(t, f, "idle")
	waitFor(t, "the session taken back", func() bool {
		s, err := c.Session(ctx, id)
		return err == nil && s.Agent == "a1" && !s.Orphaned
	})
	send(t, c, id, "two")
	f.wait(t, "the turn after", result("echo: two"))
	evs := f.list()
	checkSeqs(t, evs, 1)
	if n := len(markers(evs)); n != 1 {
		t.Fatalf("%d disconnected markers, want 1", n)
	}
}

// TestThreeNodeCluster runs agent and client on different nodes of a
// 3-node NATS cluster with replicated streams, and keeps going when a
// node goes away. It waits for states, not time: the cluster formed with
// every peer known to the meta leader (else an R3 stream cannot be
// placed), the streams led and current on every node before one goes,
// and led again among the two left before the next command; the agent's
// entry may lapse meanwhile (an election slower than 3 heartbeats): the
// session is then marked disconnected and taken back, numbered after the
// marker.
func TestThreeNodeCluster(t *testing.T) {
	ctx := testCtx(t)
	nodes, _ := newNATSCluster(t)
	l := &cluster.Limits{Replicas: 3, Heartbeat: time.Second}
	a, err := cluster.NewAgent(ctx, &cluster.AgentOptions{URL: nodes[1].URL(), ID: "a1", Limits: l,
		Session: &host.Options{CLI: &claude.Options{Transport: &claudetest.FakeCLI{Script: memoryCLI},
			Env: map[string]string{claude.EnvConfigDir: t.TempDir()}}}})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	c, err := cluster.NewClient(ctx, &cluster.ClientOptions{URL: nodes[2].URL(), Limits: l})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	raw := newRawBus(t, nodes[2].URL())
	info := mustStart(ctx, t, c, nil)
	f := follow(t, c, info.ID, 0)
	send(t, c, info.ID, "one")
	f.wait(t, "a turn", result("echo: one"))
	waitFor(t, "the streams current on all three nodes", func() bool { return streamsLed(nodes, streams3...) })
	nodes[0].stop()
	waitFor(t, "the streams led by the two nodes left", func() bool { return streamsLed(nodes[1:], streams3...) })
	send(t, c, info.ID, "two")
	f.wait(t, "a turn with a node down", result("echo: two"))
	checkSeqs(t, f.list(), 1)
	checkStored(t, raw, info.ID)
}

// TestMetaLeaderLostAtStart starts an agent and a client just after the
// node leading the JetStream meta group is lost: the set-up's first
// request to the old leader goes unanswered, and the start asks again
// (setUp) and comes up on the two nodes left instead of waiting out its
// ctx. A turn then runs through them.
func TestMetaLeaderLostAtStart(t *testing.T) {
	ctx := testCtx(t)
	nodes, _ := newNATSCluster(t)
	l := &cluster.Limits{Replicas: 3, Heartbeat: time.Second}
	first, err := cluster.NewClient(ctx, &cluster.ClientOptions{URL: nodes[0].URL(), Limits: l})
	if err != nil {
		t.Fatal(err)
	}
	first.Close()
	waitFor(t, "the streams current on all three nodes", func() bool { return streamsLed(nodes, streams3...) })
	var leader *natsServer
	waitFor(t, "one meta leader", func() bool {
		leader = nil
		for _, n := range nodes {
			if n.s.JetStreamIsLeader() {
				if leader != nil {
					return false
				}
				leader = n
			}
		}
		return leader != nil
	})
	t.Logf("stopping %s, the meta leader", leader.opts.ServerName)
	leader.stop() // the others elect another only after this: pick first, then stop
	var left []*natsServer
	for _, n := range nodes {
		if n != leader {
			left = append(left, n)
		}
	}
	a, err := cluster.NewAgent(ctx, &cluster.AgentOptions{URL: left[0].URL(), ID: "a1", Limits: l,
		Session: &host.Options{CLI: &claude.Options{Transport: &claudetest.FakeCLI{Script: memoryCLI},
			Env: map[string]string{claude.EnvConfigDir: t.TempDir()}}}})
	if err != nil {
		t.Fatalf("an agent started without the meta leader: %v", err)
	}
	defer a.Close()
	c, err := cluster.NewClient(ctx, &cluster.ClientOptions{URL: left[1].URL(), Limits: l})
	if err != nil {
		t.Fatalf("a client started without the meta leader: %v", err)
	}
	defer c.Close()
	_, f := echoed(t, c, "one")
	checkSeqs(t, f.list(), 1)
}

// TestAuthPassedThrough: NATS user/password reach the server; a wrong one
// fails with NATS's authorization error.
func TestAuthPassedThrough(t *testing.T) {
	ctx := testCtx(t)
	ns := newNATS(t, func(o *server.Options) { o.Username, o.Password = "tether", "s3cret" })
	newAgent(t, ns.URL(), "a1", 1, nats.UserInfo("tether", "s3cret"))
	c := newClient(t, ns.URL(), nats.UserInfo("tether", "s3cret"))
	if _, err := c.Start(ctx, nil); err != nil {
		t.Fatal(err)
	}
	_, err := cluster.NewClient(ctx, &cluster.ClientOptions{URL: ns.URL(), NATS: []nats.Option{nats.UserInfo("tether", "guess")}})
	if !errors.Is(err, nats.ErrAuthorization) {
		t.Fatalf("wrong password: %v", err)
	}
	if strings.Contains(err.Error(), "guess") {
		t.Errorf("the error shows the password: %v", err)
	}
}

// TestNkeyAuth: an nkey seed file authenticates agent and client.
func TestNkeyAuth(t *testing.T) {
	ctx := testCtx(t)
	kp, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := kp.PublicKey()
	seed, _ := kp.Seed()
	seedFile := filepath.Join(t.TempDir(), "user.nk")
	if err := os.WriteFile(seedFile, seed, 0o600); err != nil {
		t.Fatal(err)
	}
	ns := newNATS(t, func(o *server.Options) { o.Nkeys = []*server.NkeyUser{{Nkey: pub}} })
	opt, err := nats.NkeyOptionFromSeed(seedFile)
	if err != nil {
		t.Fatal(err)
	}
	newAgent(t, ns.URL(), "a1", 1, opt)
	c := newClient(t, ns.URL(), opt)
	if _, err := c.Start(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := cluster.NewClient(ctx, &cluster.ClientOptions{URL: ns.URL()}); !errors.Is(err, nats.ErrAuthorization) {
		t.Fatalf("no credentials: %v", err)
	}
}

// TestAgentShutdownThenResume: an agent that stops (a rolling deploy)
// leaves its sessions disconnected, not ended: they resume elsewhere.
func TestAgentShutdownThenResume(t *testing.T) {
	l := startLone(t, "pears")
	if err := l.a.Close(); err != nil {
		t.Fatal(err)
	}
	l.f.wait(t, "disconnected", state("disconnected"))
	newAgent(t, l.ns.URL(), "a2", 1)
	if _, err := l.c.Resume(l.ctx, l.id); err != nil {
		t.Fatal(err)
	}
	send(t, l.c, l.id, "recall")
	l.f.wait(t, "the recall", result("remember: pears"))
	checkSeqs(t, l.f.list(), 1)
}

// lone is a session on the only agent ("a1", room for one), followed from
// its start, after a first turn: the set-up of the tests of what becomes
// of a session when its agent goes.
type lone struct {
	ctx context.Context
	ns  *natsServer
	a   *cluster.Agent
	c   *cluster.Client
	id  string
	f   *follower
}

func startLone(t *testing.T, prompt string) *lone {
	t.Helper()
	l := &lone{ctx: testCtx(t), ns: newNATS(t, nil)}
	l.a = newAgent(t, l.ns.URL(), "a1", 1)
	l.c = newClient(t, l.ns.URL())
	info, err := l.c.Start(l.ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	l.id = info.ID
	l.f = follow(t, l.c, l.id, 0)
	send(t, l.c, l.id, prompt)
	l.f.wait(t, "the first turn", result("echo: "+prompt))
	return l
}

// TestLogsCarryNoPrompts runs a session with debug logs on and checks that
// neither its prompts nor its replies, nor a refused command's payload,
// reach the logs.
func TestLogsCarryNoPrompts(t *testing.T) {
	ctx := testCtx(t)
	ns := newNATS(t, nil)
	var buf syncbuf.Buffer
	logger := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	a, err := cluster.NewAgent(ctx, &cluster.AgentOptions{URL: ns.URL(), ID: "a1", Limits: limits, Logger: logger,
		Session: &host.Options{CLI: &claude.Options{Transport: &claudetest.FakeCLI{Script: memoryCLI},
			Env: map[string]string{claude.EnvConfigDir: t.TempDir()}}}})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	c, err := cluster.NewClient(ctx, &cluster.ClientOptions{URL: ns.URL(), Limits: limits, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	id, _ := echoed(t, c, "secret-prompt-7f3a")
	nc, err := nats.Connect(ns.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if _, err := nc.RequestWithContext(ctx, "tether.v1.cmd."+id, []byte(`{"op":"send","prompt":"secret-payload-9c1e","x":1}`)); err != nil {
		t.Fatal(err)
	}
	a.Close()
	logs := buf.String()
	if !strings.Contains(logs, id) {
		t.Fatalf("the logs do not even name the session:\n%s", logs)
	}
	for _, secret := range []string{"secret-prompt-7f3a", "secret-payload-9c1e"} {
		if strings.Contains(logs, secret) {
			t.Errorf("the logs carry %q:\n%s", secret, logs)
		}
	}
}

// TestFailoverWithoutTranscript: a session whose agent died before the CLI
// wrote anything cannot resume; the refusal is typed and leaves the
// session free for a later try.
func TestFailoverWithoutTranscript(t *testing.T) {
	ctx := testCtx(t)
	ns := newNATS(t, nil)
	a1 := newAgent(t, ns.URL(), "a1", 1)
	c := newClient(t, ns.URL())
	info := mustStart(ctx, t, c, nil)
	cluster.Crash(a1)
	newAgent(t, ns.URL(), "a2", 1)
	waitDisconnected(t, ctx, c, info.ID)
	if _, err := c.Resume(ctx, info.ID); !errors.Is(err, cluster.ErrNoTranscript) {
		t.Fatalf("resume without a transcript: %v", err)
	}
	s, err := c.Session(ctx, info.ID)
	if err != nil || s.Agent != "" || s.State != "disconnected" || s.Ended {
		t.Errorf("after the failed takeover: %+v, %v", s, err)
	}
	if _, err := c.Resume(ctx, info.ID); !errors.Is(err, cluster.ErrNoTranscript) {
		t.Fatalf("second try: %v", err)
	}
}

// TestResumeWaitsForRoom: a resume through Backend.Do (as tether serve
// sends it) of a session whose agent is gone, while every live agent is
// full, tells the caller its place in the queue (host.Command.OnQueued),
// and goes through once a slot frees.
func TestResumeWaitsForRoom(t *testing.T) {
	ctx := testCtx(t)
	ns := newNATS(t, nil)
	a1 := newAgent(t, ns.URL(), "a1", 1)
	c := newClient(t, ns.URL())
	info := mustStart(ctx, t, c, nil)
	f := follow(t, c, info.ID, 0)
	send(t, c, info.ID, "dates")
	f.wait(t, "the turn", result("echo: dates"))
	waitFor(t, "the transcript mirrored", mirrored(t, ns.URL(), info.ID, "dates"))
	cluster.Crash(a1)
	newAgent(t, ns.URL(), "a2", 1)
	other, err := c.Start(ctx, nil) // a2's one slot
	if err != nil {
		t.Fatal(err)
	}
	waitDisconnected(t, ctx, c, info.ID)
	b := cluster.NewBackend(c, nil)
	wait := queuedFirst(t, "the resume", func(onQueued func(int)) error {
		_, err := b.Do(ctx, info.ID, &host.Command{Type: host.CommandResume, OnQueued: onQueued})
		return err
	})
	if _, err := c.Command(ctx, other.ID, &host.Command{Type: host.CommandClose}); err != nil {
		t.Fatal(err)
	}
	if err := wait(); err != nil {
		t.Fatalf("the resume once a slot freed: %v", err)
	}
	send(t, c, info.ID, "figs")
	f.wait(t, "a turn after the resume", result("echo: figs"))
}

// TestStartReplyLost: a start reply lost on its way (the NATS server
// stalled under load, a reconnect) does not leave the caller waiting out
// its deadline to be told that no agent had room while the session runs:
// the client finds the session in the registry, and it takes prompts.
func TestStartReplyLost(t *testing.T) {
	ctx := testCtx(t)
	ns := newNATS(t, nil)
	a := newAgent(t, ns.URL(), "a1", 1)
	cluster.LoseStartReplies(a, 1)
	c := newClient(t, ns.URL())
	info, err := c.Start(ctx, nil)
	if err != nil || info.Agent != "a1" || info.Ended {
		t.Fatalf("a start whose reply was lost: %+v, %v", info, err)
	}
	f := follow(t, c, info.ID, 0)
	send(t, c, info.ID, "kiwis")
	f.wait(t, "a turn", result("echo: kiwis"))
}
