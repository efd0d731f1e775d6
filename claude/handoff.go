package claude

import (
	"sync"
	"time"
)

// Answering the CLI's requests on the reading goroutine.
//
// A request from the CLI (a permission, a hook, an MCP message) is
// answered by the goroutine that read it: the CLI is waiting, and handing
// the answer to another goroutine costs it a scheduling delay, which on a
// 2-core VM is most of a permission round trip's overhead. Reading must
// not wait for a slow answer (a person deciding, a slow tool), so a
// watchdog hands reading to a new goroutine once an answer has run for
// handOffAfter. There is only ever one reader.
//
// The watchdog is one timer per session that checks every watchEvery while
// requests come in and disarms itself after idleAfter without one: arming
// a timer per request would wake another thread (the runtime's poller) on
// the path the CLI waits on, each time.

const (
	// handOffAfter is how long an answer may hold up reading.
	handOffAfter = 200 * time.Microsecond
	// watchEvery is how often the watchdog looks: a slow answer holds up
	// reading for at most about handOffAfter + watchEvery.
	watchEvery = time.Millisecond
	// idleAfter disarms the watchdog when no request came for that long.
	idleAfter = 100 * time.Millisecond
)

// handoff is a session's watchdog state.
type handoff struct {
	mu    sync.Mutex
	cur   *answering // the answer running on the reading goroutine, if any
	last  time.Time  // when the latest answer started
	armed bool
	ended bool // reading has ended: never re-armed
	t     *time.Timer
}

// answering is one answer run on the reading goroutine.
type answering struct {
	since time.Time
	n     int64 // lines read when it started: where the next reader goes on
	taken bool  // the watchdog handed reading to a new goroutine
}

// answerReading runs answer on the reading goroutine and reports whether
// this goroutine still holds reading.
func (s *Session) answerReading(n int64, answer func()) (stillReading bool) {
	h := &s.handoff
	a := &answering{since: time.Now(), n: n}
	h.mu.Lock()
	h.cur, h.last = a, a.since
	if !h.armed {
		h.armed = true
		if h.t == nil {
			h.t = time.AfterFunc(watchEvery, s.watchAnswer)
		} else {
			h.t.Reset(watchEvery)
		}
	}
	h.mu.Unlock()

	answer()

	h.mu.Lock()
	defer h.mu.Unlock()
	if h.cur == a {
		h.cur = nil
	}
	return !a.taken
}

// watchAnswer is the watchdog's tick.
func (s *Session) watchAnswer() {
	h := &s.handoff
	h.mu.Lock()
	var next int64 = -1
	if a := h.cur; a != nil && time.Since(a.since) >= handOffAfter {
		a.taken = true
		h.cur = nil
		next = a.n
	}
	if h.ended || (h.cur == nil && time.Since(h.last) > idleAfter) {
		h.armed = false
	} else {
		h.t.Reset(watchEvery)
	}
	h.mu.Unlock()
	if next >= 0 {
		s.readFrom(next)
	}
}

// stopWatch disarms the watchdog for good: reading has ended.
func (s *Session) stopWatch() {
	h := &s.handoff
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.t != nil {
		h.t.Stop()
	}
	h.ended = true
	h.armed = true // answerReading cannot run any more; this keeps it from arming
}
