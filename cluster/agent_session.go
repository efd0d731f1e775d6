package cluster

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/host"
)

// agentSession is a host session attached to the bus: its events go to
// the events stream (numbered base+seq, so that a session taken over by
// another agent carries on where it was), its commands come in on its
// subject, its registry entry and transcript mirror are kept current.
type agentSession struct {
	a    *Agent
	id   string
	hs   *host.Session
	base uint64
	log  *slog.Logger
	sub  *nats.Subscription

	ctx    context.Context // ends when the session ends or the agent closes
	cancel context.CancelFunc
	wake   chan struct{} // the record keeper: something changed
	wakeTx chan struct{} // the mirror: a turn ended
	wg     sync.WaitGroup

	mu       sync.Mutex
	rec      SessionInfo
	rev      uint64
	closed   bool // closed by a command: its registry entry goes
	mirror   mirrorState
	restored int64 // bytes of the CLI session's file restored by a failover
	// fence: the next event must follow the stream's last one of the
	// session as read then (a taken-over session's first event: a client
	// may have appended "disconnected" since base was read; or the first
	// after this agent took its own session back from a client that had
	// given it up during a NATS outage).
	fence atomic.Bool
	// deposed: another agent took the session over; publish nothing more.
	deposed    atomic.Bool
	lastPut    []byte // the record last written, Updated zeroed
	lastPutAt  time.Time
	lastPrompt string
}

func (a *Agent) attach(id string, hs *host.Session, base uint64, rec SessionInfo, rev uint64, restored int64, fence bool) *agentSession {
	s := &agentSession{a: a, id: id, hs: hs, base: base, rec: rec, rev: rev, wake: make(chan struct{}, 1), wakeTx: make(chan struct{}, 1), restored: restored,
		log: a.log.With("session", id)}
	s.ctx, s.cancel = context.WithCancel(a.ctx)
	s.fence.Store(fence)
	s.rec.Agent = a.id
	s.rec.CLISession = hs.SessionID()
	a.mu.Lock()
	a.sessions[id] = s
	a.mu.Unlock()
	sub, err := a.b.nc.Subscribe(subjectCommand+id, s.command)
	if err != nil {
		s.log.Error("subscribing to commands", "err", err)
	} else {
		sub.SetPendingLimits(1024, 64<<20)
	}
	s.sub = sub
	ctx, cancel := context.WithTimeout(s.ctx, 5*time.Second)
	s.putRecord(ctx)
	cancel()
	s.wg.Add(3)
	go s.publishEvents()
	go s.keepRecord()
	go s.keepMirror()
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		select {
		case <-hs.Done():
		case <-a.ctx.Done():
		}
		s.finish()
	}()
	return s
}

// finish runs once the session ended (or the agent closes): it stops
// serving commands, lets the pumps write their last word and gives the
// slot back.
func (s *agentSession) finish() {
	if s.sub != nil {
		s.sub.Unsubscribe()
	}
	<-s.hs.Done() // the agent closes its manager, which ends the session
	s.cancel()
	s.wg.Wait()
	a := s.a
	a.mu.Lock()
	delete(a.sessions, s.id)
	a.mu.Unlock()
	<-a.slots
	s.log.Info("session detached")
}

// poke tells the record keeper to look again.
func (s *agentSession) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// pokeMirror tells the mirror to look again.
func (s *agentSession) pokeMirror() {
	select {
	case s.wakeTx <- struct{}{}:
	default:
	}
}

// record returns the session's registry entry as of now.
func (s *agentSession) record() SessionInfo {
	st := s.hs.State()
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.rec
	r.State = st.State.String()
	r.CostUSD = s.hs.Cost().USD
	r.LastEvent = s.hs.LastEvent()
	if id := s.hs.SessionID(); id != "" {
		r.CLISession = id
	}
	if s.lastPrompt != "" {
		r.LastPrompt = s.lastPrompt
	}
	return r
}

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

// keepRecord writes the session's registry entry when it changes (at most
// every 50 ms) and on heartbeats, and a last time when the session ends.
func (s *agentSession) keepRecord() {
	defer s.wg.Done()
	for {
		select {
		case <-s.wake:
		case <-s.ctx.Done():
			s.lastRecord()
			return
		}
		if s.ctx.Err() != nil {
			continue
		}
		s.putRecord(s.ctx)
		select {
		case <-time.After(50 * time.Millisecond):
		case <-s.ctx.Done():
		}
	}
}

