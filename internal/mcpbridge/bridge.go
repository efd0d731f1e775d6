// Package mcpbridge runs an *mcp.Server inside the host and connects it to
// the Claude Code CLI through the CLI's mcp_message control requests.
//
// The CLI is the MCP client. Each JSON-RPC message it sends arrives as one
// control request; a request's answer is the server's JSON-RPC response.
// Messages the server sends on its own (list_changed and progress
// notifications, pings) have no request to answer, so they go out through
// a SendFunc, which the host turns into an mcp_message control request of
// its own: the CLI feeds those to its MCP client.
//
// The bridge is a custom mcp.Transport: the server is the official SDK's,
// with its tool, resource and prompt handling, schemas and errors; the
// bridge only moves messages. It knows the CLI's conventions (the
// acknowledgement it expects for a notification) but nothing of the
// control protocol around them.
package mcpbridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Ack is what the CLI expects back for a message that has no response of
// its own (a notification, or a response to a server request). The CLI
// feeds it to its MCP client, which ignores a response to an id it is not
// waiting for; the TypeScript Agent SDK answers the same way.
var Ack = json.RawMessage(`{"jsonrpc":"2.0","result":{},"id":0}`)

// ErrClosed is returned by Handle after Close.
var ErrClosed = errors.New("mcp bridge closed")

// A SendFunc delivers a message the server sends on its own to the CLI. It
// is called from one goroutine per bridge, in the order the server wrote
// the messages, and may block until the CLI has taken the message.
type SendFunc func(ctx context.Context, msg json.RawMessage) error

// A Bridge connects one *mcp.Server to the CLI. One MCP session of the
// server lives as long as the CLI's MCP connection: a new MCP initialize
// from the CLI (after a reconnect) starts a new session.
//
// Handle may be called concurrently; Close and Wait end everything the
// bridge started.
type Bridge struct {
	srv  *mcp.Server
	send SendFunc
	log  *slog.Logger

	mu      sync.Mutex
	cur     *conn
	ss      *mcp.ServerSession
	closed  bool
	closing chan struct{} // closed by Close
	down    chan struct{} // closed when Close has ended everything

	wg sync.WaitGroup // retired sessions, ending

	toolMeta map[string]any // merged into each tool of a tools/list answer
}

// SetToolMeta makes the bridge merge meta into the _meta of every tool in
// the server's tools/list answers, over keys the tool sets itself: a
// server-wide setting the CLI reads per tool (anthropic/alwaysLoad). Call
// it before the first Handle.
func (b *Bridge) SetToolMeta(meta map[string]any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.toolMeta = meta
}

// New returns a bridge for srv. send receives what the server sends on
// its own; log receives what the bridge drops (nil discards it). New makes
// srv recover its handlers' panics (see Recover).
func New(srv *mcp.Server, send SendFunc, log *slog.Logger) *Bridge {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	Recover(srv, log)
	return &Bridge{srv: srv, send: send, log: log, closing: make(chan struct{}), down: make(chan struct{})}
}

// Server returns the bridged server.
func (b *Bridge) Server() *mcp.Server { return b.srv }

