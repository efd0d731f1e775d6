package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/host"
	"github.com/tetherhq/tether/internal/telemetry"
	"github.com/tetherhq/tether/team"
)

// AgentOptions configures an Agent. A nil *AgentOptions means defaults.
type AgentOptions struct {
	// Conn is an open NATS connection to use (the Agent does not close
	// it). When nil the Agent dials URL with the NATS options.
	Conn *nats.Conn
	// URL is the NATS server (or a comma-separated list of a cluster's
	// servers); "" means nats.DefaultURL.
	URL string
	// NATS are passed to nats.Connect: auth (nats.UserInfo, nats.Nkey,
	// nats.UserCredentials), TLS (nats.Secure, nats.RootCAs,
	// nats.ClientCert), and anything else.
	NATS []nats.Option

	// ID names the agent in the registry ("" = host name and a random
	// suffix). Letters, digits, '-' and '_' only.
	ID string
	// Session is the template of the sessions started (nil = defaults);
	// requests may set the working directory, model, permission mode and
	// an appended system prompt.
	Session *host.Options
	// Spares, IdleTimeout: see host.ManagerOptions.
	Spares      int
	IdleTimeout time.Duration
	// SleepAfter puts to sleep a session that has had nothing to do for
	// this long (host.ManagerOptions.SleepAfter's rule: no turn, approval
	// or question pending, no unanswered prompt, no background task): its
	// CLI is closed, its transcript mirrored, and it leaves the agent,
	// listed "asleep" in the registry with its history, cost and person,
	// costing no process and no slot. Its next command wakes it on any
	// agent with room, under the same id, its conversation resumed and its
	// event numbers going on (sleep.go). 0 means never.
	SleepAfter time.Duration
	// Capacity is the most sessions the agent runs at once (0 = 8): it
	// takes start requests from the queue only while it has room.
	Capacity int
	// Limits of the streams and buckets, when this agent creates them.
	Limits *Limits
	// ConfigDir is the CLI's configuration folder, where it keeps session
	// files (mirrored for failover, restored before a resume). "" means
	// CLAUDE_CONFIG_DIR or HOME/.claude of the Session template's CLI
	// environment, else claude.ConfigDir.
	ConfigDir string
	// HandoverWait is how long a session Drain hands over waits in the
	// work queue for an agent with room (0 = 10 min); past it the session
	// stays disconnected until someone resumes it.
	HandoverWait time.Duration
	// MirrorInterval is how often a session's transcript file is checked
	// for new lines to mirror (0 = the heartbeat). A turn's end is always
	// mirrored at once.
	MirrorInterval time.Duration
	// Logger gets what the agent does (ids, states, sizes: never prompts
	// or payloads); nil logs nothing.
	Logger *slog.Logger
	// Registerer, when set, gets the agent's metrics (cluster/metrics.go)
	// and its sessions' (host.ManagerOptions.Registerer). nil: none.
	Registerer prometheus.Registerer
	// TracerProvider records the agent's span of each start request and
	// command (the child of the client's, whose context comes in the NATS
	// message's headers) and is the sessions' (host.ManagerOptions). nil
	// means otel.GetTracerProvider().
	TracerProvider trace.TracerProvider

	// Team, when set, makes the agent check every request with the
	// identity that comes with it (agent_team.go): commands run with it
	// in ctx under the Authorizer's host policy (SessionOptions), starts
	// pass Authorizer.Start, snapshots need the viewer's access, and a
	// request without an identity is refused (host's forbidden code).
	// Build it with AuthorizerOptions.SessionID = HostSessionID, so that
	// its host policy finds each session's ACL under the cluster's id.
	// nil: no teams; identities that come along are put in ctx and not
	// checked.
	Team *team.Authorizer
	// Isolation, with Team, confines each session's CLI to its working
	// directory, with the person's own HOME and /tmp (*team.Isolation).
	// nil: the CLIs run as the agent does.
	Isolation Isolator
}

