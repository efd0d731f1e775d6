package host

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/internal/safelog"
	"github.com/tetherhq/tether/internal/telemetry"
)

// Options configures a host Session. A nil *Options means defaults; the
// options are copied by Start.
type Options struct {
	// CLI configures the CLI; nil means claude's defaults. The session
	// adds what it needs to keep its state honest, overriding these
	// fields: ReplayUserMessages (acknowledgements), the environment
	// switch CLAUDE_CODE_EMIT_SESSION_STATE_EVENTS=1, ObserveControl,
	// CanUseTool (see below) and, for a new conversation, SessionID (a
	// fresh UUID, so the session can be resumed after a crash before its
	// first turn ends).
	//
	// CLI.CanUseTool, when set, is the session's automatic policy: it is
	// asked first, and its answer is used; returning a nil result (and
	// no error) leaves the request pending for a person (Approvals). An
	// answer of the policy's that names no DecisionClassification goes
	// to the CLI as claude.DecisionConfig: no person answered it. A
	// request is listed while it is pending, so one the policy is slow to
	// decide shows, and a person may answer it first.
	CLI *claude.Options

	// Elicitations lists an MCP server's request for input (a form to
	// fill, or a page to visit) as an Approval of kind
	// ApprovalElicitation, for a person to Accept or Deny, instead of
	// declining it as claude does without CLI.OnElicitation. Off by
	// default, so that a UI that shows tool approvals only is never
	// handed a form it cannot show. CLI.OnElicitation, when set, answers
	// instead, and this is ignored.
	Elicitations bool

	// Restart brings a session back when its CLI ends without Close (a
	// crash, a kill, an exit after SIGINT): the CLI is started again,
	// resuming the conversation by its session id. nil means never.
	Restart *RestartPolicy

	// InterruptTimeout bounds each step of ForceInterrupt (0 = 5 s).
	InterruptTimeout time.Duration

	// InterruptStopsTasks makes the turn's interrupt (CommandInterrupt)
	// end the background tasks too, as it did before 0.8.0. By default
	// the session tells a CLI that takes it (2.1.330 and later) that it
	// stops each task on its own (claude.Options.PerTaskStopAffordance,
	// CommandStopTask): stopping a later turn then leaves an agent the
	// model started in the background at work. Older CLIs stop them
	// with the turn whatever this says.
	InterruptStopsTasks bool

	// Journal bounds the session's event journal (Events, Snapshot);
	// nil means defaults.
	Journal *JournalOptions

	// MessageBuffer is how many messages a Messages subscriber may have
	// unread before it is told it fell behind (0 = 8192): see Messages.
	MessageBuffer int

	// Commands is what Do accepts beyond a command's shape: images' size,
	// the bypassPermissions mode, and an Authorize hook that sees every
	// command. nil means defaults.
	Commands *CommandPolicy

	// OnTurnCost, when set, is told each ended turn's cost in USD by the
	// CLI's own reckoning (what the turn added to total_cost_usd; 0 for
	// a turn that reports none), so spending can be counted as it
	// happens (team.Authorizer adds it to the owner's daily spend). It
	// is called on the session's receive loop, after the session's lock
	// is released, in turn order: it delays the session's next message,
	// so keep it short. A panic in it is recovered and logged.
	OnTurnCost func(usd float64)

	// OnWake, when set, is called before a sleeping session's CLI starts
	// again (see Session.Sleep), with a copy of the CLI options it starts
	// with, which it may change (a sandbox's transport, denied tools, the
	// environment; the host's own wiring is kept): what was checked and
	// set up at the start is checked and set up again at the wake, with
	// the policy of now. An error refuses the wake: the command that
	// asked for it fails with a *WakeError wrapping it, and the session
	// stays asleep. A panic in it refuses the wake too.
	OnWake func(ctx context.Context, s *Session, cli *claude.Options) error

	// TracerProvider records the session's spans (session start, cli
	// start, turns, tool calls, approval waits; see docs/cluster.md).
	// nil means otel.GetTracerProvider(): a no-op unless the program set
	// one.
	TracerProvider trace.TracerProvider

	// Worktree, when set, runs the session in a git worktree of its own,
	// on a new branch made from the one checked out in CLI.Cwd: see
	// WorktreeOptions. nil: the CLI runs in CLI.Cwd itself.
	Worktree *WorktreeOptions

	// Continues, when set, is the session whose conversation this one
	// takes up in its place (a resume after its CLI ended, in the same
	// working directory): its record of the files it changed carries
	// over, so that Changes and RevertChanges still cover what the
	// conversation changed before, against its first start. Ignored
	// when the working directories differ. The session is not kept.
	Continues *Session

	// ChangesFrom is Continues across processes: the record
	// (Session.MarshalChanges) of the session whose conversation this one
	// takes up, kept by another process (a cluster's agent that died, or
	// the one a sleeping session last ran on). Ignored, with a warning on
	// the CLI options' Logger, when it cannot be read, is of a form this
	// release does not know or is of another working directory.
	// Continues, when set, wins.
	ChangesFrom []byte

	wt *sessionWorktree // made by prepareWorktree
}