// lastRecord writes the registry entry a last time as the session goes:
// a closed session's entry is marked Closed and Ended, one that ended on
// its own Ended (both stay resumable from the mirror as new sessions);
// one whose agent shuts down stays as it is (it shows disconnected once
// the agent has left, and can fail over).
func (s *agentSession) lastRecord() {
	if s.a.gone() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed || s.a.ctx.Err() == nil {
		s.mu.Lock()
		s.rec.Ended, s.rec.Closed = true, closed
		s.mu.Unlock()
	}
	s.putRecord(ctx)
}

// putRecord writes the registry entry if it changed, at the revision the
// agent last wrote: a failed update means another agent took over.
func (s *agentSession) putRecord(ctx context.Context) {
	r := s.record()
	r.Updated = time.Time{}
	data, _ := json.Marshal(r)
	s.mu.Lock()
	// Unchanged entries are written again every TTL, so that one a client
	// marked orphaned during a NATS outage is taken back.
	same := string(data) == string(s.lastPut) && time.Since(s.lastPutAt) < s.a.b.ttl
	rev := s.rev
	s.mu.Unlock()
	if same {
		return
	}
	r.Updated = time.Now()
	full, _ := json.Marshal(r)
	nrev, err := s.a.b.sessions.Update(ctx, s.id, full, rev)
	if errors.Is(err, jetstream.ErrKeyRevisionMismatch) || errors.Is(err, jetstream.ErrKeyExists) {
		nrev, err = s.readopt(ctx, full)
	}
	if err != nil {
		if ctx.Err() == nil {
			s.log.Debug("registry update", "err", err)
		}
		return
	}
	s.mu.Lock()
	s.rev, s.lastPut, s.lastPutAt = nrev, data, time.Now()
	s.mu.Unlock()
}

// readopt handles a registry entry changed behind the agent's back. When a
// client only marked the session orphaned (this agent's heartbeats did not
// reach NATS for 3 beats: an outage), the agent takes it back, its next
// event fenced after the "disconnected" one the client appended. When
// another agent took it over, this one stops publishing and closes its
// CLI, so that two CLIs never run one conversation.
func (s *agentSession) readopt(ctx context.Context, full []byte) (uint64, error) {
	e, err := s.a.b.sessions.Get(ctx, s.id)
	if err != nil {
		return 0, err
	}
	var cur SessionInfo
	if err := decode(BucketSessions+"."+s.id, e.Value(), MaxRecordSize, &cur); err != nil {
		return 0, err
	}
	if cur.Agent != s.a.id {
		s.deposed.Store(true)
		s.log.Warn("session taken over by another agent; closing it here", "by", cur.Agent)
		go s.hs.Close()
		return 0, &CommandError{Code: codeOwned, Message: "taken over by " + cur.Agent}
	}
	s.log.Info("session taken back after the agent's registry entry lapsed")
	s.fence.Store(true)
	return s.a.b.sessions.Update(ctx, s.id, full, e.Revision())
}

// command serves one command. Commands of a session run one at a time,
// in arrival order; each is bounded by 30 s.
func (s *agentSession) command(msg *nats.Msg) {
	reply := func(r *commandReply) {
		if msg.Reply == "" {
			return
		}
		data, _ := json.Marshal(r)
		msg.Respond(data)
	}
	defer func() {
		if p := recover(); p != nil {
			s.log.Error("command panicked", "panic", p)
			reply(&commandReply{Error: &wireError{Code: codeFailed, Message: "internal error"}})
		}
	}()
	var c Command
	if err := decode(msg.Subject, msg.Data, MaxCommandSize, &c); err != nil {
		s.log.Warn("refused a command", "err", err)
		reply(&commandReply{Error: wireErr(err)})
		return
	}
	ctx, cancel := context.WithTimeout(s.ctx, 30*time.Second)
	defer cancel()
	if c.Op == opSnapshot {
		s.snapshot(msg)
		return
	}
	s.log.Debug("command", "op", c.Op)
	out, err := s.do(ctx, &c)
	if err != nil {
		s.log.Info("command refused", "op", c.Op, "err", err)
	}
	r := &commandReply{Error: wireErr(err)}
	if c.Op == OpInterrupt {
		r.Step = out
	} else {
		r.UUID = out
	}
	reply(r)
}

