package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"maps"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tetherhq/tether/host"
	"github.com/tetherhq/tether/internal/jsapi"
)

// Where a session's events live, and who may write them.
//
// The agent that owns a session publishes its events on subjectEvents+id,
// each message stamped with hdrAgent (its id). A client that finds the
// agent gone appends the "disconnected" marker on subjectGone+id, a
// subject agents never use, so that a deployment can let serve processes
// publish markers and nothing else (docs/cluster.md, "NATS
// permissions"). Both subjects are in StreamEvents and share one
// numbering: every publish on either is fenced on the stream's last
// message matching sessionFilter(id), so no number is used twice.
const (
	// subjectGone + id: "disconnected" markers appended by clients.
	subjectGone = subjectPrefix + "gone."
	// hdrAgent names the agent that published an event.
	hdrAgent = "Tether-Agent"
)

// sessionFilter matches a session's events and markers (and nothing else
// in StreamEvents).
func sessionFilter(id string) string { return subjectPrefix + "*." + id }

// Skipped returns how many messages this client's event readers skipped
// since it was created: messages on a session's subjects that do not
// decode, or that the session's owner did not publish (see Events).
func (c *Client) Skipped() uint64 { return c.skipped.Load() }

// Events yields the session's events with Seq > after, in order, live,
// from the events stream (whichever agent runs the session, and across
// failovers), until the session ends (its EventClosed is the last value)
// or ctx is done. The contract is host.Session.Events': when events after
// `after` are no longer kept (the stream's retention) or one is missing,
// it yields a *host.ResyncError (errors.Is(err, host.ErrResync)) and ends;
// take Snapshot and subscribe again after its Seq.
//
// A message it cannot use is skipped, never fatal: one that does not
// decode (no or a bad Tether-Seq or Tether-Part header, not an event, an
// event whose seq differs from its header's), one on the event subject
// not stamped by an agent that owns or owned the session (the registry's
// Agent and Owners), a marker that is not a "disconnected" state event at
// the next number. Skips are counted (Client.Skipped) and logged once per
// subscription (the first one; the count at Debug level when it ends). So
// a forged event far ahead of the stream's numbers is not mistaken for a
// gap.
//
// While it runs, the session's agent is watched: when it dies, a
// "disconnected" state event is appended for it (once, whoever notices
// first), so that a UI following the events does not show "thinking"
// forever. The iterator is single-use; the consumer it reads with is
// deleted from the server whichever way it ends. This client's
// subscribers of one session share one consumer (tail.go): an event's
// Data may be the same slice for all of them; do not modify it.
func (c *Client) Events(ctx context.Context, id string, after uint64) iter.Seq2[host.Event, error] {
	return c.sharedEvents(ctx, id, after)
}

func (c *Client) events(ctx context.Context, id string, after uint64, watch bool) iter.Seq2[host.Event, error] {
	return func(yield func(host.Event, error) bool) {
		if !validID(id) {
			yield(host.Event{}, &CommandError{Code: codeNoSession, Message: "bad session id"})
			return
		}
		rec, _, err := c.record(ctx, id)
		if err != nil {
			yield(host.Event{}, err)
			return
		}
		filter := sessionFilter(id)
		r := &eventReader{c: c, id: id, expect: after + 1}
		r.setOwners(rec)
		defer r.summary()
		if watch {
			c.watch(id, 1)
			defer c.watch(id, -1)
		}
		// The live feed first: what is stored after it is in place
		// arrives on it, what was stored before comes by consumer.
		r.live = c.subscribeLive(ctx, id)
		defer r.live.close()
		start, err := untilAnswered(ctx, c.b, c.log.With("session", id, "for", "seek"), func(ctx context.Context) (uint64, error) {
			return c.b.seek(ctx, filter, after)
		})
		if err != nil {
			yield(host.Event{}, err)
			return
		}
		r.from = start
		for {
			err := c.readEvents(ctx, filter, start, r, yield)
			if errors.Is(err, errLive) {
				err = c.readLive(ctx, filter, r, yield)
				if errors.Is(err, errLiveGap) {
					start = r.resume
					continue
				}
			}
			if errors.Is(err, errStalled) {
				start = r.next // a new consumer, from where this one stopped
				continue
			}
			var re *host.ResyncError
			if errors.As(err, &re) && start > 1 && !r.rescanned {
				r.parts = nil
				// The binary search assumes the stream's numbers grow;
				// messages that are not the agent's can mislead it. Read
				// again from the first message kept before calling a gap.
				r.rescanned = true
				start, r.from = 1, 1
				continue
			}
			if err != nil {
				yield(host.Event{}, err)
			}
			return
		}
	}
}