// RestartPolicy says when to restart a CLI that ended on its own.
type RestartPolicy struct {
	// Max is the most restarts in a row without a turn completing in
	// between (0 = 3).
	Max int
	// Delay is the pause before the first restart, doubled for each
	// further one in a row (0 = 1 s).
	Delay time.Duration
}

// Session is one conversation with a Claude Code CLI, kept honest for a
// UI: it owns the CLI session's receive loop and derives from it the
// liveness state (State, Watch), drafts of the message being written
// (Drafts), the fate of each prompt sent (Delivery), the pending
// permission requests and questions (Approvals) and the cost (Cost).
//
// Messages reach the session's users through Messages; nobody needs to
// read them for the state to stay current.
//
// Every method is safe for concurrent use.
type Session struct {
	id     string
	opts   Options
	base   claude.Options // the CLI options, with the host's wiring
	policy claude.CanUseToolFunc
	elicit bool // Options.Elicitations took effect: OnElicitation is ours
	log    *slog.Logger
	tracer trace.Tracer

	lastEvent atomic.Int64 // unix nanoseconds

	mu    sync.Mutex
	spare *claude.Spare   // a parked CLI awaiting its claim (warm.go); nil once claimed
	cs    *claude.Session // the current CLI session; nil while (re)starting
	sid   string          // the CLI's session id, as last seen
	// slash is what the last CLI said it takes as a prompt (its answer
	// to initialize, then system/commands_changed); kept while asleep.
	slash []claude.SlashCommand
	// What the state is derived from (derive); changed by the handlers,
	// each followed by transition().
	launched     bool // a CLI was started before
	connected    bool
	turn         bool // a turn is under way
	interrupting bool
	phase        State // within a turn: requesting, thinking, streaming, running_tool
	attempt      int
	tool         string
	tools        []toolRun             // the main thread's tool calls awaiting results
	subTools     []toolRun             // subagents' tool calls awaiting results (id and name only)
	approvals    []*Approval           // announced and pending, oldest first
	resolved     []ResolvedApproval    // the last maxResolved answered, oldest first (Snapshot.Resolved)
	byID         map[string]*Approval  // every approval not yet forgotten
	last         *claude.ResultMessage // the last turn's result
	lastErr      error                 // its *claude.ResultError, made once
	gone         bool                  // the CLI is gone (and not being restarted)
	killed       bool                  // ForceInterrupt killed it
	cause        error                 // why the CLI is gone
	live         Liveness              // written only by transition
	watchers     map[*watcher]struct{}
	subs         map[*subscriber]struct{}
	deliveries   []*Delivery // unresolved, in send order
	echoing      bool        // the CLI echoes our messages (it always should)
	turnQueued   []*Delivery // queued when the running turn started
	replayed     map[string]struct{}
	acc          claude.Accumulator
	costs        costTracker
	restarts     int        // in a row
	tasks        []TaskInfo // background tasks the CLI reported running, oldest first (tasks.go)
	tasksLevel   bool       // this CLI process sent its set of tasks whole (noteTask)
	// Sleeping (sleep.go): asleep from Sleep until a wake's CLI is
	// attached; waking while a wake runs; wakeErr is the last failed
	// wake's; inflight counts commands in progress (none sleeps under
	// one); ranDone is closed when the current CLI's receive loop has
	// ended.
	asleep      bool
	waking      bool
	wakeErr     *WakeError
	wakeDone    chan struct{}
	wakeWaiters int
	inflight    int
	ranDone     chan struct{}
	closed      bool
	ended       bool // for good: Done is closed

	changes changeTracker // what the tools changed in files (changes.go)
	// wt is the session's worktree (nil: none); its info is guarded by
	// mu, and wtMu serialises the git run on it.
	wt   *sessionWorktree
	wtMu sync.Mutex

	journal journal     // Events and Snapshot; appended with mu held
	info    sessionInfo // cwd, model, permission mode

	done chan struct{}
	wg   sync.WaitGroup // run loops and restarts

	metrics   *telemetry.Host // nil: none (set before the CLI starts)
	turnStart time.Time       // when the running turn began (metrics)

	// turnBegun is closed by beginTurn (s.mu held); an Interrupt waiting
	// for the turn of a sent prompt makes it.
	turnBegun chan struct{}
}

