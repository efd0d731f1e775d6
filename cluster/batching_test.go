package cluster_test

import (
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tetherhq/tether/cluster"
	"github.com/tetherhq/tether/host"
)

// TestBatchesTakenApart: a flood is stored in batches, and readers take
// them apart: a subscriber from any number, inside a batch or at its
// edge, gets exactly the events after it; junk that looks like a batch
// (a bad count, a body that is not its numbers, one from an agent that
// never owned the session) is skipped, never taken for a gap.
func TestBatchesTakenApart(t *testing.T) {
	ctx := testCtx(t)
	ns := newNATS(t, nil)
	newAgent(t, ns.URL(), "a1", 2)
	c := newClient(t, ns.URL())
	raw := newRawBus(t, ns.URL())
	info := mustStart(ctx, t, c, nil)
	f := follow(t, c, info.ID, 0)
	// The agent writes batches once it has seen the fleet's readers:
	// flood until a batch is stored (the first listing may come after
	// the first flood).
	waitFor(t, "a batch stored", func() bool {
		n := len(f.list())
		send(t, c, info.ID, "flood 2000")
		f.wait(t, "the flood", func(ev host.Event) bool { return ev.Seq > uint64(n) && result(streamed(2000))(ev) })
		_, batches := raw.batches(t, info.ID)
		return batches > 0
	})
	waitFor(t, "every event stored", func() bool {
		s, err := c.Session(ctx, info.ID)
		l := f.list() // once: the follower appends while this reads
		return err == nil && s.Seq >= l[len(l)-1].Seq
	})
	all := f.list()
	checkSeqs(t, all, 1)
	checkStored(t, raw, info.ID)

	subj := "tether.v1.ev." + info.ID
	next := all[len(all)-1].Seq + 1
	line := func(n uint64) string {
		b, _ := json.Marshal(host.Event{Seq: n, Time: time.Now(), Kind: host.EventState, Data: json.RawMessage(`{"state":"idle"}`)})
		return string(b)
	}
	two := []byte(line(next) + "\n" + line(next+1))
	last := strconv.FormatUint(next+1, 10)
	raw.publish(t, subj, two, map[string]string{"Tether-Seq": last, "Tether-Batch": "x", "Tether-Agent": "a1"})
	raw.publish(t, subj, two, map[string]string{"Tether-Seq": last, "Tether-Batch": "3", "Tether-Agent": "a1"})
	raw.publish(t, subj, []byte(line(next)+"\n"+line(next+5)), map[string]string{"Tether-Seq": last, "Tether-Batch": "2", "Tether-Agent": "a1"})
	raw.publish(t, subj, two, map[string]string{"Tether-Seq": last, "Tether-Batch": "2", "Tether-Agent": "mallory"})
	raw.publish(t, subj, two, map[string]string{"Tether-Seq": last, "Tether-Batch": "2", "Tether-Agent": "a1", "Tether-Part": "1/2"})
	send(t, c, info.ID, "flood 500")
	f.wait(t, "a flood after the junk", result(streamed(500)))
	all = f.list()
	checkSeqs(t, all, 1)

	// Where the batches begin and end, from the stream.
	st, err := raw.js.Stream(ctx, cluster.StreamEvents)
	if err != nil {
		t.Fatal(err)
	}
	var afters []uint64
	for pos := uint64(1); len(afters) < 12; {
		m, err := st.GetMsg(ctx, pos, jetstream.WithGetMsgSubject(subj))
		if err != nil {
			break
		}
		pos = m.Sequence + 1
		n, _ := strconv.Atoi(m.Header.Get("Tether-Batch"))
		lastSeq, _ := strconv.ParseUint(m.Header.Get("Tether-Seq"), 10, 64)
		if n > 2 && m.Header.Get("Tether-Agent") == "a1" && lastSeq < next {
			first := lastSeq - uint64(n) + 1
			// Before the batch, at its first, inside it, at its last.
			afters = append(afters, first-1, first, first+1, lastSeq-1)
		}
	}
	if len(afters) == 0 {
		t.Fatal("no batch of 3 or more stored")
	}
	for _, after := range afters {
		g := follow(t, c, info.ID, after)
		g.wait(t, "the last flood from "+strconv.FormatUint(after, 10), result(streamed(500)))
		checkSeqs(t, g.list(), after+1)
		if got := len(g.list()); uint64(got) < uint64(len(all))-after {
			t.Fatalf("from %d: %d events, want %d", after, got, uint64(len(all))-after)
		}
		g.stop()
	}
	if c.Skipped() < 5 {
		t.Fatalf("%d skipped, want the 5 bad batches", c.Skipped())
	}
}

