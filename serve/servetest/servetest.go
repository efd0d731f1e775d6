// Package servetest is a client of `tether serve`'s WebSocket protocol
// (docs/serve-protocol.md) for tests: of the server itself, of a cluster
// behind it, and of front ends users build on it. It dials /ws with a
// bearer token or a cookie, numbers requests, keeps every frame the
// server sends, and waits for replies and for frames a test names:
//
//	c, err := servetest.Dial(ctx, hs.URL, &servetest.DialOptions{Token: srv.Token()})
//	...
//	defer c.Close()
//	info, err := c.Start(ctx, nil)
//	_, err = c.OK(ctx, map[string]any{"type": "subscribe", "session": info.ID})
//	_, err = c.Do(ctx, info.ID, &host.Command{Type: host.CommandSend, Text: "hi"})
//	n := 0 // the frames looked at
//	f, err := c.WaitFrame(ctx, &n, servetest.IsState(info.ID, "idle"))
//
// Methods return errors rather than failing a test, so that benchmarks,
// examples and helpers of any kind can use them.
//
// # Frames
//
// One goroutine per Client reads the socket for as long as it is open. A
// reply to a Call goes to that call; every other frame (the greeting,
// events, snapshots, replies to requests sent with Send) is kept, in the
// order received, for WaitFrame and Frames (DialOptions.Keep may choose). The reader never waits for
// the test: the server sees a client that keeps up, whatever the test
// does, so a test sees the server's behaviour towards a fast client (use a
// plain websocket.Conn that does not read to test a slow one).
//
// What is kept is bounded (DialOptions.Buffer frames, 65536 by default).
// Past the bound the oldest frame is dropped; a WaitFrame that has not
// looked at a dropped frame yet returns an error wrapping ErrDropped
// rather than skip it, so a test never passes by missing what it asked
// for.
package servetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/tetherhq/tether/host"
	"github.com/tetherhq/tether/serve"
)

// DefaultBuffer is how many frames a Client keeps when
// DialOptions.Buffer is 0.
const DefaultBuffer = 1 << 16

// DefaultReadLimit is the largest frame a Client reads when
// DialOptions.ReadLimit is 0: snapshots of long sessions are large.
const DefaultReadLimit = 64 << 20

// ErrDropped is wrapped by WaitFrame's error when frames it had not
// looked at yet were dropped (more than DialOptions.Buffer frames came).
var ErrDropped = errors.New("servetest: frames dropped before they were looked at")

// ErrClosed is wrapped by the errors of a Client whose connection has
// ended (Close, or the server closed it); the connection's own error is
// wrapped too (websocket.CloseStatus reads its status).
var ErrClosed = errors.New("servetest: connection closed")

// DialOptions configures Dial. A nil *DialOptions means defaults: no
// credentials.
type DialOptions struct {
	// Token is sent as "Authorization: Bearer <token>" (serve.Server.Token).
	Token string
	// Cookie, when set, is sent in the Cookie header: the one POST /auth
	// sets, or a team's sign-in cookie.
	Cookie *http.Cookie
	// Header has more headers for the upgrade request. Unless it has an
	// "Origin" key, the request carries the server's own origin, as a
	// browser's does; an "Origin" key with no value sends none.
	Header http.Header
	// HTTPClient makes the upgrade request (nil: http.DefaultClient): one
	// that trusts a test certificate, or whose Jar holds a sign-in.
	HTTPClient *http.Client
	// ReadLimit is the largest frame read (0: DefaultReadLimit); a larger
	// one ends the connection.
	ReadLimit int64
	// Buffer is how many frames are kept (0: DefaultBuffer); see the
	// package doc for what happens past it.
	Buffer int
	// Keep, when set, says which frames to keep: those it refuses are
	// dropped as they come, not numbered and not counted against Buffer
	// (a benchmark that follows one session among many keeps its
	// events only). It runs on the reader's goroutine for every frame
	// that is not a reply to a Call: it must be quick and must not call
	// the client.
	Keep func(*Frame) bool
}