// consumer makes a reader's ordered consumer, trying again while
// JetStream cannot answer: a reader makes one mid-stream (it missed a
// live message, its consumer stalled), and while a node of the cluster
// is lost its API may not answer for seconds (the meta leader's
// election), which the reader's subscriber should not see.
//
// Each attempt names a new consumer (readerPrefix: this release's
// readers read batches, batch.go). The cluster places a consumer before
// it learns that a lost node is gone: one placed there never answers,
// and asking again under its name only updates that one, on the node
// that is still down (seen: a reader waiting for as long as the node
// stayed lost). One that never ran is removed when its node comes back
// (InactiveThreshold).
func (c *Client) consumer(ctx context.Context, id string, cfg jetstream.OrderedConsumerConfig) (jetstream.Consumer, error) {
	return untilAnswered(ctx, c.b, c.log.With("session", id, "for", "consumer"), func(ctx context.Context) (jetstream.Consumer, error) {
		cfg.NamePrefix = readerPrefix()
		return c.b.events.OrderedConsumer(ctx, cfg)
	})
}

// readerAPIs are the JetStream API subjects a reader (and a registry
// read) requests: a consumer, a message by number or the last of a
// subject.
var readerAPIs = []string{"$JS.API.CONSUMER.", "$JS.API.DIRECT.GET.", "$JS.API.STREAM.MSG.GET."}

// unanswered reports a reader's request that JetStream could not answer
// for now (transient), not one the server refused: a request the user has
// no right to make goes unanswered too, but the server says so on the
// connection (nats.ErrPermissionViolation naming the subject) after since,
// the Mark taken as the request began.
func unanswered(since jsapi.Mark, err error) bool {
	if v := since.Violation(); v != nil {
		for _, api := range readerAPIs {
			if strings.Contains(v.Error(), `"`+api) {
				return false
			}
		}
	}
	return jsapi.Transient(err)
}

