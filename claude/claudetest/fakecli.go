package claudetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/internal/control"
	"github.com/tetherhq/tether/internal/wire"
)

// A Script plays the CLI's side of one session: it reads what the host
// writes and writes what the CLI would. When it returns, the fake CLI's
// stdout closes; a non-nil error makes the fake exit with a failure (a
// *claude.ProcessError with the error as stderr, in process or out).
type Script func(ctx context.Context, c *CLI) error

// FakeCLI is a claude.Transport that runs a Script in process, over pipes,
// instead of a CLI. It is the fastest way to unit-test code built on
// package claude: no process, no network.
//
//	opts := &claude.Options{Transport: &claudetest.FakeCLI{Script: func(ctx context.Context, c *claudetest.CLI) error {
//		if err := c.HandleInitialize(ctx); err != nil {
//			return err
//		}
//		if _, err := c.ReadUser(ctx); err != nil {
//			return err
//		}
//		c.Write(c.AssistantText("hello"), c.ResultSuccess("hello"))
//		return nil
//	}}}
//
// Every Connect runs the script afresh, so one FakeCLI serves many
// sessions. Launches records what each session asked for.
type FakeCLI struct {
	Script Script

	mu       sync.Mutex
	launches []*claude.Launch
}

// Launches returns the Launch of every Connect so far: the argv and
// environment a real CLI would have been started with.
func (f *FakeCLI) Launches() []*claude.Launch {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*claude.Launch(nil), f.launches...)
}

// Connect starts the script on a fresh pair of pipes.
func (f *FakeCLI) Connect(ctx context.Context, l *claude.Launch) (claude.Conn, error) {
	if f.Script == nil {
		return nil, errors.New("claudetest: FakeCLI.Script is nil")
	}
	f.mu.Lock()
	f.launches = append(f.launches, l)
	f.mu.Unlock()

	hostR, cliW := io.Pipe() // CLI stdout
	cliR, hostW := io.Pipe() // CLI stdin
	sctx, cancel := context.WithCancel(context.Background())
	c := newCLI(cliR, cliW, l)
	conn := &pipeConn{
		r:      wire.NewReader(hostR, l.MaxLineSize),
		w:      wire.NewWriter(hostW),
		hostR:  hostR,
		hostW:  hostW,
		cancel: cancel,
		done:   make(chan struct{}),
	}
	go func() {
		defer close(conn.done)
		err := f.Script(sctx, c)
		c.stop()
		if err != nil {
			conn.scriptErr = err
		}
		cliW.Close()
		cliR.CloseWithError(io.ErrClosedPipe)
	}()
	return conn, nil
}

// pipeConn is the host's end of an in-process fake.
type pipeConn struct {
	r         *wire.Reader
	w         *wire.Writer
	hostR     *io.PipeReader
	hostW     *io.PipeWriter
	cancel    context.CancelFunc
	done      chan struct{}
	scriptErr error // set before done closes
	closeOnce sync.Once
}

func (p *pipeConn) Read(ctx context.Context) ([]byte, error) {
	line, err := p.r.ReadLine()
	if err == nil || errors.Is(err, wire.ErrLineTooLong) {
		return line, err
	}
	<-p.done
	if p.scriptErr != nil {
		return nil, &claude.ProcessError{ExitCode: 1, Stderr: []string{p.scriptErr.Error()}, Err: p.scriptErr}
	}
	return nil, io.EOF
}

func (p *pipeConn) Write(ctx context.Context, line []byte) error {
	return p.w.WriteLineContext(ctx, line)
}

// Exited is closed once the script has returned: the fake CLI has
// exited (claude.ExitNotifier).
func (p *pipeConn) Exited() <-chan struct{} { return p.done }

// CloseInput closes the fake's stdin: the script reads io.EOF.
func (p *pipeConn) CloseInput() error { return p.hostW.Close() }

// Close closes stdin (the script sees EOF) and waits for the script, as a
// real CLI is given time to exit; the script's context is cancelled so a
// script blocked elsewhere ends too.
func (p *pipeConn) Close() error {
	p.closeOnce.Do(func() {
		p.hostW.Close()
		p.cancel()
		p.hostR.CloseWithError(io.EOF)
		<-p.done
	})
	return nil
}