type toolRun struct {
	id, name string
	span     trace.Span // ended by endTool
}

// Start starts a CLI and returns once it is ready for prompts (see
// claude.Connect for the errors). ctx bounds the start only.
func Start(ctx context.Context, opts *Options) (*Session, error) {
	opts, undo, err := prepareWorktree(ctx, opts)
	if err != nil {
		return nil, err
	}
	s, err := start(ctx, opts, nil)
	if err != nil && undo != nil {
		undo()
	}
	return s, err
}

// start is Start counting into mt (a Manager's metrics).
func start(ctx context.Context, opts *Options, mt *telemetry.Host) (*Session, error) {
	s := newSession(opts)
	s.metrics = mt
	ctx, span := s.tracer.Start(ctx, "session start", trace.WithAttributes(attrSession.String(s.id)))
	defer span.End()
	s.changes.begin(s.base.Cwd)
	s.continueChanges(s.opts.Continues, s.opts.ChangesFrom)
	s.opts.Continues, s.opts.ChangesFrom = nil, nil
	if err := s.connect(ctx, false); err != nil {
		telemetry.SetError(span, err, ErrorCode(err))
		s.mu.Lock()
		s.closed, s.gone, s.cause = true, true, err
		s.transition()
		s.end()
		s.mu.Unlock()
		return nil, err
	}
	span.SetAttributes(attrCLISess.String(s.SessionID()))
	return s, nil
}

