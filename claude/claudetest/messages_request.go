package claudetest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// RequestKind says which endpoint a recorded request went to.
type RequestKind string

// The request kinds the server tells apart.
const (
	// RequestKindProbe is the CLI's connectivity check: HEAD / (2.1.197) or
	// HEAD /api/hello (2.1.330 without
	// CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC).
	RequestKindProbe RequestKind = "probe"
	// RequestKindMessages is POST /v1/messages.
	RequestKindMessages RequestKind = "messages"
	// RequestKindCountTokens is POST /v1/messages/count_tokens.
	RequestKindCountTokens RequestKind = "count_tokens"
	// RequestKindUnknown is anything else; it was answered 404.
	RequestKindUnknown RequestKind = "unknown"
)

// Request is one HTTP request the server received, recorded once its
// reply was chosen and before it was sent. Requests are never changed after they are recorded, so they may
// be read from any goroutine.
type Request struct {
	// Seq numbers the server's requests from 1 in arrival order.
	Seq  int
	Time time.Time
	Kind RequestKind

	Method string
	Path   string
	Query  url.Values

	// Header is the request's header. x-api-key is kept as sent when it is
	// the server's own fake key (MessagesOptions.APIKey), so a test can
	// check the CLI used it, and replaced by "REDACTED" otherwise, as is
	// Authorization always: a CLI started with a developer's environment
	// could otherwise leave a real credential in test logs.
	Header http.Header

	// Body is the raw request body.
	Body []byte

	// Params is the parsed body of a messages or count_tokens request; nil
	// for other kinds or when the body is not JSON (ParseError says why).
	Params     *MessageParams
	ParseError error

	// Side is true when IsSideRequest classified the request as a side
	// request (answered with SideReply, not from the script).
	Side bool

	// Unscripted is true when the script had nothing for this request and
	// the Fallback reply answered it. A test that scripted every turn
	// should find none: see MessagesServer.Unexpected.
	Unscripted bool

	// Reply is the answer the server chose (nil for probes, count_tokens
	// and unknown paths).
	Reply *Reply

	// RequestID is the request-id header the server answered with.
	RequestID string
}

// SessionID returns the CLI session id the request carries in its
// x-claude-code-session-id header, or "".
func (r *Request) SessionID() string {
	return r.Header.Get("X-Claude-Code-Session-Id")
}

// Subagent reports whether the request comes from a subagent (the Agent
// tool) rather than the main conversation: the CLI marks those with
// cc_is_subagent=true in the billing header that opens the system prompt.
// CLI 2.1.330 runs agents in the background, so their requests race the
// main loop's; a RespondFunc that routes on Subagent keeps such a script
// deterministic where a plain queue would not be.
func (r *Request) Subagent() bool {
	return r.Params != nil && r.Params.SystemContains("cc_is_subagent=true")
}

// Stream reports whether the request asked for an SSE stream.
func (r *Request) Stream() bool {
	return r.Params != nil && r.Params.Stream
}

// MessageParams is the body of a /v1/messages (or count_tokens) request,
// with the parts a test asserts on typed. Polymorphic fields are
// normalised: a string system prompt or message content becomes one text
// block. Anything not modelled is still in Request.Body.
type MessageParams struct {
	Model     string
	MaxTokens int
	Stream    bool

	// System is the system prompt. The CLI sends an array whose first text
	// block is its billing header ("x-anthropic-billing-header: cc_version=…").
	System []ContentBlock

	// Messages is the conversation, including the role "system" entries the
	// CLI mixes in (agent lists, skills, hook additionalContext).
	Messages []Message

	Tools         []Tool
	ToolChoice    json.RawMessage
	Thinking      *ThinkingConfig
	Metadata      *Metadata
	StopSequences []string
	Temperature   *float64

	// OutputConfig and ContextManagement are kept raw: their shape changes
	// between CLI versions.
	OutputConfig      json.RawMessage
	ContextManagement json.RawMessage
}

