package claude

import (
	"github.com/tetherhq/tether/internal/wire"
)

// System messages (type "system"), decoded by subtype. The types of the
// subtypes the TypeScript SDK declares are generated (system_gen.go) from
// sdk.d.ts by internal/sdkgen; this file has the decoder, the unknown
// subtype, and the subtypes only the CLI writes. An unknown subtype, or a
// known one whose fields have JSON types Tether does not expect, decodes
// to *UnknownSystemMessage with the whole line in Raw.

// TurnDurationMessage (system/turn_duration): how long a turn took.
type TurnDurationMessage struct {
	Meta
	DurationMS   int64 `json:"durationMs"`
	MessageCount int   `json:"messageCount"`
}

// SessionTitleChangedMessage (system/session_title_changed, CLI 2.1.330
// and later).
type SessionTitleChangedMessage struct {
	Meta
	Title string `json:"title"`
}

// UnknownSystemMessage is a system subtype this version of Tether does
// not know. Raw has the whole line.
type UnknownSystemMessage struct {
	Meta
	Subtype string `json:"subtype"`
}

func (*TurnDurationMessage) isMessage()        {}
func (*SessionTitleChangedMessage) isMessage() {}
func (*UnknownSystemMessage) isMessage()       {}

// newSystem returns an empty message for a system subtype, nil when the
// subtype is unknown: one the SDK declares (systemMessages, generated in
// system_gen.go) or one only the CLI writes.
func newSystem(subtype string) Message {
	if f, ok := systemMessages[subtype]; ok {
		return f()
	}
	if f, ok := cliSystemMessages[subtype]; ok {
		return f()
	}
	return nil
}

// cliSystemMessages maps the system subtypes the CLI writes but the SDK
// does not declare to their hand-written types.
var cliSystemMessages = map[string]func() Message{
	"turn_duration":         func() Message { return new(TurnDurationMessage) },
	"session_title_changed": func() Message { return new(SessionTitleChangedMessage) },
	"api_error":             func() Message { return new(APIErrorMessage) },
	"stop_hook_summary":     func() Message { return new(StopHookSummaryMessage) },
	"microcompact_boundary": func() Message { return new(MicrocompactBoundaryMessage) },
	"peer_message_hold":     func() Message { return new(PeerMessageHoldMessage) },
}

func decodeSystem(line []byte) (Message, error) {
	subtype, ok := wire.PeekString(line, `{"type":"system","subtype":"`)
	if !ok {
		var h struct {
			Subtype string `json:"subtype"`
		}
		if err := unmarshal(line, &h); err != nil {
			return nil, err
		}
		subtype = h.Subtype
	}
	m := newSystem(subtype)
	if m == nil {
		m = &UnknownSystemMessage{Subtype: subtype}
	}
	if err := unmarshal(line, m); err != nil {
		if !isTypeError(err) {
			return nil, err
		}
		m = &UnknownSystemMessage{Subtype: subtype}
		if err := unmarshal(line, m); err != nil && !isTypeError(err) {
			return nil, err
		}
	}
	m.(rawSetter).setRaw(line)
	return m, nil
}
