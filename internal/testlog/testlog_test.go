package testlog_test

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/tetherhq/tether/internal/testlog"
)

// fakeT records what the logger's cleanup writes and whether the test
// "failed".
type fakeT struct {
	testing.TB
	failed   bool
	cleanups []func()
	logs     []string
}

func (f *fakeT) Cleanup(fn func())            { f.cleanups = append(f.cleanups, fn) }
func (f *fakeT) Failed() bool                 { return f.failed }
func (f *fakeT) Logf(format string, a ...any) { f.logs = append(f.logs, fmt.Sprintf(format, a...)) }
func (f *fakeT) Helper()                      {}
func (f *fakeT) end() {
	for i := len(f.cleanups) - 1; i >= 0; i-- {
		f.cleanups[i]()
	}
}

func TestShownOnlyOnFailure(t *testing.T) {
	for _, failed := range []bool{false, true} {
		ft := &fakeT{TB: t, failed: failed}
		l := testlog.New(ft, slog.LevelInfo)
		l.Debug("below the level")
		l.With("sid", "s1").WithGroup("push").Info("withheld", "event", "approval")
		ft.end()
		l.Info("after the end") // dropped, no panic
		if !failed {
			if len(ft.logs) != 0 {
				t.Fatalf("a passing test logged: %q", ft.logs)
			}
			continue
		}
		if len(ft.logs) != 1 {
			t.Fatalf("logs: %q", ft.logs)
		}
		got := ft.logs[0]
		for _, want := range []string{"level=INFO msg=withheld sid=s1 push.event=approval"} {
			if !strings.Contains(got, want) {
				t.Errorf("missing %q in %q", want, got)
			}
		}
		for _, not := range []string{"below the level", "after the end"} {
			if strings.Contains(got, not) {
				t.Errorf("%q in %q", not, got)
			}
		}
	}
}

func TestKeepsTheNewest(t *testing.T) {
	ft := &fakeT{TB: t, failed: true}
	l := testlog.New(ft, slog.LevelInfo)
	for i := range testlog.Keep + 5 {
		l.Info(fmt.Sprintf("r%d", i))
	}
	ft.end()
	got := ft.logs[0]
	if !strings.Contains(got, "(5 older records dropped)") {
		t.Fatalf("no count of the dropped: %.200q", got)
	}
	lines := strings.Split(strings.TrimSpace(got), "\n")
	first, last := lines[2], lines[len(lines)-1]
	if !strings.HasSuffix(first, " msg=r5") || !strings.HasSuffix(last, fmt.Sprintf(" msg=r%d", testlog.Keep+4)) {
		t.Fatalf("first %q, last %q", first, last)
	}
}