// An Agent runs sessions for the cluster on one machine: it wraps a
// host.Manager, takes start requests from the work queue only while it
// has room, publishes every session's events to the events stream, serves
// commands on each session's subject, mirrors transcripts, and keeps its
// entries in the registry alive with heartbeats. It only dials out.
type Agent struct {
	opts      AgentOptions
	id        string
	capacity  int
	log       *slog.Logger
	tr        trace.Tracer
	b         *bus
	m         *host.Manager
	cons      jetstream.Consumer
	configDir string
	started   time.Time
	metrics   *telemetry.Cluster

	ctx    context.Context // ends with Close
	cancel context.CancelFunc
	// takeCtx ends the loop taking start requests (Close, Drain).
	takeCtx    context.Context
	takeCancel context.CancelFunc
	slots      chan struct{} // a token per session running or starting
	wg         sync.WaitGroup

	mu       sync.Mutex
	sessions map[string]*agentSession
	closed   bool
	draining bool // Drain was called: no more sessions taken
	// drainAsked: a drain was requested over the bus; drainReq is closed
	// then.
	drainAsked bool
	drainReq   chan struct{}
	ctlSub     *nats.Subscription
	crashed    bool // test hook: the agent vanished without a word
	// readers: whether a reader of an earlier wire revision is about
	// (batches are written only when none is: batch.go).
	readers readerWire
	// requests: the named commands taken, for their copies (requests.go).
	requests requestLog
	// lostReplies: command replies to lose (tests: LoseReplies);
	// lostStartReplies: start replies to lose (tests: LoseStartReplies).
	lostReplies, lostStartReplies atomic.Int32
}

// NewAgent connects, sets up the streams and buckets if needed, registers
// the agent and starts taking start requests. ctx bounds the setup only.
func NewAgent(ctx context.Context, opts *AgentOptions) (*Agent, error) {
	var o AgentOptions
	if opts != nil {
		o = *opts
	}
	if o.ID == "" {
		o.ID = sanitizeID(hostname()) + "-" + randomID(4)
	}
	if !validID(o.ID) {
		return nil, fmt.Errorf("cluster: agent id %q: letters, digits, '-' and '_' only, at most 64", o.ID)
	}
	if o.Capacity <= 0 {
		o.Capacity = 8
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("agent", o.ID)
	b, err := connect(ctx, o.Conn, o.URL, "tether-agent "+o.ID, o.Limits, log, o.NATS)
	if err != nil {
		return nil, err
	}
	// The agents' shared consumer, asked for again (under its one name)
	// while JetStream does not answer: a 3-node cluster just formed, or
	// too busy, can lose the request.
	cons, err := untilAnswered(ctx, b, log, func(ctx context.Context) (jetstream.Consumer, error) {
		return b.start.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{
			Durable: consumerAgents, AckPolicy: jetstream.AckExplicitPolicy,
			AckWait: b.limits.StartAckWait, MaxAckPending: -1,
			Description: "tether agents taking start requests",
		})
	})
	if err != nil {
		b.close()
		return nil, fmt.Errorf("cluster: start consumer: %w", err)
	}
	a := &Agent{
		opts: o, id: o.ID, capacity: o.Capacity, log: log, b: b, cons: cons,
		slots: make(chan struct{}, o.Capacity), sessions: map[string]*agentSession{},
		started: time.Now(), tr: telemetry.Tracer(o.TracerProvider),
	}
	a.configDir = a.cliConfigDir()
	a.m = host.NewManager(&host.ManagerOptions{Session: o.Session, Spares: o.Spares, IdleTimeout: o.IdleTimeout,
		SleepAfter: o.SleepAfter, Registerer: o.Registerer, TracerProvider: o.TracerProvider})
	a.metrics = telemetry.NewAgent(o.Registerer, b.nc.IsConnected, o.Capacity, a.Sessions)
	a.ctx, a.cancel = context.WithCancel(context.Background())
	a.takeCtx, a.takeCancel = context.WithCancel(a.ctx)
	a.drainReq = make(chan struct{})
	if sub, err := b.nc.Subscribe(subjectControl+a.id, a.serveControl); err == nil {
		a.ctlSub = sub
	} else {
		log.Warn("subscribing to control requests", "err", err)
	}
	if err := a.heartbeat(ctx); err != nil {
		if a.ctlSub != nil {
			a.ctlSub.Unsubscribe()
		}
		a.cancel()
		a.metrics.Release()
		a.m.Close()
		b.close()
		return nil, fmt.Errorf("cluster: registering agent: %w", err)
	}
	a.readers.lapse = a.b.ttl
	a.b.recordWorktree = a.readers.batches
	a.wg.Add(3)
	go a.watchReaders()
	go a.heartbeats()
	go a.take()
	log.Info("agent started", "capacity", o.Capacity, "heartbeat", b.ttl/3)
	return a, nil
}

