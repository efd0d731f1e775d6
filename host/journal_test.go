package host_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
	"github.com/tetherhq/tether/host"
)

// collect reads events until the iterator ends, returning them and the
// final error (nil when the session ended).
func collect(seq iter.Seq2[host.Event, error]) ([]host.Event, error) {
	var out []host.Event
	for e, err := range seq {
		if err != nil {
			return out, err
		}
		out = append(out, e)
	}
	return out, nil
}

// gapless fails unless evs are numbered from first, one by one.
func gapless(t *testing.T, evs []host.Event, first uint64) {
	t.Helper()
	for i, e := range evs {
		if e.Seq != first+uint64(i) {
			t.Fatalf("event %d has seq %d, want %d", i, e.Seq, first+uint64(i))
		}
	}
}

// summary renders the events that a UI acts on, compactly: "state idle",
// "delivery queued", "approval Bash", "approval_resolved allowed",
// "message assistant".
func summary(evs []host.Event) []string {
	var out []string
	for _, e := range evs {
		var v struct {
			State, Status, Outcome, Type, ToolName string `json:"-"`
		}
		var m map[string]any
		_ = json.Unmarshal(e.Data, &m)
		str := func(k string) string { s, _ := m[k].(string); return s }
		v.State, v.Status, v.Outcome, v.Type, v.ToolName = str("state"), str("status"), str("outcome"), str("type"), str("tool_name")
		switch e.Kind {
		case host.EventState:
			out = append(out, "state "+v.State)
		case host.EventDelivery:
			out = append(out, "delivery "+v.Status)
		case host.EventApproval:
			out = append(out, "approval "+v.ToolName)
		case host.EventApprovalResolved:
			out = append(out, "approval_resolved "+v.Outcome)
		case host.EventMessage:
			out = append(out, "message "+v.Type)
		default:
			out = append(out, string(e.Kind))
		}
	}
	return out
}

func inOrder(list []string, want ...string) error {
	i := 0
	for _, s := range list {
		if i < len(want) && s == want[i] {
			i++
		}
	}
	if i < len(want) {
		return fmt.Errorf("missing %q (in order) from %q", want[i:], list)
	}
	return nil
}

func TestEventsRecordATurn(t *testing.T) {
	ctx := testCtx(t)
	answer := make(chan json.RawMessage, 1)
	s, l := start(t, nil, toolTurn("Bash", map[string]string{"command": "ls"}, answer))
	all := make(chan []host.Event, 1)
	go func() { evs, _ := collect(s.Events(ctx, 0)); all <- evs }()
	d, err := s.Send(ctx, "list")
	if err != nil {
		t.Fatal(err)
	}
	a := l.waitState(t, ctx, host.StateAwaitingApproval).Approval
	snap := s.Snapshot()
	if len(snap.Approvals) != 1 || snap.Approvals[0].ID != a.ID() || snap.State.State != "awaiting_approval" || snap.State.Approval != a.ID() {
		t.Errorf("snapshot while waiting: approvals %+v, state %+v", snap.Approvals, snap.State)
	}
	if len(snap.Deliveries) != 1 || snap.Deliveries[0].Text != "list" {
		t.Errorf("snapshot deliveries %+v", snap.Deliveries)
	}
	if err := a.Allow(); err != nil {
		t.Fatal(err)
	}
	<-answer
	if _, err := d.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	s.Close()
	evs := <-all
	gapless(t, evs, 1)
	sum := summary(evs)
	if err := inOrder(sum, "state starting", "state ready", "delivery queued", "message system",
		"approval Bash", "state awaiting_approval", "approval_resolved allowed", "message user", "message result",
		"delivery answered", "state idle", "cost", "closed"); err != nil {
		t.Error(err)
	}
	if evs[len(evs)-1].Kind != host.EventClosed {
		t.Errorf("last event %s, want closed", evs[len(evs)-1].Kind)
	}
	// Events are JSON as they are.
	b, err := json.Marshal(evs[0])
	if err != nil || !strings.Contains(string(b), `"kind":"state"`) || !strings.Contains(string(b), `"seq":1`) {
		t.Errorf("event JSON %s (%v)", b, err)
	}
	// A snapshot at the end is consistent with the journal.
	end := s.Snapshot()
	if end.Seq != evs[len(evs)-1].Seq || !end.Ended || end.State.State != "disconnected" || len(end.Approvals) != 0 {
		t.Errorf("final snapshot seq %d ended %v state %+v, want seq %d", end.Seq, end.Ended, end.State, evs[len(evs)-1].Seq)
	}
	if end.Cost.Turns != 1 || end.Cost.USD == 0 {
		t.Errorf("final cost %+v", end.Cost)
	}
	// Resuming after any seq gives exactly the rest.
	for _, after := range []uint64{0, 3, uint64(len(evs)) - 1, uint64(len(evs))} {
		rest, err := collect(s.Events(ctx, after))
		if err != nil {
			t.Fatalf("Events(%d): %v", after, err)
		}
		if len(rest) != len(evs)-int(after) {
			t.Fatalf("Events(%d) gave %d events, want %d", after, len(rest), len(evs)-int(after))
		}
		gapless(t, rest, after+1)
	}
	// A seq the session never reached asks for a resync.
	if _, err := collect(s.Events(ctx, end.Seq+5)); !errors.Is(err, host.ErrResync) {
		t.Errorf("Events(future) = %v, want ErrResync", err)
	}
}

