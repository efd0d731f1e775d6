package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/tetherhq/tether/host"
	"github.com/tetherhq/tether/internal/telemetry"
)

// ClientOptions configures a Client. A nil *ClientOptions means defaults.
type ClientOptions struct {
	// Conn, URL, NATS: see AgentOptions.
	Conn *nats.Conn
	URL  string
	NATS []nats.Option
	// Limits of the streams and buckets, when this client creates them.
	Limits *Limits
	// StartTimeout is how long a start request waits for an agent with
	// room when the caller's ctx has no deadline (0 = 1 min).
	StartTimeout time.Duration
	// MaxSnapshot bounds a snapshot read from an agent (0 = 64 MiB).
	MaxSnapshot int
	// Logger; nil logs nothing.
	Logger *slog.Logger
	// Registerer, when set, gets tether_nats_connected. nil: none.
	Registerer prometheus.Registerer
	// TracerProvider records a span per command, start and snapshot, and
	// passes its context to the agent in the message's headers. nil
	// means otel.GetTracerProvider().
	TracerProvider trace.TracerProvider
}

// A Client uses the cluster from anywhere: it lists the sessions of every
// agent, starts sessions on agents with room, follows a session's events
// from any sequence number, takes snapshots, sends commands to the owning
// agent and fails sessions of dead agents over. It implements the serve
// package's Backend (see Backend), so `tether serve --nats` is a browser UI
// for the whole cluster. Every method is safe for concurrent use.
type Client struct {
	opts ClientOptions
	b    *bus
	log  *slog.Logger
	tr   trace.Tracer

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	// The registry as the client's KV watches see it (registry.go).
	sessCache, agentCache kvCache
	// judge: the agents' signs of life (liveness.go).
	judge judge

	mu      sync.Mutex
	watched map[string]int // sessions with a subscriber: liveness is checked
	closed  bool
	tails   map[string]*tail // each session's shared reader (tail.go)

	histories historyCache // History's, read once

	revs    revisions     // the wire revision of each live agent (agentWire)
	skipped atomic.Uint64 // messages event readers skipped (Skipped)
	// times event readers went from the live feed back to a consumer
	liveFallbacks atomic.Int64
	// failMarkers: how many appends of a "disconnected" event are to fail
	// (tests only, export_test.go).
	failMarkers atomic.Int32
	metrics     *telemetry.Cluster
}

// NewClient connects and sets up the streams and buckets if needed. ctx
// bounds the setup only.
func NewClient(ctx context.Context, opts *ClientOptions) (*Client, error) {
	var o ClientOptions
	if opts != nil {
		o = *opts
	}
	if o.StartTimeout <= 0 {
		o.StartTimeout = time.Minute
	}
	if o.MaxSnapshot <= 0 {
		o.MaxSnapshot = 64 << 20
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	b, err := connect(ctx, o.Conn, o.URL, "tether-client", o.Limits, log, o.NATS)
	if err != nil {
		return nil, err
	}
	c := &Client{opts: o, b: b, log: log, tr: telemetry.Tracer(o.TracerProvider), watched: map[string]int{}}
	c.metrics = telemetry.NewClusterClient(o.Registerer, b.nc.IsConnected)
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.wg.Add(3)
	go c.monitor()
	go c.follow(b.sessions, &c.sessCache)
	go c.follow(b.agents, &c.agentCache)
	return c, nil
}

// Close ends the client's subscriptions and closes the connection it
// dialled.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.mu.Unlock()
	c.cancel()
	c.metrics.Release()
	c.wg.Wait()
	c.b.close()
	return nil
}

// AgentInfo is a live agent.
type AgentInfo struct {
	ID        string    `json:"id"`
	Capacity  int       `json:"capacity"`
	Sessions  int       `json:"sessions"`
	Heartbeat time.Time `json:"heartbeat"`
	Started   time.Time `json:"started"`
}

// Agents returns the live agents, by id.
func (c *Client) Agents(ctx context.Context) ([]AgentInfo, error) {
	recs, err := c.liveAgents(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]AgentInfo, 0, len(recs))
	for _, r := range recs {
		out = append(out, AgentInfo(r))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// Sessions returns every session of the registry, oldest first: those of
// live agents with their state, those whose agent is gone "disconnected".
// Ended sessions are included (Ended set) until the registry's retention
// drops them.
func (c *Client) Sessions(ctx context.Context) ([]SessionInfo, error) {
	agents, err := c.liveAgents(ctx)
	if err != nil {
		return nil, err
	}
	es, err := c.registry(ctx, c.b.sessions, &c.sessCache)
	if err != nil {
		return nil, err
	}
	out := make([]SessionInfo, 0, len(es))
	for key, e := range es {
		r, err := c.sessionOf(key, e)
		if err != nil {
			c.log.Warn("skipping a registry entry", "err", err)
			continue
		}
		if _, alive := agents[r.Agent]; !alive && !isAsleep(&r) {
			// Its CLI went with its agent, and the CLI's tasks with it.
			r.State, r.Tasks = host.StateDisconnected.String(), 0
		}
		out = append(out, r)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Created.Before(out[j].Created) })
	return out, nil
}