// ID returns the agent's id.
func (a *Agent) ID() string { return a.id }

// Manager returns the agent's host manager (its sessions are the
// cluster's; do not close them behind the agent's back).
func (a *Agent) Manager() *host.Manager { return a.m }

// Sessions returns how many sessions the agent runs.
func (a *Agent) Sessions() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.sessions)
}

// Close stops taking start requests, closes the agent's sessions (they
// show "disconnected" and can be resumed on another agent: they are not
// ended), leaves the registry and closes the connection it dialled.
func (a *Agent) Close() error {
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return nil
	}
	a.closed = true
	a.mu.Unlock()
	if a.ctlSub != nil {
		a.ctlSub.Unsubscribe()
	}
	a.cancel()
	a.metrics.Release()
	err := a.m.Close()
	a.wg.Wait()
	a.mu.Lock()
	crashed := a.crashed
	a.mu.Unlock()
	if !crashed {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if err := a.b.agents.Delete(ctx, a.id); err != nil {
			a.log.Warn("leaving the registry", "err", err)
		}
		cancel()
	}
	a.b.close()
	a.log.Info("agent closed")
	return err
}

// crash makes the agent vanish as a killed process would: its connection
// drops at once, nothing more is written to the bus, its CLIs die.
func (a *Agent) crash() {
	a.mu.Lock()
	a.crashed = true
	a.mu.Unlock()
	a.b.nc.Close()
	a.Close()
}

func (a *Agent) gone() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.crashed
}

// heartbeats refreshes the agent's registry entry every third of the
// bucket's TTL, so that two missed beats still leave it listed. A beat
// the bus cannot store (the bucket electing a leader, this agent's NATS
// server lost) is tried again at the next; meanwhile clients hear from
// the agent by pinging its sessions (liveness.go).
func (a *Agent) heartbeats() {
	defer a.wg.Done()
	t := time.NewTicker(a.b.ttl / 3)
	defer t.Stop()
	failed := 0 // beats not stored in a row
	for {
		select {
		case <-a.ctx.Done():
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(a.ctx, a.b.ttl/3)
		err := a.heartbeat(ctx)
		cancel()
		switch {
		case a.ctx.Err() != nil:
		case err != nil:
			if failed++; failed == 1 {
				a.log.Warn("heartbeat not stored; trying again every beat", "err", err)
			}
		case failed > 0:
			a.log.Info("heartbeat stored again", "missed", failed)
			failed = 0
		}
		a.mu.Lock()
		ss := make([]*agentSession, 0, len(a.sessions))
		for _, s := range a.sessions {
			ss = append(ss, s)
		}
		a.mu.Unlock()
		for _, s := range ss {
			s.poke()
		}
	}
}

func (a *Agent) heartbeat(ctx context.Context) error {
	n := a.Sessions()
	capacity := a.capacity
	if a.Draining() {
		capacity = n // no room: clients do not count on it
	}
	rec := agentRecord{ID: a.id, Capacity: capacity, Sessions: n, Heartbeat: time.Now(), Started: a.started}
	// The entry's header advertises the wire revision the agent speaks.
	_, err := a.b.kvWrite(ctx, BucketAgents, a.id, encodeRecord("agent", rec), 0, false)
	return err
}

// take pulls start requests, one at a time and only while the agent has
// room: a token in slots is taken before asking for a request and given
// back when the session it became ends (or when it did not become one).
func (a *Agent) take() {
	defer a.wg.Done()
	for {
		select {
		case a.slots <- struct{}{}:
		case <-a.takeCtx.Done():
			return
		}
		msg, ok := a.next()
		if !ok {
			return
		}
		a.wg.Add(1)
		go func() {
			defer a.wg.Done()
			if !a.handleStart(msg) {
				<-a.slots
			}
		}()
	}
}

// next waits for a start request until the agent closes.
func (a *Agent) next() (jetstream.Msg, bool) {
	for {
		ctx, cancel := context.WithTimeout(a.takeCtx, 5*time.Second)
		msg, err := a.cons.Next(jetstream.FetchContext(ctx))
		cancel()
		if a.takeCtx.Err() != nil {
			if msg != nil {
				msg.Nak()
			}
			<-a.slots
			return nil, false
		}
		if err == nil {
			return msg, true
		}
		// An empty wait ends in any of these (nats.ErrTimeout once the
		// connection came back from a stall): nothing to say.
		if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, jetstream.ErrNoMessages) && !errors.Is(err, nats.ErrTimeout) {
			a.log.Debug("waiting for start requests", "err", err)
			select {
			case <-time.After(250 * time.Millisecond):
			case <-a.takeCtx.Done():
			}
		}
	}
}

