package serve

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/tetherhq/tether/host"
	"github.com/tetherhq/tether/team"
)

// The session service's types are host's (host/backend.go): serve and
// cluster are peers that both speak it, and neither imports the other.
// These names stay for the programs written against them.
type (
	// Backend is where sessions live: the server talks to sessions only
	// through it. See host.Backend.
	Backend = host.Backend
	// SessionInfo is one line of the sessions list.
	SessionInfo = host.SessionInfo
	// StartRequest says what session to start.
	StartRequest = host.StartRequest
	// DiskSession is a conversation the CLI keeps on disk.
	DiskSession = host.DiskSession
	// Result is the result of a command. See host.BackendResult.
	Result = host.BackendResult
)

// Error codes of the protocol (docs/serve-protocol.md). Those of
// commands are host's, passed on as they are.
const (
	CodeBadRequest         = host.CodeBadRequest
	CodeUnknownType        = host.CodeUnknownType
	CodeUnsupportedVersion = "unsupported_version"
	CodeNoSession          = host.CodeNoSession
	CodeSessionClosed      = host.CodeSessionClosed
	CodeNoApproval         = host.CodeNoApproval
	CodeAlreadyAnswered    = host.CodeAlreadyAnswered
	CodeWithdrawn          = host.CodeWithdrawn
	CodeNotAQuestion       = host.CodeNotAQuestion
	CodeFormInvalid        = host.CodeFormInvalid
	CodeNotQueued          = host.CodeNotQueued
	CodeForbidden          = host.CodeForbidden
	CodeBusy               = host.CodeBusy
	CodeTimeout            = host.CodeTimeout
	CodeUnavailable        = host.CodeUnavailable
	CodeInternal           = host.CodeInternal
	CodeUnauthorized       = "unauthorized"
	CodeForbiddenHost      = "forbidden_host"
	CodeForbiddenOrigin    = "forbidden_origin"
	CodeNotFound           = "not_found"
	CodeMethodNotAllowed   = "method_not_allowed"
	CodeTooLarge           = host.CodeTooLarge
	CodeRateLimited        = "rate_limited"
	// CodeWaitingForAgent: the session has no agent right now (tether
	// serve --nats: its agent drained with no other agent left, or is
	// gone); it has not ended, and goes on once an agent takes it.
	CodeWaitingForAgent = host.CodeWaitingForAgent
	// CodeUnsupported: a process of another release on the way (tether
	// serve --nats) cannot do what was asked: the message says which.
	CodeUnsupported = host.CodeUnsupported
)

// Error is a protocol error: a code from the table in the protocol
// document and a message for people. Backends return one (or an error
// wrapping a sentinel below) so that clients get the right code.
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// Sentinel errors a Backend may return (wrapped); the server maps them
// to codes. host's approval and delivery errors are mapped too.
//
// They are host's own values, not copies: an error means one
// thing whichever layer returned it, so errors.Is(err, host.ErrForbidden)
// and errors.Is(err, serve.ErrForbidden) agree (before 0.8.0 they were
// separate values and did not).
var (
	ErrNoSession     = host.ErrNoSession
	ErrSessionClosed = host.ErrSessionClosed
	ErrForbidden     = host.ErrForbidden
	ErrBadRequest    = host.ErrBadCommand
	// ErrUnavailable: what the backend depends on is out of reach (the
	// cluster's NATS); the request changed nothing.
	ErrUnavailable = host.ErrUnavailable
)

// protoError maps err to the protocol's error: serve's sentinels, then
// host's codes (which commands' errors carry, from wherever they ran).
func protoError(err error) *Error {
	var pe *Error
	if errors.As(err, &pe) {
		return pe
	}
	// A code a backend chose (host.CodeWaitingForAgent, …) wins over the
	// sentinels its cause may wrap.
	if ce := (*host.CommandError)(nil); errors.As(err, &ce) && ce.Code != "" {
		return &Error{Code: ce.Code, Message: err.Error()}
	}
	var code string
	switch {
	case errors.Is(err, ErrNoSession):
		code = CodeNoSession
	case errors.Is(err, ErrSessionClosed):
		code = CodeSessionClosed
	case errors.Is(err, ErrForbidden):
		code = CodeForbidden
	case errors.Is(err, ErrBadRequest):
		code = CodeBadRequest
	case errors.Is(err, ErrUnavailable):
		code = CodeUnavailable
	case errors.Is(err, team.ErrUnauthenticated):
		code = CodeUnauthenticated
	default:
		code = host.ErrorCode(err)
	}
	return &Error{Code: code, Message: err.Error()}
}

func errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// rawJSON marshals v, which is known to marshal.
func rawJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		b, _ = json.Marshal(map[string]string{"error": err.Error()})
	}
	return b
}

// DefaultCwder is implemented by a Backend that starts sessions without a
// cwd in a default directory; the server names it to clients in the hello
// frame ("default_cwd"), so a UI can offer it rather than an empty field.
type DefaultCwder interface {
	DefaultCwd() string
}
