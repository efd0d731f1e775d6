package cluster_test

import (
	"context"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/tetherhq/tether/cluster"
	"github.com/tetherhq/tether/host"
)

// eventConsumers counts the consumers of the events stream on the
// server: each reader of a session's events has one.
func eventConsumers(t *testing.T, url string, opts ...nats.Option) func() int {
	t.Helper()
	raw := newRawBus(t, url, opts...)
	return func() int {
		s, err := raw.js.Stream(testCtx(t), cluster.StreamEvents)
		if err != nil {
			t.Fatal(err)
		}
		info, err := s.Info(testCtx(t))
		if err != nil {
			t.Fatal(err)
		}
		return info.State.Consumers
	}
}

// A client's subscribers of one session (a serve's viewers) share one
// reader of the stream (one consumer, none once it follows live): each gets every event once and in order,
// one that joins later gets only what follows its position, and the
// consumer goes when the last of them leaves.
func TestSubscribersShareOneReader(t *testing.T) {
	_, c, info, consumers := oneSession(t)
	fs := []*follower{follow(t, c, info.ID, 0), follow(t, c, info.ID, 0), follow(t, c, info.ID, 0)}
	send(t, c, info.ID, "apples")
	for _, f := range fs {
		f.wait(t, "the first turn", result("echo: apples"))
	}
	if n := consumers(); n > 1 {
		t.Errorf("%d consumers of the events stream for three subscribers of one session, want 1 (0 once it follows live)", n)
	}
	// One that joins after the first turn gets the second turn only.
	mark := fs[0].list()[len(fs[0].list())-1].Seq
	late := follow(t, c, info.ID, mark)
	send(t, c, info.ID, "flood 300")
	for _, f := range append(fs, late) {
		f.wait(t, "the flood", result(streamed(300)))
	}
	want := fs[0].list()
	checkSeqs(t, want, 1)
	for i, f := range fs[1:] {
		if got := f.list(); len(got) != len(want) || got[len(got)-1].Seq != want[len(want)-1].Seq {
			t.Fatalf("subscriber %d got %d events, the first %d", i+2, len(got), len(want))
		}
		checkSeqs(t, f.list(), 1)
	}
	checkSeqs(t, late.list(), mark+1)
	if n := consumers(); n > 1 {
		t.Errorf("%d consumers with a late subscriber, want at most 1", n)
	}
	for _, f := range append(fs, late) {
		f.stop()
	}
	waitFor(t, "the shared reader gone with its last subscriber", func() bool { return consumers() == 0 })
}

// A subscriber slower than the shared reader's ring reads on with a
// reader of its own from where it is: it misses nothing and is not
// asked to resync, and the fast subscriber does not wait for it.
func TestSlowSubscriberReadsOnAlone(t *testing.T) {
	cluster.SetTailBound(t, 16)
	ctx := testCtx(t)
	ns := newNATS(t, nil)
	newAgent(t, ns.URL(), "a1", 2)
	c := newClient(t, ns.URL())
	info := mustStart(ctx, t, c, nil)
	fast := follow(t, c, info.ID, 0)
	// The slow one takes its first event, then waits for the fast one
	// to have the whole turn (far more than the ring holds).
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	held := make(chan struct{})
	got := make(chan []host.Event, 1)
	go func() {
		var evs []host.Event
		defer func() { got <- evs }()
		for ev, err := range c.Events(sctx, info.ID, 0) {
			if err != nil {
				t.Errorf("the slow subscriber: %v", err)
				return
			}
			if len(evs) == 0 {
				<-held
			}
			evs = append(evs, ev)
			if result(streamed(200))(ev) {
				return
			}
		}
	}()
	send(t, c, info.ID, "flood 200")
	fast.wait(t, "the flood, for the fast subscriber", result(streamed(200)))
	close(held)
	var slow []host.Event
	select {
	case slow = <-got:
	case <-ctx.Done():
		t.Fatal("the slow subscriber never got the end of the turn")
	}
	checkSeqs(t, slow, 1)
	end := slow[len(slow)-1].Seq
	for _, ev := range fast.list() {
		if ev.Seq == end && !result(streamed(200))(ev) {
			t.Fatalf("the fast subscriber's event %d is not the turn's end the slow one has", end)
		}
	}
	if end < 200 {
		t.Fatalf("the slow subscriber got %d events", len(slow))
	}
}