// handleStart starts the session a request asks for; it reports whether a
// session now holds the slot.
func (a *Agent) handleStart(msg jetstream.Msg) (running bool) {
	a.readers.saw(wireOf(msg.Headers()))
	reply := msg.Headers().Get(hdrReply)
	if reply != "" && !validInbox(reply) {
		reply = ""
	}
	answer := func(r *startReply) {
		if reply == "" || loseOne(&a.lostStartReplies) {
			return
		}
		// In the asker's revision: a client of revision 1 refuses a field
		// it does not know.
		m := stamp(nats.NewMsg(reply))
		m.Data, _, _ = encodeFor(wireOf(msg.Headers()), "start_reply", r)
		if err := a.b.nc.PublishMsg(m); err != nil {
			a.log.Debug("answering a start request", "err", err)
		}
	}
	defer func() {
		if p := recover(); p != nil {
			a.log.Error("start request panicked", "panic", p)
			msg.Term()
			answer(&startReply{Error: &wireError{Code: host.CodeInternal, Message: "internal error"}})
			running = false
		}
	}()
	var req startRequest
	if err := decodeFrom(msg.Subject(), msg.Headers(), msg.Data(), MaxStartSize, &req); err != nil {
		a.log.Warn("refused a start request", "err", err)
		msg.Term()
		answer(&startReply{Error: wireErr(err)})
		return false
	}
	log := a.log.With("session", req.ID)
	if time.Now().After(req.Expires) {
		log.Info("start request expired")
		msg.Term()
		return false
	}
	ctx, cancel := context.WithDeadline(a.ctx, req.Expires)
	defer cancel()
	defer a.working(ctx, msg)()
	ctx, span := startServerSpan(ctx, a.tr, "agent start", a.id, req.ID, msg.Headers(), attrFail.Bool(req.Failover))
	info, err := a.startSession(ctx, &req, msg)
	endSpan(span, err)
	if err != nil {
		log.Warn("start failed", "err", err)
		msg.Term()
		answer(&startReply{Error: wireErr(err)})
		return false
	}
	msg.Ack()
	answer(&startReply{Session: info})
	log.Info("session started", "failover", req.Failover)
	return true
}

// working tells the server, every third of the start queue's ack wait
// until the returned func is called, that the request is still being
// worked on: a start that takes longer than the ack wait (a worktree
// made, a CLI slow to answer on a loaded machine) is not delivered to a
// second agent, which would find the session's entry and answer the
// client with an error while this one goes on. An agent that dies stops
// telling, and the request goes to another after the wait, as before.
func (a *Agent) working(ctx context.Context, msg jetstream.Msg) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(max(a.b.limits.StartAckWait/3, 10*time.Millisecond))
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if err := msg.InProgress(); err != nil {
					a.log.Debug("start request in progress", "err", err)
				}
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

