package claudetest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

// event is one parsed SSE event.
type event struct {
	Name string
	Data json.RawMessage
}

// eventData is the union of the SSE data fields the tests look at.
type eventData struct {
	Type    string `json:"type"`
	Index   int    `json:"index"`
	Message struct {
		ID    string `json:"id"`
		Model string `json:"model"`
		Usage struct {
			InputTokens  int `json:"input_tokens"`
			OutputTokens int `json:"output_tokens"`
		} `json:"usage"`
	} `json:"message"`
	ContentBlock json.RawMessage `json:"content_block"`
	Delta        struct {
		Type         string  `json:"type"`
		Text         string  `json:"text"`
		Thinking     string  `json:"thinking"`
		Signature    string  `json:"signature"`
		PartialJSON  string  `json:"partial_json"`
		StopReason   string  `json:"stop_reason"`
		StopSequence *string `json:"stop_sequence"`
	} `json:"delta"`
	Usage struct {
		OutputTokens int `json:"output_tokens"`
	} `json:"usage"`
	Error struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
	RequestID string `json:"request_id"`
}

func (e event) data(t testing.TB) eventData {
	t.Helper()
	var d eventData
	if err := json.Unmarshal(e.Data, &d); err != nil {
		t.Fatalf("event %s data %s: %v", e.Name, e.Data, err)
	}
	if d.Type != e.Name {
		t.Errorf("event %q carries data type %q", e.Name, d.Type)
	}
	return d
}

// readSSE parses a text/event-stream body strictly: every event is an
// "event:" line, one "data:" line and a blank line.
func readSSE(t testing.TB, r io.Reader) []event {
	t.Helper()
	var evs []event
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	var cur event
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			cur.Name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			cur.Data = json.RawMessage(strings.TrimPrefix(line, "data: "))
			if !json.Valid(cur.Data) {
				t.Errorf("event %q data is not JSON: %s", cur.Name, cur.Data)
			}
		case line == "":
			if cur.Name == "" || cur.Data == nil {
				t.Errorf("incomplete event before blank line: %+v", cur)
			}
			evs = append(evs, cur)
			cur = event{}
		default:
			t.Errorf("unexpected SSE line %q", line)
		}
	}
	if cur.Name != "" || cur.Data != nil {
		t.Errorf("stream ended inside an event: %+v", cur)
	}
	return evs
}

func names(evs []event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.Name
	}
	return out
}

// post sends a messages request and returns the response.
func post(t testing.TB, url, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Api-Key", DefaultAPIKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

const streamBody = `{"model":"claude-test-1","max_tokens":1000,"stream":true,"messages":[{"role":"user","content":"hi"}],"tools":[{"name":"Bash","input_schema":{"type":"object"}}]}`

func stream(t testing.TB, s *MessagesServer) []event {
	t.Helper()
	resp := post(t, s.URL+"/v1/messages?beta=true", streamBody)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Errorf("content-type = %q", ct)
	}
	return readSSE(t, resp.Body)
}

// reassemble folds the deltas of each block back into the block, the way
// a client does.
func reassemble(t testing.TB, evs []event) []ContentBlock {
	t.Helper()
	var blocks []ContentBlock
	partial := map[int]*strings.Builder{}
	for _, e := range evs {
		d := e.data(t)
		switch e.Name {
		case "content_block_start":
			if d.Index != len(blocks) {
				t.Fatalf("content_block_start index %d, want %d", d.Index, len(blocks))
			}
			var w wireBlock
			json.Unmarshal(d.ContentBlock, &w)
			blocks = append(blocks, ContentBlock{Type: w.Type, Text: w.Text, Thinking: w.Thinking, Signature: w.Signature, Data: w.Data, ID: w.ID, Name: w.Name})
			partial[d.Index] = &strings.Builder{}
		case "content_block_delta":
			b := &blocks[d.Index]
			switch d.Delta.Type {
			case "text_delta":
				b.Text += d.Delta.Text
			case "thinking_delta":
				b.Thinking += d.Delta.Thinking
			case "signature_delta":
				b.Signature += d.Delta.Signature
			case "input_json_delta":
				partial[d.Index].WriteString(d.Delta.PartialJSON)
			default:
				t.Errorf("unknown delta type %q", d.Delta.Type)
			}
		case "content_block_stop":
			if b := &blocks[d.Index]; b.Type == BlockTypeToolUse {
				b.Input = json.RawMessage(partial[d.Index].String())
			}
		}
	}
	return blocks
}

