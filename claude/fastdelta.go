package claude

import (
	"bytes"
	"strings"
	"unicode/utf8"
)

// decodeDeltaFast decodes the commonest stdout line by far — a
// stream_event carrying a content_block_delta, one per token — without the
// reflection-driven decoder, which costs about three times as much per
// line. It returns ok false for anything it is not sure of (another event,
// an unknown delta or member, invalid UTF-8, malformed JSON), and the
// general decoder then takes the line. FuzzDecode checks that whenever this
// succeeds, the general decoder gives the same message.
//
// It makes two allocations per line, whatever the line: the event, its
// ContentBlockDeltaEvent and the delta together, and one string holding
// the uuid, session_id, parent_tool_use_id and the delta's value, which the
// message's string fields share (the garbage collector's work per token
// is what a host pays most for besides the scan).
func decodeDeltaFast(line []byte) (*StreamEvent, bool) {
	s := scanner{b: line}
	if !s.consume('{') {
		return nil, false
	}
	var uuid, sid, parent, val span
	var typ deltaType
	var index int
	sawEvent := false
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
			if index, typ, val, ok = s.deltaEvent(); !ok {
				return nil, false
			}
			sawEvent = true
		case "uuid":
			if uuid, ok = s.stringOrNull(); !ok {
				return nil, false
			}
		case "session_id":
			if sid, ok = s.stringOrNull(); !ok {
				return nil, false
			}
		case "parent_tool_use_id":
			if parent, ok = s.stringOrNull(); !ok {
				return nil, false
			}
		default:
			return nil, false // ttft_ms and anything newer: the general path
		}
	}
	s.ws()
	if s.i != len(s.b) || !sawEvent {
		return nil, false
	}
	// One allocation for every string of the message.
	var sb strings.Builder
	sb.Grow(uuid.len() + sid.len() + parent.len() + val.len())
	if !s.put(&sb, &uuid) || !s.put(&sb, &sid) || !s.put(&sb, &parent) || !s.put(&sb, &val) {
		return nil, false
	}
	all := sb.String()
	var e *StreamEvent
	var ev *ContentBlockDeltaEvent
	v := val.of(all)
	switch typ {
	case textDelta:
		x := &struct {
			e  StreamEvent
			ev ContentBlockDeltaEvent
			d  TextDelta
		}{}
		x.d.Text = v
		x.ev.Delta = &x.d
		e, ev = &x.e, &x.ev
	case inputJSONDelta:
		x := &struct {
			e  StreamEvent
			ev ContentBlockDeltaEvent
			d  InputJSONDelta
		}{}
		x.d.PartialJSON = v
		x.ev.Delta = &x.d
		e, ev = &x.e, &x.ev
	case thinkingDelta:
		x := &struct {
			e  StreamEvent
			ev ContentBlockDeltaEvent
			d  ThinkingDelta
		}{}
		x.d.Thinking = v
		x.ev.Delta = &x.d
		e, ev = &x.e, &x.ev
	default: // signatureDelta
		x := &struct {
			e  StreamEvent
			ev ContentBlockDeltaEvent
			d  SignatureDelta
		}{}
		x.d.Signature = v
		x.ev.Delta = &x.d
		e, ev = &x.e, &x.ev
	}
	e.UUID, e.SessionID, e.ParentToolUseID = uuid.of(all), sid.of(all), parent.of(all)
	ev.Index = index
	e.Event = ev
	return e, true
}

// span is a string value's place: first its contents in the line (quotes
// excluded), then, after scanner.put, its place in the message's string.
type span struct {
	from, to int
}

func (p span) len() int { return p.to - p.from }

func (p span) of(all string) string { return all[p.from:p.to] }

type deltaType uint8

const (
	noDelta deltaType = iota
	textDelta
	inputJSONDelta
	thinkingDelta
	signatureDelta
)

// deltaEvent decodes {"type":"content_block_delta","index":N,"delta":{…}}.
func (s *scanner) deltaEvent() (index int, typ deltaType, val span, ok bool) {
	if !s.consume('{') {
		return 0, 0, span{}, false
	}
	sawType := false
	for first := true; ; first = false {
		key, done, ok := s.member(first)
		if !ok {
			return 0, 0, span{}, false
		} else if done {
			break
		}
		switch string(key) {
		case "type":
			v, ok := s.rawString()
			if !ok || string(v) != "content_block_delta" {
				return 0, 0, span{}, false
			}
			sawType = true
		case "index":
			if index, ok = s.smallInt(); !ok {
				return 0, 0, span{}, false
			}
		case "delta":
			if typ, val, ok = s.delta(); !ok {
				return 0, 0, span{}, false
			}
		default:
			return 0, 0, span{}, false
		}
	}
	return index, typ, val, sawType && typ != noDelta
}

