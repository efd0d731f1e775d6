// Package testlog gives a test a *slog.Logger whose records are shown
// only when the test fails. A server under test logs why it refused or
// withheld something (a push not sent, a request refused); a test that
// fails on the missing effect then says why, without -v noise on every
// passing run and without calling t.Log from a goroutine that may outlive
// the test (which panics).
package testlog

import (
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

// Keep is how many records a logger keeps: the newest, the older ones
// dropped and counted, so a chatty server cannot grow a test's memory.
const Keep = 2000

// New returns a logger at level and below it nothing. Its records are
// kept (the newest Keep) and written with t.Log at the end of the test,
// after the cleanups registered after this call, and only if the test
// failed. Records made after that are dropped. They are slog's text form,
// with the time since New in place of the clock's.
func New(t testing.TB, level slog.Level) *slog.Logger {
	s := &sink{}
	t.Cleanup(func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.closed = true
		if !t.Failed() || len(s.lines) == 0 {
			return
		}
		var b strings.Builder
		if s.dropped > 0 {
			fmt.Fprintf(&b, "(%d older records dropped)\n", s.dropped)
		}
		for i := range s.lines {
			b.WriteString(s.lines[(s.next+i)%len(s.lines)])
		}
		t.Logf("log of the code under test:\n%s", b.String())
	})
	start := time.Now()
	return slog.New(slog.NewTextHandler(s, &slog.HandlerOptions{Level: level, ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey && len(groups) == 0 {
			return slog.String("t", fmt.Sprintf("%.3fs", a.Value.Time().Sub(start).Seconds()))
		}
		return a
	}}))
}

// sink keeps what the handler writes, one record per Write.
type sink struct {
	mu      sync.Mutex
	lines   []string // a ring once full: the oldest at next
	next    int
	dropped int
	closed  bool
}

func (s *sink) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return len(p), nil
	}
	if len(s.lines) < Keep {
		s.lines = append(s.lines, string(p))
		return len(p), nil
	}
	s.lines[s.next] = string(p)
	s.next = (s.next + 1) % Keep
	s.dropped++
	return len(p), nil
}
