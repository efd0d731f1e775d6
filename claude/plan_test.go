package claude_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tetherhq/tether/claude"
)

// checkPlanned fails t if DecodeMessage, with its decode plans, decodes
// line differently from the general decoder alone (the same message, or
// an error both ways). It reports whether the plans took the line.
func checkPlanned(t testing.TB, line []byte) bool {
	t.Helper()
	planned, perr := claude.DecodeMessage(line)
	plain, err := claude.DecodePlain(line)
	if (perr == nil) != (err == nil) {
		t.Fatalf("on %q: planned error %v, general decoder's %v", line, perr, err)
	}
	if diff := cmp.Diff(plain, planned); diff != "" {
		t.Fatalf("planned decode differs on %q (-general +planned):\n%s", line, diff)
	}
	return claude.DecodePlanned(line)
}

func TestDeltaFastPath(t *testing.T) {
	for _, tc := range []struct {
		line string
		fast bool // the plans must take it
	}{
		{`{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hel"}},"session_id":"s1","parent_tool_use_id":null,"uuid":"u6"}`, true},
		{`{"type":"stream_event","event":{"type":"content_block_delta","index":12,"delta":{"type":"input_json_delta","partial_json":"{\"command\": \"ls \\u003e x"}},"session_id":"s1","parent_tool_use_id":"toolu_1","uuid":"u7"}`, true},
		{`{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"héllo 🌍 \u2028"}},"session_id":"s1","parent_tool_use_id":null,"uuid":"u8"}`, true},
		{`{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"c2ln"}},"session_id":"s1","parent_tool_use_id":null,"uuid":"u9"}`, true},
		{` { "uuid" : "u" , "event" : { "delta" : { "text" : "x" , "type" : "text_delta" } , "index" : 3 , "type" : "content_block_delta" } , "type" : "stream_event" } `, true},
		{`{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":""}},"uuid":null}`, true},
		{`{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a\nb\tc\/d\\e\"f\b\f\r"}},"session_id":"s\u00e9","uuid":"u\ud83c\udf0d","parent_tool_use_id":"p"}`, true},
		{`{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"lone \ud800 x"}},"uuid":"u1","uuid":"u2","session_id":""}`, false},
		{`{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"é\n"}},"uuid":"ü"}`, true},
		{`{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"bad \x escape"}},"uuid":"u"}`, false},
		{`{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"citations_delta","citation":{}}},"uuid":"u"}`, true},
		{`{"type":"stream_event","event":{"type":"message_stop"},"uuid":"u"}`, true},
		{`{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x","extra":1}},"uuid":"u"}`, true},
		{`{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","partial_json":"x"}},"uuid":"u"}`, true},
		{`{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"partial_json":"x","type":"text_delta"}},"uuid":"u"}`, true},
		{`{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"text":"x","type":"text_delta"}},"uuid":"u"}`, true},
		{`{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta"}},"uuid":"u"}`, true},
		{`{"type":"stream_event","event":{"type":"content_block_delta","index":-1,"delta":{"type":"text_delta","text":"x"}},"uuid":"u"}`, true},
		{`{"type":"stream_event","event":{"type":"content_block_delta","index":1.5,"delta":{"type":"text_delta","text":"x"}},"uuid":"u"}`, false},
		{`{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"bad` + "\xff" + `"}},"uuid":"u"}`, false},
		{`{"type":"stream_event","ttft_ms":3,"event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x"}}}`, true},
		{`{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x"}}} trailing`, false},
		{`{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x"}}`, false},
	} {
		if got := checkPlanned(t, []byte(tc.line)); got != tc.fast {
			t.Errorf("plans took %q: %v, want %v", tc.line, got, tc.fast)
		}
	}
}

