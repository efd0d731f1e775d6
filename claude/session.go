package claude

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"os"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tetherhq/tether/internal/control"
	"github.com/tetherhq/tether/internal/mcpbridge"
	"github.com/tetherhq/tether/internal/safelog"
	"github.com/tetherhq/tether/internal/wire"
)

// A Session is one running CLI: a conversation that can take many turns.
// Start one with Connect; end it with Close.
//
// Concurrency: every method is safe to call from any goroutine. Messages
// are delivered once, in order, to whichever Receive or ReceiveTurn loop
// takes them; run one reader at a time.
//
// Writes: one goroutine of the session owns the CLI's stdin; every method
// that writes (Send, control requests, the answers to the CLI's
// permission, hook and MCP requests) queues its line and waits for it
// under its own ctx, so it returns by ctx's deadline whatever the CLI
// does, and no lock is held across a write that can block. A line whose
// ctx ends before any of it went out is dropped whole. A line cut in the
// middle (the CLI stopped reading stdin during a large write) cannot be
// taken back: the caller gets ctx's error, and the session's input is
// broken from then on (every later write fails with ErrInputBroken; Close
// it).
//
// Buffering: the session reads the CLI's stdout ahead of Receive, so that
// permission, hook and MCP requests are answered even while the user is
// busy, up to Options.MaxBufferedBytes of unreceived messages (1 MiB by
// default). Past that it stops reading until Receive catches up; nothing
// is dropped, the CLI blocks on its writes, and control requests behind
// the unread messages wait too. Receive continuously (package host always
// does) to keep approvals flowing. Once Close has begun, lines past the
// bound are discarded instead, so that the CLI can finish and exit. Once
// the CLI has exited (seen through an ExitNotifier transport, such as the
// default one), the session reads the rest of its output past the bound
// (up to 2 MiB more: what the pipe held) and ends: Done closes and Wait
// returns even though nothing was received, and the messages stay for
// Receive.
type Session struct {
	opts  Options
	conn  Conn
	log   *slog.Logger
	pid   int
	init  *InitializeResponse
	ctl   *control.Table
	in    control.Inbound
	hctx  context.Context
	hstop context.CancelFunc
	hooks atomic.Pointer[hookTable] // set by initializeRequest

	handoff handoff // answers on the reading goroutine (handoff.go)

	// Re-delivered requests (pending.go).
	memo    answerMemo // CLI requests served and answered, by id, for repeats
	initIDs sync.Map   // ids of our initialize requests awaiting their answer

	// The writer (writer.go) writes to conn, or a caller does when nothing
	// is queued (tryWriteNow); pen makes it one at a time.
	wq       chan *writeReq
	pen      sync.Mutex    // held by whoever writes to the CLI's stdin: the writer, or a caller writing at once (tryWriteNow)
	writeNow bool          // callers may write at once: conn's writes honour their ctx
	wstop    chan struct{} // closed by Close: the writer ends
	wdone    chan struct{} // closed when the writer has ended
	wbroken  atomic.Bool   // a line was cut mid-way: stdin is unusable
	inClose  atomic.Bool   // CloseInput closed stdin

	// The message queue, filled by the read loop.
	qmu     sync.Mutex
	queue   []item
	qhead   int
	qbytes  int             // bytes queued (line sizes plus itemCost each)
	qover   atomic.Bool     // qbytes > qlimit(), set with qbytes: waitRoom's check without qmu
	qmax    int             // Options.MaxBufferedBytes or its default
	qsoft   int             // how far the read loop reads ahead while Receive keeps up: min(qmax, readAhead)
	qhard   bool            // Receive did not make room within readAheadWait: read on up to qmax
	qtimer  *time.Timer     // the read loop's readAheadWait
	rwait   bool            // the read loop waits for room
	exited  <-chan struct{} // closed when the CLI has exited (ExitNotifier); nil: not known
	drain   bool            // the CLI has exited: the read loop reads the rest past qmax
	drained int             // bytes of stdout queued since drain was set
	qroom   chan struct{}   // 1-buffered: "there is room again"
	qsignal chan struct{}   // 1-buffered: "the queue changed"

	readDone chan struct{} // closed when the read loop has ended
	termErr  error         // why it ended (nil: clean exit); set before readDone closes
	exitErr  error         // how the CLI exited, even after Close; set before readDone closes

	turn      turnState
	closing   atomic.Bool
	closeOnce sync.Once
	closeErr  error

	// In-process MCP servers (mcp.go), by name.
	mcpMu    sync.Mutex
	bridges  map[string]*mcpbridge.Bridge
	retired  []*mcpbridge.Bridge        // detached, still closing
	dynamic  map[string]MCPServerConfig // what the CLI's mcp_set_servers replaces
	mcpSetMu sync.Mutex                 // serializes mcp_set_servers

	store *storeMirror // Options.SessionStore (sessionstore_mirror.go); nil without
}

// Defaults for the session's bounds.
const (
	// DefaultInitializeTimeout is Options.InitializeTimeout's default, as
	// in the official Python SDK.
	DefaultInitializeTimeout = 60 * time.Second
	// DefaultMaxBufferedBytes is Options.MaxBufferedBytes's default.
	DefaultMaxBufferedBytes = 1 << 20
	// DefaultQueryTaskTimeout is Options.QueryTaskTimeout's default.
	DefaultQueryTaskTimeout = 10 * time.Minute
)

// itemCost is what one queued message costs besides its line: the item
// and the slice slot, rounded up. It makes a flood of tiny lines count.
const itemCost = 96

// item is one queued stdout line, or an error to deliver in its place.
// Lines are decoded by the receiver, not the read loop: the loop stays
// free for control traffic, and decoding runs on the receiver's core.
type item struct {
	line   []byte
	lineNo int64
	typ    string // peekType(line), when the read loop found it
	err    error
	ctl    *ControlEvent // for Options.ObserveControl (observe.go)
}

func (it *item) size() int { return len(it.line) + itemCost }

