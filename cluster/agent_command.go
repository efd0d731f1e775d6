package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/nats-io/nats.go"

	"github.com/tetherhq/tether/host"
)

// Lanes of a session's commands. The ordered lane runs send, cancel,
// set_model, set_mode and close one at a time in arrival order; the quick
// lane runs interrupts, answers and snapshots beside it, so that a
// person's Stop or answer never waits behind a slow send. Each lane is
// bounded: a command that finds its lane full is refused with host's
// busy code, at once.
const (
	orderedQueue = 64
	quickLimit   = 16
	commandLimit = 30 * time.Second // each command's bound
)

// command takes one request from the session's subject into its lane.
// It runs on the subscription's goroutine and never blocks it.
func (s *agentSession) command(msg *nats.Msg) {
	s.a.readers.saw(wireOf(msg.Header))
	switch op := msg.Header.Get(hdrOp); op {
	case "":
	case opPing:
		s.answerPing(msg) // liveness.go
		return
	case opSnapshot:
		if s.asleepHere() {
			// Put to sleep: the registry and the stream have it all. The
			// client takes this for no responders: an offline snapshot.
			m := nats.NewMsg(msg.Reply)
			m.Header.Set("Status", "503")
			msg.RespondMsg(m)
			return
		}
		s.quickLane(msg, "", func() { s.snapshot(msg) })
		return
	default:
		ue := &UnsupportedError{Subject: msg.Subject, What: fmt.Sprintf("request %q", clip(op, 40)), Revision: wireOf(msg.Header)}
		s.log.Warn("refused a request", "err", ue)
		respond(msg, &commandReply{Error: wireErr(ue)})
		return
	}
	var c commandMsg
	if err := decodeFrom(msg.Subject, msg.Header, msg.Data, MaxCommandSize, &c); err != nil {
		s.log.Warn("refused a command", "err", err)
		respond(msg, &commandReply{Error: wireErr(err)})
		return
	}
	if c.Identity == nil && s.a.opts.Team != nil {
		s.log.Warn("refused a command without an identity", "type", c.Type)
		respond(msg, &commandReply{Error: wireErr(errNoIdentity)})
		return
	}
	// Counted from here until answered, so that the session is not put
	// to sleep under it (sleep.go); refused while it goes to sleep.
	if !s.enter() {
		s.refused.Add(1)
		refuseAsleep(msg)
		return
	}
	// A copy of a command already taken (its client sent it again, its
	// reply lost or late: requests.go) is answered with that command's
	// reply, not run again.
	// The name is the sender's: a copy under another identity is a
	// command of its own, authorized as one.
	name := requestName(msg.Header.Get(hdrRequest), c.Identity)
	if !s.a.requests.begin(name, msg) {
		s.leave()
		return
	}
	run := func() { defer s.leave(); s.serve(msg, name, &c) }
	if c.Lane() == host.LaneQuick {
		if !s.quickLane(msg, name, run) {
			s.leave()
		}
		return
	}
	select {
	case s.ordered <- run:
	default:
		s.leave()
		s.answer(msg, name, &commandReply{Error: &wireError{Code: host.CodeBusy, Message: "too many commands waiting for this session"}})
	}
}

// quickLane runs f beside the ordered lane, or refuses when the lane is
// full (or closed); it reports whether f will run.
func (s *agentSession) quickLane(msg *nats.Msg, name string, f func()) bool {
	s.mu.Lock()
	if s.lanesClosed {
		s.mu.Unlock()
		s.answer(msg, name, &commandReply{Error: &wireError{Code: codeNoSession, Message: "the session has ended"}})
		return false
	}
	s.wg.Add(1) // under s.mu: never after finish began waiting
	s.mu.Unlock()
	select {
	case s.quick <- struct{}{}:
	default:
		s.wg.Done()
		s.answer(msg, name, &commandReply{Error: &wireError{Code: host.CodeBusy, Message: "too many commands in flight for this session"}})
		return false
	}
	go func() {
		defer s.wg.Done()
		defer func() { <-s.quick }()
		f()
	}()
	return true
}

// runOrdered is the ordered lane's worker.
func (s *agentSession) runOrdered() {
	defer s.wg.Done()
	for {
		select {
		case f := <-s.ordered:
			f()
		case <-s.ctx.Done():
			return
		}
	}
}

// respond answers a request in its writer's revision (fields a client of
// revision 1 does not know are left out: it would refuse the reply).
func respond(msg *nats.Msg, r *commandReply) {
	if msg.Reply == "" {
		return
	}
	msg.RespondMsg(replyTo(msg, r))
}

