package cluster_test

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tetherhq/tether/cluster"
	"github.com/tetherhq/tether/host"
)

// rawBus is a plain NATS connection for tests that write on the bus behind
// the package's back, as a buggy or hostile participant would.
type rawBus struct {
	nc *nats.Conn
	js jetstream.JetStream
}

func newRawBus(t *testing.T, url string, opts ...nats.Option) *rawBus {
	t.Helper()
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return &rawBus{nc: nc, js: js}
}

// putSession writes a session's registry entry as a process of another
// release, or a claim in progress, would leave it.
func (b *rawBus) putSession(t *testing.T, r cluster.SessionInfo) {
	t.Helper()
	ctx := testCtx(t)
	kv, err := b.js.KeyValue(ctx, cluster.BucketSessions)
	if err != nil {
		t.Fatal(err)
	}
	rec, _ := json.Marshal(r)
	if _, err := kv.Put(ctx, r.ID, rec); err != nil {
		t.Fatal(err)
	}
}

// session reads a session's registry entry as stored.
func (b *rawBus) session(t *testing.T, id string) cluster.SessionInfo {
	t.Helper()
	ctx := testCtx(t)
	kv, err := b.js.KeyValue(ctx, cluster.BucketSessions)
	if err != nil {
		t.Fatal(err)
	}
	e, err := kv.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	var r cluster.SessionInfo
	if err := json.Unmarshal(e.Value(), &r); err != nil {
		t.Fatal(err)
	}
	return r
}

func (r *rawBus) publish(t *testing.T, subject string, data []byte, hdr map[string]string) {
	t.Helper()
	m := nats.NewMsg(subject)
	m.Data = data
	for k, v := range hdr {
		m.Header.Set(k, v)
	}
	if _, err := r.js.PublishMsg(testCtx(t), m); err != nil {
		t.Fatal(err)
	}
}

// storedSeqs returns the Tether-Seq of every message on a session's
// subjects that decodes as an event of that number, in stream order, and
// the subjects they came on.
func (r *rawBus) storedSeqs(t *testing.T, id string) (seqs []uint64, subjects []string) {
	t.Helper()
	var st jetstream.Stream
	err := unlessUnavailable(t, func() (err error) {
		st, err = r.js.Stream(testCtx(t), cluster.StreamEvents)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	pos := uint64(1)
	for {
		var m *jetstream.RawStreamMsg
		err := unlessUnavailable(t, func() (err error) {
			m, err = st.GetMsg(testCtx(t), pos, jetstream.WithGetMsgSubject("tether.v1.*."+id))
			return err
		})
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return seqs, subjects
		}
		if err != nil {
			t.Fatal(err)
		}
		pos = m.Sequence + 1
		n, err := strconv.ParseUint(m.Header.Get("Tether-Seq"), 10, 64)
		if b := m.Header.Get("Tether-Batch"); b != "" && err == nil {
			// A batch: its events' numbers, the last one's in the header.
			lines := strings.Split(string(m.Data), "\n")
			if strconv.Itoa(len(lines)) != b || uint64(len(lines)) > n {
				continue
			}
			for i, l := range lines {
				var ev host.Event
				if json.Unmarshal([]byte(l), &ev) != nil || ev.Seq != n-uint64(len(lines)-1-i) {
					t.Fatalf("batch ending at %d: line %d is not its event: %.200s", n, i, l)
				}
				seqs = append(seqs, ev.Seq)
				subjects = append(subjects, m.Subject)
			}
			continue
		}
		var ev host.Event
		if err != nil || json.Unmarshal(m.Data, &ev) != nil || ev.Seq != n || m.Header.Get("Tether-Part") != "" {
			continue
		}
		seqs = append(seqs, n)
		subjects = append(subjects, m.Subject)
	}
}

// batches returns how many messages a session's subjects hold, and how
// many of them are batches.
func (r *rawBus) batches(t *testing.T, id string) (msgs, batches int) {
	t.Helper()
	st, err := r.js.Stream(testCtx(t), cluster.StreamEvents)
	if err != nil {
		t.Fatal(err)
	}
	for pos := uint64(1); ; {
		m, err := st.GetMsg(testCtx(t), pos, jetstream.WithGetMsgSubject("tether.v1.*."+id))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return msgs, batches
		}
		if err != nil {
			t.Fatal(err)
		}
		pos = m.Sequence + 1
		msgs++
		if m.Header.Get("Tether-Batch") != "" {
			batches++
		}
	}
}

// consumers returns how many consumers the events stream has.
func (r *rawBus) consumers(t *testing.T) int {
	t.Helper()
	st, err := r.js.Stream(testCtx(t), cluster.StreamEvents)
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Consumers
}

