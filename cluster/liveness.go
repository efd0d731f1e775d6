package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tetherhq/tether/internal/jsapi"
)

// Failure detection: telling "the agent is dead" from "the bus could not
// store its heartbeat".
//
// An agent's heartbeat is a write to the agents bucket, a replicated
// stream: while the bucket has no leader (its leader's node was lost and
// the others are electing one, a few seconds), or while the agent's own
// NATS server is frozen or restarting, heartbeats are not stored although
// the agent runs on. So a heartbeat missing is only a suspicion. A client
// judges an agent by its last sign of life: a heartbeat stored, or an
// answer to a ping sent on the command subject of one of its sessions
// (core NATS request/reply, which needs no stream leader and reaches the
// agent through whichever node it is connected to). It pings an agent
// that missed a heartbeat; it declares the agent gone only when it has
// heard nothing of it for two lapses (6 heartbeats: the entry's lapse,
// then a lapse of unanswered pings), the client itself has been connected
// for a lapse (after an outage every agent gets one lapse to come back
// before anyone judges it), its own round trip to its NATS server works,
// and a last ping of the very session gets no answer from its agent.
// Agents reconnect to another node on their own well within that: they
// ping their server every heartbeat and drop a connection that stops
// answering two pings or taking their writes (dial).

// opPing is a request on a session's command subject (hdrOp) that its
// agent answers at once with its id (hdrAgent) and an empty body: proof
// of life that needs no stream. Agents of earlier versions answer it with
// an error, which proves as much.
const opPing = "ping"

// judge is a client's record of the agents' signs of life.
type judge struct {
	mu sync.Mutex
	// heard: agent → the latest sign of life seen (its entry's time, an
	// answered ping).
	heard map[string]time.Time
	// recs: agent → its last registry entry, so that an agent whose entry
	// the bucket dropped (it could not be refreshed) is still listed.
	recs map[string]agentRecord
	// reaped: session → its agent's last sign of life when this client
	// marked it disconnected: it is not marked again until the agent
	// was heard from since (it came back and went again).
	reaped map[string]time.Time
	// upSince: the connection has been up since then (zero: down);
	// reconnects: the connection's count, to notice a reconnect between
	// two looks.
	upSince    time.Time
	reconnects uint64
}

// hear notes a sign of life of agent at t.
func (j *judge) hear(agent string, t time.Time) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.heard == nil {
		j.heard = map[string]time.Time{}
	}
	if t.After(j.heard[agent]) {
		j.heard[agent] = t
	}
}

// last returns the agent's latest sign of life (zero: none seen).
func (j *judge) last(agent string) time.Time {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.heard[agent]
}

// forget drops an agent that left the registry on its own (its entry
// deleted, not lapsed).
func (j *judge) forget(agent string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	delete(j.heard, agent)
	delete(j.recs, agent)
}

// connection notes the connection's state: a reconnect (or being down)
// restarts the grace every agent gets before it is judged.
func (j *judge) connection(nc *nats.Conn) {
	up := nc.IsConnected()
	n := nc.Stats().Reconnects
	j.mu.Lock()
	defer j.mu.Unlock()
	switch {
	case !up:
		j.upSince = time.Time{}
	case j.upSince.IsZero() || n != j.reconnects:
		j.upSince = time.Now()
	}
	j.reconnects = n
}

// upFor reports whether the connection has been up for at least d.
func (j *judge) upFor(d time.Duration) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	return !j.upSince.IsZero() && time.Since(j.upSince) >= d
}

// goneAfter is how long an agent may go unheard before it is judged gone:
// two lapses of its entry.
func (c *Client) goneAfter() time.Duration { return 2 * c.b.ttl }