// readEvents reads a session's messages from stream sequence start into
// r, yielding events; it returns nil when done, else the error to yield
// (a *host.ResyncError is yielded by the caller, or read again).
func (c *Client) readEvents(ctx context.Context, filter string, start uint64, r *eventReader, yield func(host.Event, error) bool) error {
	cons, err := c.consumer(ctx, r.id, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{filter}, DeliverPolicy: jetstream.DeliverByStartSequencePolicy,
		OptStartSeq: start, InactiveThreshold: time.Minute,
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	// The ordered consumer leaves its server-side consumer behind when
	// stopped (until InactiveThreshold); delete it whichever way this
	// ends, so that subscriptions never pile up on the server.
	defer c.b.deleteConsumer(cons)
	it, err := cons.Messages(jetstream.PullMaxMessages(256))
	if err != nil {
		return err
	}
	// The iterator is stopped by this goroutine once Next has returned,
	// not from another while Next runs: an ordered consumer that
	// recreates itself inside Next (after a NATS restart, a stall) checks
	// for Stop before it makes its new subscription, not after, so a Stop
	// in between stops the old one and leaves the new one, with its two
	// goroutines, alive for as long as the connection (seen as a leak at
	// the end of the cluster tests). Next is woken by its ctx instead
	// (nctx: the caller's, or the stall watch's cancel).
	defer it.Stop()
	nctx, wake := context.WithCancel(ctx)
	defer wake()
	returned := make(chan struct{})
	defer close(returned)
	// Only a Next that does not return within a lapse of being woken (a
	// recreation retrying against a bus that is down ignores its ctx) is
	// stopped from here: the window above is far narrower than a lapse.
	context.AfterFunc(nctx, func() {
		t := time.NewTimer(c.b.ttl)
		defer t.Stop()
		select {
		case <-returned:
		case <-t.C:
			it.Stop()
		}
	})
	c.log.Debug("events: reading", "session", r.id, "from", start, "expect", r.expect)
	r.next = start
	r.exp.Store(r.expect)
	stalled := c.watchStall(ctx, filter, r, wake)
	defer stalled.stop()
	for {
		m, err := it.Next(jetstream.NextContext(nctx))
		if err != nil {
			if stalled.fired.Load() {
				return errStalled
			}
			if ctx.Err() != nil {
				return nil
			}
			if errors.Is(err, nats.ErrConnectionClosed) || c.b.nc.IsClosed() {
				return ErrClosed
			}
			if errors.Is(err, jetstream.ErrMsgIteratorClosed) {
				// Closed under us, not by this reader: the ordered
				// consumer could not make its next one (its Messages
				// failed while a node was lost). The session has not
				// ended, so neither may the subscriber's events: a new
				// consumer from where this one stopped, after a pause
				// that grows while consumers keep closing at once.
				c.log.Debug("events: consumer closed under the reader; starting a new one", "session", r.id, "after", r.next-1, "err", err)
				if r.next == start {
					r.closings++
				} else {
					r.closings = 0
				}
				select {
				case <-ctx.Done():
					return nil
				case <-time.After(min(50*time.Millisecond<<min(r.closings, 8), c.b.ttl)):
				}
				return errStalled
			}
			// Missed heartbeats while NATS restarts: the ordered
			// consumer recreates itself; carry on.
			c.log.Debug("events", "session", r.id, "err", err)
			continue
		}
		md, merr := m.Metadata()
		if merr == nil {
			r.next = md.Sequence.Stream + 1
			r.got.Store(md.Sequence.Stream)
			r.saw(m.Subject(), md.Sequence.Stream)
		}
		evs, err := r.take(ctx, m.Subject(), m.Headers(), m.Data())
		r.exp.Store(r.expect)
		if err != nil {
			return err
		}
		if !deliver(evs, yield) {
			return nil
		}
		if merr == nil && md.NumPending == 0 && r.live != nil {
			return errLive // the consumer goes; the live feed follows
		}
	}
}

// deliver yields evs; false when the subscriber is done or the session
// ended.
func deliver(evs []host.Event, yield func(host.Event, error) bool) bool {
	for _, ev := range evs {
		if !yield(ev, nil) || ev.Kind == host.EventClosed {
			return false
		}
	}
	return true
}

// eventReader turns a session's messages into its events, in order,
// skipping what it cannot use.
type eventReader struct {
	c      *Client
	id     string
	expect uint64 // the next event's seq

	owners    map[string]bool // the session's agents, current and earlier
	refreshed time.Time       // when owners was last read

	parts   []byte // an event in parts, being joined
	partSeq uint64
	partBy  string

	skipped   int
	first     string // why the first skipped message was
	rescanned bool   // read again from the start once, before a gap
	closings  int    // consumers closed under the reader in a row, none delivering

	// next is the stream sequence to read from when the consumer is
	// replaced; got, the last one read (for the stall watch).
	next uint64
	got  atomic.Uint64
	exp  atomic.Uint64 // expect, for the stall watch

	// The live feed (live.go): from is where reading began, last the
	// last stream sequence read on the event and the marker subject (0:
	// none yet), resume where to read again after a gap in the feed.
	live   *liveFeed
	from   uint64
	last   [2]uint64
	resume uint64
}

func (r *eventReader) expectNow() uint64 { return r.exp.Load() }

// errStalled: the consumer stopped delivering while the stream holds
// newer messages of the session; readEvents is called again from r.next.
var errStalled = errors.New("cluster: event consumer stalled")

// stallWatch wakes a reader's Next when its consumer has delivered
// nothing for two lapses while the stream holds newer messages of the
// session. An ordered consumer normally recreates itself when its server
// goes; after the loss of the node that held it in a clustered stream, it
// was seen waiting for good. The reader then starts a new one where it
// stopped.
type stallWatch struct {
	fired atomic.Bool
	done  chan struct{}
}

func (sw *stallWatch) stop() { close(sw.done) }

func (c *Client) watchStall(ctx context.Context, filter string, r *eventReader, wake context.CancelFunc) *stallWatch {
	sw := &stallWatch{done: make(chan struct{})}
	from := r.next
	go func() {
		t := time.NewTicker(2 * c.b.ttl)
		defer t.Stop()
		seen := r.got.Load()
		quiet := 0 // ticks without a message
		for {
			select {
			case <-sw.done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
			cur := r.got.Load()
			if cur != seen {
				seen, quiet = cur, 0
				continue
			}
			quiet++
			// The registry (the client's copy: no request) says whether
			// the agent published past what was read; only then is the
			// stream asked. The copy is kept by a watcher that a busy
			// machine can leave behind, so every third quiet tick the
			// stream is asked all the same: a stalled consumer is never
			// left waiting on a stale copy.
			if e, ok := c.sessCache.get(r.id); ok && quiet%3 != 0 {
				var rec SessionInfo
				if decode(BucketSessions+"."+r.id, e.value, MaxRecordSize, &rec) == nil && rec.Seq < r.expectNow() {
					continue
				}
			}
			gctx, cancel := context.WithTimeout(ctx, c.b.ttl)
			last, err := c.b.events.GetLastMsgForSubject(gctx, filter)
			cancel()
			if err == nil && last.Sequence > cur && last.Sequence >= from {
				c.log.Debug("events: consumer stalled; starting a new one", "session", r.id, "after", cur)
				sw.fired.Store(true)
				wake()
				return
			}
		}
	}()
	return sw
}

func (r *eventReader) setOwners(rec SessionInfo) {
	r.owners = map[string]bool{}
	if rec.Agent != "" {
		r.owners[rec.Agent] = true
	}
	for _, a := range rec.Owners {
		r.owners[a] = true
	}
	r.refreshed = time.Now()
}

// owns reports whether agent runs or ran the session. An unknown name
// reads the registry again (a takeover since the last read) when the
// event is the next one, else at most once a heartbeat: forged messages
// cost few reads.
func (r *eventReader) owns(ctx context.Context, agent string, next bool) bool {
	if agent == "" {
		return false
	}
	if r.owners[agent] {
		return true
	}
	if !next && time.Since(r.refreshed) < r.c.b.ttl/3 {
		return false
	}
	rec, _, err := r.c.record(ctx, r.id)
	if err != nil {
		return false
	}
	r.setOwners(rec)
	return r.owners[agent]
}

func (r *eventReader) skip(subject, why string) {
	r.skipped++
	r.c.skipped.Add(1)
	if r.skipped == 1 {
		r.first = why
		r.c.log.Warn("skipping a message on a session's events (further ones are counted)", "session", r.id, "subject", subject, "reason", why)
	}
}

func (r *eventReader) summary() {
	if r.skipped > 1 {
		r.c.log.Debug("skipped messages on a session's events", "session", r.id, "count", r.skipped, "first", r.first)
	}
}

// take reads one message: the events it holds or completes with Seq >=
// r.expect (an event, the last part of one, or a batch: from the one
// numbered r.expect), nothing (a part, events before `after`, a skipped
// message), or a *host.ResyncError when an event of the session's agent
// is missing.
func (r *eventReader) take(ctx context.Context, subject string, h nats.Header, data []byte) ([]host.Event, error) {
	seq, perr := strconv.ParseUint(h.Get(hdrSeq), 10, 64)
	if perr != nil || seq == 0 {
		r.skip(subject, "no sequence header")
		return nil, nil
	}
	if seq < r.expect {
		return nil, nil // before `after` (or a part of one; a batch's last)
	}
	marker := subject == subjectGone+r.id
	first, count := seq, 1
	if b := h.Get(hdrBatch); b != "" {
		n, err := strconv.Atoi(b)
		if err != nil || n < 1 || n > maxBatchEvents || uint64(n) > seq || marker || h.Get(hdrPart) != "" {
			r.skip(subject, "bad batch header")
			return nil, nil
		}
		first, count = seq-uint64(n)+1, n
	}
	by := h.Get(hdrAgent)
	if !marker {
		if subject != subjectEvents+r.id {
			r.skip(subject, "unexpected subject")
			return nil, nil
		}
		if !r.owns(ctx, by, first <= r.expect) {
			r.skip(subject, "not published by the session's agent")
			return nil, nil
		}
	}
	if count > 1 {
		evs, err := decodeBatch(data, first, count)
		if err != nil {
			r.skip(subject, "not a batch of its numbers")
			return nil, nil
		}
		if first > r.expect {
			return nil, &host.ResyncError{After: r.expect - 1, Oldest: first, Latest: seq}
		}
		evs = evs[r.expect-first:]
		r.expect = seq + 1
		return evs, nil
	}
	if p := h.Get(hdrPart); p != "" {
		i, n, pok := parsePart(p)
		if !pok || marker {
			r.skip(subject, "bad part header")
			return nil, nil
		}
		if i == 1 {
			r.parts, r.partSeq, r.partBy = nil, seq, by
		}
		if r.partSeq != seq || r.partBy != by || (i > 1 && r.parts == nil) {
			r.skip(subject, "a part of no event")
			return nil, nil
		}
		r.parts = append(r.parts, data...)
		if i < n {
			return nil, nil
		}
		data, r.parts = r.parts, nil
	}
	var ev host.Event
	if decodeEvent(data, &ev) != nil || ev.Seq != seq {
		r.skip(subject, "not an event of its sequence number")
		return nil, nil
	}
	if marker {
		var st host.StateInfo
		if seq != r.expect || ev.Kind != host.EventState || json.Unmarshal(ev.Data, &st) != nil || st.State != host.StateDisconnected.String() {
			r.skip(subject, "not a disconnected marker at the next number")
			return nil, nil
		}
	}
	if seq != r.expect {
		// The agent's own numbering has a gap: retention dropped events
		// here (or a publisher of an earlier release skipped some).
		return nil, &host.ResyncError{After: r.expect - 1, Oldest: seq, Latest: seq}
	}
	r.expect = seq + 1
	return []host.Event{ev}, nil
}

// maxScan bounds the messages lastEvent reads when the session's last
// message is not an event of its agents.
const maxScan = 20000

// lastSeq returns the number of the session's last event or marker in
// the stream that readers accept, and the stream sequence of its last
// message of any kind (what a publish fences on); 0, 0 when it has none.
func (b *bus) lastSeq(ctx context.Context, id string) (seq, stream uint64, err error) {
	owners := map[string]bool{}
	if e, err := b.sessions.Get(ctx, id); err == nil {
		var rec SessionInfo
		if decode(BucketSessions+"."+id, e.Value(), MaxRecordSize, &rec) == nil {
			owners[rec.Agent] = true
			for _, a := range rec.Owners {
				owners[a] = true
			}
		}
	}
	return b.lastEvent(ctx, id, func(a string) bool { return a != "" && owners[a] }, 0, 0)
}

// lastEvent is lastSeq for a publisher that knows the session's
// messages up to stream sequence from, numbered up to fromSeq: when the
// last message is not an event of one of the agents owns accepts, it
// reads the messages after from (at most maxScan), so that junk, a
// forged number or a marker out of place never sets the numbering.
func (b *bus) lastEvent(ctx context.Context, id string, owns func(string) bool, from, fromSeq uint64) (seq, stream uint64, err error) {
	filter := sessionFilter(id)
	last, err := b.events.GetLastMsgForSubject(ctx, filter)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return fromSeq, 0, nil
	}
	if err != nil {
		return 0, 0, err
	}
	if last.Sequence <= from {
		return fromSeq, last.Sequence, nil
	}
	if n, ok := agentEvent(id, last.Subject, last.Header, owns); ok {
		return n, last.Sequence, nil
	}
	seq = fromSeq
	pos := from + 1
	for range maxScan {
		if pos > last.Sequence {
			break
		}
		m, err := b.events.GetMsg(ctx, pos, jetstream.WithGetMsgSubject(filter))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			break
		}
		if err != nil {
			return 0, 0, err
		}
		pos = m.Sequence + 1
		if n, ok := agentEvent(id, m.Subject, m.Header, owns); ok && n > seq {
			seq = n
		} else if n, ok := markerEvent(id, m.Subject, m.Header, m.Data); ok && n == seq+1 {
			seq = n
		}
	}
	return seq, last.Sequence, nil
}

