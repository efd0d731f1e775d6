package claudetest

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// These tests run the real CLI (TETHER_CLI_VERSION, default 2.1.197)
// against the fake Messages API. Each has its own server, HOME and working
// directory, so they run in parallel. Run them against another version
// with
//
//	TETHER_CLI_VERSION=2.1.330 go test -run RealCLI ./claude/claudetest/

// initLine is the part of system/init the tests use.
type initLine struct {
	SessionID string `json:"session_id"`
	Version   string `json:"claude_code_version"`
	Model     string `json:"model"`
}

func initOf(t testing.TB, lines []cliLine) initLine {
	t.Helper()
	ls := linesOf(lines, "system", "init")
	if len(ls) == 0 {
		t.Fatalf("no system/init line in the turn")
	}
	var in initLine
	ls[0].decode(t, &in)
	return in
}

// versionAtLeast compares dotted numeric versions.
func versionAtLeast(v, min string) bool {
	a, b := strings.Split(v, "."), strings.Split(min, ".")
	for i := 0; i < len(a) || i < len(b); i++ {
		var x, y int
		if i < len(a) {
			x, _ = strconv.Atoi(a[i])
		}
		if i < len(b) {
			y, _ = strconv.Atoi(b[i])
		}
		if x != y {
			return x > y
		}
	}
	return true
}

// checkNothingUnexpected fails if the CLI asked for anything the test did
// not script, or made side requests.
func checkNothingUnexpected(t testing.TB, s *MessagesServer) {
	t.Helper()
	for _, r := range s.Unexpected() {
		t.Errorf("unexpected request #%d %s %s (kind %s, unscripted %v)", r.Seq, r.Method, r.Path, r.Kind, r.Unscripted)
	}
	for _, r := range s.SideRequests() {
		t.Errorf("unexpected side request #%d (model %s)", r.Seq, r.Params.Model)
	}
}

func TestRealCLIBasicTurn(t *testing.T) {
	t.Parallel()
	s := NewMessagesServer(&MessagesOptions{Replies: []*Reply{TextReply("hello from the fake")}})
	t.Cleanup(s.Close) // registered first, so it runs after startCLI has stopped the CLI
	p := startCLI(t, s)
	p.initialize()
	lines, res := p.turn("hi")

	if res.IsError || res.Result != "hello from the fake" || res.Subtype != "success" {
		t.Errorf("result = %+v, want success with the scripted text", res)
	}
	reqs := s.MessagesRequests()
	if len(reqs) != 1 {
		t.Fatalf("got %d messages requests, want 1", len(reqs))
	}
	req := reqs[0]
	as := assistants(t, lines)
	if len(as) != 1 {
		t.Fatalf("got %d assistant lines, want 1", len(as))
	}
	if got, want := as[0].Message.Model, req.Params.Model; got != want || want == "" {
		t.Errorf("assistant model = %q, want the request's %q echoed", got, want)
	}
	if got := as[0].RequestID; got != req.RequestID {
		t.Errorf("assistant request_id = %q, want the fake's request-id header %q", got, req.RequestID)
	}
	if res.Usage.OutputTokens != req.Reply.Usage.OutputTokens {
		t.Errorf("result output_tokens = %d, want the reply's %d", res.Usage.OutputTokens, req.Reply.Usage.OutputTokens)
	}

	// What the CLI sent.
	if got := req.Query.Get("beta"); got != "true" {
		t.Errorf("query beta = %q, want true", got)
	}
	if got := req.Header.Get("X-Api-Key"); got != DefaultAPIKey {
		t.Errorf("x-api-key = %q, want %q", got, DefaultAPIKey)
	}
	if got := req.Header.Get("Anthropic-Version"); got != "2023-06-01" {
		t.Errorf("anthropic-version = %q", got)
	}
	if got, want := req.SessionID(), initOf(t, lines).SessionID; got != want {
		t.Errorf("x-claude-code-session-id = %q, want the session id %q", got, want)
	}
	if !req.Params.Stream {
		t.Errorf("main-loop request not streamed")
	}
	last := req.Params.LastUser()
	if n := len(last.Content); n == 0 || last.Content[n-1].Text != "hi" {
		t.Errorf("last user message = %+v, want the prompt last", last.Content)
	}
	if !req.Params.SystemContains("x-anthropic-billing-header") {
		t.Errorf("system prompt lacks the billing header block")
	}
	if req.Subagent() {
		t.Errorf("main request classified as a subagent request")
	}
	if !req.Params.Contains("<system-reminder>") {
		t.Errorf("messages carry no <system-reminder>")
	}
	if len(req.Params.ToolNames()) == 0 {
		t.Errorf("no tools offered")
	}
	checkNothingUnexpected(t, s)
}