// liveAgents returns the agents not judged gone: those heard from within
// goneAfter, with their last registry entry.
func (c *Client) liveAgents(ctx context.Context) (map[string]agentRecord, error) {
	es, err := c.registry(ctx, c.b.agents, &c.agentCache)
	if err != nil {
		return nil, err
	}
	j := &c.judge
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.recs == nil {
		j.recs = map[string]agentRecord{}
	}
	if j.heard == nil {
		j.heard = map[string]time.Time{}
	}
	for key, e := range es {
		var r agentRecord
		if decode(BucketAgents+"."+key, e.value, MaxRecordSize, &r) != nil || r.ID != key {
			continue
		}
		j.recs[r.ID] = r
		if e.created.After(j.heard[r.ID]) {
			j.heard[r.ID] = e.created
		}
	}
	out := map[string]agentRecord{}
	for id, r := range j.recs {
		switch since := time.Since(j.heard[id]); {
		case since < c.goneAfter():
			out[id] = r
		case since > 10*c.goneAfter():
			delete(j.recs, id) // long gone: forget it
			delete(j.heard, id)
		}
	}
	return out, nil
}

// alive reports whether the agent is not judged gone, reading its entry
// when it has not been heard from lately, and pinging the session (one
// it runs) when that does not settle it.
func (c *Client) alive(ctx context.Context, agent, session string) (bool, error) {
	if time.Since(c.judge.last(agent)) < c.b.ttl {
		return true, nil
	}
	e, err := c.b.agents.Get(ctx, agent)
	switch {
	case err == nil:
		c.judge.hear(agent, e.Created())
	case !errors.Is(err, jetstream.ErrKeyNotFound):
		if !c.b.nc.IsConnected() {
			return false, c.unavailable(err)
		}
	}
	if time.Since(c.judge.last(agent)) < c.b.ttl {
		return true, nil
	}
	if c.b.ping(ctx, session, agent) {
		c.judge.hear(agent, time.Now())
		return true, nil
	}
	return time.Since(c.judge.last(agent)) < c.goneAfter(), nil
}

// vouch pings, on one of their sessions, the agents that missed a
// heartbeat, so that an agent whose heartbeats the bus cannot store
// (an election, its NATS server lost) is still heard from. Sessions
// watched here are preferred.
func (c *Client) vouch(ctx context.Context, watched map[string]bool) {
	hb := c.b.ttl / 3
	stale := func(agent string) bool { return time.Since(c.judge.last(agent)) >= 2*hb }
	// Only when some agent this client knows of looks stale are the
	// sessions looked through, in the client's copy of the registry (an
	// agent it has not heard of yet is pinged before any of its watched
	// sessions is marked: gone).
	c.judge.mu.Lock()
	any := false
	for id := range c.judge.recs {
		if time.Since(c.judge.heard[id]) >= 2*hb {
			any = true
			break
		}
	}
	c.judge.mu.Unlock()
	if !any {
		return
	}
	es, ok := c.sessCache.snapshot()
	if !ok {
		return
	}
	pick := map[string]string{} // agent → a session it runs
	for key, e := range es {
		r, err := c.sessionOf(key, e)
		if err != nil || r.Ended || r.Moving || r.Agent == "" || !stale(r.Agent) {
			continue
		}
		if _, ok := pick[r.Agent]; !ok || watched[key] {
			pick[r.Agent] = key
		}
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for agent, session := range pick {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if c.b.ping(ctx, session, agent) {
				c.judge.hear(agent, time.Now())
			}
		}()
	}
	wg.Wait()
}

// gone decides whether the agent running session r is gone, so that the
// session may be marked disconnected: see the rule at the top of this
// file.
func (c *Client) gone(ctx context.Context, r SessionInfo) bool {
	if time.Since(c.judge.last(r.Agent)) < c.goneAfter() || !c.judge.upFor(c.b.ttl) {
		return false
	}
	if c.b.nc.FlushTimeout(c.b.ttl/3) != nil {
		return false // this client cannot tell: its own server does not answer
	}
	if c.b.ping(ctx, r.ID, r.Agent) {
		c.judge.hear(r.Agent, time.Now())
		return false
	}
	c.judge.mu.Lock()
	defer c.judge.mu.Unlock()
	if at, ok := c.judge.reaped[r.ID]; ok && !c.judge.heard[r.Agent].After(at) {
		return false // marked already, and its agent was not heard from since
	}
	return true
}

