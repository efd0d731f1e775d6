package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/host"
)

// Sessions that sleep, across the cluster (AgentOptions.SleepAfter).
//
// On one machine a sleeping session is a host.Session without a CLI
// (host/sleep.go). An agent goes one step further: a session of its
// that host puts to sleep (host.ManagerOptions.SleepAfter: the same rule
// of idleness, no turn, approval, question, unanswered prompt or
// background task) is handed over to nobody, as a drain hands a session
// over to another agent: its "asleep" state published, its transcript
// mirrored to the last byte, its registry entry written with state
// "asleep" and no agent (the agent named among its owners; its history,
// cost, person and numbering kept), its host session closed and its slot
// given back. A session asleep costs no process and no slot anywhere.
//
// The next command wakes it (Client.Command, and so `tether serve
// --nats`): finding no agent on the session's subject and "asleep" in
// the registry, the client queues a failover start request, which any
// agent with room takes (agent.go: claim). That agent publishes a
// "waking" state event at once, restores the transcript, applies the
// team's policy as at a start (AgentOptions.Team: the collaborator's
// access, the owner's options and the start rules of now, isolation),
// resumes the conversation with the CLI and carries the session's event
// numbers on; the client then delivers the command. Nothing on the wire
// changed for it: "asleep" is a state string, and an agent or client of
// an earlier release sees a session with no agent, which it resumes by
// failover.

// hdrAsleep marks an answer on a session's command subject from an agent
// that is putting the session to sleep: the command did not run; the
// client asks again, waking the session if it must. A client that does
// not know the header gets the answer's error (host's busy code).
const hdrAsleep = "Tether-Asleep"

// errAsleep marks noOwner's answer for a session that is asleep.
var errAsleep = errors.New("cluster: session asleep")

// asleepState is the registry's state of a session asleep.
var asleepState = host.StateAsleep.String()

// isAsleep reports whether a registry entry is a session asleep: no agent
// runs it, and the last one put it to sleep.
func isAsleep(r *SessionInfo) bool {
	return r.Agent == "" && r.State == asleepState && !r.Ended && !r.Moving
}

// waking reports whether a registry entry is that of a session this
// agent claimed to wake (claimOnce), before it runs.
func waking(r *SessionInfo) bool { return r.State == host.StateWaking.String() }

// enter counts a command in progress on the session, so that the session
// is not handed off under it; it returns false (and counts nothing) while
// the session goes to sleep.
func (s *agentSession) enter() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sleeping {
		return false
	}
	s.cmds++
	return true
}

// asleepHere reports whether the session was put to sleep from this
// agent (its subscription drains).
func (s *agentSession) asleepHere() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sleeping && s.handedOver
}

// leave ends what enter counted.
func (s *agentSession) leave() {
	s.mu.Lock()
	s.cmds--
	s.mu.Unlock()
}

// refuseAsleep answers a command that came while the session goes to
// sleep: it did not run, and the client asks again (hdrAsleep).
func refuseAsleep(msg *nats.Msg) {
	if msg.Reply == "" {
		return
	}
	m := stamp(nats.NewMsg(msg.Reply))
	m.Header.Set(hdrAsleep, "1")
	m.Data, _, _ = encodeFor(wireOf(msg.Header), "command_reply", &commandReply{Error: &wireError{Code: host.CodeBusy,
		Message: "the session is going to sleep; send the command again to wake it"}})
	msg.RespondMsg(m)
}

// watchSleep hands the session off once host has put it to sleep (the
// manager's SleepAfter), and again every heartbeat while a hand-off
// fails and the session stays asleep here (it still wakes here then, on
// its next command).
func (s *agentSession) watchSleep() {
	defer s.wg.Done()
	for l := range s.hs.Watch(s.ctx) {
		if l.State != host.StateAsleep {
			continue
		}
		for s.hs.Asleep() {
			if s.sleepOut(false) {
				return
			}
			if s.pause(s.a.b.ttl/3) != nil {
				return
			}
		}
	}
}

