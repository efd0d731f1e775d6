package safelog_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/tetherhq/tether/internal/safelog"
)

type panicky struct{ slog.Handler }

func (panicky) Enabled(context.Context, slog.Level) bool  { return true }
func (panicky) Handle(context.Context, slog.Record) error { panic("handler panics") }
func (p panicky) WithAttrs([]slog.Attr) slog.Handler      { panic("WithAttrs panics") }
func (p panicky) WithGroup(string) slog.Handler           { panic("WithGroup panics") }

// A handler that panics loses its records, never the process.
func TestPanickingHandler(t *testing.T) {
	l := safelog.New(slog.New(panicky{}))
	l.Info("x", "k", 1)
	l.With("a", 1).WithGroup("g").Error("y")
	if safelog.New(l) != l {
		t.Error("wrapping twice")
	}
}

func TestPassesThrough(t *testing.T) {
	var buf bytes.Buffer
	l := safelog.New(slog.New(slog.NewTextHandler(&buf, nil)))
	l.With("a", 1).Info("hello")
	if !strings.Contains(buf.String(), "msg=hello a=1") {
		t.Errorf("logged %q", buf.String())
	}
	safelog.New(nil).Info("discarded")
}