// Session returns one session's registry entry, its state
// "disconnected" when its agent is gone.
func (c *Client) Session(ctx context.Context, id string) (SessionInfo, error) {
	r, _, err := c.record(ctx, id)
	if err != nil {
		return r, err
	}
	if r.Agent != "" {
		alive, err := c.alive(ctx, r.Agent, r.ID)
		if err != nil {
			return r, err
		}
		if !alive {
			r.State, r.Tasks = host.StateDisconnected.String(), 0
		}
	}
	return r, nil
}

// record reads a session's registry entry (bus.record).
func (c *Client) record(ctx context.Context, id string) (SessionInfo, uint64, error) {
	return c.b.record(ctx, id)
}

// StartOptions says what session to start. A nil *StartOptions starts one
// with the agents' template (a prewarmed spare when there is one).
type StartOptions struct {
	// ID is the new session's id ("" = NewSessionID()).
	ID                 string
	Cwd                string
	Model              string
	PermissionMode     string
	AppendSystemPrompt string
	// Resume continues the CLI session with this id: one of a cluster
	// session that ended or whose agent is gone (its mirrored transcript
	// is restored on the agent that takes the request), or one on the
	// disk of every agent. Fork gives it a new id.
	Resume string
	Fork   bool
	Title  string
	// Worktree runs the session in a git worktree of its own, made by
	// the agent in the repository of Cwd (host.WorktreeOptions). It needs
	// every live agent to speak wire revision 4: otherwise the start is
	// refused, before anything is sent, with an *UnsupportedError naming
	// the oldest revision. Not with Resume.
	Worktree bool
	// OnQueued, when set, is called while no agent has room: with the
	// request's place in the work queue (1 = next), and again each
	// heartbeat its place changes. It runs on Start's goroutine.
	OnQueued func(position int)
}

// Start asks the cluster for a session: the request waits in the work
// queue until an agent with room takes it, and Start returns once the
// session runs. When ctx ends first the request expires with it, and no
// agent starts it later.
func (c *Client) Start(ctx context.Context, opts *StartOptions) (SessionInfo, error) {
	var o StartOptions
	if opts != nil {
		o = *opts
	}
	fresh := o.ID == ""
	if fresh {
		o.ID = NewSessionID()
	}
	req := startRequest{ID: o.ID, Cwd: o.Cwd, Model: o.Model, PermissionMode: o.PermissionMode,
		AppendSystemPrompt: o.AppendSystemPrompt, Resume: o.Resume, Fork: o.Fork, Title: o.Title, Worktree: o.Worktree,
		onQueued: o.OnQueued, fresh: fresh}
	if o.Resume != "" {
		// A conversation of a cluster session: the agent restores its
		// mirrored transcript first, wherever it ran.
		list, err := c.Sessions(ctx)
		if err != nil {
			return SessionInfo{}, err
		}
		// The latest session of that conversation has the longest mirror
		// (a running one's too: it mirrors every turn).
		var latest *SessionInfo
		for i, s := range list {
			if s.CLISession == o.Resume && (latest == nil || s.Updated.After(latest.Updated)) {
				latest = &list[i]
			}
		}
		if latest != nil {
			req.Restore = latest.ID
			if req.Title == "" {
				req.Title = latest.Title
			}
		}
	}
	return c.start(ctx, &req)
}

// Resume fails a session over: when its agent is gone, another agent with
// room restores its mirrored transcript, resumes the conversation with the
// CLI's --resume and carries on its events where they stopped. What the
// session was doing when its agent died is not recovered: a running tool's
// side effects (half-written files, a shell's processes), a turn in
// flight (its prompt must be sent again), pending approvals and queued
// prompts. It fails with ErrOwned while the agent is alive.
//
// A session that ended on its own (its CLI exited; Ended, not Closed) is
// resumed as a new session in its place, as a lone tether serve does:
// the SessionInfo returned has another ID, the same conversation and, if
// the old one had a worktree, the same worktree; the old one is marked
// closed. A closed session is not resumed (ErrNoSession): start a new
// session with its conversation (StartOptions.Resume).
func (c *Client) Resume(ctx context.Context, id string) (SessionInfo, error) {
	return c.resume(ctx, id, nil)
}