func TestMessagesServerTextStream(t *testing.T) {
	s := NewMessagesServer(&MessagesOptions{Replies: []*Reply{TextReply("Hello, world")}})
	defer s.Close()
	resp := post(t, s.URL+"/v1/messages?beta=true", streamBody)
	if got := resp.Header.Get("request-id"); got != "req_fake_000001" {
		t.Errorf("request-id header = %q", got)
	}
	evs := readSSE(t, resp.Body)
	want := []string{"message_start", "content_block_start", "content_block_delta", "content_block_stop", "message_delta", "message_stop"}
	if diff := cmp.Diff(want, names(evs)); diff != "" {
		t.Fatalf("events (-want +got):\n%s", diff)
	}
	start := evs[0].data(t)
	if start.Message.Model != "claude-test-1" || start.Message.ID != "msg_fake_000001" {
		t.Errorf("message_start = %s, want the request's model echoed", evs[0].Data)
	}
	if start.Message.Usage.InputTokens == 0 {
		t.Errorf("message_start has no input token estimate")
	}
	if d := evs[2].data(t); d.Delta.Type != "text_delta" || d.Delta.Text != "Hello, world" {
		t.Errorf("delta = %s", evs[2].Data)
	}
	md := evs[4].data(t)
	if md.Delta.StopReason != "end_turn" || md.Delta.StopSequence != nil || md.Usage.OutputTokens == 0 {
		t.Errorf("message_delta = %s", evs[4].Data)
	}
}

func TestMessagesServerBlockKinds(t *testing.T) {
	tests := []struct {
		name   string
		reply  *Reply
		events []string
		stop   string
	}{{
		name:   "thinking",
		reply:  &Reply{Content: []ContentBlock{ThinkingBlock("ponder", "sig-1")}},
		events: []string{"message_start", "content_block_start", "content_block_delta", "content_block_delta", "content_block_stop", "message_delta", "message_stop"},
		stop:   "end_turn",
	}, {
		name:   "redacted thinking",
		reply:  &Reply{Content: []ContentBlock{RedactedThinkingBlock("opaque")}},
		events: []string{"message_start", "content_block_start", "content_block_stop", "message_delta", "message_stop"},
		stop:   "end_turn",
	}, {
		name:   "tool use",
		reply:  &Reply{Content: []ContentBlock{ToolUseBlock("toolu_1", "Bash", map[string]string{"command": "ls"})}, ChunkSize: 100},
		events: []string{"message_start", "content_block_start", "content_block_delta", "content_block_stop", "message_delta", "message_stop"},
		stop:   "tool_use",
	}, {
		name: "several blocks",
		reply: &Reply{Content: []ContentBlock{
			ThinkingBlock("a", "s"), TextBlock("b"), ToolUseBlock("toolu_2", "Read", map[string]string{"file_path": "/x"}),
		}, ChunkSize: 100, StopReason: StopReasonMaxTokens},
		events: []string{"message_start",
			"content_block_start", "content_block_delta", "content_block_delta", "content_block_stop",
			"content_block_start", "content_block_delta", "content_block_stop",
			"content_block_start", "content_block_delta", "content_block_stop",
			"message_delta", "message_stop"},
		stop: "max_tokens",
	}, {
		name:   "ping",
		reply:  &Reply{Content: []ContentBlock{TextBlock("x")}, Ping: true},
		events: []string{"message_start", "ping", "content_block_start", "content_block_delta", "content_block_stop", "message_delta", "message_stop"},
		stop:   "end_turn",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewMessagesServer(&MessagesOptions{Replies: []*Reply{tt.reply}})
			defer s.Close()
			evs := stream(t, s)
			if diff := cmp.Diff(tt.events, names(evs)); diff != "" {
				t.Fatalf("events (-want +got):\n%s", diff)
			}
			if got := evs[len(evs)-2].data(t).Delta.StopReason; got != tt.stop {
				t.Errorf("stop_reason = %q, want %q", got, tt.stop)
			}
			got := reassemble(t, evs)
			if diff := cmp.Diff(tt.reply.Content, got, cmpBlocks); diff != "" {
				t.Errorf("reassembled blocks (-want +got):\n%s", diff)
			}
		})
	}
}

