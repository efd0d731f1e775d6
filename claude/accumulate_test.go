package claude_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
)

// lines decodes stdout lines, failing the test on any error.
func decodeLines(t *testing.T, lines ...string) []claude.Message {
	t.Helper()
	var out []claude.Message
	for _, l := range lines {
		m, err := claude.DecodeMessage([]byte(l))
		if err != nil {
			t.Fatalf("DecodeMessage(%s): %v", l, err)
		}
		out = append(out, m)
	}
	return out
}

func ev(event string) string {
	return `{"type":"stream_event","event":` + event + `,"session_id":"s","parent_tool_use_id":null,"uuid":"u"}`
}

func delta(i int, d string) string {
	return ev(fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":%s}`, i, d))
}

func assistantLine(id, block string) string {
	return `{"type":"assistant","message":{"id":"` + id + `","type":"message","role":"assistant","model":"m","content":[` + block + `],"stop_reason":null,"usage":{"input_tokens":10,"output_tokens":1}},"parent_tool_use_id":null,"session_id":"s","uuid":"u"}`
}

// blocks renders a draft's content compactly for comparison.
func blocks(d *claude.Draft) []string {
	if d == nil {
		return nil
	}
	var out []string
	for _, b := range d.Content {
		switch b := b.(type) {
		case *claude.TextBlock:
			out = append(out, fmt.Sprintf("text %q cites=%d", b.Text, len(b.Citations)))
		case *claude.ThinkingBlock:
			out = append(out, fmt.Sprintf("thinking %q sig=%q", b.Thinking, b.Signature))
		case *claude.ToolUseBlock:
			out = append(out, fmt.Sprintf("tool_use %s %s", b.Name, b.Input))
		default:
			out = append(out, fmt.Sprintf("%T", b))
		}
	}
	return out
}

func TestAccumulatorStreamsAllBlockKinds(t *testing.T) {
	var acc claude.Accumulator
	msgs := decodeLines(t,
		ev(`{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[],"usage":{"input_tokens":10,"output_tokens":1}}}`),
		ev(`{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}`),
		delta(0, `{"type":"thinking_delta","thinking":"Let me "}`),
		delta(0, `{"type":"thinking_delta","thinking":"think."}`),
		delta(0, `{"type":"signature_delta","signature":"sig=="}`),
		assistantLine("msg_1", `{"type":"thinking","thinking":"Let me think.","signature":"sig=="}`),
		ev(`{"type":"content_block_stop","index":0}`),
		ev(`{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}`),
		delta(1, `{"type":"text_delta","text":"See "}`),
		delta(1, `{"type":"citations_delta","citation":{"type":"char_location","cited_text":"x"}}`),
		delta(1, `{"type":"text_delta","text":"this."}`),
		ev(`{"type":"content_block_stop","index":1}`),
		ev(`{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_1","name":"Bash","input":{}}}`),
		delta(2, `{"type":"input_json_delta","partial_json":"{\"comm"}`),
		delta(2, `{"type":"input_json_delta","partial_json":"and\": \"ls -"}`),
		delta(2, `{"type":"input_json_delta","partial_json":"la\"}"}`),
	)
	var got [][]string
	for _, m := range msgs {
		d := acc.Add(m)
		if d == nil {
			if _, ok := m.(*claude.StreamEvent).Event.(*claude.ContentBlockStopEvent); !ok {
				t.Fatalf("Add(%T) changed no draft", m)
			}
			d = acc.Draft("")
		}
		if d.Status != claude.DraftStreaming || d.MessageID != "msg_1" {
			t.Fatalf("draft = %+v", d)
		}
		got = append(got, blocks(d))
	}
	want := [][]string{
		nil,
		{`thinking "" sig=""`},
		{`thinking "Let me " sig=""`},
		{`thinking "Let me think." sig=""`},
		{`thinking "Let me think." sig="sig=="`},
		{`thinking "Let me think." sig="sig=="`},
		{`thinking "Let me think." sig="sig=="`},
		{`thinking "Let me think." sig="sig=="`, `text "" cites=0`},
		{`thinking "Let me think." sig="sig=="`, `text "See " cites=0`},
		{`thinking "Let me think." sig="sig=="`, `text "See " cites=1`},
		{`thinking "Let me think." sig="sig=="`, `text "See this." cites=1`},
		{`thinking "Let me think." sig="sig=="`, `text "See this." cites=1`},
		{`thinking "Let me think." sig="sig=="`, `text "See this." cites=1`, `tool_use Bash {}`},
		{`thinking "Let me think." sig="sig=="`, `text "See this." cites=1`, `tool_use Bash {}`},
		{`thinking "Let me think." sig="sig=="`, `text "See this." cites=1`, `tool_use Bash {"command": "ls -"}`},
		{`thinking "Let me think." sig="sig=="`, `text "See this." cites=1`, `tool_use Bash {"command": "ls -la"}`},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("drafts (-want +got):\n%s", diff)
	}

	// The stop reason, then message_stop, complete the draft; the result
	// clears it.
	end := decodeLines(t,
		ev(`{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":42}}`),
		ev(`{"type":"message_stop"}`),
	)
	acc.Add(end[0])
	d := acc.Add(end[1])
	if d.Status != claude.DraftComplete || d.StopReason != "tool_use" || d.Usage.OutputTokens != 42 || d.Usage.InputTokens != 10 {
		t.Errorf("after message_stop: %+v usage %+v", d, d.Usage)
	}
	if acc.Draft("") == nil {
		t.Error("the completed draft is gone before the result")
	}
	acc.Add(decodeLines(t, `{"type":"result","subtype":"success","is_error":false,"result":"x","session_id":"s"}`)[0])
	if len(acc.Drafts()) != 0 {
		t.Errorf("drafts after the result: %v", acc.Drafts())
	}
}

func TestAccumulatorInterrupted(t *testing.T) {
	var acc claude.Accumulator
	for _, m := range decodeLines(t,
		ev(`{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[],"usage":{"input_tokens":10,"output_tokens":1}}}`),
		ev(`{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"Write","input":{}}}`),
		delta(0, `{"type":"input_json_delta","partial_json":"{\"file_path\":\"a.txt\",\"content\":\"hel"}`),
		// CLI 2.1.330 closes the aborted stream; 2.1.197 does not.
		ev(`{"type":"content_block_stop","index":0}`),
		ev(`{"type":"message_delta","delta":{"stop_reason":null},"usage":{"output_tokens":3}}`),
		ev(`{"type":"message_stop"}`),
	) {
		acc.Add(m)
	}
	d := acc.Add(decodeLines(t, `{"type":"user","message":{"role":"user","content":[{"type":"text","text":"[Request interrupted by user]"}]},"session_id":"s","parent_tool_use_id":null,"uuid":"u"}`)[0])
	if d == nil || d.Status != claude.DraftInterrupted {
		t.Fatalf("after the interrupt marker: %+v", d)
	}
	if got, want := blocks(d), []string{`tool_use Write {"file_path":"a.txt","content":"hel"}`}; !cmp.Equal(got, want) {
		t.Errorf("interrupted draft = %v, want %v", got, want)
	}
	if d := acc.Add(decodeLines(t, `{"type":"result","subtype":"error_during_execution","is_error":true,"session_id":"s"}`)[0]); d != nil {
		t.Errorf("the result changed the draft again: %+v", d)
	}
}

func TestAccumulatorRetriedCallInterruptsTheOldDraft(t *testing.T) {
	var acc claude.Accumulator
	msgs := decodeLines(t,
		ev(`{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[]}}`),
		ev(`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`),
		delta(0, `{"type":"text_delta","text":"Hel"}`),
		ev(`{"type":"message_start","message":{"id":"msg_2","type":"message","role":"assistant","model":"m","content":[]}}`),
	)
	var first *claude.Draft
	for _, m := range msgs[:3] {
		first = acc.Add(m)
	}
	second := acc.Add(msgs[3])
	if first.Status != claude.DraftStreaming || second.MessageID != "msg_2" || len(acc.Drafts()) != 1 {
		t.Errorf("first %+v, second %+v, drafts %d", first, second, len(acc.Drafts()))
	}
}

func TestAccumulatorThreadsAndNoPartials(t *testing.T) {
	var acc claude.Accumulator
	sub := strings.Replace(assistantLine("msg_sub", `{"type":"text","text":"sub work"}`), `"parent_tool_use_id":null`, `"parent_tool_use_id":"toolu_agent"`, 1)
	for _, m := range decodeLines(t,
		assistantLine("msg_1", `{"type":"text","text":"Starting an agent."}`),
		assistantLine("msg_1", `{"type":"tool_use","id":"toolu_agent","name":"Agent","input":{"prompt":"x"}}`),
		sub,
	) {
		acc.Add(m)
	}
	main, subd := acc.Draft(""), acc.Draft("toolu_agent")
	if got, want := blocks(main), []string{`text "Starting an agent." cites=0`, `tool_use Agent {"prompt":"x"}`}; !cmp.Equal(got, want) {
		t.Errorf("main thread = %v, want %v", got, want)
	}
	if got, want := blocks(subd), []string{`text "sub work" cites=0`}; !cmp.Equal(got, want) || subd.ParentToolUseID != "toolu_agent" {
		t.Errorf("subagent thread = %v (%q), want %v", got, subd.ParentToolUseID, want)
	}
	if ds := acc.Drafts(); len(ds) != 2 || ds[0].ParentToolUseID != "" {
		t.Errorf("Drafts() = %v", ds)
	}
	d := acc.Add(decodeLines(t, `{"type":"result","subtype":"success","is_error":false,"result":"x","session_id":"s"}`)[0])
	if d == nil || d.Status != claude.DraftComplete {
		t.Errorf("result: %+v", d)
	}
}

// TestAccumulatorOnRecordedTurn folds a turn the real CLI streamed: the
// final draft's text is the assistant message's.
func TestAccumulatorOnRecordedTurn(t *testing.T) {
	tr, err := claudetest.ReadTranscript("testdata/transcripts/basic_turn_partial.txtar")
	if err != nil {
		t.Fatal(err)
	}
	var acc claude.Accumulator
	var last *claude.Draft
	var final string
	grew := 0
	for _, l := range tr.Lines {
		if l.FromHost {
			continue
		}
		m, err := claude.DecodeMessage(l.JSON)
		if err != nil {
			t.Fatal(err)
		}
		if a, ok := m.(*claude.AssistantMessage); ok {
			final = a.Text()
		}
		if _, ok := m.(*claude.ResultMessage); ok {
			break
		}
		if d := acc.Add(m); d != nil {
			if last != nil && len(d.Content) > 0 && len(last.Content) > 0 {
				if tb, ok := d.Content[0].(*claude.TextBlock); ok && len(tb.Text) > len(last.Content[0].(*claude.TextBlock).Text) {
					grew++
				}
			}
			last = d
		}
	}
	if last == nil || last.Status != claude.DraftComplete || grew < 2 {
		t.Fatalf("last draft %+v after growing %d times", last, grew)
	}
	if got := last.Content[0].(*claude.TextBlock).Text; got != final {
		t.Errorf("draft text %q, assistant text %q", got, final)
	}
}