// resume is Resume, telling onQueued (when set) the failover request's
// place in the queue while no agent has room.
func (c *Client) resume(ctx context.Context, id string, onQueued func(int)) (SessionInfo, error) {
	if !validID(id) {
		return SessionInfo{}, &CommandError{Code: codeNoSession, Message: "bad session id"}
	}
	// The agents judge their peers by heartbeats alone (their NATS user
	// may not ping); this client's judgement (liveness.go) comes first, so
	// that a session whose agent only could not store its heartbeats is
	// not moved.
	//
	// A session already marked disconnected (by this client, or by one of
	// an older release that judges by heartbeats alone, as during a roll)
	// is moved unless its agent answers a ping of it now: a person asked
	// for it, and a mark is itself a judgement that the agent is gone.
	r, _, err := c.record(ctx, id)
	if err == nil && r.Ended {
		return c.revive(ctx, r)
	}
	if err == nil && r.Agent != "" && !r.Moving {
		var alive bool
		if r.Orphaned {
			alive = c.b.ping(ctx, id, r.Agent)
		} else {
			alive, err = c.alive(ctx, r.Agent, id)
			alive = alive && err == nil
		}
		if alive {
			return SessionInfo{}, &CommandError{Code: codeOwned, Message: id + " runs on " + r.Agent}
		}
	}
	return c.start(ctx, &startRequest{ID: id, Failover: true, onQueued: onQueued})
}

// revive resumes a session that ended on its own (its CLI exited) as a
// new session that takes its place, as a lone serve's resume does: its
// conversation restored from the mirror, in its worktree if it had one
// (startRequest.Continue). Its events ended with EventClosed, which every
// reader takes as the last, so it cannot go on under the same id.
func (c *Client) revive(ctx context.Context, r SessionInfo) (SessionInfo, error) {
	switch {
	case r.Closed:
		return SessionInfo{}, &CommandError{Code: codeNoSession, Message: r.ID + " was closed; resume its conversation as a new session"}
	case r.CLISession == "":
		return SessionInfo{}, &CommandError{Code: codeNoTranscript, Message: r.ID + " has no conversation to resume"}
	}
	if liveWorktree(r.Worktree) != nil {
		// An older agent would resume it in the worktree's folder
		// without the worktree's commands.
		if rev := c.oldestAgentWire(ctx); rev < worktreeRevision {
			return SessionInfo{}, &UnsupportedError{Subject: subjectStart, Revision: rev,
				What: fmt.Sprintf("resuming a session in a worktree while an agent of an older release is live (worktrees need wire revision %d)", worktreeRevision)}
		}
	}
	return c.start(ctx, &startRequest{ID: NewSessionID(), Cwd: r.Cwd, Model: r.Model, Title: r.Title,
		Resume: r.CLISession, Restore: r.ID, Continue: true, fresh: true})
}

