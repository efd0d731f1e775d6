package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tetherhq/tether/host"
	"github.com/tetherhq/tether/internal/jsapi"
)

// publishEvents copies the host journal to the events stream, by group
// commit: a reader takes the journal's events into a bounded queue, and
// the publisher stores everything queued since its previous publish was
// acknowledged in one message (a batch, bounded by the server's
// max_payload; alone when traffic is light), each publish fenced on the
// stream's last message of the session (JetStream's expected last
// sequence for the session's subjects): a number is never used twice,
// even when a client appended a "disconnected" marker while this agent
// was frozen or cut off (see publishMsg). While a reader of an earlier
// wire revision is about, every event goes in a message of its own
// (batch.go). Nothing is skipped: the reader holds the journal
// (host.Hold), so when NATS is slower than the session the batches grow,
// and when it is away longer than the journal holds the session stops
// reading its CLI until the bus takes events again.
func (s *agentSession) publishEvents() {
	defer s.wg.Done()
	s.nonce = randomID(4)
	q := s.q
	hold := s.hs.Hold(0)
	defer hold.Release()
	s.wg.Add(1)
	go s.readJournal(q, hold)
	var batch []host.Event
	for {
		var ok bool
		if batch, ok = q.take(s.ctx, batch); !ok {
			return
		}
		for evs := batch; len(evs) > 0; {
			if s.a.gone() || s.deposed.Load() {
				return
			}
			n, err := s.publishFirst(evs)
			if err != nil {
				s.publishFailed(err)
				return
			}
			s.published(evs[:n])
			evs = evs[n:]
		}
		if s.back.Swap(false) {
			if err := s.announceBack(); err != nil {
				s.publishFailed(err)
				return
			}
		}
	}
}

// publishFailed logs why the publisher stops, unless the session ended or
// another agent took it over (which says so itself).
func (s *agentSession) publishFailed(err error) {
	if s.ctx.Err() == nil && !errors.Is(err, errDeposed) {
		s.log.Error("publishing events", "err", err)
	}
}

// announceBack publishes what viewers of a session this agent took back
// from a client that had marked it disconnected would otherwise miss: the
// "disconnected" state, when the client could not store its marker (the
// bus was stalled too, or the client went), so that the stream shows
// every disconnection the registry did; and the session's state as of
// now, so that the stream's last state is not "disconnected" while the
// session runs on with nothing more to say. Both are the agent's own
// events (an agent may not publish on the marker subject: see
// testdata/permissions.conf), numbered after the stream's last message
// and fenced on it; the journal's next event follows them.
func (s *agentSession) announceBack() error {
	j := max(s.nextJ, 1)
	for {
		if err := s.rebase(j); err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(s.ctx, jsapi.Attempt)
		marked, err := s.a.b.disconnectedAt(ctx, s.id, s.lastStream, s.a.id)
		cancel()
		if err != nil {
			if err := s.pause(250 * time.Millisecond); err != nil {
				return err
			}
			continue
		}
		var states []host.StateInfo
		if !marked {
			states = append(states, host.StateInfo{State: host.StateDisconnected.String(), Since: time.Now(),
				Error: "agent " + s.a.id + " was out of reach for longer than its heartbeats allow; it has the session again"})
		}
		states = append(states, s.hs.State().Info())
		err = nil
		for _, st := range states {
			s.mu.Lock()
			seq := s.base + j
			s.mu.Unlock()
			info, _ := json.Marshal(st)
			data, aerr := appendEvent(nil, host.Event{Seq: seq, Time: time.Now(), Kind: host.EventState, Data: info})
			if aerr != nil {
				return aerr
			}
			if err = s.publishAll(s.eventMsgs(seq, data)); err != nil {
				break
			}
			// Stored: the journal's next event, and a rebase, count it.
			s.mu.Lock()
			s.base++
			s.rec.Seq = seq
			s.mu.Unlock()
		}
		if !errors.Is(err, errFenced) {
			return err
		}
		if err := s.stillOwner(); err != nil {
			return err
		}
	}
}

