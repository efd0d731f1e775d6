package claudetest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"
)

// BlockType names a content block kind on the Messages API wire.
type BlockType string

// The block types the fake answers with, and the ones the CLI sends back.
const (
	BlockTypeText             BlockType = "text"
	BlockTypeThinking         BlockType = "thinking"
	BlockTypeRedactedThinking BlockType = "redacted_thinking"
	BlockTypeToolUse          BlockType = "tool_use"
	BlockTypeToolResult       BlockType = "tool_result"
	BlockTypeImage            BlockType = "image"
)

// ContentBlock is one content block, in a scripted Reply or in a recorded
// request's messages. It is one flat struct rather than a sealed interface
// because its two jobs want that: a test writes replies with the
// constructors (TextBlock, ThinkingBlock, RedactedThinkingBlock,
// ToolUseBlock), and reads requests by field (b.ToolUseID, b.Text) without
// a type switch. The tool_use block a Reply streams comes back in the next
// request as a ContentBlock with the same ID, Name and Input.
//
// Only the fields of the block's Type are meaningful. Raw keeps the block's
// JSON as the CLI sent it (empty for blocks built in Go), for fields this
// type does not model (cache_control, image sources, citations).
type ContentBlock struct {
	Type BlockType

	// Text is the text of a text block.
	Text string

	// Thinking and Signature belong to a thinking block.
	Thinking  string
	Signature string

	// Data is the opaque payload of a redacted_thinking block.
	Data string

	// ID, Name and Input belong to a tool_use block. Input is a JSON object.
	ID    string
	Name  string
	Input json.RawMessage

	// ToolUseID, Content and IsError belong to a tool_result block. A
	// string content is recorded as one text block, so Content is the same
	// shape whichever form the CLI chose.
	ToolUseID string
	Content   []ContentBlock
	IsError   bool

	Raw json.RawMessage
}

// Text returns a text block.
func TextBlock(text string) ContentBlock {
	return ContentBlock{Type: BlockTypeText, Text: text}
}

// Thinking returns a thinking block with its signature. The CLI keeps both
// and sends them back verbatim in the next request.
func ThinkingBlock(thinking, signature string) ContentBlock {
	return ContentBlock{Type: BlockTypeThinking, Thinking: thinking, Signature: signature}
}

// RedactedThinking returns a redacted_thinking block carrying data.
func RedactedThinkingBlock(data string) ContentBlock {
	return ContentBlock{Type: BlockTypeRedactedThinking, Data: data}
}

// ToolUse returns a tool_use block. Input is marshalled with
// encoding/json and must encode to a JSON object; ToolUse panics otherwise,
// as that is a mistake in the test, not a condition to handle. An empty id
// is replaced by a generated "toolu_fake_…" id when the reply is sent.
func ToolUseBlock(id, name string, input any) ContentBlock {
	var raw json.RawMessage
	switch v := input.(type) {
	case nil:
		raw = json.RawMessage(`{}`)
	case json.RawMessage:
		raw = v
	case []byte:
		raw = json.RawMessage(v)
	default:
		b, err := marshalPlain(input)
		if err != nil {
			panic(fmt.Sprintf("claudetest: ToolUseBlock(%q) input: %v", name, err))
		}
		raw = b
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		panic(fmt.Sprintf("claudetest: ToolUseBlock(%q) input is not a JSON object: %s", name, raw))
	}
	return ContentBlock{Type: BlockTypeToolUse, ID: id, Name: name, Input: raw}
}

// StopReason is why a reply ended, as the API reports it in message_delta.
type StopReason string

// The stop reasons the CLI reacts to. With StopReasonMaxTokens the CLI asks
// again on its own ("Output token limit hit. Resume directly …"), so a
// script needs one more reply for the continuation.
const (
	StopReasonEndTurn      StopReason = "end_turn"
	StopReasonToolUse      StopReason = "tool_use"
	StopReasonMaxTokens    StopReason = "max_tokens"
	StopReasonStopSequence StopReason = "stop_sequence"
)