// Connect starts the CLI, sends the initialize request and returns once
// the CLI has answered it, so the session is ready for Send. ctx bounds
// the start only; the session lives until Close (or until the CLI ends).
//
// The wait for the CLI's answer to initialize ends with ctx or after
// Options.InitializeTimeout (60 s), whichever comes first; the CLI is then
// killed at once and Connect returns within a few milliseconds (with a
// custom Transport, within what its Conn.Close takes).
//
// Errors: *CLINotFoundError (matches ErrCLINotFound) when no CLI was
// found, *CLIVersionError for a CLI older than MinCLIVersion,
// *CLIFeatureError (matches ErrNeedsNewerCLI) for an option the CLI is too
// old for, ErrNotApplied when it did not confirm settings sent in
// initialize,
// *InitializeError (matching ctx's error) when the CLI did not answer
// initialize in time, and *ProcessError when the CLI exits during the
// start (a bad flag, an unknown --resume id: its stderr says which); when
// the CLI wrote a failed result line first (it does for a --resume it
// refuses), the error chain holds that line's *ResultError too.
func Connect(ctx context.Context, opts *Options) (*Session, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if err := o.validate(); err != nil {
		return nil, err
	}
	if err := o.resolveUser(); err != nil { // Options.User (osuser.go)
		return nil, err
	}
	log := safelog.New(o.Logger) // a panicking handler must not crash us
	tr := o.Transport
	path := o.CLIPath // a custom transport gets it as given, undiscovered
	version := ""     // unknown with a custom transport or SkipVersionCheck
	if tr == nil {
		p, v, err := findCLI(ctx, &o)
		if err != nil {
			return nil, err
		}
		path, version = p, v
		tr = &CommandTransport{}
	}
	// Options a CLI this old cannot serve fail here, before it starts
	// (capabilities.go); how settings and plugins travel depends on the
	// version too (delivery.go).
	if err := o.checkCLI(path, version, nil); err != nil {
		return nil, err
	}
	o.via = o.planDelivery(version)
	mcpDone, err := o.prepareMCPDelivery(o.Transport == nil)
	if err != nil {
		var fe *CLIFeatureError
		if errors.As(err, &fe) {
			fe.Path = path
		}
		return nil, err
	}
	defer mcpDone()                          // the CLI has read its MCP file once initialize is answered
	restored, err := o.restoreFromStore(ctx) // Resume from Options.SessionStore
	if err != nil {
		return nil, err
	}
	// The CLI joins the caller's trace: TRACEPARENT of ctx's span.
	o.Env = withTraceContext(ctx, o.Env)
	conn, err := tr.Connect(ctx, o.launch(path))
	if err != nil {
		if restored != "" {
			_ = os.RemoveAll(restored)
		}
		return nil, err
	}
	s := newSession(o, conn, log)
	if restored != "" {
		s.store.tmpDir = restored
	}
	bound := cmp.Or(o.InitializeTimeout, DefaultInitializeTimeout)
	ictx, cancel := context.WithTimeout(ctx, bound)
	err = s.initialize(ictx)
	cancel()
	if err != nil {
		return nil, s.failStart(ctx, bound, err)
	}
	if err := s.checkMCPApplied(); err != nil {
		s.Close()
		return nil, err
	}
	if err := s.checkStarted(path, version); err != nil {
		s.Close()
		return nil, err
	}
	if err := s.hooks.Load().checkInitialize(s.init.Raw); err != nil {
		s.Close()
		return nil, err
	}
	s.warnOptions()
	return s, nil
}

// failStart ends a session whose initialize failed and returns the error
// for Connect: an *InitializeError when the CLI did not answer in time,
// the *ProcessError of a CLI that exited (with the *ResultError of the
// result line it wrote first, if any), or err as it is.
func (s *Session) failStart(ctx context.Context, bound time.Duration, err error) error {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		select {
		case <-s.readDone:
		default:
			// The CLI is alive and silent: there is nothing to flush, so
			// don't wait out CloseTimeout.
			var tail []string
			if t, ok := s.conn.(interface{ stderrTail() []string }); ok {
				tail = t.stderrTail()
			}
			if k, ok := s.conn.(interface{ kill() }); ok {
				k.kill()
			}
			s.Close()
			cause := ctx.Err()
			if cause == nil {
				cause = context.DeadlineExceeded // our own bound
			}
			return &InitializeError{Timeout: bound, Stderr: tail, Err: cause, byCaller: ctx.Err() != nil}
		}
	}
	<-s.readDone
	var rerr error
	s.qmu.Lock()
	for _, it := range s.queue[s.qhead:] {
		if typ, ok := control.PeekType(it.line); ok && typ != "result" {
			continue
		}
		if m, derr := DecodeMessage(it.line); derr == nil {
			if r, ok := m.(*ResultMessage); ok && r.IsError {
				rerr = r.Err()
			}
		}
	}
	s.qmu.Unlock()
	s.Close()
	if rerr != nil {
		return fmt.Errorf("%w (%w)", rerr, err)
	}
	return err
}

func newSession(o Options, conn Conn, log *slog.Logger) *Session {
	var idb [4]byte
	_, _ = rand.Read(idb[:])
	s := &Session{
		opts:     o,
		conn:     conn,
		log:      log,
		ctl:      control.NewTable("req_" + hex.EncodeToString(idb[:]) + "_"),
		wq:       make(chan *writeReq, writeQueue),
		wstop:    make(chan struct{}),
		wdone:    make(chan struct{}),
		qmax:     cmp.Or(o.MaxBufferedBytes, DefaultMaxBufferedBytes),
		qsoft:    min(cmp.Or(o.MaxBufferedBytes, DefaultMaxBufferedBytes), readAhead),
		qroom:    make(chan struct{}, 1),
		qsignal:  make(chan struct{}, 1),
		readDone: make(chan struct{}),
	}
	if p, ok := conn.(PIDer); ok {
		s.pid = p.PID()
	}
	if e, ok := conn.(ExitNotifier); ok {
		s.exited = e.Exited()
	}
	if w, ok := conn.(ctxWriter); ok {
		s.writeNow = w.writesHonourContext()
	}
	s.hctx, s.hstop = context.WithCancel(context.Background())
	// The CLI may ask for an in-process MCP server before it answers
	// initialize: the bridges exist before the read loop does.
	s.startMCP()
	s.store = newStoreMirror(s)
	go s.writeLoop()
	go s.readLoop()
	return s
}