// delta decodes a text, input_json, thinking or signature delta.
func (s *scanner) delta() (deltaType, span, bool) {
	if !s.consume('{') {
		return 0, span{}, false
	}
	var typ, member deltaType
	var val span
	for first := true; ; first = false {
		key, done, ok := s.member(first)
		if !ok {
			return 0, span{}, false
		} else if done {
			break
		}
		var m deltaType
		switch string(key) {
		case "type":
			raw, ok := s.rawString()
			if !ok {
				return 0, span{}, false
			}
			switch string(raw) {
			case "text_delta":
				typ = textDelta
			case "input_json_delta":
				typ = inputJSONDelta
			case "thinking_delta":
				typ = thinkingDelta
			case "signature_delta":
				typ = signatureDelta
			default:
				return 0, span{}, false
			}
			continue
		case "text":
			m = textDelta
		case "partial_json":
			m = inputJSONDelta
		case "thinking":
			m = thinkingDelta
		case "signature":
			m = signatureDelta
		default:
			return 0, span{}, false
		}
		if member != noDelta { // two value members: leave it to the general path
			return 0, span{}, false
		}
		member = m
		if val, ok = s.str(); !ok {
			return 0, span{}, false
		}
	}
	// The value member must be the one the type names (or absent).
	if typ == noDelta || (member != noDelta && member != typ) {
		return 0, span{}, false
	}
	return typ, val, true
}

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

// rawString returns the bytes up to the closing quote of a string. Its
// callers only compare them with constants (keys and enum values) that
// have no escapes, control characters or bytes above ASCII, so a string
// with any of those (or cut short at an escaped quote) never matches and
// needs no check here.
func (s *scanner) rawString() ([]byte, bool) {
	s.ws()
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return nil, false
	}
	start := s.i + 1
	end := bytes.IndexByte(s.b[start:], '"')
	if end < 0 {
		return nil, false
	}
	s.i = start + end + 1
	return s.b[start : start+end], true
}

// str scans a string value and returns where its contents are; put
// decodes them.
func (s *scanner) str() (span, bool) {
	s.ws()
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return span{}, false
	}
	start := s.i
	var hi byte // the bytes or'ed: >= 0x80 when any is not ASCII
	for j := start + 1; j < len(s.b); j++ {
		c := s.b[j]
		hi |= c
		switch {
		case c == '\\':
			j++ // skip the escaped byte (a quote or backslash among them)
		case c == '"':
			s.i = j + 1
			if hi >= 0x80 && !utf8.Valid(s.b[start+1:j]) {
				return span{}, false // the general path mangles it into U+FFFD
			}
			return span{from: start + 1, to: j}, true
		case c < 0x20:
			return span{}, false
		}
	}
	return span{}, false
}

// put writes the string at p to sb, unescaped, and makes p its place in
// sb. \u escapes (rare in the CLI's output, and with surrogate pairs to
// get right) go through the general decoder.
func (s *scanner) put(sb *strings.Builder, p *span) bool {
	from := sb.Len()
	if p.from == p.to { // "" or null
		*p = span{from: from, to: from}
		return true
	}
	quoted := s.b[p.from-1 : p.to+1]
	raw := quoted[1 : len(quoted)-1]
	*p = span{from: from, to: from}
	if bytes.IndexByte(raw, '\\') < 0 {
		sb.Write(raw)
		p.to = sb.Len()
		return true
	}
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if c != '\\' {
			sb.WriteByte(c)
			continue
		}
		i++
		if i >= len(raw) {
			return false
		}
		switch raw[i] {
		case '"', '\\', '/':
			sb.WriteByte(raw[i])
		case 'n':
			sb.WriteByte('\n')
		case 't':
			sb.WriteByte('\t')
		case 'r':
			sb.WriteByte('\r')
		case 'b':
			sb.WriteByte('\b')
		case 'f':
			sb.WriteByte('\f')
		case 'u':
			// Start over on this value with the general decoder; what
			// was written of it stays in sb, unused.
			var v string
			if unmarshal(quoted, &v) != nil {
				return false
			}
			from = sb.Len()
			sb.WriteString(v)
			*p = span{from: from, to: sb.Len()}
			return true
		default:
			return false
		}
	}
	p.to = sb.Len()
	return true
}

func (s *scanner) stringOrNull() (span, bool) {
	s.ws()
	if bytes.HasPrefix(s.b[s.i:], []byte("null")) {
		s.i += 4
		return span{}, true
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