func (c *Client) start(ctx context.Context, req *startRequest) (_ SessionInfo, err error) {
	m := stamp(nats.NewMsg(subjectStart))
	ctx, span := startClientSpan(ctx, c.tr, "cluster start", subjectStart, req.ID, m.Header, attrFail.Bool(req.Failover))
	defer func() { endSpan(span, err) }()
	parent, began := ctx, time.Now()
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.opts.StartTimeout)
		defer cancel()
	}
	deadline, _ := ctx.Deadline()
	req.Expires = deadline
	req.Identity = ctxIdentity(ctx)
	if err := req.validate(); err != nil {
		return SessionInfo{}, &MessageError{Subject: subjectStart, Reason: err.Error(), Err: ErrMalformed}
	}
	// Any live agent may take the request from the queue: it carries
	// only what the oldest of them reads.
	data, dropped, _ := encodeFor(OldestWireRevision, "start", req)
	if req.Worktree {
		// An agent of revision 2 or 3 would ignore the field and start
		// the session in cwd itself: every live agent must make
		// worktrees, since any of them may take the request.
		if rev := c.oldestAgentWire(ctx); rev < worktreeRevision {
			return SessionInfo{}, &UnsupportedError{Subject: subjectStart, Revision: rev,
				What: fmt.Sprintf("a session in a worktree while an agent of an older release is live (worktrees need wire revision %d)", worktreeRevision)}
		}
	}
	if len(dropped) > 0 {
		if rev := c.oldestAgentWire(ctx); rev < 2 {
			return SessionInfo{}, &UnsupportedError{Subject: subjectStart, Revision: rev,
				What: "a start request with " + strings.Join(dropped, ", ") + " while an agent of an older release is live"}
		}
		data, _ = json.Marshal(req)
	}
	if len(data) > MaxStartSize {
		return SessionInfo{}, &MessageError{Subject: subjectStart, Reason: fmt.Sprintf("%d bytes, limit %d", len(data), MaxStartSize), Err: ErrTooLarge}
	}
	if !c.b.nc.IsConnected() {
		return SessionInfo{}, fmt.Errorf("%w: cannot queue the start request", ErrUnavailable)
	}
	inbox := c.b.nc.NewRespInbox()
	replies := make(chan *nats.Msg, 4)
	sub, err := c.b.nc.ChanSubscribe(inbox, replies)
	if err != nil {
		return SessionInfo{}, c.unavailable(err)
	}
	defer sub.Unsubscribe()
	m.Data = data
	m.Header.Set(hdrReply, inbox)
	// One id per call: a retried publish is stored once.
	m.Header.Set(hdrMsgID, "start."+req.ID+"."+randomID(8))
	ack, err := c.queue(ctx, m)
	if err != nil {
		return SessionInfo{}, c.unavailable(fmt.Errorf("cluster: queueing the start request: %w", err))
	}
	// While no agent has room, tell the caller where the request stands,
	// now and every heartbeat while its place changes.
	t := time.NewTicker(c.b.ttl / 3)
	defer t.Stop()
	last := 0
	report := func() {
		if req.onQueued == nil {
			return
		}
		if pos := c.queuePosition(ctx, ack.Sequence); pos > 0 && pos != last {
			last = pos
			callQueued(req.onQueued, pos, c.log)
		}
	}
	if !c.roomNow(ctx) {
		report()
	}
	reconnects, ticks := c.b.nc.Stats().Reconnects, 0
	for {
		select {
		case r := <-replies:
			var rep startReply
			if err := decodeFrom(r.Subject, r.Header, r.Data, MaxRecordSize, &rep); err != nil {
				c.log.Warn("ignoring a start reply", "err", err)
				continue
			}
			if rep.Session == nil && rep.Error == nil {
				continue
			}
			if rep.Error != nil {
				return SessionInfo{}, rep.Error.err()
			}
			if req.Worktree && rep.Session.Worktree == nil {
				// An agent of an older release joined and took the
				// request since the check above: it started the session
				// in cwd itself, which is what was asked not to do.
				c.closeStray(ctx, rep.Session.ID)
				return SessionInfo{}, &UnsupportedError{Subject: subjectStart, Revision: wireOf(r.Header),
					What: "a session in a worktree, taken by an agent of an older release (the session it started was closed)"}
			}
			c.noteSession(*rep.Session)
			return *rep.Session, nil
		case <-t.C:
			if last > 0 || !c.roomNow(ctx) {
				report()
			}
			// A reply lost on its way: look for the session after a
			// reconnect, and every heartbeat lapse in case the agent's
			// connection was the one that dropped it.
			ticks++
			if r := c.b.nc.Stats().Reconnects; r != reconnects || ticks%3 == 0 {
				reconnects = r
				if info, ok := c.startedMeanwhile(ctx, req); ok {
					return info, nil
				}
			}
		case <-ctx.Done():
			if parent.Err() == context.Canceled {
				return SessionInfo{}, parent.Err()
			}
			lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			info, ok := c.startedMeanwhile(lctx, req)
			cancel()
			if ok {
				return info, nil
			}
			// The request expires with the deadline: no agent starts it
			// later.
			return SessionInfo{}, &host.CommandError{Code: host.CodeBusy, Err: host.ErrBusy,
				Message: fmt.Sprintf("no agent had room for session %s in %v; the request was withdrawn, try again later", req.ID, time.Since(began).Round(100*time.Millisecond))}
		}
	}
}

// startedMeanwhile looks in the registry for a session that an agent
// started though its reply never came. The reply goes to the client's
// inbox unstored: one sent while either connection was down (a NATS
// server stalled under load, a reconnect) is lost, while the session runs
// and its registry entry says so. Only for an id made up for this start
// (req.fresh): the entry of a failover, a wake or an id the caller chose
// may predate the request. An entry still starting is not taken: its
// start may yet fail, and the reply may yet come.
func (c *Client) startedMeanwhile(ctx context.Context, req *startRequest) (SessionInfo, bool) {
	if !req.fresh {
		return SessionInfo{}, false
	}
	r, _, err := c.record(ctx, req.ID)
	if err != nil || r.Ended || r.Agent == "" || r.State == host.StateStarting.String() || (req.Worktree && r.Worktree == nil) {
		return SessionInfo{}, false
	}
	c.log.Info("a start's reply was lost; the session runs", "session", req.ID, "agent", r.Agent)
	c.noteSession(r)
	return r, true
}

// closeStray closes a session started otherwise than asked.
func (c *Client) closeStray(ctx context.Context, id string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if _, err := c.Command(ctx, id, &host.Command{Type: host.CommandClose}); err != nil {
		c.log.Warn("closing a session started without its worktree", "session", id, "err", err)
	}
}