func TestUserFastPath(t *testing.T) {
	const tr = `{"tool_use_id":"toolu_1","type":"tool_result","content":"total 8\ndrwxr-xr-x .\n","is_error":false}`
	for _, tc := range []struct {
		line string
		fast bool // the plans must take it
	}{
		{`{"type":"user","message":{"role":"user","content":[` + tr + `]},"parent_tool_use_id":null,"session_id":"s","uuid":"u","timestamp":"2026-11-22T10:00:00.000Z","tool_use_result":{"stdout":"total 8","stderr":"","interrupted":false,"isImage":false,"n":-1.5e3,"a":[1,{"b":null}],"u":"\u00e9"}}`, true},
		{`{"type":"user","message":{"role":"user","content":[` + tr + `,{"type":"tool_result","tool_use_id":"toolu_2","content":[{"type":"text","text":"x"}],"is_error":true}]},"parent_tool_use_id":"toolu_0"}`, true},
		{` { "message" : { "content" : [ { "type" : "tool_result" } ] } , "type" : "user" , "tool_use_result" : "Error: boom" } `, true},
		{`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t\u00e9"}]},"tool_use_result":[ 1 , 2 ]}`, true},
		{`{"type":"user","message":{"role":"user","content":"hello"}}`, true},
		{`{"type":"user","message":{"role":"user","content":[{"type":"text","text":"hi"}]}}`, true},
		{`{"type":"user","message":{"content":[]}}`, true},
		{`{"type":"user","message":{"content":[{"type":"tool_result","content":null}]}}`, false},
		{`{"type":"user","message":{"content":[` + tr + `]},"tool_use_result":null}`, false},
		{`{"type":"user","message":{"content":[` + tr + `]},"tool_use_result":{"a":"é"}}`, true},
		{`{"type":"user","message":{"content":[` + tr + `]},"tool_use_result":{"a":01}}`, false},
		{`{"type":"user","message":{"content":[` + tr + `]},"tool_use_result":{"a":"\x"}}`, false},
		{`{"type":"user","message":{"content":[` + tr + `]},"tool_use_result":{"a":1,}}`, false},
		{`{"type":"user","message":{"content":[` + tr + `]},"isReplay":true}`, true},
		{`{"type":"user","message":{"content":[` + tr + `]},"uuid":"a","uuid":"b"}`, false},
		{`{"type":"user","message":{"content":[{"type":"tool_result","is_error":1}]}}`, false},
		{`{"type":"user","message":{"content":[{"tool_use_id":"t"}]}}`, false},
		{`{"type":"user","message":{"content":[` + tr + `]}} x`, false},
		{`{"type":"user"}`, true},
	} {
		if got := checkPlanned(t, []byte(tc.line)); got != tc.fast {
			t.Errorf("plans took %q: %v, want %v", tc.line, got, tc.fast)
		}
	}
}

func TestAssistantFastPath(t *testing.T) {
	const usage = `"usage":{"input_tokens":1234,"cache_creation_input_tokens":0,"cache_read_input_tokens":5678,"output_tokens":42,"service_tier":"standard"}`
	for _, tc := range []struct {
		line string
		fast bool // the plans must take it
	}{
		{`{"type":"assistant","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-opus-4-8","content":[{"type":"text","text":"Here \"is\" é\n"}],"stop_reason":null,"stop_sequence":null,` + usage + `,"context_management":null},"parent_tool_use_id":null,"session_id":"s","uuid":"u","request_id":"req_1"}`, true},
		{`{"type":"assistant","message":{"content":[],"usage":null},"uuid":"u"}`, true},
		{`{"type":"assistant","message":{"content":[{"text":"a","type":"text"},{"type":"text","text":"b"}],"usage":{}},"parent_tool_use_id":"toolu_1"}`, true},
		{`{"type":"assistant","message":{"id":"m"}}`, true},
		{` { "type" : "assistant" , "message" : { "stop_reason" : "end_turn" } } `, true},
		{`{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t","name":"Bash","input":{}}]}}`, true},
		{`{"type":"assistant","message":{"content":[{"type":"text","text":"a","citations":[]}]}}`, false},
		{`{"type":"assistant","message":{"content":null}}`, true},
		{`{"type":"assistant","message":{"usage":{"input_tokens":1.5}}}`, false},
		{`{"type":"assistant","message":{"usage":{"input_tokens":1,"server_tool_use":{}}}}`, true},
		{`{"type":"assistant","message":{"usage":{"server_tool_use":{"web_search_requests":2,"web_fetch_requests":0},"cache_creation":{"ephemeral_5m_input_tokens":0,"ephemeral_1h_input_tokens":7}}}}`, true},
		{`{"type":"assistant","message":{"usage":{"server_tool_use":null}}}`, true},
		{`{"type":"assistant","message":{"usage":{"server_tool_use":{"web_search_requests":1,"web_search_requests":2}}}}`, false},
		{`{"type":"assistant","message":{"usage":{"server_tool_use":{"other":1}}}}`, true},
		{`{"type":"assistant","message":{"usage":{"cache_creation":{"a\":1,"b":2}}}}`, false},
		{`{"type":"assistant","message":{"usage":{"cache_creation":{"a":"x"}}}}`, true},
		{`{"type":"assistant","message":{"id":"a","id":"b"}}`, false},
		{`{"type":"assistant","message":{"context_management":{}}}`, true},
		{`{"type":"assistant","message":{"id":"m"},"error":"rate_limit"}`, true},
		{`{"type":"assistant","message":{"id":"m"},"uuid":7}`, false},
		{`{"type":"assistant"}`, true},
		{`{"type":"assistant","message":{"id":"bad` + "\xff" + `"}}`, false},
		{`{"type":"assistant","message":{"id":"m"}} x`, false},
	} {
		if got := checkPlanned(t, []byte(tc.line)); got != tc.fast {
			t.Errorf("plans took %q: %v, want %v", tc.line, got, tc.fast)
		}
	}
}

