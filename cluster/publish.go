package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tetherhq/tether/host"
)

// publishEvents copies the host journal to the events stream. A reader
// takes the journal's events into a bounded queue; the publisher sends
// what the queue holds as one pipelined batch (asynchronous publishes,
// then their acks), so a busy session costs one round trip per batch,
// not per event, and a quiet one one round trip per event. A batch with
// a failed publish is sent again in order, one at a time, until stored;
// the message ids make the copies already stored no-ops.
func (s *agentSession) publishEvents() {
	defer s.wg.Done()
	evc := make(chan host.Event, 1024)
	s.wg.Add(1)
	go s.readJournal(evc)
	batch := make([]host.Event, 0, maxBatch)
	for {
		var first host.Event
		var ok bool
		select {
		case first, ok = <-evc:
		case <-s.ctx.Done():
			return
		}
		if !ok {
			return
		}
		batch = append(batch[:0], first)
	fill:
		for len(batch) < maxBatch {
			select {
			case ev, ok := <-evc:
				if !ok {
					break fill
				}
				batch = append(batch, ev)
			default:
				break fill
			}
		}
		if s.a.gone() || s.deposed.Load() {
			return
		}
		if err := s.publishBatch(batch); err != nil {
			return
		}
		last := batch[len(batch)-1]
		s.mu.Lock()
		s.rec.Seq = s.base + last.Seq
		s.mu.Unlock()
		for _, ev := range batch {
			switch ev.Kind {
			case host.EventState, host.EventCost, host.EventClosed:
				s.poke()
			case host.EventMessage:
				if isResult(ev.Data) {
					s.pokeMirror() // mirror the transcript at the turn's end
				}
			}
		}
	}
}

// maxBatch bounds the events published before waiting for their acks.
const maxBatch = 256

// readJournal feeds the host journal's events to the publisher. When the
// publisher falls behind the journal's bound, the events it missed are
// skipped: the stream has a gap there, and subscribers resync from a
// snapshot.
func (s *agentSession) readJournal(evc chan<- host.Event) {
	defer s.wg.Done()
	defer close(evc)
	var after uint64
	for {
		resync := false
		for ev, err := range s.hs.Events(s.ctx, after) {
			if err != nil {
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
			select {
			case evc <- ev:
			case <-s.ctx.Done():
				return
			}
		}
		if !resync {
			return
		}
	}
}

// publishBatch stores a batch of events: pipelined, then in order one by
// one if any publish failed.
func (s *agentSession) publishBatch(batch []host.Event) error {
	var msgs []*nats.Msg
	for _, ev := range batch {
		if s.fence.Load() {
			if err := s.publishFenced(ev); err != nil {
				return err
			}
			s.fence.Store(false)
			continue
		}
		s.mu.Lock()
		ev.Seq += s.base
		s.mu.Unlock()
		data, err := json.Marshal(ev)
		if err != nil {
			return err
		}
		msgs = append(msgs, s.eventMsgs(ev.Seq, data)...)
	}
	futures := make([]jetstream.PubAckFuture, 0, len(msgs))
	failed := false
	for _, m := range msgs {
		f, err := s.a.b.js.PublishMsgAsync(m)
		if err != nil {
			failed = true
			break
		}
		futures = append(futures, f)
	}
	for _, f := range futures {
		select {
		case <-f.Ok():
		case <-f.Err():
			failed = true
		case <-s.ctx.Done():
			return s.ctx.Err()
		}
	}
	if !failed {
		return nil
	}
	for _, m := range msgs {
		if err := s.a.b.publishRetry(s.ctx, m); err != nil {
			if s.ctx.Err() == nil {
				s.log.Error("publishing an event", "err", err)
			}
			return err
		}
	}
	return nil
}

// eventMsgs are the messages of one event: one, or its parts when it is
// bigger than a NATS message may be.
func (s *agentSession) eventMsgs(seq uint64, data []byte) []*nats.Msg {
	seqs := strconv.FormatUint(seq, 10)
	parts := splitParts(data, s.a.b.maxPart())
	msgs := make([]*nats.Msg, len(parts))
	for i, p := range parts {
		m := nats.NewMsg(subjectEvents + s.id)
		m.Data = p
		m.Header.Set(hdrSeq, seqs)
		if len(parts) > 1 {
			m.Header.Set(hdrPart, fmt.Sprintf("%d/%d", i+1, len(parts)))
		}
		m.Header.Set(hdrMsgID, s.id+"."+seqs+"."+strconv.Itoa(i))
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

// publishFenced publishes an event right after the stream's last event of
// the session, renumbering from there (base) when someone appended in
// between.
func (s *agentSession) publishFenced(ev host.Event) error {
	var sent string // the id of a try whose ack was lost
	for {
		last, err := s.a.b.events.GetLastMsgForSubject(s.ctx, subjectEvents+s.id)
		var lastSeq, stream uint64
		switch {
		case err == nil:
			if sent != "" && last.Header.Get(hdrMsgID) == sent {
				return nil // it was stored after all
			}
			stream = last.Sequence
			lastSeq, err = strconv.ParseUint(last.Header.Get(hdrSeq), 10, 64)
			if err != nil {
				return err
			}
		case errors.Is(err, jetstream.ErrMsgNotFound):
		default:
			return err
		}
		// ev is the journal's event ev.Seq: it becomes lastSeq+1.
		base := lastSeq + 1 - min(ev.Seq, lastSeq+1)
		s.mu.Lock()
		s.base = base
		s.mu.Unlock()
		e := ev
		e.Seq += base
		data, err := json.Marshal(e)
		if err != nil {
			return err
		}
		m := nats.NewMsg(subjectEvents + s.id)
		m.Data = data
		seq := strconv.FormatUint(e.Seq, 10)
		m.Header.Set(hdrSeq, seq)
		m.Header.Set(hdrMsgID, s.id+"."+seq+".0")
		if len(data) > s.a.b.maxPart() {
			// Too big to fence in one message (never the first event in
			// practice): publish it unfenced.
			for _, m := range s.eventMsgs(e.Seq, data) {
				if err := s.a.b.publishRetry(s.ctx, m); err != nil {
					return err
				}
			}
			return nil
		}
		sent = s.id + "." + seq + ".0"
		_, err = s.a.b.js.PublishMsg(s.ctx, m, jetstream.WithExpectLastSequencePerSubject(stream))
		var apiErr *jetstream.APIError
		if errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence {
			continue
		}
		if err != nil {
			if s.ctx.Err() != nil {
				return err
			}
			select {
			case <-time.After(100 * time.Millisecond):
				continue
			case <-s.ctx.Done():
				return s.ctx.Err()
			}
		}
		return nil
	}
}

// publishRetry publishes to JetStream until the message is acknowledged
// or ctx ends.
func (b *bus) publishRetry(ctx context.Context, m *nats.Msg) error {
	wait := 50 * time.Millisecond
	for {
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, err := b.js.PublishMsg(pctx, m)
		cancel()
		if err == nil {
			return nil
		}
		var apiErr *jetstream.APIError
		if errors.As(err, &apiErr) && apiErr.Code == 400 {
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