// reaped notes that this client marked the session disconnected.
func (c *Client) noteReaped(id, agent string) {
	c.judge.mu.Lock()
	defer c.judge.mu.Unlock()
	if c.judge.reaped == nil {
		c.judge.reaped = map[string]time.Time{}
	}
	c.judge.reaped[id] = c.judge.heard[agent]
}

// ping asks the agent running a session for a sign of life, on the
// session's command subject, for at most a heartbeat: true when the
// agent answered (an agent of an earlier version answers with an error,
// and names no agent). Another agent's answer (a deposed one still
// subscribed) proves nothing about this one.
func (b *bus) ping(ctx context.Context, session, agent string) bool {
	if !validID(session) {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, b.ttl/3)
	defer cancel()
	m := nats.NewMsg(subjectCommand + session)
	m.Header.Set(hdrOp, opPing)
	r, err := b.nc.RequestMsgWithContext(ctx, m)
	if err != nil {
		return false
	}
	who := r.Header.Get(hdrAgent)
	return who == "" || who == agent
}

// ownerAlive reports whether the agent a session's entry names is alive:
// its entry is fresh, or it answers a ping on the session. An agent
// deciding whether it may take the session over asks this.
func (b *bus) ownerAlive(ctx context.Context, r *SessionInfo) (bool, error) {
	alive, err := b.agentAlive(ctx, r.Agent)
	if err != nil || alive {
		return alive, err
	}
	return b.ping(ctx, r.ID, r.Agent), nil
}

// answerPing answers a ping on a session's subject with the agent's id,
// unless the session is no longer this agent's to run.
func (s *agentSession) answerPing(msg *nats.Msg) {
	s.mu.Lock()
	closing := s.lanesClosed || s.handedOver
	s.mu.Unlock()
	if closing || s.deposed.Load() || msg.Reply == "" {
		return
	}
	r := nats.NewMsg(msg.Reply)
	r.Header.Set(hdrAgent, s.a.id)
	r.Data, _ = json.Marshal(struct{}{})
	msg.RespondMsg(r)
}

// createRecord creates a session's registry entry, trying again while the
// bucket cannot answer (its leader's node lost, an election under way):
// a start does not fail for the bus's trouble. A try stored whose answer
// was lost, or still in flight, is recognised by its content.
func (b *bus) createRecord(ctx context.Context, r *SessionInfo) (uint64, error) {
	id, data := r.ID, encodeRecord("session", r)
	wait := 50 * time.Millisecond
	for {
		tctx, cancel := context.WithTimeout(ctx, jsapi.Attempt)
		rev, err := b.putSession(tctx, r, 0, true)
		cancel()
		if err == nil {
			return rev, nil
		}
		switch {
		case errors.Is(err, jetstream.ErrKeyExists):
			gctx, cancel := context.WithTimeout(ctx, jsapi.Attempt)
			e, gerr := b.sessions.Get(gctx, id)
			cancel()
			if gerr == nil {
				if string(e.Value()) == string(data) {
					return e.Revision(), nil
				}
				return 0, err
			}
			if !errors.Is(gerr, jetstream.ErrKeyNotFound) {
				return 0, err
			}
			// Nothing there yet: a try of ours still being proposed.
		case errors.Is(err, jetstream.ErrNoStreamResponse), errors.Is(err, nats.ErrNoResponders),
			errors.Is(err, nats.ErrTimeout), errors.Is(err, context.DeadlineExceeded):
		default:
			return 0, err
		}
		select {
		case <-ctx.Done():
			return 0, err
		case <-time.After(wait):
		}
		wait = min(2*wait, time.Second)
	}
}