// callQueued calls a caller's OnQueued, recovered.
func callQueued(f func(int), pos int, log *slog.Logger) {
	if f == nil {
		return
	}
	defer func() {
		if p := recover(); p != nil {
			log.Error("OnQueued panicked", "panic", p)
		}
	}()
	f(pos)
}

// queue publishes a start request until it is stored, and returns its
// acknowledgement (its place in the stream).
func (c *Client) queue(ctx context.Context, m *nats.Msg) (*jetstream.PubAck, error) {
	wait := 50 * time.Millisecond
	for {
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		ack, err := c.b.js.PublishMsg(pctx, m)
		cancel()
		if err == nil {
			return ack, nil
		}
		var apiErr *jetstream.APIError
		if errors.As(err, &apiErr) && apiErr.Code == 400 {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(wait):
		}
		wait = min(2*wait, time.Second)
	}
}

// queuePosition is the place of the start request stored at stream
// sequence seq among those waiting (1 = next), 0 when unknown or taken.
// Requests withdrawn in between count as gaps; the place is approximate
// when some ahead are being started.
func (c *Client) queuePosition(ctx context.Context, seq uint64) int {
	info, err := c.b.start.Info(ctx)
	if err != nil || info.State.Msgs == 0 || seq < info.State.FirstSeq || seq > info.State.LastSeq {
		return 0
	}
	pos := int(seq-info.State.FirstSeq+1) - info.State.NumDeleted
	return max(1, min(pos, int(info.State.Msgs)))
}

// roomNow reports whether a live agent has a free slot as of its last
// heartbeat.
func (c *Client) roomNow(ctx context.Context) bool {
	agents, err := c.liveAgents(ctx)
	if err != nil {
		return false
	}
	for _, a := range agents {
		if a.Sessions < a.Capacity {
			return true
		}
	}
	return false
}

// Ready reports whether the cluster can take sessions: NATS reachable,
// the streams and buckets there, and a live agent with room. The error
// says what is missing.
func (c *Client) Ready(ctx context.Context) error {
	// Requests made while the connection drops wait for it to come back:
	// bound them, so that a probe answers.
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if !c.b.nc.IsConnected() {
		return fmt.Errorf("%w: not connected (%s)", ErrUnavailable, c.b.nc.Status())
	}
	for _, name := range []string{StreamStart, StreamEvents, StreamTranscripts, "KV_" + BucketSessions, "KV_" + BucketAgents} {
		if _, err := c.b.js.Stream(ctx, name); err != nil {
			return c.unavailable(fmt.Errorf("cluster: stream %s: %w", name, err))
		}
	}
	agents, err := c.liveAgents(ctx)
	if err != nil {
		return fmt.Errorf("cluster: reading the agents: %w", err)
	}
	if len(agents) == 0 {
		return errors.New("cluster: no live agent")
	}
	for _, a := range agents {
		if a.Sessions < a.Capacity {
			return nil
		}
	}
	return fmt.Errorf("cluster: every agent is full (%d live)", len(agents))
}

// Command sends a command to the session's agent, which runs it with
// host.Session.Do, and returns its result (the uuid of a prompt sent, the
// step of a forced interrupt). The session's refusal is a
// *host.CommandError with host's stable code, matching host's sentinels
// (host.ErrAlreadyAnswered for an approval answered before, from
// wherever); the cluster's own are *CommandError (ErrDisconnected for a
// session whose agent is gone, ErrNoSession). CommandResume is not a
// command of the agent's: use Resume. A session asleep is woken by any
// command but those that only read (changes, slash_commands), which are
// answered as the session stood when it fell asleep, as they are for a
// session whose CLI ended; no agent checks them, so a front end with a
// team checks them first, as it does before it reads history.
func (c *Client) Command(ctx context.Context, id string, cmd *host.Command) (*host.CommandResult, error) {
	if !validID(id) {
		return nil, &CommandError{Code: codeNoSession, Message: "bad session id"}
	}
	if cmd == nil {
		return nil, &MessageError{Subject: subjectCommand + id, Reason: "no command", Err: ErrMalformed}
	}
	if cmd.Type == host.CommandResume {
		return nil, &MessageError{Subject: subjectCommand + id, Reason: "resume is Client.Resume", Err: ErrMalformed}
	}
	cm := &commandMsg{Command: *cmd, Identity: ctxIdentity(ctx)}
	if err := cm.validate(); err != nil {
		var ue *UnsupportedError
		if errors.As(err, &ue) {
			ue.Subject = subjectCommand + id
			return nil, ue
		}
		return nil, &MessageError{Subject: subjectCommand + id, Reason: err.Error(), Err: ErrMalformed}
	}
	return c.command(ctx, id, cm)
}