// DialError is Dial's error when no WebSocket opened.
type DialError struct {
	// StatusCode is the HTTP status of a refused upgrade (401, 403, …);
	// 0 when the server gave no answer.
	StatusCode int
	// Refusal is the error the server's JSON body gave ({"error": …}),
	// if any.
	Refusal *serve.Error
	// Err is the WebSocket library's error.
	Err error
}

func (e *DialError) Error() string {
	if e.Refusal != nil {
		return fmt.Sprintf("servetest: dial: %d %v", e.StatusCode, e.Refusal)
	}
	if e.StatusCode != 0 {
		return fmt.Sprintf("servetest: dial: %d: %v", e.StatusCode, e.Err)
	}
	return "servetest: dial: " + e.Err.Error()
}

func (e *DialError) Unwrap() error { return e.Err }

// Frame is a frame the server sent (docs/serve-protocol.md, "Server →
// client frames"). Fields a frame's type does not have are zero; Raw
// holds the frame as received, for whatever this type does not decode.
type Frame struct {
	// Type is "hello", "reply", "error", "sessions", "session",
	// "removed", "snapshot", "event", "items", "queued" or a newer one.
	Type string `json:"type"`
	// ID is the request's id on "reply", "error" and "queued" frames, as
	// JSON (a number: 7; a string: "a").
	ID json.RawMessage `json:"id,omitempty"`
	// Result and Error are a reply's (Error also an "error" frame's).
	Result json.RawMessage `json:"result,omitempty"`
	Error  *serve.Error    `json:"error,omitempty"`
	// SessionID is the session the frame is about: "event", "items", "snapshot",
	// "removed", an "error" of a subscription; on "session" frames, the
	// ID of Session, which has the whole SessionInfo.
	SessionID string              `json:"-"`
	Session   *serve.SessionInfo  `json:"-"`
	Sessions  []serve.SessionInfo `json:"sessions,omitempty"`
	Event     *host.Event         `json:"event,omitempty"`
	Snapshot  *host.Snapshot      `json:"snapshot,omitempty"`
	// The greeting's ("hello") fields.
	Protocol    int       `json:"protocol,omitempty"`
	Server      string    `json:"server,omitempty"`
	HeartbeatMS int64     `json:"heartbeat_ms,omitempty"`
	DefaultCwd  string    `json:"default_cwd,omitempty"`
	Me          *serve.Me `json:"me,omitempty"`
	// Position is a "queued" frame's place in its queue (1 = next).
	Position int `json:"position,omitempty"`
	// Seq and Items are an "items" frame's (a subscription with items):
	// the message event it stands for and the transcript items it
	// changed.
	Seq   uint64       `json:"seq,omitempty"`
	Items []serve.Item `json:"items,omitempty"`

	// Raw is the frame as received.
	Raw json.RawMessage `json:"-"`
	// Received is when the client read it.
	Received time.Time `json:"-"`
}

// UnmarshalJSON decodes a frame; "session" is an id on most frames and a
// SessionInfo on "session" frames.
func (f *Frame) UnmarshalJSON(b []byte) error {
	type plain Frame
	var w struct {
		*plain
		Session json.RawMessage `json:"session"`
	}
	w.plain = (*plain)(f)
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	switch s := strings.TrimSpace(string(w.Session)); {
	case strings.HasPrefix(s, `"`):
		return json.Unmarshal(w.Session, &f.SessionID)
	case strings.HasPrefix(s, "{"):
		f.Session = new(serve.SessionInfo)
		if err := json.Unmarshal(w.Session, f.Session); err != nil {
			return err
		}
		f.SessionID = f.Session.ID
	}
	return nil
}

// IsEvent matches the event frames of a session (any session when
// session is "") of one kind (any kind when kind is "").
func IsEvent(session string, kind host.EventKind) func(*Frame) bool {
	return func(f *Frame) bool {
		return f.Type == "event" && f.Event != nil && (session == "" || f.SessionID == session) && (kind == "" || f.Event.Kind == kind)
	}
}

// IsState matches the state events of a session in the given state
// ("idle", "awaiting_approval", …).
func IsState(session, state string) func(*Frame) bool {
	isState := IsEvent(session, host.EventState)
	return func(f *Frame) bool {
		if !isState(f) {
			return false
		}
		var si host.StateInfo
		return json.Unmarshal(f.Event.Data, &si) == nil && si.State == state
	}
}

