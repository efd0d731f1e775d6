package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tetherhq/tether/host"
)

// Events yields the session's events with Seq > after, in order, live,
// from the events stream (whichever agent runs the session, and across
// failovers), until the session ends (its EventClosed is the last value)
// or ctx is done. The contract is host.Session.Events': when events after
// `after` are no longer kept (the stream's retention) or one is missing,
// it yields a *host.ResyncError (errors.Is(err, host.ErrResync)) and ends;
// take Snapshot and subscribe again after its Seq.
//
// While it runs, the session's agent is watched: when it dies, a
// "disconnected" state event is appended for it (once, whoever notices
// first), so that a UI following the events does not show "thinking"
// forever. The iterator is single-use.
func (c *Client) Events(ctx context.Context, id string, after uint64) iter.Seq2[host.Event, error] {
	return c.events(ctx, id, after, true)
}

func (c *Client) events(ctx context.Context, id string, after uint64, watch bool) iter.Seq2[host.Event, error] {
	return func(yield func(host.Event, error) bool) {
		if !validID(id) {
			yield(host.Event{}, &CommandError{Code: codeNoSession, Message: "bad session id"})
			return
		}
		if _, _, err := c.record(ctx, id); err != nil {
			yield(host.Event{}, err)
			return
		}
		subj := subjectEvents + id
		start, err := c.b.seek(ctx, subj, after)
		if err != nil {
			yield(host.Event{}, err)
			return
		}
		cons, err := c.b.events.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{
			FilterSubjects: []string{subj}, DeliverPolicy: jetstream.DeliverByStartSequencePolicy,
			OptStartSeq: start, InactiveThreshold: time.Minute,
		})
		if err != nil {
			yield(host.Event{}, err)
			return
		}
		it, err := cons.Messages(jetstream.PullMaxMessages(256))
		if err != nil {
			yield(host.Event{}, err)
			return
		}
		defer it.Stop()
		stop := context.AfterFunc(ctx, it.Stop)
		defer stop()
		if watch {
			c.watch(id, 1)
			defer c.watch(id, -1)
		}
		expect := after + 1
		var (
			parts   []byte
			partSeq uint64
		)
		for {
			m, err := it.Next()
			if err != nil {
				if ctx.Err() != nil || errors.Is(err, jetstream.ErrMsgIteratorClosed) {
					return
				}
				if errors.Is(err, nats.ErrConnectionClosed) {
					yield(host.Event{}, ErrClosed)
					return
				}
				// Missed heartbeats while NATS restarts: the ordered
				// consumer recreates itself; carry on.
				c.log.Debug("events", "session", id, "err", err)
				continue
			}
			seq, err := strconv.ParseUint(m.Headers().Get(hdrSeq), 10, 64)
			if err != nil {
				yield(host.Event{}, &MessageError{Subject: subj, Reason: "no sequence header", Err: ErrMalformed})
				return
			}
			if seq < expect {
				continue // before `after` (or a part of one)
			}
			data := m.Data()
			if h := m.Headers().Get(hdrPart); h != "" {
				i, n, ok := parsePart(h)
				if !ok {
					yield(host.Event{}, &MessageError{Subject: subj, Reason: "bad part header", Err: ErrMalformed})
					return
				}
				if i == 1 {
					parts, partSeq = nil, seq
				}
				if partSeq != seq || i > 1 && parts == nil {
					continue // the rest of an event whose start was dropped
				}
				parts = append(parts, data...)
				if i < n {
					continue
				}
				data, parts = parts, nil
			}
			if seq != expect {
				yield(host.Event{}, &host.ResyncError{After: expect - 1, Oldest: seq, Latest: seq})
				return
			}
			var ev host.Event
			if err := json.Unmarshal(data, &ev); err != nil || ev.Seq != seq {
				yield(host.Event{}, &MessageError{Subject: subj, Reason: "bad event", Err: ErrMalformed})
				return
			}
			if !yield(ev, nil) {
				return
			}
			expect = seq + 1
			if ev.Kind == host.EventClosed {
				return
			}
		}
	}
}

