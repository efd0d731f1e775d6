package host_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
	"github.com/tetherhq/tether/host"
)

// sleepyCLI is a fake CLI that echoes, counts the processes alive, and
// lets a test hold a launch in its start-up (gate) or fail it (fail).
type sleepyCLI struct {
	fake  *claudetest.FakeCLI
	alive atomic.Int32
	mu    sync.Mutex
	gate  chan struct{} // when set, launches wait for it before initializing
	fail  error         // when set, launches fail with it
}

func newSleepyCLI() *sleepyCLI {
	sc := &sleepyCLI{}
	sc.fake = &claudetest.FakeCLI{Script: func(ctx context.Context, c *claudetest.CLI) error {
		sc.alive.Add(1)
		defer sc.alive.Add(-1)
		sc.mu.Lock()
		gate, fail := sc.gate, sc.fail
		sc.mu.Unlock()
		if fail != nil {
			return fail
		}
		if gate != nil {
			select {
			case <-gate:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return claudetest.Echo(ctx, c)
	}}
	return sc
}

// startSleepy starts a host session on sc.
func startSleepy(t *testing.T, sc *sleepyCLI) (*host.Session, *stateLog) {
	t.Helper()
	ctx := testCtx(t)
	s, err := host.Start(ctx, &host.Options{CLI: &claude.Options{Transport: sc.fake}})
	if err != nil {
		t.Fatal(err)
	}
	l := watchStates(ctx, s)
	t.Cleanup(func() { s.Close(); <-l.done })
	return s, l
}

func (sc *sleepyCLI) set(gate chan struct{}, fail error) {
	sc.mu.Lock()
	sc.gate, sc.fail = gate, fail
	sc.mu.Unlock()
}

func send(t *testing.T, ctx context.Context, s *host.Session, text string) string {
	t.Helper()
	res, err := s.Do(ctx, &host.Command{Type: host.CommandSend, Text: text})
	if err != nil {
		t.Fatalf("send %q: %v", text, err)
	}
	for _, d := range s.Deliveries() {
		if d.UUID == res.UUID {
			r, err := d.Wait(ctx)
			if err != nil {
				t.Fatalf("send %q: %v", text, err)
			}
			return r.Result
		}
	}
	// Answered already: read the answer from the journal.
	snap := s.Snapshot()
	return string(snap.Transcript[len(snap.Transcript)-1])
}

// TestSleepAndWake: a session put to sleep keeps its id, journal and
// cost with no CLI left; a command wakes it under the same id, resuming
// the conversation, and the journal's numbers go on.
func TestSleepAndWake(t *testing.T) {
	ctx := testCtx(t)
	sc := newSleepyCLI()
	s, l := startSleepy(t, sc)
	if got := send(t, ctx, s, "one"); !strings.Contains(got, "echo: one") {
		t.Fatalf("first turn: %q", got)
	}
	sid, id := s.SessionID(), s.ID()
	costBefore := s.Snapshot().Cost
	if err := s.Sleep(ctx); err != nil {
		t.Fatalf("Sleep: %v", err)
	}
	if st := s.State().State; st != host.StateAsleep || !s.Asleep() {
		t.Fatalf("after Sleep: %v", s.State())
	}
	if n := sc.alive.Load(); n != 0 {
		t.Fatalf("%d fake CLIs alive while asleep", n)
	}
	if s.Claude() != nil {
		t.Error("Claude() of a sleeping session is not nil")
	}
	if err := s.Sleep(ctx); err != nil {
		t.Errorf("Sleep again: %v", err)
	}
	seqAsleep := s.Snapshot().Seq
	asleep := s.State().Seq

	// The prompt wakes it.
	if got := send(t, ctx, s, "two"); !strings.Contains(got, "echo: two") {
		t.Fatalf("turn after the wake: %q", got)
	}
	l.waitFor(t, ctx, "idle after the wake", func(v host.Liveness) bool { return v.State == host.StateIdle && v.Seq > asleep })
	if s.ID() != id || s.SessionID() != sid {
		t.Errorf("ids changed: %s/%s → %s/%s", id, sid, s.ID(), s.SessionID())
	}
	ls := sc.fake.Launches()
	if len(ls) != 2 || !contains(ls[1].Args, "--resume="+sid) {
		t.Fatalf("wake launched %v", ls[len(ls)-1].Args)
	}
	snap := s.Snapshot()
	if snap.Seq <= seqAsleep {
		t.Errorf("seq %d after the wake, %d asleep", snap.Seq, seqAsleep)
	}
	if snap.Cost.USD < costBefore.USD {
		t.Errorf("cost went down across the wake: %v → %v", costBefore.USD, snap.Cost.USD)
	}
	wantSeqPrefix(t, l, "ready", "requesting", "streaming", "idle", "asleep", "waking", "ready", "requesting", "streaming", "idle")
}

// TestWakeCommand: wake starts a sleeping session's CLI, resumed, and
// runs no turn; on a session awake it does nothing.
func TestWakeCommand(t *testing.T) {
	ctx := testCtx(t)
	sc := newSleepyCLI()
	s, l := startSleepy(t, sc)
	send(t, ctx, s, "one")
	sid := s.SessionID()
	if err := s.Sleep(ctx); err != nil {
		t.Fatal(err)
	}
	wake := &host.Command{Type: host.CommandWake}
	if wake.Lane() != host.LaneOrdered {
		t.Error("wake is not in the ordered lane: a prompt sent after it would not wait for it")
	}
	for i := range 2 { // asleep, then awake
		if res, err := s.Do(ctx, wake); err != nil || res == nil {
			t.Fatalf("wake %d: %+v, %v", i+1, res, err)
		}
		if s.Asleep() || s.Claude() == nil {
			t.Fatalf("after wake %d: asleep %v, state %v", i+1, s.Asleep(), s.State())
		}
	}
	ls := sc.fake.Launches()
	if len(ls) != 2 || !contains(ls[1].Args, "--resume="+sid) {
		t.Fatalf("launches: %d, the last %v", len(ls), ls[len(ls)-1].Args)
	}
	l.waitFor(t, ctx, "ready after the wake", func(v host.Liveness) bool { return v.State == host.StateReady || v.State == host.StateIdle })
	woke := s.State().Seq
	// No turn: the next state after the wake is the prompt's.
	if got := send(t, ctx, s, "two"); !strings.Contains(got, "echo: two") {
		t.Fatalf("the turn after the wake: %q", got)
	}
	l.waitFor(t, ctx, "idle after the prompt", func(v host.Liveness) bool { return v.State == host.StateIdle && v.Seq > woke })
	wantSeqPrefix(t, l, "ready", "requesting", "streaming", "idle", "asleep", "waking", "ready", "requesting", "streaming", "idle")
}

// wantSeqPrefix fails unless the states so far start with want.
func wantSeqPrefix(t *testing.T, l *stateLog, want ...string) {
	t.Helper()
	got := l.strings()
	if len(got) < len(want) || strings.Join(got[:len(want)], "|") != strings.Join(want, "|") {
		t.Errorf("states\n got %q\nwant %q", got, want)
	}
}

// TestSleepJournalGapless: the journal read across a sleep and a wake is
// one numbering, from 1, with the asleep and waking states in it.
func TestSleepJournalGapless(t *testing.T) {
	ctx := testCtx(t)
	sc := newSleepyCLI()
	s, _ := startSleepy(t, sc)
	send(t, ctx, s, "one")
	if err := s.Sleep(ctx); err != nil {
		t.Fatal(err)
	}
	send(t, ctx, s, "two")
	want := s.Snapshot().Seq
	var evs []host.Event
	for e, err := range s.Events(ctx, 0) {
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, e)
		if e.Seq == want {
			break
		}
	}
	gapless(t, evs, 1)
	if err := inOrder(summary(evs), "state asleep", "state waking", "delivery queued", "state idle"); err != nil {
		t.Error(err)
	}
}

// TestSleepRefusedWhileBusy: a session with a turn running, a pending
// approval or a background task stays awake.
func TestSleepRefusedWhileBusy(t *testing.T) {
	ctx := testCtx(t)
	answer := make(chan []byte, 1)
	release := make(chan struct{})
	s, l := start(t, nil, func(ctx context.Context, c *claudetest.CLI) error {
		if _, err := c.HandleInitialize(ctx); err != nil {
			return err
		}
		if _, err := c.ReadUser(ctx); err != nil {
			return err
		}
		c.Write(c.SystemInit(), c.AssistantToolUse("toolu_1", "Bash", map[string]any{"command": "ls"}))
		resp, err := c.CanUseTool(ctx, "toolu_1", "Bash", map[string]any{"command": "ls"})
		answer <- resp
		if err != nil {
			return err
		}
		// A background task that outlives the turn.
		c.Write(claudetest.Msg{"type": "system", "subtype": "task_started", "task_id": "bg1", "description": "watch", "session_id": c.SessionID(), "uuid": "t1"})
		c.Write(c.ToolResult("toolu_1", "ok", false), c.AssistantText("done"), c.ResultSuccess("done"))
		<-release
		c.Write(claudetest.Msg{"type": "system", "subtype": "task_notification", "task_id": "bg1", "status": "completed", "output_file": "", "summary": "", "session_id": c.SessionID(), "uuid": "t2"})
		_, err = c.ReadUser(ctx)
		return ignoreEOF(err)
	})
	if _, err := s.Send(ctx, "list"); err != nil {
		t.Fatal(err)
	}
	a := l.waitState(t, ctx, host.StateAwaitingApproval)
	if err := s.Sleep(ctx); !errors.Is(err, host.ErrNotIdle) {
		t.Errorf("Sleep with an approval pending: %v", err)
	}
	if err := a.Approval.Allow(); err != nil {
		t.Fatal(err)
	}
	<-answer
	l.waitState(t, ctx, host.StateIdle)
	if err := s.Sleep(ctx); !errors.Is(err, host.ErrNotIdle) || !strings.Contains(err.Error(), "background task") {
		t.Errorf("Sleep with a background task: %v", err)
	}
	close(release)
	// The task's end is journaled; then the session may sleep.
	waitJournaled(t, ctx, s, "task_notification")
	if err := s.Sleep(ctx); err != nil {
		t.Errorf("Sleep once idle: %v", err)
	}
	if s.State().State != host.StateAsleep {
		t.Errorf("state %v", s.State())
	}
}

// TestSleepFollowsTaskSet: once the CLI sends its set of background
// tasks whole (background_tasks_changed), the set decides: a task that
// leaves it with no bookend (its process ended) keeps the session awake
// no longer, and a bookend that comes after the set (a late
// task_started) adds nothing.
func TestSleepFollowsTaskSet(t *testing.T) {
	ctx := testCtx(t)
	release := make(chan struct{})
	s, l := start(t, nil, func(ctx context.Context, c *claudetest.CLI) error {
		if _, err := c.HandleInitialize(ctx); err != nil {
			return err
		}
		if _, err := c.ReadUser(ctx); err != nil {
			return err
		}
		set := func(ids ...string) claudetest.Msg {
			tasks := []map[string]any{}
			for _, id := range ids {
				tasks = append(tasks, map[string]any{"task_id": id, "task_type": "local_bash", "description": "watch " + id})
			}
			return claudetest.Msg{"type": "system", "subtype": "background_tasks_changed", "tasks": tasks, "session_id": c.SessionID(), "uuid": "set-" + strings.Join(ids, "-")}
		}
		c.Write(c.SystemInit(), set("bg1"),
			claudetest.Msg{"type": "system", "subtype": "task_started", "task_id": "bg1", "description": "watch", "session_id": c.SessionID(), "uuid": "t1"},
			c.AssistantText("started"), c.ResultSuccess("started"))
		<-release
		c.Write(set(), claudetest.Msg{"type": "system", "subtype": "task_started", "task_id": "bg2", "description": "late", "session_id": c.SessionID(), "uuid": "t-late"})
		_, err := c.ReadUser(ctx)
		return ignoreEOF(err)
	})
	if _, err := s.Send(ctx, "watch"); err != nil {
		t.Fatal(err)
	}
	l.waitState(t, ctx, host.StateIdle)
	if err := s.Sleep(ctx); !errors.Is(err, host.ErrNotIdle) || !strings.Contains(err.Error(), "background task") {
		t.Errorf("Sleep with a background task: %v", err)
	}
	close(release)
	waitJournaled(t, ctx, s, `"t-late"`)
	if err := s.Sleep(ctx); err != nil {
		t.Errorf("Sleep once the set is empty: %v", err)
	}
}

// waitJournaled waits until the session's journal holds a CLI message
// that contains text.
func waitJournaled(t *testing.T, ctx context.Context, s *host.Session, text string) {
	t.Helper()
	for e, err := range s.Events(ctx, 0) {
		if err != nil {
			t.Fatal(err)
		}
		if e.Kind == host.EventMessage && strings.Contains(string(e.Data), text) {
			return
		}
	}
	t.Fatalf("the journal ended without a message containing %s", text)
}

// TestWakeQueuesCommandsAndReportsFailure: commands that come while the
// session wakes wait for it and all run; a wake that fails fails its
// command with a *WakeError, leaves the session asleep (StateError), and
// the next command wakes it.
func TestWakeQueuesCommandsAndReportsFailure(t *testing.T) {
	ctx := testCtx(t)
	sc := newSleepyCLI()
	s, l := startSleepy(t, sc)
	send(t, ctx, s, "one")

	// A failed wake.
	if err := s.Sleep(ctx); err != nil {
		t.Fatal(err)
	}
	sc.set(nil, errors.New("crash: no memory"))
	_, err := s.Do(ctx, &host.Command{Type: host.CommandSend, Text: "lost?"})
	var we *host.WakeError
	if !errors.As(err, &we) {
		t.Fatalf("send during a failed wake: %v", err)
	}
	if st := s.State(); st.State != host.StateError || !errors.As(st.Err, &we) || !s.Asleep() {
		t.Fatalf("after a failed wake: %v (%v)", st, st.Err)
	}
	if n := sc.alive.Load(); n != 0 {
		t.Fatalf("%d fake CLIs alive after a failed wake", n)
	}

	// Commands queue behind a slow wake.
	gate := make(chan struct{})
	sc.set(gate, nil)
	var wg sync.WaitGroup
	results := make(chan string, 3)
	for _, text := range []string{"a", "b", "c"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := s.Do(ctx, &host.Command{Type: host.CommandSend, Text: text})
			if err != nil {
				t.Errorf("send %q: %v", text, err)
				return
			}
			results <- res.UUID
		}()
	}
	l.waitState(t, ctx, host.StateWaking)
	close(gate)
	wg.Wait()
	close(results)
	n := 0
	for range results {
		n++
	}
	if n != 3 {
		t.Fatalf("%d of 3 queued prompts sent", n)
	}
	for _, d := range s.Deliveries() {
		if _, err := d.Wait(ctx); err != nil {
			t.Errorf("queued prompt %s: %v", d.UUID, err)
		}
	}
	if got := len(sc.fake.Launches()); got != 3 {
		t.Errorf("%d launches, want 3 (start, failed wake, wake)", got)
	}
}

