package cluster

import (
	"errors"
	"fmt"

	"github.com/tetherhq/tether/host"
)

// Sentinel errors. They come wrapped (in a *MessageError or a
// *CommandError, or with context); match them with errors.Is.
var (
	// ErrMalformed: a message on the bus does not follow the schema of its
	// subject (bad JSON, a missing or invalid field, an unknown command).
	ErrMalformed = errors.New("cluster: malformed message")
	// ErrTooLarge: a message is bigger than the limit of its subject.
	ErrTooLarge = errors.New("cluster: message too large")
	// ErrNoSession: no session has that id, or it has ended.
	// It is host.ErrNoSession itself, as serve's is.
	ErrNoSession = host.ErrNoSession
	// ErrDisconnected: the session has no agent: its agent is gone (it
	// died, or lost its connection to NATS for longer than the heartbeat
	// bound; Resume can bring the session back on another agent), or
	// drained with no agent left to take the session, which waits in the
	// work queue for one. tether serve says waiting_for_agent.
	ErrDisconnected = errors.New("cluster: session disconnected")
	// ErrOwned: a failover was asked for a session whose agent is alive,
	// or another agent took it over first.
	ErrOwned = errors.New("cluster: session owned by a live agent")
	// ErrNoTranscript: a failover found no mirrored transcript to resume.
	ErrNoTranscript = errors.New("cluster: no mirrored transcript")
	// ErrClosed: the Agent or Client was closed.
	ErrClosed = errors.New("cluster: closed")
	// ErrStartFailed: the agent that took a start request could not start
	// the CLI; CommandError.Message says why.
	ErrStartFailed = errors.New("cluster: session start failed")
	// ErrUnavailable: NATS is out of reach (the connection is down and
	// reconnecting); nothing was done.
	ErrUnavailable = errors.New("cluster: NATS unavailable")
)

// MessageError is a message refused because it is oversized or malformed.
// It had no effect.
type MessageError struct {
	Subject string // where it came from (or was going to)
	Reason  string // what is wrong, without the message's content
	Err     error  // ErrMalformed or ErrTooLarge
}

func (e *MessageError) Error() string {
	return fmt.Sprintf("%v on %s: %s", e.Err, e.Subject, e.Reason)
}

func (e *MessageError) Unwrap() error { return e.Err }

// CommandError is a refusal of the cluster's own: a session that is not
// there or whose agent is gone, a message refused, a failover or start
// that failed. Code is a stable, machine-readable name; Unwrap gives the
// matching sentinel. (A command the session itself refused comes back as
// a *host.CommandError instead, so that errors.Is(err,
// host.ErrAlreadyAnswered) holds for an approval answered twice,
// whichever server or agent the two answers went through.)
type CommandError struct {
	Code    string
	Message string
}

func (e *CommandError) Error() string {
	if e.Message == "" {
		return "cluster: " + e.Code
	}
	return "cluster: " + e.Code + ": " + e.Message
}

// Unwrap maps the code to its sentinel (nil for an unknown code).
func (e *CommandError) Unwrap() error { return codeErrors[e.Code] }

// The cluster's own error codes on the wire. A command's refusal by the
// session (host.Session.Do) crosses with host's code instead and comes
// back as a *host.CommandError, matching host's sentinels.
const (
	codeMalformed    = "malformed"
	codeTooLarge     = "too_large"
	codeNoSession    = "no_session"
	codeDisconnected = "disconnected"
	codeOwned        = "owned"
	codeNoTranscript = "no_transcript"
	codeStartFailed  = "start_failed"
	codeUnsupported  = "unsupported"
)

var codeErrors = map[string]error{
	codeMalformed:    ErrMalformed,
	codeTooLarge:     ErrTooLarge,
	codeNoSession:    ErrNoSession,
	codeDisconnected: ErrDisconnected,
	codeOwned:        ErrOwned,
	codeNoTranscript: ErrNoTranscript,
	codeStartFailed:  ErrStartFailed,
	codeUnsupported:  ErrUnsupported,
}

// wireErr turns an error into its wire form: the cluster's code, or
// host's stable code (host.ErrorCode). Only the error's text crosses the
// bus, never a payload.
func wireErr(err error) *wireError {
	if err == nil {
		return nil
	}
	var ce *CommandError
	if errors.As(err, &ce) {
		return &wireError{Code: ce.Code, Message: ce.Message}
	}
	for code, sentinel := range codeErrors {
		if errors.Is(err, sentinel) {
			return &wireError{Code: code, Message: err.Error()}
		}
	}
	return &wireError{Code: host.ErrorCode(err), Message: err.Error()}
}

func (w *wireError) err() error {
	if w == nil {
		return nil
	}
	if _, ok := codeErrors[w.Code]; ok {
		return &CommandError{Code: w.Code, Message: w.Message}
	}
	return &host.CommandError{Code: w.Code, Message: w.Message}
}
