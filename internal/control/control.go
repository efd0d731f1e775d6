// Package control correlates the CLI's control requests and responses. It
// deals only in raw JSON and request ids: it knows the envelope
// (control_request, control_response, control_cancel_request) but none of
// the request bodies, which belong to package claude.
package control

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"sync"

	"github.com/tetherhq/tether/internal/wire"
)

// Envelope is the part of a line the read loop needs to route it: the
// top-level type and, for control lines, the ids and bodies. Everything
// else stays raw.
type Envelope struct {
	Type      string          `json:"type"`
	RequestID string          `json:"request_id"`
	Request   json.RawMessage `json:"request"`  // control_request
	Response  *ResponseBody   `json:"response"` // control_response
}

// ResponseBody is the "response" object of a control_response line.
type ResponseBody struct {
	Subtype   string          `json:"subtype"` // "success" or "error"
	RequestID string          `json:"request_id"`
	Response  json.RawMessage `json:"response"` // absent for payload-less successes
	Error     string          `json:"error"`

	// The CLI's requests still waiting for an answer, each a whole
	// control_request line, which it lists in its answer to initialize
	// so that a host joining late can answer them.
	PendingPermission  []json.RawMessage `json:"pending_permission_requests,omitempty"`
	PendingUserDialog  []json.RawMessage `json:"pending_user_dialog_requests,omitempty"`
	PendingElicitation []json.RawMessage `json:"pending_elicitation_requests,omitempty"`
}

// PeekType returns the value of a line's top-level "type" member when the
// line starts with it, which is how the CLI writes every line; ok is false
// when the caller must fall back to a full decode. It saves a parse of
// every streamed token.
func PeekType(line []byte) (typ string, ok bool) {
	return wire.PeekString(line, `{"type":"`)
}

// IsControl reports whether typ is one of the envelope types this package
// routes.
func IsControl(typ string) bool {
	switch typ {
	case "control_request", "control_response", "control_cancel_request":
		return true
	}
	return false
}

// Subtype returns the "subtype" member of a request body.
func Subtype(req json.RawMessage) string {
	if st, ok := wire.PeekString(req, `{"subtype":"`); ok {
		return st
	}
	var s struct {
		Subtype string `json:"subtype"`
	}
	_ = json.Unmarshal(req, &s)
	return s.Subtype
}

// requestHead is how the CLI starts every control_request line.
const requestHead = `{"type":"control_request","request_id":"`

// PeekRequest returns a control_request line's id and request body
// without a general decode, when the line is written the way the CLI
// writes it (type, request_id, request, in that order, no spaces, an id
// without escapes). ok is false when the caller must decode the line in
// full. req is a copy: the line's buffer may be reused.
func PeekRequest(line []byte) (id string, req json.RawMessage, ok bool) {
	id, ok = wire.PeekString(line, requestHead)
	if !ok {
		return "", nil, false
	}
	rest := line[len(requestHead)+len(id):]
	const mid = `","request":`
	if !bytes.HasPrefix(rest, []byte(mid)) || !bytes.HasSuffix(rest, []byte("}")) {
		return "", nil, false
	}
	body := rest[len(mid) : len(rest)-1]
	if len(body) == 0 || body[0] != '{' || !json.Valid(body) {
		return "", nil, false
	}
	return id, bytes.Clone(body), true
}

// EncodeRequest builds a control_request line. body must be a JSON object
// that includes its subtype.
func EncodeRequest(id string, body json.RawMessage) []byte {
	b := make([]byte, 0, len(body)+64)
	b = append(b, `{"type":"control_request","request_id":`...)
	b = strconv.AppendQuote(b, id)
	b = append(b, `,"request":`...)
	b = append(b, body...)
	return append(b, '}')
}

// EncodeSuccess builds a successful control_response line; payload may be
// nil.
func EncodeSuccess(id string, payload json.RawMessage) []byte {
	b := make([]byte, 0, len(payload)+96)
	b = append(b, `{"type":"control_response","response":{"subtype":"success","request_id":`...)
	b = strconv.AppendQuote(b, id)
	if len(payload) > 0 {
		b = append(b, `,"response":`...)
		b = append(b, payload...)
	}
	return append(b, "}}"...)
}

