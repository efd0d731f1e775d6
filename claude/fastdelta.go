package claude

import (
	"bytes"
	"unicode/utf8"
)

// decodeDeltaFast decodes the commonest stdout line by far — a
// stream_event carrying a content_block_delta, one per token — without the
// reflection-driven decoder, which costs about three times as much per
// line. It returns ok false for anything it is not sure of (another event,
// an unknown delta or member, invalid UTF-8, malformed JSON), and the
// general decoder then takes the line. FuzzDecode checks that whenever this
// succeeds, the general decoder gives the same message.
func decodeDeltaFast(line []byte) (e *StreamEvent, ok bool) {
	s := scanner{b: line}
	if !s.consume('{') {
		return nil, false
	}
	e = &StreamEvent{}
	var ev *ContentBlockDeltaEvent
	for first := true; ; first = false {
		key, done, ok := s.member(first)
		if !ok {
			return nil, false
		} else if done {
			break
		}
		switch string(key) {
		case "type":
			v, ok := s.rawString()
			if !ok || string(v) != "stream_event" {
				return nil, false
			}
		case "event":
			if ev, ok = s.deltaEvent(); !ok {
				return nil, false
			}
		case "uuid":
			if e.UUID, ok = s.stringOrNull(); !ok {
				return nil, false
			}
		case "session_id":
			if e.SessionID, ok = s.stringOrNull(); !ok {
				return nil, false
			}
		case "parent_tool_use_id":
			if e.ParentToolUseID, ok = s.stringOrNull(); !ok {
				return nil, false
			}
		default:
			return nil, false // ttft_ms and anything newer: the general path
		}
	}
	s.ws()
	if s.i != len(s.b) || ev == nil {
		return nil, false
	}
	e.Event = ev
	return e, true
}

// deltaEvent decodes {"type":"content_block_delta","index":N,"delta":{…}}.
func (s *scanner) deltaEvent() (*ContentBlockDeltaEvent, bool) {
	if !s.consume('{') {
		return nil, false
	}
	ev := &ContentBlockDeltaEvent{}
	sawType := false
	for first := true; ; first = false {
		key, done, ok := s.member(first)
		if !ok {
			return nil, false
		} else if done {
			break
		}
		switch string(key) {
		case "type":
			v, ok := s.rawString()
			if !ok || string(v) != "content_block_delta" {
				return nil, false
			}
			sawType = true
		case "index":
			if ev.Index, ok = s.smallInt(); !ok {
				return nil, false
			}
		case "delta":
			if ev.Delta, ok = s.delta(); !ok {
				return nil, false
			}
		default:
			return nil, false
		}
	}
	return ev, sawType && ev.Delta != nil
}

// delta decodes a text, input_json, thinking or signature delta.
func (s *scanner) delta() (Delta, bool) {
	if !s.consume('{') {
		return nil, false
	}
	// typ and member hold constants (no allocation per line).
	var typ, member, val string
	for first := true; ; first = false {
		key, done, ok := s.member(first)
		if !ok {
			return nil, false
		} else if done {
			break
		}
		var m string
		switch string(key) {
		case "type":
			raw, ok := s.rawString()
			if !ok {
				return nil, false
			}
			switch string(raw) {
			case "text_delta":
				typ = "text_delta"
			case "input_json_delta":
				typ = "input_json_delta"
			case "thinking_delta":
				typ = "thinking_delta"
			case "signature_delta":
				typ = "signature_delta"
			default:
				return nil, false
			}
			continue
		case "text":
			m = "text"
		case "partial_json":
			m = "partial_json"
		case "thinking":
			m = "thinking"
		case "signature":
			m = "signature"
		default:
			return nil, false
		}
		if member != "" { // two value members: leave it to the general path
			return nil, false
		}
		member = m
		if val, ok = s.str(); !ok {
			return nil, false
		}
	}
	// The value member must be the one the type names (or absent).
	if typ == "" || (member != "" && member != memberOf[typ]) {
		return nil, false
	}
	switch typ {
	case "text_delta":
		return &TextDelta{Text: val}, true
	case "input_json_delta":
		return &InputJSONDelta{PartialJSON: val}, true
	case "thinking_delta":
		return &ThinkingDelta{Thinking: val}, true
	default: // "signature_delta"
		return &SignatureDelta{Signature: val}, true
	}
}

// memberOf names the value member of each delta type the fast path knows.
var memberOf = map[string]string{"text_delta": "text", "input_json_delta": "partial_json", "thinking_delta": "thinking", "signature_delta": "signature"}

// scanner reads JSON from b for decodeDeltaFast; every method skips
// leading white space and reports ok false on anything unexpected.
type scanner struct {
	b []byte
	i int
}

// member moves to the next member of the object being read (its opening
// brace consumed) and returns its key, the scanner left at the value; done
// reports the object's end instead.
func (s *scanner) member(first bool) (key []byte, done, ok bool) {
	if s.consume('}') {
		return nil, true, true
	}
	if !first && !s.consume(',') {
		return nil, false, false
	}
	key, ok = s.rawString()
	return key, false, ok && s.consume(':')
}

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *scanner) consume(c byte) bool {
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// rawString returns a string's bytes between its quotes when it has no
// escapes and is valid UTF-8 (keys and enum values always are).
func (s *scanner) rawString() ([]byte, bool) {
	s.ws()
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return nil, false
	}
	start := s.i + 1
	for j := start; j < len(s.b); j++ {
		switch c := s.b[j]; {
		case c == '"':
			s.i = j + 1
			raw := s.b[start:j]
			return raw, utf8.Valid(raw)
		case c == '\\' || c < 0x20:
			return nil, false
		}
	}
	return nil, false
}

// str decodes a string value, escapes included.
func (s *scanner) str() (string, bool) {
	s.ws()
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return "", false
	}
	start := s.i
	escaped := false
	for j := start + 1; j < len(s.b); j++ {
		switch c := s.b[j]; {
		case c == '\\':
			escaped = true
			j++ // skip the escaped byte (a quote or backslash among them)
		case c == '"':
			s.i = j + 1
			raw := s.b[start+1 : j]
			if !escaped {
				if !utf8.Valid(raw) {
					return "", false // the general path mangles it into U+FFFD
				}
				return string(raw), true
			}
			quoted := s.b[start:s.i]
			if !utf8.Valid(quoted) {
				return "", false
			}
			var v string
			if unmarshal(quoted, &v) != nil {
				return "", false
			}
			return v, true
		case c < 0x20:
			return "", false
		}
	}
	return "", false
}

func (s *scanner) stringOrNull() (string, bool) {
	s.ws()
	if bytes.HasPrefix(s.b[s.i:], []byte("null")) {
		s.i += 4
		return "", true
	}
	return s.str()
}

// smallInt decodes a non-negative integer of a few digits.
func (s *scanner) smallInt() (int, bool) {
	s.ws()
	n, j := 0, s.i
	for j < len(s.b) && j-s.i < 9 && s.b[j] >= '0' && s.b[j] <= '9' {
		n = n*10 + int(s.b[j]-'0')
		j++
	}
	if j == s.i || (s.b[s.i] == '0' && j-s.i > 1) {
		return 0, false
	}
	if j < len(s.b) && (s.b[j] == '.' || s.b[j] == 'e' || s.b[j] == 'E' || (s.b[j] >= '0' && s.b[j] <= '9')) {
		return 0, false
	}
	s.i = j
	return n, true
}
