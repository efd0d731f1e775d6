// Package safelog wraps a user's *slog.Logger so that a panicking
// slog.Handler cannot crash the host: Tether logs from its own goroutines
// (read loops, callbacks' recover paths), where nothing else would catch
// the panic.
package safelog

import (
	"context"
	"log/slog"
)

// New returns a logger that writes through l's handler and drops any
// record whose handling panics. nil gives a logger that discards
// everything.
func New(l *slog.Logger) *slog.Logger {
	if l == nil {
		return slog.New(slog.DiscardHandler)
	}
	if _, ok := l.Handler().(handler); ok {
		return l
	}
	return slog.New(handler{l.Handler()})
}

type handler struct{ h slog.Handler }

func (h handler) Enabled(ctx context.Context, level slog.Level) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	return h.h.Enabled(ctx, level)
}

func (h handler) Handle(ctx context.Context, r slog.Record) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = nil // nowhere to report it: the logger is what failed
		}
	}()
	return h.h.Handle(ctx, r)
}

func (h handler) WithAttrs(attrs []slog.Attr) (out slog.Handler) {
	defer func() {
		if recover() != nil {
			out = h
		}
	}()
	return handler{h.h.WithAttrs(attrs)}
}

func (h handler) WithGroup(name string) (out slog.Handler) {
	defer func() {
		if recover() != nil {
			out = h
		}
	}()
	return handler{h.h.WithGroup(name)}
}