// TestCloseAsleep: closing a sleeping session ends it without a wake.
func TestCloseAsleep(t *testing.T) {
	ctx := testCtx(t)
	sc := newSleepyCLI()
	s, _ := startSleepy(t, sc)
	if err := s.Sleep(ctx); err != nil { // before any turn: woken under the same id
		t.Fatal(err)
	}
	if _, err := s.Do(ctx, &host.Command{Type: host.CommandClose}); err != nil {
		t.Fatal(err)
	}
	<-s.Done()
	if len(sc.fake.Launches()) != 1 {
		t.Errorf("close woke the session: %d launches", len(sc.fake.Launches()))
	}
	if _, err := s.Do(ctx, &host.Command{Type: host.CommandSend, Text: "x"}); !errors.Is(err, host.ErrSessionClosed) {
		t.Errorf("send after close: %v", err)
	}
}

// TestManagerSleepsIdleSessions: with SleepAfter, a session idle that
// long sleeps and a busy one does not; a prompt wakes the sleeper.
func TestManagerSleepsIdleSessions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		sc := newSleepyCLI()
		m := host.NewManager(&host.ManagerOptions{
			Session:    &host.Options{CLI: &claude.Options{Transport: sc.fake}},
			SleepAfter: time.Minute,
		})
		defer m.Close()
		busy, err := m.Start(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		idle, err := m.Start(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(40 * time.Second)
		send(t, ctx, busy, "keep me")
		time.Sleep(30 * time.Second) // idle: 70 s without a word; busy: 30 s
		synctest.Wait()
		if st := idle.State().State; st != host.StateAsleep || m.Get(idle.ID()) == nil {
			t.Errorf("idle session: %v", idle.State())
		}
		if st := busy.State().State; st != host.StateIdle {
			t.Errorf("busy session: %v", busy.State())
		}
		if n := sc.alive.Load(); n != 1 {
			t.Errorf("%d CLIs alive, want 1", n)
		}
		if got := send(t, ctx, idle, "wake up"); !strings.Contains(got, "echo: wake up") {
			t.Errorf("woken: %q", got)
		}
		if len(m.Sessions()) != 2 {
			t.Errorf("sessions: %d", len(m.Sessions()))
		}
	})
}