// command is Command once the command was checked, in its span.
func (c *Client) command(ctx context.Context, id string, cmd *commandMsg) (_ *host.CommandResult, err error) {
	msg := stamp(nats.NewMsg(subjectCommand + id))
	ctx, span := startClientSpan(ctx, c.tr, spanName("cluster command", &cmd.Command), msg.Subject, id, msg.Header, attrCommand.String(string(cmd.Type)))
	defer func() { endSpan(span, err) }()
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Minute)
		defer cancel()
	}
	limit := min(MaxCommandSize, int(c.b.nc.MaxPayload()))
	data, err := c.encodeCommand(ctx, id, cmd)
	if errors.Is(err, errWakeFirst) {
		// Asleep, and no agent live to say what it reads. A command
		// that wakes the session (as request would) is encoded for the
		// agent that took it; request answers the others without an
		// agent. Its fullest form is checked for size first, so that
		// one too large wakes nothing.
		data, err = json.Marshal(cmd)
		if err == nil && len(data) <= limit && wakesAsleep(cmd.Type) {
			if err = c.wake(ctx, id, cmd.OnQueued); err == nil {
				data, err = c.encodeCommand(ctx, id, cmd)
			}
		}
	}
	if err != nil {
		return nil, err
	}
	if len(data) > limit {
		return nil, &MessageError{Subject: subjectCommand + id, Reason: fmt.Sprintf("%d bytes, limit %d (MaxCommandSize, NATS max_payload)", len(data), limit), Err: ErrTooLarge}
	}
	msg.Data = data
	msg.Header.Set(hdrRequest, newRequestID()) // its copies' name (requests.go)
	r, err := c.request(ctx, id, msg, cmd.Type, cmd.OnQueued)
	if (errors.Is(err, errAsleep) || errors.Is(err, ErrNoSession)) && cmd.Type.ReadOnly() {
		// Asleep, or ended (and still listed): answered as it stood then.
		if res, ok := c.recordedAnswer(ctx, id, cmd.Type); ok {
			return res, nil
		}
	}
	if err != nil {
		return nil, err
	}
	var rep commandReply
	if err := decodeFrom(subjectCommand+id, r.Header, r.Data, MaxRecordSize, &rep); err != nil {
		return nil, err
	}
	if rep.Error != nil {
		return nil, rep.Error.err()
	}
	if rep.Result == nil {
		rep.Result = &host.CommandResult{}
	}
	return rep.Result, nil
}

// unavailable says so when err came of NATS being out of reach.
func (c *Client) unavailable(err error) error {
	if err == nil || c.b.nc.IsConnected() {
		return err
	}
	return fmt.Errorf("%w: %w", ErrUnavailable, err)
}

// encodeCommand is a command as its session's agent reads it: the
// fields of revision 1 only, unless the command needs more and the agent
// speaks a later revision (else an *UnsupportedError, before anything is
// sent). For a session asleep while no agent is live, no agent can say
// which revision it reads: errWakeFirst, and the agent that wakes it
// decides.
func (c *Client) encodeCommand(ctx context.Context, id string, cmd *commandMsg) ([]byte, error) {
	data, dropped, err := encodeFor(OldestWireRevision, "command", cmd)
	if err != nil || len(dropped) == 0 {
		return data, err
	}
	rev := OldestWireRevision
	if r, _, err := c.record(ctx, id); err == nil && (r.Agent != "" || isAsleep(&r)) {
		if agents, err := c.liveAgents(ctx); err == nil {
			if a, ok := agents[r.Agent]; ok {
				rev = c.agentWire(ctx, a)
			} else if r.Agent == "" && len(agents) > 0 {
				// Asleep: the command wakes it on whichever live agent
				// has room, so each of them must read it.
				rev = math.MaxInt
				for _, a := range agents {
					rev = min(rev, c.agentWire(ctx, a))
				}
			} else if r.Agent == "" {
				return nil, errWakeFirst
			}
		}
	}
	if rev < 2 {
		return nil, &UnsupportedError{Subject: subjectCommand + id, Revision: rev,
			What: fmt.Sprintf("a %s command with %s, on an agent of an older release", cmd.Type, strings.Join(dropped, ", "))}
	}
	return json.Marshal(cmd)
}

// errWakeFirst marks encodeCommand's answer for a command with fields
// revision 1 lacks, to a session asleep while no agent is live.
var errWakeFirst = errors.New("cluster: wake the session first")

// takeoverWait bounds how long a command waits for a session that an
// agent is taking over (claimed, its CLI starting) to take commands (a
// variable for tests).
var takeoverWait = 15 * time.Second

