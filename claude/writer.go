package claude

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/tetherhq/tether/internal/wire"
)

// Errors of the session's input.
var (
	// ErrInputBroken is returned by every write after one was cut in the
	// middle of its line (its ctx ended while the CLI was not reading
	// stdin): the rest of that line can never be sent, so nothing after it
	// would parse. Close the session.
	ErrInputBroken = errors.New("claude: the CLI's stdin is broken: a write was cut mid-line when its context ended")

	// ErrInputClosed is returned by writes after CloseInput.
	ErrInputClosed = errors.New("claude: the session's input is closed")
)

// InitializeError reports that the CLI did not answer the initialize
// request in time: Connect's ctx ended, or Options.InitializeTimeout
// passed. The CLI was killed. It matches the context's error
// (context.DeadlineExceeded for the timeout).
type InitializeError struct {
	Timeout time.Duration // Options.InitializeTimeout in force (or its default)
	Stderr  []string      // the last lines the CLI wrote to stderr
	Err     error         // the context's error

	// byCaller: the caller's ctx ended first, not the Timeout bound, so
	// the message does not blame a bound that was never reached.
	byCaller bool
}

func (e *InitializeError) Error() string {
	var b strings.Builder
	if e.byCaller {
		fmt.Fprintf(&b, "claude: the CLI did not answer initialize before the caller's context ended: %v", e.Err)
	} else {
		fmt.Fprintf(&b, "claude: the CLI did not answer initialize (bound %v): %v", e.Timeout, e.Err)
	}
	if len(e.Stderr) > 0 {
		fmt.Fprintf(&b, "; stderr: %s", strings.Join(e.Stderr, "\n"))
	}
	return b.String()
}

func (e *InitializeError) Unwrap() error { return e.Err }

// writeQueue is how many lines may wait for the writer. A caller that finds
// it full waits, under its ctx, like one whose line is queued.
const writeQueue = 64

// Kinds of writeReq.
const (
	lineControl    = iota // a control request or response
	lineUser              // a user message: turn tracking counts it
	lineCloseInput        // not a line: close stdin (CloseInput)
)

// abandonWait is how long a caller whose ctx ended waits for the outcome
// of the write in progress, to report a cut line.
const abandonWait = 100 * time.Millisecond

// A writeReq is one line for the writer, and the caller's wait for it.
type writeReq struct {
	ctx   context.Context
	line  []byte
	kind  int
	state atomic.Int32 // reqQueued → reqTaken by the writer, or → reqAbandoned by the caller
	done  chan error   // 1-buffered: the write's outcome
}

const (
	reqQueued = iota
	reqTaken
	reqAbandoned
)

// writeLine queues line for the writer and waits for it under ctx. It
// returns ctx's error when ctx ends first: if the writer had not taken the
// line yet, it is never written; if it had, the transport ends the write
// (wire.Writer's deadlines) and a line cut mid-way breaks the input.
func (s *Session) writeLine(ctx context.Context, line []byte, kind int) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if s.closing.Load() {
		return ErrClosed
	}
	select {
	case <-s.readDone:
		return s.endedErr()
	default:
	}
	if s.wbroken.Load() {
		return ErrInputBroken
	}
	if s.inClose.Load() {
		return ErrInputClosed
	}
	if kind == lineUser && s.opts.VerbatimPrompts {
		line = clientComposed(line)
	}
	r := &writeReq{ctx: ctx, line: line, kind: kind}
	if err, ok := s.tryWriteNow(r); ok {
		return s.writeOutcome(ctx, err)
	}
	r.done = make(chan error, 1)
	select {
	case s.wq <- r:
	case <-ctx.Done():
		return ctx.Err()
	case <-s.wstop:
		return ErrClosed
	}
	var err error
	select {
	case err = <-r.done:
	case <-ctx.Done():
		if r.state.CompareAndSwap(reqQueued, reqAbandoned) {
			return ctx.Err() // never written
		}
		// The writer has it, and a transport with write deadlines ends it
		// now: wait a moment to tell the caller whether the line was cut.
		// A transport without them finishes it (or fails it on Close).
		t := time.NewTimer(abandonWait)
		defer t.Stop()
		select {
		case err = <-r.done:
			if err == nil {
				return nil
			}
		case <-t.C:
			return ctx.Err()
		}
	case <-s.wdone:
		select {
		case err = <-r.done:
		default:
			if s.closing.Load() {
				return ErrClosed
			}
			return s.endedErr()
		}
	}
	return s.writeOutcome(ctx, err)
}

