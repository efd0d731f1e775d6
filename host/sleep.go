package host

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/tetherhq/tether/claude"
)

// Sessions that sleep. An open session that nobody uses still costs its
// CLI process (150 MiB and more): most of a busy host's memory. A
// sleeping session keeps everything the host knows of it (id, journal
// and its numbering, cost, options, owner) and closes its CLI; the next
// command starts a CLI again that resumes the conversation from the
// transcript the CLI keeps on disk, and then runs. Nothing is lost and
// nothing is numbered twice: it is the same Session, with the same
// journal.
//
// A session sleeps only when it has nothing to do: no turn under way, no
// approval or question pending, no prompt unanswered, no background task
// the CLI reported running, no command in progress. Who decides when is
// the Manager (ManagerOptions.SleepAfter) or the program (Session.Sleep).

// ErrNotIdle is returned by Sleep when the session has something to do
// (a turn, a pending approval or question, an unanswered prompt, a
// running background task, a command in progress) or cannot be woken
// again (session persistence off, a parked spare).
var ErrNotIdle = errors.New("host: the session is not idle")

// sleepKeep is how many of its newest events a sleeping session's journal
// keeps: a sleeper holds its transcript (for snapshots) and little else.
// A subscriber further behind resyncs from a snapshot.
const sleepKeep = 64

// maxWakeWaiters bounds the commands that may wait for one wake: past
// it, a command fails with ErrBusy rather than queue without limit.
const maxWakeWaiters = 64

// wakeTimeout bounds a wake's CLI start, whoever's command started it.
const wakeTimeout = time.Minute

// WakeError is why a sleeping session could not be woken (the CLI did
// not start, or Options.OnWake refused). The session stays asleep, in
// StateError with this error, and the next command tries again; the
// command that asked for the wake fails with it (a send's prompt was
// not sent).
type WakeError struct {
	Err error
}

func (e *WakeError) Error() string { return "host: waking the session: " + e.Err.Error() }

func (e *WakeError) Unwrap() error { return e.Err }

// Asleep reports whether the session is asleep (StateAsleep, or
// StateError after a failed wake): it has no CLI process, and the next
// command wakes it.
func (s *Session) Asleep() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.asleep && !s.waking
}