// burst is a script that answers each prompt with n streamed deltas and
// a text message, all in one go.
func burst(n int, size int) claudetest.Script {
	return func(ctx context.Context, c *claudetest.CLI) error {
		if _, err := c.HandleInitialize(ctx); err != nil {
			return err
		}
		for {
			if _, err := c.ReadUser(ctx); err != nil {
				return err
			}
			msgs := []any{c.SystemInit()}
			chunk := strings.Repeat("x", size)
			for range n {
				msgs = append(msgs, c.TextDelta(0, chunk))
			}
			msgs = append(msgs, c.AssistantText("done"), c.ResultSuccess("done"))
			if err := c.Write(msgs...); err != nil {
				return err
			}
		}
	}
}

// pacedBurst is burst in chunks of 20 deltas, each after a receive from
// ack, so that a reader keeps up with a small journal.
func pacedBurst(n int, ack <-chan struct{}) claudetest.Script {
	return func(ctx context.Context, c *claudetest.CLI) error {
		if _, err := c.HandleInitialize(ctx); err != nil {
			return err
		}
		for {
			if _, err := c.ReadUser(ctx); err != nil {
				return err
			}
			c.Write(c.SystemInit())
			for i := range n {
				c.Write(c.TextDelta(0, "xx"))
				if (i+1)%20 == 0 {
					select {
					case <-ack:
					case <-ctx.Done():
						return ctx.Err()
					}
				}
			}
			if err := c.Write(c.AssistantText("done"), c.ResultSuccess("done")); err != nil {
				return err
			}
		}
	}
}

