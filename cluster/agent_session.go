package cluster

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tetherhq/tether/host"
)

// agentSession is a host session attached to the bus: its events go to
// the events stream (numbered base+seq, so that a session taken over by
// another agent carries on where it was), its commands come in on its
// subject, its registry entry and transcript mirror are kept current.
type agentSession struct {
	a    *Agent
	id   string
	hs   *host.Session
	base uint64
	log  *slog.Logger
	sub  *nats.Subscription
	// configDir is the CLI's config folder, where the transcript mirror
	// reads the session file (the agent's, or the owner's isolated HOME).
	configDir string

	ctx    context.Context // ends when the session ends or the agent closes
	cancel context.CancelFunc
	wake   chan struct{} // the record keeper: something changed
	// The command lanes (agent_command.go).
	ordered chan func()
	quick   chan struct{}
	wakeTx  chan struct{} // the mirror: a turn ended
	// mirrorDone is closed once the mirror has copied the session file a
	// last time (keepMirror returned).
	mirrorDone chan struct{}
	wg         sync.WaitGroup

	mu     sync.Mutex
	rec    SessionInfo
	rev    uint64
	closed bool // closed by a command: its registry entry goes
	// lanesClosed: finish began; the quick lane takes nothing more.
	lanesClosed bool
	mirror      mirrorState
	// filesChanged: a FilesChanged event was published since the change
	// record was last mirrored; lastChanges, the record then; changesTag
	// and changesN name this attachment's records (mirror only).
	filesChanged atomic.Bool
	lastChanges  [sha256.Size]byte
	changesTag   string
	changesN     uint64
	restored     int64 // bytes of the CLI session's file restored by a failover
	// fence: the next event must follow the stream's last one of the
	// session as read then (a taken-over session's first event: a client
	// may have appended "disconnected" since base was read; or the first
	// after this agent took its own session back from a client that had
	// given it up during a NATS outage).
	fence atomic.Bool
	// lastStream is the stream sequence of the session's last message as
	// the publisher knows it: its next publish expects it (publisher only).
	lastStream uint64
	// nextJ is the journal number of the next event to publish, 0 before
	// the first (publisher only).
	nextJ uint64
	// q hands the journal's events to the publisher.
	q *eventQueue
	// back: this agent took its session back from a client that had
	// marked it disconnected (readopt); the publisher owes the stream what
	// viewers would otherwise miss (announceBack).
	back atomic.Bool
	// nonce makes this attachment's message ids its own (publisher only).
	nonce string
	// moving: the agent drains; prompts are refused (Drain).
	moving atomic.Bool
	// handedOver: Drain gave the session up; its registry entry is not
	// this agent's to write any more (s.mu).
	handedOver bool
	// deposed: another agent took the session over; publish nothing more.
	deposed    atomic.Bool
	lastPut    []byte // the record last written, Updated zeroed
	lastPutAt  time.Time
	lastPrompt string
	// Sleep (sleep.go): cmds counts commands in progress (s.mu);
	// sleeping, the session is being handed off asleep: commands are
	// refused, to be sent again. woken: this attachment is a wake (its
	// first state is shown "waking").
	cmds     int
	sleeping bool
	woken    bool
	refused  atomic.Int64 // commands refused while going to sleep
}

// attachOpts are what a takeover or a wake adds to attach: after is the
// stream sequence of the session's last message this attachment already
// published (a wake's "waking" event: its events follow it), woken says
// it is a wake.
type attachOpts struct {
	after uint64
	woken bool
}

