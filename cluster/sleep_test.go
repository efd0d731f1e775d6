package cluster_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
	"github.com/tetherhq/tether/cluster"
	"github.com/tetherhq/tether/host"
	"github.com/tetherhq/tether/team"
)

// newSleepyAgent is newAgent with AgentOptions.SleepAfter.
func newSleepyAgent(t *testing.T, url, id string, capacity int, sleepAfter time.Duration) *cluster.Agent {
	t.Helper()
	return newAgentWith(t, url, id, capacity, func(o *cluster.AgentOptions) { o.SleepAfter = sleepAfter })
}

// waitAsleep waits until the registry lists the session asleep, with no
// agent.
func waitAsleep(t *testing.T, c *cluster.Client, id string) cluster.SessionInfo {
	t.Helper()
	var s cluster.SessionInfo
	waitFor(t, "the session asleep in the registry", func() bool {
		var err error
		s, err = c.Session(testCtx(t), id)
		return err == nil && s.State == "asleep" && s.Agent == ""
	})
	if s.Ended {
		t.Fatalf("asleep: %+v", s)
	}
	return s
}

// waitDisconnected waits until the registry lists the session
// disconnected (its agent judged gone). ctx carries the identity a team
// needs to read it.
func waitDisconnected(t *testing.T, ctx context.Context, c *cluster.Client, id string) {
	t.Helper()
	waitFor(t, "the session disconnected", func() bool {
		s, err := c.Session(ctx, id)
		return err == nil && s.State == "disconnected"
	})
}

// queuedFirst runs call, a command that must wait for an agent with
// room, in the background with an OnQueued of its own; it fails the test
// unless call reports place 1 before it returns, and returns the wait
// for call's error (once the test has made room).
func queuedFirst(t *testing.T, what string, call func(onQueued func(int)) error) (wait func() error) {
	t.Helper()
	places := make(chan int, 16)
	done := make(chan error, 1)
	go func() { done <- call(func(pos int) { places <- pos }) }()
	select {
	case pos := <-places:
		if pos != 1 {
			t.Errorf("%s: place %d in the queue, want 1", what, pos)
		}
	case err := <-done:
		t.Fatalf("%s returned while no agent had room: %v", what, err)
	case <-testCtx(t).Done():
		t.Fatalf("%s: no place in the queue reported while no agent had room", what)
	}
	return func() error { return <-done }
}

// sleptAfterTurn starts a session on a1, an agent of one slot that puts
// sessions to sleep after 300 ms, runs one turn of prompt (the fake CLI
// echoes it) and waits until the registry lists it asleep.
func sleptAfterTurn(t *testing.T, prompt string) (*natsServer, *cluster.Agent, *cluster.Client, cluster.SessionInfo, *follower) {
	t.Helper()
	ns := newNATS(t, nil)
	a1 := newSleepyAgent(t, ns.URL(), "a1", 1, 300*time.Millisecond)
	c := newClient(t, ns.URL())
	info := mustStart(testCtx(t), t, c, nil)
	f := follow(t, c, info.ID, 0)
	send(t, c, info.ID, prompt)
	f.wait(t, "the turn", result("echo: "+prompt))
	waitAsleep(t, c, info.ID)
	return ns, a1, c, info, f
}

// storedOnce fails unless the session's events in the stream (its
// agents' events and batches, and markers) use every number once.
func storedOnce(t *testing.T, url, id string) {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	st, err := js.Stream(ctx, cluster.StreamEvents)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[uint64]bool{}
	for seq := uint64(1); ; {
		m, err := st.GetMsg(ctx, seq, jetstream.WithGetMsgSubject("tether.v1.*."+id))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		seq = m.Sequence + 1
		last, err := strconv.ParseUint(m.Header.Get("Tether-Seq"), 10, 64)
		if err != nil {
			t.Fatalf("message %d without a number", m.Sequence)
		}
		if m.Header.Get("Tether-Part") != "" && m.Header.Get("Tether-Part")[0] != '1' {
			continue // a later part of one event
		}
		n := uint64(1)
		if b := m.Header.Get("Tether-Batch"); b != "" {
			k, _ := strconv.Atoi(b)
			n = uint64(k)
		}
		for s := last - n + 1; s <= last; s++ {
			if seen[s] {
				t.Fatalf("number %d stored twice", s)
			}
			seen[s] = true
		}
	}
	for s := uint64(1); s <= uint64(len(seen)); s++ {
		if !seen[s] {
			t.Fatalf("number %d missing among %d", s, len(seen))
		}
	}
}