func eventData(t *testing.T, ev host.Event) []byte {
	t.Helper()
	data, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// unlessUnavailable runs f again while it fails with JetStream's "system
// temporarily unavailable" (503): what a read gets from a 3-node cluster
// in the moments after a node was lost, before the stream's new leader
// answers. (cluster's own reads retry it as well: transient in setup.go.)
// It gives up with the test's ctx.
func unlessUnavailable(t *testing.T, f func() error) error {
	t.Helper()
	ctx := testCtx(t)
	for {
		err := f()
		var ae *jetstream.APIError
		if !errors.As(err, &ae) || ae.Code != 503 || ctx.Err() != nil {
			return err
		}
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// TestBadMessagesAreSkipped: junk and forged messages on a session's
// subjects (not JSON, no sequence header, a bad part header, an event far
// ahead that no agent of the session published, one at the next number
// from an agent that never owned it, a marker that is not one) neither
// end a subscription nor make it resync: the readers skip and count them,
// the agent's events go on with contiguous numbers, and every
// subscription's consumer is gone from the server once it ends.
func TestBadMessagesAreSkipped(t *testing.T) {
	ctx := testCtx(t)
	ns := newNATS(t, nil)
	newAgent(t, ns.URL(), "a1", 2)
	c := newClient(t, ns.URL())
	raw := newRawBus(t, ns.URL())
	info := mustStart(ctx, t, c, nil)
	f := follow(t, c, info.ID, 0)
	send(t, c, info.ID, "one")
	first := f.wait(t, "a turn", result("echo: one"))
	waitFor(t, "the turn's events stored", func() bool {
		s, err := c.Session(ctx, info.ID)
		return err == nil && s.State == "idle" && s.Seq > first.Seq
	})
	s, _ := c.Session(ctx, info.ID)
	next := strconv.FormatUint(s.Seq+1, 10)
	subj := "tether.v1.ev." + info.ID
	forged := host.Event{Seq: 1000, Time: time.Now(), Kind: host.EventState, Data: json.RawMessage(`{"state":"idle"}`)}
	raw.publish(t, subj, []byte("not json"), map[string]string{"Tether-Seq": next, "Tether-Agent": "a1"})
	raw.publish(t, subj, eventData(t, forged), nil)
	raw.publish(t, subj, []byte("{}"), map[string]string{"Tether-Seq": next, "Tether-Part": "x/y", "Tether-Agent": "a1"})
	raw.publish(t, subj, eventData(t, forged), map[string]string{"Tether-Seq": "1000"})
	forged.Seq = s.Seq + 1
	raw.publish(t, subj, eventData(t, forged), map[string]string{"Tether-Seq": next, "Tether-Agent": "mallory"})
	raw.publish(t, "tether.v1.gone."+info.ID, eventData(t, forged), map[string]string{"Tether-Seq": next})

	send(t, c, info.ID, "two")
	f.wait(t, "the turn after the junk", result("echo: two"))
	checkSeqs(t, f.list(), 1)
	// A new subscriber from the start, and one from the middle, read
	// through the junk too, without a resync.
	g := follow(t, c, info.ID, 0)
	g.wait(t, "the second turn, from the start", result("echo: two"))
	checkSeqs(t, g.list(), 1)
	h := follow(t, c, info.ID, first.Seq)
	h.wait(t, "the second turn, from the middle", result("echo: two"))
	checkSeqs(t, h.list(), first.Seq+1)
	if c.Skipped() == 0 {
		t.Fatal("nothing counted as skipped")
	}
	// The stream holds the agent's numbers once each, contiguous.
	seqs, _ := raw.storedSeqs(t, info.ID)
	var agents []uint64
	for _, n := range seqs {
		if n != 1000 && (len(agents) == 0 || n != agents[len(agents)-1]) {
			agents = append(agents, n)
		}
	}
	for i, n := range agents {
		if n != uint64(i+1) {
			t.Fatalf("stored numbers %v: want 1.. contiguous", agents)
		}
	}

	f.stop()
	g.stop()
	h.stop()
	waitFor(t, "no consumer left on the events stream", func() bool { return raw.consumers(t) == 0 })
	// And subscribing again, many times, works.
	for i := range 20 {
		sub := follow(t, c, info.ID, first.Seq)
		sub.wait(t, "a resubscription "+strconv.Itoa(i), result("echo: two"))
		sub.stop()
	}
	waitFor(t, "no consumer left after resubscribing", func() bool { return raw.consumers(t) == 0 })
}

// TestMarkerNeverTakesAnAgentsNumber: a "disconnected" marker appended
// while the agent does not know it (the agent was frozen, or its
// heartbeats could not reach NATS, and it has not looked at the registry
// since) takes the next number; the agent's next events are fenced on it
// and numbered after it: no number is stored twice, none is lost.
func TestMarkerNeverTakesAnAgentsNumber(t *testing.T) {
	ctx := testCtx(t)
	ns := newNATS(t, nil)
	newAgent(t, ns.URL(), "a1", 2)
	c := newClient(t, ns.URL())
	raw := newRawBus(t, ns.URL())
	id, f := echoed(t, c, "one")
	waitFor(t, "the session idle", func() bool {
		s, err := c.Session(ctx, id)
		return err == nil && s.State == "idle"
	})
	seqs, _ := raw.storedSeqs(t, id)
	last := seqs[len(seqs)-1]
	// The marker, as a client appends it (without the registry update
	// the agent would notice).
	st, err := raw.js.Stream(ctx, cluster.StreamEvents)
	if err != nil {
		t.Fatal(err)
	}
	lm, err := st.GetLastMsgForSubject(ctx, "tether.v1.*."+id)
	if err != nil {
		t.Fatal(err)
	}
	marker := host.Event{Seq: last + 1, Time: time.Now(), Kind: host.EventState, Data: json.RawMessage(`{"state":"disconnected","since":"2026-01-01T00:00:00Z"}`)}
	m := nats.NewMsg("tether.v1.gone." + id)
	m.Data = eventData(t, marker)
	m.Header.Set("Tether-Seq", strconv.FormatUint(last+1, 10))
	if _, err := raw.js.PublishMsg(ctx, m, jetstream.WithExpectLastSequenceForSubject(lm.Sequence, "tether.v1.*."+id)); err != nil {
		t.Fatal(err)
	}
	f.wait(t, "the marker", state("disconnected"))
	send(t, c, id, "two")
	f.wait(t, "the turn after the marker", result("echo: two"))
	checkSeqs(t, f.list(), 1)
	seqs, _ = raw.storedSeqs(t, id)
	for i, n := range seqs {
		if n != uint64(i+1) {
			t.Fatalf("stored numbers %v: want each once, from 1", seqs)
		}
	}
}

// A session whose events no agent stamped (a release before the wire
// revisions wrote them, 2f828d2) is never numbered again from 1: a
// client that finds its agent gone marks it in the registry only, and a
// failover of it is refused as unsupported (its conversation resumes as
// a new session instead).
func TestUnstampedSessionNotRenumbered(t *testing.T) {
	ctx := testCtx(t)
	ns := newNATS(t, nil)
	newAgent(t, ns.URL(), "a1", 2)
	c := newClient(t, ns.URL())
	raw := newRawBus(t, ns.URL())
	now := time.Now()
	raw.putSession(t, cluster.SessionInfo{ID: "old1", Agent: "gone1", State: "idle", CLISession: "cli-1", Created: now, Updated: now, Tasks: 1})
	// The tasks its record counts went with its agent's CLI.
	if s, err := c.Session(ctx, "old1"); err != nil || s.State != "disconnected" || s.Tasks != 0 {
		t.Fatalf("session of a gone agent: %+v, %v; want disconnected with no task", s, err)
	}
	// The list is the client's watch of the registry, which learns of
	// the entry (written by another process) a moment later.
	var list []cluster.SessionInfo
	waitFor(t, "the list to have the entry", func() bool {
		var err error
		list, err = c.Sessions(ctx)
		return err == nil && len(list) == 1
	})
	if list[0].State != "disconnected" || list[0].Tasks != 0 {
		t.Fatalf("list with a gone agent's session: %+v; want it disconnected with no task", list)
	}
	old := host.Event{Seq: 1, Time: now, Kind: host.EventState, Data: json.RawMessage(`{"state":"idle"}`)}
	raw.publish(t, "tether.v1.ev.old1", eventData(t, old), map[string]string{"Tether-Seq": "1"})
	f := follow(t, c, "old1", 0)
	waitFor(t, "the session marked disconnected in the registry", func() bool {
		s, err := c.Session(ctx, "old1")
		return err == nil && s.Orphaned
	})
	if rec := raw.session(t, "old1"); rec.Tasks != 0 || !rec.Orphaned {
		t.Fatalf("the record marked orphaned: %+v; want no task", rec)
	}
	if _, err := c.Resume(ctx, "old1"); !errors.Is(err, cluster.ErrUnsupported) {
		t.Fatalf("failover of an unstamped session: %v, want unsupported", err)
	}
	f.stop()
	if seqs, subjects := raw.storedSeqs(t, "old1"); len(seqs) != 1 || seqs[0] != 1 {
		t.Fatalf("stored %v (%v): want the old event alone", seqs, subjects)
	}
}

// Agents advertise their wire revision on their registry entry; an entry
// without it (the previous release's) is revision 1.
func TestAgentsAdvertiseTheirRevision(t *testing.T) {
	ctx := testCtx(t)
	ns := newNATS(t, nil)
	newAgent(t, ns.URL(), "a1", 2)
	c := newClient(t, ns.URL())
	raw := newRawBus(t, ns.URL())
	if rev := cluster.AgentWire(ctx, c, "a1"); rev != cluster.WireRevision {
		t.Fatalf("a1 advertises %d, want %d", rev, cluster.WireRevision)
	}
	kv, err := raw.js.KeyValue(ctx, cluster.BucketAgents)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	rec, _ := json.Marshal(map[string]any{"id": "old1", "capacity": 2, "sessions": 0, "heartbeat": now, "started": now})
	if _, err := kv.Put(ctx, "old1", rec); err != nil {
		t.Fatal(err)
	}
	rev := 0
	waitFor(t, "old1 listed", func() bool {
		rev = cluster.AgentWire(ctx, c, "old1")
		return rev != 0
	})
	if rev != 1 {
		t.Fatalf("an entry without a revision reads as %d, want 1", rev)
	}
}