func (s *Session) initialize(ctx context.Context) error {
	req, err := s.initializeRequest()
	if err != nil {
		return err
	}
	raw, err := s.request(ctx, "initialize", req)
	if err != nil {
		return err
	}
	var ir InitializeResponse
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &ir); err != nil {
			// A newer CLI's response shape must not stop the session.
			s.log.Warn("claude: initialize response not understood", "err", err)
		}
	}
	ir.Raw = raw
	s.init = &ir
	return nil
}

// initializeRequest builds the initialize request from the options.
func (s *Session) initializeRequest() (*initializeRequest, error) {
	r := &initializeRequest{}
	hooks, err := buildHooks(s.opts.Hooks)
	if err != nil {
		return nil, err
	}
	s.hooks.Store(hooks)
	r.Hooks = hooks.wire
	r.SDKMCPServers = s.opts.sdkServerNames()
	s.opts.mcpInitialize(r)
	if err := s.opts.deliveryInitialize(r); err != nil {
		return nil, err
	}
	if err := s.opts.promptsInitialize(r); err != nil {
		return nil, err
	}
	return r, nil
}

// InitializeResponse is the CLI's answer to initialize: what this CLI
// offers. Raw keeps everything, including fields Tether doesn't model yet.
type InitializeResponse struct {
	Commands              []SlashCommand `json:"commands"`
	Agents                []AgentInfo    `json:"agents"`
	OutputStyle           string         `json:"output_style"`
	AvailableOutputStyles []string       `json:"available_output_styles"`
	Models                []ModelInfo    `json:"models"`
	Account               *AccountInfo   `json:"account"`
	PID                   int            `json:"pid"`
	// CLIVersion is the CLI's version as it reports it (2.1.330; empty
	// from CLIs that don't, such as 2.1.197).
	CLIVersion string `json:"claude_code_version,omitempty"`
	// Capabilities are the feature flags the CLI advertises (2.1.330),
	// e.g. "get_usage_detached_v1"; Session.HasCapability looks one up.
	Capabilities []string `json:"capabilities,omitempty"`
	// Whether the CLI applied the settings, managed settings and plugins
	// sent in this request (delivery.go); nil when it does not say.
	SettingsApplied        *bool `json:"settings_applied,omitempty"`
	ManagedSettingsApplied *bool `json:"managed_settings_applied,omitempty"`
	PluginsApplied         *bool `json:"plugins_applied,omitempty"`
	// HooksApplied and MCPServersApplied say whether the CLI took the
	// request's hooks and in-process MCP servers (a repeated initialize
	// may not); nil when it does not say.
	HooksApplied      *bool `json:"hooks_applied,omitempty"`
	MCPServersApplied *bool `json:"mcp_servers_applied,omitempty"`
	// HookOnFailureSupported says the CLI honours HookMatcher.OnFailure.
	HookOnFailureSupported bool `json:"hook_on_failure_supported,omitempty"`
	// FastModeState is the session's fast mode (off, cooldown, on) and
	// FastModeDisabledReason why it is off, when it is.
	FastModeState          string `json:"fast_mode_state,omitempty"`
	FastModeDisabledReason string `json:"fast_mode_disabled_reason,omitempty"`
	// SDKMCPManifestsParked answers sdkMcpServerManifests, by server:
	// parked, already_connected, protocol_version_mismatch, malformed,
	// not_honoured. Tether sends no manifests, so it stays nil.
	SDKMCPManifestsParked map[string]string `json:"sdk_mcp_manifests_parked,omitempty"`
	// SandboxEnabled says whether the CLI runs its tools in its sandbox
	// (Options.Sandbox); nil from CLIs that do not say (before 2.1.331).
	SandboxEnabled *bool `json:"sandbox_enabled,omitempty"`

	Raw json.RawMessage `json:"-"`
}

// SlashCommand is a command the CLI accepts as a prompt ("/cost").
type SlashCommand struct {
	Name         string   `json:"name"`
	Description  string   `json:"description"`
	ArgumentHint string   `json:"argumentHint"`
	Aliases      []string `json:"aliases,omitempty"`
	// Builtin marks the CLI's own commands, as against skills, plugins'
	// and the user's.
	Builtin bool `json:"builtin,omitempty"`
}

// AgentInfo describes a subagent the CLI can start.
type AgentInfo struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Model       string `json:"model,omitempty"`
}

// ModelInfo describes a model the account can use.
type ModelInfo struct {
	Value                    string   `json:"value"`
	ResolvedModel            string   `json:"resolvedModel"`
	DisplayName              string   `json:"displayName"`
	Description              string   `json:"description"`
	SupportsEffort           bool     `json:"supportsEffort"`
	SupportedEffortLevels    []string `json:"supportedEffortLevels"`
	SupportsAdaptiveThinking bool     `json:"supportsAdaptiveThinking"`
	SupportsFastMode         bool     `json:"supportsFastMode"`
	SupportsAutoMode         bool     `json:"supportsAutoMode"`
}

// AccountInfo says how the CLI authenticates (never the secret itself).
type AccountInfo struct {
	TokenSource  string `json:"tokenSource"`
	APIKeySource string `json:"apiKeySource"`
	APIProvider  string `json:"apiProvider"`
	// Email, Organization and SubscriptionType describe a claude.ai
	// login; empty with an API key.
	Email            string `json:"email,omitempty"`
	Organization     string `json:"organization,omitempty"`
	SubscriptionType string `json:"subscriptionType,omitempty"`
}

// Initialize returns the CLI's answer to the initialize request.
func (s *Session) Initialize() *InitializeResponse { return s.init }

// PID returns the CLI's process id, or 0 when the transport has none.
func (s *Session) PID() int { return s.pid }