// TestSessionSleepsAndWakesElsewhere: a session idle for SleepAfter is
// put to sleep: its agent closes its CLI and gives its slot back, the
// registry lists it asleep with its cost and owners and no agent, and its
// subscribers see "asleep". A prompt then wakes it on the agent that has
// room (its first agent is full): "waking", the conversation resumed
// from the mirrored transcript, the prompt's turn run, the numbers going
// on with none stored twice.
func TestSessionSleepsAndWakesElsewhere(t *testing.T) {
	ctx := testCtx(t)
	ns := newNATS(t, nil)
	a1 := newSleepyAgent(t, ns.URL(), "a1", 1, 400*time.Millisecond)
	c := newClient(t, ns.URL())
	info := mustStart(ctx, t, c, nil)
	f := follow(t, c, info.ID, 0)
	send(t, c, info.ID, "apples")
	f.wait(t, "the first turn", result("echo: apples"))

	f.wait(t, "the asleep state", state("asleep"))
	s := waitAsleep(t, c, info.ID)
	if len(s.Owners) == 0 || s.Owners[len(s.Owners)-1] != "a1" || s.CLISession == "" || s.LastPrompt != "apples" || s.CostUSD == 0 {
		t.Errorf("the asleep entry: %+v", s)
	}
	waitFor(t, "a1's slot given back", func() bool { return a1.Sessions() == 0 && len(a1.Manager().Sessions()) == 0 })
	// The list is the client's watch of the registry: it follows the
	// entry read above a moment later.
	waitFor(t, "the list to show it asleep", func() bool {
		list, err := c.Sessions(ctx)
		return err == nil && len(list) == 1 && list[0].State == "asleep"
	})
	snap, err := c.Snapshot(ctx, info.ID)
	if err != nil || snap.State.State != "asleep" || snap.Error != "" || len(snap.Transcript) == 0 {
		t.Errorf("the snapshot of a session asleep: %+v, %v", snap, err)
	}
	// Reading its changes or its slash commands (what a UI asks whenever
	// it shows a session, or a prompt begins with "/") does not wake it:
	// they are answered from what its agent recorded as it put it to
	// sleep (no file changed; the fake CLI's one command).
	readAsleep := func() (changes, slash *host.CommandResult, errs [2]error) {
		changes, errs[0] = c.Command(ctx, info.ID, &host.Command{Type: host.CommandChanges})
		slash, errs[1] = c.Command(ctx, info.ID, &host.Command{Type: host.CommandSlashCommands})
		return
	}
	changes, slash, errs := readAsleep()
	if errs[0] != nil || errs[1] != nil || len(changes.Changes) != 0 || len(slash.SlashCommands) != 1 || slash.SlashCommands[0].Name != "cost" {
		t.Errorf("changes and slash commands of a session asleep: %+v, %+v, %v", changes, slash, errs)
	}
	if s, err := c.Session(ctx, info.ID); err != nil || s.State != "asleep" || s.Agent != "" {
		t.Errorf("after its changes and commands were asked for: %+v, %v", s, err)
	}
	// A record of another sleep (its event number not the registry's),
	// or one that does not decode, answers nothing: the session is
	// asleep, as with an agent of an earlier release that wrote none.
	nc, err := nats.Connect(ns.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	for _, rec := range []string{`{"seq":1,"changes_read":true,"slash_commands":[{"name":"old"}]}`, `{"seq":"x"}`, `[`} {
		if _, err := js.Publish(ctx, "tether.v1.tx."+info.ID+"~answers", []byte(rec)); err != nil {
			t.Fatal(err)
		}
		if _, _, errs := readAsleep(); !errors.Is(errs[0], cluster.ErrDisconnected) || !errors.Is(errs[1], cluster.ErrDisconnected) {
			t.Errorf("with the record %s: %v", rec, errs)
		}
	}

	// a1 is full with a session in a turn that never ends (it does not
	// sleep); a2 has room.
	busy := mustStart(ctx, t, c, nil)
	if busy.Agent != "a1" {
		t.Fatalf("the busy session started on %s", busy.Agent)
	}
	fb := follow(t, c, busy.ID, 0)
	send(t, c, busy.ID, "hold")
	fb.wait(t, "the busy turn", state("streaming"))
	newAgent(t, ns.URL(), "a2", 1)

	send(t, c, info.ID, "recall")
	f.wait(t, "the recall after the wake", resultContaining("remember: apples"))
	w, err := c.Session(ctx, info.ID)
	if err != nil || w.Agent != "a2" || w.Takeovers != 0 {
		t.Errorf("woken: %+v, %v", w, err)
	}
	evs := f.list()
	checkSeqs(t, evs, 1)
	var states []string
	for _, ev := range evs {
		if state("asleep")(ev) {
			states = append(states, "asleep")
		}
		if state("waking")(ev) {
			states = append(states, "waking")
		}
	}
	var all []string
	for _, ev := range evs {
		if ev.Kind == host.EventState {
			all = append(all, string(ev.Data))
		}
	}
	t.Logf("states: %s", all)
	if len(states) < 2 || states[0] != "asleep" || states[1] != "waking" {
		t.Errorf("states around the wake: %q", states)
	}
	g := follow(t, c, info.ID, 0)
	g.wait(t, "the recall again", resultContaining("remember: apples"))
	checkSeqs(t, g.list(), 1)
	storedOnce(t, ns.URL(), info.ID)
}

// TestWakeCommand: wake wakes a session asleep, on an agent with room,
// and runs no turn: the person's next prompt finds its CLI started.
func TestWakeCommand(t *testing.T) {
	ctx := testCtx(t)
	ns, _, c, info, f := sleptAfterTurn(t, "plums")
	// stop_task wakes nothing: a session asleep runs no task.
	if _, err := c.Command(ctx, info.ID, &host.Command{Type: host.CommandStopTask, TaskID: "bg1"}); !errors.Is(err, host.ErrNoTask) {
		t.Errorf("stop_task of a session asleep: %v", err)
	}
	if si, err := c.Session(ctx, info.ID); err != nil || si.State != "asleep" {
		t.Errorf("after stop_task: %+v, %v; want it asleep still", si, err)
	}
	if _, err := c.Command(ctx, info.ID, &host.Command{Type: host.CommandWake}); err != nil {
		t.Fatalf("wake: %v", err)
	}
	phase := 0
	f.wait(t, "asleep, waking, then awake", func(ev host.Event) bool {
		switch {
		case phase == 0 && state("asleep")(ev):
			phase = 1
		case phase == 1 && state("waking")(ev):
			phase = 2
		case phase == 2 && (state("ready")(ev) || state("idle")(ev)):
			return true
		}
		return false
	})
	if n := count(f.list(), result("")); n != 1 {
		t.Errorf("%d turns, want the one before the sleep: the wake ran one", n)
	}
	send(t, c, info.ID, "figs")
	f.wait(t, "the turn after the wake", result("echo: figs"))
	storedOnce(t, ns.URL(), info.ID)
}

// TestSleepingSessionNotFailedOver: a session asleep is no agent's: no
// client marks it disconnected however long it sleeps, the agent that
// put it to sleep may go, and a resume wakes it as a command does.
func TestSleepingSessionNotFailedOver(t *testing.T) {
	ctx := testCtx(t)
	ns, a1, c, info, f := sleptAfterTurn(t, "pears")
	a1.Close()
	newAgent(t, ns.URL(), "a2", 1)
	// Ten heartbeats: a dead agent's session would be marked by now.
	deadline := time.Now().Add(10 * heartbeat)
	for time.Now().Before(deadline) {
		s, err := c.Session(ctx, info.ID)
		if err != nil || s.State != "asleep" {
			t.Fatalf("a session asleep turned %+v, %v", s, err)
		}
		time.Sleep(heartbeat / 2)
	}
	for _, ev := range f.list() {
		if state("disconnected")(ev) {
			t.Fatalf("a disconnected event for a session asleep: %+v", ev)
		}
	}
	if _, err := c.Resume(ctx, info.ID); err != nil {
		t.Fatalf("resume of a session asleep: %v", err)
	}
	send(t, c, info.ID, "recall")
	f.wait(t, "the recall", resultContaining("remember: pears"))
	checkSeqs(t, f.list(), 1)
	storedOnce(t, ns.URL(), info.ID)
}

// TestCommandsWhileSleepingWakeOnce: prompts sent at once to a session
// asleep wake it once, and every one of them runs.
func TestCommandsWhileSleepingWakeOnce(t *testing.T) {
	ctx := testCtx(t)
	ns := newNATS(t, nil)
	newSleepyAgent(t, ns.URL(), "a1", 2, 300*time.Millisecond)
	c := newClient(t, ns.URL())
	c2 := newClient(t, ns.URL())
	info := mustStart(ctx, t, c, nil)
	f := follow(t, c, info.ID, 0)
	send(t, c, info.ID, "one")
	f.wait(t, "the turn", result("echo: one"))
	waitAsleep(t, c, info.ID)
	errs := make(chan error, 2)
	for i, cl := range []*cluster.Client{c, c2} {
		go func() {
			_, err := cl.Command(ctx, info.ID, &host.Command{Type: host.CommandSend, Text: "two" + strconv.Itoa(i)})
			errs <- err
		}()
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatalf("a prompt to a session asleep: %v", err)
		}
	}
	f.wait(t, "the first prompt's turn", result("echo: two0"))
	f.wait(t, "the second prompt's turn", result("echo: two1"))
	checkSeqs(t, f.list(), 1)
	storedOnce(t, ns.URL(), info.ID)
}

