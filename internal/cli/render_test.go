package cli

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/host"
)

// feed decodes CLI lines and renders them, as the run loop does.
func feed(t *testing.T, r *renderer, lines ...string) {
	t.Helper()
	for _, l := range lines {
		m, err := claude.DecodeMessage([]byte(l))
		if err != nil {
			t.Fatalf("%s: %v", l, err)
		}
		r.message(m)
	}
}

// A streamed main thread, then a subagent's messages (which do not
// stream) indented under the Agent call, and a long tool result cut.
func TestRenderStreamAndSubagent(t *testing.T) {
	var out bytes.Buffer
	r := newRenderer(&out, false, false, thinkingCollapsed, nil)
	long := strings.Repeat(`line\n`, 10)
	feed(t, r,
		`{"type":"stream_event","event":{"type":"message_start","message":{"id":"msg_1","content":[]}}}`,
		`{"type":"stream_event","event":{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}}`,
		`{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"secret plan"}}}`,
		`{"type":"stream_event","event":{"type":"content_block_stop","index":0}}`,
		`{"type":"assistant","message":{"id":"msg_1","content":[{"type":"thinking","thinking":"secret plan","signature":"s"}]}}`,
		`{"type":"stream_event","event":{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}}`,
		`{"type":"stream_event","event":{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Asking "}}}`,
		`{"type":"stream_event","event":{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"a helper."}}}`,
		`{"type":"stream_event","event":{"type":"content_block_stop","index":1}}`,
		`{"type":"assistant","message":{"id":"msg_1","content":[{"type":"text","text":"Asking a helper."}]}}`,
		`{"type":"stream_event","event":{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_a","name":"Agent","input":{}}}}`,
		`{"type":"stream_event","event":{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"prompt\":"}}}`,
		`{"type":"stream_event","event":{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"\"look\"}"}}}`,
		`{"type":"stream_event","event":{"type":"content_block_stop","index":2}}`,
		`{"type":"assistant","message":{"id":"msg_1","content":[{"type":"tool_use","id":"toolu_a","name":"Agent","input":{"prompt":"look"}}]}}`,
		`{"type":"user","parent_tool_use_id":"toolu_a","message":{"role":"user","content":[{"type":"text","text":"look"}]}}`,
		`{"type":"assistant","parent_tool_use_id":"toolu_a","message":{"id":"msg_2","content":[{"type":"tool_use","id":"toolu_g","name":"Grep","input":{"pattern":"x"}}]}}`,
		`{"type":"user","parent_tool_use_id":"toolu_a","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_g","content":"`+long+`"}]}}`,
		`{"type":"assistant","parent_tool_use_id":"toolu_a","message":{"id":"msg_3","content":[{"type":"text","text":"Found it."}]}}`,
		`{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_a","content":"Found it."}]}}`,
	)
	want := `✻ thought for 11 characters (--thinking full shows them)
Asking a helper.
⏺ Agent {"prompt":"look"}
    │ ⏺ Grep {"pattern":"x"}
    │   ⎿ line
    │     line
    │     line
    │     line
    │     line
    │     line
    │     … 4 more lines
    │ Found it.
  ⎿ Found it.
`
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("screen (-want +got):\n%s", diff)
	}
}

func TestAnswerParsing(t *testing.T) {
	for _, c := range []struct {
		line  string
		multi bool
		want  string
	}{
		{"2", false, "B"},
		{"1,3", true, "A, C"},
		{"1 3", true, "A, C"},
		{"1,3", false, "1,3"}, // one choice only: taken as free text
		{"9", false, "9"},
		{"my own", false, "my own"},
	} {
		hq := hostQuestion(c.multi, "A", "B", "C")
		if got := pickOptions(hq, c.line); got != c.want {
			t.Errorf("pickOptions(%q, multi=%v) = %q, want %q", c.line, c.multi, got, c.want)
		}
	}
}

