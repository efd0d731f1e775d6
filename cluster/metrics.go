package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// ErrAgentClosed is Agent.Ready's answer after Close.
var ErrAgentClosed = errors.New("cluster: agent closed")

// ErrDraining is Agent.Ready's answer while the agent drains.
var ErrDraining = errors.New("cluster: agent draining")

// Ready reports whether the agent takes sessions: not closed or
// draining, NATS connected, and the streams and buckets it uses there
// (an agent's /readyz). The error says what is missing; ErrUnavailable
// wraps a lost connection.
func (a *Agent) Ready(ctx context.Context) error {
	a.mu.Lock()
	closed, draining := a.closed, a.draining
	a.mu.Unlock()
	if closed {
		return ErrAgentClosed
	}
	if draining {
		return ErrDraining
	}
	// Requests made while the connection drops wait for it to come back:
	// bound them, so that a probe answers.
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if !a.b.nc.IsConnected() {
		return fmt.Errorf("%w: not connected (%s)", ErrUnavailable, a.b.nc.Status())
	}
	for _, name := range []string{StreamStart, StreamEvents, StreamTranscripts, "KV_" + BucketSessions, "KV_" + BucketAgents} {
		if _, err := a.b.js.Stream(ctx, name); err != nil {
			if !a.b.nc.IsConnected() {
				return fmt.Errorf("%w: stream %s: %w", ErrUnavailable, name, err)
			}
			return fmt.Errorf("cluster: stream %s: %w", name, err)
		}
	}
	return nil
}