// Send sends a text prompt. If a turn is running, the CLI queues the
// message and merges it with other queued ones into the next turn (one
// result for all of them).
func (s *Session) Send(ctx context.Context, prompt string) error {
	return s.SendMessage(ctx, NewUserMessage(prompt))
}

// SendMessage sends a user message (text, image and document blocks). Set
// its UUID to recognise the CLI's replay of it (Options.ReplayUserMessages).
func (s *Session) SendMessage(ctx context.Context, m *UserMessage) error {
	if m == nil {
		return errors.New("claude: SendMessage: nil message")
	}
	b, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("claude: encoding user message: %w", err)
	}
	return s.writeLine(ctx, b, lineUser)
}

func (s *Session) write(ctx context.Context, line []byte) error {
	return s.writeLine(ctx, line, lineControl)
}

// endedErr is the error for calls made after the CLI ended on its own.
func (s *Session) endedErr() error {
	if s.closing.Load() {
		return ErrClosed
	}
	if s.termErr != nil {
		return s.termErr
	}
	return &ProcessError{ExitCode: 0, Err: io.EOF}
}

// Receive yields every message until the session ends. The iterator is
// single-use: messages it yields are gone from the session.
//
// Yielded errors are not all final. A *LineError (a malformed or
// over-long line) and a *ResultError (a turn that ended in error, yielded
// with its *ResultMessage) are followed by more messages. The stream ends
// after a terminal error: a *ProcessError when the CLI died, ErrClosed
// once Close was called, or ctx.Err(). When the CLI exits cleanly the
// stream ends with no error.
//
// Messages the CLI wrote before it exited are yielded first, in order,
// even when the session has already ended (Done closed) with them unread:
// the terminal error comes after the last of them.
func (s *Session) Receive(ctx context.Context) iter.Seq2[Message, error] {
	return s.receive(ctx, false)
}

// ReceiveTurn yields messages up to and including the next
// *ResultMessage, then stops. If the session ends first, it yields the
// reason (a *ProcessError even for a clean exit, since the turn is lost).
func (s *Session) ReceiveTurn(ctx context.Context) iter.Seq2[Message, error] {
	return s.receive(ctx, true)
}

func (s *Session) receive(ctx context.Context, turn bool) iter.Seq2[Message, error] {
	return func(yield func(Message, error) bool) {
		for {
			msg, merr, ok, err := s.nextMessage(ctx)
			if err != nil {
				yield(nil, err)
				return
			}
			if !ok {
				if turn {
					yield(nil, s.endedErr())
				} else if s.closing.Load() {
					yield(nil, ErrClosed)
				} else if s.termErr != nil {
					yield(nil, s.termErr)
				}
				return
			}
			if !yield(msg, merr) {
				return
			}
			if _, isResult := msg.(*ResultMessage); turn && isResult {
				return
			}
		}
	}
}

// nextMessage takes the next queued line and decodes it. merr is the
// error to yield with msg: a *LineError (msg nil) for a line that could
// not be read or decoded, a *ResultError with a failed turn's result.
func (s *Session) nextMessage(ctx context.Context) (msg Message, merr error, ok bool, err error) {
	it, ok, err := s.next(ctx)
	for ok && err == nil && it.ctl != nil {
		s.callObserver(it.ctl)
		it, ok, err = s.next(ctx)
	}
	if !ok || err != nil {
		return nil, nil, ok, err
	}
	if it.err != nil {
		return nil, it.err, true, nil
	}
	msg, derr := decodeTyped(it.line, it.typ, it.typ != "", true)
	if derr != nil {
		s.log.Warn("claude: stdout line is not JSON", "line", it.lineNo, "err", derr)
		return nil, lineError(it.lineNo, it.line, fmt.Errorf("not a JSON object: %w", derr)), true, nil
	}
	if r, isResult := msg.(*ResultMessage); isResult {
		merr = r.Err()
	}
	return msg, merr, true, nil
}

// next takes the next queued item, waiting for one. ok is false when the
// read loop has ended and the queue is empty.
func (s *Session) next(ctx context.Context) (it item, ok bool, err error) {
	for {
		s.qmu.Lock()
		if s.qhead < len(s.queue) {
			it = s.queue[s.qhead]
			s.queue[s.qhead] = item{}
			s.qhead++
			s.qbytes -= it.size()
			if s.qhard && s.qbytes <= s.qsoft/2 {
				s.qhard = false // caught up: read ahead by qsoft again
			}
			if s.qover.Load() && s.qbytes <= s.qlimit() {
				s.qover.Store(false)
			}
			switch {
			case s.qhead == len(s.queue):
				if cap(s.queue) > 4096 {
					s.queue = nil // give a burst's slice back
				}
				s.queue, s.qhead = s.queue[:0], 0
			case s.qhead >= 1024 && s.qhead*2 >= len(s.queue):
				// The read loop keeps appending while we take: without
				// this the slice would grow with every message ever read.
				n := copy(s.queue, s.queue[s.qhead:])
				clear(s.queue[n:])
				s.queue, s.qhead = s.queue[:n], 0
			}
			if s.rwait && s.qbytes <= s.qlimit()/2 {
				s.rwait = false
				select {
				case s.qroom <- struct{}{}:
				default:
				}
			}
			s.qmu.Unlock()
			return it, true, nil
		}
		s.qmu.Unlock()
		select {
		case <-s.qsignal:
		case <-s.readDone:
			// Drain what the loop queued before it ended.
			s.qmu.Lock()
			empty := s.qhead >= len(s.queue)
			s.qmu.Unlock()
			if empty {
				return item{}, false, nil
			}
		case <-ctx.Done():
			return item{}, false, ctx.Err()
		}
	}
}

func (s *Session) enqueue(it item) {
	s.qmu.Lock()
	if s.closing.Load() && s.qbytes > s.qmax {
		// Closing, and nobody is keeping up: the CLI must be able to
		// finish writing and exit, and the bound still holds.
		s.qmu.Unlock()
		return
	}
	s.queue = append(s.queue, it)
	s.qbytes += it.size()
	if s.qbytes > s.qlimit() && !s.qover.Load() {
		s.qover.Store(true)
	}
	if s.drain {
		s.drained += len(it.line) + 1
	}
	s.qmu.Unlock()
	select {
	case s.qsignal <- struct{}{}:
	default:
	}
}