// A form's field typed in the terminal: a choice by number or label, yes
// or no, whole numbers and numbers within their bounds, text within its
// length and of its format; anything else is asked again with what to
// type, or with the host's reason (the field's title first).
func TestFormValue(t *testing.T) {
	one, ten, two := 1.0, 10.0, 2
	choice := host.FormField{Title: "Size", Type: "string", Choices: []host.FormChoice{{Value: "s", Label: "Small"}, {Value: "m", Label: "Medium"}}}
	count := host.FormField{Title: "Count", Type: "integer", Minimum: &one, Maximum: &ten}
	ratio := host.FormField{Title: "Ratio", Type: "number", Maximum: &one}
	code := host.FormField{Title: "Code", Type: "string", MaxLength: &two}
	mail := host.FormField{Title: "Mail", Type: "string", Format: "email"}
	day := host.FormField{Title: "Day", Type: "string", Format: "date"}
	for _, c := range []struct {
		f    host.FormField
		text string
		want any
		err  string
	}{
		{choice, "2", "m", ""},
		{choice, "small", "s", ""},
		{choice, "3", nil, "pick 1 to 2"},
		{host.FormField{Type: "boolean"}, "Yes", true, ""},
		{host.FormField{Type: "boolean"}, "maybe", nil, "answer y or n"},
		{count, "4", int64(4), ""},
		{count, "4.5", nil, "type a whole number"},
		{count, "11", nil, "Count must be from 1 to 10"},
		{count, "99999999999999999999", nil, "type a whole number"},
		{ratio, "0.5", 0.5, ""},
		{ratio, "1.5", nil, "Ratio must be at most 1"},
		{ratio, "x", nil, "type a number"},
		{ratio, "NaN", nil, "Ratio must be a number"},
		{code, "ab", "ab", ""},
		{code, "äöü", nil, "Code must be at most 2 characters (that was 3)"},
		{mail, "ann@example.com", "ann@example.com", ""},
		{mail, "Ann <ann@example.com>", nil, "Mail must be an email address, as ann@example.com"},
		{day, "2026-12-06", "2026-12-06", ""},
		{day, "6/12/2026", nil, "Day must be a date, as 2026-12-06"},
	} {
		got, err := formValue(c.f, c.text)
		if msg := fmt.Sprint(err); c.err != "" && msg != c.err || c.err == "" && (err != nil || got != c.want) {
			t.Errorf("formValue(%+v, %q) = %v, %v; want %v, %q", c.f, c.text, got, err, c.want, c.err)
		}
	}
}

func hostQuestion(multi bool, labels ...string) host.Question {
	q := host.Question{Question: "q", MultiSelect: multi}
	for _, l := range labels {
		q.Options = append(q.Options, host.QuestionOption{Label: l})
	}
	return q
}

// The CLI's notices are shown (the warning that auto mode can check
// nothing here), and a turn that ran to its end while auto mode refused
// what it could not check ends with the CLI's words, not "turn failed:"
// and its final text.
func TestRenderAutoModeUnchecked(t *testing.T) {
	var out bytes.Buffer
	r := newRenderer(&out, false, false, thinkingCollapsed, nil)
	feed(t, r,
		`{"type":"system","subtype":"informational","content":"Auto mode can't check actions in this session.","level":"warning","tag":"auto_mode_no_server_check"}`,
		`{"type":"system","subtype":"informational","content":"","level":"info"}`,
		`{"type":"assistant","message":{"id":"msg_1","content":[{"type":"text","text":"done"}]}}`,
		`{"type":"result","subtype":"success","is_error":true,"result":"done","errors":["Auto mode could not check some actions Claude tried, so they did not run: Bash. [auto_mode_unchecked]"],"permission_denials":[]}`,
	)
	want := `Auto mode can't check actions in this session.
done
✗ claude: Auto mode could not check some actions Claude tried, so they did not run: Bash. [auto_mode_unchecked]
`
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("screen (-want +got):\n%s", diff)
	}
}