// CLI is the fake CLI's end of the connection, handed to a Script.
type CLI struct {
	// Launch is what the host asked for (args, env, dir).
	Launch *claude.Launch

	r  *wire.Reader
	w  *wire.Writer
	wc io.Writer

	mu        sync.Mutex
	responses map[string]chan *control.ResponseBody // CLI-initiated requests awaiting answers
	backlog   [][]byte                              // lines read while waiting for a response
	seq       int
	sessionID string
	mcpIDs    map[string]int64 // next JSON-RPC id per in-process MCP server (fakecli_mcp.go)
	messages  atomic.Int64     // assistant lines written so far, for their message ids

	lines   chan []byte   // from readLoop
	readErr error         // why lines closed; set before the close
	quit    chan struct{} // closed by stop
	once    sync.Once
}

func newCLI(r io.Reader, w io.WriteCloser, l *claude.Launch) *CLI {
	c := &CLI{
		Launch:    l,
		r:         wire.NewReader(r, 0),
		w:         wire.NewWriter(w),
		wc:        w,
		responses: map[string]chan *control.ResponseBody{},
		sessionID: "00000000-0000-4000-8000-000000000001",
		lines:     make(chan []byte),
		quit:      make(chan struct{}),
	}
	go c.readLoop()
	return c
}

func (c *CLI) stop() { c.once.Do(func() { close(c.quit) }) }

// SessionID is the session id the fake reports in its messages.
func (c *CLI) SessionID() string { return c.sessionID }

// SetSessionID changes the session id used by the message builders.
func (c *CLI) SetSessionID(id string) { c.sessionID = id }

// Line is one line the host wrote, with its routing fields decoded.
type Line struct {
	Type      string
	RequestID string          // control_request / control_cancel_request
	Subtype   string          // control_request's request.subtype
	Request   json.RawMessage // control_request's request body
	Response  *control.ResponseBody
	Raw       json.RawMessage
}

func parseLine(b []byte) (*Line, error) {
	var env control.Envelope
	if err := json.Unmarshal(b, &env); err != nil {
		return nil, fmt.Errorf("claudetest: host wrote a line that is not JSON: %q: %w", b, err)
	}
	l := &Line{Type: env.Type, RequestID: env.RequestID, Request: env.Request, Response: env.Response, Raw: b}
	if env.Type == "control_request" {
		l.Subtype = control.Subtype(env.Request)
	}
	return l, nil
}

// Read returns the next line the host wrote. Control responses to the
// script's own Requests are routed to them and not returned. At the end
// of stdin it returns io.EOF.
func (c *CLI) Read(ctx context.Context) (*Line, error) {
	for {
		c.mu.Lock()
		if len(c.backlog) > 0 {
			b := c.backlog[0]
			c.backlog = c.backlog[1:]
			c.mu.Unlock()
			return parseLine(b)
		}
		c.mu.Unlock()
		b, err := c.readRaw(ctx)
		if err != nil {
			return nil, err
		}
		l, err := parseLine(b)
		if err != nil {
			return nil, err
		}
		if l.Type == "control_response" && c.deliver(l) {
			continue
		}
		return l, nil
	}
}