// exitDrainMax bounds what the read loop reads past Options.MaxBufferedBytes
// once the CLI has exited: the rest of its output, which it can no longer
// add to. For the CommandTransport that is what the stdout pipe held (64 KiB
// by default on Linux, at most 1 MiB for an unprivileged process, plus
// the 64 KiB the line reader buffers). Past it (output that keeps coming
// after the exit: a process that escaped the CLI's group writing to its
// stdout, or a transport that buffers more) the bound holds again.
const exitDrainMax = 2 << 20

// Reading ahead. The read loop stays at most readAhead bytes of messages
// ahead of Receive, not MaxBufferedBytes, as long as Receive makes room
// within readAheadWait: a host that keeps up then decodes lines read
// moments before (still in the processor's caches), and the garbage
// collector traces a short queue. That took a sixth of a host's CPU time
// off a stream of token deltas (bench-compare.sh, MaxBufferedBytes 1 MiB).
// When Receive makes no room in time (a slow loop body, or nobody
// receiving while a control request's answer is awaited behind the
// messages), the loop reads on up to MaxBufferedBytes, as it always did,
// until Receive has caught up to half of readAhead.
const (
	readAhead     = 128 << 10
	readAheadWait = 2 * time.Millisecond
)

// qlimit is where the read loop stops: qsoft, or qmax once Receive was
// slow to make room. The caller holds qmu.
func (s *Session) qlimit() int {
	if s.qhard {
		return s.qmax
	}
	return s.qsoft
}

// waitRoom blocks the read loop while the unreceived messages exceed the
// bound (qlimit), until Receive has taken half of them or Close is called.
// The CLI meanwhile blocks on its stdout writes: back pressure, nothing
// lost.
//
// Once the CLI has exited (the Conn is an ExitNotifier), nothing pushes
// back any more: the loop reads the rest of the output, up to exitDrainMax
// past the bound, so that it sees the end of stdout and the session ends
// (Done, Wait) however far behind Receive is. The messages stay queued for
// Receive, in order.
func (s *Session) waitRoom() {
	if !s.qover.Load() {
		return // within the bound: no lock taken per line
	}
	s.qmu.Lock()
	for s.qbytes > s.qlimit() && !s.closing.Load() && !(s.drain && s.drained <= exitDrainMax) {
		s.rwait = true
		ex := s.exited // nil, never ready, when the transport cannot tell
		if s.drain {
			ex = nil // past exitDrainMax: back pressure again
		}
		var expire <-chan time.Time
		soft := !s.qhard && s.qsoft < s.qmax
		if soft {
			if s.qtimer == nil {
				s.qtimer = time.NewTimer(readAheadWait)
			} else {
				s.qtimer.Reset(readAheadWait)
			}
			expire = s.qtimer.C
		}
		s.qmu.Unlock()
		exited, expired := false, false
		select {
		case <-s.qroom:
		case <-s.hctx.Done():
		case <-ex:
			exited = true
		case <-expire:
			expired = true
		}
		if soft {
			s.qtimer.Stop()
		}
		s.qmu.Lock()
		if expired {
			s.qhard = true
		}
		if exited && !s.drain {
			s.drain = true
			s.log.Debug("claude: the CLI exited with output unreceived; reading the rest past MaxBufferedBytes", "buffered", s.qbytes)
		}
	}
	s.rwait = false
	s.qover.Store(s.qbytes > s.qlimit())
	s.qmu.Unlock()
}

// readLoop is the session's only reader of the CLI's stdout. It routes
// control traffic at once and queues everything else, undecoded. A
// request from the CLI is answered on the reading goroutine, which hands
// reading over when the answer is slow (handoff.go).
func (s *Session) readLoop() { s.readFrom(0) }

// readFrom reads on after n lines.
func (s *Session) readFrom(n int64) {
	ctx := context.Background()
	for {
		line, err := s.conn.Read(ctx)
		if err != nil {
			var le *LineError
			switch {
			case errors.As(err, &le):
				s.enqueue(item{err: le})
				continue
			case errors.Is(err, ErrLineTooLong):
				n++
				s.enqueue(item{err: lineError(n, nil, err)})
				continue
			}
			s.finish(err)
			s.stopWatch()
			close(s.readDone)
			return
		}
		n++
		if answer := s.route(n, line); answer != nil {
			if !s.answerReading(n, answer) {
				return // another goroutine reads now
			}
			continue
		}
		s.waitRoom()
	}
}

func lineError(n int64, line []byte, err error) *LineError {
	le := &LineError{Line: n, Size: len(line), Prefix: line, Err: err}
	var tl *wire.TooLongError
	if errors.As(err, &tl) {
		le.Size, le.Prefix = tl.Size, tl.Prefix
	}
	if len(le.Prefix) > 256 {
		le.Prefix = append([]byte(nil), le.Prefix[:256]...)
	}
	return le
}