// Sleep closes the session's CLI and keeps the session, in StateAsleep,
// until a command (Do, SendMessage) or Wake wakes it. Its journal keeps
// its numbering and its transcript, but only its newest 64 events: a
// subscriber that needs an older one resyncs from a snapshot, as after
// any of the journal's bounds.
//
// It returns ErrNotIdle, and changes nothing, unless the session has
// nothing to do: no turn under way, no approval or question pending, no
// prompt unanswered, no background task the CLI reported running, no
// command in progress, and a conversation the CLI can resume (session
// persistence on). It returns nil when the session is asleep already,
// and waits for the CLI to exit.
func (s *Session) Sleep(ctx context.Context) error {
	s.mu.Lock()
	switch {
	case s.closed || s.ended:
		s.mu.Unlock()
		return ErrSessionClosed
	case s.asleep && !s.waking:
		s.mu.Unlock()
		return nil
	}
	if why := s.busyLocked(); why != "" {
		s.mu.Unlock()
		return fmt.Errorf("%w: %s", ErrNotIdle, why)
	}
	cs, ran := s.cs, s.ranDone
	s.asleep, s.wakeErr = true, nil
	s.mu.Unlock()
	// The receive loop sees the CLI end and, s.asleep being set, keeps
	// the session (disconnected).
	cs.Close()
	select {
	case <-ran:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// busyLocked says why the session cannot sleep now, "" when it can
// (s.mu held).
func (s *Session) busyLocked() string {
	switch {
	case s.waking:
		return "waking"
	case s.cs == nil || !s.connected:
		return "no CLI running"
	case s.spare != nil:
		return "a spare"
	case s.base.NoSessionPersistence:
		return "session persistence is off: the conversation could not be resumed"
	case s.turn || s.interrupting:
		return "a turn is under way"
	case len(s.approvals) > 0:
		return "an approval or question is pending"
	case len(s.deliveries) > 0:
		return "a prompt is unanswered"
	case len(s.tasks) > 0:
		return "a background task is running"
	case s.inflight > 0:
		return "a command is in progress"
	}
	return ""
}

// Wake starts the CLI of a sleeping session again, resuming its
// conversation, and returns once it is ready (nil at once when the
// session is awake). Commands wake a session themselves; Wake is for a
// program that wants the CLI up before it is needed. Calls while a wake
// is under way wait for it (at most 64 at once: more fail with ErrBusy).
// A failed wake returns a *WakeError.
func (s *Session) Wake(ctx context.Context) error {
	s.mu.Lock()
	if s.closed || s.ended {
		s.mu.Unlock()
		return ErrSessionClosed
	}
	if !s.asleep {
		s.mu.Unlock()
		return nil
	}
	if s.waking {
		if s.wakeWaiters >= maxWakeWaiters {
			s.mu.Unlock()
			return &CommandError{Code: CodeBusy, Message: fmt.Sprintf("more than %d commands wait for the session to wake", maxWakeWaiters), Err: ErrBusy}
		}
		s.wakeWaiters++
		done := s.wakeDone
		s.mu.Unlock()
		defer func() {
			s.mu.Lock()
			s.wakeWaiters--
			s.mu.Unlock()
		}()
		select {
		case <-done:
		case <-ctx.Done():
			return ctx.Err()
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.wakeErr != nil {
			return s.wakeErr
		}
		return nil
	}
	// s.cs is nil, but the last CLI's receive loop may still be ending.
	ran := s.ranDone
	s.waking, s.wakeErr = true, nil
	s.wakeDone = make(chan struct{})
	done := s.wakeDone
	s.transition() // waking
	s.wg.Add(1)
	s.mu.Unlock()
	defer s.wg.Done()
	if ran != nil {
		<-ran
	}

	// One wake serves every command waiting: a caller that gives up must
	// not fail it for the others.
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), wakeTimeout)
	defer cancel()
	err := s.wake(wctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil && !errors.Is(err, claude.ErrClosed) {
		s.log.Warn("host: waking the session", "session", s.id, "err", err)
		s.wakeErr = &WakeError{Err: err}
	}
	s.waking = false
	s.transition()
	close(done)
	if s.closed {
		return ErrSessionClosed
	}
	if s.wakeErr != nil {
		return s.wakeErr
	}
	return nil
}

// wake starts the CLI again (reconnect), after OnWake.
func (s *Session) wake(ctx context.Context) error {
	if f := s.opts.OnWake; f != nil {
		s.mu.Lock()
		o := s.base
		s.mu.Unlock()
		o.Env = maps.Clone(o.Env)
		o.DisallowedTools = slices.Clone(o.DisallowedTools)
		if err := callOnWake(ctx, f, s, &o); err != nil {
			return err
		}
		// The host's wiring stays whatever the hook did.
		o.ReplayUserMessages, o.CanUseTool, o.ObserveControl = true, s.canUseTool, s.observe
		if s.elicit {
			o.OnElicitation = s.onElicitation
		}
		if o.Env == nil {
			o.Env = map[string]string{}
		}
		o.Env["CLAUDE_CODE_EMIT_SESSION_STATE_EVENTS"] = "1"
		s.mu.Lock()
		s.base = o
		s.mu.Unlock()
	}
	return s.reconnect(ctx)
}

// callOnWake calls Options.OnWake, a panic refusing the wake.
func callOnWake(ctx context.Context, f func(context.Context, *Session, *claude.Options) error, s *Session, o *claude.Options) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("host: Options.OnWake panicked: %v", p)
		}
	}()
	return f(ctx, s, o)
}

// awake wakes the session for c, and counts the command in progress
// until done is called, so that the session does not fall asleep under
// it. It returns the ctx to run c with: a prompt that came while the
// session slept is sent once it is awake even if its sender has gone
// meanwhile (a closed tab, a reconnect), so a wake never drops a prompt
// the server took.
func (s *Session) awake(ctx context.Context, c *Command) (_ context.Context, done func(), err error) {
	s.mu.Lock()
	s.inflight++
	asleep := s.asleep
	s.mu.Unlock()
	done = func() {
		s.mu.Lock()
		s.inflight--
		s.mu.Unlock()
	}
	if asleep && c.Type == CommandSend {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), wakeTimeout+sendAfterWake)
		inner := done
		done = func() { cancel(); inner() }
	}
	if err := s.Wake(ctx); err != nil {
		done()
		return nil, nil, err
	}
	return ctx, done, nil
}

// sendAfterWake bounds the send of a prompt that woke the session, past
// the wake.
const sendAfterWake = 30 * time.Second