// cmpBlocks compares blocks ignoring Raw and comparing Input as JSON.
var cmpBlocks = cmp.Options{
	cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".Raw" }, cmp.Ignore()),
	cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".Input" }, cmp.Transformer("json", func(raw json.RawMessage) any {
		if len(raw) == 0 {
			return nil
		}
		var v any
		json.Unmarshal(raw, &v)
		return v
	})),
}

func TestMessagesServerChunking(t *testing.T) {
	input := map[string]any{"command": "echo ünïcödé ✓ and a longer tail", "n": 3, "nested": map[string]bool{"ok": true}}
	text := "héllo wörld, ✓✓✓ — chunked"
	s := NewMessagesServer(&MessagesOptions{Replies: []*Reply{{
		Content:   []ContentBlock{TextBlock(text), ToolUseBlock("toolu_c", "Bash", input)},
		ChunkSize: 3,
	}}})
	defer s.Close()
	evs := stream(t, s)
	var textDeltas, jsonDeltas int
	for _, e := range evs {
		d := e.data(t)
		if e.Name != "content_block_delta" {
			continue
		}
		piece := d.Delta.Text + d.Delta.PartialJSON
		if n := utf8.RuneCountInString(piece); n == 0 || n > 3 || !utf8.ValidString(piece) {
			t.Errorf("delta %q has %d runes, want 1..3 valid runes", piece, n)
		}
		switch d.Delta.Type {
		case "text_delta":
			textDeltas++
		case "input_json_delta":
			jsonDeltas++
		}
	}
	if textDeltas < 2 || jsonDeltas < 2 {
		t.Errorf("got %d text and %d json deltas; want several of each", textDeltas, jsonDeltas)
	}
	got := reassemble(t, evs)
	if got[0].Text != text {
		t.Errorf("text reassembled to %q, want %q", got[0].Text, text)
	}
	var gotIn map[string]any
	if err := json.Unmarshal(got[1].Input, &gotIn); err != nil {
		t.Fatalf("input_json chunks reassemble to invalid JSON %s: %v", got[1].Input, err)
	}
	wantIn := map[string]any{"command": input["command"], "n": 3.0, "nested": map[string]any{"ok": true}}
	if diff := cmp.Diff(wantIn, gotIn); diff != "" {
		t.Errorf("input (-want +got):\n%s", diff)
	}
}

func TestMessagesServerNonStreaming(t *testing.T) {
	s := NewMessagesServer(&MessagesOptions{Replies: []*Reply{{
		Content:      []ContentBlock{ThinkingBlock("t", "sig"), TextBlock("answer"), ToolUseBlock("toolu_n", "Bash", map[string]string{"command": "ls"})},
		StopReason:   StopReasonStopSequence,
		StopSequence: "STOP",
		Model:        "claude-other",
		Usage:        Usage{InputTokens: 10, OutputTokens: 5, CacheCreationInputTokens: 2, CacheReadInputTokens: 3},
	}}})
	defer s.Close()
	resp := post(t, s.URL+"/v1/messages", `{"model":"claude-test-1","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`)
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("content-type = %q", ct)
	}
	var got any
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
		t.Fatal(err)
	}
	var want any
	json.Unmarshal([]byte(`{"id":"msg_fake_000001","type":"message","role":"assistant","model":"claude-other",
		"content":[{"type":"thinking","thinking":"t","signature":"sig"},{"type":"text","text":"answer"},
			{"type":"tool_use","id":"toolu_n","name":"Bash","input":{"command":"ls"}}],
		"stop_reason":"stop_sequence","stop_sequence":"STOP",
		"usage":{"input_tokens":10,"cache_creation_input_tokens":2,"cache_read_input_tokens":3,"output_tokens":5}}`), &want)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("body (-want +got):\n%s", diff)
	}
}