// route dispatches one stdout line: control lines to the control layer,
// the rest to the queue. For a request from the CLI it returns the work
// that answers it.
func (s *Session) route(n int64, line []byte) (answer func()) {
	typ, ok := peekType(line) // control.PeekType, without allocating
	if ok && s.store.take(typ, line) {
		return nil // a transcript_mirror frame, for Options.SessionStore
	}
	if ok && !control.IsControl(typ) {
		s.turn.observe(typ, line)
		s.enqueue(item{line: line, lineNo: n, typ: typ})
		return nil
	}
	if ok && typ == "control_request" {
		// The CLI waits for the answer: skip the general decode.
		if id, req, ok := control.PeekRequest(line); ok {
			return s.inbound(id, req)
		}
	}
	var env control.Envelope
	if err := unmarshal(line, &env); err != nil || env.Type == "" || !control.IsControl(env.Type) {
		// Not a control line after all (or not JSON: the receiver
		// reports it, in order).
		if err == nil && s.store.take(env.Type, line) {
			return nil
		}
		if err == nil {
			s.turn.observe(env.Type, line)
		}
		s.enqueue(item{line: line, lineNo: n})
		return nil
	}
	switch env.Type {
	case "control_response":
		if env.Response == nil {
			s.log.Warn("claude: control_response without response", "line", n)
			return nil
		}
		r := control.Result{Payload: env.Response.Response, Err: env.Response.Error, IsError: env.Response.Subtype == "error"}
		if _, isInit := s.initIDs.LoadAndDelete(env.Response.RequestID); isInit && hasPending(env.Response) {
			// Served before the answer is delivered: when Reinitialize
			// returns, the callbacks are already running.
			s.redeliver(env.Response)
		} else if hasPending(env.Response) {
			s.log.Debug("claude: pending requests listed outside an initialize answer; ignored", "request_id", env.Response.RequestID)
		}
		if !s.ctl.Resolve(env.Response.RequestID, r) {
			s.log.Debug("claude: answer to an unknown or abandoned request", "request_id", env.Response.RequestID)
		}
	case "control_request":
		return s.inbound(env.RequestID, env.Request)
	case "control_cancel_request":
		s.observeControl(&ControlEvent{Type: ControlEventCancel, RequestID: env.RequestID})
		s.memo.cancel(env.RequestID)
		s.in.Cancel(env.RequestID)
	}
	return nil
}

// inbound takes a request from the CLI and returns the work that answers
// it (nil when there is none).
//
// A request_id the session has seen before gets the first request's
// answer again, and its callback does not run twice (pending.go).
func (s *Session) inbound(id string, req json.RawMessage) (answer func()) {
	switch state, line := s.memo.arrive(id); state {
	case memoServing:
		s.log.Debug("claude: a CLI request repeated while being served; answered with it", "request_id", id)
		return nil
	case memoAnswered:
		s.log.Debug("claude: a CLI request repeated; answered again", "request_id", id)
		return func() { s.send(id, line) }
	case memoNotKept:
		s.log.Debug("claude: a CLI request repeated after its answer was let go", "request_id", id)
		return func() {
			s.send(id, control.EncodeError(id, "claude: request "+id+" was already answered; the answer is no longer kept"))
		}
	}
	if s.opts.ObserveControl != nil {
		s.observeControl(&ControlEvent{Type: ControlEventRequest, RequestID: id, Subtype: control.Subtype(req), Request: req})
	}
	return s.serve(id, req)
}

// finish records why the read loop ended and fails everything waiting.
func (s *Session) finish(err error) {
	if !errors.Is(err, io.EOF) {
		s.exitErr = err
	}
	var term error
	switch {
	case s.closing.Load():
		term = nil
	case errors.Is(err, io.EOF):
		term = nil
	default:
		term = err
	}
	s.termErr = term
	fail := term
	if s.closing.Load() {
		fail = ErrClosed
	} else if fail == nil {
		fail = &ProcessError{ExitCode: 0, Err: io.EOF}
	}
	s.ctl.Close(fail)
	s.hstop()
}

// An inboundHandler serves one kind of CLI request. The returned value is
// encoded as the response payload.
type inboundHandler func(s *Session, ctx context.Context, id string, req json.RawMessage) (any, error)

// inboundHandlers maps CLI→host request subtypes to their handlers.
var inboundHandlers = map[string]inboundHandler{
	"can_use_tool":  (*Session).serveCanUseTool,
	"hook_callback": (*Session).serveHookCallback,
	"mcp_message":   (*Session).serveMCPMessage,
}

// serve returns the work that answers a CLI request registered in
// s.memo, which the read loop runs (answerReading).
func (s *Session) serve(id string, req json.RawMessage) func() {
	subtype := control.Subtype(req)
	h, ok := inboundHandlers[subtype]
	if !ok {
		s.log.Warn("claude: unsupported request from the CLI", "subtype", subtype)
		return func() { s.reply(id, nil, fmt.Errorf("unsupported control request subtype: %s", subtype)) }
	}
	ctx, done := s.in.Start(s.hctx, id)
	return func() {
		defer done()
		var (
			payload any
			err     error
		)
		func() {
			defer func() {
				if p := recover(); p != nil {
					s.log.Error("claude: callback panicked", "subtype", subtype, "panic", p, "stack", string(debug.Stack()))
					err = fmt.Errorf("%s callback panicked: %v", subtype, p)
				}
			}()
			payload, err = h(s, ctx, id, req)
		}()
		if ctx.Err() != nil && errors.Is(context.Cause(ctx), control.ErrCancelled) {
			// The CLI withdrew the request and ignores late answers; it
			// gets one only for repeats sent after the cancel.
			if n := s.memo.finish(id, nil); n > 0 {
				line := control.EncodeError(id, "claude: request "+id+" was cancelled by the CLI before it was answered")
				for range n {
					s.send(id, line)
				}
			}
			return
		}
		s.reply(id, payload, err)
	}
}

// preEncoded is a handler's answer already encoded as one line of compact
// JSON: reply sends it as it is.
type preEncoded []byte

// MarshalJSON lets a preEncoded answer travel inside another value too (a
// PermissionRequest hook's decision).
func (p preEncoded) MarshalJSON() ([]byte, error) { return p, nil }

// reply answers CLI request id, and the repeats of it that came
// meanwhile, with the same line; the line is remembered for later repeats
// before it goes, so that none slips between the two.
func (s *Session) reply(id string, payload any, herr error) {
	var line []byte
	if herr != nil {
		line = control.EncodeError(id, herr.Error())
	} else {
		var raw json.RawMessage
		if pre, ok := payload.(preEncoded); ok {
			raw = json.RawMessage(pre)
		} else if payload != nil {
			b, err := json.Marshal(payload)
			if err != nil {
				line = control.EncodeError(id, "encoding response: "+err.Error())
			} else {
				raw = b
			}
		}
		if line == nil {
			line = control.EncodeSuccess(id, raw)
		}
	}
	repeats := s.memo.finish(id, line)
	for range 1 + repeats {
		s.send(id, line)
	}
}