// The plans must take every line of both benchmark mixes (the lines the
// CLI writes most) and decode them as the general decoder does.
func TestPlannedMixes(t *testing.T) {
	for _, lines := range [][][]byte{mixLines(), realMixLines()} {
		for _, l := range lines {
			l = l[:len(l)-1]
			if !checkPlanned(t, l) {
				t.Errorf("the plans left %s to the general decoder", l)
			}
		}
	}
}

// TestPlanPredictsMembers decodes lines one after another, so that each
// finds its plans' guesses of the next member (learned from the lines
// before it) right or wrong: members in another order, names that extend
// or shorten a predicted one, a repeated member where one is predicted,
// white space, an escaped name. Each must decode as the general decoder
// decodes it.
func TestPlanPredictsMembers(t *testing.T) {
	const delta = `{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x"}},"session_id":"s","parent_tool_use_id":null,"uuid":"u"}`
	for _, tc := range []struct {
		line string
		fast bool // the plans must take it
	}{
		{delta, true},
		{delta, true},
		{`{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x"}},"session_id":"s","parent_tool_use_id":null,"uuid2":"v"}`, true},
		{`{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x"}},"session_id":"s","parent_tool_use_id":null,"uui":"v","uuid":"u"}`, true},
		{`{"type":"stream_event","event":{"index":0,"type":"content_block_delta","delta":{"text":"x","type":"text_delta"}},"uuid":"u","session_id":"s"}`, true},
		{delta, true},
		{`{"type":"stream_event","uuid":"a","uuid":"b"}`, false},
		{`{"type":"stream_event","uuid":"a","uuid":"b"}`, false},
		{`{"type":"stream_event","event":{"type":"content_block_delta","index":0,"index":1}}`, false},
		{`{"type":"stream_event","event":{"type":"content_block_delta","index":0,"index":1}}`, false},
		{`{"type":"stream_event" ,"event" :{"type":"content_block_delta", "index":0,"delta":{"type":"text_delta","text" : "x"}}}`, true},
		{`{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x"}},"session_id":"s","parent_tool_use_id":null,"\u0075uid":"u"}`, false},
		{`{"type":"stream_event","event":{"type":"message_stop"},"session_id":"s","parent_tool_use_id":null,"uuid":"u"}`, true},
		{`{"type":"stream_event","event":{},"session_id":"s"}`, true},
		{`{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x"}}"session_id":"s"}`, false},
		{delta, true},
	} {
		if got := checkPlanned(t, []byte(tc.line)); got != tc.fast {
			t.Errorf("plans took %q: %v, want %v", tc.line, got, tc.fast)
		}
	}
}
