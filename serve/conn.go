package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/tetherhq/tether/host"
	"github.com/tetherhq/tether/team"
)

// ProtocolVersion is the version of docs/serve-protocol.md the server
// speaks.
const ProtocolVersion = 1

// client is one WebSocket. Frames to it go through out, a bounded queue
// drained by one writer goroutine; senders wait for room (a subscription
// waiting holds nothing: the journal moves on and it resyncs). Session
// list updates are coalesced per session in infos, so they never wait.
type client struct {
	s      *Server
	ws     *websocket.Conn
	ctx    context.Context
	cancel context.CancelFunc
	out    chan []byte
	ip     string
	id     *team.Identity // teams: who is connected (also in ctx)
	authr  *http.Request  // teams: the upgrade request, to check the sign-in again
	// recheckNow (1-buffered) asks the recheck goroutine to check the
	// sign-in now: its person signed out somewhere (teams).
	recheckNow chan struct{}

	seen     map[string]bool        // teams: the sessions this client was shown (under mu)
	seenInfo map[string]SessionInfo // teams: as last shown

	mu     sync.Mutex
	subs   map[string]*subscription
	infos  map[string]*SessionInfo // pending list updates; nil: removed
	signal chan struct{}           // 1-buffered: infos changed

	// The ordered requests (host.LaneOrdered commands; disk_sessions
	// under ""), under mu: one lane per session, each run in arrival
	// order by a goroutine of its own while it has work, so that a
	// command that waits long (a prompt waking a session in a full
	// cluster) holds up its own session's commands alone. At most
	// maxOrdered are queued or running in all; past that, busy.
	lanes   map[string]*lane
	ordered int
	quick   chan struct{} // semaphore for host.LaneQuick commands (interrupt, answer)
	wg      sync.WaitGroup

	// Starts (under mu): at most maxStarts run at once; up to
	// maxStartQueue more wait in arrival order (told their place with
	// queued frames); past that a start is refused with busy.
	startsRunning int
	startsWaiting []*startWaiter
}

// The bounds of one socket's starts (docs/serve-protocol.md, section 5).
const (
	maxStarts     = 4
	maxStartQueue = 16
	// maxOrdered bounds a socket's ordered requests, queued or running.
	maxOrdered = 16
)

// lane is one session's ordered requests on a socket (client.lanes).
type lane struct {
	q   []laneItem
	cur json.RawMessage // the request running
	// pos is cur's place in the queue for room (a command waking the
	// session in a full cluster), as last told; 0 when it is not
	// waiting for room. The requests behind it wait for room as well,
	// and are told so.
	pos int
}

type laneItem struct {
	id json.RawMessage
	f  func()
}

// startWaiter is a start waiting for one of its socket's start slots.
type startWaiter struct {
	id    json.RawMessage
	ready chan struct{} // closed when the slot is handed over
}

// The frames the server sends (docs/serve-protocol.md, section 2); event
// frames are built by eventFrame without re-encoding their payload.
type (
	helloFrame struct {
		Type        string `json:"type"` // "hello"
		Protocol    int    `json:"protocol"`
		Server      string `json:"server"`
		HeartbeatMS int64  `json:"heartbeat_ms"`
		DefaultCwd  string `json:"default_cwd,omitempty"`
		Me          *Me    `json:"me,omitempty"`
	}
	sessionsFrame struct {
		Type     string        `json:"type"` // "sessions"
		Sessions []SessionInfo `json:"sessions"`
	}
	sessionFrame struct {
		Type    string       `json:"type"` // "session"
		Session *SessionInfo `json:"session"`
	}
	removedFrame struct {
		Type    string `json:"type"` // "removed"
		Session string `json:"session"`
	}
	replyFrame[T any] struct {
		Type   string          `json:"type"` // "reply"
		ID     json.RawMessage `json:"id"`
		Result T               `json:"result"`
	}
	errorReplyFrame struct {
		Type  string          `json:"type"` // "reply"
		ID    json.RawMessage `json:"id"`
		Error *Error          `json:"error"`
	}
	errorFrameT struct {
		Type    string          `json:"type"` // "error"
		ID      json.RawMessage `json:"id,omitempty"`
		Session string          `json:"session,omitempty"`
		Error   *Error          `json:"error"`
	}
	snapshotFrame struct {
		Type     string        `json:"type"` // "snapshot"
		Session  string        `json:"session"`
		Snapshot *snapshotJSON `json:"snapshot"`
	}
	// itemsFrame stands, for a client that asked for items, in place of
	// the event frame of a message event: the items that event added or
	// changed (often none), under the event's seq and time.
	itemsFrame struct {
		Type    string    `json:"type"` // "items"
		Session string    `json:"session"`
		Seq     uint64    `json:"seq"`
		Time    time.Time `json:"time"`
		Items   []Item    `json:"items"`
	}
	queuedFrame struct {
		Type     string          `json:"type"` // "queued"
		ID       json.RawMessage `json:"id,omitempty"`
		Position int             `json:"position"`
	}
)