// replyTo is the reply r to msg, in its writer's revision.
func replyTo(msg *nats.Msg, r *commandReply) *nats.Msg {
	m := stamp(nats.NewMsg(msg.Reply))
	m.Data, _, _ = encodeFor(wireOf(msg.Header), "command_reply", r)
	return m
}

// answer is respond for a command the session took: the reply is kept
// for the copies of the command remembered as name (requests.go).
func (s *agentSession) answer(msg *nats.Msg, name string, r *commandReply) {
	m := replyTo(msg, r)
	s.a.requests.finish(name, m)
	if msg.Reply != "" && !loseOne(&s.a.lostReplies) {
		msg.RespondMsg(m)
	}
}

// serve runs one command with host.Session.Do, as the person who sent
// it (its identity in ctx), and answers it.
func (s *agentSession) serve(msg *nats.Msg, name string, cm *commandMsg) {
	c := &cm.Command
	defer func() {
		if p := recover(); p != nil {
			s.log.Error("command panicked", "panic", p)
			s.answer(msg, name, &commandReply{Error: &wireError{Code: host.CodeInternal, Message: "internal error"}})
		}
	}()
	ctx, cancel := context.WithTimeout(s.ctx, commandLimit)
	defer cancel()
	// The client's span is the parent; the turn a send opens, this
	// span's child.
	ctx, span := startServerSpan(ctx, s.a.tr, spanName("agent command", c), s.a.id, s.id, msg.Header, attrCommand.String(string(c.Type)))
	var err error
	defer func() { endSpan(span, err) }() // before the recover: a panic ends it too
	s.log.Debug("command", "type", c.Type)
	if ctx, err = s.a.withIdentity(ctx, cm.Identity); err != nil {
		s.answer(msg, name, &commandReply{Error: wireErr(err)})
		return
	}
	if cm.Identity != nil {
		// Who answered an approval, journaled for every UI: from the
		// identity, never from the message (Actor does not cross).
		c.Actor = cm.Identity.DisplayName()
	}
	res, err := s.do(ctx, c)
	if err != nil {
		s.log.Info("command refused", "type", c.Type, "err", err)
		s.answer(msg, name, &commandReply{Error: wireErr(err)})
		return
	}
	s.answer(msg, name, &commandReply{Result: res})
}

// do runs a command and keeps the registry entry's title, last prompt
// and model in step.
func (s *agentSession) do(ctx context.Context, c *host.Command) (*host.CommandResult, error) {
	select {
	case <-s.hs.Done():
		return nil, &CommandError{Code: codeNoSession, Message: "the session has ended"}
	default:
	}
	if c.Type == host.CommandSend && s.moving.Load() {
		return nil, errMoving
	}
	ends := c.Type == host.CommandClose || c.Type == host.CommandWorktreeDiscard
	if ends {
		s.mu.Lock()
		s.closed = true // before the session ends: its last record says so
		s.mu.Unlock()
	}
	res, err := s.hs.Do(ctx, c)
	if err != nil {
		if ends {
			select {
			case <-s.hs.Done():
			default:
				// Refused (a close that asks what to do with a
				// worktree's unmerged work): the session goes on.
				s.mu.Lock()
				s.closed = false
				s.mu.Unlock()
			}
		}
		return nil, err
	}
	switch c.Type {
	case host.CommandSend:
		if p := clip(c.Text, 200); p != "" {
			s.mu.Lock()
			s.lastPrompt = p
			if s.rec.Title == "" {
				s.rec.Title = clip(c.Text, 80)
			}
			s.mu.Unlock()
			s.poke()
		}
	case host.CommandSetModel:
		s.mu.Lock()
		s.rec.Model = c.Model
		s.mu.Unlock()
		s.poke()
	}
	return res, nil
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
	ctx, span := startServerSpan(context.Background(), s.a.tr, "agent snapshot", s.a.id, s.id, msg.Header)
	defer span.End()
	ctx, cancel := context.WithTimeout(ctx, commandLimit)
	defer cancel()
	if err := s.checkSnapshot(ctx, msg.Subject, msg.Header, msg.Data); err != nil {
		s.log.Info("snapshot refused", "err", err)
		replyParts(s.a.b, msg.Reply, errorPart(err))
		return
	}
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
		m := stamp(nats.NewMsg(reply))
		m.Data = p
		m.Header.Set(hdrPart, fmt.Sprintf("%d/%d", i+1, len(parts)))
		if err := b.nc.PublishMsg(m); err != nil {
			return
		}
	}
}