// TestTeamSessionSleepsAndWakes: with a team, a sleeping session counts
// against its owner's max_sessions (it is open), a person without the
// collaborator's access cannot wake it (forbidden, and it stays asleep),
// and its owner's prompt wakes it, still the owner's.
func TestTeamSessionSleepsAndWakes(t *testing.T) {
	ns := newNATS(t, nil)
	tt := newTestTeam(t, ns.URL())
	a, err := cluster.NewAgent(testCtx(t), &cluster.AgentOptions{
		URL: ns.URL(), ID: "a1", Capacity: 4, Limits: limits, Logger: testLogger(), Team: tt.Authorizer,
		MirrorInterval: 20 * time.Millisecond, SleepAfter: 300 * time.Millisecond,
		Session: &host.Options{CLI: &claude.Options{Cwd: tt.root, Transport: &claudetest.FakeCLI{Script: memoryCLI},
			Env: map[string]string{claude.EnvConfigDir: t.TempDir()}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	c := newClient(t, ns.URL())
	actx := team.NewContext(testCtx(t), alice)
	info := startAs(t, tt, c, alice, team.Grant{Person: bob.Subject, Level: team.ShareViewer})
	f := follow(t, c, info.ID, 0)
	if _, err := c.Command(actx, info.ID, &host.Command{Type: host.CommandSend, Text: "plums"}); err != nil {
		t.Fatal(err)
	}
	f.wait(t, "alice's turn", result("echo: plums"))
	s := waitAsleep(t, c, info.ID)
	if s.Person != alice.Subject {
		t.Errorf("asleep: person %q", s.Person)
	}

	// One asleep, one running: alice is at her max_sessions of 2.
	second := startAs(t, tt, c, alice)
	fs := follow(t, c, second.ID, 0)
	if _, err := c.Command(actx, second.ID, &host.Command{Type: host.CommandSend, Text: "hold"}); err != nil {
		t.Fatal(err)
	}
	fs.wait(t, "the second session busy", state("streaming"))
	if _, err := c.Start(actx, &cluster.StartOptions{Cwd: tt.root}); !isForbidden(err) || !strings.Contains(err.Error(), "you run 2 sessions") {
		t.Fatalf("alice's third session beside one asleep: %v, want forbidden (max_sessions)", err)
	}

	for _, who := range []*team.Identity{bob, carol} {
		_, err := c.Command(team.NewContext(testCtx(t), who), info.ID, &host.Command{Type: host.CommandSend, Text: "wake up"})
		if !isForbidden(err) {
			t.Errorf("%s's prompt to alice's session asleep: %v, want forbidden", who.Name, err)
		}
	}
	if s, err := c.Session(actx, info.ID); err != nil || s.State != "asleep" || s.Agent != "" {
		t.Fatalf("after the refused wakes: %+v, %v", s, err)
	}
	if _, err := c.Command(actx, info.ID, &host.Command{Type: host.CommandSend, Text: "recall"}); err != nil {
		t.Fatalf("alice's prompt to her session asleep: %v", err)
	}
	f.wait(t, "the recall", resultContaining("remember: plums"))
	if s, err := c.Session(actx, info.ID); err != nil || s.Person != alice.Subject || s.Agent != "a1" {
		t.Errorf("woken: %+v, %v", s, err)
	}
	// The audit log says who woke it, once; the refused wakes woke nothing.
	var wakes []string
	for _, ev := range tt.audit(team.ActionStart) {
		if strings.HasSuffix(ev, " wake") {
			wakes = append(wakes, ev)
		}
	}
	if want := []string{alice.Subject + " " + info.ID + " wake"}; !slices.Equal(wakes, want) {
		t.Errorf("wakes recorded %q, want %q", wakes, want)
	}
	checkSeqs(t, f.list(), 1)
}

// TestSessionAsleepBeforeItsFirstPrompt: a session started and never
// prompted sleeps too (nothing to mirror), and its first prompt wakes it
// afresh under the same CLI session id.
func TestSessionAsleepBeforeItsFirstPrompt(t *testing.T) {
	ctx := testCtx(t)
	ns := newNATS(t, nil)
	a1 := newSleepyAgent(t, ns.URL(), "a1", 1, 300*time.Millisecond)
	c := newClient(t, ns.URL())
	info := mustStart(ctx, t, c, nil)
	f := follow(t, c, info.ID, 0)
	s := waitAsleep(t, c, info.ID)
	waitFor(t, "a1's slot given back", func() bool { return a1.Sessions() == 0 })
	send(t, c, info.ID, "first")
	f.wait(t, "the first prompt's turn", result("echo: first"))
	if w, err := c.Session(ctx, info.ID); err != nil || w.CLISession != s.CLISession {
		t.Errorf("woken: %+v, %v; asleep as CLI session %s", w, err, s.CLISession)
	}
	checkSeqs(t, f.list(), 1)
}

// TestCommandWhileGoingToSleep: a command that reaches the agent while
// it puts the session to sleep does not run there; the client sends it
// again, and it runs once, when the session is the agent's again (here:
// the hand-off given up).
func TestCommandWhileGoingToSleep(t *testing.T) {
	ctx := testCtx(t)
	ns := newNATS(t, nil)
	a := newAgent(t, ns.URL(), "a1", 1)
	c := newClient(t, ns.URL())
	info := mustStart(ctx, t, c, nil)
	f := follow(t, c, info.ID, 0)
	release, refused := cluster.HoldSleep(a, info.ID)
	done := make(chan error, 1)
	go func() {
		_, err := c.Command(ctx, info.ID, &host.Command{Type: host.CommandSend, Text: "patience"})
		done <- err
	}()
	// Refused, sent again and refused again meanwhile: not run. A
	// command that returns before says why (on a machine loaded enough
	// that the agent's heartbeat lapses, the client takes it for gone).
	waitFor(t, "the command refused twice", func() bool {
		select {
		case err := <-done:
			t.Fatalf("the command returned before it was refused twice (%d): %v", refused(), err)
		default:
		}
		return refused() >= 2
	})
	for _, ev := range f.list() {
		if result("")(ev) {
			t.Fatal("the command ran while the session was going to sleep")
		}
	}
	release()
	if err := <-done; err != nil {
		t.Fatalf("the command sent again: %v", err)
	}
	f.wait(t, "its turn", result("echo: patience"))
	if n := count(f.list(), result("")); n != 1 {
		t.Errorf("%d turns, want 1", n)
	}
}

// TestChangesCarriedOverTheCluster: what a session changed in files
// stays its changes when it wakes on another agent, when another agent
// takes it over after its agent died and when it is resumed in its place
// after its CLI ended (asleep and ended, it lists them without an agent:
// answers.go): the agent that takes it up
// reads the change record the first mirrored (host.Options.ChangesFrom),
// so the edits made before are listed, against the session's first
// start, beside its own. Under testdata/permissions.conf's users: the
// record is on a subject the agents' rights on the mirror cover; and
// serve's user, which may not watch the registry, still learns that the
// agent that closed left (its resume in place is not refused as if an
// agent of an older release were live).
func TestChangesCarriedOverTheCluster(t *testing.T) {
	ctx := testCtx(t)
	ns := permissionedNATS(t)
	agent := nats.UserInfo("agent", "agent-secret")
	sleepy := func(o *cluster.AgentOptions) { o.SleepAfter = 400 * time.Millisecond }
	a1 := newAgentWith(t, ns.URL(), "a1", 1, sleepy, agent)
	c := newClient(t, ns.URL(), nats.UserInfo("serve", "serve-secret"))
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	notes, todo, list := filepath.Join(dir, "notes.md"), filepath.Join(dir, "todo.md"), filepath.Join(dir, "list.md")
	for _, p := range []string{notes, todo, list} {
		if err := os.WriteFile(p, []byte("before\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	info := mustStart(ctx, t, c, &cluster.StartOptions{Cwd: dir})
	f := follow(t, c, info.ID, 0)
	send(t, c, info.ID, "edit-file "+notes+" first")
	first := f.wait(t, "the first edit", result("written"))
	waitAsleep(t, c, info.ID)
	// Asleep, its changes are what they were when it fell asleep (serve's
	// user reads the record a1 wrote), and reading them wakes nothing.
	if res, err := c.Command(ctx, info.ID, &host.Command{Type: host.CommandChanges}); err != nil ||
		len(res.Changes) != 1 || res.Changes[0].Rel != "notes.md" || !strings.Contains(res.Changes[0].Diff, "-before\n+first\n") || res.Changes[0].New != "first\n" || res.ChangesAsOf.IsZero() {
		t.Fatalf("the changes of the session asleep: %+v, %v", res, err)
	}
	waitAsleep(t, c, info.ID)
	a1.Close()
	a2 := newAgentWith(t, ns.URL(), "a2", 1, nil, agent)

	send(t, c, info.ID, "edit-file "+todo+" second")
	f.wait(t, "the edit after the wake", func(ev host.Event) bool { return result("written")(ev) && ev.Seq > first.Seq })
	if w, err := c.Session(ctx, info.ID); err != nil || w.Agent != "a2" {
		t.Fatalf("woken: %+v, %v", w, err)
	}
	changesAre := func(id, want string) []host.FileChange {
		t.Helper()
		res, err := c.Command(ctx, id, &host.Command{Type: host.CommandChanges})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, ch := range res.Changes {
			got = append(got, ch.Rel+" "+string(ch.Kind))
		}
		if strings.Join(got, ", ") != want {
			t.Fatalf("changes of %s: %v; want %s", id, got, want)
		}
		return res.Changes
	}
	cs := changesAre(info.ID, "notes.md modified, todo.md modified")
	if !strings.Contains(cs[0].Diff, "-before\n+first\n") {
		t.Errorf("notes.md's diff after the wake:\n%s", cs[0].Diff)
	}

	// a2 dies after the turn; a3 takes the session over from the record
	// mirrored at the turn's end.
	serveUser := nats.UserInfo("serve", "serve-secret")
	waitFor(t, "the record mirrored", mirroredOn(t, ns.URL(), "tether.v1.tx."+info.ID+"~changes", "todo.md", serveUser))
	newAgentWith(t, ns.URL(), "a3", 1, nil, agent)
	cluster.Crash(a2)
	waitFor(t, "a2 gone", func() bool {
		as, err := c.Agents(ctx)
		return err == nil && len(as) == 1 && as[0].ID == "a3"
	})
	if _, err := c.Resume(ctx, info.ID); err != nil {
		t.Fatal(err)
	}
	changesAre(info.ID, "notes.md modified, todo.md modified")

	// Its CLI ends; resumed in its place, the new session goes on with
	// the conversation's changes.
	send(t, c, info.ID, "exit")
	waitFor(t, "the session ended", func() bool {
		s, err := c.Session(ctx, info.ID)
		return err == nil && s.Ended
	})
	// Ended, it still lists what it changed (from what a3 recorded as its
	// CLI ended), as a lone serve does for a session still listed.
	changesAre(info.ID, "notes.md modified, todo.md modified")
	// Reverting them needs the files, which no agent holds: refused,
	// saying how to go on.
	if _, err := c.Command(ctx, info.ID, &host.Command{Type: host.CommandRevertChanges}); !errors.Is(err, cluster.ErrNoSession) || !strings.Contains(err.Error(), "resume it to go on") {
		t.Errorf("revert_changes of the ended session: %v", err)
	}
	next, err := c.Resume(ctx, info.ID)
	if err != nil {
		t.Fatal(err)
	}
	g := follow(t, c, next.ID, 0)
	send(t, c, next.ID, "edit-file "+list+" third")
	g.wait(t, "the edit after the resume", result("written"))
	changesAre(next.ID, "notes.md modified, todo.md modified, list.md modified")
}

// TestWakeWaitsForRoom: a prompt to a session asleep while every agent
// is full waits for room, and the caller hears the wake's place in the
// queue (host.Command.OnQueued); once a slot frees, the session wakes
// and the prompt runs, sent once.
func TestWakeWaitsForRoom(t *testing.T) {
	ctx := testCtx(t)
	ns := newNATS(t, nil)
	a1 := newSleepyAgent(t, ns.URL(), "a1", 1, time.Hour)
	c := newClient(t, ns.URL())
	info := mustStart(ctx, t, c, nil)
	f := follow(t, c, info.ID, 0)
	send(t, c, info.ID, "quince")
	f.wait(t, "the turn", result("echo: quince"))
	// What SleepAfter does after its quiet time, without waiting it.
	if err := a1.Manager().Sessions()[0].Sleep(ctx); err != nil {
		t.Fatal(err)
	}
	waitAsleep(t, c, info.ID)
	other, err := c.Start(ctx, nil) // a1's one slot
	if err != nil {
		t.Fatal(err)
	}
	wait := queuedFirst(t, "the prompt", func(onQueued func(int)) error {
		_, err := c.Command(ctx, info.ID, &host.Command{Type: host.CommandSend, Text: "medlar", OnQueued: onQueued})
		return err
	})
	if s, err := c.Session(ctx, info.ID); err != nil || s.State != "asleep" {
		t.Fatalf("while it waits for room: %+v, %v", s, err)
	}
	if _, err := c.Command(ctx, other.ID, &host.Command{Type: host.CommandClose}); err != nil {
		t.Fatal(err)
	}
	if err := wait(); err != nil {
		t.Fatalf("the prompt once a slot freed: %v", err)
	}
	f.wait(t, "the prompt's turn, after the wake", result("echo: medlar"))
	if n := count(f.list(), result("echo: medlar")); n != 1 {
		t.Errorf("the prompt ran %d times", n)
	}
	storedOnce(t, ns.URL(), info.ID)
}

// TestAsleepCommandNewFields: a command with a field that revision 1
// lacks (revert_changes' paths) reaches a session asleep. Its agent is
// gone, and the live agent that wakes it reads this release's commands,
// so nothing refuses it as unsupported.
func TestAsleepCommandNewFields(t *testing.T) {
	ctx := testCtx(t)
	_, _, c, info, _ := sleptAfterTurn(t, "pears")
	_, err := c.Command(ctx, info.ID, &host.Command{Type: host.CommandRevertChanges, Paths: []string{"nothing.txt"}})
	if ue := (*cluster.UnsupportedError)(nil); errors.As(err, &ue) {
		t.Fatalf("revert_changes with paths, asleep: %v", err)
	}
}

// TestAsleepCommandNewFieldsNoAgent: the same command while no agent is
// live cannot be checked against the agent that will read it, so it
// wakes the session first, as any command does (waiting in the queue for
// an agent), and reaches the agent that took it; it is not refused as if
// an older agent were about.
func TestAsleepCommandNewFieldsNoAgent(t *testing.T) {
	ctx := testCtx(t)
	ns, a1, c, info, f := sleptAfterTurn(t, "pears")
	a1.Close()
	waitFor(t, "no live agent", func() bool {
		as, err := c.Agents(ctx)
		return err == nil && len(as) == 0
	})
	// One too large is refused before anything is queued (with no agent,
	// a wake would wait for one).
	huge := strings.Repeat("x", 2<<20)
	if _, err := c.Command(ctx, info.ID, &host.Command{Type: host.CommandRevertChanges, Paths: []string{huge}}); !errors.Is(err, cluster.ErrTooLarge) {
		t.Fatalf("revert_changes with 2 MiB of paths, asleep, no agent: %v, want ErrTooLarge", err)
	}
	// A stop_task (its task_id is no revision 1 field) wakes nothing: a
	// session asleep runs no task.
	if _, err := c.Command(ctx, info.ID, &host.Command{Type: host.CommandStopTask, TaskID: "bg1"}); !errors.Is(err, host.ErrNoTask) {
		t.Fatalf("stop_task, asleep, no agent: %v, want no_task", err)
	}
	queued := make(chan int, 16)
	done := make(chan error, 1)
	go func() {
		_, err := c.Command(ctx, info.ID, &host.Command{Type: host.CommandRevertChanges, Paths: []string{"nothing.txt"},
			OnQueued: func(n int) { queued <- n }})
		done <- err
	}()
	select {
	case <-queued: // the wake waits for an agent
	case err := <-done:
		t.Fatalf("revert_changes with paths, asleep, no agent: %v (want it to wait for one)", err)
	}
	newAgent(t, ns.URL(), "a2", 1)
	if err := <-done; err != nil {
		if ue := (*cluster.UnsupportedError)(nil); errors.As(err, &ue) {
			t.Fatalf("revert_changes with paths, woken on a2: %v", err)
		}
		t.Logf("revert_changes of a file never changed: %v", err)
	}
	if s, err := c.Session(ctx, info.ID); err != nil || s.Agent != "a2" {
		t.Fatalf("after the command: %+v, %v (want it awake on a2)", s, err)
	}
	send(t, c, info.ID, "recall")
	f.wait(t, "the recall on a2", resultContaining("remember: pears"))
	storedOnce(t, ns.URL(), info.ID)
}