// agentEvent reports whether a message is an event published by an agent
// owns accepts, and its number.
func agentEvent(id, subject string, h nats.Header, owns func(string) bool) (uint64, bool) {
	if subject != subjectEvents+id || !owns(h.Get(hdrAgent)) {
		return 0, false
	}
	n, err := strconv.ParseUint(h.Get(hdrSeq), 10, 64)
	return n, err == nil && n > 0
}

// markerEvent reports whether a message is a well-formed "disconnected"
// marker, and its number.
func markerEvent(id, subject string, h nats.Header, data []byte) (uint64, bool) {
	if subject != subjectGone+id || h.Get(hdrPart) != "" {
		return 0, false
	}
	n, err := strconv.ParseUint(h.Get(hdrSeq), 10, 64)
	if err != nil || n == 0 {
		return 0, false
	}
	if seq, ok := disconnectedEvent(data); !ok || seq != n {
		return 0, false
	}
	return n, true
}

// disconnectedEvent reports whether data is a "disconnected" state event,
// and its number.
func disconnectedEvent(data []byte) (uint64, bool) {
	var ev host.Event
	var st host.StateInfo
	if json.Unmarshal(data, &ev) != nil || ev.Kind != host.EventState ||
		json.Unmarshal(ev.Data, &st) != nil || st.State != host.StateDisconnected.String() {
		return 0, false
	}
	return ev.Seq, true
}

