package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/tetherhq/tether/host"
	"github.com/tetherhq/tether/team"
)

// Drain empties the agent without losing a turn, for an upgrade or a
// scale-down: it stops taking start requests (the agent shows no room),
// refuses new prompts (busy: "moving"), lets the running turns finish
// (answers and interrupts still work), then hands each session to
// another agent through its transcript mirror: the session keeps its id,
// its subscribers their subscription, and its events' numbers go on
// after the last one this agent published. A turn still running when ctx
// ends is handed over as it is and lost (its prompt must be sent again);
// Drain then returns ctx's error. A session that no agent takes over
// (none has room) waits in the work queue for one, and shows
// disconnected meanwhile; Resume works on it as on a dead agent's.
//
// Drain returns once every session was handed over; Close the agent
// then. It is safe to call more than once and concurrently with Close.
func (a *Agent) Drain(ctx context.Context) error {
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return ErrClosed
	}
	already := a.draining
	a.draining = true
	// Its sessions refuse prompts from the moment the agent is draining
	// (Draining says so), not only once the heartbeat below is stored.
	for _, s := range a.sessions {
		s.moving.Store(true)
	}
	a.mu.Unlock()
	if !already {
		a.stopTaking()
		hctx, cancel := context.WithTimeout(ctx, a.b.ttl/3)
		if err := a.heartbeat(hctx); err != nil {
			a.log.Warn("heartbeat", "err", err)
		}
		cancel()
		a.log.Info("draining")
	}
	// A session attached from here on starts out moving (attach reads
	// draining under the same lock).
	var errs []error
	for _, s := range a.sessionList() {
		if s.handedOff() {
			continue // put to sleep meanwhile: no agent's
		}
		if a.opts.SleepAfter > 0 && s.hs.Asleep() && s.sleepOut(true) {
			continue // asleep: it goes to nobody, and wakes where there is room
		}
		if err := s.awaitQuiet(ctx); err != nil {
			errs = append(errs, fmt.Errorf("session %s: its turn did not end: %w", s.id, err))
		}
		if err := s.handOver(); err != nil {
			errs = append(errs, fmt.Errorf("session %s: %w", s.id, err))
		}
	}
	a.log.Info("drained", "errors", len(errs))
	return errors.Join(errs...)
}

// Draining reports whether Drain was called.
func (a *Agent) Draining() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.draining
}

func (a *Agent) sessionList() []*agentSession {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]*agentSession, 0, len(a.sessions))
	for _, s := range a.sessions {
		out = append(out, s)
	}
	return out
}

// errMoving refuses a prompt to a session that is being handed over.
var errMoving = &host.CommandError{Code: host.CodeBusy, Err: host.ErrBusy,
	Message: "the session is moving to another agent (this one is draining); send the prompt again in a moment"}

