// Package testlog gives a test a *slog.Logger whose records are shown
// only when the test fails. A server under test logs why it refused or
// withheld something (a push not sent, a request refused); a test that
// fails on the missing effect then says why, without -v noise on every
// passing run and without calling t.Log from a goroutine that may outlive
// the test (which panics).
package testlog

import (
	"context"
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
// failed. Records made after that are dropped.
func New(t testing.TB, level slog.Level) *slog.Logger {
	s := &sink{start: time.Now()}
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
			b.WriteByte('\n')
		}
		t.Logf("log of the code under test:\n%s", b.String())
	})
	return slog.New(&handler{s: s, level: level})
}

type sink struct {
	start   time.Time
	mu      sync.Mutex
	lines   []string // a ring once full: the oldest at next
	next    int
	dropped int
	closed  bool
}

func (s *sink) add(line string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	if len(s.lines) < Keep {
		s.lines = append(s.lines, line)
		return
	}
	s.lines[s.next] = line
	s.next = (s.next + 1) % Keep
	s.dropped++
}

type handler struct {
	s     *sink
	level slog.Level
	attrs []slog.Attr
	group string
}

func (h *handler) Enabled(_ context.Context, l slog.Level) bool { return l >= h.level }

func (h *handler) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%8.3fs %-5s %s", r.Time.Sub(h.s.start).Seconds(), r.Level, r.Message)
	for _, a := range h.attrs {
		fmt.Fprintf(&b, " %s", a)
	}
	r.Attrs(func(a slog.Attr) bool {
		if h.group != "" {
			a.Key = h.group + "." + a.Key
		}
		fmt.Fprintf(&b, " %s", a)
		return true
	})
	h.s.add(b.String())
	return nil
}

func (h *handler) WithAttrs(as []slog.Attr) slog.Handler {
	c := *h
	c.attrs = append([]slog.Attr(nil), h.attrs...)
	for _, a := range as {
		if h.group != "" {
			a.Key = h.group + "." + a.Key
		}
		c.attrs = append(c.attrs, a)
	}
	return &c
}

func (h *handler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	c := *h
	c.group = strings.TrimPrefix(h.group+"."+name, ".")
	return &c
}
