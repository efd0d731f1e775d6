package host

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/internal/telemetry"
)

// ManagerOptions configures a Manager. A nil *ManagerOptions means
// defaults.
type ManagerOptions struct {
	// Session is the template for Start(ctx, nil) and for spares (nil
	// means defaults).
	Session *Options
	// Spares is how many prewarmed sessions to keep, so that Start does
	// not wait the second or so a CLI takes to start. Where the CLI can
	// be prewarmed (claude.Prewarm: CLI 2.1.330 and newer) they are
	// parked CLIs started with the template, and any Start whose options
	// differ from the template only in what a claim sets (the CLI's Cwd,
	// AddDirs, Model, PermissionMode, MaxThinkingTokens,
	// AppendSystemPrompt, Title, Agents; host Commands, Restart,
	// InterruptTimeout, OnWake) claims one; a claim the CLI refuses falls back to
	// a cold start. With an older CLI they are sessions started with the
	// template and waiting for their first prompt, handed out only to
	// Start(ctx, nil).
	Spares int
	// IdleTimeout closes a session that has waited for a prompt (ready,
	// idle, error or asleep) with no word from its CLI for this long. 0
	// means never.
	IdleTimeout time.Duration
	// SleepAfter puts to sleep (Session.Sleep) a session that has had
	// nothing to do for this long: its CLI is closed, the session stays
	// listed, asleep, with its journal and cost, and its next command
	// wakes it, resuming the conversation (a second or two). 0 means
	// never: sessions keep their CLI while they are open, as with
	// Start.
	SleepAfter time.Duration
	// Registerer, when set, gets the sessions' metrics (host/metrics.go):
	// sessions by state, CLI starts and exits, turn and approval times,
	// tokens and cost. nil means no metrics, at no cost. Sessions started
	// with Start outside a Manager are not counted.
	Registerer prometheus.Registerer
	// TracerProvider records the spans of sessions whose Options have
	// none (the template's, Start's), and of spares handed out ("session
	// start" with tether.session.spare). nil means
	// otel.GetTracerProvider().
	TracerProvider trace.TracerProvider
}

// ErrManagerClosed is returned by Start after Manager.Close.
var ErrManagerClosed = errors.New("host: manager closed")

// A Manager runs many sessions in one process: it starts them (from
// prewarmed spares when it can), finds them by id, reaps idle ones and
// closes them all. Sessions end on their own too (Close, or a CLI that
// died and was not restarted); the manager then forgets them.
//
// Every method is safe for concurrent use.
type Manager struct {
	opts    ManagerOptions
	metrics *telemetry.Host

	mu       sync.Mutex
	sessions map[string]*Session
	order    []string // start order
	spares   []*Session
	warming  int
	cold     bool // the CLI cannot be prewarmed: spares are template sessions
	closed   bool

	ctx    context.Context // cancelled by Close: stops warming
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// NewManager returns a manager and starts warming its spares.
func NewManager(opts *ManagerOptions) *Manager {
	m := &Manager{sessions: map[string]*Session{}}
	if opts != nil {
		m.opts = *opts
	}
	m.metrics = telemetry.NewHost(m.opts.Registerer, stateNames[:], m.count)
	m.opts.Session = m.withTracer(m.opts.Session)
	m.ctx, m.cancel = context.WithCancel(context.Background())
	m.mu.Lock()
	m.refill()
	m.mu.Unlock()
	if m.opts.IdleTimeout > 0 || m.opts.SleepAfter > 0 {
		m.wg.Add(1)
		go m.reap()
	}
	return m
}

// Start starts a session with opts, or with the template when opts is
// nil, from a spare when one can serve it (see ManagerOptions.Spares).
func (m *Manager) Start(ctx context.Context, opts *Options) (*Session, error) {
	if opts == nil && m.opts.Session != nil && m.opts.Session.Worktree != nil {
		opts = m.opts.Session
	}
	opts, undo, err := prepareWorktree(ctx, opts)
	if err != nil {
		return nil, err
	}
	s, err := m.start(ctx, opts)
	if err != nil && undo != nil {
		undo()
	}
	return s, err
}

// start is Start with the worktree made.
func (m *Manager) start(ctx context.Context, opts *Options) (*Session, error) {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil, ErrManagerClosed
	}
	want := opts
	if want == nil {
		want = m.opts.Session
	}
	// A parked spare (warm.go) serves any start whose options differ
	// from the template only in what a claim sets; a template spare only
	// Start(ctx, nil).
	claim, cerr := claimFor(m.opts.Session, want)
	for len(m.spares) > 0 {
		s := m.spares[0]
		if s.isSpare() {
			if !s.parked() {
				m.spares = m.spares[1:]
				m.closeLater(s) // a spare that died waiting
				continue
			}
			if cerr != nil {
				break // the spare stays for a start it can serve
			}
			m.spares = m.spares[1:]
			m.refill()
			m.mu.Unlock()
			if err := s.claim(ctx, claim, want); err == nil {
				m.spareSpan(ctx, s)
				return m.adoptStarted(s)
			}
			// Refused (the folder's settings, say): start cold.
			return m.startCold(ctx, want)
		}
		if opts != nil {
			break
		}
		m.spares = m.spares[1:]
		if s.State().State == StateReady {
			m.spareSpan(ctx, s)
			m.adopt(s)
			m.refill()
			m.mu.Unlock()
			return s, nil
		}
		m.closeLater(s) // a spare that died waiting
	}
	if opts == nil {
		m.refill()
	}
	m.mu.Unlock()
	return m.startCold(ctx, want)
}