// awaitQuiet waits until the session's turn has ended and no prompt
// waits for one, and its events are all published.
func (s *agentSession) awaitQuiet(ctx context.Context) error {
	for l := range s.hs.Watch(ctx) {
		if !l.State.Busy() && !s.queued() {
			break
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	// The publisher catches up with the journal.
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for {
		last := s.hs.Snapshot().Seq
		s.mu.Lock()
		done := s.rec.Seq >= s.base+last
		s.mu.Unlock()
		if done || s.deposed.Load() || s.ctx.Err() != nil {
			return nil
		}
		select {
		case <-t.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// queued reports whether a prompt waits for the CLI to take it.
func (s *agentSession) queued() bool {
	for _, d := range s.hs.Deliveries() {
		if d.Status() == host.DeliveryQueued {
			return true
		}
	}
	return false
}

// handOver gives the session up to another agent: its publisher stops,
// its transcript is mirrored to the last byte, its registry entry is
// freed (this agent named among its owners, so that readers keep
// accepting the events it published), its CLI is closed, and a failover
// request is queued for an agent with room.
func (s *agentSession) handOver() error {
	a := s.a
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s.deposed.Store(true) // nothing more is published from here
	s.mirrorOnce(ctx)
	s.mu.Lock()
	s.handedOver = true
	rec := s.rec
	rev := s.rev
	s.mu.Unlock()
	rec.Owners = append(rec.Owners, a.id)
	if n := len(rec.Owners); n > maxOwners {
		rec.Owners = rec.Owners[n-maxOwners:]
	}
	rec.Agent = ""
	rec.Moving = true
	rec.State = host.StateDisconnected.String()
	rec.Updated = time.Now()
	if _, err := a.b.putSession(ctx, &rec, rev, false); err != nil {
		// Someone else changed it (a client marking it orphaned): read
		// again and free it at that revision.
		e, gerr := a.b.sessions.Get(ctx, s.id)
		if gerr != nil {
			return fmt.Errorf("freeing the registry entry: %w", err)
		}
		var cur SessionInfo
		if derr := decode(BucketSessions+"."+s.id, e.Value(), MaxRecordSize, &cur); derr != nil {
			return derr
		}
		if cur.Agent != a.id && cur.Agent != "" {
			go s.hs.Close() // another agent has it already
			return nil
		}
		cur.Owners, cur.Agent, cur.Moving, cur.State, cur.Updated = rec.Owners, "", true, rec.State, rec.Updated
		if _, err := a.b.putSession(ctx, &cur, e.Revision(), false); err != nil {
			return fmt.Errorf("freeing the registry entry: %w", err)
		}
	}
	s.hs.Close()
	req := startRequest{ID: s.id, Failover: true, Expires: time.Now().Add(a.handoverWait()), Identity: s.handoverIdentity(ctx)}
	// Any agent may take it: in the oldest revision this release speaks.
	m := stamp(nats.NewMsg(subjectStart))
	m.Data = encodeRecord("start", &req)
	m.Header.Set(hdrMsgID, "handover."+s.id+"."+randomID(8))
	if err := a.b.publishRetry(ctx, m); err != nil {
		return fmt.Errorf("queueing the handover: %w", err)
	}
	s.log.Info("session handed over")
	return nil
}

// handoverIdentity is who a handover's failover request names at an
// agent of a team, which refuses one without an identity: the session's
// owner (the ACL's), on whose behalf the draining agent asks. nil without
// a team, or when the owner cannot be read (a session without an ACL, a
// store out of reach): then the request is refused where it lands and
// the session waits, disconnected, for someone with access to resume it.
func (s *agentSession) handoverIdentity(ctx context.Context) *team.Identity {
	if s.a.opts.Team == nil {
		return nil
	}
	own, err := s.a.opts.Team.Owner(ctx, s.id)
	if err == nil {
		err = checkIdentity(own)
	}
	if err != nil {
		s.log.Warn("handing over without the owner's identity: no agent of the team will take it", "err", err)
		return nil
	}
	return own
}

// handoverWait is how long a handed-over session's failover request
// waits in the queue for an agent with room.
func (a *Agent) handoverWait() time.Duration {
	if a.opts.HandoverWait > 0 {
		return a.opts.HandoverWait
	}
	return 10 * time.Minute
}

// stopTaking ends the loop that pulls start requests.
func (a *Agent) stopTaking() {
	a.takeCancel()
}

// subjectControl + agent id: requests to an agent itself (drain).
const subjectControl = subjectPrefix + "ctl."

// DrainRequested is closed when someone asked the agent to drain over
// the bus (Client.DrainAgent): the program that runs the agent then
// calls Drain and Close, as on SIGTERM. The agent has begun draining by
// then.
func (a *Agent) DrainRequested() <-chan struct{} { return a.drainReq }

// serveControl answers requests to the agent itself.
func (a *Agent) serveControl(msg *nats.Msg) {
	var req struct {
		Op string `json:"op"`
	}
	if err := json.Unmarshal(msg.Data, &req); err != nil {
		respondControl(msg, `{"error":{"code":"malformed","message":"not a JSON request"}}`)
		return
	}
	if req.Op != "drain" {
		ue := &UnsupportedError{Subject: msg.Subject, What: fmt.Sprintf("control request %q", clip(req.Op, 40)), Revision: wireOf(msg.Header)}
		data, _ := json.Marshal(&commandReply{Error: wireErr(ue)})
		respondControl(msg, string(data))
		return
	}
	a.log.Info("drain requested over the bus")
	a.mu.Lock()
	first := !a.drainAsked
	a.drainAsked = true
	a.mu.Unlock()
	if first {
		// Stop taking sessions now; the owner of the agent finishes the
		// drain with its own timeout.
		a.mu.Lock()
		a.draining = true
		a.mu.Unlock()
		a.stopTaking()
		close(a.drainReq)
	}
	respondControl(msg, `{}`)
}

// respondControl answers a control request, stamped.
func respondControl(msg *nats.Msg, body string) {
	if msg.Reply == "" {
		return
	}
	m := stamp(nats.NewMsg(msg.Reply))
	m.Data = []byte(body)
	msg.RespondMsg(m)
}

// DrainAgent asks an agent to drain (Agent.Drain, then exit where it runs
// as tether agent). It returns once the agent has acknowledged; the
// agent leaves the registry when it is done (Agents).
func (c *Client) DrainAgent(ctx context.Context, id string) error {
	if !validID(id) {
		return &MessageError{Subject: subjectControl + id, Reason: "bad agent id", Err: ErrMalformed}
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
	}
	req := stamp(nats.NewMsg(subjectControl + id))
	req.Data = []byte(`{"op":"drain"}`)
	r, err := c.b.nc.RequestMsgWithContext(ctx, req)
	if errors.Is(err, nats.ErrNoResponders) {
		return &CommandError{Code: codeNoSession, Message: "no live agent " + id}
	}
	if err != nil {
		return c.unavailable(err)
	}
	var rep commandReply
	if err := json.Unmarshal(r.Data, &rep); err != nil {
		return &MessageError{Subject: subjectControl + id, Reason: jsonReason(err), Err: ErrMalformed}
	}
	return rep.Error.err()
}
