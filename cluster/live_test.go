package cluster_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/tetherhq/tether/cluster"
	"github.com/tetherhq/tether/host"
)

// oneSession runs NATS, an agent and a client with one session started,
// and counts the events stream's consumers.
func oneSession(t *testing.T) (*natsServer, *cluster.Client, cluster.SessionInfo, func() int) {
	t.Helper()
	ns := newNATS(t, nil)
	newAgent(t, ns.URL(), "a1", 2)
	c := newClient(t, ns.URL())
	consumers := eventConsumers(t, ns.URL())
	info := mustStart(testCtx(t), t, c, nil)
	return ns, c, info, consumers
}

// A reader that has read what the stream held drops its consumer and
// follows the messages the stream republishes: the server walks no
// stream for it (the cost that grew with the square of the sessions),
// and its subscribers still get every event once, in order; one that
// joins later is read from the stream, then goes live too.
func TestCaughtUpReaderHoldsNoConsumer(t *testing.T) {
	ns, c, info, consumers := oneSession(t)
	f := follow(t, c, info.ID, 0)
	send(t, c, info.ID, "apples")
	f.wait(t, "the first turn", result("echo: apples"))
	waitFor(t, "the reader following live, without a consumer", func() bool { return consumers() == 0 })
	send(t, c, info.ID, "flood 300")
	f.wait(t, "the flood", result(streamed(300)))
	checkSeqs(t, f.list(), 1)
	if n := consumers(); n != 0 {
		t.Errorf("%d consumers while the only reader follows live, want 0", n)
	}
	// Another client's subscriber, from the middle of the session.
	mark := f.list()[len(f.list())/2].Seq
	c2 := newClient(t, ns.URL())
	late := follow(t, c2, info.ID, mark)
	late.wait(t, "the rest of the flood", result(streamed(300)))
	waitFor(t, "the late reader following live too", func() bool { return consumers() == 0 })
	send(t, c, info.ID, "pears")
	for _, fl := range []*follower{f, late} {
		fl.wait(t, "the turn after", result("echo: pears"))
	}
	if n := consumers(); n != 0 {
		t.Errorf("%d consumers after a turn followed live, want 0", n)
	}
	checkSeqs(t, f.list(), 1)
	checkSeqs(t, late.list(), mark+1)
	if n := cluster.LiveFallbacks(c) + cluster.LiveFallbacks(c2); n != 0 {
		t.Errorf("%d fallbacks to a consumer with nothing lost, want 0", n)
	}
}

// A live reader too slow for its buffer loses republished messages on
// the way (NATS drops them): it notices (the previous-sequence header,
// or the stall watch when nothing follows) and reads them from the
// stream. Its subscriber gets every event once, in order, and no resync.
func TestLiveReaderMissesNothing(t *testing.T) {
	cluster.SetLiveBuffer(t, 4)
	ctx := testCtx(t)
	ns, c, info, consumers := oneSession(t)
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	hold := make(chan struct{})
	var holding atomic.Bool
	got := make(chan []host.Event, 1)
	go func() {
		var evs []host.Event
		defer func() { got <- evs }()
		for ev, err := range cluster.EventsAlone(rctx, c, info.ID, 0) {
			if err != nil {
				t.Errorf("the reader: %v", err)
				return
			}
			evs = append(evs, ev)
			if holding.Load() {
				<-hold // an event of the flood, taken live
				holding.Store(false)
			}
			if result("echo: plums")(ev) {
				return
			}
		}
	}()
	send(t, c, info.ID, "apples")
	waitFor(t, "the reader following live", func() bool { return consumers() == 0 })
	holding.Store(true) // the reader waits for the feed: it holds at the next event
	// The reader holds while a flood and a turn are stored: its buffer
	// of 4 overflows.
	f := follow(t, newClient(t, ns.URL()), info.ID, 0)
	send(t, c, info.ID, "flood 2000")
	send(t, c, info.ID, "pears")
	f.wait(t, "the flood and the turn after it stored", result("echo: pears"))
	close(hold)
	send(t, c, info.ID, "plums")
	var evs []host.Event
	select {
	case evs = <-got:
	case <-ctx.Done():
		t.Fatal("the reader never got the last turn")
	}
	checkSeqs(t, evs, 1)
	pears := func(evs []host.Event) uint64 {
		for _, ev := range evs {
			if result("echo: pears")(ev) {
				return ev.Seq
			}
		}
		return 0
	}
	if a, b := pears(evs), pears(f.list()); a == 0 || a != b {
		t.Fatalf("the held reader has the second turn's end at %d, the other subscriber at %d", a, b)
	}
	if n := cluster.LiveFallbacks(c); n == 0 {
		t.Error("the reader lost messages on its live feed and never read the stream")
	}
}

// Under the documented permissions a reader follows live; under those
// of earlier releases (serve's user may not subscribe to the live
// subjects) it sees the refusal and keeps its consumer: every event
// still arrives once, in order, with no wait for a feed that never comes.
// Either way, its events end with ErrClosed when the connection closes.
func TestLiveFeedPermissions(t *testing.T) {
	doc, err := os.ReadFile("testdata/permissions.conf")
	if err != nil {
		t.Fatal(err)
	}
	const right = `, "tether.v1.live.>"`
	if !bytes.Contains(doc, []byte(right)) {
		t.Fatal("the documented permissions no longer let serve follow live")
	}
	old := filepath.Join(t.TempDir(), "old.conf")
	if err := os.WriteFile(old, bytes.Replace(doc, []byte(right), nil, 1), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, conf string
		live       bool
	}{{"documented", "testdata/permissions.conf", true}, {"earlier", old, false}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testCtx(t)
			ns := permissionedNATSFrom(t, tc.conf)
			agent := nats.UserInfo("agent", "agent-secret")
			newAgent(t, ns.URL(), "a1", 2, agent)
			c := newClient(t, ns.URL(), nats.UserInfo("serve", "serve-secret"))
			consumers := eventConsumers(t, ns.URL(), agent)
			info := mustStart(ctx, t, c, nil)
			f := follow(t, c, info.ID, 0)
			send(t, c, info.ID, "apples")
			f.wait(t, "a turn", result("echo: apples"))
			if tc.live {
				waitFor(t, "the reader following live", func() bool { return consumers() == 0 })
			}
			send(t, c, info.ID, "flood 300")
			f.wait(t, "the flood", result(streamed(300)))
			checkSeqs(t, f.list(), 1)
			if n := consumers(); tc.live != (n == 0) {
				t.Errorf("%d consumers for one reader (following live: %v)", n, tc.live)
			}
			if n := cluster.LiveFallbacks(c); n != 0 {
				t.Errorf("%d fallbacks from the live feed, want 0", n)
			}
			// The client's connection closed under it (one the caller
			// passed in, ClientOptions.Conn, closed by the caller): the
			// subscriber gets ErrClosed, following live or reading with
			// a consumer; its events never just stop.
			cluster.CloseConn(c)
			if err := f.end(t); !errors.Is(err, cluster.ErrClosed) {
				t.Fatalf("the events ended with %v, want cluster.ErrClosed", err)
			}
		})
	}
}
