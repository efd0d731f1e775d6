package cluster_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tetherhq/tether/cluster"
	"github.com/tetherhq/tether/host"
)

// Drain lets the running turn finish, refuses new prompts meanwhile, and
// hands the session to the other agent: same id, the subscriber's
// numbers going on, the conversation remembered.
func TestDrainHandsSessionsOver(t *testing.T) {
	ctx := testCtx(t)
	ns := newNATS(t, nil)
	a1 := newAgent(t, ns.URL(), "a1", 2)
	c := newClient(t, ns.URL())
	info := mustStart(ctx, t, c, nil)
	newAgent(t, ns.URL(), "a2", 2)
	f := follow(t, c, info.ID, 0)
	send(t, c, info.ID, "remember apples")
	f.wait(t, "the first turn", result("echo: remember apples"))
	send(t, c, info.ID, "stream 60")
	from := len(f.list())
	waitFor(t, "the reply under way", func() bool { return f.deltas(from) >= 5 })
	drained := make(chan error, 1)
	go func() { drained <- a1.Drain(ctx) }()
	waitFor(t, "a1 draining", a1.Draining)
	_, err := c.Command(ctx, info.ID, &host.Command{Type: host.CommandSend, Text: "too soon"})
	if !errors.Is(err, host.ErrBusy) {
		// The handover may already be done: then the prompt went to a2.
		if s, _ := c.Session(ctx, info.ID); err != nil || s.Agent != "a2" {
			t.Fatalf("a prompt while draining: %v, want busy", err)
		}
	}
	if err := <-drained; err != nil {
		t.Fatal(err)
	}
	f.wait(t, "the whole reply", result(streamed(60)))
	waitFor(t, "the session on a2", func() bool {
		s, err := c.Session(ctx, info.ID)
		return err == nil && s.Agent == "a2" && !s.Moving
	})
	waitFor(t, "a prompt taken on a2", func() bool {
		_, err := c.Command(ctx, info.ID, &host.Command{Type: host.CommandSend, Text: "recall"})
		return err == nil
	})
	f.wait(t, "the conversation remembered", resultContaining("remember apples"))
	checkSeqs(t, f.list(), 1)
	if a1.Sessions() != 0 {
		t.Fatalf("a1 still runs %d sessions", a1.Sessions())
	}
	as, err := c.Agents(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range as {
		if a.ID == "a1" && a.Sessions < a.Capacity {
			t.Fatalf("a draining agent shows room: %+v", a)
		}
	}
}

// Asked over the bus (tether agent --drain ID), an agent stops taking
// sessions and says so.
func TestDrainRequestedOverTheBus(t *testing.T) {
	ctx := testCtx(t)
	ns := newNATS(t, nil)
	a1 := newAgent(t, ns.URL(), "a1", 2)
	c := newClient(t, ns.URL())
	if err := c.DrainAgent(ctx, "a1"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-a1.DrainRequested():
	case <-ctx.Done():
		t.Fatal("the drain request did not arrive")
	}
	if err := a1.Ready(ctx); !errors.Is(err, cluster.ErrDraining) {
		t.Fatal("a draining agent says it is ready")
	}
	if err := c.DrainAgent(ctx, "nobody"); !errors.Is(err, cluster.ErrNoSession) {
		t.Fatalf("drain of no agent: %v", err)
	}
}

// A rolling restart: every agent process, one after the other, is sent
// SIGTERM while 10 sessions hold live turns, and a new one takes its
// place. No turn and no event is lost, no number is used twice, every
// session goes on without anyone resuming it, and each drained agent
// exits 0.
func TestRollingRestartLosesNothing(t *testing.T) {
	ns := spawnNATS(t)
	raw := newRawBus(t, ns.URL())
	spawnAt := func(id string) *child {
		return spawn(t, id, "agent", faultURLEnv+"="+ns.URL(), faultIDEnv+"="+id, faultDirEnv+"="+t.TempDir(),
			faultCapEnv+"=20", faultDrainEnv+"=1")
	}
	agents := []*child{spawnAt("r1"), spawnAt("r2")}
	c := newClient(t, ns.URL())
	ctx := testCtx(t)
	const n, chunks = 10, 80
	type sess struct {
		id string
		f  *follower
	}
	var ss []sess
	for i := range n {
		info := mustStart(ctx, t, c, nil)
		f := follow(t, c, info.ID, 0)
		send(t, c, info.ID, "note "+strconv.Itoa(i))
		f.wait(t, "the first turn", result("echo: note "+strconv.Itoa(i)))
		ss = append(ss, sess{info.ID, f})
	}
	turn := func(what string) []int {
		starts := make([]int, n)
		for i, s := range ss {
			starts[i] = len(s.f.list())
			send(t, c, s.id, fmt.Sprintf("stream %d", chunks))
		}
		for i, s := range ss {
			waitFor(t, what+": replies under way", func() bool { return s.f.deltas(starts[i]) >= 3 })
		}
		return starts
	}
	checkTurn := func(what string, starts []int) {
		for i, s := range ss {
			s.f.wait(t, what+": the whole reply", result(streamed(chunks)))
			if got := textAfter(s.f.list(), starts[i]); got != streamed(chunks) {
				t.Fatalf("%s: session %d streamed %d chars, want %d", what, i, len(got), len(streamed(chunks)))
			}
		}
	}
	for round, next := range []string{"r3", "r4"} {
		what := fmt.Sprintf("round %d", round+1)
		starts := turn(what)
		old := agents[0]
		agents = append(agents[1:], spawnAt(next))
		old.stop() // SIGTERM: drain
		if code := old.cmd.ProcessState.ExitCode(); code != 0 {
			t.Fatalf("%s: the drained agent exited %d: %s", what, code, old.out.String())
		}
		checkTurn(what, starts)
		for i, s := range ss {
			waitFor(t, what+": every session served again", func() bool {
				_, err := c.Command(ctx, s.id, &host.Command{Type: host.CommandSend, Text: "after " + strconv.Itoa(i)})
				return err == nil
			})
			s.f.wait(t, what+": a turn after the restart", result("echo: after "+strconv.Itoa(i)))
		}
	}
	for _, s := range ss {
		checkSeqs(t, s.f.list(), 1)
		checkStored(t, raw, s.id)
		rec, err := c.Session(ctx, s.id)
		if err != nil || rec.Agent == "r1" || rec.Agent == "r2" || rec.Ended {
			t.Fatalf("session %s after the restarts: %+v, %v", s.id, rec, err)
		}
		s.f.stop()
	}
	for _, a := range agents {
		a.stop()
	}
	ns.p.stop()
	checkNoProcessLeft(t)
}

// An agent drained with no other agent left: the session's events say it
// has no agent (a disconnected state naming the drained agent), a prompt
// is refused with "waiting for an agent" (tether serve's
// waiting_for_agent), and the next agent to start takes the session over
// from the queue, its numbers going on after the marker.
func TestDrainWithNoAgentLeftSaysSo(t *testing.T) {
	ctx := testCtx(t)
	ns := newNATS(t, nil)
	a1 := newAgent(t, ns.URL(), "a1", 2)
	c := newClient(t, ns.URL())
	raw := newRawBus(t, ns.URL())
	info := mustStart(ctx, t, c, nil)
	f := follow(t, c, info.ID, 0)
	send(t, c, info.ID, "remember pears")
	f.wait(t, "the first turn", result("echo: remember pears"))
	if err := a1.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	a1.Close()
	ev := f.wait(t, "the session marked as having no agent", state("disconnected"))
	var st host.StateInfo
	json.Unmarshal(ev.Data, &st)
	if !strings.Contains(st.Error, "waiting for an agent") || !strings.Contains(st.Error, "a1") {
		t.Fatalf("the disconnected state says %q", st.Error)
	}
	_, err := c.Command(ctx, info.ID, &host.Command{Type: host.CommandSend, Text: "anyone?"})
	if !errors.Is(err, cluster.ErrDisconnected) || !strings.Contains(err.Error(), "agent a1") {
		t.Fatalf("a prompt to a session with no agent: %v", err)
	}
	_, err = cluster.NewBackend(c, nil).Do(ctx, info.ID, &host.Command{Type: host.CommandSend, Text: "anyone?"})
	if got := host.ErrorCode(err); got != host.CodeWaitingForAgent || !errors.Is(err, cluster.ErrDisconnected) {
		t.Fatalf("through the backend: %v (code %q), want %s", err, got, host.CodeWaitingForAgent)
	}
	newAgent(t, ns.URL(), "a2", 2)
	waitFor(t, "a prompt taken on a2", func() bool {
		_, err := c.Command(ctx, info.ID, &host.Command{Type: host.CommandSend, Text: "recall"})
		return err == nil
	})
	f.wait(t, "the conversation remembered", resultContaining("remember pears"))
	checkSeqs(t, f.list(), 1)
	checkStored(t, raw, info.ID)
}

// A command to a session that a live agent has claimed but not attached
// yet (a takeover, its CLI starting) waits for it, then says the session
// is starting (busy), never that its agent is gone.
func TestCommandDuringTakeoverSaysStarting(t *testing.T) {
	ctx := testCtx(t)
	ns := newNATS(t, nil)
	newAgent(t, ns.URL(), "a1", 2)
	c := newClient(t, ns.URL())
	raw := newRawBus(t, ns.URL())
	// What a claim leaves in the registry while the CLI starts.
	now := time.Now()
	raw.putSession(t, cluster.SessionInfo{ID: "claimed1", Agent: "a1", State: "starting", Takeovers: 1, Created: now, Updated: now})
	cluster.SetTakeoverWait(t, 300*time.Millisecond)
	_, err := c.Command(ctx, "claimed1", &host.Command{Type: host.CommandSend, Text: "hi"})
	if !errors.Is(err, host.ErrBusy) || !strings.Contains(err.Error(), "starting on agent a1") || errors.Is(err, cluster.ErrDisconnected) {
		t.Fatalf("a command during a takeover: %v", err)
	}
}