// unstamped reports whether a session whose last accepted number is seq
// (0: none) has events nonetheless: events no agent stamped, which a
// release before the wire revisions (2f828d2, without Tether-Agent)
// wrote. Numbering after them cannot be told from numbering after junk,
// and from 1 would store their numbers twice, so nothing is appended.
func (b *bus) unstamped(ctx context.Context, id string, seq uint64) bool {
	if seq > 0 {
		return false
	}
	_, err := b.events.GetLastMsgForSubject(ctx, subjectEvents+id)
	return err == nil
}

// deleteConsumer deletes an ordered consumer's current server-side
// consumer (the library only stops reading from it).
func (b *bus) deleteConsumer(cons jetstream.Consumer) {
	info := cons.CachedInfo()
	if info == nil {
		return
	}
	if !b.nc.IsConnected() {
		return // NATS is away: InactiveThreshold removes it
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	// A failure leaves it to InactiveThreshold.
	_ = b.js.DeleteConsumer(ctx, StreamEvents, info.Name)
}

// seek finds the stream sequence to read a session's events (filter:
// sessionFilter) with Seq > after from: the stream keeps a session's events in order, so a binary
// search over direct gets finds it in a few requests, however many
// events there are. When the oldest event kept is already past after+1
// it returns the oldest's: the caller sees the gap and resyncs.
func (b *bus) seek(ctx context.Context, filter string, after uint64) (uint64, error) {
	if after == 0 {
		return 1, nil
	}
	seqOf := func(m *jetstream.RawStreamMsg) uint64 {
		s, _ := strconv.ParseUint(m.Header.Get(hdrSeq), 10, 64)
		return s
	}
	last, err := b.events.GetLastMsgForSubject(ctx, filter)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return 1, nil
	}
	if err != nil {
		return 0, err
	}
	if seqOf(last) <= after {
		return last.Sequence + 1, nil
	}
	lo, hi := uint64(1), last.Sequence // the answer is in [lo, hi]
	for lo < hi {
		mid := lo + (hi-lo)/2
		m, err := b.events.GetMsg(ctx, mid, jetstream.WithGetMsgSubject(filter))
		if err != nil {
			return 0, err
		}
		if seqOf(m) > after {
			hi = mid
		} else {
			lo = m.Sequence + 1
		}
	}
	return lo, nil
}