// The results of requests, in reply frames.
type (
	listResult struct {
		Sessions []SessionInfo `json:"sessions"`
	}
	diskResult struct {
		Sessions []DiskSession `json:"sessions"`
	}
	subscribeResult struct {
		Session string `json:"session"`
	}
	startResult struct {
		Session SessionInfo `json:"session"`
	}
	noResult struct{}
)

type subscription struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// serveWS upgrades and runs the connection until it ends.
func (s *Server) serveWS(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"error": &Error{Code: CodeSessionClosed, Message: "the server is closing"}})
		return
	}
	s.wg.Add(1) // under s.mu, so never after Close's Wait began
	s.mu.Unlock()
	defer s.wg.Done()
	// Host and Origin were checked by ServeHTTP against our own lists;
	// the library's same-origin check would repeat the Origin one.
	ws, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: []string{"tether.v1"}, InsecureSkipVerify: true})
	if err != nil {
		s.log.Info("serve: upgrade failed", "err", err, "remote", remoteIP(r))
		return
	}
	ws.SetReadLimit(s.opts.MaxFrameBytes)
	c := &client{
		s: s, ws: ws, out: make(chan []byte, s.opts.ClientQueue), ip: remoteIP(r),
		subs: map[string]*subscription{}, infos: map[string]*SessionInfo{}, signal: make(chan struct{}, 1),
		lanes: map[string]*lane{}, quick: make(chan struct{}, 16),
	}
	c.ctx, c.cancel = context.WithCancel(s.ctx)
	if s.opts.Team != nil {
		c.id = identityOf(r.Context())
		c.ctx = team.NewContext(c.ctx, c.id)
		c.authr = r.Clone(context.Background())
		c.authr.Body = http.NoBody
		c.recheckNow = make(chan struct{}, 1)
		c.seen, c.seenInfo = map[string]bool{}, map[string]SessionInfo{}
	}
	s.mu.Lock()
	s.clients[c] = struct{}{}
	s.startHub()
	s.mu.Unlock()
	s.metrics.Connected(1)
	defer s.metrics.Connected(-1)
	s.log.Info("serve: client connected", "remote", c.ip)
	c.run()
	s.mu.Lock()
	delete(s.clients, c)
	s.mu.Unlock()
	s.log.Info("serve: client disconnected", "remote", c.ip)
}