// published notes events stored in the stream.
func (s *agentSession) published(evs []host.Event) {
	for _, ev := range evs {
		s.a.metrics.Published(time.Since(ev.Time))
	}
	s.nextJ = evs[len(evs)-1].Seq + 1
	s.mu.Lock()
	s.rec.Seq = s.base + evs[len(evs)-1].Seq
	s.mu.Unlock()
	poke, mirror := false, false
	for _, ev := range evs {
		switch ev.Kind {
		case host.EventState, host.EventCost, host.EventClosed, host.EventTasks:
			poke = true
		case host.EventFilesChanged:
			s.filesChanged.Store(true)
		case host.EventMessage:
			if isResult(ev.Data) {
				mirror = true // mirror the transcript at the turn's end
			}
		}
	}
	if poke {
		s.poke()
	}
	if mirror {
		s.pokeMirror()
	}
}

// maxBatch bounds the events queued for the publisher, and so those of
// one batch.
const maxBatch = 1024

// keepBatch is the largest batch slice the publisher keeps for the next
// batch; a bigger one (a burst's) is left to the collector.
const keepBatch = 64

// eventQueue hands the journal's events to the publisher: everything
// queued since the publisher last took is its next batch. It holds at
// most maxBatch events (the reader waits for room beyond that), in a
// slice that grows only as far as the events waiting: an idle session's
// queue is a few words, not maxBatch events (a channel of maxBatch
// events was 70 KB a session, a fifth of the live heap under
// BenchmarkClusterSteady's 500 sessions).
type eventQueue struct {
	mu     sync.Mutex
	evs    []host.Event
	closed bool
	poked  bool          // take returns even with nothing queued
	ready  chan struct{} // 1 slot: events or the end are there
	room   chan struct{} // 1 slot: the publisher took events
}

func newEventQueue() *eventQueue {
	return &eventQueue{ready: make(chan struct{}, 1), room: make(chan struct{}, 1)}
}

// put queues ev, waiting while maxBatch are queued; false when ctx ended.
func (q *eventQueue) put(ctx context.Context, ev host.Event) bool {
	for {
		q.mu.Lock()
		if len(q.evs) < maxBatch {
			q.evs = append(q.evs, ev)
			q.mu.Unlock()
			notify(q.ready)
			return true
		}
		q.mu.Unlock()
		select {
		case <-q.room:
		case <-ctx.Done():
			return false
		}
	}
}

// close tells the publisher no more events come, once it has taken
// those queued.
func (q *eventQueue) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	notify(q.ready)
}

// poke makes the publisher's take return, with no events if none are
// queued, so that it looks at what else it owes.
func (q *eventQueue) poke() {
	q.mu.Lock()
	q.poked = true
	q.mu.Unlock()
	notify(q.ready)
}

// take waits for events and returns all of those queued, giving the
// queue spare (the previous batch, published) to fill next when it is
// small; false once the queue is closed and empty or ctx ended.
func (q *eventQueue) take(ctx context.Context, spare []host.Event) ([]host.Event, bool) {
	clear(spare) // do not pin payloads
	if cap(spare) > keepBatch {
		spare = nil
	}
	for {
		q.mu.Lock()
		if evs := q.evs; len(evs) > 0 || q.poked {
			q.poked = false
			q.evs = spare[:0]
			q.mu.Unlock()
			notify(q.room)
			return evs, true
		}
		closed := q.closed
		q.mu.Unlock()
		if closed {
			return nil, false
		}
		select {
		case <-q.ready:
		case <-ctx.Done():
			return nil, false
		}
	}
}