// Client is a connection to a server's /ws. Its methods may be called from
// many goroutines at once; Close ends it.
type Client struct {
	conn   *websocket.Conn
	cancel context.CancelFunc
	done   chan struct{} // closed when the reader has returned
	limit  int
	keep   func(*Frame) bool

	closeOnce sync.Once
	closeErr  error

	mu      sync.Mutex
	next    int                    // the last id Call chose
	waiting map[string]chan *Frame // by the id's JSON
	frames  []*Frame               // kept frames; frames[0] is number first
	first   int
	changed chan struct{} // closed and replaced on each change
	err     error         // why the reader returned
}

// Dial opens a WebSocket to the server at u and starts reading it. u is
// the server's address, http or https (an httptest.Server's URL, a login
// URL, whose fragment is ignored), and the client opens its /ws; a ws or
// wss URL is dialled as it is. ctx bounds the opening handshake only.
// A refused upgrade is a *DialError.
func Dial(ctx context.Context, u string, opts *DialOptions) (*Client, error) {
	var o DialOptions
	if opts != nil {
		o = *opts
	}
	pu, err := url.Parse(u)
	if err != nil {
		return nil, fmt.Errorf("servetest: %w", err)
	}
	pu.Fragment, pu.RawFragment = "", ""
	origin := ""
	switch pu.Scheme {
	case "http", "https":
		origin = pu.Scheme + "://" + pu.Host
		pu.Scheme = strings.Replace(pu.Scheme, "http", "ws", 1)
		pu.Path = strings.TrimSuffix(pu.Path, "/") + "/ws"
	case "ws", "wss":
		origin = strings.Replace(pu.Scheme, "ws", "http", 1) + "://" + pu.Host
	default:
		return nil, fmt.Errorf("servetest: %q is not an http, https, ws or wss URL", u)
	}
	h := o.Header.Clone()
	if h == nil {
		h = http.Header{}
	}
	if _, ok := h["Origin"]; !ok {
		h.Set("Origin", origin)
	}
	if o.Token != "" {
		h.Set("Authorization", "Bearer "+o.Token)
	}
	if o.Cookie != nil {
		h.Add("Cookie", o.Cookie.String())
	}
	conn, resp, err := websocket.Dial(ctx, pu.String(), &websocket.DialOptions{HTTPClient: o.HTTPClient, HTTPHeader: h})
	if err != nil {
		de := &DialError{Err: err}
		if resp != nil {
			de.StatusCode = resp.StatusCode
			if resp.Body != nil {
				b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
				resp.Body.Close()
				var eb struct{ Error *serve.Error }
				if json.Unmarshal(b, &eb) == nil {
					de.Refusal = eb.Error
				}
			}
		}
		return nil, de
	}
	if o.ReadLimit <= 0 {
		o.ReadLimit = DefaultReadLimit
	}
	conn.SetReadLimit(o.ReadLimit)
	if o.Buffer <= 0 {
		o.Buffer = DefaultBuffer
	}
	rctx, cancel := context.WithCancel(context.Background())
	c := &Client{conn: conn, cancel: cancel, done: make(chan struct{}), limit: o.Buffer, keep: o.Keep,
		waiting: map[string]chan *Frame{}, changed: make(chan struct{})}
	go c.read(rctx)
	return c, nil
}

// read is the reader: it routes replies to their calls and keeps the
// other frames, until the connection ends.
func (c *Client) read(ctx context.Context) {
	defer close(c.done)
	for {
		_, b, err := c.conn.Read(ctx)
		f := &Frame{Raw: b, Received: time.Now()}
		if err == nil {
			// UnmarshalJSON itself, not json.Unmarshal(b, f): that one
			// scans the frame once more before calling it, and a
			// benchmark's clients (BenchmarkServe) spent a tenth of the
			// machine on it.
			if derr := f.UnmarshalJSON(b); derr != nil {
				err = fmt.Errorf("servetest: undecodable frame %.200q: %w", b, derr)
				c.conn.CloseNow()
			}
		}
		c.mu.Lock()
		if err != nil {
			c.err = err
			c.signal()
			c.mu.Unlock()
			return
		}
		if ch, ok := c.waiting[string(f.ID)]; ok && f.ID != nil && (f.Type == "reply" || f.Type == "error") {
			delete(c.waiting, string(f.ID))
			ch <- f // buffered: one reply per id
		} else if c.keep == nil || c.keep(f) {
			if len(c.frames) == c.limit {
				// Reslice only: a WaitFrame may be reading the old
				// slice; append moves the live frames when it grows.
				c.frames = c.frames[1:]
				c.first++
			}
			c.frames = append(c.frames, f)
		}
		c.signal()
		c.mu.Unlock()
	}
}

