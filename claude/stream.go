package claude

import (
	"encoding/json"
	"reflect"
	"sync"
	"unsafe"
)

// StreamEvent is a raw Messages API streaming event, passed through by the
// CLI with Options.IncludePartialMessages: the tokens of the answer as
// they arrive. The complete *AssistantMessage for each block follows its
// deltas. Subagents' API calls produce no stream events.
type StreamEvent struct {
	Meta
	// Event is the API event: *MessageStartEvent, *ContentBlockStartEvent,
	// *ContentBlockDeltaEvent, *ContentBlockStopEvent, *MessageDeltaEvent,
	// *MessageStopEvent, or *UnknownStreamEvent.
	Event           MessageStreamEvent
	ParentToolUseID string
	// TTFTMS is the time to the first token, on message_start.
	TTFTMS int64
	// UserMessageUUID, UserMessageUUIDs and ResumeReason are stamped on
	// the turn's first stream event as on AssistantMessage (newer CLIs).
	UserMessageUUID  string
	UserMessageUUIDs []string
	ResumeReason     string
}

// MessageStreamEvent is one Messages API streaming event (see
// StreamEvent.Event for the variants).
type MessageStreamEvent interface {
	isStreamEvent()
}

// MessageStartEvent begins an API message.
type MessageStartEvent struct {
	Message APIMessage
}

// ContentBlockStartEvent begins a content block; for text and tool_use the
// block is empty and filled by the deltas that follow.
type ContentBlockStartEvent struct {
	Index        int
	ContentBlock ContentBlock
}

// ContentBlockDeltaEvent extends the block at Index.
type ContentBlockDeltaEvent struct {
	Index int
	// Delta is *TextDelta, *InputJSONDelta, *ThinkingDelta,
	// *SignatureDelta, *CitationsDelta or *UnknownDelta.
	Delta Delta
}

// ContentBlockStopEvent ends the block at Index.
type ContentBlockStopEvent struct {
	Index int
}

// MessageDeltaEvent carries the message's stop reason and final usage.
type MessageDeltaEvent struct {
	StopReason   string
	StopSequence string
	Usage        *Usage
}

// MessageStopEvent ends the API message.
type MessageStopEvent struct{}

// UnknownStreamEvent is an event type this version of Tether does not
// know (including "ping" and "error").
type UnknownStreamEvent struct {
	Type string
	Raw  json.RawMessage
}

func (*MessageStartEvent) isStreamEvent()      {}
func (*ContentBlockStartEvent) isStreamEvent() {}
func (*ContentBlockDeltaEvent) isStreamEvent() {}
func (*ContentBlockStopEvent) isStreamEvent()  {}
func (*MessageDeltaEvent) isStreamEvent()      {}
func (*MessageStopEvent) isStreamEvent()       {}
func (*UnknownStreamEvent) isStreamEvent()     {}

// Delta is an increment to a content block.
type Delta interface {
	isDelta()
}

// TextDelta appends text to a text block.
type TextDelta struct{ Text string }

// InputJSONDelta appends a fragment of a tool_use block's input JSON.
type InputJSONDelta struct{ PartialJSON string }

// ThinkingDelta appends reasoning to a thinking block.
type ThinkingDelta struct{ Thinking string }

// SignatureDelta sets a thinking block's signature.
type SignatureDelta struct{ Signature string }

// CitationsDelta adds a citation to a text block.
type CitationsDelta struct{ Citation json.RawMessage }

// UnknownDelta is a delta type this version of Tether does not know.
type UnknownDelta struct {
	Type string
	Raw  json.RawMessage
}

func (*TextDelta) isDelta()      {}
func (*InputJSONDelta) isDelta() {}
func (*ThinkingDelta) isDelta()  {}
func (*SignatureDelta) isDelta() {}
func (*CitationsDelta) isDelta() {}
func (*UnknownDelta) isDelta()   {}

// wireStreamEvent decodes the hot path (token deltas) in a single pass:
// every event and delta field sits in one flat struct.
type wireStreamEvent struct {
	UUID             string   `json:"uuid"`
	SessionID        string   `json:"session_id"`
	ParentToolUseID  string   `json:"parent_tool_use_id"`
	TTFTMS           int64    `json:"ttft_ms"`
	UserMessageUUID  string   `json:"user_message_uuid"`
	UserMessageUUIDs []string `json:"user_message_uuids"`
	ResumeReason     string   `json:"resume_reason"`
	Event            struct {
		Type  string `json:"type"`
		Index int    `json:"index"`
		// Delta is a value, not a pointer: one allocation less per token.
		// An absent or null delta reads as one with no type.
		Delta struct {
			Type        string          `json:"type"`
			Text        string          `json:"text"`
			PartialJSON string          `json:"partial_json"`
			Thinking    string          `json:"thinking"`
			Signature   string          `json:"signature"`
			Citation    json.RawMessage `json:"citation"`
			// message_delta's delta
			StopReason   string `json:"stop_reason"`
			StopSequence string `json:"stop_sequence"`
		} `json:"delta"`
		ContentBlock json.RawMessage `json:"content_block"`
		Message      json.RawMessage `json:"message"`
		Usage        *Usage          `json:"usage"`
	} `json:"event"`
}

// UnmarshalJSON decodes a stream_event line.
func (e *StreamEvent) UnmarshalJSON(b []byte) error { return e.decode(b) }

