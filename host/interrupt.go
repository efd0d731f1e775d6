package host

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/internal/telemetry"
)

// Interrupt stops the running turn: the session is StateInterrupting
// until the turn's result arrives. Called after Send but before the CLI
// has started the turn that prompt begins, it waits (bounded by ctx) for
// that turn to start and interrupts it; if ctx ends first it returns the
// ctx's error and the turn runs. With no turn running and no prompt
// waiting to start one it does nothing.
func (s *Session) Interrupt(ctx context.Context) error {
	cs, err := s.beginInterrupt()
	if err == errTurnNotBegun {
		cs, err = s.awaitTurn(ctx)
	}
	if err != nil || cs == nil {
		return err
	}
	if err := cs.Interrupt(ctx); err != nil {
		s.mu.Lock()
		if s.cs == cs {
			s.interrupting = false
			s.transition()
		}
		s.mu.Unlock()
		return err
	}
	return nil
}

// errTurnNotBegun is beginInterrupt's answer when a prompt was sent but
// the CLI has not started its turn yet.
var errTurnNotBegun = errors.New("host: the turn has not begun")

// beginInterrupt marks the turn as interrupting; cs is nil when no turn
// runs. It returns errTurnNotBegun, with the state already interrupting,
// when a sent prompt is still waiting for its turn to start.
func (s *Session) beginInterrupt() (*claude.Session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.ended {
		return nil, claude.ErrClosed
	}
	if s.cs == nil {
		return nil, nil
	}
	if !s.turn {
		for _, d := range s.deliveries {
			if d.status == DeliveryQueued {
				s.interrupting = true
				s.transition()
				return nil, errTurnNotBegun
			}
		}
		return nil, nil
	}
	s.interrupting = true
	s.transition()
	return s.cs, nil
}

// awaitTurn waits for the turn a sent prompt starts, for Interrupt. It
// returns the CLI session to interrupt, or nil when the prompt will start
// no turn after all (the CLI ended, the prompt was cancelled or lost).
func (s *Session) awaitTurn(ctx context.Context) (*claude.Session, error) {
	for {
		s.mu.Lock()
		switch {
		case s.closed || s.ended:
			s.mu.Unlock()
			return nil, claude.ErrClosed
		case s.cs == nil:
			s.mu.Unlock()
			return nil, nil
		case s.turn:
			s.interrupting = true
			s.transition()
			cs := s.cs
			s.mu.Unlock()
			return cs, nil
		}
		queued := false
		for _, d := range s.deliveries {
			queued = queued || d.status == DeliveryQueued
		}
		if !queued {
			s.interrupting = false
			s.transition()
			s.mu.Unlock()
			return nil, nil
		}
		if s.turnBegun == nil {
			s.turnBegun = make(chan struct{})
		}
		begun, done := s.turnBegun, s.done
		s.mu.Unlock()
		select {
		case <-begun:
		case <-done:
			return nil, claude.ErrClosed
		case <-ctx.Done():
			s.mu.Lock()
			if !s.turn {
				s.interrupting = false
				s.transition()
			}
			s.mu.Unlock()
			return nil, fmt.Errorf("host: interrupt: the turn had not begun: %w", ctx.Err())
		}
	}
}

// DenyAndInterrupt denies every pending approval with message, telling
// the CLI to end the turn as well, in one answer (the CLI's deny with
// interrupt). With no approval pending it is Interrupt.
func (s *Session) DenyAndInterrupt(ctx context.Context, message string) error {
	s.mu.Lock()
	pending := append([]*Approval(nil), s.approvals...)
	var err error
	for _, a := range pending {
		if e := s.answerLocked(a, &claude.PermissionDeny{Message: message, Interrupt: true}, telemetry.ByPerson, ""); e != nil && err == nil {
			err = e
		}
	}
	s.mu.Unlock()
	if len(pending) == 0 {
		return s.Interrupt(ctx)
	}
	return err
}

// InterruptStep says how far ForceInterrupt had to go.
type InterruptStep int

// Interrupt steps.
const (
	// InterruptNotNeeded: no turn was running.
	InterruptNotNeeded InterruptStep = iota
	// InterruptedByRequest: the CLI honoured the interrupt request.
	InterruptedByRequest
	// InterruptedBySignal: the CLI stopped on SIGINT (and then exits,
	// which a RestartPolicy turns into a restart).
	InterruptedBySignal
	// InterruptedByKill: the CLI was killed.
	InterruptedByKill
)

// String names the step ("SIGINT").
func (st InterruptStep) String() string {
	switch st {
	case InterruptNotNeeded:
		return "not needed"
	case InterruptedByRequest:
		return "request"
	case InterruptedBySignal:
		return "SIGINT"
	case InterruptedByKill:
		return "kill"
	}
	return fmt.Sprintf("InterruptStep(%d)", int(st))
}

// ForceInterrupt stops the running turn whatever it takes: an interrupt
// request; if the turn has not ended within Options.InterruptTimeout,
// SIGINT to the CLI (which ends the turn and exits); if that does not
// work either, killing the CLI (closing it, for a transport without a
// process). After a signal or a kill the CLI is gone: the session is
// disconnected, or restarted by its RestartPolicy with the conversation
// resumed. ctx bounds the whole; it returns the step that worked.
func (s *Session) ForceInterrupt(ctx context.Context) (InterruptStep, error) {
	cs, err := s.beginInterrupt()
	if err == errTurnNotBegun {
		cs, err = s.awaitTurn(ctx)
	}
	if err != nil || cs == nil {
		return InterruptNotNeeded, err
	}
	wait := cmpOr(s.opts.InterruptTimeout, 5*time.Second)
	step := func(d time.Duration) bool {
		sctx, cancel := context.WithTimeout(ctx, d)
		defer cancel()
		for l := range s.Watch(sctx) {
			if !l.State.Busy() || s.Claude() != cs {
				return true
			}
		}
		return !s.State().State.Busy()
	}
	rctx, cancel := context.WithTimeout(ctx, wait)
	err = cs.Interrupt(rctx)
	cancel()
	if err == nil && step(wait) {
		return InterruptedByRequest, nil
	}
	if ctx.Err() != nil {
		return InterruptNotNeeded, ctx.Err()
	}
	if pid := cs.PID(); pid > 0 && signalInterrupt(pid) == nil && step(wait) {
		return InterruptedBySignal, nil
	}
	if ctx.Err() != nil {
		return InterruptNotNeeded, ctx.Err()
	}
	s.mu.Lock()
	if s.cs == cs {
		s.killed = true
	}
	s.mu.Unlock()
	if pid := cs.PID(); pid > 0 {
		_ = signalKill(pid)
	}
	cs.Close()
	return InterruptedByKill, nil
}