func (c *client) run() {
	defer c.ws.CloseNow()
	c.wg.Add(2)
	go c.writer()
	go c.heartbeat()
	if c.id != nil {
		c.wg.Add(1)
		go c.recheck()
	}
	hello := helloFrame{Type: "hello", Protocol: ProtocolVersion, Server: c.s.opts.Version, HeartbeatMS: c.s.opts.Heartbeat.Milliseconds()}
	if d, ok := c.s.b.(DefaultCwder); ok {
		hello.DefaultCwd = d.DefaultCwd()
	}
	if c.id != nil {
		hello.Me = meOf(c.id)
		if ws := c.s.opts.Team.Config.Workspace(c.id); ws != "" {
			hello.DefaultCwd = ws
		}
	}
	c.push(c.ctx, rawJSON(hello))
	if list, err := c.s.listFor(c.ctx); err == nil {
		c.markSeen(list)
		c.push(c.ctx, rawJSON(sessionsFrame{Type: "sessions", Sessions: list}))
	} else {
		c.push(c.ctx, errorFrame(nil, protoError(err)))
	}
	c.reader()
	c.cancel()
	c.endSubs()
	c.wg.Wait()
}

// endSubs ends every subscription and waits for each to return. It takes
// the whole set under the lock at once: a subscription that ends on its
// own removes itself from c.subs at the same time.
func (c *client) endSubs() {
	c.mu.Lock()
	subs := c.subs
	c.subs = map[string]*subscription{}
	c.mu.Unlock()
	for _, sub := range subs {
		sub.cancel()
		<-sub.done
	}
}

// reader reads frames until the socket ends.
func (c *client) reader() {
	for {
		typ, data, err := c.ws.Read(c.ctx)
		if err != nil {
			return // closed, too big (1009, sent by the library), or cancelled
		}
		if typ != websocket.MessageText {
			c.ws.Close(websocket.StatusUnsupportedData, "text frames only")
			return
		}
		c.handle(data)
	}
}

// writer drains the queue and the list updates into the socket; a write
// that does not finish within WriteTimeout ends the connection.
func (c *client) writer() {
	defer c.wg.Done()
	defer c.cancel()
	for {
		select {
		case b := <-c.out:
			if !c.write(b) {
				return
			}
		case <-c.signal:
			c.mu.Lock()
			infos := c.infos
			c.infos = map[string]*SessionInfo{}
			c.mu.Unlock()
			for id, info := range infos {
				var b []byte
				if info == nil {
					b = rawJSON(removedFrame{Type: "removed", Session: id})
				} else {
					b = rawJSON(sessionFrame{Type: "session", Session: info})
				}
				if !c.write(b) {
					return
				}
			}
		case <-c.ctx.Done():
			c.ws.Close(websocket.StatusGoingAway, "server closing")
			return
		}
	}
}

func (c *client) write(b []byte) bool {
	ctx, cancel := context.WithTimeout(c.ctx, c.s.opts.WriteTimeout)
	defer cancel()
	if err := c.ws.Write(ctx, websocket.MessageText, b); err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			// The write timed out (before anything else ended the
			// connection: a cancelled c.ctx makes ctx.Err Canceled).
			c.s.metrics.SlowDropped()
		}
		c.s.log.Info("serve: client write failed; disconnecting", "remote", c.ip, "err", err)
		return false
	}
	return true
}

func (c *client) heartbeat() {
	defer c.wg.Done()
	t := time.NewTicker(c.s.opts.Heartbeat)
	defer t.Stop()
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-t.C:
			ctx, cancel := context.WithTimeout(c.ctx, c.s.opts.WriteTimeout)
			err := c.ws.Ping(ctx)
			cancel()
			if err != nil {
				c.cancel()
				return
			}
		}
	}
}

// runLane runs a lane's requests one by one, and ends when it has none
// (or the socket is gone: what is left is dropped, nobody to answer).
func (c *client) runLane(key string, l *lane) {
	defer c.wg.Done()
	for {
		c.mu.Lock()
		if len(l.q) == 0 || c.ctx.Err() != nil {
			c.ordered -= len(l.q)
			delete(c.lanes, key)
			c.mu.Unlock()
			return
		}
		it := l.q[0]
		l.q[0] = laneItem{}
		l.q = l.q[1:]
		l.cur, l.pos = it.id, 0
		c.mu.Unlock()
		it.f()
		c.mu.Lock()
		c.ordered--
		l.cur, l.pos = nil, 0
		c.mu.Unlock()
	}
}