// Usage is the token accounting of a reply. Zero counts are estimated from
// the request and the reply (about four bytes a token), so a test that does
// not care still gets plausible, non-zero numbers in the CLI's result.
type Usage struct {
	InputTokens              int
	OutputTokens             int
	CacheCreationInputTokens int
	CacheReadInputTokens     int
}

// A Reply is the fake API's answer to one /v1/messages request: either a
// message (Content, StopReason, Usage) streamed as SSE or returned as JSON,
// or, when Error is set, an HTTP error.
//
// A Reply is read-only once handed to the server; the same Reply may answer
// many requests.
type Reply struct {
	// Content is the message's blocks, in order.
	Content []ContentBlock

	// StopReason defaults to StopReasonToolUse when Content has a tool_use
	// block and StopReasonEndTurn otherwise.
	StopReason StopReason

	// StopSequence is reported with StopReasonStopSequence.
	StopSequence string

	// Usage is reported in message_start and message_delta.
	Usage Usage

	// Model is the model id in the answer; empty echoes the request's model.
	Model string

	// Error, when set, makes the server answer with an HTTP error instead of
	// a message.
	Error *HTTPError

	// StreamError, when set, ends a streamed answer with an SSE error event
	// after StreamError.AfterEvents ordinary events.
	StreamError *StreamError

	// Delay is how long the server waits before sending the status line and
	// headers. The CLI's request timeout is far longer.
	Delay time.Duration

	// EventDelay is the pause between SSE events, so that a test can act
	// (interrupt, cancel) while a message is half streamed.
	EventDelay time.Duration

	// ChunkSize is the number of runes per text, thinking and input_json
	// delta; zero means 16.
	ChunkSize int

	// StallAfterEvents, when positive, makes the stream stop after that many
	// events and hold the connection open until the client goes away or the
	// server closes: a deterministic "still generating" state for interrupt
	// tests, with no timing involved. Non-streaming answers ignore it.
	StallAfterEvents int

	// Ping sends a ping event right after message_start, as the real API
	// does. The CLI ignores it; it is off by default so event counts stay
	// simple.
	Ping bool
}

// TextReply returns a reply of one text block that ends the turn.
func TextReply(text string) *Reply {
	return &Reply{Content: []ContentBlock{TextBlock(text)}}
}

// CachedTextReply is TextReply with usage that reads as a warm prompt
// cache: a few fresh input tokens, the rest read from the cache. The
// estimated usage of a plain reply reads as a cold one (the CLI's system
// prompt, uncached), and the CLI skips what it does only on a warm cache,
// such as prompt suggestions (Options.PromptSuggestions).
func CachedTextReply(text string) *Reply {
	r := TextReply(text)
	r.Usage = Usage{InputTokens: 3, OutputTokens: 5, CacheReadInputTokens: 12000}
	return r
}

// ToolUseReply returns a reply asking for one tool call. The CLI runs the
// tool (if permitted) and sends its result in the next request.
func ToolUseReply(id, name string, input any) *Reply {
	return &Reply{Content: []ContentBlock{ToolUseBlock(id, name, input)}}
}

// BackgroundAgentReply returns a reply that starts a general-purpose
// agent in the background: an Agent tool call (id) with
// run_in_background. Its result comes at once and the agent runs on as a
// background task (a task_started, its end a task_notification); its
// own requests are main-loop requests with Request.Subagent set, so a
// script routes them with MessagesOptions.Respond.
func BackgroundAgentReply(id, description, prompt string) *Reply {
	return ToolUseReply(id, "Agent", map[string]any{
		"description": description, "prompt": prompt, "subagent_type": "general-purpose", "run_in_background": true,
	})
}

// BackgroundAgentScript is a MessagesOptions.Respond for a session whose
// first model step starts an agent in the background
// (BackgroundAgentReply with id, description and prompt) and whose next
// steps are then, in order (the last one repeated). Every request of the
// agent is held open, so the agent runs until it is stopped (its request
// then ends) or the server closes.
func BackgroundAgentScript(id, description, prompt string, then ...*Reply) RespondFunc {
	var mu sync.Mutex
	n := 0
	return func(q *Request) *Reply {
		if q.Subagent() {
			return &Reply{Content: []ContentBlock{TextBlock("done")}, Delay: 24 * time.Hour}
		}
		mu.Lock()
		defer mu.Unlock()
		n++
		switch {
		case n == 1:
			return BackgroundAgentReply(id, description, prompt)
		case len(then) == 0:
			return nil
		}
		return then[min(n-2, len(then)-1)]
	}
}

