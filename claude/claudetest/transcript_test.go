package claudetest_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
)

// texts runs two prompts through a session and returns the assistant
// texts and result subtypes it saw.
func texts(t *testing.T, tr claude.Transport) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := claude.Connect(ctx, &claude.Options{Transport: tr})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var got []string
	for _, p := range []string{"one", "two"} {
		if err := s.Send(ctx, p); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Control(ctx, "get_thing", nil); err == nil {
			t.Fatal("want the fake to refuse get_thing")
		}
		for m, err := range s.ReceiveTurn(ctx) {
			if err != nil {
				t.Fatal(err)
			}
			switch m := m.(type) {
			case *claude.AssistantMessage:
				got = append(got, m.Text())
			case *claude.ResultMessage:
				got = append(got, string(m.Subtype))
			}
		}
	}
	return got
}

func TestRecordAndReplay(t *testing.T) {
	rec := &claudetest.Recorder{Transport: &claudetest.FakeCLI{Script: claudetest.Echo}, Replace: map[string]string{"/fake": "$CWD"}}
	want := texts(t, rec)
	tr := rec.Transcript("Guards against nothing: a round trip of the recorder itself.")
	text := string(tr.Format())
	for _, s := range []string{"Guards against nothing", "-- stdio --", `> {"type":"control_request"`, `< {"type":"assistant"`, `"cwd":"$CWD"`} {
		if !strings.Contains(text, s) {
			t.Errorf("transcript lacks %q:\n%s", s, text)
		}
	}
	parsed, err := claudetest.ParseTranscript([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(tr, parsed); diff != "" {
		t.Fatalf("parse(format(t)) != t (-want +got):\n%s", diff)
	}
	got := texts(t, &claudetest.FakeCLI{Script: claudetest.Replay(parsed)})
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("replay differs from the recording (-recorded +replayed):\n%s", diff)
	}
}

// replayError replays a transcript given in its txtar form against a
// session that sends prompt, and returns the error the replay ended with.
func replayError(t *testing.T, transcript, prompt string) error {
	t.Helper()
	tr, err := claudetest.ParseTranscript([]byte(transcript))
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	script := claudetest.Replay(tr)
	fake := &claudetest.FakeCLI{Script: func(ctx context.Context, c *claudetest.CLI) error {
		err := script(ctx, c)
		errc <- err
		return err
	}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := claude.Connect(ctx, &claude.Options{Transport: fake})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.Send(ctx, prompt)
	return <-errc
}

// recordedInit is a transcript's opening: initialize and its answer.
const recordedInit = "-- stdio --\n> {\"type\":\"control_request\",\"request_id\":\"r1\",\"request\":{\"subtype\":\"initialize\"}}\n< {\"type\":\"control_response\",\"response\":{\"subtype\":\"success\",\"request_id\":\"r1\",\"response\":{}}}\n"

func TestReplayReportsDivergence(t *testing.T) {
	err := replayError(t, recordedInit+"> {\"type\":\"control_request\",\"request_id\":\"r2\",\"request\":{\"subtype\":\"set_model\"}}\n", "not what was recorded")
	if err == nil || !strings.Contains(err.Error(), "control_request/set_model") {
		t.Errorf("replay error = %v, want one naming the expected line", err)
	}
}

func TestParseTranscriptErrors(t *testing.T) {
	for _, in := range []string{"no files", "-- stdio --\n? {}\n", "-- stdio --\n> {not json\n"} {
		if _, err := claudetest.ParseTranscript([]byte(in)); err == nil {
			t.Errorf("ParseTranscript(%q) succeeded", in)
		}
	}
}

// A host that writes the right kind of line with the wrong content (a
// different prompt, a different permission answer) diverges too.
func TestReplayComparesPayloads(t *testing.T) {
	err := replayError(t, recordedInit+"> {\"type\":\"user\",\"message\":{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"hello\"}]},\"uuid\":\"11111111-2222-4333-8444-555555555555\"}\n", "bye")
	if err == nil || !strings.Contains(err.Error(), `"text":"hello"`) {
		t.Errorf("replay error = %v, want one showing the recorded prompt", err)
	}
}