// Message is one entry of MessageParams.Messages.
type Message struct {
	// Role is "user", "assistant" or, in CLI requests, "system".
	Role    string
	Content []ContentBlock
	// Raw is the entry as sent (2.1.330 adds keys such as output_config to
	// system entries).
	Raw json.RawMessage
}

// Tool is one entry of MessageParams.Tools.
type Tool struct {
	Name        string
	Type        string // empty for custom tools, e.g. "web_search_20250305" for server tools
	Description string
	InputSchema json.RawMessage
	Raw         json.RawMessage
}

// ThinkingConfig is the request's thinking setting, e.g.
// {type:"adaptive"}, {type:"enabled", budget_tokens:N} or {type:"disabled"}.
type ThinkingConfig struct {
	Type         string `json:"type"`
	BudgetTokens int    `json:"budget_tokens,omitempty"`
	Display      string `json:"display,omitempty"`
}

// Metadata is the request's metadata. The CLI puts a JSON object string
// with device_id, account_uuid and session_id in UserID.
type Metadata struct {
	UserID string `json:"user_id"`
}

// Text returns the concatenated text of m's text blocks.
func (m *Message) Text() string {
	if m == nil {
		return ""
	}
	return blocksText(m.Content)
}

// text returns the text of b: its own for a text block, its content's for
// a tool_result.
func (b *ContentBlock) text() string {
	if b.Type == BlockTypeText {
		return b.Text
	}
	return blocksText(b.Content)
}

func blocksText(bs []ContentBlock) string {
	var sb strings.Builder
	for i := range bs {
		sb.WriteString(bs[i].text())
	}
	return sb.String()
}

// LastUser returns the last message with role "user", or nil. In a tool
// loop that is the message carrying the tool results; on the first request
// of a turn it is the prompt (after the CLI's <system-reminder> block).
func (p *MessageParams) LastUser() *Message {
	if p == nil {
		return nil
	}
	for i := len(p.Messages) - 1; i >= 0; i-- {
		if p.Messages[i].Role == "user" {
			return &p.Messages[i]
		}
	}
	return nil
}

// ToolResult returns the tool_result block answering toolUseID, searching
// all messages, or nil.
func (p *MessageParams) ToolResult(toolUseID string) *ContentBlock {
	for _, b := range p.ToolResults() {
		if b.ToolUseID == toolUseID {
			return &b
		}
	}
	return nil
}

// ToolResults returns every tool_result block in the messages, in order.
func (p *MessageParams) ToolResults() []ContentBlock {
	if p == nil {
		return nil
	}
	var out []ContentBlock
	for _, m := range p.Messages {
		for _, b := range m.Content {
			if b.Type == BlockTypeToolResult {
				out = append(out, b)
			}
		}
	}
	return out
}

// ToolNames returns the names of the tools offered, in order.
func (p *MessageParams) ToolNames() []string {
	if p == nil {
		return nil
	}
	names := make([]string, len(p.Tools))
	for i, t := range p.Tools {
		names[i] = t.Name
	}
	return names
}

// Contains reports whether s occurs in the text of any message: text
// blocks, thinking, tool inputs and tool results, in every role, including
// the CLI's role "system" entries. That is where system reminders and hook
// additionalContext end up. The system prompt is not searched: use
// SystemContains.
func (p *MessageParams) Contains(s string) bool {
	if p == nil {
		return false
	}
	for _, m := range p.Messages {
		if blocksContain(m.Content, s) {
			return true
		}
	}
	return false
}

// SystemContains reports whether s occurs in the system prompt.
func (p *MessageParams) SystemContains(s string) bool {
	return p != nil && blocksContain(p.System, s)
}

func blocksContain(bs []ContentBlock, s string) bool {
	for _, b := range bs {
		if strings.Contains(b.Text, s) || strings.Contains(b.Thinking, s) ||
			bytes.Contains(b.Input, []byte(s)) || blocksContain(b.Content, s) {
			return true
		}
	}
	return false
}

