package claude_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/internal/wire"
)

var update = flag.Bool("update", false, "rewrite golden files and re-record transcripts")

// describe renders a decoded message for golden files: its Go type, the
// types of nested union values, and its fields as JSON.
func describe(m claude.Message) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%T", m)
	switch m := m.(type) {
	case *claude.StreamEvent:
		fmt.Fprintf(&b, " event=%T", m.Event)
		switch e := m.Event.(type) {
		case *claude.ContentBlockDeltaEvent:
			fmt.Fprintf(&b, " delta=%T", e.Delta)
		case *claude.ContentBlockStartEvent:
			fmt.Fprintf(&b, " block=%T", e.ContentBlock)
		}
	case *claude.AssistantMessage:
		for _, c := range m.Message.Content {
			fmt.Fprintf(&b, " block=%T", c)
		}
	case *claude.UserMessage:
		for _, c := range m.Content {
			fmt.Fprintf(&b, " block=%T", c)
		}
	}
	j, err := json.Marshal(m)
	if err != nil {
		j = []byte("marshal error: " + err.Error())
	}
	fmt.Fprintf(&b, "\n  %s", j)
	return b.String()
}

// TestDecodeGolden decodes one line of every type and subtype the CLI was
// seen to write (and some it may write one day) and compares the typed
// result with testdata/decode/lines.golden. It guards against a field
// silently going missing when a type is refactored.
func TestDecodeGolden(t *testing.T) {
	in, err := os.ReadFile(filepath.Join("testdata", "decode", "lines.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var got strings.Builder
	for i, line := range bytes.Split(bytes.TrimSpace(in), []byte("\n")) {
		m, err := claude.DecodeMessage(line)
		if err != nil {
			fmt.Fprintf(&got, "%d: error: %v\n", i+1, err)
			continue
		}
		if !bytes.Equal(m.RawJSON(), line) {
			t.Errorf("line %d: RawJSON is not the line", i+1)
		}
		fmt.Fprintf(&got, "%d: %s\n", i+1, describe(m))
	}
	golden := filepath.Join("testdata", "decode", "lines.golden")
	if *update {
		if err := os.WriteFile(golden, []byte(got.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -run TestDecodeGolden -update)", err)
	}
	if diff := cmp.Diff(string(want), got.String()); diff != "" {
		t.Errorf("decoded lines differ from %s (-want +got):\n%s", golden, diff)
	}
}

func TestDecodeErrors(t *testing.T) {
	for _, line := range []string{`not json`, `[1,2]`, `"str"`, `{"type":"assistant","message":`, `{"type":"user","message":{"role":"user","content":[{"type":"text","text":"x"}`} {
		if m, err := claude.DecodeMessage([]byte(line)); err == nil {
			t.Errorf("DecodeMessage(%q) = %T, want an error", line, m)
		}
	}
}

// A known type whose fields changed shape must not fail the stream: it is
// kept as unknown, with its raw line.
func TestDecodeChangedShapeIsUnknown(t *testing.T) {
	for _, line := range []string{
		`{"type":"result","subtype":"success","is_error":"maybe","uuid":"u"}`,
		`{"type":"rate_limit_event","rate_limit_info":[1,2],"uuid":"u"}`,
	} {
		m, err := claude.DecodeMessage([]byte(line))
		if err != nil {
			t.Fatalf("DecodeMessage(%s): %v", line, err)
		}
		u, ok := m.(*claude.UnknownMessage)
		if !ok || u.UUID != "u" || string(u.Raw) != line {
			t.Errorf("DecodeMessage(%s) = %#v, want an *UnknownMessage keeping the line", line, m)
		}
	}
}

func TestUserMessageWire(t *testing.T) {
	m := claude.NewUserMessage("what is this", claude.NewImageBlock("image/png", []byte{1, 2, 3}), claude.NewDocumentBlock("text/plain", []byte("notes")))
	m.UUID = "host-uuid-1"
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"type":"user","message":{"role":"user","content":[{"type":"text","text":"what is this"},` +
		`{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AQID"}},` +
		`{"type":"document","source":{"type":"text","media_type":"text/plain","data":"notes"}}]},` +
		`"parent_tool_use_id":null,"session_id":"","uuid":"host-uuid-1"}`
	if string(b) != want {
		t.Errorf("wire form:\n got %s\nwant %s", b, want)
	}
	back, err := claude.DecodeMessage(b)
	if err != nil {
		t.Fatal(err)
	}
	u := back.(*claude.UserMessage)
	if u.UUID != "host-uuid-1" || u.Text() != "what is this" || len(u.Content) != 3 {
		t.Errorf("round trip = %+v", u)
	}
}

func TestToolUseResults(t *testing.T) {
	ok, _ := claude.DecodeMessage([]byte(`{"type":"user","message":{"role":"user","content":[{"tool_use_id":"t","type":"tool_result","content":"hi"}]},"tool_use_result":{"stdout":"hi","stderr":"","interrupted":false}}`))
	r, err := claude.DecodeToolUseResult[claude.BashResult](ok.(*claude.UserMessage))
	if err != nil || r.Stdout != "hi" {
		t.Errorf("DecodeToolUseResult = %+v, %v", r, err)
	}
	if txt := ok.(*claude.UserMessage).ToolResults()[0].Text(); txt != "hi" {
		t.Errorf("ToolResultBlock.Text = %q", txt)
	}
	failed, _ := claude.DecodeMessage([]byte(`{"type":"user","message":{"role":"user","content":[{"tool_use_id":"t","type":"tool_result","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}],"is_error":true}]},"tool_use_result":"Error: no such file"}`))
	_, err = claude.DecodeToolUseResult[claude.BashResult](failed.(*claude.UserMessage))
	var te *claude.ToolUseError
	if !errors.As(err, &te) || te.Message != "Error: no such file" {
		t.Errorf("error result = %v", err)
	}
	if txt := failed.(*claude.UserMessage).ToolResults()[0].Text(); txt != "a\nb" {
		t.Errorf("block-array Text = %q", txt)
	}
	plain, _ := claude.DecodeMessage([]byte(`{"type":"user","message":{"role":"user","content":"hi"}}`))
	if _, err := claude.DecodeToolUseResult[claude.BashResult](plain.(*claude.UserMessage)); !errors.Is(err, claude.ErrNoToolUseResult) {
		t.Errorf("no result: %v", err)
	}
}

// TestToolUseResultWholeNumbers: a number the CLI computed with a
// fraction (CLI 2.1.337's nextFireAt, Unix milliseconds) where the
// result's type holds an integer is rounded; one out of range, or a
// value that is no number, still fails, naming the member.
func TestToolUseResultWholeNumbers(t *testing.T) {
	result := func(v string) *claude.UserMessage {
		t.Helper()
		m, err := claude.DecodeMessage([]byte(`{"type":"user","message":{"role":"user","content":[{"tool_use_id":"t","type":"tool_result","content":"ok"}]},"tool_use_result":` + v + `}`))
		if err != nil {
			t.Fatal(err)
		}
		return m.(*claude.UserMessage)
	}
	cc, err := claude.DecodeToolUseResult[claude.CronCreateResult](result(`{"id":"j1","humanSchedule":"Every Monday at 9:00 AM","recurring":true,"nextFireAt":1796634390349.6116,"maxAgeMs":2e3}`))
	if err != nil || cc.ID != "j1" || cc.NextFireAt != 1796634390350 || cc.MaxAgeMS != 2000 {
		t.Errorf("CronCreate = %+v, %v", cc, err)
	}
	cl, err := claude.DecodeToolUseResult[claude.CronListResult](result(`{"jobs":[{"id":"j1","cron":"0 9 * * 1","humanSchedule":"h","prompt":"p","nextFireAt":-1.4}]}`))
	if err != nil || len(cl.Jobs) != 1 || cl.Jobs[0].NextFireAt != -1 {
		t.Errorf("CronList = %+v, %v", cl, err)
	}
	for _, bad := range []string{`1e300`, `"soon"`, `true`, `99999999999999999999`} {
		_, err := claude.DecodeToolUseResult[claude.CronCreateResult](result(`{"id":"j1","humanSchedule":"h","recurring":true,"nextFireAt":` + bad + `}`))
		if err == nil || !strings.Contains(err.Error(), "nextFireAt") {
			t.Errorf("nextFireAt %s: %v, want an error naming it", bad, err)
		}
	}
	if cc, err := claude.DecodeToolUseResult[claude.CronCreateResult](result(`{"id":"j1","humanSchedule":"h","recurring":true,"nextFireAt":null}`)); err != nil || cc.NextFireAt != 0 {
		t.Errorf("nextFireAt null: %+v, %v", cc, err)
	}
}

// TestMessagesWholeNumbers: a number with a fraction where a message's
// type holds an integer (CLI 2.1.337 wrote such numbers in tool results)
// is rounded on every message the read loop decodes, not turned into an
// UnknownMessage: a result that became unknown would leave a turn
// without its end.
func TestMessagesWholeNumbers(t *testing.T) {
	decode := func(line string) claude.Message {
		t.Helper()
		m, err := claude.DecodeMessage([]byte(line))
		if err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		return m
	}
	r, ok := decode(`{"type":"result","subtype":"success","is_error":false,"duration_ms":1234.6,"duration_api_ms":1e3,"num_turns":2.0,"result":"ok","session_id":"s","total_cost_usd":0.5,"usage":{"input_tokens":3.2,"output_tokens":7}}`).(*claude.ResultMessage)
	if !ok || r.DurationMS != 1235 || r.DurationAPIMS != 1000 || r.NumTurns != 2 || r.Result != "ok" || r.Usage.InputTokens != 3 || r.Usage.OutputTokens != 7 {
		t.Errorf("result = %#v", r)
	}
	a, ok := decode(`{"type":"assistant","message":{"id":"m","type":"message","role":"assistant","model":"x","content":[{"type":"text","text":"hi"}],"usage":{"input_tokens":1,"output_tokens":2.5}},"session_id":"s"}`).(*claude.AssistantMessage)
	if !ok || a.Message.Usage == nil || a.Message.Usage.OutputTokens != 3 || len(a.Message.Content) != 1 {
		t.Errorf("assistant = %#v", a)
	}
	e, ok := decode(`{"type":"stream_event","event":{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":9.4}},"session_id":"s"}`).(*claude.StreamEvent)
	if !ok {
		t.Fatalf("message_delta = %#v", e)
	}
	if d, _ := e.Event.(*claude.MessageDeltaEvent); d == nil || d.StopReason != "end_turn" || d.Usage == nil || d.Usage.OutputTokens != 9 {
		t.Errorf("message_delta = %#v", e)
	}
	p, ok := decode(`{"type":"system","subtype":"task_progress","task_id":"t","description":"d","usage":{"total_tokens":10.5,"tool_uses":1,"duration_ms":99.9},"session_id":"s"}`).(*claude.TaskProgressMessage)
	if !ok || p.Usage.TotalTokens != 11 || p.Usage.DurationMS != 100 {
		t.Errorf("task_progress = %#v", p)
	}
	// What no rounding mends still makes the message unknown, its line kept.
	for _, bad := range []string{`"soon"`, `1e300`} {
		line := `{"type":"result","subtype":"success","is_error":false,"duration_ms":` + bad + `,"num_turns":1,"session_id":"s"}`
		if u, ok := decode(line).(*claude.UnknownMessage); !ok || string(u.Raw) != line {
			t.Errorf("duration_ms %s: %#v, want an UnknownMessage", bad, u)
		}
	}
}

// FuzzDecode feeds arbitrary stdout through the line reader and the
// decoder: neither may panic, a decoded message keeps its line, a line
// that fails to decode is reported, never fatal to the lines after it, and
// the decode plans decode every line exactly as the general decoder does
// (checkPlanned).
func FuzzDecode(f *testing.F) {
	in, err := os.ReadFile(filepath.Join("testdata", "decode", "lines.jsonl"))
	if err != nil {
		f.Fatal(err)
	}
	for _, line := range bytes.Split(in, []byte("\n")) {
		f.Add(line)
	}
	for _, line := range realMixLines() {
		f.Add(line)
	}
	f.Add([]byte("{\"type\":\"system\",\"subtype\":\"init\"}\n\n\r\n{\"type\":\"x\"}"))
	f.Add([]byte(`{"type":"stream_event","event":{"type":"content_block_delta","delta":null}}`))
	f.Add([]byte(`{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a\"b\\c\u00e9"}},"uuid":"u"}`))
	f.Add([]byte(`{"type":"stream_event","event":{"type":"content_block_start","content_block":7}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r := wire.NewReader(bufio.NewReader(bytes.NewReader(data)), 4096)
		for {
			line, err := r.ReadLine()
			if errors.Is(err, wire.ErrLineTooLong) {
				continue
			}
			if err != nil {
				return
			}
			checkPlanned(t, line)
			m, err := claude.DecodeMessage(line)
			if err != nil {
				continue
			}
			if !bytes.Equal(m.RawJSON(), line) {
				t.Fatalf("RawJSON differs from the line %q", line)
			}
			if _, err := json.Marshal(m); err != nil {
				t.Fatalf("decoded %T does not encode: %v", m, err)
			}
		}
	})
}