func TestEventsSlowSubscriberResyncs(t *testing.T) {
	ctx := testCtx(t)
	ack := make(chan struct{})
	s, _ := start(t, &host.Options{Journal: &host.JournalOptions{MaxEvents: 64}}, pacedBurst(500, ack))
	// The slow subscriber takes one event, then stalls.
	next, stop := iter.Pull2(s.Events(ctx, 0))
	defer stop()
	first, err, _ := next()
	if err != nil || first.Seq != 1 {
		t.Fatalf("first event %+v, %v", first, err)
	}
	// A fast subscriber sees every event of the burst as it happens.
	fast := make(chan []host.Event, 1)
	fctx, fcancel := context.WithCancel(ctx)
	go func() {
		var got []host.Event
		streamed := 0
		for e, err := range s.Events(fctx, 1) {
			if err != nil {
				break
			}
			got = append(got, e)
			if e.Kind == host.EventDelivery && strings.Contains(string(e.Data), `"answered"`) {
				break
			}
			if e.Kind == host.EventMessage && strings.Contains(string(e.Data), `"stream_event"`) {
				if streamed++; streamed%20 == 0 {
					select {
					case ack <- struct{}{}:
					case <-fctx.Done():
					}
				}
			}
		}
		fast <- got
	}()
	d, err := s.Send(ctx, "go")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	got := <-fast
	fcancel()
	gapless(t, got, 2)
	if n := strings.Count(strings.Join(summary(got), "\n"), "message stream_event"); n != 500 {
		t.Errorf("fast subscriber saw %d stream events, want 500", n)
	}
	// The slow one gets what it had buffered, with no gap, then is told
	// to resync; a snapshot brings it back.
	for want := uint64(2); ; want++ {
		var e host.Event
		e, err, _ = next()
		if err != nil {
			break
		}
		if e.Seq != want {
			t.Fatalf("slow subscriber got seq %d, want %d", e.Seq, want)
		}
	}
	var re *host.ResyncError
	if !errors.As(err, &re) || !errors.Is(err, host.ErrResync) || re.Oldest <= re.After+1 {
		t.Fatalf("slow subscriber got %v, want a *ResyncError", err)
	}
	snap := s.Snapshot()
	if snap.State.State != "idle" || snap.Cost.Turns != 1 {
		t.Errorf("snapshot %+v", snap.State)
	}
	var text []string
	for _, raw := range snap.Transcript {
		if strings.Contains(string(raw), `"stream_event"`) {
			t.Fatalf("ended turn's stream event kept in the transcript: %s", raw)
		}
		text = append(text, string(raw))
	}
	if !strings.Contains(strings.Join(text, "\n"), `"done"`) {
		t.Errorf("transcript lacks the turn's text: %q", text)
	}
	// Subscribing after the snapshot's seq gives the next turn with no gap.
	sub := make(chan []host.Event, 1)
	go func() {
		var got []host.Event
		streamed := 0
		for e, err := range s.Events(ctx, snap.Seq) {
			if err != nil {
				break
			}
			got = append(got, e)
			if e.Kind == host.EventState && strings.Contains(string(e.Data), `"idle"`) {
				break
			}
			if e.Kind == host.EventMessage && strings.Contains(string(e.Data), `"stream_event"`) {
				if streamed++; streamed%20 == 0 {
					select {
					case ack <- struct{}{}:
					case <-ctx.Done():
					}
				}
			}
		}
		sub <- got
	}()
	d, err = s.Send(ctx, "again")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	again := <-sub
	gapless(t, again, snap.Seq+1)
}