// watch counts the subscribers of a session: the monitor checks the
// agents of watched sessions.
func (c *Client) watch(id string, d int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.watched[id] += d
	if c.watched[id] <= 0 {
		delete(c.watched, id)
	}
}

// monitor judges, every heartbeat, the agents of watched sessions (the
// rule: liveness.go), and marks the sessions of gone ones disconnected.
// Agents that missed a heartbeat are pinged first, so that one whose
// heartbeats the bus could not store is not taken for dead.
func (c *Client) monitor() {
	defer c.wg.Done()
	t := time.NewTicker(c.b.ttl / 3)
	defer t.Stop()
	owner := map[string]string{} // session → agent, as last read
	// marked: orphaned sessions whose "disconnected" event this client
	// has seen appended. A reap that marked the registry but could not
	// append the event (the tick's time ran out on a slow machine, the
	// events stream was electing a leader) is finished at a later tick:
	// otherwise the stream's last state would stay "idle" for good.
	marked := map[string]bool{}
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-t.C:
		}
		c.judge.connection(c.b.nc)
		c.mu.Lock()
		watched := make(map[string]bool, len(c.watched))
		for id := range c.watched {
			watched[id] = true
		}
		c.mu.Unlock()
		ctx, cancel := context.WithTimeout(c.ctx, c.b.ttl)
		agents, err := c.liveAgents(ctx)
		if err == nil {
			c.vouch(ctx, watched)
		}
		maps.DeleteFunc(owner, func(id, _ string) bool { return !watched[id] })
		maps.DeleteFunc(marked, func(id string, _ bool) bool { return !watched[id] })
		for id := range watched {
			if err != nil {
				break
			}
			if a, ok := owner[id]; ok && time.Since(c.judge.last(a)) < c.b.ttl {
				continue
			}
			r, rev, rerr := c.record(ctx, id)
			if rerr != nil {
				continue
			}
			owner[id] = r.Agent
			switch {
			case !r.Orphaned:
				delete(marked, id) // taken over: a new disconnection needs its own
			case !r.Ended && !marked[id]:
				marked[id] = c.appendMarker(id, r)
			}
			if r.Ended || r.Orphaned {
				continue
			}
			if r.Moving {
				// Handed over by a drain: no agent to judge, only
				// whether one with room is taking it.
				if stranded(r, agents, c.b.ttl) {
					marked[id] = c.reap(ctx, id, r, rev)
				}
				continue
			}
			if r.Agent != "" && c.gone(ctx, r) {
				marked[id] = c.reap(ctx, id, r, rev)
			}
		}
		cancel()
	}
}