// TestSleepCompactsJournal: a sleeping session keeps its numbering and
// transcript but only its newest events; a subscriber that needs older
// ones resyncs from a snapshot.
func TestSleepCompactsJournal(t *testing.T) {
	ctx := testCtx(t)
	sc := newSleepyCLI()
	s, _ := startSleepy(t, sc)
	for range 20 {
		send(t, ctx, s, "turn")
	}
	before := s.Snapshot()
	if err := s.Sleep(ctx); err != nil {
		t.Fatal(err)
	}
	after := s.Snapshot()
	if after.Seq <= before.Seq || len(after.Transcript) != len(before.Transcript) {
		t.Errorf("asleep: seq %d → %d, transcript %d → %d lines", before.Seq, after.Seq, len(before.Transcript), len(after.Transcript))
	}
	for _, err := range s.Events(ctx, 1) {
		if !errors.Is(err, host.ErrResync) {
			t.Errorf("reading from 1 after the sleep: %v, want a resync", err)
		}
		break
	}
	var n int
	for e, err := range s.Events(ctx, after.Seq-10) {
		if err != nil {
			t.Fatal(err)
		}
		if n++; e.Seq == after.Seq {
			break
		}
	}
	if n != 10 {
		t.Errorf("read %d of the newest 10 events", n)
	}
}