// Wire forms, decoded then normalised into the types above.

type wireParams struct {
	Model             string            `json:"model"`
	MaxTokens         int               `json:"max_tokens"`
	Stream            bool              `json:"stream"`
	System            json.RawMessage   `json:"system"`
	Messages          []json.RawMessage `json:"messages"`
	Tools             []json.RawMessage `json:"tools"`
	ToolChoice        json.RawMessage   `json:"tool_choice"`
	Thinking          *ThinkingConfig   `json:"thinking"`
	Metadata          *Metadata         `json:"metadata"`
	StopSequences     []string          `json:"stop_sequences"`
	Temperature       *float64          `json:"temperature"`
	OutputConfig      json.RawMessage   `json:"output_config"`
	ContextManagement json.RawMessage   `json:"context_management"`
}

type wireMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

type wireTool struct {
	Name        string          `json:"name"`
	Type        string          `json:"type"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
}

type wireBlock struct {
	Type      BlockType       `json:"type"`
	Text      string          `json:"text"`
	Thinking  string          `json:"thinking"`
	Signature string          `json:"signature"`
	Data      string          `json:"data"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
}

func parseParams(body []byte) (*MessageParams, error) {
	var w wireParams
	if err := json.Unmarshal(body, &w); err != nil {
		return nil, err
	}
	p := &MessageParams{
		Model:             w.Model,
		MaxTokens:         w.MaxTokens,
		Stream:            w.Stream,
		ToolChoice:        w.ToolChoice,
		Thinking:          w.Thinking,
		Metadata:          w.Metadata,
		StopSequences:     w.StopSequences,
		Temperature:       w.Temperature,
		OutputConfig:      w.OutputConfig,
		ContextManagement: w.ContextManagement,
	}
	var err error
	if p.System, err = parseContent(w.System); err != nil {
		return nil, fmt.Errorf("system: %w", err)
	}
	for i, raw := range w.Messages {
		var wm wireMessage
		if err := json.Unmarshal(raw, &wm); err != nil {
			return nil, fmt.Errorf("messages[%d]: %w", i, err)
		}
		content, err := parseContent(wm.Content)
		if err != nil {
			return nil, fmt.Errorf("messages[%d].content: %w", i, err)
		}
		p.Messages = append(p.Messages, Message{Role: wm.Role, Content: content, Raw: raw})
	}
	for i, raw := range w.Tools {
		var wt wireTool
		if err := json.Unmarshal(raw, &wt); err != nil {
			return nil, fmt.Errorf("tools[%d]: %w", i, err)
		}
		p.Tools = append(p.Tools, Tool{Name: wt.Name, Type: wt.Type, Description: wt.Description, InputSchema: wt.InputSchema, Raw: raw})
	}
	return p, nil
}

// parseContent decodes a content value that is either a string or an
// array of blocks.
func parseContent(raw json.RawMessage) ([]ContentBlock, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, err
		}
		return []ContentBlock{{Type: BlockTypeText, Text: s}}, nil
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(raw, &raws); err != nil {
		return nil, err
	}
	out := make([]ContentBlock, 0, len(raws))
	for _, r := range raws {
		var wb wireBlock
		if err := json.Unmarshal(r, &wb); err != nil {
			return nil, err
		}
		b := ContentBlock{
			Type: wb.Type, Text: wb.Text, Thinking: wb.Thinking, Signature: wb.Signature,
			Data: wb.Data, ID: wb.ID, Name: wb.Name, Input: wb.Input,
			ToolUseID: wb.ToolUseID, IsError: wb.IsError, Raw: r,
		}
		if wb.Type == BlockTypeToolResult {
			var err error
			if b.Content, err = parseContent(wb.Content); err != nil {
				return nil, fmt.Errorf("tool_result %s: %w", wb.ToolUseID, err)
			}
		}
		out = append(out, b)
	}
	return out, nil
}