func newSession(opts *Options) *Session {
	var o Options
	if opts != nil {
		o = *opts
	}
	var base claude.Options
	if o.CLI != nil {
		base = *o.CLI
	}
	s := &Session{
		id:       newUUID(),
		opts:     o,
		wt:       o.wt,
		policy:   base.CanUseTool,
		log:      safelog.New(base.Logger), // a panicking handler must not crash us
		tracer:   telemetry.Tracer(o.TracerProvider),
		byID:     map[string]*Approval{},
		watchers: map[*watcher]struct{}{},
		subs:     map[*subscriber]struct{}{},
		replayed: map[string]struct{}{},
		done:     make(chan struct{}),
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	base.ReplayUserMessages = true
	env := maps.Clone(base.Env)
	if env == nil {
		env = map[string]string{}
	}
	env["CLAUDE_CODE_EMIT_SESSION_STATE_EVENTS"] = "1"
	base.Env = env
	base.CanUseTool = s.canUseTool
	base.ObserveControl = s.observe
	if o.Elicitations && base.OnElicitation == nil {
		base.OnElicitation, s.elicit = s.onElicitation, true
	}
	if base.Resume == "" && !base.Continue && base.SessionID == "" {
		base.SessionID = newUUID()
	}
	s.base = base
	s.journal.init(o.Journal)
	s.info = sessionInfo{cwd: base.Cwd, model: base.Model, mode: string(base.PermissionMode)}
	if base.Resume != "" && !base.ForkSession {
		s.sid = base.Resume
	} else if base.SessionID != "" {
		s.sid = base.SessionID
	}
	s.mu.Lock()
	s.transition()
	s.mu.Unlock()
	return s
}

// newUUID returns a random (version 4) UUID.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

// connect starts a CLI; resume continues the conversation s.sid.
func (s *Session) connect(ctx context.Context, resume bool) error {
	s.mu.Lock()
	o, sid := s.base, s.sid
	s.mu.Unlock()
	if resume {
		o.Resume, o.Continue, o.ForkSession, o.SessionID = sid, false, false, ""
	}
	ctx, span := s.tracer.Start(ctx, "cli start", trace.WithAttributes(attrSession.String(s.id), attrResume.Bool(resume)))
	defer span.End()
	// Each task has its own stop here (CommandStopTask), so the turn's
	// need not end them, where the CLI takes that. Connect refuses the
	// option for a CLI it knows to be older (before starting it, when it
	// probed the version): then start again without it.
	spare := !s.opts.InterruptStopsTasks && !o.PerTaskStopAffordance
	o.PerTaskStopAffordance = o.PerTaskStopAffordance || spare
	cs, err := claude.Connect(ctx, &o) // the CLI's TRACEPARENT: this span
	if fe := (*claude.CLIFeatureError)(nil); spare && errors.As(err, &fe) && fe.Option == "PerTaskStopAffordance" {
		o.PerTaskStopAffordance = false
		cs, err = claude.Connect(ctx, &o)
	}
	s.metrics.CLIStarted(err)
	if err != nil {
		telemetry.SetError(span, err, ErrorCode(err))
		return err
	}
	span.SetAttributes(attrPID.Int(cs.PID()))
	return s.attach(cs)
}

// attach makes cs the session's CLI and starts its receive loop.
func (s *Session) attach(cs *claude.Session) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		cs.Close()
		return claude.ErrClosed
	}
	if s.launched {
		s.costs.restarted()
	}
	s.launched = true
	s.asleep, s.wakeErr = false, nil
	s.cs = cs
	if ir := cs.Initialize(); ir != nil {
		s.slash = ir.Commands
	}
	ran := make(chan struct{})
	s.ranDone = ran
	s.echoing = false
	s.connected, s.gone, s.killed = true, false, false
	s.cause = nil
	s.last, s.lastErr = nil, nil
	s.lastEvent.Store(time.Now().UnixNano())
	s.transition()
	s.wg.Add(1)
	s.mu.Unlock()
	go s.run(cs, ran)
	return nil
}

// run is the receive loop of one CLI session; it closes ran when done.
func (s *Session) run(cs *claude.Session, ran chan struct{}) {
	defer s.wg.Done()
	defer close(ran)
	var term error
	for m, err := range cs.Receive(context.Background()) {
		if m == nil {
			var le *claude.LineError
			if errors.As(err, &le) {
				s.publish(nil, err)
				continue
			}
			term = err
			break
		}
		s.journal.waitRoom(cs.Done())
		s.handle(m, err)
	}
	if term == nil {
		term = cs.Wait()
	}
	s.disconnected(cs, term)
}

// ID returns the host's id for the session, stable across restarts.
func (s *Session) ID() string { return s.id }

// SessionID returns the CLI's session id (the conversation to resume).
func (s *Session) SessionID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sid
}

// State returns the session's liveness now.
func (s *Session) State() Liveness {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.live
}

// LastEvent returns when the CLI last wrote anything (a message, a token,
// a control request), or when it was started: a UI can show "alive 2 s
// ago" with it, and a supervisor can spot a silent CLI.
func (s *Session) LastEvent() time.Time { return time.Unix(0, s.lastEvent.Load()) }

// Claude returns the current CLI session, nil while none is running:
// the escape hatch for what the host layer does not cover. Do not
// receive from it; the host session does.
func (s *Session) Claude() *claude.Session {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cs
}

// SlashCommands returns the slash commands the session's CLI takes as a
// prompt, as it last said (its answer to initialize, updated by
// system/commands_changed): a sleeping or ended session's are its last
// CLI's; nil before any CLI answered.
func (s *Session) SlashCommands() []claude.SlashCommand {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.slash)
}