// TestSnapshotMidTurn takes a snapshot in the middle of a streamed turn:
// the transcript so far plus the events after it give every message
// the live feed gives.
func TestSnapshotMidTurn(t *testing.T) {
	ctx := testCtx(t)
	mid, cont := make(chan struct{}), make(chan struct{})
	s, _ := start(t, nil, func(ctx context.Context, c *claudetest.CLI) error {
		if _, err := c.HandleInitialize(ctx); err != nil {
			return err
		}
		if _, err := c.ReadUser(ctx); err != nil {
			return err
		}
		c.Write(c.SystemInit(), c.TextDelta(0, "Hel"), c.TextDelta(0, "lo"))
		close(mid)
		<-cont
		c.Write(c.TextDelta(0, " you"), c.AssistantText("Hello you"), c.ResultSuccess("Hello you"))
		_, err := c.ReadUser(ctx)
		return err
	})
	live := make(chan []host.Event, 1)
	go func() { evs, _ := collect(s.Events(ctx, 0)); live <- evs }()
	d, err := s.Send(ctx, "hi")
	if err != nil {
		t.Fatal(err)
	}
	<-mid
	// Wait until the journal holds the second delta.
	var snap *host.Snapshot
	for snap = s.Snapshot(); !strings.Contains(string(lastLine(snap)), `"lo"`); snap = s.Snapshot() {
		runtime.Gosched()
	}
	close(cont)
	if _, err := d.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	s.Close()
	all := <-live
	var want, got []string
	for _, e := range all {
		if e.Kind == host.EventMessage {
			want = append(want, string(e.Data))
		}
	}
	for _, raw := range snap.Transcript {
		got = append(got, string(raw))
	}
	rest, err := collect(s.Events(ctx, snap.Seq))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range rest {
		if e.Kind == host.EventMessage {
			got = append(got, string(e.Data))
		}
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("snapshot + events:\n%s\nlive:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func lastLine(s *host.Snapshot) json.RawMessage {
	if len(s.Transcript) == 0 {
		return nil
	}
	return s.Transcript[len(s.Transcript)-1]
}

func TestMessagesSubscriberBounded(t *testing.T) {
	ctx := testCtx(t)
	s, _ := start(t, &host.Options{MessageBuffer: 32}, burst(300, 10))
	slow, stop := iter.Pull2(s.Messages(ctx))
	defer stop()
	d, err := s.Send(ctx, "go")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	// The journal counts the messages (it is bounded far above them).
	n := 0
	for e, err := range s.Events(ctx, 0) {
		if err != nil {
			t.Fatal(err)
		}
		if e.Kind == host.EventMessage {
			n++
			if strings.Contains(string(e.Data), `"type":"result"`) {
				break
			}
		}
	}
	// The slow subscriber is told how many it missed, then gets the rest.
	_, err, _ = slow()
	var re *host.ResyncError
	if !errors.As(err, &re) || re.Missed == 0 {
		t.Fatalf("slow subscriber's first value: %v, want a *ResyncError", err)
	}
	got := 0
	for {
		m, err, ok := slow()
		if !ok || err != nil {
			t.Fatalf("slow subscriber ended: %v", err)
		}
		got++
		if _, ok := m.(*claude.ResultMessage); ok {
			break
		}
	}
	if re.Missed+got != n || got > 32 {
		t.Errorf("missed %d + got %d, want %d in all with at most 32 kept", re.Missed, got, n)
	}
}

// TestMemoryAfterBurst: a burst of big messages to a subscriber that
// never reads and a journal nobody reads leaves only the bounds behind.
func TestMemoryAfterBurst(t *testing.T) {
	ctx := testCtx(t)
	const size = 64 << 10
	s, _ := start(t, &host.Options{MessageBuffer: 16, Journal: &host.JournalOptions{MaxBytes: 2 << 20, MaxTranscriptBytes: 2 << 20}}, burst(400, size))
	_, stop := iter.Pull2(s.Messages(ctx)) // registered, never read
	defer stop()
	d, err := s.Send(ctx, "go")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	// 25 MiB went through; the bounds keep 16 messages + 2 MiB + 2 MiB.
	if ms.HeapInuse > 16<<20 {
		t.Errorf("heap in use after the burst: %d MiB", ms.HeapInuse>>20)
	}
}

// The journal against the real CLI: a Bash approval answered, the
// prompt's delivery, the CLI's own lines as message events, and a
// snapshot that agrees with them.
func init() {
	addScenarios(scenario{
		name:   "journal_tool_approval",
		guards: "The journal records a real turn with an approval, gapless, and a snapshot agrees with it.",
		api: func() *claudetest.MessagesOptions {
			return &claudetest.MessagesOptions{Replies: []*claudetest.Reply{
				claudetest.ToolUseReply("toolu_1", "Bash", map[string]string{"command": "echo hi > hi.txt", "description": "Write hi"}),
				claudetest.TextReply("Said it."),
			}}
		},
		opts: func(o *host.Options) { o.CLI.IncludePartialMessages = true },
		run: func(t *testing.T, h *harness) {
			ctx, cancel := context.WithCancel(h.Ctx)
			defer cancel()
			all := make(chan []host.Event, 1)
			go func() {
				var got []host.Event
				for e, err := range h.S.Events(ctx, 0) {
					if err != nil {
						break
					}
					got = append(got, e)
				}
				all <- got
			}()
			d, err := h.S.Send(h.Ctx, "say hi")
			if err != nil {
				t.Fatal(err)
			}
			a := h.states.waitState(t, h.Ctx, host.StateAwaitingApproval).Approval
			if err := a.Allow(); err != nil {
				t.Fatal(err)
			}
			if _, err := d.Wait(h.Ctx); err != nil {
				t.Fatal(err)
			}
			h.states.waitState(t, h.Ctx, host.StateIdle)
			snap := h.S.Snapshot()
			cancel()
			evs := <-all
			gapless(t, evs, 1)
			if err := inOrder(summary(evs), "state ready", "delivery queued", "message system", "message user",
				"approval Bash", "state awaiting_approval", "approval_resolved allowed", "message assistant",
				"message result", "delivery answered", "state idle"); err != nil {
				t.Error(err)
			}
			if snap.Seq > evs[len(evs)-1].Seq || snap.State.State != "idle" || snap.SessionID == "" || snap.Model == "" || snap.Cost.USD <= 0 {
				t.Errorf("snapshot seq %d state %+v sid %q model %q cost %+v", snap.Seq, snap.State, snap.SessionID, snap.Model, snap.Cost)
			}
			for _, raw := range snap.Transcript {
				if !json.Valid(raw) {
					t.Errorf("transcript line is not JSON: %s", raw)
				}
			}
		},
	})
}

// TestTranscriptLongTurnKeepsHistory: a turn with more stream events
// than the transcript holds gives up its stream events, not the history.
func TestTranscriptLongTurnKeepsHistory(t *testing.T) {
	ctx := testCtx(t)
	s, _ := start(t, &host.Options{Journal: &host.JournalOptions{MaxTranscript: 50}}, burst(200, 10))
	for _, p := range []string{"one", "two"} {
		d, err := s.Send(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := d.Wait(ctx); err != nil {
			t.Fatal(err)
		}
	}
	snap := s.Snapshot()
	results := 0
	for _, raw := range snap.Transcript {
		if strings.Contains(string(raw), `"stream_event"`) {
			t.Errorf("stream event kept after the turn: %.100s", raw)
		}
		if strings.Contains(string(raw), `"type":"result"`) {
			results++
		}
	}
	if results != 2 || snap.Dropped != 0 {
		t.Errorf("transcript has %d results, dropped %d; want both turns, nothing dropped", results, snap.Dropped)
	}
}

// TestHoldLosesNothing: a reader that holds the journal gets every event
// of a burst far bigger than the journal's bound, however slowly it
// reads: while it falls half the bound behind, the session stops reading
// the CLI (which waits on its pipe), and the journal never holds more than
// its bound and a message's events.
func TestHoldLosesNothing(t *testing.T) {
	ctx := testCtx(t)
	const n = 2000
	s, _ := start(t, &host.Options{Journal: &host.JournalOptions{MaxEvents: 64}}, burst(n, 10))
	h := s.Hold(0)
	defer h.Release()
	if _, err := s.Send(ctx, "go"); err != nil {
		t.Fatal(err)
	}
	var got []host.Event
	next, stop := iter.Pull2(s.Events(ctx, 0))
	defer stop()
	for {
		e, err, ok := next()
		if !ok || err != nil {
			t.Fatalf("events ended after %d: %v", len(got), err)
		}
		got = append(got, e)
		// The journal's latest is never past the bound beyond what
		// the reader took, give or take one message's events.
		if latest := s.Snapshot().Seq; latest > e.Seq+64 {
			t.Fatalf("journal at %d while the reader took %d", latest, e.Seq)
		}
		h.Advance(e.Seq)
		if e.Kind == host.EventDelivery && strings.Contains(string(e.Data), `"answered"`) {
			break
		}
	}
	gapless(t, got, 1)
	if c := strings.Count(strings.Join(summary(got), "\n"), "message stream_event"); c != n {
		t.Fatalf("saw %d stream events, want %d", c, n)
	}
}