func TestMessagesServerHTTPErrors(t *testing.T) {
	tests := []struct {
		reply      *Reply
		status     int
		retryAfter string
		body       string
	}{
		{ErrorReply(400, "", "prompt is too long"), 400, "",
			`{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long"},"request_id":"req_fake_000001"}`},
		{ErrorReply(401, "", ""), 401, "",
			`{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"},"request_id":"req_fake_000001"}`},
		{&Reply{Error: &HTTPError{Status: 429, RetryAfter: "1"}}, 429, "1",
			`{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"},"request_id":"req_fake_000001"}`},
		{ErrorReply(500, "", ""), 500, "",
			`{"type":"error","error":{"type":"api_error","message":"Internal server error"},"request_id":"req_fake_000001"}`},
		{OverloadedReply("0"), 529, "0",
			`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_fake_000001"}`},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.status), func(t *testing.T) {
			s := NewMessagesServer(&MessagesOptions{Replies: []*Reply{tt.reply}})
			defer s.Close()
			resp := post(t, s.URL+"/v1/messages?beta=true", streamBody)
			if resp.StatusCode != tt.status {
				t.Errorf("status = %d, want %d", resp.StatusCode, tt.status)
			}
			if got := resp.Header.Get("Retry-After"); got != tt.retryAfter {
				t.Errorf("retry-after = %q, want %q", got, tt.retryAfter)
			}
			if got := resp.Header.Get("request-id"); got != "req_fake_000001" {
				t.Errorf("request-id = %q", got)
			}
			if got := resp.Header.Get("Content-Type"); got != "application/json" {
				t.Errorf("content-type = %q", got)
			}
			b, _ := io.ReadAll(resp.Body)
			if diff := cmp.Diff(tt.body, strings.TrimSpace(string(b))); diff != "" {
				t.Errorf("body (-want +got):\n%s", diff)
			}
		})
	}

	t.Run("extra headers", func(t *testing.T) {
		s := NewMessagesServer(&MessagesOptions{Replies: []*Reply{{Error: &HTTPError{
			Status: 529, Type: "custom_error", Message: "m",
			Header: http.Header{"X-Should-Retry": {"false"}},
		}}}})
		defer s.Close()
		resp := post(t, s.URL+"/v1/messages", streamBody)
		if got := resp.Header.Get("X-Should-Retry"); got != "false" {
			t.Errorf("x-should-retry = %q", got)
		}
		var body errorBody
		json.NewDecoder(resp.Body).Decode(&body)
		if body.Error.Type != "custom_error" || body.Error.Message != "m" {
			t.Errorf("error = %+v", body.Error)
		}
	})
}

func TestMessagesServerStreamError(t *testing.T) {
	for _, after := range []int{0, 3} {
		t.Run(fmt.Sprint(after), func(t *testing.T) {
			s := NewMessagesServer(&MessagesOptions{Replies: []*Reply{{
				Content:     []ContentBlock{TextBlock("0123456789")},
				ChunkSize:   2,
				StreamError: &StreamError{AfterEvents: after, Type: "api_error", Message: "boom"},
			}}})
			defer s.Close()
			evs := stream(t, s)
			want := append([]string{"message_start", "content_block_start", "content_block_delta"}[:after], "error")
			if diff := cmp.Diff(want, names(evs)); diff != "" {
				t.Fatalf("events (-want +got):\n%s", diff)
			}
			d := evs[len(evs)-1].data(t)
			if d.Error.Type != "api_error" || d.Error.Message != "boom" || d.RequestID != "req_fake_000001" {
				t.Errorf("error event = %s", evs[len(evs)-1].Data)
			}
		})
	}
	t.Run("non-streaming", func(t *testing.T) {
		s := NewMessagesServer(&MessagesOptions{Replies: []*Reply{{
			Content: []ContentBlock{TextBlock("x")}, StreamError: &StreamError{AfterEvents: 2},
		}}})
		defer s.Close()
		resp := post(t, s.URL+"/v1/messages", `{"model":"m","max_tokens":1,"messages":[]}`)
		var body errorBody
		json.NewDecoder(resp.Body).Decode(&body)
		if resp.StatusCode != 500 || body.Error.Type != "overloaded_error" {
			t.Errorf("got %d %+v, want 500 overloaded_error", resp.StatusCode, body)
		}
	})
}