// queued tells the client its request id waits for room, at position
// (the protocol's queued frame).
func (c *client) queued(id json.RawMessage, position int) {
	c.push(c.ctx, rawJSON(queuedFrame{Type: "queued", ID: id, Position: position}))
}

// queuedInLane tells the running request of a session's lane, and those
// behind it, their place in the queue for room (host.Command.OnQueued):
// they all wait for it.
func (c *client) queuedInLane(key string, position int) {
	c.mu.Lock()
	l := c.lanes[key]
	if l == nil || l.cur == nil {
		c.mu.Unlock()
		return
	}
	l.pos = position
	ids := []json.RawMessage{l.cur}
	for _, it := range l.q {
		ids = append(ids, it.id)
	}
	c.mu.Unlock()
	for _, id := range ids {
		c.queued(id, position)
	}
}

// push queues a frame, waiting for room; false when ctx ended first.
func (c *client) push(ctx context.Context, b []byte) bool {
	select {
	case c.out <- b:
		return true
	case <-ctx.Done():
		return false
	}
}

// setInfo queues a list update (nil: removed), replacing an older one.
func (c *client) setInfo(id string, info *SessionInfo) {
	c.mu.Lock()
	c.infos[id] = info
	c.mu.Unlock()
	select {
	case c.signal <- struct{}{}:
	default:
	}
}

// request is a client frame: the envelope and every request's fields.
type request struct {
	Type     string          `json:"type"`
	ID       json.RawMessage `json:"id,omitempty"`
	V        *int            `json:"v,omitempty"`
	Session  string          `json:"session,omitempty"`
	After    uint64          `json:"after,omitempty"`
	Snapshot bool            `json:"snapshot,omitempty"`
	Items    bool            `json:"items,omitempty"`
	Command  *host.Command   `json:"command,omitempty"`
	StartRequest
}

// reply answers a request: its result, or its error. A request without
// an id gets no reply when it succeeds, and an error frame when it fails.
func reply[T any](c *client, id json.RawMessage, result T, err error) {
	if id == nil && err == nil {
		return
	}
	var b []byte
	switch {
	case err != nil && id == nil:
		b = errorFrame(nil, protoError(err))
	case err != nil:
		b = rawJSON(errorReplyFrame{Type: "reply", ID: id, Error: protoError(err)})
	default:
		b = rawJSON(replyFrame[T]{Type: "reply", ID: id, Result: result})
	}
	c.push(c.ctx, b)
}

// fail answers a request with an error.
func (c *client) fail(id json.RawMessage, err error) { reply[noResult](c, id, noResult{}, err) }

func errorFrame(id json.RawMessage, e *Error) []byte {
	return rawJSON(errorFrameT{Type: "error", ID: id, Error: e})
}

// handle decodes and runs one frame.
func (c *client) handle(data []byte) {
	var req request
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&req); err != nil {
		// Find the id if the frame has one, to answer it.
		var env struct {
			ID json.RawMessage `json:"id"`
		}
		_ = json.Unmarshal(data, &env)
		c.push(c.ctx, errorFrame(validID(env.ID), errorf(CodeBadRequest, "unreadable frame: %v", err)))
		return
	}
	if req.ID = validID(req.ID); req.ID == nil && len(bytes.TrimSpace(data)) > 0 && hasBadID(data) {
		c.push(c.ctx, errorFrame(nil, errorf(CodeBadRequest, "id must be a number or a string")))
		return
	}
	if req.V != nil && *req.V != ProtocolVersion {
		c.fail(req.ID, errorf(CodeUnsupportedVersion, "protocol version %d is not supported; this server speaks %d", *req.V, ProtocolVersion))
		return
	}
	switch req.Type {
	case "list":
		list, err := c.s.listFor(c.ctx)
		c.markSeen(list)
		reply(c, req.ID, listResult{Sessions: list}, err)
	case "subscribe":
		c.subscribe(&req)
	case "unsubscribe":
		if req.Session == "" {
			c.fail(req.ID, errorf(CodeBadRequest, "unsubscribe needs session"))
			return
		}
		c.unsubscribe(req.Session)
		reply(c, req.ID, noResult{}, nil)
	case "start":
		c.start(&req)
	case "disk_sessions":
		cwd := req.StartRequest.Cwd
		c.enqueue(req.ID, "", func() {
			if err := c.s.diskAllowed(c.ctx, &cwd); err != nil {
				c.fail(req.ID, err)
				return
			}
			list, err := c.s.b.DiskSessions(c.ctx, cwd)
			reply(c, req.ID, diskResult{Sessions: list}, err)
		})
	case "do":
		c.do(&req)
	case "visibility":
		c.s.setVisible(c, data)
	case "":
		c.fail(req.ID, errorf(CodeBadRequest, "type is required"))
	default:
		c.fail(req.ID, errorf(CodeUnknownType, "unknown request type %q", req.Type))
	}
}