// Handle delivers one JSON-RPC message from the CLI to the server. For a
// request it returns the server's response; for a notification or a
// response it returns Ack as soon as the server has taken the message.
//
// If ctx ends while a request is in flight, the server is told with a
// notifications/cancelled (so the tool handler's context is cancelled)
// and Handle returns ctx's error.
//
// Request ids are the CLI's per connection, and the CLI can run two MCP
// clients for one server at once (2.1.197 connects twice after
// mcp_set_servers), both counting from 0: the server sees ids of the
// bridge's own, so that equal CLI ids never collide.
func (b *Bridge) Handle(ctx context.Context, raw json.RawMessage) (json.RawMessage, error) {
	msg, err := jsonrpc.DecodeMessage(raw)
	if err != nil {
		return nil, fmt.Errorf("not a JSON-RPC message: %w", err)
	}
	req, isReq := msg.(*jsonrpc.Request)
	c, err := b.conn(isReq && req.Method == "initialize")
	if err != nil {
		return nil, err
	}
	if !isReq || !req.ID.IsValid() {
		if isReq && req.Method == "notifications/cancelled" {
			msg = c.translateCancel(req)
		}
		if err := c.deliver(ctx, msg); err != nil {
			return nil, err
		}
		return Ack, nil
	}
	id, ch := c.expect(req.ID)
	fwd := *req
	fwd.ID = id
	if err := c.deliver(ctx, &fwd); err != nil {
		c.forget(id)
		return nil, err
	}
	select {
	case resp := <-ch:
		if req.Method == "tools/list" {
			b.mu.Lock()
			meta := b.toolMeta
			b.mu.Unlock()
			resp = patchToolMeta(resp, meta)
		}
		out, err := jsonrpc.EncodeMessage(resp)
		if err != nil {
			return nil, fmt.Errorf("encoding the server's response: %w", err)
		}
		return out, nil
	case <-ctx.Done():
		c.forget(id)
		c.cancel(id, context.Cause(ctx))
		return nil, ctx.Err()
	case <-c.done:
		return nil, fmt.Errorf("%s: %w", req.Method, ErrClosed)
	}
}

// conn returns the connection to deliver to, starting a server session
// when there is none or when the CLI starts a new MCP connection.
func (b *Bridge) conn(initialize bool) (*conn, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil, ErrClosed
	}
	if b.cur != nil && !(initialize && b.cur.initialized) {
		if initialize {
			b.cur.initialized = true
		}
		return b.cur, nil
	}
	if b.cur != nil {
		// The CLI (re)connects: later messages go to a new session. The
		// old one still answers what it was asked, then ends.
		old, oldSS := b.cur, b.ss
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			select {
			case <-old.drained():
			case <-b.closing:
			}
			shutdown(old, oldSS)
		}()
	}
	c := newConn(b.send, b.log)
	ss, err := b.srv.Connect(context.Background(), transport{c}, nil)
	if err != nil {
		c.Close()
		c.wait()
		return nil, fmt.Errorf("connecting the MCP server: %w", err)
	}
	c.initialized = initialize
	b.cur, b.ss = c, ss
	return c, nil
}

// Close starts closing the bridge: later messages are refused, requests
// in flight are cancelled, and the server's sessions end. It does not
// wait; Wait does. It is safe to call more than once.
func (b *Bridge) Close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return
	}
	b.closed = true
	close(b.closing)
	c, ss := b.cur, b.ss
	b.cur, b.ss = nil, nil
	go func() {
		defer close(b.down)
		if c != nil {
			shutdown(c, ss)
		}
		b.wg.Wait()
	}()
}

// Wait waits, for at most timeout (0: without limit), until a closed
// bridge has ended everything it started, and reports whether it has. A
// tool handler that ignores its context can hold it up.
func (b *Bridge) Wait(timeout time.Duration) bool {
	if timeout <= 0 {
		<-b.down
		return true
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-b.down:
		return true
	case <-t.C:
		return false
	}
}

// shutdown ends one server session: in-flight requests are cancelled
// first, because the SDK's Close waits for their handlers.
func shutdown(c *conn, ss *mcp.ServerSession) {
	c.cancelAll(ErrClosed)
	c.Close()
	_ = ss.Close()
	_ = ss.Wait()
	c.wait()
}

// transport hands the server its one connection.
type transport struct{ c *conn }

func (t transport) Connect(context.Context) (mcp.Connection, error) { return t.c, nil }

// conn is one MCP connection, the server's end: Read yields what the CLI
// sent, Write routes what the server sends.
type conn struct {
	send SendFunc
	log  *slog.Logger

	in   chan jsonrpc.Message // CLI -> server, handed over by deliver
	done chan struct{}        // closed by Close
	once sync.Once

	mu          sync.Mutex
	pending     map[jsonrpc.ID]*call // CLI requests awaiting the server, by the id the server sees
	lastID      int64
	idle        chan struct{} // 1-buffered: "pending shrank"
	initialized bool          // an MCP initialize was delivered; guarded by Bridge.mu

	// The outbox holds server messages for the CLI, sent in order by one
	// goroutine, so that a server never blocks on the CLI: the CLI may be
	// waiting for an answer from this very server.
	omu     sync.Mutex
	outbox  []json.RawMessage
	osignal chan struct{} // 1-buffered: "the outbox changed"
	sent    chan struct{} // closed when the sender has ended
	sctx    context.Context
	sstop   context.CancelFunc
}