func TestMessagesServerDelays(t *testing.T) {
	t.Run("before headers", func(t *testing.T) {
		s := NewMessagesServer(&MessagesOptions{Replies: []*Reply{{Content: []ContentBlock{TextBlock("x")}, Delay: 150 * time.Millisecond}}})
		defer s.Close()
		start := time.Now()
		resp := post(t, s.URL+"/v1/messages", streamBody)
		if d := time.Since(start); d < 150*time.Millisecond {
			t.Errorf("headers after %v, want ≥ 150ms", d)
		}
		readSSE(t, resp.Body)
	})
	t.Run("between events", func(t *testing.T) {
		s := NewMessagesServer(&MessagesOptions{Replies: []*Reply{{Content: []ContentBlock{TextBlock("abcd")}, ChunkSize: 1, EventDelay: 20 * time.Millisecond}}})
		defer s.Close()
		start := time.Now()
		evs := stream(t, s)
		// 9 events (4 deltas), 8 gaps.
		if d := time.Since(start); len(evs) != 9 || d < 8*20*time.Millisecond {
			t.Errorf("%d events in %v, want 9 events over ≥ 160ms", len(evs), d)
		}
	})
	t.Run("stall until the client leaves", func(t *testing.T) {
		s := NewMessagesServer(&MessagesOptions{Replies: []*Reply{{Content: []ContentBlock{TextBlock("abcd")}, ChunkSize: 1, StallAfterEvents: 3}}})
		defer s.Close()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.URL+"/v1/messages", strings.NewReader(streamBody))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		br := bufio.NewReader(resp.Body)
		var got []string
		for blank := 0; blank < 3; {
			line, err := br.ReadString('\n')
			if err != nil {
				t.Fatalf("after %v: %v", got, err)
			}
			if name, ok := strings.CutPrefix(strings.TrimSpace(line), "event: "); ok {
				got = append(got, name)
			}
			if line == "\n" {
				blank++
			}
		}
		if diff := cmp.Diff([]string{"message_start", "content_block_start", "content_block_delta"}, got); diff != "" {
			t.Errorf("events before the stall (-want +got):\n%s", diff)
		}
		// Nothing more arrives while stalled.
		more := make(chan error, 1)
		go func() {
			_, err := br.ReadString('\n')
			more <- err
		}()
		select {
		case err := <-more:
			t.Fatalf("stream went on while stalled (err %v)", err)
		case <-time.After(100 * time.Millisecond):
		}
		cancel()
		if err := <-more; err == nil {
			t.Errorf("read after cancel succeeded")
		}
	})
	t.Run("close ends a stall", func(t *testing.T) {
		s := NewMessagesServer(&MessagesOptions{Replies: []*Reply{{Content: []ContentBlock{TextBlock("x")}, StallAfterEvents: 1}}})
		resp := post(t, s.URL+"/v1/messages", streamBody)
		br := bufio.NewReader(resp.Body)
		br.ReadString('\n') // the stream has started
		done := make(chan struct{})
		go func() { s.Close(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatal("Close blocked on a stalled stream")
		}
	})
}

func TestMessagesServerScript(t *testing.T) {
	s := NewMessagesServer(&MessagesOptions{
		Replies: []*Reply{TextReply("one"), TextReply("two")},
		Respond: func(r *Request) *Reply {
			if r.Params.Contains("special") {
				return TextReply("from func")
			}
			return nil
		},
		Fallback: TextReply("fallback"),
	})
	defer s.Close()
	ask := func(prompt string) string {
		t.Helper()
		body := fmt.Sprintf(`{"model":"m","max_tokens":10,"stream":true,"tools":[{"name":"Bash"}],"messages":[{"role":"user","content":%q}]}`, prompt)
		return reassemble(t, readSSE(t, post(t, s.URL+"/v1/messages", body).Body))[0].Text
	}
	var got []string
	for _, p := range []string{"a", "special", "b", "c"} {
		got = append(got, ask(p))
		if p == "b" {
			if n := s.Pending(); n != 0 {
				t.Errorf("pending after the queue ran out = %d", n)
			}
		}
	}
	s.Enqueue(TextReply("three"))
	if n := s.Pending(); n != 1 {
		t.Errorf("pending after Enqueue = %d, want 1", n)
	}
	got = append(got, ask("d"))
	want := []string{"one", "from func", "two", "fallback", "three"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("replies (-want +got):\n%s", diff)
	}
	var unexpected []string
	for _, r := range s.Unexpected() {
		unexpected = append(unexpected, r.Params.LastUser().Text())
	}
	if diff := cmp.Diff([]string{"c"}, unexpected); diff != "" {
		t.Errorf("unexpected requests (-want +got):\n%s", diff)
	}
	reqs := s.MessagesRequests()
	if len(reqs) != 5 || !reqs[3].Unscripted || reqs[3].Reply.Content[0].Text != "fallback" {
		t.Errorf("requests = %d, 4th unscripted = %v", len(reqs), len(reqs) > 3 && reqs[3].Unscripted)
	}
}

func TestMessagesServerDefaultFallback(t *testing.T) {
	s := NewMessagesServer(nil)
	defer s.Close()
	got := reassemble(t, stream(t, s))
	if diff := cmp.Diff([]ContentBlock{TextBlock("ok")}, got, cmpBlocks); diff != "" {
		t.Errorf("fallback (-want +got):\n%s", diff)
	}
	if n := len(s.Unexpected()); n != 1 {
		t.Errorf("unexpected = %d, want the fallback request flagged", n)
	}
}