func (a *Agent) attach(id string, hs *host.Session, base uint64, rec SessionInfo, rev uint64, restored int64, fence bool, configDir string, ao attachOpts) *agentSession {
	s := &agentSession{a: a, id: id, hs: hs, base: base, rec: rec, rev: rev, configDir: configDir, wake: make(chan struct{}, 1), wakeTx: make(chan struct{}, 1), mirrorDone: make(chan struct{}), restored: restored,
		ordered: make(chan func(), orderedQueue), quick: make(chan struct{}, quickLimit),
		log: a.log.With("session", id), lastStream: ao.after, woken: ao.woken, q: newEventQueue()}
	s.ctx, s.cancel = context.WithCancel(a.ctx)
	s.fence.Store(fence)
	s.rec.Agent = a.id
	s.rec.CLISession = hs.SessionID()
	a.mu.Lock()
	a.sessions[id] = s
	s.moving.Store(a.draining) // a start that ends as the agent drains
	a.mu.Unlock()
	hostSessions.Store(hs, id) // before any command can come
	sub, err := a.b.nc.Subscribe(subjectCommand+id, s.command)
	if err != nil {
		s.log.Error("subscribing to commands", "err", err)
	} else {
		sub.SetPendingLimits(1024, 64<<20)
	}
	s.sub = sub
	ctx, cancel := context.WithTimeout(s.ctx, 5*time.Second)
	s.putRecord(ctx)
	cancel()
	s.wg.Add(4)
	go s.runOrdered()
	go s.publishEvents()
	go s.keepRecord()
	go s.keepMirror()
	if a.opts.SleepAfter > 0 {
		s.wg.Add(1)
		go s.watchSleep()
	}
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		select {
		case <-hs.Done():
		case <-a.ctx.Done():
		}
		s.finish()
	}()
	return s
}

// finish runs once the session ended (or the agent closes): it stops
// serving commands, lets the pumps write their last word and gives the
// slot back.
func (s *agentSession) finish() {
	s.mu.Lock()
	sub := s.sub
	slept := s.sleeping && s.handedOver // its subscription drains (sleepOut)
	s.mu.Unlock()
	if sub != nil && !slept {
		sub.Unsubscribe()
	}
	<-s.hs.Done() // the agent closes its manager, which ends the session
	s.mu.Lock()
	s.lanesClosed = true
	s.mu.Unlock()
	s.awaitPublished(5 * time.Second)
	s.cancel()
	s.wg.Wait()
	a := s.a
	a.mu.Lock()
	if a.sessions[s.id] == s { // not a later attachment of it (a wake here)
		delete(a.sessions, s.id)
	}
	a.mu.Unlock()
	hostSessions.CompareAndDelete(s.hs, s.id)
	<-a.slots
	s.log.Info("session detached")
}

// awaitPublished waits (at most d) until the publisher has stored the
// journal's last event: a session that ended on a live agent (closed, or
// its CLI gone) gets its last state and its closed event to subscribers.
// Not when the agent closes or lost the session: nothing more is
// published then.
func (s *agentSession) awaitPublished(d time.Duration) {
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	timeout := time.After(d)
	for {
		last := s.hs.Snapshot().Seq
		s.mu.Lock()
		done := s.handedOver || s.rec.Seq >= s.base+last
		s.mu.Unlock()
		if done || s.deposed.Load() || s.a.gone() || s.ctx.Err() != nil {
			return
		}
		select {
		case <-t.C:
		case <-timeout:
			s.log.Warn("the session's last events were not all published")
			return
		}
	}
}

// poke tells the record keeper to look again.
func (s *agentSession) poke() { notify(s.wake) }

// pokeMirror tells the mirror to look again.
func (s *agentSession) pokeMirror() { notify(s.wakeTx) }

// record returns the session's registry entry as of now.
func (s *agentSession) record() SessionInfo {
	st := s.hs.State()
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.rec
	r.State = st.State.String()
	r.Tasks = len(host.WorkingTasks(s.hs.Tasks()))
	r.CostUSD = s.hs.Cost().USD
	r.LastEvent = s.hs.LastEvent()
	if id := s.hs.SessionID(); id != "" {
		r.CLISession = id
	}
	if s.lastPrompt != "" {
		r.LastPrompt = s.lastPrompt
	}
	if wt := s.hs.Worktree(); wt != nil {
		r.Worktree = wt
	}
	return r
}

// keepRecord writes the session's registry entry when it changes (at most
// every 50 ms) and on heartbeats, and a last time when the session ends.
func (s *agentSession) keepRecord() {
	defer s.wg.Done()
	for {
		select {
		case <-s.wake:
		case <-s.ctx.Done():
			s.lastRecord()
			return
		}
		if s.ctx.Err() != nil {
			continue
		}
		s.putRecord(s.ctx)
		select {
		case <-time.After(50 * time.Millisecond):
		case <-s.ctx.Done():
		}
	}
}