func TestRealCLIToolUseRoundTrip(t *testing.T) {
	t.Parallel()
	const id = "toolu_echo_1"
	s := NewMessagesServer(&MessagesOptions{
		Replies: []*Reply{ToolUseReply(id, "Bash", map[string]string{"command": "echo hi", "description": "Say hi"})},
		// The second answer depends on what the tool returned.
		Respond: func(r *Request) *Reply {
			if tr := r.Params.ToolResult(id); tr != nil {
				return TextReply("the tool said " + strings.TrimSpace(blocksText(tr.Content)))
			}
			return nil
		},
	})
	t.Cleanup(s.Close) // registered first, so it runs after startCLI has stopped the CLI
	p := startCLI(t, s, "--permission-prompt-tool", "stdio")
	p.initialize()
	lines, res := p.turn("run echo hi")

	if res.IsError || res.Result != "the tool said hi" || res.NumTurns != 2 {
		t.Errorf("result = %+v, want success %q after 2 turns", res, "the tool said hi")
	}
	if n := len(linesOf(lines, "control_request", "")); n != 0 {
		t.Errorf("got %d control requests; echo should be auto-allowed", n)
	}
	reqs := s.MessagesRequests()
	if len(reqs) != 2 {
		t.Fatalf("got %d messages requests, want 2", len(reqs))
	}
	tr := reqs[1].Params.ToolResult(id)
	if tr == nil {
		t.Fatalf("second request has no tool_result for %s; tool results: %+v", id, reqs[1].Params.ToolResults())
	}
	if tr.IsError || strings.TrimSpace(blocksText(tr.Content)) != "hi" {
		t.Errorf("tool_result = %+v, want \"hi\", not an error", tr)
	}
	// The tool_use block goes back as it was streamed (the input reassembled
	// from input_json_delta chunks).
	var sent *ContentBlock
	for _, m := range reqs[1].Params.Messages {
		for i, b := range m.Content {
			if m.Role == "assistant" && b.Type == BlockTypeToolUse {
				sent = &m.Content[i]
			}
		}
	}
	if sent == nil {
		t.Fatalf("second request has no assistant tool_use block")
	}
	var gotIn, wantIn map[string]string
	json.Unmarshal(sent.Input, &gotIn)
	json.Unmarshal(reqs[0].Reply.Content[0].Input, &wantIn)
	if sent.ID != id || sent.Name != "Bash" || !cmp.Equal(gotIn, wantIn) {
		t.Errorf("tool_use sent back = %s %s %s, want %s Bash %v", sent.ID, sent.Name, sent.Input, id, wantIn)
	}
	if reqs[0].Reply.StopReason != StopReasonToolUse {
		t.Errorf("first reply stop reason = %q", reqs[0].Reply.StopReason)
	}
	checkNothingUnexpected(t, s)
}