// Done is closed when the session has ended for good: after Close, or
// when its CLI ended and was not restarted.
func (s *Session) Done() <-chan struct{} { return s.done }

// Err returns why the session ended (see StateDisconnected), or nil while
// it runs.
func (s *Session) Err() error {
	select {
	case <-s.done:
	default:
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cause
}

// Close ends the session: it closes the CLI (see claude.Session.Close),
// withdraws pending approvals, fails unanswered deliveries, and ends
// Watch and Messages. It waits for every goroutine of the session and is
// safe to call more than once.
func (s *Session) Close() error {
	s.mu.Lock()
	already := s.closed
	s.closed = true
	cs, sp := s.cs, s.spare
	s.spare = nil
	s.mu.Unlock()
	var err error
	if cs != nil && !already {
		err = cs.Close()
	}
	if sp != nil {
		err = sp.Close()
	}
	s.wg.Wait()
	s.mu.Lock()
	if !s.ended {
		if s.cause == nil {
			s.cause = claude.ErrClosed
		}
		s.connected, s.gone = false, true
		s.transition()
		s.end()
	}
	s.mu.Unlock()
	return err
}

// disconnected handles the end of a CLI session's output.
func (s *Session) disconnected(cs *claude.Session, cause error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cs != cs {
		return
	}
	s.cs = nil
	s.connected, s.gone = false, true
	switch {
	case s.killed:
		cause = ErrKilled
	case s.closed && cause == nil:
		cause = claude.ErrClosed
	}
	s.setTasks(nil)
	s.tasksLevel = false
	if s.asleep && !s.closed {
		// Sleep closed it: the session stays, without a process.
		s.connected, s.gone = false, false
		s.metrics.CLIExited(exitReason(nil, true))
		s.resetTurn()
		s.withdrawAll()
		s.failDeliveries(ErrNotIdle)
		s.journal.compact(sleepKeep)
		clear(s.replayed)
		s.transition()
		return
	}
	s.cause = cause
	s.metrics.CLIExited(exitReason(cause, s.closed))
	s.resetTurn()
	s.withdrawAll()
	s.failDeliveries(cause)
	s.transition()
	if s.closed {
		return // Close ends the session
	}
	p := s.opts.Restart
	if p == nil || s.restarts >= cmpOr(p.Max, 3) {
		s.end()
		cs.Close()
		return
	}
	if cause != nil {
		s.publishLocked(nil, cause) // not final: the session restarts
	}
	delay := cmpOr(p.Delay, time.Second) << s.restarts
	s.restarts++
	s.wg.Add(1)
	go s.restart(delay)
}

// restart starts the CLI again after delay, resuming the conversation.
func (s *Session) restart(delay time.Duration) {
	defer s.wg.Done()
	t := time.NewTimer(delay)
	defer t.Stop()
	<-t.C
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.cause, s.gone = nil, false
	s.transition() // starting
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := s.reconnect(ctx)
	if err == nil || errors.Is(err, claude.ErrClosed) {
		return
	}
	s.log.Warn("host: restarting the CLI", "session", s.id, "err", err)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cause, s.gone = err, true
	s.transition()
	p := s.opts.Restart
	if s.closed || s.restarts >= cmpOr(p.Max, 3) {
		if !s.closed {
			s.end()
		}
		return
	}
	next := cmpOr(p.Delay, time.Second) << s.restarts
	s.restarts++
	s.wg.Add(1)
	go s.restart(next)
}

// reconnect starts the CLI again (a restart, a wake): resuming the
// conversation when the CLI has written it, else under the same session
// id, as it was to begin.
func (s *Session) reconnect(ctx context.Context) error {
	resume := s.resumable()
	err := s.connect(ctx, resume)
	if resume && isNoConversation(err) {
		// The CLI writes its session file lazily: one killed right after
		// a turn may have left nothing to resume. Carry on with a new
		// conversation rather than stay down, and say so.
		s.log.Warn("host: the conversation could not be resumed; starting a new one", "session", s.id, "err", err)
		s.mu.Lock()
		s.base.SessionID = newUUID()
		s.sid = s.base.SessionID
		s.costs.sawTurn = false
		s.publishLocked(nil, fmt.Errorf("%w: %w", ErrNotResumed, err))
		s.mu.Unlock()
		err = s.connect(ctx, false)
	}
	return err
}

// ErrNotResumed is yielded by Messages when a restarted (or woken) CLI
// could not resume the conversation (the CLI had not written it to disk
// yet) and the session went on with a new one: the model has lost the
// context.
var ErrNotResumed = errors.New("host: conversation not resumed after a restart")

func isNoConversation(err error) bool {
	var pe *claude.ProcessError
	if !errors.As(err, &pe) {
		return false
	}
	for _, l := range pe.Stderr {
		if strings.Contains(l, "No conversation found") {
			return true
		}
	}
	return false
}

// resumable reports whether the conversation exists on disk to resume:
// it does once a turn has started (the CLI writes the session file) and
// persistence is on.
func (s *Session) resumable() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.base.NoSessionPersistence && s.sid != "" && s.costs.sawTurn
}