// request sends a command to the session's agent. While nobody serves the
// session's subject because an agent is taking it over (the registry
// names a live agent that has not attached it yet), it tries again, for
// at most takeoverWait: nothing was delivered, so nothing runs twice. A
// session asleep (sleep.go) it wakes first, then sends the command (of
// type typ); a prompt is sent once the session is awake even if its
// sender has gone meanwhile (a closed tab), as host does, so that a wake
// never drops a prompt the server took. A command that only reads
// (host.CommandType.ReadOnly: changes, slash_commands) does not wake it
// (as in host; a UI asks for them whenever it shows a session): it fails
// with ErrDisconnected, saying the session is asleep, and command answers
// it from the record its agent wrote when it put it to sleep, if any
// (answers.go), as it does for a session that ended. While a wake waits
// for an agent with room, onQueued (when set) hears its place in the
// queue (host.Command.OnQueued).
func (c *Client) request(ctx context.Context, id string, msg *nats.Msg, typ host.CommandType, onQueued func(int)) (*nats.Msg, error) {
	wait := 50 * time.Millisecond
	deadline := time.Now().Add(takeoverWait)
	wakes := 0
	for {
		r, err := c.ask(ctx, id, msg)
		if err == nil && r.Header.Get(hdrAsleep) == "" {
			return r, nil
		}
		if err != nil && !errors.Is(err, nats.ErrNoResponders) {
			return nil, c.unavailable(err)
		}
		// Nobody serves the session, or its agent is putting it to sleep
		// (the command did not run).
		err = c.noOwner(ctx, id)
		if errors.Is(err, errAsleep) && typ == host.CommandStopTask {
			// A session asleep runs no task: nothing to wake it for.
			return nil, &host.CommandError{Code: host.CodeNoTask, Message: "session " + id + " is asleep: no background task runs", Err: host.ErrNoTask}
		}
		if errors.Is(err, errAsleep) && wakes < maxWakes && wakesAsleep(typ) {
			wakes++
			if typ == host.CommandSend && wakes == 1 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), c.opts.StartTimeout+commandLimit)
				defer cancel()
			}
			if err := c.wake(ctx, id, onQueued); err != nil {
				return nil, err
			}
			deadline = time.Now().Add(takeoverWait)
			continue
		}
		if !errors.Is(err, errStarting) || time.Now().After(deadline) {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(wait):
		}
		wait = min(2*wait, 500*time.Millisecond)
	}
}

// wakesAsleep reports whether a command of type t wakes a session asleep:
// every one but those that only read (answered from the record its agent
// wrote) and stop_task (a session asleep runs no task).
func wakesAsleep(t host.CommandType) bool {
	return !t.ReadOnly() && t != host.CommandStopTask
}

// errStarting marks noOwner's answer for a session a live agent is
// taking over.
var errStarting = errors.New("cluster: session starting")

// noOwner says why nobody answered on a session's subject: it ended; a
// live agent is taking it over (host's busy code, "starting", matching
// errStarting); or it has no agent (ErrDisconnected: its agent is gone,
// or drained with no agent to take it, and it waits for one).
func (c *Client) noOwner(ctx context.Context, id string) error {
	r, _, err := c.record(ctx, id)
	if err != nil {
		return err
	}
	if r.Ended {
		// Its changes still show (answers.go) but cannot be reverted
		// here: no agent holds its files. The session that takes its
		// place carries them on.
		return &CommandError{Code: codeNoSession, Message: "session " + id + " has ended; resume it to go on, its changes with it"}
	}
	if isAsleep(&r) {
		return fmt.Errorf("%w: %w", &CommandError{Code: codeDisconnected, Message: "session " + id + " is asleep; a command wakes it"}, errAsleep)
	}
	if r.Agent != "" && !r.Orphaned && !r.Moving {
		if alive, err := c.b.agentAlive(ctx, r.Agent); err == nil && alive {
			return fmt.Errorf("%w: %w", &host.CommandError{Code: host.CodeBusy, Err: host.ErrBusy,
				Message: "session " + id + " is starting on agent " + r.Agent + "; try again in a moment"}, errStarting)
		}
	}
	return &CommandError{Code: codeDisconnected, Message: noAgentText(id, r)}
}

// lastAgent names the agent that ran the session last.
func lastAgent(r SessionInfo) string {
	if r.Agent != "" {
		return r.Agent
	}
	if n := len(r.Owners); n > 0 {
		return r.Owners[n-1]
	}
	return "(none)"
}

// noAgentText says why a session has no agent, and what happens next.
func noAgentText(id string, r SessionInfo) string {
	if r.Moving {
		return "session " + id + " is waiting for an agent with room: agent " + lastAgent(r) + " drained and handed it over"
	}
	return "session " + id + " is waiting for an agent: agent " + lastAgent(r) + " is gone (resume it to go on elsewhere)"
}

