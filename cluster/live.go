package cluster

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tetherhq/tether/host"
	"github.com/tetherhq/tether/internal/jsapi"
)

// A reader that has caught up follows the session live, without a
// consumer.
//
// A JetStream consumer filtered on one session finds its next message by
// walking the stream's messages from where it last looked: with many
// sessions streaming at once, every consumer walks every session's
// messages, so the server's work grows with the square of the sessions
// (seen as most of its CPU, and the latency, in BenchmarkClusterSteady).
// So the events stream republishes each message once stored (StreamConfig
// RePublish: on subjectLive + its subject, with its stream sequence and
// the sequence of the previous message on the same subject), and a reader
// that has read everything the stream held (its consumer's pending count
// at 0) drops its consumer and takes the republished messages instead:
// one core NATS delivery each. They are the stream's own messages, in
// its order; a core subscription may still lose some (a reader too slow
// for its buffer, a reconnect), which the previous-sequence header
// shows: the reader then goes back to a consumer from the first message
// it may have missed. An event-number gap seen live does the same, and
// only a consumer may report it as a gap (host.ResyncError). The stall
// watch covers a last message lost with nothing after it.
//
// Readers need the right to subscribe to subjectLive+">" (docs/cluster.md,
// "NATS permissions"); without it, or with a stream that does not
// republish, nothing arrives on the subscription and they keep their
// consumers, as before. Nobody may publish there: the server's republish
// does not need the right.
const subjectLive = subjectPrefix + "live."

// liveBuffer and liveBytes bound the republished messages a reader holds
// before it takes them; past either NATS drops them, and the reader
// notices the gap and reads them from the stream. liveBuffer is a
// variable for tests (SetLiveBuffer).
var liveBuffer = 1024

const liveBytes = 8 << 20

// errLive: readEvents caught up; the caller follows r.live.
var errLive = errors.New("cluster: reader caught up")

// errLiveGap: a republished message may be missing; the caller reads from
// r.resume with a consumer.
var errLiveGap = errors.New("cluster: gap in republished messages")

// livePublish is the events stream's republish setting.
func livePublish() *jetstream.RePublish {
	return &jetstream.RePublish{Source: subjectPrefix + ">", Destination: subjectLive + ">"}
}

// liveFeed is a reader's subscription to a session's republished
// messages. NATS holds what the reader has yet to take (within
// liveBuffer and liveBytes) and hands it over one message at a time.
type liveFeed struct {
	sub  *nats.Subscription
	ch   chan *nats.Msg
	done chan struct{}
	once sync.Once
	seen bool // something arrived on it
}

// subscribeLive subscribes to session id's republished messages, or
// returns nil when the events stream does not republish them or the user
// may not subscribe. The subscription is in place on the server when it
// returns, so everything stored afterwards arrives on it. The flush that
// makes sure of it waits at most a lapse, and not past ctx.
func (c *Client) subscribeLive(ctx context.Context, id string) *liveFeed {
	info := c.b.events.CachedInfo()
	if info == nil || info.Config.RePublish == nil || *info.Config.RePublish != *livePublish() {
		return nil
	}
	f := &liveFeed{ch: make(chan *nats.Msg), done: make(chan struct{})}
	// The server refuses a subscription the user has no right to before
	// the flush that follows it; a refusal from before this one is no
	// answer to it.
	since := jsapi.MarkOf(c.b.nc)
	// Not SubscribeSync: its channel has the connection's SubChanLen
	// slots (64k, 512 KiB for every reader).
	sub, err := c.b.nc.Subscribe(subjectLive+"*."+id, func(m *nats.Msg) {
		select {
		case f.ch <- m:
		case <-f.done:
		}
	})
	if err != nil {
		return nil
	}
	f.sub = sub
	if err := sub.SetPendingLimits(liveBuffer, liveBytes); err != nil {
		f.close()
		return nil
	}
	fctx, cancel := context.WithTimeout(ctx, c.b.ttl)
	defer cancel()
	if err := c.b.nc.FlushWithContext(fctx); err != nil || since.Refusal(sub.Subject) != nil {
		f.close()
		return nil
	}
	return f
}

func (f *liveFeed) close() {
	if f != nil {
		f.once.Do(func() {
			close(f.done)
			_ = f.sub.Unsubscribe()
		})
	}
}

