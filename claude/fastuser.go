package claude

import (
	"encoding/json"
	"strings"
)

// decodeUserFast decodes the user message that carries tool results, the
// most common user line of a turn, without the reflection-driven decoder:
//
//	{"type":"user","message":{"role":"user","content":[{"tool_use_id":…,
//	"type":"tool_result","content":…,"is_error":…}]},"parent_tool_use_id":…,
//	"session_id":…,"uuid":…,"timestamp":…,"tool_use_result":…}
//
// The raw values (each block's content, tool_use_result) are slices of
// line, which the message keeps as Raw anyway, rather than copies. Like
// decodeAssistantFast it returns ok false for anything it is not sure of
// (another block type, a member it does not know, a duplicate member, a
// null where the general decoder's handling differs, an escape it does
// not check), and the general decoder then takes the line; FuzzDecode
// checks the two agree whenever this succeeds.
func decodeUserFast(line []byte) (*UserMessage, bool) {
	s := scanner{b: line}
	if !s.consume('{') {
		return nil, false
	}
	var uuid, sid, parent, timestamp, role span
	var results []fastToolResult
	var toolUseResult []byte
	var seen uint32
	for first := true; ; first = false {
		key, done, ok := s.member(first)
		if !ok {
			return nil, false
		} else if done {
			break
		}
		var bit uint32
		switch string(key) {
		case "type":
			bit = 1
			v, ok := s.rawString()
			if !ok || string(v) != "user" {
				return nil, false
			}
		case "message":
			bit = 2
			if role, results, ok = s.userMessageBody(); !ok {
				return nil, false
			}
		case "parent_tool_use_id":
			bit = 4
			if parent, ok = s.stringOrNull(); !ok {
				return nil, false
			}
		case "session_id":
			bit = 8
			if sid, ok = s.str(); !ok {
				return nil, false
			}
		case "uuid":
			bit = 16
			if uuid, ok = s.str(); !ok {
				return nil, false
			}
		case "timestamp":
			bit = 32
			if timestamp, ok = s.str(); !ok {
				return nil, false
			}
		case "tool_use_result":
			bit = 64
			if toolUseResult, ok = s.rawValue(); !ok || string(toolUseResult) == "null" {
				return nil, false
			}
		default:
			return nil, false
		}
		if seen&bit != 0 {
			return nil, false
		}
		seen |= bit
	}
	s.ws()
	if s.i != len(s.b) || seen&2 == 0 {
		return nil, false
	}
	// One allocation for every string of the message.
	n := uuid.len() + sid.len() + parent.len() + timestamp.len() + role.len()
	for _, r := range results {
		n += r.id.len()
	}
	var sb strings.Builder
	sb.Grow(n)
	for _, p := range []*span{&uuid, &sid, &parent, &timestamp, &role} {
		if !s.put(&sb, p) {
			return nil, false
		}
	}
	for i := range results {
		if !s.put(&sb, &results[i].id) {
			return nil, false
		}
	}
	all := sb.String()
	x := &struct {
		m       UserMessage
		content [1]ContentBlock
		block   ToolResultBlock
	}{}
	m := &x.m
	m.UUID, m.SessionID, m.ParentToolUseID, m.Timestamp = uuid.of(all), sid.of(all), parent.of(all), timestamp.of(all)
	if toolUseResult != nil {
		m.ToolUseResult = json.RawMessage(toolUseResult)
	}
	if len(results) == 1 {
		m.Content = x.content[:]
		x.block = results[0].block(all)
		m.Content[0] = &x.block
	} else {
		blocks := make([]ToolResultBlock, len(results))
		m.Content = make([]ContentBlock, len(results))
		for i, r := range results {
			blocks[i] = r.block(all)
			m.Content[i] = &blocks[i]
		}
	}
	return m, true
}

// fastToolResult is a ToolResultBlock while scanning.
type fastToolResult struct {
	id      span
	content []byte // the raw value; nil when absent
	isError bool
}

func (r fastToolResult) block(all string) ToolResultBlock {
	b := ToolResultBlock{ToolUseID: r.id.of(all), IsError: r.isError}
	if r.content != nil {
		b.Content = json.RawMessage(r.content)
	}
	return b
}

// userMessageBody decodes the message member of a user line: its role and
// a non-empty content array of tool_result blocks.
func (s *scanner) userMessageBody() (role span, results []fastToolResult, ok bool) {
	if !s.consume('{') {
		return span{}, nil, false
	}
	var seen uint32
	for first := true; ; first = false {
		key, done, ok := s.member(first)
		if !ok {
			return span{}, nil, false
		} else if done {
			break
		}
		var bit uint32
		switch string(key) {
		case "role":
			bit = 1
			role, ok = s.str()
		case "content":
			bit = 2
			results, ok = s.toolResults()
		default:
			return span{}, nil, false
		}
		if !ok || seen&bit != 0 {
			return span{}, nil, false
		}
		seen |= bit
	}
	return role, results, seen&2 != 0
}