// A session put to sleep has no CLI; the next prompt wakes it.
func ExampleSession_Sleep() {
	ctx := context.Background()
	s, err := host.Start(ctx, &host.Options{CLI: &claude.Options{Transport: &claudetest.FakeCLI{Script: claudetest.Echo}}})
	if err != nil {
		panic(err)
	}
	defer s.Close()
	d, _ := s.Send(ctx, "hello")
	d.Wait(ctx)
	if err := s.Sleep(ctx); err != nil {
		panic(err)
	}
	fmt.Println(s.State().State, s.Claude() == nil)
	d, err = s.Send(ctx, "again") // wakes it, resuming the conversation
	if err != nil {
		panic(err)
	}
	r, _ := d.Wait(ctx)
	fmt.Println(r.Result)
	// Output:
	// asleep true
	// echo: again
}

// TestWakeKeepsAPromptWhoseSenderLeft: a prompt that wakes the session
// is sent once the CLI is up even if its sender gave up meanwhile.
func TestWakeKeepsAPromptWhoseSenderLeft(t *testing.T) {
	ctx := testCtx(t)
	sc := newSleepyCLI()
	s, l := startSleepy(t, sc)
	if err := s.Sleep(ctx); err != nil {
		t.Fatal(err)
	}
	gate := make(chan struct{})
	sc.set(gate, nil)
	sctx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() {
		_, err := s.Do(sctx, &host.Command{Type: host.CommandSend, Text: "orphan"})
		errc <- err
	}()
	l.waitState(t, ctx, host.StateWaking)
	cancel() // the sender leaves while the session wakes
	close(gate)
	if err := <-errc; err != nil {
		t.Fatalf("send: %v", err)
	}
	l.waitState(t, ctx, host.StateIdle)
	snap := s.Snapshot()
	if !strings.Contains(string(snap.Transcript[len(snap.Transcript)-1]), "echo: orphan") {
		t.Errorf("the prompt was not answered: %s", snap.Transcript[len(snap.Transcript)-1])
	}
}