func TestRealCLIThinking(t *testing.T) {
	t.Parallel()
	s := NewMessagesServer(&MessagesOptions{Replies: []*Reply{
		{Content: []ContentBlock{
			ThinkingBlock("Let me think about this carefully.", "sig-fake-1"),
			RedactedThinkingBlock("opaque-redacted-data"),
			TextBlock("forty-two"),
		}},
		TextReply("second answer"),
	}})
	t.Cleanup(s.Close) // registered first, so it runs after startCLI has stopped the CLI
	p := startCLI(t, s, "--include-partial-messages")
	p.initialize()
	lines, res := p.turn("think")
	if res.IsError || res.Result != "forty-two" {
		t.Errorf("result = %+v, want forty-two", res)
	}

	// One assistant line per block, thinking kept with its signature.
	var got []string
	for _, a := range assistants(t, lines) {
		for _, c := range a.Message.Content {
			got = append(got, c.Type+":"+c.Thinking+c.Signature+c.Data+c.Text)
		}
	}
	want := []string{
		"thinking:Let me think about this carefully.sig-fake-1",
		"redacted_thinking:opaque-redacted-data",
		"text:forty-two",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("assistant blocks (-want +got):\n%s", diff)
	}

	// The raw SSE deltas pass through as stream_event lines.
	deltas := map[string]bool{}
	for _, l := range linesOf(lines, "stream_event", "") {
		var ev struct {
			Event struct {
				Type  string `json:"type"`
				Delta struct {
					Type string `json:"type"`
				} `json:"delta"`
			} `json:"event"`
		}
		l.decode(t, &ev)
		if ev.Event.Type == "content_block_delta" {
			deltas[ev.Event.Delta.Type] = true
		}
	}
	for _, d := range []string{"thinking_delta", "signature_delta", "text_delta"} {
		if !deltas[d] {
			t.Errorf("no %s stream_event; saw %v", d, deltas)
		}
	}

	// The next request sends the thinking blocks back verbatim.
	p.turn("again")
	reqs := s.MessagesRequests()
	if len(reqs) != 2 {
		t.Fatalf("got %d messages requests, want 2", len(reqs))
	}
	var back []string
	for _, m := range reqs[1].Params.Messages {
		for _, b := range m.Content {
			if m.Role == "assistant" {
				back = append(back, string(b.Type)+":"+b.Thinking+b.Signature+b.Data+b.Text)
			}
		}
	}
	if diff := cmp.Diff(want, back); diff != "" {
		t.Errorf("assistant blocks sent back (-want +got):\n%s", diff)
	}
	checkNothingUnexpected(t, s)
}

func TestRealCLIRetryOverloaded(t *testing.T) {
	t.Parallel()
	s := NewMessagesServer(&MessagesOptions{
		MaxRetries: 2,
		// retry-after "1" is honoured (1 s); "0" or none means the CLI's
		// own back-off (~0.5 s); retry-after-ms is ignored.
		Replies: []*Reply{OverloadedReply("1"), TextReply("recovered")},
	})
	t.Cleanup(s.Close) // registered first, so it runs after startCLI has stopped the CLI
	p := startCLI(t, s)
	p.initialize()
	start := time.Now()
	lines, res := p.turn("hi")
	elapsed := time.Since(start)

	if res.IsError || res.Result != "recovered" {
		t.Errorf("result = %+v, want recovered", res)
	}
	retries := linesOf(lines, "system", "api_retry")
	if len(retries) != 1 {
		t.Fatalf("got %d system/api_retry lines, want 1", len(retries))
	}
	var retry struct {
		Attempt     int     `json:"attempt"`
		MaxRetries  int     `json:"max_retries"`
		ErrorStatus int     `json:"error_status"`
		Error       string  `json:"error"`
		Delay       float64 `json:"retry_delay_ms"`
	}
	retries[0].decode(t, &retry)
	if retry.Attempt != 1 || retry.MaxRetries != 2 || retry.ErrorStatus != 529 || retry.Error != "overloaded" {
		t.Errorf("api_retry = %+v, want attempt 1 of 2, 529 overloaded", retry)
	}
	if retry.Delay < 1000 || retry.Delay >= 2000 || elapsed < time.Second {
		t.Errorf("retry_delay_ms = %.0f and the turn took %v; want retry-after: 1 honoured", retry.Delay, elapsed)
	}
	reqs := s.MessagesRequests()
	if len(reqs) != 2 {
		t.Fatalf("got %d messages requests, want 2", len(reqs))
	}
	// The CLI retries by itself: the SDK's retry counter header stays 0.
	if got := reqs[1].Header.Get("X-Stainless-Retry-Count"); got != "0" {
		t.Errorf("retried request x-stainless-retry-count = %q, want 0", got)
	}
	if diff := cmp.Diff(reqs[0].Body, reqs[1].Body); diff != "" {
		t.Errorf("retried request body differs (-first +retry):\n%s", diff)
	}
	checkNothingUnexpected(t, s)
}