// liveMeta reads a republished message's stream sequence, original
// subject and the stream sequence of the previous message on that
// subject (0: none).
func liveMeta(m *nats.Msg) (seq uint64, subject string, prev uint64, ok bool) {
	if m.Header.Get(jetstream.StreamHeader) != StreamEvents {
		return 0, "", 0, false
	}
	seq, err1 := strconv.ParseUint(m.Header.Get(jetstream.SequenceHeader), 10, 64)
	prev, err2 := strconv.ParseUint(m.Header.Get(jetstream.LastSequenceHeader), 10, 64)
	subject = m.Header.Get(jetstream.SubjectHeader)
	if err1 != nil || err2 != nil || seq == 0 || prev >= seq || subject == "" {
		return 0, "", 0, false
	}
	return seq, subject, prev, true
}

// lastOf is r.last's slot for subject: the session's events or its
// markers; nil for any other subject.
func (r *eventReader) lastOf(subject string) *uint64 {
	switch subject {
	case subjectEvents + r.id:
		return &r.last[0]
	case subjectGone + r.id:
		return &r.last[1]
	}
	return nil
}

// saw records that the reader has the stream's message seq on subject.
func (r *eventReader) saw(subject string, seq uint64) {
	if last := r.lastOf(subject); last != nil {
		*last = max(*last, seq)
	}
}

// missed reports whether a message on subject may be missing before one
// whose previous message on that subject is prev, and from which stream
// sequence to read again if so.
func (r *eventReader) missed(subject string, prev uint64) (bool, uint64) {
	last := r.lastOf(subject)
	switch {
	case last == nil:
		return false, 0 // not the session's: take skips it
	case *last == 0:
		// None read on this subject since the reader began: the previous
		// one must be from before that.
		return prev >= r.from, r.from
	}
	return prev != *last, *last + 1
}

// readLive follows the session's republished messages after readEvents
// caught up. It returns nil when done, errLiveGap (read again from
// r.resume), errStalled, or an error to yield.
func (c *Client) readLive(ctx context.Context, filter string, r *eventReader, yield func(host.Event, error) bool) error {
	f := r.live
	nctx, wake := context.WithCancel(ctx)
	defer wake()
	stalled := c.watchStall(ctx, filter, r, wake)
	defer stalled.stop()
	c.log.Debug("events: following live", "session", r.id, "from", r.next, "expect", r.expect)
	closed := time.NewTicker(c.b.ttl)
	defer closed.Stop()
	for {
		var m *nats.Msg
		select {
		case m = <-f.ch:
		case <-closed.C:
			if c.b.nc.IsClosed() {
				return ErrClosed
			}
			continue
		case <-nctx.Done():
			if stalled.fired.Load() {
				c.liveFallbacks.Add(1)
				if !f.seen {
					// Nothing ever came: the feed does not work here
					// (a refusal we could not see); do without it.
					f.close()
					r.live = nil
				}
				return errStalled
			}
			return nil
		}
		f.seen = true
		seq, subject, prev, ok := liveMeta(m)
		if !ok || seq < r.next {
			continue
		}
		if gap, from := r.missed(subject, prev); gap {
			c.log.Debug("events: republished message missed; reading the stream", "session", r.id, "from", from)
			r.resume = from
			c.liveFallbacks.Add(1)
			return errLiveGap
		}
		evs, err := r.take(ctx, subject, m.Header, m.Data)
		var re *host.ResyncError
		if errors.As(err, &re) {
			// Perhaps a message of the other subject went missing: a
			// consumer, from the first one either subject may miss, says.
			r.resume = r.earliestUnread()
			c.liveFallbacks.Add(1)
			return errLiveGap
		}
		r.saw(subject, seq)
		r.next = seq + 1
		r.got.Store(seq)
		r.exp.Store(r.expect)
		if err != nil {
			return err
		}
		if !deliver(evs, yield) {
			return nil
		}
	}
}

// earliestUnread is the first stream sequence a lost republished message
// may have had: after the last one read on each of the session's two
// subjects (from where the reader began, on one with none read).
func (r *eventReader) earliestUnread() uint64 {
	from := r.next
	for _, last := range r.last {
		if last == 0 {
			return r.from
		}
		from = min(from, last+1)
	}
	return from
}