// startCold starts a session with opts, without a spare.
func (m *Manager) startCold(ctx context.Context, opts *Options) (*Session, error) {
	opts = m.withTracer(opts)
	s, err := start(ctx, opts, m.metrics)
	if err != nil {
		return nil, err
	}
	return m.adoptStarted(s)
}

// adoptStarted registers a session started or claimed outside m.mu.
func (m *Manager) adoptStarted(s *Session) (*Session, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		s.Close()
		return nil, ErrManagerClosed
	}
	m.adopt(s)
	return s, nil
}

// adopt registers s and forgets it when it ends (m.mu held).
func (m *Manager) adopt(s *Session) {
	m.sessions[s.ID()] = s
	m.order = append(m.order, s.ID())
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		select {
		case <-s.Done():
		case <-m.ctx.Done():
			return
		}
		m.mu.Lock()
		m.forget(s.ID())
		m.mu.Unlock()
	}()
}

func (m *Manager) forget(id string) {
	if _, ok := m.sessions[id]; !ok {
		return
	}
	delete(m.sessions, id)
	m.order = slices.DeleteFunc(m.order, func(x string) bool { return x == id })
}

// refill starts warming spares up to ManagerOptions.Spares (m.mu held).
func (m *Manager) refill() {
	for ; !m.closed && len(m.spares)+m.warming < m.opts.Spares; m.warming++ {
		m.wg.Add(1)
		go func() {
			defer m.wg.Done()
			ctx, cancel := context.WithTimeout(m.ctx, time.Minute)
			defer cancel()
			m.mu.Lock()
			cold := m.cold
			m.mu.Unlock()
			var s *Session
			err := claude.ErrNeedsNewerCLI
			if !cold {
				s, err = prewarm(ctx, m.opts.Session, m.metrics)
			}
			if errors.Is(err, claude.ErrNeedsNewerCLI) {
				// This CLI cannot park: spares are template sessions.
				m.mu.Lock()
				m.cold = true
				m.mu.Unlock()
				s, err = start(ctx, m.opts.Session, m.metrics)
			}
			m.mu.Lock()
			defer m.mu.Unlock()
			m.warming--
			if err != nil {
				return // tried again on the next Start
			}
			if m.closed {
				m.closeLater(s)
				return
			}
			m.spares = append(m.spares, s)
		}()
	}
}