// signal wakes the waiters; c.mu is held.
func (c *Client) signal() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// ended is the error of a client whose reader has returned; c.mu is held.
func (c *Client) ended() error {
	return fmt.Errorf("%w: %w", ErrClosed, c.err)
}

// Call sends a request and returns its reply (a "reply" frame, or an
// "error" frame with the request's id). req is anything that encodes as a
// JSON object: a map, or a struct. Call adds "id" (a new number; a
// request that has an "id" keeps it) and "v" (serve.ProtocolVersion;
// one that has a "v" keeps it) to what it sends; req itself is not
// changed. A reply with an error is not an error of Call: look at
// Frame.Error (or use OK). When ctx ends first, Call returns ctx.Err()
// and forgets the id: its reply, if it comes, is kept as a frame. (A ctx
// that ends while the request is being written closes the connection:
// the WebSocket library's rule.)
func (c *Client) Call(ctx context.Context, req any) (*Frame, error) {
	b, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("servetest: %w", err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil || m == nil {
		return nil, fmt.Errorf("servetest: a request must be a JSON object, not %.100s", b)
	}
	if _, ok := m["v"]; !ok {
		m["v"] = json.RawMessage(strconv.Itoa(serve.ProtocolVersion))
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ch := make(chan *Frame, 1)
	c.mu.Lock()
	if c.err != nil {
		err := c.ended()
		c.mu.Unlock()
		return nil, err
	}
	if id, ok := m["id"]; !ok || string(id) == "null" {
		c.next++
		m["id"] = json.RawMessage(strconv.Itoa(c.next))
	}
	key := string(m["id"])
	if _, dup := c.waiting[key]; dup {
		c.mu.Unlock()
		return nil, fmt.Errorf("servetest: a call with id %s is already waiting", key)
	}
	c.waiting[key] = ch
	c.mu.Unlock()
	forget := func() {
		c.mu.Lock()
		if c.waiting[key] == ch {
			delete(c.waiting, key)
		}
		c.mu.Unlock()
	}
	b, _ = json.Marshal(m)
	if err := c.conn.Write(ctx, websocket.MessageText, b); err != nil {
		forget()
		return nil, fmt.Errorf("servetest: sending %s: %w", m["type"], err)
	}
	select {
	case f := <-ch:
		return f, nil
	case <-c.done:
		select {
		case f := <-ch: // the reply came just before the end
			return f, nil
		default:
		}
		forget()
		c.mu.Lock()
		err := c.ended()
		c.mu.Unlock()
		return nil, fmt.Errorf("waiting for the reply to %s: %w", m["type"], err)
	case <-ctx.Done():
		forget()
		return nil, ctx.Err()
	}
}

// OK is Call for a reply that must succeed: it returns the reply's
// result, or its error (a *serve.Error) as the error.
func (c *Client) OK(ctx context.Context, req any) (json.RawMessage, error) {
	f, err := c.Call(ctx, req)
	if err != nil {
		return nil, err
	}
	if f.Error != nil {
		return nil, f.Error
	}
	return f.Result, nil
}

// Start starts a session (req nil: in the server's default directory)
// and returns it.
func (c *Client) Start(ctx context.Context, req *serve.StartRequest) (*serve.SessionInfo, error) {
	if req == nil {
		req = &serve.StartRequest{}
	}
	b, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("servetest: %w", err)
	}
	var m map[string]json.RawMessage
	_ = json.Unmarshal(b, &m)
	if req.Cwd == "" {
		delete(m, "cwd")
	}
	m["type"] = json.RawMessage(`"start"`)
	res, err := c.OK(ctx, m)
	if err != nil {
		return nil, err
	}
	var r struct {
		Session *serve.SessionInfo `json:"session"`
	}
	if err := json.Unmarshal(res, &r); err != nil || r.Session == nil || r.Session.ID == "" {
		return nil, fmt.Errorf("servetest: start result %s: %v", res, err)
	}
	return r.Session, nil
}

// Do runs a command (a *host.Command, or anything encoding as one) on a
// session and returns the reply.
func (c *Client) Do(ctx context.Context, session string, cmd any) (*Frame, error) {
	return c.Call(ctx, map[string]any{"type": "do", "session": session, "command": cmd})
}

// Send writes one text frame and waits for no reply: a []byte as it is
// (malformed frames too), anything else as its JSON, with no "id" or
// "v" added. A reply to it, if it has an id, is kept as a frame.
func (c *Client) Send(ctx context.Context, v any) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	b, ok := v.([]byte)
	if !ok {
		var err error
		if b, err = json.Marshal(v); err != nil {
			return fmt.Errorf("servetest: %w", err)
		}
	}
	if err := c.conn.Write(ctx, websocket.MessageText, b); err != nil {
		return fmt.Errorf("servetest: send: %w", err)
	}
	return nil
}