func (s *agentSession) do(ctx context.Context, c *Command) (string, error) {
	hs := s.hs
	select {
	case <-hs.Done():
		return "", &CommandError{Code: codeNoSession, Message: "the session has ended"}
	default:
	}
	switch c.Op {
	case OpSend:
		var blocks []claude.ContentBlock
		for _, im := range c.Images {
			data, err := base64.StdEncoding.DecodeString(im.Data)
			if err != nil {
				return "", &CommandError{Code: codeMalformed, Message: "image data is not base64"}
			}
			blocks = append(blocks, claude.NewImageBlock(im.MediaType, data))
		}
		m := claude.NewUserMessage(c.Prompt, blocks...)
		m.UUID = c.UUID
		d, err := hs.SendMessage(ctx, m)
		if err != nil {
			return "", err
		}
		if p := clip(c.Prompt, 200); p != "" {
			s.mu.Lock()
			s.lastPrompt = p
			if s.rec.Title == "" {
				s.rec.Title = clip(c.Prompt, 80)
			}
			s.mu.Unlock()
			s.poke()
		}
		return d.UUID, nil
	case OpInterrupt:
		if c.Interrupt {
			step, err := hs.ForceInterrupt(ctx)
			if err != nil {
				return "", err
			}
			if step == host.InterruptNotNeeded {
				return "none", nil
			}
			return strings.ToLower(step.String()), nil
		}
		return "", hs.Interrupt(ctx)
	case OpRespond:
		if c.Behavior == "" || c.Answers != nil {
			ap, err := hs.Approval(c.Approval)
			if err != nil {
				return "", err
			}
			return "", ap.Answer(c.Answers)
		}
		var r claude.PermissionResult
		switch c.Behavior {
		case "allow":
			r = &claude.PermissionAllow{}
		case "allow_always":
			ap, err := hs.Approval(c.Approval)
			if err != nil {
				return "", err
			}
			return "", ap.AllowAlways(alwaysUpdates(ap.Request.Suggestions)...)
		default:
			r = &claude.PermissionDeny{Message: c.Message, Interrupt: c.Interrupt}
		}
		return "", hs.Respond(c.Approval, r)
	case OpCancel:
		return "", hs.CancelMessage(ctx, c.UUID)
	case OpSetModel, OpSetMode:
		cs := hs.Claude()
		if cs == nil {
			return "", &CommandError{Code: codeDisconnected, Message: "no CLI running"}
		}
		if c.Op == OpSetModel {
			if err := cs.SetModel(ctx, c.Model); err != nil {
				return "", err
			}
			s.mu.Lock()
			s.rec.Model = c.Model
			s.mu.Unlock()
			s.poke()
			return "", nil
		}
		return "", cs.SetPermissionMode(ctx, claude.PermissionMode(c.Mode))
	case OpClose:
		s.mu.Lock()
		s.closed = true
		s.mu.Unlock()
		return "", hs.Close()
	}
	return "", &CommandError{Code: codeMalformed, Message: "unknown op"}
}

// alwaysUpdates is what "allow always" applies: the CLI's suggestions as
// it made them (a settings file: they last), and each again for this
// session, because the CLI ignores settings-file rules in a workspace it
// does not trust, and a person who said "always" must not be asked again
// (as tether serve's local backend does).
func alwaysUpdates(sugg []claude.PermissionUpdate) []claude.PermissionUpdate {
	out := slices.Clone(sugg)
	for _, u := range sugg {
		if u.Destination != claude.DestinationSession {
			u.Destination = claude.DestinationSession
			out = append(out, u)
		}
	}
	return out
}

// clip shortens s to n bytes on one line (for titles and last prompts in
// the registry).
func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// snapshot answers with the session's snapshot, its sequence numbers
// shifted like the events', in as many parts as it takes.
func (s *agentSession) snapshot(msg *nats.Msg) {
	snap := s.hs.Snapshot()
	s.mu.Lock()
	snap.Seq += s.base
	s.mu.Unlock()
	data, err := json.Marshal(snap)
	if err != nil {
		data, _ = json.Marshal(&commandReply{Error: wireErr(err)})
	}
	replyParts(s.a.b, msg.Reply, data)
}

// replyParts answers a request with data split into parts (header
// Tether-Part "i/n"); one message when it fits.
func replyParts(b *bus, reply string, data []byte) {
	if reply == "" {
		return
	}
	parts := splitParts(data, b.maxPart())
	for i, p := range parts {
		m := nats.NewMsg(reply)
		m.Data = p
		m.Header.Set(hdrPart, fmt.Sprintf("%d/%d", i+1, len(parts)))
		if err := b.nc.PublishMsg(m); err != nil {
			return
		}
	}
}