// closeLater closes s on a goroutine Close waits for (m.mu held).
func (m *Manager) closeLater(s *Session) {
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		s.Close()
	}()
}

// Get returns the session with the given id, or nil.
func (m *Manager) Get(id string) *Session {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.sessions[id]
}

// Sessions returns the running sessions in the order they started
// (spares not included).
func (m *Manager) Sessions() []*Session {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.sessionsLocked()
}

// Spares returns how many prewarmed sessions are ready.
func (m *Manager) Spares() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.spares)
}

// reap closes sessions idle longer than IdleTimeout and puts to sleep
// those idle longer than SleepAfter.
func (m *Manager) reap() {
	defer m.wg.Done()
	every := time.Duration(0)
	for _, d := range []time.Duration{m.opts.IdleTimeout, m.opts.SleepAfter} {
		if d > 0 && (every == 0 || d/4 < every) {
			every = d / 4
		}
	}
	// A quarter of the shortest, at most 30 s: a session sleeps or is
	// closed within that of its time.
	t := time.NewTicker(min(max(every, 10*time.Millisecond), 30*time.Second))
	defer t.Stop()
	for {
		select {
		case <-m.ctx.Done():
			return
		case now := <-t.C:
			for _, s := range m.Sessions() {
				l := s.State()
				last := s.LastEvent()
				if l.Since.After(last) {
					last = l.Since
				}
				idle := now.Sub(last)
				switch l.State {
				case StateReady, StateIdle, StateError, StateAsleep:
				default:
					continue
				}
				switch {
				case m.opts.IdleTimeout > 0 && idle >= m.opts.IdleTimeout:
					s.Close()
				case m.opts.SleepAfter > 0 && idle >= m.opts.SleepAfter && l.State != StateAsleep && !s.Asleep():
					// Beside the loop: a CLI may take a while to exit.
					// Refused (ErrNotIdle) when it has something to do
					// after all: tried again on the next tick.
					m.wg.Add(1)
					go func() {
						defer m.wg.Done()
						ctx, cancel := context.WithTimeout(m.ctx, time.Minute)
						defer cancel()
						_ = s.Sleep(ctx)
					}()
				}
			}
		}
	}
}

// Close closes every session and spare and waits for them.
func (m *Manager) Close() error {
	m.mu.Lock()
	m.closed = true
	all := append(m.sessionsLocked(), m.spares...)
	m.spares = nil
	m.mu.Unlock()
	m.cancel()
	m.metrics.Release()
	var wg sync.WaitGroup
	for _, s := range all {
		wg.Add(1)
		go func() { defer wg.Done(); s.Close() }()
	}
	wg.Wait()
	m.wg.Wait()
	m.mu.Lock()
	clear(m.sessions)
	m.order = nil
	m.mu.Unlock()
	return nil
}

// sessionsLocked is Sessions with m.mu held.
func (m *Manager) sessionsLocked() []*Session {
	out := make([]*Session, 0, len(m.order))
	for _, id := range m.order {
		out = append(out, m.sessions[id])
	}
	return out
}

// withTracer returns opts with the manager's TracerProvider when they
// have none (a copy: the caller's options are not changed).
func (m *Manager) withTracer(opts *Options) *Options {
	if m.opts.TracerProvider == nil || (opts != nil && opts.TracerProvider != nil) {
		return opts
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	o.TracerProvider = m.opts.TracerProvider
	return &o
}

// spareSpan records the start of a session served by a spare: its CLI
// was started before, under no request's trace.
func (m *Manager) spareSpan(ctx context.Context, s *Session) {
	tp := s.opts.TracerProvider
	_, span := telemetry.Tracer(tp).Start(ctx, "session start", trace.WithAttributes(
		attrSession.String(s.id), attrSpare.Bool(true), attrCLISess.String(s.SessionID())))
	span.End()
}