func newConn(send SendFunc, log *slog.Logger) *conn {
	c := &conn{
		send:    send,
		log:     log,
		in:      make(chan jsonrpc.Message),
		done:    make(chan struct{}),
		pending: map[jsonrpc.ID]*call{},
		idle:    make(chan struct{}, 1),
		osignal: make(chan struct{}, 1),
		sent:    make(chan struct{}),
	}
	c.sctx, c.sstop = context.WithCancel(context.Background())
	go c.sender()
	return c
}

// deliver hands msg to the server's reader.
func (c *conn) deliver(ctx context.Context, msg jsonrpc.Message) error {
	select {
	case c.in <- msg:
		return nil
	case <-c.done:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
}

// call is a CLI request awaiting the server's response.
type call struct {
	cliID jsonrpc.ID
	ch    chan *jsonrpc.Response // 1-buffered
}

// expect registers a CLI request and returns the id the server sees for
// it, and where its response will arrive (with the CLI's id back).
func (c *conn) expect(cliID jsonrpc.ID) (jsonrpc.ID, <-chan *jsonrpc.Response) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lastID++
	id, _ := jsonrpc.MakeID(float64(c.lastID))
	cl := &call{cliID: cliID, ch: make(chan *jsonrpc.Response, 1)}
	c.pending[id] = cl
	return id, cl.ch
}

// take removes and returns the call for the id the server saw.
func (c *conn) take(id jsonrpc.ID) *call {
	c.mu.Lock()
	defer c.mu.Unlock()
	cl, ok := c.pending[id]
	if !ok {
		return nil
	}
	delete(c.pending, id)
	select {
	case c.idle <- struct{}{}:
	default:
	}
	return cl
}

func (c *conn) forget(id jsonrpc.ID) { c.take(id) }

// drained returns a channel closed once no CLI request awaits this
// connection any more.
func (c *conn) drained() <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c.mu.Lock()
			n := len(c.pending)
			c.mu.Unlock()
			if n == 0 {
				return
			}
			select {
			case <-c.idle:
			case <-c.done:
				return
			}
		}
	}()
	return done
}

// translateCancel rewrites the CLI's notifications/cancelled to name the
// id the server saw for that request (the latest in flight with that CLI
// id), so the right handler is cancelled.
func (c *conn) translateCancel(req *jsonrpc.Request) jsonrpc.Message {
	var p mcp.CancelledParams
	if json.Unmarshal(req.Params, &p) != nil {
		return req
	}
	cliID, err := jsonrpc.MakeID(p.RequestID)
	if err != nil {
		return req
	}
	c.mu.Lock()
	var best jsonrpc.ID
	var bestN int64 = -1
	for id, cl := range c.pending {
		if n, ok := id.Raw().(int64); ok && cl.cliID == cliID && n > bestN {
			best, bestN = id, n
		}
	}
	c.mu.Unlock()
	if bestN < 0 {
		return req
	}
	p.RequestID = best.Raw()
	params, err := json.Marshal(&p)
	if err != nil {
		return req
	}
	fwd := *req
	fwd.Params = params
	return &fwd
}

// cancel tells the server the CLI gave up on request id.
func (c *conn) cancel(id jsonrpc.ID, cause error) {
	reason := "cancelled"
	if cause != nil {
		reason = cause.Error()
	}
	params, _ := json.Marshal(&mcp.CancelledParams{RequestID: id.Raw(), Reason: reason})
	n := &jsonrpc.Request{Method: "notifications/cancelled", Params: params}
	// Off the caller's path: the reader may be gone already.
	go func() {
		select {
		case c.in <- n:
		case <-c.done:
		}
	}()
}