// seek finds the stream sequence to read a subject's events with Seq >
// after from: the stream keeps a session's events in order, so a binary
// search over direct gets finds it in a few requests, however many
// events there are. When the oldest event kept is already past after+1
// it returns the oldest's: the caller sees the gap and resyncs.
func (b *bus) seek(ctx context.Context, subj string, after uint64) (uint64, error) {
	if after == 0 {
		return 1, nil
	}
	seqOf := func(m *jetstream.RawStreamMsg) uint64 {
		s, _ := strconv.ParseUint(m.Header.Get(hdrSeq), 10, 64)
		return s
	}
	last, err := b.events.GetLastMsgForSubject(ctx, subj)
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
		m, err := b.events.GetMsg(ctx, mid, jetstream.WithGetMsgSubject(subj))
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

// monitor checks, every heartbeat, that the agents of watched sessions
// are alive, and marks the sessions of dead ones disconnected.
func (c *Client) monitor() {
	defer c.wg.Done()
	t := time.NewTicker(c.b.ttl / 3)
	defer t.Stop()
	owner := map[string]string{} // session → agent, as last read
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-t.C:
		}
		c.mu.Lock()
		ids := make([]string, 0, len(c.watched))
		for id := range c.watched {
			ids = append(ids, id)
		}
		c.mu.Unlock()
		if len(ids) == 0 {
			continue
		}
		ctx, cancel := context.WithTimeout(c.ctx, c.b.ttl)
		agents, err := c.liveAgents(ctx)
		if err == nil {
			for _, id := range ids {
				if a, ok := owner[id]; ok {
					if _, alive := agents[a]; alive {
						continue
					}
				}
				r, rev, err := c.record(ctx, id)
				if err != nil {
					continue
				}
				owner[id] = r.Agent
				if _, alive := agents[r.Agent]; alive || r.Ended || r.Orphaned {
					continue
				}
				c.reap(ctx, id, r, rev)
			}
		}
		cancel()
	}
}

// reap marks a session of a dead agent disconnected: in the registry (at
// its revision, so one client does it) and with a state event appended to
// its events (expecting the stream's last message of the session to be
// the one read, so that it never lands between events of an agent that
// took the session over).
func (c *Client) reap(ctx context.Context, id string, r SessionInfo, rev uint64) {
	now := time.Now()
	r.State = host.StateDisconnected.String()
	r.Orphaned = true
	r.Updated = now
	data, _ := json.Marshal(r)
	if _, err := c.b.sessions.Update(ctx, id, data, rev); err != nil {
		return // someone else did, or the session was taken over
	}
	c.log.Info("agent gone; session disconnected", "session", id, "agent", r.Agent)
	subj := subjectEvents + id
	var lastStream, lastSeq uint64
	m, err := c.b.events.GetLastMsgForSubject(ctx, subj)
	if err == nil {
		lastStream = m.Sequence
		lastSeq, _ = strconv.ParseUint(m.Header.Get(hdrSeq), 10, 64)
	} else if !errors.Is(err, jetstream.ErrMsgNotFound) {
		return
	}
	info, _ := json.Marshal(host.StateInfo{State: host.StateDisconnected.String(), Since: now, Error: "agent " + r.Agent + " is gone"})
	ev := host.Event{Seq: lastSeq + 1, Time: now, Kind: host.EventState, Data: info}
	evData, _ := json.Marshal(ev)
	msg := nats.NewMsg(subj)
	msg.Data = evData
	seq := strconv.FormatUint(ev.Seq, 10)
	msg.Header.Set(hdrSeq, seq)
	msg.Header.Set(hdrMsgID, id+"."+seq+".reaped")
	if _, err := c.b.js.PublishMsg(ctx, msg, jetstream.WithExpectLastSequencePerSubject(lastStream)); err != nil {
		c.log.Debug("disconnected event not appended", "session", id, "err", err)
	}
}
