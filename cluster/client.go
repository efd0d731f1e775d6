package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tetherhq/tether/host"
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

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	watched map[string]int // sessions with a subscriber: liveness is checked
	closed  bool

	skipped atomic.Uint64 // messages event readers skipped (Skipped)
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
	nc, own, err := dial(o.Conn, o.URL, "tether-client", o.NATS)
	if err != nil {
		return nil, err
	}
	b, err := open(ctx, nc, own, o.Limits)
	if err != nil {
		if own {
			nc.Close()
		}
		return nil, err
	}
	c := &Client{opts: o, b: b, log: log, watched: map[string]int{}}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.wg.Add(1)
	go c.monitor()
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

func (c *Client) liveAgents(ctx context.Context) (map[string]agentRecord, error) {
	es, err := c.b.entries(ctx, c.b.agents)
	if err != nil {
		return nil, err
	}
	out := map[string]agentRecord{}
	for key, e := range es {
		var r agentRecord
		if decode(BucketAgents+"."+key, e.Value(), MaxRecordSize, &r) != nil {
			continue
		}
		if time.Since(e.Created()) < c.b.ttl {
			out[r.ID] = r
		}
	}
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
	es, err := c.b.entries(ctx, c.b.sessions)
	if err != nil {
		return nil, err
	}
	out := make([]SessionInfo, 0, len(es))
	for key, e := range es {
		var r SessionInfo
		if err := decode(BucketSessions+"."+key, e.Value(), MaxRecordSize, &r); err != nil {
			c.log.Warn("skipping a registry entry", "err", err)
			continue
		}
		if _, alive := agents[r.Agent]; !alive {
			r.State = host.StateDisconnected.String()
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
		alive, err := c.b.agentAlive(ctx, r.Agent)
		if err != nil {
			return r, err
		}
		if !alive {
			r.State = host.StateDisconnected.String()
		}
	}
	return r, nil
}

func (c *Client) record(ctx context.Context, id string) (SessionInfo, uint64, error) {
	var r SessionInfo
	if !validID(id) {
		return r, 0, &CommandError{Code: codeNoSession, Message: "bad session id"}
	}
	e, err := c.b.sessions.Get(ctx, id)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return r, 0, &CommandError{Code: codeNoSession, Message: id}
	}
	if err != nil {
		return r, 0, err
	}
	if err := decode(BucketSessions+"."+id, e.Value(), MaxRecordSize, &r); err != nil {
		return r, 0, err
	}
	return r, e.Revision(), nil
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
	if o.ID == "" {
		o.ID = NewSessionID()
	}
	req := startRequest{ID: o.ID, Cwd: o.Cwd, Model: o.Model, PermissionMode: o.PermissionMode,
		AppendSystemPrompt: o.AppendSystemPrompt, Resume: o.Resume, Fork: o.Fork, Title: o.Title}
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
func (c *Client) Resume(ctx context.Context, id string) (SessionInfo, error) {
	if !validID(id) {
		return SessionInfo{}, &CommandError{Code: codeNoSession, Message: "bad session id"}
	}
	return c.start(ctx, &startRequest{ID: id, Failover: true})
}

func (c *Client) start(ctx context.Context, req *startRequest) (SessionInfo, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.opts.StartTimeout)
		defer cancel()
	}
	deadline, _ := ctx.Deadline()
	req.Expires = deadline
	if err := req.validate(); err != nil {
		return SessionInfo{}, &MessageError{Subject: subjectStart, Reason: err.Error(), Err: ErrMalformed}
	}
	data, _ := json.Marshal(req)
	if len(data) > MaxStartSize {
		return SessionInfo{}, &MessageError{Subject: subjectStart, Reason: fmt.Sprintf("%d bytes, limit %d", len(data), MaxStartSize), Err: ErrTooLarge}
	}
	inbox := c.b.nc.NewRespInbox()
	sub, err := c.b.nc.SubscribeSync(inbox)
	if err != nil {
		return SessionInfo{}, err
	}
	defer sub.Unsubscribe()
	m := nats.NewMsg(subjectStart)
	m.Data = data
	m.Header.Set(hdrReply, inbox)
	// One id per call: a retried publish is stored once.
	m.Header.Set(hdrMsgID, "start."+req.ID+"."+randomID(8))
	if err := c.b.publishRetry(ctx, m); err != nil {
		return SessionInfo{}, fmt.Errorf("cluster: queueing the start request: %w", err)
	}
	for {
		r, err := sub.NextMsgWithContext(ctx)
		if err != nil {
			return SessionInfo{}, fmt.Errorf("cluster: waiting for an agent to start session %s: %w", req.ID, err)
		}
		var rep startReply
		if err := decode(r.Subject, r.Data, MaxRecordSize, &rep); err != nil {
			c.log.Warn("ignoring a start reply", "err", err)
			continue
		}
		if rep.Session == nil && rep.Error == nil {
			continue
		}
		if rep.Error != nil {
			return SessionInfo{}, rep.Error.err()
		}
		return *rep.Session, nil
	}
}