func validInbox(s string) bool {
	return len(s) < 256 && len(s) > 0 && !containsAny(s, " \t\r\n*>")
}

func containsAny(s, chars string) bool {
	for _, c := range s {
		for _, d := range chars {
			if c == d {
				return true
			}
		}
	}
	return false
}

// startSession claims the session in the registry, starts (or resumes)
// the CLI and attaches the session to the bus.
func (a *Agent) startSession(ctx context.Context, req *startRequest, msg jetstream.Msg) (_ *SessionInfo, err error) {
	now := time.Now()
	var (
		rec  SessionInfo
		rev  uint64
		base uint64
	)
	// With a team, everything is checked before anything changes.
	ctx, err = a.withIdentity(ctx, req.Identity)
	if err != nil {
		return nil, err
	}
	var (
		hopts       *host.Options
		useTemplate bool
	)
	if req.Failover {
		if a.opts.Team != nil {
			if err := a.needAccess(ctx, req.ID, team.AccessCollaborate); err != nil {
				return nil, err
			}
		}
		rec, rev, base, err = a.claim(ctx, req.ID)
		if err != nil {
			return nil, err
		}
		hopts, useTemplate = a.sessionOptions(req, &rec)
		if hopts, err = a.failoverOptions(ctx, req.ID, &rec, hopts); err != nil {
			a.failRecord(req.ID, rev, &rec, err)
			return nil, err
		}
		if waking(&rec) && a.opts.Team != nil && hopts.OnWake != nil {
			// A wake meets the team's rules of now, as host's wake of a
			// sleeping session does (team.SessionPolicy.Wake: the owner
			// still admitted, the start rules, denied tools, isolation).
			if err = wakeHook(ctx, hopts); err != nil {
				err = forbidden(err)
				a.failRecord(req.ID, rev, &rec, err)
				return nil, err
			}
			a.opts.Team.Woke(ctx, req.ID) // who woke it (the hook had no session to record)
		}
	} else {
		rec = SessionInfo{ID: req.ID, Agent: a.id, State: host.StateStarting.String(), Cwd: req.Cwd, Model: req.Model,
			Title: req.Title, Created: now, Updated: now, From: req.Restore}
		hopts, useTemplate = a.sessionOptions(req, &rec)
		if req.Worktree {
			// The agent makes the worktree, in the repository of cwd
			// on its own disk (host.WorktreeOptions).
			hopts.Worktree = &host.WorktreeOptions{}
			useTemplate = false
		}
		var place *takenPlace
		if req.Continue {
			if place, err = a.readPlace(ctx, req); err != nil {
				return nil, err
			}
			if wt := liveWorktree(place.rec.Worktree); wt != nil {
				// It goes on in the ended session's worktree.
				e := *wt
				hopts.Worktree = &host.WorktreeOptions{Existing: &e}
			}
			useTemplate = false
		}
		if a.opts.Team != nil {
			if hopts, err = a.teamStart(ctx, req, &rec, hopts); err != nil {
				return nil, err
			}
			useTemplate = false // a spare is nobody's
		}
		rev, err = a.b.createRecord(ctx, &rec)
		if errors.Is(err, jetstream.ErrKeyExists) {
			return nil, &CommandError{Code: codeOwned, Message: "session id " + req.ID + " already exists"}
		}
		if err != nil {
			return nil, err
		}
		if place != nil {
			if err := a.takePlace(ctx, place); err != nil {
				a.failRecord(req.ID, rev, &rec, err)
				return nil, err
			}
			defer func() {
				if err != nil {
					a.givePlaceBack(place)
				}
			}()
		}
	}
	msg.InProgress()
	var ao attachOpts
	if req.Failover && waking(&rec) {
		// Subscribers see the wake at once, while the CLI starts.
		ao.woken = true
		if ao.after = a.publishWaking(ctx, req.ID, base); ao.after > 0 {
			base++
			rec.Seq = base
		}
	}
	cfgDir := a.sessionConfigDir(hopts)
	var restored int64
	switch {
	case req.Failover:
		restored, err = a.restoreTranscript(ctx, &rec, cfgDir)
		if err != nil && waking(&rec) && rec.LastPrompt == "" && errors.Is(err, ErrNoTranscript) {
			// Asleep before its first prompt (sleep.go): no conversation
			// to resume; the CLI starts afresh under the same session id.
			hopts.CLI.Resume, hopts.CLI.SessionID, err = "", rec.CLISession, nil
		}
		if err != nil {
			a.failRecord(req.ID, rev, &rec, err)
			return nil, err
		}
		useTemplate = false
		hopts.ChangesFrom = a.readChanges(ctx, rec.ID)
	case req.Restore != "":
		if err := a.restoreFrom(ctx, req, &rec, cfgDir); err != nil {
			a.failRecord(req.ID, rev, &rec, err)
			return nil, err
		}
		hopts.CLI.Cwd = rec.Cwd
		if req.Continue {
			hopts.ChangesFrom = a.readChanges(ctx, req.Restore)
		}
	}
	var hs *host.Session
	if useTemplate {
		hs, err = a.m.Start(ctx, nil)
	} else {
		hs, err = a.m.Start(ctx, hopts)
	}
	if err != nil {
		a.failRecord(req.ID, rev, &rec, err)
		if errors.Is(err, host.ErrWorktree) {
			// cwd is not in a git repository here, or git refused: the
			// request's fault, as on a lone tether serve.
			return nil, &host.CommandError{Code: host.CodeBadRequest, Message: err.Error(), Err: host.ErrWorktree}
		}
		return nil, &CommandError{Code: codeStartFailed, Message: err.Error()}
	}
	if rec.Cwd == "" {
		rec.Cwd = hs.Snapshot().Cwd
	}
	if wt := hs.Worktree(); wt != nil {
		// The CLI runs in the worktree: its conversation is kept, its
		// transcript mirrored and restored, and a failover resumes, in
		// that folder (the same path on every agent: see
		// docs/cluster.md, "Sessions in worktrees").
		rec.Cwd = filepath.Join(wt.Path, wt.Prefix)
		rec.Worktree = wt
	}
	s := a.attach(req.ID, hs, base, rec, rev, restored, req.Failover && ao.after == 0, cfgDir, ao)
	info := s.record()
	return &info, nil
}