// send writes an answer to CLI request id. Bounded by the session's life,
// not by a timeout: the CLI waits for this answer, so dropping it would
// hang the CLI for good, and a timer here would wake the runtime's poller
// on every answer. line is not modified, so one line can go several times.
func (s *Session) send(id string, line []byte) {
	if err := s.write(s.hctx, line); err != nil && !errors.Is(err, ErrClosed) {
		s.log.Warn("claude: answering a CLI request", "request_id", id, "err", err)
	}
}

func (s *Session) serveCanUseTool(ctx context.Context, id string, raw json.RawMessage) (any, error) {
	req, err := decodePermissionRequest(id, raw)
	if err != nil {
		return nil, err
	}
	if s.opts.CanUseTool == nil {
		return nil, errors.New("no CanUseTool callback is set")
	}
	res, err := s.callCanUseTool(ctx, req)
	if err != nil {
		return nil, err
	}
	if noResult(res) {
		return nil, errors.New("CanUseTool returned no result")
	}
	return res.permissionResponse(req), nil
}

// request sends a control request and waits for its answer. Cancelling ctx
// returns ctx.Err() at once; the CLI is told in the background.
func (s *Session) request(ctx context.Context, subtype string, req any) (json.RawMessage, error) {
	body, err := marshalControl(subtype, req)
	if err != nil {
		return nil, err
	}
	return s.requestLine(ctx, subtype, func(id string) []byte { return control.EncodeRequest(id, body) })
}

// requestLine sends the line encode builds around a fresh request id and
// waits for the control_response with that id: request, and the few
// requests the CLI takes as top-level messages of their own
// (update_environment_variables).
func (s *Session) requestLine(ctx context.Context, subtype string, encode func(id string) []byte) (json.RawMessage, error) {
	id, ch, err := s.ctl.Add()
	if err != nil {
		return nil, fmt.Errorf("claude: %s: %w", subtype, err)
	}
	if subtype == "initialize" {
		s.initIDs.Store(id, struct{}{})
	}
	if err := s.write(ctx, encode(id)); err != nil {
		s.initIDs.Delete(id)
		s.ctl.Remove(id)
		return nil, fmt.Errorf("claude: %s: %w", subtype, err)
	}
	select {
	case r := <-ch:
		if r.IsError {
			return nil, &ControlError{Subtype: subtype, Message: r.Err}
		}
		return r.Payload, nil
	case <-s.ctl.Done():
		// The answer may have landed just before the table closed.
		select {
		case r := <-ch:
			if r.IsError {
				return nil, &ControlError{Subtype: subtype, Message: r.Err}
			}
			return r.Payload, nil
		default:
		}
		return nil, fmt.Errorf("claude: %s: %w", subtype, s.ctl.Err())
	case <-ctx.Done():
		s.ctl.Remove(id)
		go func() {
			// Best effort, off the return path. The 2.1.x CLI ignores
			// host cancels, but a newer one may honour them.
			wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			_ = s.write(wctx, control.EncodeCancel(id))
		}()
		return nil, ctx.Err()
	}
}

// Control sends any control request and returns the CLI's raw answer: the
// escape hatch for subtypes Tether has no method for yet. request is
// encoded as the request body (a struct or map; nil for none) and must not
// set "subtype" itself.
func (s *Session) Control(ctx context.Context, subtype string, request any) (json.RawMessage, error) {
	return s.request(ctx, subtype, request)
}

// Interrupt stops the running turn. The turn ends with a
// *ResultMessage of subtype error_during_execution; when no turn is
// running it does nothing.
func (s *Session) Interrupt(ctx context.Context) error {
	_, err := s.request(ctx, "interrupt", nil)
	return err
}

// SetModel switches the model for the next API call. The CLI does not
// validate the name; "" means the default model.
func (s *Session) SetModel(ctx context.Context, model string) error {
	var req struct {
		Model string `json:"model,omitempty"`
	}
	req.Model = model
	_, err := s.request(ctx, "set_model", req)
	return err
}

// SetPermissionMode changes the permission mode. bypassPermissions is
// refused unless the session started in it (or with the launch flag).
// SetPermissionModeWith does the same and returns the mode the CLI says is
// now in effect, which is not always the one asked for.
func (s *Session) SetPermissionMode(ctx context.Context, mode PermissionMode) error {
	_, err := s.SetPermissionModeWith(ctx, &SetPermissionModeParams{Mode: mode})
	return err
}

// SetPermissionModeParams are the parameters of
// Session.SetPermissionModeWith.
type SetPermissionModeParams struct {
	Mode PermissionMode `json:"mode"`
}

// SetPermissionModeResult is the CLI's answer to set_permission_mode.
type SetPermissionModeResult struct {
	// Mode is the permission mode now in effect, as the CLI names it
	// (every pinned CLI does, 2.1.197 included): record it rather than
	// the mode asked for, which it need not be. Empty where the CLI
	// answers with no payload; the mode asked for is then only a best
	// guess.
	Mode PermissionMode  `json:"mode,omitempty"`
	Raw  json.RawMessage `json:"-"`
}

// SetPermissionModeWith changes the permission mode and returns the
// mode now in effect (the TypeScript SDK's setPermissionMode returns it
// from 0.3.332).
//
// CLI 2.1.332 is said to settle, on a change of mode, the permission
// requests still waiting that the new mode allows. A CLI that does so
// withdraws them (a control_cancel_request), and a pending CanUseTool call
// sees its ctx cancelled. Offline, with the host's CanUseTool asking,
// 2.1.332 was seen to keep the ask pending instead (docs/cli-versions.md).
func (s *Session) SetPermissionModeWith(ctx context.Context, params *SetPermissionModeParams) (*SetPermissionModeResult, error) {
	if params == nil {
		params = &SetPermissionModeParams{}
	}
	r := &SetPermissionModeResult{}
	if err := s.requestInto(ctx, "set_permission_mode", params, r, &r.Raw); err != nil {
		return nil, err
	}
	return r, nil
}