// notify wakes the one waiter on c (1 slot), if it is not woken already.
func notify(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// readJournal feeds the host journal's events to the publisher, holding
// the journal (host.Hold) at the last event queued, so that none is
// dropped before it is published: a publisher behind slows the session
// down instead.
func (s *agentSession) readJournal(q *eventQueue, hold *host.Hold) {
	defer s.wg.Done()
	defer q.close()
	var after uint64
	for {
		resync := false
		for ev, err := range s.hs.Events(s.ctx, after) {
			if err != nil {
				// Not while the hold is kept; a session whose journal
				// had let events go before the hold was taken.
				var re *host.ResyncError
				if errors.As(err, &re) {
					s.log.Warn("event publisher fell behind; subscribers resync", "after", re.After, "oldest", re.Oldest)
					after = re.Latest
					if re.Oldest > 0 {
						after = re.Oldest - 1
					}
					resync = true
					break
				}
				if s.ctx.Err() == nil {
					s.log.Debug("events ended", "err", err)
				}
				return
			}
			after = ev.Seq
			if !q.put(s.ctx, ev) {
				return
			}
			hold.Advance(ev.Seq)
		}
		if !resync {
			return
		}
	}
}

// errDeposed: another agent owns the session now; this one stops
// publishing and closes its CLI.
var errDeposed = errors.New("cluster: session taken over by another agent")

// errFenced: the stream's last message of the session is not the one the
// publisher expected (someone appended; or the one expected expired).
var errFenced = errors.New("cluster: events fenced")

// publishFirst stores the first of evs, or the first several in a batch
// (as many as one message holds, while batches may be written), after the
// session's last message in the stream, and returns how many it stored.
// When the fence fails it asks the registry who owns the session: another
// agent (a takeover) deposes this one; else (a client marked the session
// disconnected while this agent was away) the events are renumbered after
// what the stream holds (s.base grows, never shrinks) and published again.
func (s *agentSession) publishFirst(evs []host.Event) (int, error) {
	for {
		if s.fence.Load() {
			if err := s.rebase(evs[0].Seq); err != nil {
				return 0, err
			}
			s.fence.Store(false)
		}
		s.mu.Lock()
		base := s.base
		s.mu.Unlock()
		msgs, n, err := s.eventsMsgs(evs, base)
		if err != nil {
			return 0, err
		}
		err = s.publishAll(msgs)
		if err == nil {
			return n, nil
		}
		if !errors.Is(err, errFenced) {
			return 0, err
		}
		if err := s.stillOwner(); err != nil {
			return 0, err
		}
		s.log.Info("events fenced: renumbering after the stream's last one", "seq", evs[0].Seq+base)
		s.fence.Store(true)
	}
}

// publishAll stores msgs one after the other, each fenced on the one
// before (the first on lastStream); errFenced when a fence failed.
func (s *agentSession) publishAll(msgs []*nats.Msg) error {
	for _, m := range msgs {
		seq, err := s.publishMsg(m, s.lastStream)
		if err != nil {
			return err
		}
		s.lastStream = seq
	}
	return nil
}

// eventsMsgs are the messages of the first events of evs numbered after
// base: a batch of as many as max_payload holds when batches may be
// written and more than one fits, else the first event alone (in parts
// when it is bigger than a message may be). n is how many they hold.
func (s *agentSession) eventsMsgs(evs []host.Event, base uint64) (msgs []*nats.Msg, n int, err error) {
	limit := s.a.b.maxPart()
	var lines [][]byte
	size := 0
	batches := len(evs) > 1 && s.a.readers.batches()
	for _, ev := range evs {
		if len(lines) > 0 && (!batches || len(lines) == maxBatchEvents) {
			break
		}
		if s.woken {
			wakingEvent(&ev)
		}
		ev.Seq += base
		data, err := appendEvent(nil, ev)
		if err != nil {
			return nil, 0, err
		}
		if len(lines) > 0 && size+1+len(data) > limit {
			break
		}
		lines = append(lines, data)
		size += len(data) + 1
	}
	first := evs[0].Seq + base
	if len(lines) == 1 {
		return s.eventMsgs(first, lines[0]), 1, nil
	}
	m := batchMsg(s.id, s.a.id, s.nonce, first, lines)
	return []*nats.Msg{m}, len(lines), nil
}

// rebase reads the session's last message in the stream and numbers the
// journal's event jseq after it.
func (s *agentSession) rebase(jseq uint64) error {
	for {
		s.mu.Lock()
		known := s.base + jseq - 1 // the last number this agent used
		owners := slices.Clone(s.rec.Owners)
		s.mu.Unlock()
		if s.lastStream == 0 {
			known = 0 // nothing published here yet: read the whole session
		}
		// What follows this agent's last message and names it is not its:
		// only earlier owners' events (and markers) count.
		owns := func(a string) bool { return a != s.a.id && slices.Contains(owners, a) }
		last, stream, err := s.a.b.lastEvent(s.ctx, s.id, owns, s.lastStream, known)
		if err == nil {
			s.mu.Lock()
			if last+1 > jseq+s.base {
				s.base = last + 1 - jseq
			}
			s.mu.Unlock()
			s.lastStream = stream
			return nil
		}
		if err := s.pause(250 * time.Millisecond); err != nil {
			return err
		}
	}
}

// stillOwner reads the registry after a fence failed: it returns
// errDeposed (and closes the session here) when another agent runs the
// session now.
func (s *agentSession) stillOwner() error {
	for {
		ctx, cancel := context.WithTimeout(s.ctx, jsapi.Attempt)
		e, err := s.a.b.sessions.Get(ctx, s.id)
		cancel()
		if err == nil {
			var cur SessionInfo
			if err := decode(BucketSessions+"."+s.id, e.Value(), MaxRecordSize, &cur); err != nil {
				return err
			}
			if cur.Agent != s.a.id {
				s.deposed.Store(true)
				s.log.Warn("session taken over by another agent; closing it here", "by", cur.Agent)
				go s.hs.Close()
				return errDeposed
			}
			return nil
		}
		if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
			return nil // its entry went (closed): nobody else owns it
		}
		if err := s.pause(250 * time.Millisecond); err != nil {
			return err
		}
	}
}