// sessionOptions builds a session's options from the template and the
// request; useTemplate says the request asks for nothing special (a spare
// may serve it).
func (a *Agent) sessionOptions(req *startRequest, rec *SessionInfo) (*host.Options, bool) {
	var o host.Options
	if a.opts.Session != nil {
		o = *a.opts.Session
	}
	var cli claude.Options
	if o.CLI != nil {
		cli = *o.CLI
	}
	useTemplate := true
	set := func(dst *string, v string) {
		if v != "" {
			*dst = v
			useTemplate = false
		}
	}
	set(&cli.Cwd, req.Cwd)
	set(&cli.Model, req.Model)
	set(&cli.AppendSystemPrompt, req.AppendSystemPrompt)
	if req.PermissionMode != "" {
		cli.PermissionMode = claude.PermissionMode(req.PermissionMode)
		useTemplate = false
	}
	if req.Resume != "" {
		cli.Resume = req.Resume
		cli.ForkSession = req.Fork
		useTemplate = false
	}
	if req.Failover {
		cli.Cwd = rec.Cwd
		cli.Resume = rec.CLISession
		cli.ForkSession = false
		cli.SessionID = ""
		if rec.Model != "" {
			cli.Model = rec.Model
		}
		if wt := liveWorktree(rec.Worktree); wt != nil {
			// It goes on in its worktree, not in a new one: the same
			// folder, branch and base (host.WorktreeOptions.Existing).
			e := *wt
			o.Worktree = &host.WorktreeOptions{Existing: &e}
		}
	}
	if rec.Cwd == "" {
		rec.Cwd = cli.Cwd
	}
	if rec.Cwd == "" {
		rec.Cwd, _ = os.Getwd()
	}
	o.CLI = &cli
	return &o, useTemplate
}

// takenPlace is the ended session a Continue request takes the place of
// (startRequest.Continue), at the revision read.
type takenPlace struct {
	rec SessionInfo
	rev uint64
}

