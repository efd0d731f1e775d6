package claude_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
)

// The real-CLI suite: every scenario runs through Tether's public API
// against the real Claude Code CLI (TETHER_CLI_VERSION, default 2.1.197)
// pointed at claudetest's fake Messages API. Scenarios that set record
// also keep a transcript of the run in testdata/transcripts (rewritten
// with -update, from the default CLI version), and TestTranscriptReplay
// plays each one back through the fake CLI: the same assertions, without
// the CLI, in milliseconds.
//
// Without the CLI the suite skips, saying how to install it; under CI=true
// it fails instead.

// scenario is one real-CLI test.
type scenario struct {
	name string
	// guards says what the scenario guards against; it heads the
	// transcript.
	guards string
	// record keeps a transcript for TestTranscriptReplay. Leave it off
	// for scenarios whose outcome depends on the process itself (killing
	// it, resuming from its session files).
	record bool
	// api scripts the fake Messages API (nil: every request gets "ok").
	api func() *claudetest.MessagesOptions
	// opts adjusts the session options.
	opts func(o *claude.Options)
	// run drives the session and asserts what the user sees, and (when
	// h.API is set, i.e. against the real CLI) what the CLI sent.
	run func(t *testing.T, h *harness)
}

// harness is what a scenario's run gets.
type harness struct {
	Ctx  context.Context
	S    *claude.Session
	Opts *claude.Options
	// API is the fake Messages API; nil when replaying a transcript.
	API *claudetest.MessagesServer
	// CLI is the real CLI's setup; nil when replaying.
	CLI *claudetest.RealCLI
}

// Real reports whether the scenario runs against the real CLI.
func (h *harness) Real() bool { return h.API != nil }

// scenarios is filled by the realcli_*_test.go files' init functions.
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
	o := run.Options
	if sc.opts != nil {
		sc.opts(o)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	s, err := claude.Connect(ctx, o)
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	defer s.Close()
	sc.run(t, &harness{Ctx: ctx, S: s, Opts: o, API: run.API, CLI: run.CLI})
	s.Close()
	if sc.api != nil {
		run.CheckScripted(t)
	}
	if *update && sc.record {
		run.SaveTranscript(t, transcriptPath(sc.name), fmt.Sprintf("%s\n\nRe-record: go test ./claude -run TestRealCLI/%s -update",
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
		t.Run(sc.name, func(t *testing.T) {
			tr, err := claudetest.ReadTranscript(transcriptPath(sc.name))
			if err != nil {
				t.Fatalf("%v (record it: go test ./claude -run TestRealCLI/%s -update)", err, sc.name)
			}
			o := &claude.Options{}
			if sc.opts != nil {
				sc.opts(o)
			}
			o.Transport = &claudetest.FakeCLI{Script: claudetest.Replay(tr)}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			s, err := claude.Connect(ctx, o)
			if err != nil {
				t.Fatalf("Connect: %v", err)
			}
			defer s.Close()
			sc.run(t, &harness{Ctx: ctx, S: s, Opts: o})
		})
		n++
	}
	if n == 0 {
		t.Fatal("no recorded scenarios")
	}
}

// Helpers for scenarios.

// turn sends prompt and collects the turn's messages; errors other than a
// result's *ResultError fail the test.
func (h *harness) turn(t *testing.T, prompt string) []claude.Message {
	t.Helper()
	if err := h.S.Send(h.Ctx, prompt); err != nil {
		t.Fatalf("Send: %v", err)
	}
	return h.receiveTurn(t)
}

func (h *harness) receiveTurn(t *testing.T) []claude.Message {
	t.Helper()
	var msgs []claude.Message
	for m, err := range h.S.ReceiveTurn(h.Ctx) {
		var re *claude.ResultError
		if err != nil && !errors.As(err, &re) {
			t.Fatalf("ReceiveTurn: %v (after %v)", err, types(msgs))
		}
		if m != nil {
			msgs = append(msgs, m)
		}
	}
	return msgs
}

// find returns the messages of type T.
func find[T claude.Message](msgs []claude.Message) []T {
	var out []T
	for _, m := range msgs {
		if v, ok := m.(T); ok {
			out = append(out, v)
		}
	}
	return out
}

// result returns the turn's result, failing if there is none.
func result(t *testing.T, msgs []claude.Message) *claude.ResultMessage {
	t.Helper()
	rs := find[*claude.ResultMessage](msgs)
	if len(rs) != 1 {
		t.Fatalf("want one result, got %d in %v", len(rs), types(msgs))
	}
	return rs[0]
}

// assistantText joins the text of the turn's assistant messages.
func assistantText(msgs []claude.Message) string {
	var b strings.Builder
	for _, a := range find[*claude.AssistantMessage](msgs) {
		b.WriteString(a.Text())
	}
	return b.String()
}

// hasType reports whether msgs hold a message of T.
func hasType[T claude.Message](msgs []claude.Message) bool { return len(find[T](msgs)) > 0 }

// wantTypesInOrder fails unless want appears in msgs' types as a
// subsequence.
func wantTypesInOrder(t *testing.T, msgs []claude.Message, want ...string) {
	t.Helper()
	got := types(msgs)
	i := 0
	for _, g := range got {
		if i < len(want) && g == want[i] {
			i++
		}
	}
	if i < len(want) {
		t.Errorf("messages %v lack %v in order", got, want)
	}
}

// toolResult returns the user message carrying the result of tool use id,
// and the result block.
func toolResult(t *testing.T, msgs []claude.Message, id string) (*claude.UserMessage, *claude.ToolResultBlock) {
	t.Helper()
	for _, u := range find[*claude.UserMessage](msgs) {
		for _, tr := range u.ToolResults() {
			if tr.ToolUseID == id {
				return u, tr
			}
		}
	}
	t.Fatalf("no tool result for %s in %v", id, types(msgs))
	return nil, nil
}