func TestMessagesServerSideRequests(t *testing.T) {
	s := NewMessagesServer(&MessagesOptions{
		Replies: []*Reply{TextReply("main")},
		RespondSide: func(r *Request) *Reply {
			if r.Params.SystemContains("title") {
				return TextReply(`{"title":"Fake title"}`)
			}
			return nil
		},
	})
	defer s.Close()
	// As sent on generate_session_title, then side_question, then a
	// prompt suggestion after a turn, then the agent loop.
	title := `{"model":"m","max_tokens":64000,"stream":true,"tools":[],"system":[{"type":"text","text":"Generate a concise, sentence-case title"}],` +
		`"output_config":{"format":{"type":"json_schema","schema":{}}},"messages":[{"role":"user","content":"<session>x</session>"}]}`
	side := `{"model":"m","max_tokens":64000,"stream":true,"tools":[{"name":"Bash"}],"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"ok"},` +
		`{"role":"user","content":"<system-reminder>This is a side question from the user. You must answer"}]}`
	suggest := `{"model":"m","max_tokens":64000,"stream":true,"tools":[{"name":"Bash"}],"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"ok"},` +
		`{"role":"user","content":"[SUGGESTION MODE: Suggest what the user might naturally type next into Claude Code.]"}]}`
	var got []string
	for _, body := range []string{title, side, suggest, streamBody} {
		got = append(got, reassemble(t, readSSE(t, post(t, s.URL+"/v1/messages", body).Body))[0].Text)
	}
	if diff := cmp.Diff([]string{`{"title":"Fake title"}`, "ok", "ok", "main"}, got); diff != "" {
		t.Errorf("replies (-want +got):\n%s", diff)
	}
	if n, m := len(s.SideRequests()), len(s.MessagesRequests()); n != 3 || m != 1 {
		t.Errorf("side = %d, main = %d; want 3 and 1", n, m)
	}
	if n := len(s.Unexpected()); n != 0 {
		t.Errorf("side requests reported unexpected: %d", n)
	}
}