// WaitFrame returns the first kept frame, from frame number *from on,
// that pred accepts (pred nil: any), waiting for it to come; it sets
// *from past it. Frames are numbered from 0 in the order kept (replies
// to Call, and frames DialOptions.Keep refused, are not among them). With from nil, it looks from the oldest
// frame kept. pred is called on the caller's goroutine, never under the
// client's lock.
//
// It returns ctx.Err() when ctx ends first, an error wrapping ErrClosed
// when the connection has ended and no frame left matches, and one
// wrapping ErrDropped when frame *from was dropped (see the package doc).
func (c *Client) WaitFrame(ctx context.Context, from *int, pred func(*Frame) bool) (*Frame, error) {
	own := from == nil
	if own {
		from = new(int)
	}
	for {
		c.mu.Lock()
		if own && *from < c.first {
			*from = c.first
		}
		if *from < c.first {
			err := fmt.Errorf("%w: frames %d to %d (the client keeps %d)", ErrDropped, *from, c.first-1, c.limit)
			c.mu.Unlock()
			return nil, err
		}
		todo := c.frames[*from-c.first:]
		ch, end := c.changed, c.err
		c.mu.Unlock()
		for _, f := range todo {
			*from++
			if pred == nil || pred(f) {
				return f, nil
			}
		}
		if end != nil {
			c.mu.Lock()
			more := *from < c.first+len(c.frames)
			err := c.ended()
			c.mu.Unlock()
			if !more {
				return nil, err
			}
			continue
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// Frames returns the frames kept, oldest first (with none dropped,
// Frames()[i] is frame number i). The frames are the client's: read
// them, don't change them.
func (c *Client) Frames() []*Frame {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*Frame(nil), c.frames...)
}

// Err returns why the connection ended (wrapping ErrClosed), or nil
// while it is open.
func (c *Client) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil {
		return nil
	}
	return c.ended()
}

// Done is closed when the connection has ended and the reader has
// returned.
func (c *Client) Done() <-chan struct{} { return c.done }

// Conn is the socket, for what requests cannot say (a binary frame, a
// frame over the server's bound). Write to it; never read from it: the
// client's reader does.
func (c *Client) Conn() *websocket.Conn { return c.conn }

// Close closes the connection (normal closure) and returns once the
// reader has returned. It may be called more than once, from any
// goroutine; a connection the server had already ended closes with no
// error.
func (c *Client) Close() error {
	c.closeOnce.Do(func() {
		c.mu.Lock()
		over := c.err != nil
		c.mu.Unlock()
		err := c.conn.Close(websocket.StatusNormalClosure, "")
		c.conn.CloseNow()
		c.cancel()
		<-c.done
		if err != nil && !over {
			c.closeErr = fmt.Errorf("servetest: close: %w", err)
		}
	})
	return c.closeErr
}