// ErrorReply returns a reply that fails with an HTTP status and an
// Anthropic-shaped error body. errType may be empty to use the type the
// real API gives that status (see HTTPError).
func ErrorReply(status int, errType, message string) *Reply {
	return &Reply{Error: &HTTPError{Status: status, Type: errType, Message: message}}
}

// OverloadedReply returns the 529 overloaded_error the CLI retries. A
// retryAfter of "" sends no retry-after header; "0" or "1" keep a retrying
// CLI fast.
func OverloadedReply(retryAfter string) *Reply {
	return &Reply{Error: &HTTPError{Status: 529, RetryAfter: retryAfter}}
}

// HTTPError is an error answer:
//
//	HTTP/1.1 529
//	request-id: req_fake_000003
//	retry-after: 1
//
//	{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_fake_000003"}
type HTTPError struct {
	// Status is the HTTP status code, e.g. 400, 401, 429, 500 or 529.
	Status int

	// Type is the error.type in the body; empty picks what the real API
	// sends for Status: invalid_request_error (400), authentication_error
	// (401), permission_error (403), not_found_error (404),
	// request_too_large (413), rate_limit_error (429), api_error (500),
	// overloaded_error (529).
	Type string

	// Message is the error.message; empty uses a stock message for Type.
	Message string

	// RetryAfter is the raw retry-after header value, in seconds; empty
	// sends none. It is a string because "0", a fraction or a malformed
	// value are all things a test may want to send.
	RetryAfter string

	// Header holds extra response headers, e.g. the anthropic-ratelimit-*
	// family or x-should-retry.
	Header http.Header
}

// StreamError describes an SSE error event sent part-way through a stream:
//
//	event: error
//	data: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_fake_000002"}
//
// The response then ends. For a non-streaming request the same error is
// returned as an HTTP 500 body, the closest a JSON answer can get.
type StreamError struct {
	// AfterEvents is how many ordinary events precede the error; 0 sends
	// the error first, before message_start.
	AfterEvents int

	// Type and Message are the error's; empty means overloaded_error and a
	// stock message.
	Type    string
	Message string
}

func defaultErrorType(status int) string {
	switch status {
	case 400:
		return "invalid_request_error"
	case 401:
		return "authentication_error"
	case 403:
		return "permission_error"
	case 404:
		return "not_found_error"
	case 413:
		return "request_too_large"
	case 429:
		return "rate_limit_error"
	case 529:
		return "overloaded_error"
	default:
		return "api_error"
	}
}

func defaultErrorMessage(errType string) string {
	switch errType {
	case "invalid_request_error":
		return "Invalid request"
	case "authentication_error":
		return "invalid x-api-key"
	case "permission_error":
		return "Permission denied"
	case "not_found_error":
		return "Not found"
	case "request_too_large":
		return "Request exceeds the maximum allowed number of bytes."
	case "rate_limit_error":
		return "Number of request tokens has exceeded your per-minute rate limit"
	case "overloaded_error":
		return "Overloaded"
	default:
		return "Internal server error"
	}
}

// stopReason is the effective stop reason of r.
func (r *Reply) stopReason() StopReason {
	if r.StopReason != "" {
		return r.StopReason
	}
	for _, b := range r.Content {
		if b.Type == BlockTypeToolUse {
			return StopReasonToolUse
		}
	}
	return StopReasonEndTurn
}

func (r *Reply) chunkSize() int {
	if r.ChunkSize > 0 {
		return r.ChunkSize
	}
	return 16
}

// marshalPlain encodes v as the API does: without encoding/json's HTML
// escapes, so a command like "a > b && c" streams as typed rather than as
// "a \u003e b \u0026\u0026 c".
func marshalPlain(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