// validID returns id when it is a JSON number or string, else nil.
func validID(id json.RawMessage) json.RawMessage {
	if len(id) == 0 {
		return nil
	}
	switch id[0] {
	case '"':
		return id
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		if _, err := strconv.ParseFloat(string(id), 64); err == nil {
			return id
		}
	}
	return nil
}

// hasBadID reports whether the frame has an id that is not a number or
// a string (null counts as absent).
func hasBadID(data []byte) bool {
	var env struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Unmarshal(data, &env) != nil || len(env.ID) == 0 || string(env.ID) == "null" {
		return false
	}
	return validID(env.ID) == nil
}

// enqueue runs f after the requests queued before it in the lane of key
// (a session's id), or refuses when the socket has maxOrdered already.
func (c *client) enqueue(id json.RawMessage, key string, f func()) bool {
	c.mu.Lock()
	if c.ordered >= maxOrdered {
		c.mu.Unlock()
		c.fail(id, errorf(CodeBusy, "too many requests in flight on this connection"))
		return false
	}
	c.ordered++
	l := c.lanes[key]
	if l == nil {
		l = &lane{}
		c.lanes[key] = l
		c.wg.Add(1)
		go c.runLane(key, l)
	}
	l.q = append(l.q, laneItem{id: id, f: f})
	pos := l.pos
	c.mu.Unlock()
	if pos > 0 {
		// Behind a command waiting for room: so does this one.
		c.queued(id, pos)
	}
	return true
}

// start starts a session beside the connection's other requests: a
// start may wait long for room in a cluster (the client is told its
// place in the queue with "queued" frames), and nothing else waits
// behind it. A socket runs maxStarts at once; more wait here, in
// arrival order and told their place with queued frames, up to
// maxStartQueue; past that a start is refused with busy.
func (c *client) start(req *request) {
	sr := req.StartRequest
	id := req.ID
	c.mu.Lock()
	var w *startWaiter
	switch {
	case c.startsRunning < maxStarts:
		c.startsRunning++
	case len(c.startsWaiting) < maxStartQueue:
		w = &startWaiter{id: id, ready: make(chan struct{})}
		c.startsWaiting = append(c.startsWaiting, w)
	default:
		c.mu.Unlock()
		c.fail(id, errorf(CodeBusy, "too many starts on this connection: %d running and %d waiting; try again when one has ended", maxStarts, maxStartQueue))
		return
	}
	position := len(c.startsWaiting)
	c.mu.Unlock()
	if w != nil {
		c.queued(id, position)
	}
	sr.OnQueued = func(position int) {
		c.queued(id, position)
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		if w != nil {
			select {
			case <-w.ready:
			case <-c.ctx.Done():
				return // the socket is gone: nobody to answer
			}
		}
		defer c.startDone()
		ctx, span := c.s.startSpan(c.ctx, "serve start")
		var info SessionInfo
		var err error
		if c.id != nil {
			info, err = c.s.teamStart(ctx, &sr)
		} else {
			info, err = c.s.b.Start(ctx, &sr)
		}
		if info.ID != "" {
			span.SetAttributes(attrSession.String(info.ID))
		}
		endSpan(span, err)
		if err == nil {
			c.s.broadcast(info)
		}
		reply(c, id, startResult{Session: info}, err)
	}()
}