// Snapshot returns the session's snapshot from its agent, its Seq in the
// numbering of the session's events. A session whose agent is gone gets
// a snapshot rebuilt from the registry and the events still kept: its
// state, cost and transcript (Dropped counts what retention lost).
func (c *Client) Snapshot(ctx context.Context, id string) (_ *host.Snapshot, err error) {
	if !validID(id) {
		return nil, &CommandError{Code: codeNoSession, Message: "bad session id"}
	}
	req := stamp(nats.NewMsg(subjectCommand + id))
	ctx, span := startClientSpan(ctx, c.tr, "cluster snapshot", req.Subject, id, req.Header)
	defer func() { endSpan(span, err) }()
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Minute)
		defer cancel()
	}
	inbox := c.b.nc.NewRespInbox()
	// Not SubscribeSync: its channel has the connection's SubChanLen slots
	// (64k, 512 KiB allocated and cleared for every call, as for commands:
	// see ask). The parts wait in the subscription's list, bounded in
	// bytes, until this loop takes them.
	parts := make(chan *nats.Msg)
	done := make(chan struct{})
	defer close(done)
	sub, err := c.b.nc.Subscribe(inbox, func(m *nats.Msg) {
		select {
		case parts <- m:
		case <-done:
		}
	})
	if err != nil {
		return nil, err
	}
	defer sub.Unsubscribe()
	sub.SetPendingLimits(-1, c.opts.MaxSnapshot+(1<<20))
	req.Reply = inbox
	req.Header.Set(hdrOp, opSnapshot)
	if id := ctxIdentity(ctx); id != nil {
		sm := &snapshotMsg{Identity: id}
		if err := sm.validate(); err != nil {
			return nil, &MessageError{Subject: req.Subject, Reason: err.Error(), Err: ErrMalformed}
		}
		req.Data = encodeRecord("snapshot", sm)
	}
	if err := c.b.nc.PublishMsg(req); err != nil {
		return nil, c.unavailable(err)
	}
	var buf []byte
	for {
		var m *nats.Msg
		select {
		case m = <-parts:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-c.ctx.Done(): // Close
			return nil, nats.ErrConnectionClosed
		}
		if len(m.Data) == 0 && m.Header.Get("Status") == "503" {
			return c.offlineSnapshot(ctx, id)
		}
		i, n, ok := parsePart(m.Header.Get(hdrPart))
		if !ok {
			return nil, &MessageError{Subject: subjectCommand + id, Reason: "bad snapshot part", Err: ErrMalformed}
		}
		buf = append(buf, m.Data...)
		if len(buf) > c.opts.MaxSnapshot {
			return nil, &MessageError{Subject: subjectCommand + id, Reason: "snapshot over ClientOptions.MaxSnapshot", Err: ErrTooLarge}
		}
		if i < n {
			continue
		}
		var rep commandReply
		if json.Unmarshal(buf, &rep) == nil && rep.Error != nil {
			return nil, rep.Error.err()
		}
		var snap host.Snapshot
		if err := json.Unmarshal(buf, &snap); err != nil {
			return nil, &MessageError{Subject: subjectCommand + id, Reason: jsonReason(err), Err: ErrMalformed}
		}
		return &snap, nil
	}
}

func parsePart(h string) (i, n int, ok bool) {
	a, b, found := strings.Cut(h, "/")
	if !found {
		return 0, 0, false
	}
	i, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	return i, n, err1 == nil && err2 == nil && i >= 1 && i <= n
}

// offlineSnapshot rebuilds the snapshot of a session nobody runs from its
// registry entry and its events.
func (c *Client) offlineSnapshot(ctx context.Context, id string) (*host.Snapshot, error) {
	r, err := c.Session(ctx, id)
	if err != nil {
		return nil, err
	}
	last, _, err := c.b.lastSeq(ctx, id)
	if err != nil {
		return nil, err
	}
	snap := &host.Snapshot{Seq: last, ID: id, SessionID: r.CLISession, Cwd: r.Cwd, Model: r.Model,
		State: host.StateInfo{State: r.State, Since: r.Updated}, Ended: r.Ended,
		Transcript: []json.RawMessage{}, Approvals: []host.ApprovalInfo{}, Deliveries: []host.DeliveryInfo{}}
	snap.Cost.USD = r.CostUSD
	if !r.Ended && !isAsleep(&r) {
		snap.Error = noAgentText(id, r)
		snap.State.Error = snap.Error
	}
	if last == 0 {
		return snap, nil
	}
	// The transcript: every message event still kept, up to last; who
	// answered its approvals, as the agent's snapshot said.
	var ans answers
	snap.Dropped = c.eachKept(ctx, id, last, func(ev host.Event) {
		if ev.Kind == host.EventMessage {
			snap.Transcript = append(snap.Transcript, ev.Data)
		}
		ans.add(ev)
	})
	snap.Resolved = ans.out
	return snap, nil
}