func TestMessagesServerRecording(t *testing.T) {
	s := NewMessagesServer(nil)
	defer s.Close()
	body := `{
		"model":"claude-test-1","max_tokens":64000,"stream":true,
		"system":[{"type":"text","text":"x-anthropic-billing-header: cc_version=1; cc_is_subagent=true;"},{"type":"text","text":"You are a test."}],
		"messages":[
			{"role":"user","content":[{"type":"text","text":"<system-reminder>ctx</system-reminder>"},{"type":"text","text":"run it"}]},
			{"role":"system","content":"hook additionalContext: remember the milk"},
			{"role":"assistant","content":[{"type":"thinking","thinking":"hm","signature":"sig"},{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"echo hi"}}]},
			{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"hi\n"},
				{"type":"tool_result","tool_use_id":"toolu_2","is_error":true,"content":[{"type":"text","text":"denied"}]}]}
		],
		"tools":[{"name":"Bash","description":"run","input_schema":{"type":"object"}},{"name":"web_search","type":"web_search_20250305"}],
		"thinking":{"type":"enabled","budget_tokens":1024},
		"metadata":{"user_id":"{\"session_id\":\"s1\"}"}
	}`
	req, _ := http.NewRequest(http.MethodPost, s.URL+"/v1/messages?beta=true", strings.NewReader(body))
	req.Header.Set("X-Api-Key", DefaultAPIKey)
	req.Header.Set("Authorization", "Bearer secret")
	req.Header.Set("X-Claude-Code-Session-Id", "sess-1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()

	reqs := s.Requests()
	if len(reqs) != 1 {
		t.Fatalf("recorded %d requests", len(reqs))
	}
	r := reqs[0]
	if r.Kind != RequestKindMessages || r.Method != "POST" || r.Path != "/v1/messages" || r.Query.Get("beta") != "true" || r.Seq != 1 {
		t.Errorf("request = %s %s %v kind %s seq %d", r.Method, r.Path, r.Query, r.Kind, r.Seq)
	}
	if string(r.Body) != body {
		t.Errorf("raw body not kept")
	}
	if r.Header.Get("X-Api-Key") != DefaultAPIKey || r.Header.Get("Authorization") != "REDACTED" || r.SessionID() != "sess-1" {
		t.Errorf("headers = %v", r.Header)
	}
	if !r.Subagent() || !r.Stream() || r.RequestID != "req_fake_000001" {
		t.Errorf("subagent %v stream %v request id %q", r.Subagent(), r.Stream(), r.RequestID)
	}
	p := r.Params
	if p.Model != "claude-test-1" || p.MaxTokens != 64000 || !p.Stream {
		t.Errorf("params = %+v", p)
	}
	if diff := cmp.Diff(&ThinkingConfig{Type: "enabled", BudgetTokens: 1024}, p.Thinking); diff != "" {
		t.Errorf("thinking (-want +got):\n%s", diff)
	}
	if p.Metadata == nil || p.Metadata.UserID != `{"session_id":"s1"}` {
		t.Errorf("metadata = %+v", p.Metadata)
	}
	if diff := cmp.Diff([]string{"Bash", "web_search"}, p.ToolNames()); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
	if p.Tools[1].Type != "web_search_20250305" || string(p.Tools[0].InputSchema) != `{"type":"object"}` {
		t.Errorf("tools = %+v", p.Tools)
	}
	var roles []string
	for _, m := range p.Messages {
		roles = append(roles, m.Role)
	}
	if diff := cmp.Diff([]string{"user", "system", "assistant", "user"}, roles); diff != "" {
		t.Errorf("roles (-want +got):\n%s", diff)
	}
	wantResults := []ContentBlock{
		{Type: BlockTypeToolResult, ToolUseID: "toolu_1", Content: []ContentBlock{TextBlock("hi\n")}},
		{Type: BlockTypeToolResult, ToolUseID: "toolu_2", IsError: true, Content: []ContentBlock{TextBlock("denied")}},
	}
	if diff := cmp.Diff(wantResults, p.ToolResults(), cmpBlocks); diff != "" {
		t.Errorf("tool results (-want +got):\n%s", diff)
	}
	if tr := p.ToolResult("toolu_2"); tr == nil || !tr.IsError {
		t.Errorf("ToolResult(toolu_2) = %+v", tr)
	}
	if tr := p.ToolResult("toolu_9"); tr != nil {
		t.Errorf("ToolResult(toolu_9) = %+v, want nil", tr)
	}
	if got := p.LastUser(); got == nil || len(got.Content) != 2 || got.Content[0].ToolUseID != "toolu_1" {
		t.Errorf("LastUser = %+v", got)
	}
	wantAssistant := []ContentBlock{ThinkingBlock("hm", "sig"), ToolUseBlock("toolu_1", "Bash", map[string]string{"command": "echo hi"})}
	if diff := cmp.Diff(wantAssistant, p.Messages[2].Content, cmpBlocks); diff != "" {
		t.Errorf("assistant blocks (-want +got):\n%s", diff)
	}
	for _, s := range []string{"remember the milk", "run it", "<system-reminder>", "echo hi", "denied", "hm"} {
		if !p.Contains(s) {
			t.Errorf("Contains(%q) = false", s)
		}
	}
	if p.Contains("You are a test") || !p.SystemContains("You are a test") {
		t.Errorf("Contains must search messages only, SystemContains the system prompt")
	}
	var nilParams *MessageParams
	if nilParams.Contains("x") || nilParams.LastUser() != nil || nilParams.ToolResult("x") != nil || nilParams.ToolNames() != nil {
		t.Errorf("nil MessageParams helpers must return zero values")
	}
}

func TestMessagesServerRedactsForeignKeys(t *testing.T) {
	s := NewMessagesServer(&MessagesOptions{APIKey: "sk-mine"})
	defer s.Close()
	req, _ := http.NewRequest(http.MethodHead, s.URL+"/", nil)
	req.Header.Set("X-Api-Key", "sk-ant-real-looking")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := s.Requests()[0].Header.Get("X-Api-Key"); got != "REDACTED" {
		t.Errorf("foreign x-api-key recorded as %q", got)
	}
	if got := s.CLIEnv("")["ANTHROPIC_API_KEY"]; got != "sk-mine" {
		t.Errorf("CLIEnv key = %q", got)
	}
}

func TestMessagesServerConcurrentRecording(t *testing.T) {
	const n = 16
	s := NewMessagesServer(nil)
	defer s.Close()
	for i := range n {
		s.Enqueue(TextReply(fmt.Sprint(i)))
	}
	var wg sync.WaitGroup
	answers := make(chan string, n)
	for range n {
		wg.Go(func() {
			answers <- reassemble(t, stream(t, s))[0].Text
			s.Requests() // concurrent reads
		})
	}
	wg.Wait()
	close(answers)
	seen := map[string]bool{}
	for a := range answers {
		seen[a] = true
	}
	reqs := s.Requests()
	if len(seen) != n || len(reqs) != n || s.Pending() != 0 {
		t.Errorf("%d distinct answers, %d recorded, %d pending; want each reply used once", len(seen), len(reqs), s.Pending())
	}
	for i, r := range reqs {
		if r.Seq != i+1 {
			t.Errorf("requests[%d].Seq = %d, want arrival order", i, r.Seq)
		}
	}
}

func TestMessagesServerCountTokensAndProbes(t *testing.T) {
	s := NewMessagesServer(&MessagesOptions{Replies: []*Reply{TextReply("kept")}})
	defer s.Close()
	body := `{"model":"m","messages":[{"role":"user","content":"` + strings.Repeat("x", 400) + `"}]}`
	resp := post(t, s.URL+"/v1/messages/count_tokens?beta=true", body)
	var got struct {
		InputTokens int `json:"input_tokens"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
		t.Fatal(err)
	}
	if got.InputTokens < 100 || got.InputTokens > 200 {
		t.Errorf("input_tokens = %d, want about a quarter of %d bytes", got.InputTokens, len(body))
	}
	for _, path := range []string{"/", "/api/hello"} {
		req, _ := http.NewRequest(http.MethodHead, s.URL+path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("HEAD %s = %d", path, resp.StatusCode)
		}
	}
	var kinds []RequestKind
	for _, r := range s.Requests() {
		kinds = append(kinds, r.Kind)
	}
	if diff := cmp.Diff([]RequestKind{RequestKindCountTokens, RequestKindProbe, RequestKindProbe}, kinds); diff != "" {
		t.Errorf("kinds (-want +got):\n%s", diff)
	}
	if s.Pending() != 1 || len(s.Unexpected()) != 0 {
		t.Errorf("count_tokens and probes must not touch the script: pending %d, unexpected %d", s.Pending(), len(s.Unexpected()))
	}
}

func TestMessagesServerUnknownPath(t *testing.T) {
	s := NewMessagesServer(nil)
	defer s.Close()
	resp, err := http.Get(s.URL + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body errorBody
	json.NewDecoder(resp.Body).Decode(&body)
	if resp.StatusCode != 404 || body.Type != "error" || body.Error.Type != "not_found_error" || body.RequestID == "" {
		t.Errorf("got %d %+v", resp.StatusCode, body)
	}
	if !strings.Contains(body.Error.Message, "GET /v1/models") {
		t.Errorf("message %q does not name the request", body.Error.Message)
	}
	un := s.Unexpected()
	if len(un) != 1 || un[0].Kind != RequestKindUnknown || un[0].Path != "/v1/models" {
		t.Errorf("unexpected = %+v", un)
	}
}

func TestMessagesServerBadBody(t *testing.T) {
	s := NewMessagesServer(nil)
	defer s.Close()
	resp := post(t, s.URL+"/v1/messages", `{not json`)
	if resp.StatusCode != 400 {
		t.Errorf("status = %d, want 400", resp.StatusCode)
	}
	if un := s.Unexpected(); len(un) != 1 || un[0].ParseError == nil {
		t.Errorf("unexpected = %+v, want the bad body flagged", un)
	}
}

func TestMessagesServerWaitMessages(t *testing.T) {
	s := NewMessagesServer(&MessagesOptions{Replies: []*Reply{{Content: []ContentBlock{TextBlock("x")}, StallAfterEvents: 1}}})
	defer s.Close()
	go func() {
		req, _ := http.NewRequest(http.MethodPost, s.URL+"/v1/messages", strings.NewReader(streamBody))
		if resp, err := http.DefaultClient.Do(req); err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	got, err := s.WaitMessages(ctx, 1)
	if err != nil || len(got) != 1 {
		t.Fatalf("WaitMessages = %d, %v", len(got), err)
	}
	short, cancel2 := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel2()
	if _, err := s.WaitMessages(short, 2); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("WaitMessages(2) = %v, want a deadline error", err)
	}
}

func TestToolUsePanicsOnNonObject(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Errorf("ToolUse with a string input did not panic")
		}
	}()
	ToolUseBlock("id", "Bash", "not an object")
}