// tryWriteNow writes r from the caller's goroutine when nothing is queued
// and nobody is writing: the common case, and the one a waiting CLI feels
// (the answer to a permission request), since it skips waking the writer.
// ok is false when r must queue. The pen is held only by the goroutine
// writing, under that write's own ctx, exactly as the writer would hold
// it: a caller that finds it taken queues and waits under its own ctx.
//
// Only a transport whose writes end with their ctx (writesHonourContext)
// takes this path: on any other, the caller must be free to return at its
// deadline while the writer stays blocked.
func (s *Session) tryWriteNow(r *writeReq) (err error, ok bool) {
	if !s.writeNow || len(s.wq) != 0 || !s.pen.TryLock() {
		return nil, false
	}
	defer s.pen.Unlock()
	if len(s.wq) != 0 {
		return nil, false
	}
	select {
	case <-s.wstop:
		return ErrClosed, true
	case <-s.wdone:
		return nil, false // the queued path says why
	default:
	}
	r.state.Store(reqTaken)
	return s.writeOne(r), true
}

// A ctxWriter's Write returns when its ctx ends, whatever the peer does.
type ctxWriter interface{ writesHonourContext() bool }

// writeOutcome turns a write's outcome into writeLine's error.
func (s *Session) writeOutcome(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, ErrInputBroken) || errors.Is(err, ErrInputClosed) {
		return err
	}
	if cerr := ctx.Err(); cerr != nil && errors.Is(err, cerr) {
		return err // ctx's error, or a *wire.PartialWriteError matching it
	}
	if s.closing.Load() {
		return ErrClosed
	}
	// A write fails when the CLI is gone; its exit status and stderr
	// (soon seen by the read loop) say more than "broken pipe".
	t := time.NewTimer(2 * time.Second)
	defer t.Stop()
	select {
	case <-s.readDone:
		return s.endedErr()
	case <-t.C:
	case <-ctx.Done():
	}
	return fmt.Errorf("claude: writing to the CLI: %w", err)
}

// writeLoop is the only writer of the CLI's stdin. It takes the queued
// lines in order, skips those their callers gave up on, and writes each
// under its caller's ctx.
func (s *Session) writeLoop() {
	defer close(s.wdone)
	for {
		var r *writeReq
		select {
		case r = <-s.wq:
		case <-s.wstop:
			return
		case <-s.readDone:
			return // the CLI is gone: nothing more can be written
		}
		if !r.state.CompareAndSwap(reqQueued, reqTaken) {
			continue // abandoned: nothing of it went out
		}
		s.pen.Lock()
		err := s.writeOne(r)
		s.pen.Unlock()
		r.done <- err
	}
}

func (s *Session) writeOne(r *writeReq) error {
	switch {
	case s.wbroken.Load():
		return ErrInputBroken
	case s.inClose.Load():
		return ErrInputClosed
	}
	if r.kind == lineCloseInput {
		s.inClose.Store(true)
		return s.conn.(InputCloser).CloseInput()
	}
	if r.kind == lineUser {
		// Counted before the write: the CLI may start the turn (and we
		// read its init) before Write returns.
		s.turn.sent()
	}
	err := s.conn.Write(r.ctx, r.line)
	var pe *wire.PartialWriteError
	if r.kind == lineUser && err != nil && !errors.As(err, &pe) {
		s.turn.unsent() // nothing went out (a cut prompt may start a turn, for all we know)
	}
	if err != nil {
		if errors.As(err, &pe) {
			s.wbroken.Store(true)
			s.log.Error("claude: a write was cut mid-line; the CLI's stdin is unusable", "written", pe.Written, "len", pe.Len, "err", pe.Err)
			return fmt.Errorf("claude: writing to the CLI: %w (the session's input is now broken: %w)", pe.Err, ErrInputBroken)
		}
	}
	return err
}