func (s *agentSession) pause(d time.Duration) error {
	select {
	case <-time.After(d):
		return nil
	case <-s.ctx.Done():
		return s.ctx.Err()
	}
}

// publishMsg stores one message of the session, expecting the stream's
// last message of the session (both its subjects) at stream sequence
// after, and returns its stream sequence. It retries until stored while
// NATS is away; a retry of a message stored whose ack was lost is
// recognised by its message id (the first message after `after` is this
// one). It returns errFenced when another message follows `after`, or
// when `after` is no longer the last (retention) and nothing follows.
func (s *agentSession) publishMsg(m *nats.Msg, after uint64) (uint64, error) {
	b := s.a.b
	filter := sessionFilter(s.id)
	wait := 50 * time.Millisecond
	misses := 0
	for {
		ctx, cancel := context.WithTimeout(s.ctx, jsapi.Attempt)
		seq, err := b.publishExpecting(ctx, m, after, filter)
		cancel()
		if err == nil {
			return seq, nil
		}
		if s.ctx.Err() != nil {
			return 0, s.ctx.Err()
		}
		var apiErr *jetstream.APIError
		switch {
		case wrongLastSeq(err): // 10071, or 10164 from a replicated stream
			ctx, cancel := context.WithTimeout(s.ctx, jsapi.Attempt)
			next, gerr := b.events.GetMsg(ctx, after+1, jetstream.WithGetMsgSubject(filter))
			cancel()
			switch {
			case gerr == nil && next.Header.Get(hdrMsgID) == m.Header.Get(hdrMsgID):
				return next.Sequence, nil // stored before; its ack was lost
			case gerr == nil:
				return 0, errFenced
			case errors.Is(gerr, jetstream.ErrMsgNotFound):
				// Nothing after `after`: our own publish still in flight
				// (a cluster's), or `after` expired. Try again a few
				// times, then read the stream afresh.
				if misses++; misses > 5 {
					return 0, errFenced
				}
			}
		case errors.As(err, &apiErr) && apiErr.ErrorCode == errCodeSubjectInProcess:
			// A clustered stream's leader still has a message of the
			// session in flight (our own earlier try, after a leader
			// change): try again once it is stored.
		case errors.As(err, &apiErr) && apiErr.Code == 400:
			return 0, err // refused (too big, wrong subject…): retrying will not help
		}
		s.a.metrics.Retried()
		if err := s.pause(wait); err != nil {
			return 0, err
		}
		wait = min(2*wait, time.Second)
	}
}

// publishExpecting stores m as jetstream's PublishMsg does with
// WithExpectLastSequenceForSubject(after, filter), and returns its stream
// sequence, with the same errors (*jetstream.APIError wrapped,
// jetstream.ErrNoStreamResponse, jetstream.ErrInvalidJSAck). It reads a
// plain ack, {"stream":"…","seq":N}, by hand: one is read per event
// message, and json.Unmarshal of it took 4% of the agents' CPU under the
// steady load. Anything else (an error, a field more) is decoded as
// jetstream decodes it.
func (b *bus) publishExpecting(ctx context.Context, m *nats.Msg, after uint64, filter string) (uint64, error) {
	m.Header.Set(jetstream.ExpectedLastSubjSeqHeader, strconv.FormatUint(after, 10))
	m.Header.Set(jetstream.ExpectedLastSubjSeqSubjHeader, filter)
	resp, err := b.nc.RequestMsgWithContext(ctx, m)
	if errors.Is(err, nats.ErrNoResponders) {
		return 0, jetstream.ErrNoStreamResponse
	}
	if err != nil {
		return 0, err
	}
	if seq, ok := plainAck(resp.Data); ok {
		return seq, nil
	}
	var ack struct {
		Error  *jetstream.APIError `json:"error"`
		Stream string              `json:"stream"`
		Seq    uint64              `json:"seq"`
	}
	if json.Unmarshal(resp.Data, &ack) != nil {
		return 0, jetstream.ErrInvalidJSAck
	}
	if ack.Error != nil {
		return 0, fmt.Errorf("nats: %w", ack.Error)
	}
	if ack.Stream == "" {
		return 0, jetstream.ErrInvalidJSAck
	}
	return ack.Seq, nil
}