// stranded reports whether a session a drain handed over waits with no
// agent to take it: past the heartbeat lapse with no live agent that has
// room, or past ten lapses whatever the agents say. An agent with room
// takes a handover at once, so a slow takeover is not shown as one.
func stranded(r SessionInfo, agents map[string]agentRecord, ttl time.Duration) bool {
	waited := time.Since(r.Updated)
	if waited > 10*ttl {
		return true
	}
	if waited < ttl {
		return false
	}
	for _, a := range agents {
		if a.Sessions < a.Capacity {
			return false
		}
	}
	return true
}

// reap marks a session of a dead agent disconnected: in the registry (at
// its revision, so one client does it) and with a "disconnected" state
// event appended on the session's marker subject (appendMarker). It
// reports whether the event is there: false when the registry was marked
// but the event could not be appended yet, which the monitor tries again.
func (c *Client) reap(ctx context.Context, id string, r SessionInfo, rev uint64) bool {
	if !c.markOrphaned(ctx, id, &r, rev) {
		return false // someone else did, or the session was taken over
	}
	return c.appendMarker(id, r)
}

// markOrphaned writes the registry entry r, read at revision rev, as
// orphaned and disconnected, and reports whether it was written: false
// when the entry changed since (an agent rewrote it, or another client
// marked it).
func (c *Client) markOrphaned(ctx context.Context, id string, r *SessionInfo, rev uint64) bool {
	r.State, r.Tasks = host.StateDisconnected.String(), 0
	r.Orphaned = true
	r.Updated = time.Now()
	if _, err := c.b.putSession(ctx, r, rev, false); err != nil {
		return false
	}
	c.noteReaped(id, r.Agent)
	c.log.Info("session has no agent; marked disconnected", "session", id, "agent", lastAgent(*r), "moving", r.Moving)
	return true
}