// toolResults decodes a non-empty array of tool_result blocks.
func (s *scanner) toolResults() ([]fastToolResult, bool) {
	if !s.consume('[') || s.consume(']') {
		return nil, false
	}
	var out []fastToolResult
	for {
		if !s.consume('{') {
			return nil, false
		}
		var r fastToolResult
		var seen uint32
		for first := true; ; first = false {
			key, done, ok := s.member(first)
			if !ok {
				return nil, false
			} else if done {
				break
			}
			var bit uint32
			switch string(key) {
			case "type":
				bit = 1
				v, rok := s.rawString()
				ok = rok && string(v) == "tool_result"
			case "tool_use_id":
				bit = 2
				r.id, ok = s.str()
			case "content":
				bit = 4
				r.content, ok = s.rawValue()
				ok = ok && string(r.content) != "null"
			case "is_error":
				bit = 8
				r.isError, ok = s.boolean()
			default:
				return nil, false
			}
			if !ok || seen&bit != 0 {
				return nil, false
			}
			seen |= bit
		}
		if seen&1 == 0 {
			return nil, false
		}
		out = append(out, r)
		if s.consume(']') {
			return out, true
		}
		if !s.consume(',') {
			return nil, false
		}
	}
}

func (s *scanner) boolean() (v, ok bool) {
	s.ws()
	if s.literal("true") {
		return true, true
	}
	return false, s.literal("false")
}

// maxRawDepth bounds the nesting rawValue follows; deeper values go to the
// general decoder.
const maxRawDepth = 32

// rawValue scans one JSON value of any kind, checking its syntax as the
// general decoder would, and returns its bytes as they are in the line.
func (s *scanner) rawValue() ([]byte, bool) {
	s.ws()
	start := s.i
	if !s.skipValue(0) {
		return nil, false
	}
	return s.b[start:s.i:s.i], true
}

func (s *scanner) skipValue(depth int) bool {
	s.ws()
	if s.i >= len(s.b) || depth > maxRawDepth {
		return false
	}
	switch c := s.b[s.i]; {
	case c == '"':
		return s.skipString()
	case c == '{':
		s.i++
		for first := true; ; first = false {
			if s.consume('}') {
				return true
			}
			if !first && !s.consume(',') {
				return false
			}
			s.ws()
			if !s.skipString() || !s.consume(':') || !s.skipValue(depth+1) {
				return false
			}
		}
	case c == '[':
		s.i++
		for first := true; ; first = false {
			if s.consume(']') {
				return true
			}
			if !first && !s.consume(',') {
				return false
			}
			if !s.skipValue(depth + 1) {
				return false
			}
		}
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	default:
		return s.skipNumber()
	}
}

func (s *scanner) literal(lit string) bool {
	if len(s.b)-s.i >= len(lit) && string(s.b[s.i:s.i+len(lit)]) == lit {
		s.i += len(lit)
		return true
	}
	return false
}

// skipString scans a string, its escapes checked; bytes above ASCII are
// refused (their UTF-8 would need checking), which leaves such lines to
// the general decoder.
func (s *scanner) skipString() bool {
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return false
	}
	for j := s.i + 1; j < len(s.b); j++ {
		c := s.b[j]
		switch {
		case c == '"':
			s.i = j + 1
			return true
		case c < 0x20 || c >= 0x80:
			return false
		case c == '\\':
			j++
			if j >= len(s.b) {
				return false
			}
			switch s.b[j] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if j+4 >= len(s.b) {
					return false
				}
				for _, h := range s.b[j+1 : j+5] {
					if !isHex(h) {
						return false
					}
				}
				j += 4
			default:
				return false
			}
		}
	}
	return false
}

func isHex(c byte) bool {
	return ('0' <= c && c <= '9') || ('a' <= c && c <= 'f') || ('A' <= c && c <= 'F')
}

// skipNumber scans a number in JSON's grammar: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (s *scanner) skipNumber() bool {
	j := s.i
	digits := func() int {
		k := j
		for j < len(s.b) && s.b[j] >= '0' && s.b[j] <= '9' {
			j++
		}
		return j - k
	}
	if j < len(s.b) && s.b[j] == '-' {
		j++
	}
	if j < len(s.b) && s.b[j] == '0' {
		j++
	} else if digits() == 0 {
		return false
	}
	if j < len(s.b) && s.b[j] == '.' {
		j++
		if digits() == 0 {
			return false
		}
	}
	if j < len(s.b) && (s.b[j] == 'e' || s.b[j] == 'E') {
		j++
		if j < len(s.b) && (s.b[j] == '+' || s.b[j] == '-') {
			j++
		}
		if digits() == 0 {
			return false
		}
	}
	// A number must end where a delimiter starts: "01" or "1x" are not
	// numbers followed by something else.
	if j < len(s.b) {
		switch s.b[j] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
		default:
			return false
		}
	}
	s.i = j
	return true
}