// plainAck reads a stream's ack of a message stored, as the server writes
// it: {"stream":"NAME","seq":N}, maybe with "duplicate":true; ok is false
// for anything else.
func plainAck(b []byte) (seq uint64, ok bool) {
	rest, ok := bytes.CutPrefix(b, []byte(`{"stream":"`))
	if !ok {
		return 0, false
	}
	i := bytes.IndexByte(rest, '"')
	if i <= 0 || bytes.IndexByte(rest[:i], '\\') >= 0 {
		return 0, false
	}
	if rest, ok = bytes.CutPrefix(rest[i+1:], []byte(`,"seq":`)); !ok {
		return 0, false
	}
	if seq, rest, ok = cutUint(rest); !ok {
		return 0, false
	}
	switch string(rest) {
	case "}", `,"duplicate":true}`:
		return seq, true
	}
	return 0, false
}

// errCodeSubjectInProcess is JetStream's "wrong last sequence" without a
// number (JSStreamWrongLastSequenceConstantErr): a clustered stream
// refuses a publish that expects a subject's last sequence while another
// message on that subject is being proposed. It is not a fence: the
// answer is to try again.
const errCodeSubjectInProcess = 10164

// eventMsgs are the messages of one event: one, or its parts when it is
// bigger than a NATS message may be.
func (s *agentSession) eventMsgs(seq uint64, data []byte) []*nats.Msg {
	seqs := strconv.FormatUint(seq, 10)
	parts := splitParts(data, s.a.b.maxPart())
	msgs := make([]*nats.Msg, len(parts))
	for i, p := range parts {
		m := stamp(nats.NewMsg(subjectEvents + s.id))
		m.Data = p
		m.Header.Set(hdrSeq, seqs)
		m.Header.Set(hdrAgent, s.a.id)
		if len(parts) > 1 {
			m.Header.Set(hdrPart, fmt.Sprintf("%d/%d", i+1, len(parts)))
		}
		// The id dedups a retry of this very message (a lost ack, a NATS
		// restart). It names the number, which is never stored twice, and
		// this attachment's nonce, so that a message of someone else
		// cannot pass for it.
		m.Header.Set(hdrMsgID, s.id+"."+seqs+"."+strconv.Itoa(i)+"."+s.nonce)
		msgs[i] = m
	}
	return msgs
}

func isResult(line json.RawMessage) bool {
	if !bytes.Contains(line, []byte(`"result"`)) {
		return false
	}
	var t struct {
		Type string `json:"type"`
	}
	return json.Unmarshal(line, &t) == nil && t.Type == "result"
}

// publishRetry publishes to JetStream until the message is acknowledged
// or ctx ends.
func (b *bus) publishRetry(ctx context.Context, m *nats.Msg) error {
	wait := 50 * time.Millisecond
	for {
		pctx, cancel := context.WithTimeout(ctx, jsapi.Attempt)
		_, err := b.js.PublishMsg(pctx, m)
		cancel()
		if err == nil {
			return nil
		}
		var apiErr *jetstream.APIError
		if errors.As(err, &apiErr) && apiErr.Code == 400 || errors.Is(err, nats.ErrMaxPayload) {
			return err // refused (too big, wrong subject…): retrying will not help
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
		wait = min(2*wait, time.Second)
	}
}

// maxPart is the largest payload of one event part: the server's limit
// less room for the headers.
func (b *bus) maxPart() int {
	n := int(b.nc.MaxPayload()) - 1024
	if n < 1024 {
		n = 1024
	}
	return n
}

func splitParts(data []byte, max int) [][]byte {
	if len(data) <= max {
		return [][]byte{data}
	}
	var parts [][]byte
	for len(data) > 0 {
		n := min(max, len(data))
		parts = append(parts, data[:n])
		data = data[n:]
	}
	return parts
}
