package cluster

import (
	"context"
	"iter"
	"time"

	"github.com/tetherhq/tether/host"
)

// CloseConn closes the client's NATS connection under it, as a caller
// closing the connection it passed in (ClientOptions.Conn) does.
func CloseConn(c *Client) { c.b.nc.Close() }

// Crash makes a vanish as a killed process would (for tests).
func Crash(a *Agent) { a.crash() }

// Reap marks a session disconnected as a client does when its agent's
// entry lapsed (for tests: whether the agent is alive or not).
func Reap(ctx context.Context, c *Client, id string) error {
	_, err := ReapMarked(ctx, c, id)
	return err
}

// ReapMarked is Reap reporting whether the registry took the mark: false
// when the entry changed between the read and the write (the agent
// rewrote it at that moment), and nothing was done.
func ReapMarked(ctx context.Context, c *Client, id string) (bool, error) {
	r, rev, err := c.record(ctx, id)
	if err != nil {
		return false, err
	}
	if !c.markOrphaned(ctx, id, &r, rev) {
		return false, nil
	}
	c.appendMarker(id, r) // as reap does; whether it is there, the test sees
	return true, nil
}

// LoseReplies makes the agent lose its next n command replies on their
// way (they are kept for the commands' copies), as a reconnect would.
func LoseReplies(a *Agent, n int) { a.lostReplies.Store(int32(n)) }

// LoseStartReplies makes the agent lose its next n start replies on
// their way, as a NATS server stalled or a reconnect would.
func LoseStartReplies(a *Agent, n int) { a.lostStartReplies.Store(int32(n)) }

// FailMarkerAppends makes the client's next n appends of a
// "disconnected" event fail, as a bus that cannot store them would; left
// reports how many failures are still to come.
func FailMarkerAppends(c *Client, n int) (left func() int) {
	c.failMarkers.Store(int32(n))
	return func() int { return int(c.failMarkers.Load()) }
}

// SetTakeoverWait sets how long a command waits for a takeover (for
// tests), until the test ends.
func SetTakeoverWait(t interface{ Cleanup(func()) }, d time.Duration) {
	old := takeoverWait
	takeoverWait = d
	t.Cleanup(func() { takeoverWait = old })
}

// AgentWire is the wire revision the live agent id advertises, as c
// reads it (for tests); 0 when it is not live.
func AgentWire(ctx context.Context, c *Client, id string) int {
	agents, err := c.liveAgents(ctx)
	if a, ok := agents[id]; err == nil && ok {
		return c.agentWire(ctx, a)
	}
	return 0
}

// HoldSleep makes the agent's session id act as if it were being put to
// sleep (commands refused with the Tether-Asleep header) until release
// is called; refused counts the commands refused so (for tests).
func HoldSleep(a *Agent, id string) (release func(), refused func() int64) {
	a.mu.Lock()
	s := a.sessions[id]
	a.mu.Unlock()
	s.mu.Lock()
	s.sleeping = true
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		s.sleeping = false
		s.mu.Unlock()
	}, s.refused.Load
}

// SetTailBound sets how many events a session's shared reader keeps for
// its subscribers (for tests), until the test ends.
func SetTailBound(t interface{ Cleanup(func()) }, n int) {
	old := maxTailEvents
	maxTailEvents = n
	t.Cleanup(func() { maxTailEvents = old })
}

// SetLiveBuffer sets how many republished messages an event reader holds
// before NATS drops them (for tests), until the test ends.
func SetLiveBuffer(t interface{ Cleanup(func()) }, n int) {
	old := liveBuffer
	liveBuffer = n
	t.Cleanup(func() { liveBuffer = old })
}

// LiveFallbacks counts the times c's event readers went back from the
// live feed to a consumer (a gap in it, or a stall).
func LiveFallbacks(c *Client) int64 { return c.liveFallbacks.Load() }

// EventsAlone is Events with a reader of the caller's own (no shared
// tail), so that a test can hold the reader itself.
func EventsAlone(ctx context.Context, c *Client, id string, after uint64) iter.Seq2[host.Event, error] {
	return c.events(ctx, id, after, true)
}

// Running is the agent's count of the person's open sessions, as its
// max_sessions check reads it (for tests).
func Running(ctx context.Context, a *Agent, subject string) (int, error) {
	return a.running(ctx, subject)
}
