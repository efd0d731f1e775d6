package claude

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// ContentBlock is one block of a message's content. It is one of
// *TextBlock, *ThinkingBlock, *RedactedThinkingBlock, *ToolUseBlock,
// *ServerToolUseBlock, *ServerToolResultBlock, *ToolResultBlock,
// *ImageBlock, *DocumentBlock or *UnknownBlock (a block type this version
// of Tether does not know, kept raw).
//
// Blocks encode to the Messages API's JSON, so the ones a host may send
// (text, image, document, tool_result) can go into a UserMessage.
type ContentBlock interface {
	isContentBlock()
}

// TextBlock is text.
type TextBlock struct {
	Text string `json:"text"`
	// Citations are the sources the text cites (web search, documents),
	// as the API sent them.
	Citations []json.RawMessage `json:"citations,omitempty"`
}

// ThinkingBlock is the model's visible reasoning. Signature lets the API
// verify the block when it is sent back.
type ThinkingBlock struct {
	Thinking  string `json:"thinking"`
	Signature string `json:"signature"`
}

// RedactedThinkingBlock is reasoning the API returned encrypted.
type RedactedThinkingBlock struct {
	Data string `json:"data"`
}

// ToolUseBlock is the model calling a tool. Input is the tool's input as
// the model wrote it; decode it into the tool's input type.
type ToolUseBlock struct {
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

// ServerToolUseBlock is the model calling a tool the API runs itself (web
// search, web fetch, code execution).
type ServerToolUseBlock struct {
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

// ServerToolResultBlock is the result of a server tool: Type is e.g.
// "web_search_tool_result", Content is as the API sent it.
type ServerToolResultBlock struct {
	Type      string          `json:"type"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
}

// ToolResultBlock is a tool's result, sent back to the model in a user
// message. Content is a JSON string or an array of blocks; Text returns
// its text either way.
type ToolResultBlock struct {
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content,omitempty"`
	IsError   bool            `json:"is_error,omitempty"`
}

// Text returns the result's text: the string content, or the text blocks
// of an array content joined by newlines.
func (b *ToolResultBlock) Text() string {
	if len(b.Content) == 0 {
		return ""
	}
	var s string
	if unmarshal(b.Content, &s) == nil {
		return s
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	_ = unmarshal(b.Content, &blocks)
	var parts []string
	for _, bl := range blocks {
		if bl.Type == "text" {
			parts = append(parts, bl.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// ImageBlock is an image. Build one with NewImageBlock.
type ImageBlock struct {
	Source MediaSource `json:"source"`
}

// DocumentBlock is a document (PDF or plain text). Build one with
// NewDocumentBlock.
type DocumentBlock struct {
	Source  MediaSource `json:"source"`
	Title   string      `json:"title,omitempty"`
	Context string      `json:"context,omitempty"`
	// Citations, when set, lets the model cite the document.
	Citations json.RawMessage `json:"citations,omitempty"`
}

// MediaSource is where an image's or document's bytes are: inline
// ("base64", or "text" for plain-text documents) or at a URL ("url").
type MediaSource struct {
	Type      string `json:"type"`
	MediaType string `json:"media_type,omitempty"`
	Data      string `json:"data,omitempty"`
	URL       string `json:"url,omitempty"`
}

// NewImageBlock returns an inline image block; mediaType is e.g.
// "image/png".
func NewImageBlock(mediaType string, data []byte) *ImageBlock {
	return &ImageBlock{Source: MediaSource{Type: "base64", MediaType: mediaType, Data: base64.StdEncoding.EncodeToString(data)}}
}

// NewDocumentBlock returns an inline document block: a PDF
// ("application/pdf", sent base64) or plain text ("text/plain", sent as
// text).
func NewDocumentBlock(mediaType string, data []byte) *DocumentBlock {
	if strings.HasPrefix(mediaType, "text/") {
		return &DocumentBlock{Source: MediaSource{Type: "text", MediaType: mediaType, Data: string(data)}}
	}
	return &DocumentBlock{Source: MediaSource{Type: "base64", MediaType: mediaType, Data: base64.StdEncoding.EncodeToString(data)}}
}

// UnknownBlock is a content block of a type this version of Tether does
// not know. It encodes back to Raw unchanged.
type UnknownBlock struct {
	Type string
	Raw  json.RawMessage
}

func (*TextBlock) isContentBlock()             {}
func (*ThinkingBlock) isContentBlock()         {}
func (*RedactedThinkingBlock) isContentBlock() {}
func (*ToolUseBlock) isContentBlock()          {}
func (*ServerToolUseBlock) isContentBlock()    {}
func (*ServerToolResultBlock) isContentBlock() {}
func (*ToolResultBlock) isContentBlock()       {}
func (*ImageBlock) isContentBlock()            {}
func (*DocumentBlock) isContentBlock()         {}
func (*UnknownBlock) isContentBlock()          {}

// The MarshalJSON methods add the "type" member the API expects.

func (b *TextBlock) MarshalJSON() ([]byte, error) {
	type t TextBlock
	return marshalTyped("text", (*t)(b))
}

func (b *ThinkingBlock) MarshalJSON() ([]byte, error) {
	type t ThinkingBlock
	return marshalTyped("thinking", (*t)(b))
}

func (b *RedactedThinkingBlock) MarshalJSON() ([]byte, error) {
	type t RedactedThinkingBlock
	return marshalTyped("redacted_thinking", (*t)(b))
}

func (b *ToolUseBlock) MarshalJSON() ([]byte, error) {
	type t ToolUseBlock
	c := *(*t)(b)
	if len(c.Input) == 0 {
		c.Input = json.RawMessage("{}")
	}
	return marshalTyped("tool_use", &c)
}

func (b *ServerToolUseBlock) MarshalJSON() ([]byte, error) {
	type t ServerToolUseBlock
	c := *(*t)(b)
	if len(c.Input) == 0 {
		c.Input = json.RawMessage("{}")
	}
	return marshalTyped("server_tool_use", &c)
}

func (b *ToolResultBlock) MarshalJSON() ([]byte, error) {
	type t ToolResultBlock
	return marshalTyped("tool_result", (*t)(b))
}

func (b *ImageBlock) MarshalJSON() ([]byte, error) {
	type t ImageBlock
	return marshalTyped("image", (*t)(b))
}

func (b *DocumentBlock) MarshalJSON() ([]byte, error) {
	type t DocumentBlock
	return marshalTyped("document", (*t)(b))
}

func (b *UnknownBlock) MarshalJSON() ([]byte, error) {
	if len(b.Raw) == 0 {
		return json.Marshal(map[string]string{"type": b.Type})
	}
	return b.Raw, nil
}

// marshalTyped encodes v (a struct) with "type":typ as its first member.
func marshalTyped(typ string, v any) ([]byte, error) {
	body, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(body)+len(typ)+12)
	out = append(out, `{"type":`...)
	out, _ = appendJSONString(out, typ)
	if len(body) > 2 {
		out = append(out, ',')
		out = append(out, body[1:]...)
	} else {
		out = append(out, '}')
	}
	return out, nil
}

func appendJSONString(b []byte, s string) ([]byte, error) {
	q, err := json.Marshal(s)
	return append(b, q...), err
}

// blockList is a content list on the wire: an array of blocks, or a plain
// string (which the CLI and the API accept for user content), decoded as
// one text block.
type blockList []ContentBlock

// UnmarshalJSONFrom decodes the list, scanning each block once before
// typing it.
func (l *blockList) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	switch dec.PeekKind() {
	case 'n':
		_, err := dec.ReadToken()
		*l = nil
		return err
	case '"':
		tok, err := dec.ReadToken()
		if err != nil {
			return err
		}
		*l = blockList{&TextBlock{Text: tok.String()}}
		return nil
	case '[':
	default:
		return &jsonv2.SemanticError{JSONKind: dec.PeekKind(), Err: errors.New("content is neither an array nor a string")}
	}
	if _, err := dec.ReadToken(); err != nil {
		return err
	}
	out := blockList{}
	for dec.PeekKind() != ']' {
		v, err := dec.ReadValue()
		if err != nil {
			return err
		}
		b, err := decodeBlock(v)
		if err != nil {
			return err
		}
		out = append(out, b)
	}
	if _, err := dec.ReadToken(); err != nil {
		return err
	}
	*l = out
	return nil
}

// decodeBlock decodes one content block. A block of an unknown type, or
// of a known type with unexpected field types, becomes an *UnknownBlock.
func decodeBlock(raw []byte) (ContentBlock, error) { return decodeBlockWith(raw, false) }

// decodeBlockWith is decodeBlock, with the decode plans (plan.go) when
// planned.
func decodeBlockWith(raw []byte, planned bool) (ContentBlock, error) {
	if planned {
		d := planDecoder{s: scanner{b: raw}}
		b, ok := d.block()
		d.s.ws()
		if ok && d.s.i == len(raw) {
			return b, nil
		}
	}
	typ, ok := peekType(raw)
	if !ok {
		var h struct {
			Type string `json:"type"`
		}
		if err := unmarshal(raw, &h); err != nil {
			return nil, err
		}
		typ = h.Type
	}
	b := newBlock(typ)
	if b == nil {
		return &UnknownBlock{Type: typ, Raw: bytes.Clone(raw)}, nil
	}
	if err := unmarshal(raw, b); err != nil {
		if isTypeError(err) {
			return &UnknownBlock{Type: typ, Raw: bytes.Clone(raw)}, nil
		}
		return nil, err
	}
	return b, nil
}

// newBlock returns a new block of the type, nil for a type Tether does
// not know.
func newBlock(typ string) ContentBlock {
	switch typ {
	case "text":
		return new(TextBlock)
	case "thinking":
		return new(ThinkingBlock)
	case "redacted_thinking":
		return new(RedactedThinkingBlock)
	case "tool_use":
		return new(ToolUseBlock)
	case "server_tool_use":
		return new(ServerToolUseBlock)
	case "tool_result":
		return new(ToolResultBlock)
	case "image":
		return new(ImageBlock)
	case "document":
		return new(DocumentBlock)
	}
	if strings.HasSuffix(typ, "_tool_result") {
		return new(ServerToolResultBlock)
	}
	return nil
}
