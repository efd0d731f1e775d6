package host

import (
	"context"
	"fmt"
	"iter"
	"strings"
	"time"
)

// State is what a session is doing right now, as a UI should show it.
type State int

// States. A session starts in StateStarting; StateDisconnected is final
// unless a RestartPolicy brings the session back (to StateStarting).
const (
	// StateStarting: the CLI is being started (or restarted).
	StateStarting State = iota
	// StateReady: the CLI is up and initialized and has run no turn yet.
	StateReady
	// StateRequesting: an API call is under way (Liveness.Attempt > 0
	// while the CLI retries a failed one).
	StateRequesting
	// StateThinking: the model is writing a thinking block.
	StateThinking
	// StateStreaming: the model is writing text, or a tool call
	// (Liveness.Tool names the tool).
	StateStreaming
	// StateRunningTool: a tool the model called is running
	// (Liveness.Tool).
	StateRunningTool
	// StateAwaitingApproval: the CLI waits for a person to allow or deny
	// a tool call (Liveness.Approval).
	StateAwaitingApproval
	// StateAwaitingAnswer: the model asked the user a question
	// (AskUserQuestion) and waits for the answer (Liveness.Approval).
	StateAwaitingAnswer
	// StateInterrupting: the host asked the turn to stop and waits for
	// its result.
	StateInterrupting
	// StateIdle: the last turn ended; the session waits for a prompt. An
	// interrupted turn ends here too (with Liveness.Err saying so),
	// though the CLI reports it as an error.
	StateIdle
	// StateError: the last turn ended in error (the result's is_error;
	// Liveness.Err is the *claude.ResultError); the session waits for a
	// prompt.
	StateError
	// StateDisconnected: the CLI is gone; Liveness.Err says why (nil for
	// a clean exit, claude.ErrClosed after Close, a *claude.ProcessError
	// when it died).
	StateDisconnected
	// StateAsleep: the session had nothing to do and its CLI was closed
	// to free its memory (Session.Sleep, ManagerOptions.SleepAfter); it
	// keeps its id, journal, cost and options, and the next command
	// wakes it. (After a failed wake the session is asleep still, but
	// shows StateError with a *WakeError.) Added after the others, so
	// that the values above keep their numbers.
	StateAsleep
	// StateWaking: a command woke the session; its CLI is starting again,
	// resuming the conversation, and the command runs once it is up.
	StateWaking
)

var stateNames = [...]string{
	StateStarting:         "starting",
	StateReady:            "ready",
	StateRequesting:       "requesting",
	StateThinking:         "thinking",
	StateStreaming:        "streaming",
	StateRunningTool:      "running_tool",
	StateAwaitingApproval: "awaiting_approval",
	StateAwaitingAnswer:   "awaiting_answer",
	StateInterrupting:     "interrupting",
	StateIdle:             "idle",
	StateError:            "error",
	StateDisconnected:     "disconnected",
	StateAsleep:           "asleep",
	StateWaking:           "waking",
}

// String returns the state's name in snake case ("awaiting_approval").
func (st State) String() string {
	if st >= 0 && int(st) < len(stateNames) {
		return stateNames[st]
	}
	return fmt.Sprintf("State(%d)", int(st))
}

// Busy reports whether a turn is under way: a prompt sent now is queued
// by the CLI and merged into the next turn.
func (st State) Busy() bool { return st >= StateRequesting && st <= StateInterrupting }

// Liveness is a session's state with what goes with it. It is a value:
// Session.State and Session.Watch hand out copies.
type Liveness struct {
	State State
	// Since is when the session entered this Liveness.
	Since time.Time
	// Seq numbers the transitions of the session, from 1.
	Seq uint64
	// Missed is, in values from Session.Watch, how many transitions were
	// coalesced into this one because the watcher fell far behind.
	Missed uint64

	// Tool is the tool being called, run or approved (StateStreaming of
	// a tool call, StateRunningTool, StateAwaitingApproval).
	Tool string
	// Attempt is the retry number of the API call in StateRequesting (0
	// for the first try).
	Attempt int
	// Approval is the pending request in StateAwaitingApproval and
	// StateAwaitingAnswer (the oldest, when several are pending).
	Approval *Approval
	// Err is the failed turn's *claude.ResultError in StateError (and in
	// StateIdle after an interrupt), and the cause in StateDisconnected.
	Err error
}

// String renders l compactly: "running_tool Bash", "requesting retry 2",
// "disconnected: claude: CLI exited with code 1".
func (l Liveness) String() string {
	var b strings.Builder
	b.WriteString(l.State.String())
	if l.Tool != "" {
		b.WriteString(" " + l.Tool)
	}
	if l.Attempt > 0 {
		fmt.Fprintf(&b, " retry %d", l.Attempt)
	}
	if l.Err != nil && l.State == StateDisconnected {
		fmt.Fprintf(&b, ": %v", l.Err)
	}
	return b.String()
}

// same reports whether two values describe the same state, so that a
// repeated event makes no transition.
func (l Liveness) same(o Liveness) bool {
	return l.State == o.State && l.Tool == o.Tool && l.Attempt == o.Attempt &&
		l.Approval == o.Approval && l.Err == o.Err
}

// watchBacklog is how many transitions a watcher may fall behind before
// they are coalesced.
const watchBacklog = 256

type watcher struct {
	q      []Liveness
	signal chan struct{} // 1-buffered
}

// push queues l for w (the session's lock is held).
func (w *watcher) push(l Liveness) {
	if n := len(w.q); n >= watchBacklog {
		// Coalesce into the newest queued value, and say how many were
		// folded into it.
		missed := w.q[n-1].Missed + 1
		w.q[n-1] = l
		w.q[n-1].Missed = missed
	} else {
		w.q = append(w.q, l)
	}
	select {
	case w.signal <- struct{}{}:
	default:
	}
}

// Watch yields the session's state now, then every transition, in
// order, until the session ends for good (after yielding its final
// StateDisconnected) or ctx is done. The watcher is registered when Watch
// is called, so no transition after the call is missed.
//
// Buffering: transitions queue per watcher and never block the session.
// A watcher that falls more than 256 transitions behind gets them
// coalesced: it sees the latest state, with Liveness.Missed saying how
// many transitions it skipped. The iterator is single-use.
func (s *Session) Watch(ctx context.Context) iter.Seq[Liveness] {
	w := &watcher{signal: make(chan struct{}, 1)}
	s.mu.Lock()
	w.push(s.live)
	ended := s.ended
	if !ended {
		s.watchers[w] = struct{}{}
	}
	s.mu.Unlock()
	stop := context.AfterFunc(ctx, func() { s.unwatch(w) })
	return func(yield func(Liveness) bool) {
		defer stop()
		defer s.unwatch(w)
		for {
			s.mu.Lock()
			q := w.q
			w.q = nil
			_, live := s.watchers[w]
			s.mu.Unlock()
			for _, l := range q {
				if !yield(l) {
					return
				}
			}
			if !live {
				return
			}
			select {
			case <-w.signal:
			case <-ctx.Done():
				return
			}
		}
	}
}

func (s *Session) unwatch(w *watcher) {
	s.mu.Lock()
	delete(s.watchers, w)
	s.mu.Unlock()
	select {
	case w.signal <- struct{}{}:
	default:
	}
}