// EncodeError builds an error control_response line.
func EncodeError(id, msg string) []byte {
	m, _ := json.Marshal(msg)
	b := make([]byte, 0, len(m)+96)
	b = append(b, `{"type":"control_response","response":{"subtype":"error","request_id":`...)
	b = strconv.AppendQuote(b, id)
	b = append(b, `,"error":`...)
	b = append(b, m...)
	return append(b, "}}"...)
}

// EncodeCancel builds a control_cancel_request line.
func EncodeCancel(id string) []byte {
	b := []byte(`{"type":"control_cancel_request","request_id":`)
	b = strconv.AppendQuote(b, id)
	return append(b, '}')
}

// Result is what a pending request receives.
type Result struct {
	Payload json.RawMessage // response.response; nil when the CLI sent none
	Err     string          // the CLI's error text when IsError
	IsError bool
}

// Table is the in-flight table of outgoing requests. Its zero value is not
// usable; call NewTable.
type Table struct {
	prefix string

	mu      sync.Mutex
	seq     uint64
	pending map[string]chan Result
	err     error         // why the table closed
	done    chan struct{} // closed by Close
}

// NewTable returns a table whose ids start with prefix. A per-session
// prefix keeps ids unique when one CLI is re-attached to another host.
func NewTable(prefix string) *Table {
	return &Table{prefix: prefix, pending: map[string]chan Result{}, done: make(chan struct{})}
}

// Add registers a new request and returns its id. The channel receives
// exactly one Result, unless the request is removed or the table closes
// first (see Done and Err).
func (t *Table) Add() (id string, ch <-chan Result, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.err != nil {
		return "", nil, t.err
	}
	t.seq++
	id = t.prefix + strconv.FormatUint(t.seq, 10)
	c := make(chan Result, 1)
	t.pending[id] = c
	return id, c, nil
}

// Resolve delivers r to the request with the given id and retires it. It
// reports false for an unknown id (a late answer to a cancelled request).
func (t *Table) Resolve(id string, r Result) bool {
	t.mu.Lock()
	c, ok := t.pending[id]
	delete(t.pending, id)
	t.mu.Unlock()
	if ok {
		c <- r // buffered: never blocks
	}
	return ok
}

// Remove retires a request without an answer (its caller gave up).
func (t *Table) Remove(id string) {
	t.mu.Lock()
	delete(t.pending, id)
	t.mu.Unlock()
}

// Close fails every pending request and every later Add with err.
func (t *Table) Close(err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.err != nil {
		return
	}
	t.err = err
	t.pending = map[string]chan Result{}
	close(t.done)
}

// Done is closed when the table closes.
func (t *Table) Done() <-chan struct{} { return t.done }

// Err returns why the table closed, or nil.
func (t *Table) Err() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.err
}

// Len returns the number of requests in flight.
func (t *Table) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.pending)
}

// ErrCancelled is the cause attached to the context of an inbound request
// the CLI cancelled with control_cancel_request.
var ErrCancelled = errors.New("claude: request cancelled by the CLI")

// Inbound tracks the requests the CLI sent us that are being served, so a
// control_cancel_request can cancel the right callback.
type Inbound struct {
	mu sync.Mutex
	m  map[string]context.CancelCauseFunc
	wg sync.WaitGroup
}

// Start registers request id and returns the context its handler runs
// under, and a function to call when the handler is done.
func (in *Inbound) Start(parent context.Context, id string) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(parent)
	in.mu.Lock()
	if in.m == nil {
		in.m = map[string]context.CancelCauseFunc{}
	}
	in.m[id] = cancel
	in.wg.Add(1)
	in.mu.Unlock()
	return ctx, func() {
		in.mu.Lock()
		delete(in.m, id)
		in.mu.Unlock()
		cancel(nil)
		in.wg.Done()
	}
}

// Cancel cancels the handler of request id with ErrCancelled. It reports
// whether such a handler was running.
func (in *Inbound) Cancel(id string) bool {
	in.mu.Lock()
	cancel, ok := in.m[id]
	in.mu.Unlock()
	if ok {
		cancel(ErrCancelled)
	}
	return ok
}

// Running reports whether a handler for request id is running.
func (in *Inbound) Running(id string) bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	_, ok := in.m[id]
	return ok
}

// Len returns the number of handlers running.
func (in *Inbound) Len() int {
	in.mu.Lock()
	defer in.mu.Unlock()
	return len(in.m)
}

// Wait waits for every handler started so far to finish.
func (in *Inbound) Wait() { in.wg.Wait() }