// startDone gives a finished start's slot to the first waiting one, and
// tells the others their new places.
func (c *client) startDone() {
	c.mu.Lock()
	if len(c.startsWaiting) == 0 {
		c.startsRunning--
		c.mu.Unlock()
		return
	}
	next := c.startsWaiting[0]
	c.startsWaiting = slices.Delete(c.startsWaiting, 0, 1)
	rest := slices.Clone(c.startsWaiting)
	c.mu.Unlock()
	close(next.ready)
	for i, w := range rest {
		c.queued(w.id, i+1)
	}
}

func (c *client) do(req *request) {
	if req.Session == "" || req.Command == nil {
		c.fail(req.ID, errorf(CodeBadRequest, "do needs session and command"))
		return
	}
	id, cmd := req.Session, req.Command
	// Refuse a malformed command at once, whatever lane it would take.
	if err := cmd.Validate(&host.CommandPolicy{AllowBypassPermissions: true, MaxImageBytes: int(c.s.opts.MaxFrameBytes)}); err != nil {
		c.fail(req.ID, err)
		return
	}
	// Who it comes from: the identity (in c.ctx, for the session's own
	// check) and its name, for "answered by". Never the client's word.
	cmd.Actor = ""
	if c.id != nil {
		cmd.Actor = c.id.DisplayName()
	}
	// A command that wakes a session asleep, or a resume, may wait for
	// room in a full cluster: the client hears its place as a start's,
	// and so do the commands behind it in the session's lane.
	if cmd.Lane() == host.LaneOrdered {
		cmd.OnQueued = func(position int) { c.queuedInLane(id, position) }
	}
	// The root of the command's trace: through the backend to the turn.
	ctx, span := c.s.startSpan(c.ctx, "serve do "+string(cmd.Type), attrSession.String(id), attrCommand.String(string(cmd.Type)))
	run := func() {
		res, err := c.s.doCommand(ctx, id, cmd)
		endSpan(span, err)
		if err != nil {
			c.fail(req.ID, err)
			return
		}
		reply(c, req.ID, res, nil)
		if cmd.Type == host.CommandClose {
			c.s.kickList()
		}
		if res.Session != nil {
			c.s.broadcast(*res.Session)
			c.s.kickList()
		}
	}
	switch cmd.Lane() {
	case host.LaneQuick:
		// Never behind a slow start or send: a person pressed Stop.
		select {
		case c.quick <- struct{}{}:
		default:
			err := errorf(CodeBusy, "too many requests in flight on this connection")
			endSpan(span, err)
			c.fail(req.ID, err)
			return
		}
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			defer func() { <-c.quick }()
			run()
		}()
	default:
		if !c.enqueue(req.ID, id, run) {
			endSpan(span, errorf(CodeBusy, "too many requests in flight on this connection"))
		}
	}
}

// subscribe replaces any subscription to the session with a new one.
func (c *client) subscribe(req *request) {
	if req.Session == "" {
		c.fail(req.ID, errorf(CodeBadRequest, "subscribe needs session"))
		return
	}
	c.unsubscribe(req.Session)
	if err := c.s.need(c.ctx, req.Session, team.AccessView, "watch"); err != nil {
		c.fail(req.ID, err)
		return
	}
	list, err := c.s.b.List(c.ctx)
	if err != nil {
		c.fail(req.ID, err)
		return
	}
	found := false
	for _, si := range list {
		found = found || si.ID == req.Session
	}
	if !found {
		c.fail(req.ID, errorf(CodeNoSession, "no session %q", req.Session))
		return
	}
	c.mu.Lock()
	if len(c.subs) >= c.s.opts.MaxSubscriptions {
		c.mu.Unlock()
		c.fail(req.ID, errorf(CodeBusy, "at most %d subscriptions per connection", c.s.opts.MaxSubscriptions))
		return
	}
	ctx, cancel := context.WithCancel(c.ctx)
	sub := &subscription{cancel: cancel, done: make(chan struct{})}
	c.subs[req.Session] = sub
	c.mu.Unlock()
	reply(c, req.ID, subscribeResult{Session: req.Session}, nil)
	go c.follow(ctx, sub, req.Session, req.After, req.Snapshot, req.Items)
}