// appendMarker appends the "disconnected" state event of a session its
// registry entry r says is orphaned, numbered after the session's last
// message and fenced on it, so that it never takes a number an agent used,
// nor lands between events of an agent that took the session over. An
// agent that comes back fences its next event on what the stream holds,
// and numbers it after the marker. It reports whether the marker is there
// (or cannot be, for a session of a release that numbers nothing);
// false means try again. It has time of its own (a lapse), not what is
// left of the caller's.
func (c *Client) appendMarker(id string, r SessionInfo) bool {
	ctx, cancel := context.WithTimeout(c.ctx, c.b.ttl)
	defer cancel()
	lastSeq, lastStream, err := c.b.lastSeq(ctx, id)
	if err != nil {
		return false
	}
	if c.b.unstamped(ctx, id, lastSeq) {
		// Its numbers are not readable here: a marker would reuse one.
		c.log.Warn("a session of a release before f95a7ed: marked disconnected in the registry only", "session", id)
		return true
	}
	// One marker per disconnection: none after a marker (another client,
	// or this one, marked the session and nothing was published since).
	if marked, err := c.b.disconnectedAt(ctx, id, lastStream, ""); err != nil || marked {
		return err == nil
	}
	// Still orphaned after the stream was read: an agent that takes the
	// session back writes the registry before it publishes again
	// (announceBack), so its publish either fails this marker's fence or
	// finds the marker stored, and a marker never follows the agent's
	// return.
	if cur, _, err := c.record(ctx, id); err != nil || !cur.Orphaned {
		return err == nil
	}
	if loseOne(&c.failMarkers) {
		return false
	}
	msg := markerMsg(id, lastSeq+1, noAgentText(id, r))
	if _, err := c.b.js.PublishMsg(ctx, msg, jetstream.WithExpectLastSequenceForSubject(lastStream, sessionFilter(id))); err != nil {
		c.log.Debug("disconnected event not appended; tried again at the next look", "session", id, "err", err)
		return false
	}
	return true
}

// disconnectedAt reports whether the stream's message at sequence
// stream (the session's last, 0 for none) says the session is
// disconnected: a client's marker, or, when agent is not "", that agent's
// own "disconnected" state (announceBack; a state its CLI's end put in
// the journal counts too, which says as much). A disconnection gets one,
// not one per client that saw it or per agent that came back from it.
func (b *bus) disconnectedAt(ctx context.Context, id string, stream uint64, agent string) (bool, error) {
	if stream == 0 {
		return false, nil
	}
	m, err := b.events.GetMsg(ctx, stream)
	switch {
	case errors.Is(err, jetstream.ErrMsgNotFound):
		return false, nil // gone from the stream since (its limits)
	case err != nil:
		return false, err
	case m.Subject == subjectGone+id:
		return true, nil
	case agent == "" || m.Subject != subjectEvents+id || m.Header.Get(hdrAgent) != agent ||
		m.Header.Get(hdrPart) != "" || m.Header.Get(hdrBatch) != "":
		return false, nil
	}
	_, ok := disconnectedEvent(m.Data)
	return ok, nil
}

// markerMsg is the "disconnected" state event numbered seq of session id,
// its error saying why, on the marker subject. Its message id names the
// number, so that two clients that append the same marker store it once.
func markerMsg(id string, seq uint64, why string) *nats.Msg {
	now := time.Now()
	info, _ := json.Marshal(host.StateInfo{State: host.StateDisconnected.String(), Since: now, Error: why})
	data, _ := json.Marshal(host.Event{Seq: seq, Time: now, Kind: host.EventState, Data: info})
	msg := stamp(nats.NewMsg(subjectGone + id))
	msg.Data = data
	seqs := strconv.FormatUint(seq, 10)
	msg.Header.Set(hdrSeq, seqs)
	msg.Header.Set(hdrMsgID, id+"."+seqs+".reaped")
	return msg
}

// eachKept calls f with every event of session id the stream still keeps,
// oldest first, up to last, and returns how many older ones retention
// removed. An error reading ends it early: what f was given stands.
func (c *Client) eachKept(ctx context.Context, id string, last uint64, f func(host.Event)) (dropped int) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	after := uint64(0)
	for {
		resync := false
		for ev, err := range c.events(ctx, id, after, false) {
			if err != nil {
				var re *host.ResyncError
				if after == 0 && dropped == 0 && errors.As(err, &re) && re.Oldest > 1 {
					// start again from what is kept
					dropped, after, resync = int(re.Oldest-1), re.Oldest-1, true
				}
				break
			}
			if ev.Seq > last {
				return dropped
			}
			f(ev)
			if ev.Seq == last {
				return dropped
			}
		}
		if !resync {
			return dropped
		}
	}
}