// TestOlderReaderGetsSingleEvents: while a reader of an earlier wire
// revision follows the events stream (a consumer its release names, not
// this release's), or a request of one reaches the agent, the agent writes
// one event a message, which that reader decodes; once it is gone for two
// lapses, batches again.
func TestOlderReaderGetsSingleEvents(t *testing.T) {
	ctx := testCtx(t)
	ns := newNATS(t, nil)
	newAgent(t, ns.URL(), "a1", 2)
	c := newClient(t, ns.URL())
	raw := newRawBus(t, ns.URL())
	info := mustStart(ctx, t, c, nil)
	f := follow(t, c, info.ID, 0)
	flood := func() (msgs, batches int) {
		m0, b0 := raw.batches(t, info.ID)
		n := len(f.list())
		send(t, c, info.ID, "flood 500")
		f.wait(t, "the flood", func(ev host.Event) bool { return ev.Seq > uint64(n) && result(streamed(500))(ev) })
		waitFor(t, "the flood stored", func() bool {
			s, err := c.Session(ctx, info.ID)
			l := f.list() // once: the follower appends while this reads
			return err == nil && s.Seq >= l[len(l)-1].Seq
		})
		m1, b1 := raw.batches(t, info.ID)
		return m1 - m0, b1 - b0
	}
	waitFor(t, "batches", func() bool { _, b := flood(); return b > 0 })

	// A reader of an earlier release: an ordered consumer of its own
	// naming (a NUID).
	st, err := raw.js.Stream(ctx, cluster.StreamEvents)
	if err != nil {
		t.Fatal(err)
	}
	old, err := st.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{FilterSubjects: []string{"tether.v1.*." + info.ID}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := old.Next(jetstream.FetchMaxWait(time.Second)); err != nil {
		t.Fatal(err) // the server-side consumer exists once it delivered
	}
	waitFor(t, "single events only", func() bool { _, b := flood(); return b == 0 })
	if msgs, b := flood(); b != 0 || msgs < 500 {
		t.Fatalf("with an older reader: %d messages, %d batches", msgs, b)
	}
	if err := raw.js.DeleteConsumer(ctx, cluster.StreamEvents, old.CachedInfo().Name); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "batches again", func() bool { _, b := flood(); return b > 0 })

	// Requests from a process of revision 1 (no Tether-Wire header): a
	// ping every 100 ms, as a serve of that release following the
	// session would send commands and snapshots.
	stop := make(chan struct{})
	pinged := make(chan struct{})
	go func() {
		defer close(pinged)
		for {
			m := nats.NewMsg("tether.v1.cmd." + info.ID)
			m.Header.Set("Tether-Op", "ping")
			raw.nc.RequestMsg(m, time.Second)
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	waitFor(t, "single events only", func() bool { _, b := flood(); return b == 0 })
	if msgs, b := flood(); b != 0 || msgs < 500 {
		t.Fatalf("while revision 1 requests come: %d messages, %d batches", msgs, b)
	}
	close(stop)
	<-pinged
	checkSeqs(t, f.list(), 1)
	checkStored(t, raw, info.ID)
}