// SetMaxThinkingTokens sets the thinking budget for the next API calls;
// n <= 0 clears it (the model's default). display, at most one value, is
// how the thinking comes back (the API's thinking.display); none or ""
// leaves it to the CLI, which differs by version: 2.1.197 sends no
// display, 2.1.330 asks for "updates". The TypeScript SDK's
// setMaxThinkingTokens passes its thinkingDisplay the same way.
//
// display is variadic so that both SetMaxThinkingTokens(ctx, n), the
// original form, and SetMaxThinkingTokens(ctx, n, display) compile; more
// than one display is an *ArgumentError (ErrInvalidArgument) and sends
// nothing.
func (s *Session) SetMaxThinkingTokens(ctx context.Context, n int, display ...ThinkingDisplay) error {
	if len(display) > 1 {
		return &ArgumentError{Call: "SetMaxThinkingTokens", Message: fmt.Sprintf("takes at most one ThinkingDisplay, got %d", len(display))}
	}
	var req struct {
		MaxThinkingTokens *int            `json:"max_thinking_tokens"`
		ThinkingDisplay   ThinkingDisplay `json:"thinking_display,omitempty"`
	}
	if n > 0 {
		req.MaxThinkingTokens = &n
	}
	if len(display) == 1 {
		req.ThinkingDisplay = display[0]
	}
	_, err := s.request(ctx, "set_max_thinking_tokens", req)
	return err
}

// Close ends the session. If a turn is running (a prompt was sent and its
// result has not come yet, or the CLI started a turn of its own), it first
// interrupts it, because a CLI whose stdin closes mid-turn finishes the
// turn and keeps spending; an idle session gets no interrupt. Then it
// closes the CLI's stdin, gives it Options.CloseTimeout to exit on its own
// (it flushes its session file), signals it, and waits for it and every
// goroutine of the session.
//
// Close returns within CloseTimeout plus 1 s whatever the CLI does
// (stopped, not reading stdin, not writing, ignoring SIGTERM): the
// interrupt is bounded to closeInterruptWait and never blocks on a full
// pipe. It is safe to call more than once and from several goroutines; it
// does not depend on any caller context. Use CloseInput instead to let a
// running turn finish.
func (s *Session) Close() error {
	s.closeOnce.Do(func() {
		if s.turn.busy() && !s.wbroken.Load() && !s.inClose.Load() {
			select {
			case <-s.readDone:
			default:
				ctx, cancel := context.WithTimeout(context.Background(), closeInterruptWait)
				_ = s.Interrupt(ctx)
				cancel()
			}
		}
		s.closing.Store(true)
		s.hstop()                   // callbacks see ctx cancelled; the read loop stops waiting for room
		s.closeErr = s.conn.Close() // makes the read loop's Read and the writer's Write return
		close(s.wstop)
		<-s.readDone
		s.store.close() // the last appends to Options.SessionStore, bounded
		waitTimeout(func() { <-s.wdone }, time.Second, func() {
			s.log.Warn("claude: a write to the CLI did not return after Close; the transport ignores Close")
		})
		s.ctl.Close(ErrClosed)
		waitTimeout(s.in.Wait, 5*time.Second, func() {
			s.log.Warn("claude: a callback ignored its cancelled context; Close is not waiting for it")
		})
		s.closeMCP()
	})
	return s.closeErr
}

// closeInterruptWait bounds Close's interrupt of a running turn: writing
// it and waiting for the CLI's answer. It comes on top of CloseTimeout,
// within Close's 1 s margin.
const closeInterruptWait = 400 * time.Millisecond

// CloseInput ends the session's input and lets the CLI finish: it closes
// the CLI's stdin after the lines already queued, so the CLI completes the
// running turn (and the prompts queued behind it), writes the results and
// exits on its own; then CloseInput waits for that exit, or for ctx.
// Messages keep coming to Receive meanwhile, and Receive must take them if
// they exceed Options.MaxBufferedBytes. Permission, hook and MCP requests
// can no longer be answered, so the CLI gets no answer to them: use it
// when the turn needs none (or set rules that decide without asking).
//
// It returns nil once the CLI has exited (Wait says how), ctx's error if
// it is still running when ctx ends (call Close then), or an error if the
// transport cannot close stdin alone (it does not implement InputCloser).
// Calls that write after it fail with ErrInputClosed.
func (s *Session) CloseInput(ctx context.Context) error {
	if _, ok := s.conn.(InputCloser); !ok {
		return errors.New("claude: CloseInput: the transport cannot close stdin alone (no InputCloser)")
	}
	if !s.inClose.Load() {
		if err := s.writeLine(ctx, nil, lineCloseInput); err != nil && !errors.Is(err, ErrInputClosed) {
			select {
			case <-s.readDone:
			default:
				return err
			}
		}
	}
	select {
	case <-s.readDone:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Wait blocks until the CLI has ended and returns how: nil for a clean
// exit (status 0, also after Close or CloseInput when the CLI exited on
// its own), a *ProcessError when it died, failed, or had to be signalled
// by Close (Signal says which signal ended it). The CLI's end is read
// from stdout after the messages before it. With more than
// Options.MaxBufferedBytes of them unreceived, a transport that reports
// the exit (an ExitNotifier, as the default one is) lets the session read
// the rest anyway, so Wait returns without Receive; with any other, Wait
// waits for Receive (or Close) to catch up.
func (s *Session) Wait() error {
	<-s.readDone
	if s.closing.Load() {
		return s.exitErr
	}
	return s.termErr
}

// Done is closed when the session has ended: the CLI exited and its
// output was read to the end, or Close was called. It does not wait for
// Receive: when the CLI exits with more than Options.MaxBufferedBytes of
// messages unreceived, the session reads the rest past the bound (the CLI
// can write no more) and Done closes; Receive still yields those
// messages, then the terminal error. This needs a transport that reports
// the exit (ExitNotifier; the default CommandTransport does); with another
// one Done waits for Receive to catch up, as the CLI's end comes after
// the unread messages on its stdout.
func (s *Session) Done() <-chan struct{} { return s.readDone }

func waitTimeout(wait func(), d time.Duration, onTimeout func()) {
	done := make(chan struct{})
	go func() { wait(); close(done) }()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		onTimeout()
	}
}