func (c *client) unsubscribe(id string) {
	c.mu.Lock()
	sub := c.subs[id]
	delete(c.subs, id)
	c.mu.Unlock()
	if sub != nil {
		sub.cancel()
		<-sub.done
	}
}

// follow sends a session's events to the client, with a snapshot first
// when asked or when the events it needs are gone. With items, message
// events go as items frames, derived here (Itemizer), and a snapshot
// carries items in place of the CLI's lines.
func (c *client) follow(ctx context.Context, sub *subscription, id string, after uint64, snap, items bool) {
	defer close(sub.done)
	defer func() {
		c.mu.Lock()
		if c.subs[id] == sub {
			delete(c.subs, id)
		}
		c.mu.Unlock()
	}()
	quoted := rawJSON(id)
	var z *Itemizer
	if items && !snap && after > 0 {
		var ok bool
		var err error
		z, ok, err = c.s.itemsAt(ctx, id, after)
		if err != nil {
			if ctx.Err() == nil {
				c.push(ctx, rawJSON(errorFrameT{Type: "error", Session: id, Error: protoError(err)}))
			}
			return
		}
		snap = !ok
	}
	for {
		if snap {
			sn, err := c.s.fullSnapshot(ctx, id)
			if err != nil {
				if ctx.Err() == nil {
					c.push(ctx, rawJSON(errorFrameT{Type: "error", Session: id, Error: protoError(err)}))
				}
				return
			}
			if items {
				z = NewItemizer()
				sn = withItems(sn, z)
			}
			if !c.push(ctx, rawJSON(snapshotFrame{Type: "snapshot", Session: id, Snapshot: sn})) {
				return
			}
			after = sn.Seq
			if sn.Ended {
				return
			}
		}
		snap = false
		for e, err := range c.s.b.Events(ctx, id, after) {
			if err != nil {
				if errors.Is(err, host.ErrResync) {
					c.s.metrics.Resynced()
					snap = true
					break
				}
				if ctx.Err() == nil {
					c.push(ctx, rawJSON(errorFrameT{Type: "error", Session: id, Error: protoError(err)}))
				}
				return
			}
			var frame []byte
			if items && e.Kind == host.EventMessage {
				if z == nil {
					z = NewItemizer() // from the session's first event
				}
				its := z.Add(e.Data)
				if its == nil {
					its = []Item{}
				}
				frame = rawJSON(itemsFrame{Type: "items", Session: id, Seq: e.Seq, Time: e.Time.UTC(), Items: its})
			} else {
				frame = eventFrame(quoted, &e)
			}
			if !c.push(ctx, frame) {
				return
			}
			after = e.Seq
		}
		if !snap {
			return // the session ended
		}
	}
}

// eventFrame encodes an event frame without re-encoding its payload,
// which is JSON already.
func eventFrame(quotedID []byte, e *host.Event) []byte {
	b := make([]byte, 0, len(e.Data)+len(quotedID)+120)
	b = append(b, `{"type":"event","session":`...)
	b = append(b, quotedID...)
	b = append(b, `,"event":{"seq":`...)
	b = strconv.AppendUint(b, e.Seq, 10)
	b = append(b, `,"time":"`...)
	b = e.Time.UTC().AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","kind":`...)
	b = strconv.AppendQuote(b, string(e.Kind))
	b = append(b, `,"data":`...)
	if len(e.Data) == 0 {
		b = append(b, "null"...)
	} else {
		b = append(b, e.Data...)
	}
	return append(b, "}}"...)
}