// sleepOut hands the session, asleep in host, off to nobody; it reports
// whether it did (the session is then closed here). A draining agent
// (drain) hands its sessions asleep off so, rather than to another agent
// that would start their CLIs.
func (s *agentSession) sleepOut(drain bool) bool {
	s.mu.Lock()
	if s.cmds > 0 || s.sleeping || s.lanesClosed || s.handedOver || (s.moving.Load() && !drain) || s.deposed.Load() {
		s.mu.Unlock()
		return false
	}
	s.sleeping = true
	s.mu.Unlock()
	done := false
	defer func() {
		if !done {
			s.mu.Lock()
			s.sleeping = false
			s.mu.Unlock()
		}
	}()
	// No command can reach host now: a session still asleep stays so.
	if !s.hs.Asleep() {
		return false
	}
	ctx, cancel := context.WithTimeout(s.ctx, 30*time.Second)
	defer cancel()
	// Its "asleep" state in the stream, for every subscriber.
	if err := s.awaitJournal(ctx); err != nil {
		return false
	}
	s.mirrorOnce(ctx)
	if !s.mirroredAll() && !s.neverPrompted() {
		// Tried again every heartbeat (NATS away, a slow disk): quietly.
		s.log.Debug("not put to sleep yet: its transcript is not all mirrored")
		return false
	}
	// What it answers asleep (answers.go), while this agent still holds
	// it; a record not written leaves those commands failing, as before.
	s.mu.Lock()
	seq := s.rec.Seq
	s.mu.Unlock()
	s.recordAnswers(ctx, seq)
	// Off the session's subject before the registry lets anyone wake it,
	// so that no command ever reaches this agent and a woken one both.
	// Drained, not dropped: a command the server routed here before it
	// saw the unsubscribe is still answered (refused, hdrAsleep), so that
	// its sender asks again rather than wait for a reply that never comes.
	s.mu.Lock()
	if sub := s.sub; sub != nil {
		if err := sub.Drain(); err != nil {
			sub.Unsubscribe()
		}
		s.sub = nil
	}
	s.handedOver = true // the record keeper writes no more
	rec := s.rec
	rev := s.rev
	s.mu.Unlock()
	undo := func() {
		s.mu.Lock()
		s.handedOver = false
		s.mu.Unlock()
		s.resubscribe()
	}
	r := s.record()
	rec.State, rec.CostUSD, rec.LastEvent, rec.CLISession, rec.LastPrompt = asleepState, r.CostUSD, r.LastEvent, r.CLISession, r.LastPrompt
	rec.Owners = appendOwner(rec.Owners, s.a.id)
	rec.Agent, rec.Orphaned, rec.Moving = "", false, false
	rec.Updated = time.Now()
	if _, err := s.a.b.putSession(ctx, &rec, rev, false); err != nil {
		// Changed behind the agent's back (a client marked it orphaned
		// during an outage; another agent took it): read it again.
		e, gerr := s.a.b.sessions.Get(ctx, s.id)
		var cur SessionInfo
		if gerr == nil {
			gerr = decode(BucketSessions+"."+s.id, e.Value(), MaxRecordSize, &cur)
		}
		switch {
		case gerr != nil:
			s.log.Warn("not put to sleep: registry entry", "err", err)
			undo()
			return false
		case cur.Agent != s.a.id && cur.Agent != "":
			done = true
			s.deposed.Store(true)
			go s.hs.Close()
			return true
		}
		if _, err := s.a.b.putSession(ctx, &rec, e.Revision(), false); err != nil {
			s.log.Warn("not put to sleep: registry entry", "err", err)
			undo()
			return false
		}
	}
	done = true
	s.deposed.Store(true)
	s.log.Info("session asleep: its CLI closed and its slot given back; the next command wakes it on an agent with room")
	go s.hs.Close() // finish gives the slot back
	return true
}

// handedOff waits (at most 30 s) for a hand-off to sleep under way to
// end, and reports whether the session has left this agent (asleep, or
// handed over).
func (s *agentSession) handedOff() bool {
	deadline := time.Now().Add(30 * time.Second)
	for {
		s.mu.Lock()
		sleeping, gone := s.sleeping, s.handedOver
		s.mu.Unlock()
		if gone || !sleeping || time.Now().After(deadline) {
			return gone
		}
		if s.pause(10*time.Millisecond) != nil {
			return gone
		}
	}
}

// wakeHook runs a woken team session's OnWake (team.SessionPolicy's: the
// team's rules of now) before its CLI starts, a panic refusing the wake.
func wakeHook(ctx context.Context, o *host.Options) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("cluster: OnWake panicked: %v", p)
		}
	}()
	return o.OnWake(ctx, nil, o.CLI)
}

// resubscribe serves the session's subject again after a hand-off to
// sleep was given up.
func (s *agentSession) resubscribe() {
	sub, err := s.a.b.nc.Subscribe(subjectCommand+s.id, s.command)
	if err != nil {
		s.log.Error("subscribing to commands again", "err", err)
		return
	}
	sub.SetPendingLimits(1024, 64<<20)
	s.mu.Lock()
	s.sub = sub
	s.mu.Unlock()
}