// Command sends a command to the session's agent and returns its answer:
// for OpSend the message's uuid, for a forced OpInterrupt the step that
// worked ("request", "sigint", "kill" or "none"). A refusal is a *CommandError matching
// its sentinel (host.ErrAlreadyAnswered for an approval answered before,
// from wherever); a session whose agent is gone fails with
// ErrDisconnected.
func (c *Client) Command(ctx context.Context, id string, cmd *Command) (string, error) {
	if !validID(id) {
		return "", &CommandError{Code: codeNoSession, Message: "bad session id"}
	}
	if err := cmd.validate(); err != nil {
		return "", &MessageError{Subject: subjectCommand + id, Reason: err.Error(), Err: ErrMalformed}
	}
	data, _ := json.Marshal(cmd)
	if max := min(MaxCommandSize, int(c.b.nc.MaxPayload())); len(data) > max {
		return "", &MessageError{Subject: subjectCommand + id, Reason: fmt.Sprintf("%d bytes, limit %d (MaxCommandSize, NATS max_payload)", len(data), max), Err: ErrTooLarge}
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Minute)
		defer cancel()
	}
	r, err := c.b.nc.RequestWithContext(ctx, subjectCommand+id, data)
	if errors.Is(err, nats.ErrNoResponders) {
		return "", c.noOwner(ctx, id)
	}
	if err != nil {
		return "", err
	}
	var rep commandReply
	if err := decode(subjectCommand+id, r.Data, MaxRecordSize, &rep); err != nil {
		return "", err
	}
	if rep.Step != "" {
		return rep.Step, rep.Error.err()
	}
	return rep.UUID, rep.Error.err()
}

// noOwner says why nobody answered on a session's subject.
func (c *Client) noOwner(ctx context.Context, id string) error {
	r, _, err := c.record(ctx, id)
	if err != nil {
		return err
	}
	if r.Ended {
		return &CommandError{Code: codeNoSession, Message: id + " has ended"}
	}
	return &CommandError{Code: codeDisconnected, Message: id + ": agent " + r.Agent + " is gone"}
}

// Snapshot returns the session's snapshot from its agent, its Seq in the
// numbering of the session's events. A session whose agent is gone gets
// a snapshot rebuilt from the registry and the events still kept: its
// state, cost and transcript (Dropped counts what retention lost).
func (c *Client) Snapshot(ctx context.Context, id string) (*host.Snapshot, error) {
	if !validID(id) {
		return nil, &CommandError{Code: codeNoSession, Message: "bad session id"}
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Minute)
		defer cancel()
	}
	inbox := c.b.nc.NewRespInbox()
	sub, err := c.b.nc.SubscribeSync(inbox)
	if err != nil {
		return nil, err
	}
	defer sub.Unsubscribe()
	sub.SetPendingLimits(-1, c.opts.MaxSnapshot+(1<<20))
	data, _ := json.Marshal(&Command{Op: opSnapshot})
	if err := c.b.nc.PublishRequest(subjectCommand+id, inbox, data); err != nil {
		return nil, err
	}
	var buf []byte
	for {
		m, err := sub.NextMsgWithContext(ctx)
		if errors.Is(err, nats.ErrNoResponders) {
			return c.offlineSnapshot(ctx, id)
		}
		if err != nil {
			return nil, err
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
	if !r.Ended {
		snap.Error = "agent " + r.Agent + " is gone"
		snap.State.Error = snap.Error
	}
	if last == 0 {
		return snap, nil
	}
	// The transcript: every message event still kept, up to last.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	expect := uint64(0)
	for ev, err := range c.events(ctx, id, 0, false) {
		if err != nil {
			var re *host.ResyncError
			if errors.As(err, &re) && expect == 0 {
				snap.Dropped = int(re.Oldest - 1)
				// start again from what is kept
				for ev, err := range c.events(ctx, id, re.Oldest-1, false) {
					if err != nil || ev.Seq > last {
						break
					}
					if ev.Kind == host.EventMessage {
						snap.Transcript = append(snap.Transcript, ev.Data)
					}
					if ev.Seq == last {
						break
					}
				}
			}
			break
		}
		expect = ev.Seq
		if ev.Kind == host.EventMessage {
			snap.Transcript = append(snap.Transcript, ev.Data)
		}
		if ev.Seq >= last {
			break
		}
	}
	return snap, nil
}
