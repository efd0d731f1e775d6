package host_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
	"github.com/tetherhq/tether/host"
)

// The host layer's real-CLI suite: each scenario drives a host.Session
// against the real CLI (TETHER_CLI_VERSION, default 2.1.197) and its fake
// Messages API, and checks the exact sequence of liveness states a UI
// would show. Scenarios that set record keep a transcript (rewritten with
// -update from the default version) that TestTranscriptReplay plays back
// through the fake CLI with the same assertions.

type scenario struct {
	name   string
	guards string
	record bool
	api    func() *claudetest.MessagesOptions
	opts   func(o *host.Options)
	run    func(t *testing.T, h *harness)
}

type harness struct {
	Ctx    context.Context
	S      *host.Session
	API    *claudetest.MessagesServer // nil when replaying
	CLI    *claudetest.RealCLI        // nil when replaying
	states *stateLog
}

func (h *harness) Real() bool { return h.API != nil }

// stateLog records every transition of a session.
type stateLog struct {
	mu     sync.Mutex
	states []host.Liveness
	cond   chan struct{} // closed and replaced on each change
	done   chan struct{}
}

func watchStates(ctx context.Context, s *host.Session) *stateLog {
	l := &stateLog{cond: make(chan struct{}), done: make(chan struct{})}
	seq := s.Watch(ctx) // registered now: nothing after Start is missed
	go func() {
		defer close(l.done)
		for v := range seq {
			l.mu.Lock()
			l.states = append(l.states, v)
			close(l.cond)
			l.cond = make(chan struct{})
			l.mu.Unlock()
		}
	}()
	return l
}

// strings returns the states so far, rendered.
func (l *stateLog) strings() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]string, len(l.states))
	for i, s := range l.states {
		out[i] = s.String()
		if s.Missed > 0 {
			out[i] += fmt.Sprintf(" (missed %d)", s.Missed)
		}
	}
	return out
}

// waitFor waits until a transition satisfies ok and returns it.
func (l *stateLog) waitFor(t *testing.T, ctx context.Context, what string, ok func(host.Liveness) bool) host.Liveness {
	t.Helper()
	seen := 0
	for {
		l.mu.Lock()
		for ; seen < len(l.states); seen++ {
			if ok(l.states[seen]) {
				v := l.states[seen]
				l.mu.Unlock()
				return v
			}
		}
		c := l.cond
		l.mu.Unlock()
		select {
		case <-c:
		case <-l.done:
			t.Fatalf("session ended waiting for %s; states %q", what, l.strings())
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s; states %q", what, l.strings())
		}
	}
}

func (l *stateLog) waitState(t *testing.T, ctx context.Context, st host.State) host.Liveness {
	t.Helper()
	return l.waitFor(t, ctx, st.String(), func(v host.Liveness) bool { return v.State == st })
}

// wantStates fails unless the sequence so far is exactly want.
func (h *harness) wantStates(t *testing.T, want ...string) {
	t.Helper()
	if diff := cmp.Diff(want, h.states.strings()); diff != "" {
		t.Errorf("state sequence (-want +got):\n%s", diff)
	}
}

// turn sends prompt and waits for the turn to end (idle or error).
func (h *harness) turn(t *testing.T, prompt string) *host.Delivery {
	t.Helper()
	d, err := h.S.Send(h.Ctx, prompt)
	if err != nil {
		t.Fatalf("Send: %v", err)
	}
	if _, err := d.Wait(h.Ctx); err != nil && h.Real() {
		t.Logf("turn ended with %v", err)
	}
	return d
}

var (
	scenariosMu sync.Mutex
	scenarios   []scenario
)

func addScenarios(ss ...scenario) {
	scenariosMu.Lock()
	defer scenariosMu.Unlock()
	scenarios = append(scenarios, ss...)
}

func transcriptPath(name string) string {
	return filepath.Join("testdata", "transcripts", name+".txtar")
}

func TestRealCLI(t *testing.T) {
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			runReal(t, sc)
		})
	}
}

func runReal(t *testing.T, sc scenario) {
	var apiOpts *claudetest.MessagesOptions
	if sc.api != nil {
		apiOpts = sc.api()
	}
	run := claudetest.NewRealRun(t, apiOpts)
	co := run.Options
	if !sc.record {
		co.Transport = nil // nothing to keep: run the CLI directly
	}
	// A recorded scenario's host declares no PerTaskStopAffordance: a
	// replay matches the host's initialize request to the transcript's,
	// and the CLI's version, which decides whether the host declares it,
	// is not known through a Recorder. No recorded scenario has a
	// background task.
	o := &host.Options{CLI: co, InterruptStopsTasks: sc.record}
	if sc.opts != nil {
		sc.opts(o)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	s, err := host.Start(ctx, o)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	h := &harness{Ctx: ctx, S: s, API: run.API, CLI: run.CLI, states: watchStates(ctx, s)}
	defer func() {
		s.Close()
		<-h.states.done
	}()
	sc.run(t, h)
	s.Close()
	if sc.api != nil {
		run.CheckScripted(t)
	}
	if *update && sc.record {
		run.SaveTranscript(t, transcriptPath(sc.name), fmt.Sprintf("%s\n\nRe-record: go test ./host -run TestRealCLI/%s -update",
			strings.TrimSpace(sc.guards), sc.name))
	}
}

// TestTranscriptReplay replays every recorded scenario through the fake
// CLI with the scenario's own assertions.
func TestTranscriptReplay(t *testing.T) {
	n := 0
	for _, sc := range scenarios {
		if !sc.record {
			continue
		}
		n++
		t.Run(sc.name, func(t *testing.T) {
			tr, err := claudetest.ReadTranscript(transcriptPath(sc.name))
			if err != nil {
				t.Fatalf("%v (record it: go test ./host -run TestRealCLI/%s -update)", err, sc.name)
			}
			o := &host.Options{CLI: &claude.Options{}, InterruptStopsTasks: true} // as recorded (runReal)
			if sc.opts != nil {
				sc.opts(o)
			}
			o.CLI.Transport = &claudetest.FakeCLI{Script: claudetest.Replay(tr)}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			s, err := host.Start(ctx, o)
			if err != nil {
				t.Fatalf("Start: %v", err)
			}
			h := &harness{Ctx: ctx, S: s, states: watchStates(ctx, s)}
			defer func() { s.Close(); <-h.states.done }()
			sc.run(t, h)
		})
	}
	if n == 0 {
		t.Fatal("no recorded scenarios")
	}
}