// readRaw returns the next raw line from the host, or ctx's error. A
// single reader goroutine owns the pipe, so a read abandoned on ctx loses
// nothing.
func (c *CLI) readRaw(ctx context.Context) ([]byte, error) {
	select {
	case r, ok := <-c.lines:
		if !ok {
			return nil, c.readErr
		}
		return r, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (c *CLI) readLoop() {
	defer close(c.lines)
	for {
		b, err := c.r.ReadLine()
		if err != nil {
			c.readErr = err
			return
		}
		select {
		case c.lines <- b:
		case <-c.quit:
			c.readErr = io.ErrClosedPipe
			return
		}
	}
}

func (c *CLI) deliver(l *Line) bool {
	if l.Response == nil {
		return false
	}
	c.mu.Lock()
	ch, ok := c.responses[l.Response.RequestID]
	delete(c.responses, l.Response.RequestID)
	c.mu.Unlock()
	if ok {
		ch <- l.Response
	}
	return ok
}

// Write writes messages to stdout, each encoded as one line: a []byte or
// json.RawMessage or string is written as it is, anything else through
// json.Marshal.
func (c *CLI) Write(msgs ...any) error {
	for _, m := range msgs {
		var b []byte
		switch v := m.(type) {
		case []byte:
			b = v
		case json.RawMessage:
			b = v
		case string:
			b = []byte(v)
		default:
			var err error
			if b, err = json.Marshal(v); err != nil {
				return fmt.Errorf("claudetest: encoding %T: %w", m, err)
			}
		}
		if err := c.w.WriteLine(b); err != nil {
			return err
		}
	}
	return nil
}

// Stdout is the fake's raw stdout, for scripts that write pre-framed
// lines in bulk (benchmarks); each write must end on a newline, and must
// not race with Write or Request.
func (c *CLI) Stdout() io.Writer { return c.wc }

// Expect reads the next line and fails unless it has the given type (and,
// for control requests, subtype when one is given).
func (c *CLI) Expect(ctx context.Context, typ string, subtype ...string) (*Line, error) {
	l, err := c.Read(ctx)
	if err != nil {
		return nil, fmt.Errorf("claudetest: expecting %s: %w", typ, err)
	}
	if l.Type != typ || (len(subtype) > 0 && l.Subtype != subtype[0]) {
		return l, fmt.Errorf("claudetest: expected %s %v, host wrote %s", typ, subtype, bytes.TrimSpace(l.Raw))
	}
	return l, nil
}

// Respond answers a host control request with success and payload (nil
// for none).
func (c *CLI) Respond(id string, payload any) error {
	var raw json.RawMessage
	if payload != nil {
		b, err := json.Marshal(payload)
		if err != nil {
			return err
		}
		raw = b
	}
	return c.Write(control.EncodeSuccess(id, raw))
}

// RespondError answers a host control request with an error.
func (c *CLI) RespondError(id, msg string) error {
	return c.Write(control.EncodeError(id, msg))
}

// Request sends a control request to the host (can_use_tool,
// hook_callback, mcp_message …) and waits for its answer. Lines the host
// writes meanwhile are kept for Read. A host error answer is returned as
// a *claude.ControlError.
func (c *CLI) Request(ctx context.Context, subtype string, body any) (json.RawMessage, error) {
	id, ch, err := c.SendRequest(subtype, body)
	if err != nil {
		return nil, err
	}
	return c.AwaitResponse(ctx, id, subtype, ch)
}

// SendRequest sends a control request without waiting; pass the returned
// channel to AwaitResponse. Use it to interleave requests, or to cancel one
// with Cancel.
func (c *CLI) SendRequest(subtype string, body any) (string, <-chan *control.ResponseBody, error) {
	raw, err := encodeBody(subtype, body)
	if err != nil {
		return "", nil, err
	}
	c.mu.Lock()
	c.seq++
	id := fmt.Sprintf("cli-req-%d", c.seq)
	ch := make(chan *control.ResponseBody, 1)
	c.responses[id] = ch
	c.mu.Unlock()
	return id, ch, c.Write(control.EncodeRequest(id, raw))
}

// AwaitResponse waits for the answer to a request sent with SendRequest,
// reading (and keeping for Read) whatever else the host writes meanwhile.
func (c *CLI) AwaitResponse(ctx context.Context, id, subtype string, ch <-chan *control.ResponseBody) (json.RawMessage, error) {
	for {
		select {
		case r := <-ch:
			if r.Subtype == "error" {
				return nil, &claude.ControlError{Subtype: subtype, Message: r.Error}
			}
			return r.Response, nil
		default:
		}
		b, err := c.readRaw(ctx)
		if err != nil {
			return nil, fmt.Errorf("claudetest: waiting for the answer to %s: %w", subtype, err)
		}
		l, err := parseLine(b)
		if err != nil {
			return nil, err
		}
		if l.Type == "control_response" && c.deliver(l) {
			continue
		}
		c.mu.Lock()
		c.backlog = append(c.backlog, b)
		c.mu.Unlock()
	}
}

// Cancel withdraws a request sent with SendRequest, as the CLI does when an
// interrupt aborts a pending permission prompt.
func (c *CLI) Cancel(id string) error {
	c.mu.Lock()
	delete(c.responses, id)
	c.mu.Unlock()
	return c.Write(control.EncodeCancel(id))
}

func encodeBody(subtype string, body any) (json.RawMessage, error) {
	if raw, ok := body.(json.RawMessage); ok && bytes.HasPrefix(raw, []byte("{")) && !bytes.Contains(raw, []byte(`"subtype"`)) {
		// Pre-encoded: splice the subtype in without a decode.
		sub, _ := json.Marshal(subtype)
		out := append([]byte(`{"subtype":`), sub...)
		if rest := bytes.TrimSpace(raw[1:]); len(rest) > 0 && rest[0] != '}' {
			out = append(out, ',')
		}
		return append(out, raw[1:]...), nil
	}
	m := map[string]any{}
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(b, &m); err != nil {
			return nil, fmt.Errorf("claudetest: request body must be a JSON object: %w", err)
		}
	}
	m["subtype"] = subtype
	return json.Marshal(m)
}