func cmpOr[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// end marks the session ended for good (s.mu held): watchers and
// subscribers get their last values and stop.
func (s *Session) end() {
	if s.ended {
		return
	}
	s.ended = true
	for w := range s.watchers {
		delete(s.watchers, w)
		select {
		case w.signal <- struct{}{}:
		default:
		}
	}
	for sub := range s.subs {
		sub.closed = true
		sub.push(item{err: s.endErr()})
		delete(s.subs, sub)
	}
	var ei ErrorInfo
	if s.cause != nil && !errors.Is(s.cause, claude.ErrClosed) {
		ei.Error = s.cause.Error()
	}
	s.record(EventClosed, ei)
	s.journal.end()
	close(s.done)
}

func (s *Session) endErr() error {
	if s.cause != nil {
		return s.cause
	}
	return claude.ErrClosed
}

// resetTurn forgets the turn in progress (s.mu held).
func (s *Session) resetTurn() {
	s.turn, s.interrupting = false, false
	for _, t := range s.tools {
		endTool(t, nil)
	}
	s.phase, s.attempt, s.tool, s.tools, s.subTools = StateRequesting, 0, "", nil, nil
}

// derive computes the liveness from the session's facts (s.mu held).
func (s *Session) derive() Liveness {
	switch {
	case s.gone:
		return Liveness{State: StateDisconnected, Err: s.cause}
	case s.waking:
		return Liveness{State: StateWaking}
	case s.asleep && !s.connected && s.wakeErr != nil:
		return Liveness{State: StateError, Err: s.wakeErr}
	case s.asleep && !s.connected:
		return Liveness{State: StateAsleep}
	case !s.connected:
		return Liveness{State: StateStarting}
	case len(s.approvals) > 0 && !s.interrupting:
		a := s.approvals[0]
		st := StateAwaitingApproval
		if a.Kind != ApprovalTool {
			st = StateAwaitingAnswer
		}
		return Liveness{State: st, Approval: a, Tool: a.Request.ToolName}
	case s.interrupting:
		return Liveness{State: StateInterrupting}
	case s.turn:
		l := Liveness{State: s.phase}
		switch s.phase {
		case StateRequesting:
			l.Attempt = s.attempt
		case StateStreaming, StateRunningTool:
			l.Tool = s.tool
		}
		return l
	case s.last == nil:
		return Liveness{State: StateReady}
	case s.lastErr != nil:
		var re *claude.ResultError
		if errors.As(s.lastErr, &re) && re.Interrupted() {
			// The person asked for it: idle, with the reason.
			return Liveness{State: StateIdle, Err: s.lastErr}
		}
		return Liveness{State: StateError, Err: s.lastErr}
	default:
		return Liveness{State: StateIdle}
	}
}

// transition is the one place the liveness changes (s.mu held): it
// derives the state from the facts and, when it differs, records and
// broadcasts it.
func (s *Session) transition() {
	l := s.derive()
	if s.live.Seq > 0 && l.same(s.live) {
		return
	}
	l.Seq = s.live.Seq + 1
	l.Since = time.Now()
	s.live = l
	for w := range s.watchers {
		w.push(l)
	}
	s.record(EventState, l.Info())
}