// awaitJournal waits until the publisher has stored the journal's last
// event.
func (s *agentSession) awaitJournal(ctx context.Context) error {
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for {
		last := s.hs.Snapshot().Seq
		s.mu.Lock()
		done := s.rec.Seq >= s.base+last
		s.mu.Unlock()
		if done {
			return nil
		}
		if s.deposed.Load() {
			return errDeposed
		}
		select {
		case <-t.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// mirroredAll reports whether the mirror holds the whole session file.
func (s *agentSession) mirroredAll() bool {
	cli := s.hs.SessionID()
	if cli == "" || s.configDir == "" {
		return false
	}
	s.mu.Lock()
	cwd, st := s.rec.Cwd, s.mirror
	s.mu.Unlock()
	fi, err := os.Stat(claude.SessionFilePath(s.configDir, cwd, cli))
	return err == nil && st.cli == cli && st.offset >= fi.Size()
}

// neverPrompted reports whether the session has had no prompt and its
// CLI wrote no session file: there is no conversation to resume, and its
// wake starts the CLI afresh under the same CLI session id.
func (s *agentSession) neverPrompted() bool {
	cli := s.hs.SessionID()
	s.mu.Lock()
	cwd, prompted := s.rec.Cwd, s.lastPrompt != "" || s.rec.LastPrompt != "" || s.restored > 0
	s.mu.Unlock()
	if prompted || cli == "" || s.configDir == "" {
		return false
	}
	_, err := os.Stat(claude.SessionFilePath(s.configDir, cwd, cli))
	return errors.Is(err, os.ErrNotExist)
}

// appendOwner adds agent to owners (the latest maxOwners), once.
func appendOwner(owners []string, agent string) []string {
	if n := len(owners); n > 0 && owners[n-1] == agent {
		return owners
	}
	owners = append(owners, agent)
	if n := len(owners); n > maxOwners {
		owners = owners[n-maxOwners:]
	}
	return owners
}

// publishWaking publishes a woken session's "waking" state event, number
// seq+1 after the session's last one (seq, at stream sequence after in
// the stream), so that subscribers see the wake while the CLI starts. It
// returns the event's stream sequence, 0 when it was not published (the
// stream moved on meanwhile: the session then just starts).
func (a *Agent) publishWaking(ctx context.Context, id string, seq uint64) uint64 {
	last, stream, err := a.b.lastSeq(ctx, id)
	if err != nil || last != seq {
		return 0
	}
	now := time.Now()
	info, _ := json.Marshal(host.StateInfo{State: host.StateWaking.String(), Since: now})
	ev := host.Event{Seq: seq + 1, Time: now, Kind: host.EventState, Data: info}
	data, _ := json.Marshal(ev)
	n := strconv.FormatUint(ev.Seq, 10)
	m := stamp(nats.NewMsg(subjectEvents + id))
	m.Data = data
	m.Header.Set(hdrSeq, n)
	m.Header.Set(hdrAgent, a.id)
	m.Header.Set(hdrMsgID, id+"."+n+".waking."+randomID(4))
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	opts := []jetstream.PublishOpt{jetstream.WithExpectLastSequenceForSubject(stream, sessionFilter(id))}
	ack, err := a.b.js.PublishMsg(pctx, m, opts...)
	if err != nil {
		a.log.Debug("waking event not published", "session", id, "err", err)
		return 0
	}
	return ack.Sequence
}

// wakingEvent rewrites a woken session's first host event, its
// "starting" state, as "waking": the CLI that starts is the wake's (host
// itself shows a wake so).
func wakingEvent(ev *host.Event) {
	if ev.Seq != 1 || ev.Kind != host.EventState {
		return
	}
	var st host.StateInfo
	if json.Unmarshal(ev.Data, &st) != nil || st.State != host.StateStarting.String() {
		return
	}
	st.State = host.StateWaking.String()
	if data, err := json.Marshal(st); err == nil {
		ev.Data = data
	}
}

// maxWakes bounds the wakes one command asks for (a session that falls
// asleep again before the command reaches it, again and again).
const maxWakes = 3

// wake asks an agent with room to wake a session asleep: a failover
// start request, which returns once the session runs. Another client
// waking it at the same time is no error: the command finds it starting.
func (c *Client) wake(ctx context.Context, id string, onQueued func(int)) error {
	c.log.Debug("waking a session", "session", id)
	_, err := c.start(ctx, &startRequest{ID: id, Failover: true, onQueued: onQueued})
	if errors.Is(err, ErrOwned) {
		return nil // woken by someone else
	}
	if err != nil {
		return fmt.Errorf("waking session %s: %w", id, err)
	}
	return nil
}