// lastRecord writes the registry entry a last time as the session goes:
// a closed session's entry is marked Closed and Ended, one that ended on
// its own Ended (both stay resumable from the mirror as new sessions);
// one whose agent shuts down stays as it is (it shows disconnected once
// the agent has left, and can fail over).
func (s *agentSession) lastRecord() {
	s.mu.Lock()
	handedOver := s.handedOver
	s.mu.Unlock()
	if s.a.gone() || handedOver {
		return
	}
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed || s.a.ctx.Err() == nil {
		// Ended says the conversation can be resumed from the mirror:
		// not before the mirror has the whole of it (its last copy is
		// bounded by 10 s).
		<-s.mirrorDone
		s.mu.Lock()
		s.rec.Ended, s.rec.Closed = true, closed
		seq := s.rec.Seq
		s.mu.Unlock()
		if !closed {
			// Still listed: what it answers ended (answers.go), before the
			// entry says it ended.
			s.recordAnswers(context.Background(), seq)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s.putRecord(ctx)
}

// putRecord writes the registry entry if it changed, at the revision the
// agent last wrote: a failed update means another agent took over.
func (s *agentSession) putRecord(ctx context.Context) {
	s.mu.Lock()
	handedOver := s.handedOver
	s.mu.Unlock()
	if handedOver {
		return
	}
	r := s.record()
	r.Updated = time.Time{}
	data, _ := json.Marshal(r)
	s.mu.Lock()
	// Unchanged entries are written again every TTL, so that one a client
	// marked orphaned during a NATS outage is taken back.
	same := string(data) == string(s.lastPut) && time.Since(s.lastPutAt) < s.a.b.ttl
	rev := s.rev
	s.mu.Unlock()
	if same {
		return
	}
	r.Updated = time.Now()
	nrev, err := s.a.b.putSession(ctx, &r, rev, false)
	if errors.Is(err, jetstream.ErrKeyRevisionMismatch) || errors.Is(err, jetstream.ErrKeyExists) {
		nrev, err = s.readopt(ctx, &r)
	}
	if err != nil {
		if ctx.Err() == nil {
			s.log.Debug("registry update", "err", err)
		}
		return
	}
	s.mu.Lock()
	s.rev, s.lastPut, s.lastPutAt = nrev, data, time.Now()
	s.mu.Unlock()
}

// readopt handles a registry entry changed behind the agent's back. When a
// client only marked the session orphaned (this agent's heartbeats did not
// reach NATS for 3 beats: an outage), the agent takes it back, its next
// event fenced after the "disconnected" one the client appended. When
// another agent took it over, this one stops publishing and closes its
// CLI, so that two CLIs never run one conversation.
func (s *agentSession) readopt(ctx context.Context, r *SessionInfo) (uint64, error) {
	e, err := s.a.b.sessions.Get(ctx, s.id)
	if err != nil {
		return 0, err
	}
	var cur SessionInfo
	if err := decode(BucketSessions+"."+s.id, e.Value(), MaxRecordSize, &cur); err != nil {
		return 0, err
	}
	s.mu.Lock()
	handedOver := s.handedOver
	s.mu.Unlock()
	if handedOver {
		// Put to sleep or handed over meanwhile: not this agent's to write.
		return 0, &CommandError{Code: codeOwned, Message: "handed off"}
	}
	if cur.Agent != s.a.id {
		s.deposed.Store(true)
		s.log.Warn("session taken over by another agent; closing it here", "by", cur.Agent)
		go s.hs.Close()
		return 0, &CommandError{Code: codeOwned, Message: "taken over by " + cur.Agent}
	}
	s.log.Info("session taken back after the agent's registry entry lapsed", "marked", cur.Orphaned)
	s.fence.Store(true)
	rev, err := s.a.b.putSession(ctx, r, e.Revision(), false)
	if err == nil && cur.Orphaned {
		s.back.Store(true)
		s.q.poke()
	}
	return rev, err
}