// readPlace reads the session a Continue request takes the place of: it
// must have ended on its own (not closed) with the conversation the
// request resumes.
func (a *Agent) readPlace(ctx context.Context, req *startRequest) (*takenPlace, error) {
	rec, rev, err := a.b.record(ctx, req.Restore)
	if err != nil {
		return nil, err
	}
	if !rec.Ended || rec.Closed || rec.CLISession != req.Resume {
		return nil, &CommandError{Code: codeNoSession, Message: req.Restore + " is not a session that ended on its own with conversation " + req.Resume}
	}
	return &takenPlace{rec: rec, rev: rev}, nil
}

// takePlace marks the session p names closed, at the revision read: of
// two resumes of one ended session only one goes on (in its worktree);
// the other is refused as owned.
func (a *Agent) takePlace(ctx context.Context, p *takenPlace) error {
	r := p.rec
	r.Closed, r.Updated = true, time.Now()
	rev, err := a.b.putSession(ctx, &r, p.rev, false)
	if errors.Is(err, jetstream.ErrKeyRevisionMismatch) || errors.Is(err, jetstream.ErrKeyExists) {
		return &CommandError{Code: codeOwned, Message: r.ID + " is being resumed by another request"}
	}
	if err != nil {
		return err
	}
	p.rev = rev
	return nil
}

// givePlaceBack undoes takePlace when the session that took the place
// did not start: the ended session is listed again, to be resumed.
func (a *Agent) givePlaceBack(p *takenPlace) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r := p.rec
	r.Updated = time.Now()
	if _, err := a.b.putSession(ctx, &r, p.rev, false); err != nil {
		a.log.Debug("listing an ended session again", "session", r.ID, "err", err)
	}
}

// liveWorktree is wt unless it is gone (discarded, or removed by a
// close): the worktree a failover continues in.
func liveWorktree(wt *host.WorktreeInfo) *host.WorktreeInfo {
	if wt == nil || wt.State == host.WorktreeDiscarded || wt.State == host.WorktreeRemoved {
		return nil
	}
	return wt
}

// claim takes over a session whose agent is gone: the registry entry is
// updated at its revision, so of two agents racing only one wins.
//
// An update that loses to another writer is tried again on what is there
// now: a client marking the session disconnected at that very moment
// changes its revision but not its owner.
func (a *Agent) claim(ctx context.Context, id string) (SessionInfo, uint64, uint64, error) {
	for range 4 {
		rec, rev, base, err := a.claimOnce(ctx, id)
		if !errors.Is(err, errClaimRaced) {
			return rec, rev, base, err
		}
	}
	return SessionInfo{}, 0, 0, &CommandError{Code: codeOwned, Message: id + " was taken over by another agent"}
}

// errClaimRaced: the registry entry changed between claimOnce's read and
// its update.
var errClaimRaced = errors.New("cluster: registry entry changed while claiming it")