func TestRealCLIRetriesExhausted(t *testing.T) {
	t.Parallel()
	s := NewMessagesServer(&MessagesOptions{
		MaxRetries: -1, // none
		Replies:    []*Reply{ErrorReply(500, "", "fake internal error")},
	})
	t.Cleanup(s.Close) // registered first, so it runs after startCLI has stopped the CLI
	p := startCLI(t, s)
	p.initialize()
	lines, res := p.turn("hi")
	if !res.IsError || res.APIErrorStatus == nil || *res.APIErrorStatus != 500 {
		t.Errorf("result = %+v, want is_error with api_error_status 500", res)
	}
	if n := len(linesOf(lines, "system", "api_retry")); n != 0 {
		t.Errorf("got %d api_retry lines with CLAUDE_CODE_MAX_RETRIES=0", n)
	}
	if n := len(s.MessagesRequests()); n != 1 {
		t.Errorf("got %d messages requests, want 1", n)
	}
	checkNothingUnexpected(t, s)
}

// An SSE error before any content block is complete makes both versions
// fall back to a non-streaming request for the same turn; the script's
// next reply answers it as JSON.
func TestRealCLIStreamErrorMidBlock(t *testing.T) {
	t.Parallel()
	broken := &Reply{
		Content:     []ContentBlock{TextBlock("this answer is cut short before it ends")},
		ChunkSize:   8,
		StreamError: &StreamError{AfterEvents: 4, Message: "fake overload mid-stream"}, // 2 deltas in
	}
	s := NewMessagesServer(&MessagesOptions{Replies: []*Reply{broken, TextReply("second try")}})
	t.Cleanup(s.Close) // registered first, so it runs after startCLI has stopped the CLI
	p := startCLI(t, s)
	p.initialize()
	lines, res := p.turn("hi")

	if res.IsError || res.Result != "second try" {
		t.Errorf("result = %+v, want the fallback's answer", res)
	}
	reqs := s.MessagesRequests()
	if len(reqs) != 2 {
		t.Fatalf("got %d messages requests, want 2", len(reqs))
	}
	if !reqs[0].Stream() || reqs[1].Stream() {
		t.Errorf("stream = %v then %v, want a streaming request then a non-streaming one", reqs[0].Stream(), reqs[1].Stream())
	}
	if got, want := reqs[1].Params.LastUser().Text(), reqs[0].Params.LastUser().Text(); got != want {
		t.Errorf("fallback asks %q, want the same prompt %q", got, want)
	}
	// The cut-off text is dropped: only the fallback's answer is shown.
	var texts []string
	for _, a := range assistants(t, lines) {
		for _, c := range a.Message.Content {
			texts = append(texts, c.Text)
		}
	}
	if diff := cmp.Diff([]string{"second try"}, texts); diff != "" {
		t.Errorf("assistant texts (-want +got):\n%s", diff)
	}
	checkNothingUnexpected(t, s)
}