// decode decodes a stream_event line in one pass (DecodeMessage calls it
// directly: going through UnmarshalJSON would scan the line twice).
func (e *StreamEvent) decode(b []byte) error {
	got, err := decodeStreamEvent(b, false)
	if err != nil {
		return err
	}
	*e = *got
	return nil
}

// The plans of the wire form and of message_start's message, looked up
// once.
var (
	wireStreamEventPlan = sync.OnceValue(func() *plan { return planFor(reflect.TypeFor[wireStreamEvent]()) })
	apiMessagePlan      = sync.OnceValue(func() *plan { return planFor(reflect.TypeFor[APIMessage]()) })
)

// decodeStreamEvent decodes a stream_event line, with the decode plans
// (plan.go) when planned.
func decodeStreamEvent(b []byte, planned bool) (*StreamEvent, error) {
	// The wire form lives only while the line is decoded: on the stack.
	var wv wireStreamEvent
	w := &wv
	if !planned || !decodeWith(wireStreamEventPlan(), b, unsafe.Pointer(w)) {
		g := new(wireStreamEvent) // the general decoder's copy escapes
		if err := unmarshal(b, g); err != nil {
			return nil, err
		}
		*w = *g
	}
	ev := &w.Event
	var e *StreamEvent
	if d := &ev.Delta; ev.Type == "content_block_delta" && (d.Type == "text_delta" || d.Type == "input_json_delta") {
		// A token: the event, its ContentBlockDeltaEvent and the delta
		// in one allocation.
		if d.Type == "text_delta" {
			x := &struct {
				e  StreamEvent
				ev ContentBlockDeltaEvent
				d  TextDelta
			}{d: TextDelta{Text: d.Text}}
			x.ev = ContentBlockDeltaEvent{Index: ev.Index, Delta: &x.d}
			e = &x.e
			e.Event = &x.ev
		} else {
			x := &struct {
				e  StreamEvent
				ev ContentBlockDeltaEvent
				d  InputJSONDelta
			}{d: InputJSONDelta{PartialJSON: d.PartialJSON}}
			x.ev = ContentBlockDeltaEvent{Index: ev.Index, Delta: &x.d}
			e = &x.e
			e.Event = &x.ev
		}
		e.fromWire(w)
		return e, nil
	}
	e = new(StreamEvent)
	e.fromWire(w)
	switch ev.Type {
	case "content_block_delta":
		d := &ev.Delta
		var delta Delta
		switch d.Type {
		case "text_delta":
			delta = &TextDelta{Text: d.Text}
		case "input_json_delta":
			delta = &InputJSONDelta{PartialJSON: d.PartialJSON}
		case "thinking_delta":
			delta = &ThinkingDelta{Thinking: d.Thinking}
		case "signature_delta":
			delta = &SignatureDelta{Signature: d.Signature}
		case "citations_delta":
			delta = &CitationsDelta{Citation: d.Citation}
		default:
			raw := rawEventField(b, "delta")
			if raw == nil || string(raw) == "null" { // no delta at all
				delta = &UnknownDelta{}
				break
			}
			delta = &UnknownDelta{Type: d.Type, Raw: raw}
		}
		e.Event = &ContentBlockDeltaEvent{Index: ev.Index, Delta: delta}
	case "content_block_start":
		blk, err := decodeBlockWith(ev.ContentBlock, planned)
		if err != nil {
			return nil, err
		}
		e.Event = &ContentBlockStartEvent{Index: ev.Index, ContentBlock: blk}
	case "content_block_stop":
		e.Event = &ContentBlockStopEvent{Index: ev.Index}
	case "message_start":
		ms := new(MessageStartEvent) // decoded in place: no copy
		if len(ev.Message) > 0 {
			if !planned || !decodeWith(apiMessagePlan(), ev.Message, unsafe.Pointer(&ms.Message)) {
				ms.Message = APIMessage{}
				if err := unmarshal(ev.Message, &ms.Message); err != nil {
					return nil, err
				}
			}
		}
		e.Event = ms
	case "message_delta":
		md := &MessageDeltaEvent{Usage: ev.Usage}
		md.StopReason, md.StopSequence = ev.Delta.StopReason, ev.Delta.StopSequence
		e.Event = md
	case "message_stop":
		e.Event = &MessageStopEvent{}
	default:
		e.Event = &UnknownStreamEvent{Type: ev.Type, Raw: rawEventField(b, "")}
	}
	return e, nil
}

// fromWire sets e's envelope from w.
func (e *StreamEvent) fromWire(w *wireStreamEvent) {
	e.UUID, e.SessionID, e.ParentToolUseID, e.TTFTMS = w.UUID, w.SessionID, w.ParentToolUseID, w.TTFTMS
	e.UserMessageUUID, e.UserMessageUUIDs, e.ResumeReason = w.UserMessageUUID, w.UserMessageUUIDs, w.ResumeReason
}

// rawEventField returns the line's "event" object, or the named member of
// it, for the rare events kept raw. It parses the line again; that is
// fine off the hot path.
func rawEventField(line []byte, member string) json.RawMessage {
	var w struct {
		Event json.RawMessage `json:"event"`
	}
	if unmarshal(line, &w) != nil || member == "" {
		return w.Event
	}
	var m map[string]json.RawMessage
	if unmarshal(w.Event, &m) != nil {
		return nil
	}
	return m[member]
}

func (*StreamEvent) isMessage() {}