func (a *Agent) claimOnce(ctx context.Context, id string) (SessionInfo, uint64, uint64, error) {
	var rec SessionInfo
	e, err := a.b.sessions.Get(ctx, id)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return rec, 0, 0, &CommandError{Code: codeNoSession, Message: id}
	}
	if err != nil {
		return rec, 0, 0, err
	}
	if err := decode(BucketSessions+"."+id, e.Value(), MaxRecordSize, &rec); err != nil {
		return rec, 0, 0, err
	}
	if rec.Ended {
		return rec, 0, 0, &CommandError{Code: codeNoSession, Message: id + " has ended"}
	}
	if rec.Agent != "" {
		alive, err := a.b.ownerAlive(ctx, &rec)
		if err != nil {
			return rec, 0, 0, err
		}
		if alive {
			return rec, 0, 0, &CommandError{Code: codeOwned, Message: id + " runs on " + rec.Agent}
		}
	}
	if rec.CLISession == "" {
		return rec, 0, 0, &CommandError{Code: codeNoTranscript, Message: id + " has no CLI session id"}
	}
	base, _, err := a.b.lastSeq(ctx, id)
	if err != nil {
		return rec, 0, 0, err
	}
	if a.b.unstamped(ctx, id, base) {
		return rec, 0, 0, &UnsupportedError{Subject: subjectEvents + id, Revision: 0,
			What: "failing over a session whose events no agent stamped (a release before f95a7ed wrote them); resume its conversation as a new session"}
	}
	if rec.Agent != "" && rec.Agent != a.id {
		rec.Owners = append(rec.Owners, rec.Agent)
		if n := len(rec.Owners); n > maxOwners {
			rec.Owners = rec.Owners[n-maxOwners:]
		}
	}
	if isAsleep(&rec) {
		// A wake (sleep.go), not a failover: not counted as one.
		rec.State = host.StateWaking.String()
	} else {
		rec.State = host.StateStarting.String()
		rec.Takeovers++
	}
	rec.Agent = a.id
	rec.Orphaned, rec.Moving = false, false
	rec.Updated = time.Now()
	rec.Seq = base
	rev, err := a.b.putSession(ctx, &rec, e.Revision(), false)
	if errors.Is(err, jetstream.ErrKeyRevisionMismatch) || errors.Is(err, jetstream.ErrKeyExists) {
		return rec, 0, 0, errClaimRaced
	}
	if err != nil {
		return rec, 0, 0, err
	}
	return rec, rev, base, nil
}

// restoreFrom restores the mirrored transcript of the session named by
// req.Restore into configDir, so that the CLI can resume it here.
func (a *Agent) restoreFrom(ctx context.Context, req *startRequest, rec *SessionInfo, configDir string) error {
	e, err := a.b.sessions.Get(ctx, req.Restore)
	if err != nil {
		return &CommandError{Code: codeNoTranscript, Message: "session " + req.Restore + " not in the registry"}
	}
	var src SessionInfo
	if err := decode(BucketSessions+"."+req.Restore, e.Value(), MaxRecordSize, &src); err != nil {
		return err
	}
	if src.CLISession != req.Resume {
		return &CommandError{Code: codeNoTranscript, Message: "session " + req.Restore + " is not CLI session " + req.Resume}
	}
	if req.Cwd == "" {
		rec.Cwd = src.Cwd
	}
	src.Cwd = rec.Cwd
	_, err = a.restoreTranscript(ctx, &src, configDir)
	return err
}

// failRecord marks a session that could not start.
func (a *Agent) failRecord(id string, rev uint64, rec *SessionInfo, cause error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	rec.Updated, rec.Tasks = time.Now(), 0
	switch {
	case waking(rec):
		// A failed wake: asleep still, for the next command to try again
		// (this agent among its owners: it may have published "waking").
		rec.State, rec.Agent = asleepState, ""
		rec.Owners = appendOwner(rec.Owners, a.id)
	case rec.Takeovers == 0:
		rec.State = host.StateDisconnected.String()
		rec.Ended = true // a new session that never ran
	default:
		rec.State = host.StateDisconnected.String()
		rec.Agent = "" // a failed takeover: free for another try
	}
	if _, err := a.b.putSession(ctx, rec, rev, false); err != nil {
		a.log.Debug("marking a failed start", "session", id, "err", err)
	}
}

// cliConfigDir finds where the CLI keeps its session files.
func (a *Agent) cliConfigDir() string {
	if a.opts.ConfigDir != "" {
		return a.opts.ConfigDir
	}
	if s := a.opts.Session; s != nil && s.CLI != nil {
		if d := s.CLI.Env[claude.EnvConfigDir]; d != "" {
			return d
		}
		if h := s.CLI.Env["HOME"]; h != "" {
			return filepath.Join(h, ".claude")
		}
	}
	d, err := claude.ConfigDir()
	if err != nil {
		return ""
	}
	return d
}

func randomID(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// NewSessionID returns a fresh session id.
func NewSessionID() string { return randomID(12) }

func sanitizeID(s string) string {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s) && len(out) < 40; i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_':
			out = append(out, c)
		default:
			out = append(out, '-')
		}
	}
	if len(out) == 0 {
		return "agent"
	}
	return string(out)
}