// An SSE error after a complete block: 2.1.197 keeps the block and ends
// the turn with the error; 2.1.330 asks the model to resume in a new
// streaming request.
func TestRealCLIStreamErrorAfterBlock(t *testing.T) {
	t.Parallel()
	broken := &Reply{
		Content:     []ContentBlock{TextBlock("complete block"), TextBlock("never sent")},
		ChunkSize:   100,
		StreamError: &StreamError{AfterEvents: 4, Message: "fake overload mid-stream"}, // after the first content_block_stop
	}
	s := NewMessagesServer(&MessagesOptions{Replies: []*Reply{broken, TextReply("resumed")}})
	t.Cleanup(s.Close) // registered first, so it runs after startCLI has stopped the CLI
	p := startCLI(t, s)
	p.initialize()
	lines, res := p.turn("hi")
	version := initOf(t, lines).Version
	as := assistants(t, lines)
	if len(as) == 0 || len(as[0].Message.Content) == 0 || as[0].Message.Content[0].Text != "complete block" {
		t.Errorf("first assistant line = %+v, want the complete block kept", as)
	}
	reqs := s.MessagesRequests()
	if versionAtLeast(version, "2.1.330") {
		if res.IsError || res.Result != "resumed" || len(reqs) != 2 {
			t.Fatalf("CLI %s: result = %+v after %d requests, want the resumed answer after 2", version, res, len(reqs))
		}
		if !reqs[1].Stream() || !reqs[1].Params.Contains("cut off mid-stream") {
			t.Errorf("CLI %s: second request is not a streamed resume prompt: %q", version, reqs[1].Params.LastUser().Text())
		}
	} else {
		if !res.IsError || res.Result != "API Error: fake overload mid-stream" || len(reqs) != 1 {
			t.Errorf("CLI %s: result = %+v after %d requests, want the stream error after 1", version, res, len(reqs))
		}
		if s.Pending() != 1 {
			t.Errorf("pending replies = %d, want the second one unused", s.Pending())
		}
	}
	checkNothingUnexpected(t, s)
}

func TestRealCLIInterruptStalledStream(t *testing.T) {
	t.Parallel()
	s := NewMessagesServer(&MessagesOptions{Replies: []*Reply{{
		Content:          []ContentBlock{TextBlock("partial answer that never finishes")},
		ChunkSize:        8,
		StallAfterEvents: 3, // message_start, content_block_start, one delta
	}}})
	t.Cleanup(s.Close) // registered first, so it runs after startCLI has stopped the CLI
	p := startCLI(t, s, "--include-partial-messages")
	p.initialize()
	p.sendUser("hi")
	p.readUntil(func(l cliLine) bool {
		return l.Type == "stream_event" && strings.Contains(string(l.Raw), `"text_delta"`)
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if _, err := s.WaitMessages(ctx, 1); err != nil {
		t.Fatal(err)
	}
	p.send(`{"type":"control_request","request_id":"int_1","request":{"subtype":"interrupt"}}`)
	lines := p.readUntil(func(l cliLine) bool { return l.Type == "result" })
	var res resultLine
	lines[len(lines)-1].decode(t, &res)
	if res.Subtype != "error_during_execution" {
		t.Errorf("result subtype = %q, want error_during_execution", res.Subtype)
	}
	checkNothingUnexpected(t, s)
}

// A max_tokens stop makes the CLI ask for the rest within the same turn.
func TestRealCLIMaxTokensContinuation(t *testing.T) {
	t.Parallel()
	s := NewMessagesServer(&MessagesOptions{Replies: []*Reply{
		{Content: []ContentBlock{TextBlock("the first half")}, StopReason: StopReasonMaxTokens},
		TextReply("and the rest"),
	}})
	t.Cleanup(s.Close) // registered first, so it runs after startCLI has stopped the CLI
	p := startCLI(t, s)
	p.initialize()
	_, res := p.turn("write a lot")
	if res.IsError || res.Result != "and the rest" {
		t.Errorf("result = %+v, want the continuation's text", res)
	}
	reqs := s.MessagesRequests()
	if len(reqs) != 2 {
		t.Fatalf("got %d messages requests, want 2", len(reqs))
	}
	if got := reqs[1].Params.LastUser().Text(); !strings.Contains(got, "Output token limit hit") {
		t.Errorf("continuation prompt = %q", got)
	}
	checkNothingUnexpected(t, s)
}