// cancelAll cancels every request in flight, handing the notifications
// to the server before returning.
func (c *conn) cancelAll(cause error) {
	c.mu.Lock()
	ids := make([]jsonrpc.ID, 0, len(c.pending))
	for id := range c.pending {
		ids = append(ids, id)
	}
	c.mu.Unlock()
	for _, id := range ids {
		params, _ := json.Marshal(&mcp.CancelledParams{RequestID: id.Raw(), Reason: cause.Error()})
		n := &jsonrpc.Request{Method: "notifications/cancelled", Params: params}
		t := time.NewTimer(time.Second)
		select {
		case c.in <- n:
		case <-c.done:
		case <-t.C:
		}
		t.Stop()
	}
}

// Read implements mcp.Connection.
func (c *conn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case m := <-c.in:
		return m, nil
	case <-c.done:
		return nil, io.EOF
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Write implements mcp.Connection: a response goes to the request
// waiting for it, anything else to the CLI through the outbox.
func (c *conn) Write(ctx context.Context, msg jsonrpc.Message) error {
	select {
	case <-c.done:
		return mcp.ErrConnectionClosed
	default:
	}
	if resp, ok := msg.(*jsonrpc.Response); ok {
		cl := c.take(resp.ID)
		if cl == nil {
			// The CLI gave up on it (cancelled, or the session ended).
			c.log.Debug("claude: MCP response to a request nobody waits for", "id", resp.ID.Raw())
			return nil
		}
		back := *resp
		back.ID = cl.cliID
		cl.ch <- &back
		return nil
	}
	raw, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return err
	}
	c.omu.Lock()
	c.outbox = append(c.outbox, raw)
	c.omu.Unlock()
	select {
	case c.osignal <- struct{}{}:
	default:
	}
	return nil
}

// sender sends the outbox to the CLI, in order, until the connection
// closes.
func (c *conn) sender() {
	defer close(c.sent)
	for {
		c.omu.Lock()
		batch := c.outbox
		c.outbox = nil
		c.omu.Unlock()
		for _, m := range batch {
			if err := c.send(c.sctx, m); err != nil {
				if c.sctx.Err() != nil {
					return
				}
				c.log.Warn("claude: sending an MCP server message to the CLI", "err", err)
			}
		}
		select {
		case <-c.osignal:
		case <-c.sctx.Done():
			return
		}
	}
}

// Close implements mcp.Connection. It is safe to call more than once.
func (c *conn) Close() error {
	c.once.Do(func() {
		close(c.done)
		c.sstop()
	})
	return nil
}

// wait waits for the sender to end (after Close).
func (c *conn) wait() { <-c.sent }

// SessionID implements mcp.Connection: the CLI's connection has none.
func (c *conn) SessionID() string { return "" }

// patchToolMeta merges meta into the _meta of each tool of a tools/list
// response. A response it cannot read goes out as it is.
func patchToolMeta(resp *jsonrpc.Response, meta map[string]any) *jsonrpc.Response {
	if len(meta) == 0 || resp.Error != nil || len(resp.Result) == 0 {
		return resp
	}
	var res map[string]json.RawMessage
	if json.Unmarshal(resp.Result, &res) != nil {
		return resp
	}
	var tools []map[string]json.RawMessage
	if json.Unmarshal(res["tools"], &tools) != nil {
		return resp
	}
	for _, t := range tools {
		if t == nil {
			continue // a null entry: not a tool to mark
		}
		m := map[string]any{}
		if raw, ok := t["_meta"]; ok && json.Unmarshal(raw, &m) != nil {
			return resp
		}
		if m == nil {
			m = map[string]any{}
		}
		maps.Copy(m, meta)
		b, err := json.Marshal(m)
		if err != nil {
			return resp
		}
		t["_meta"] = b
	}
	tb, err := json.Marshal(tools)
	if err != nil {
		return resp
	}
	res["tools"] = tb
	rb, err := json.Marshal(res)
	if err != nil {
		return resp
	}
	out := *resp
	out.Result = rb
	return &out
}
