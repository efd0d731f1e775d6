package claude

import (
	"bytes"
	"strings"
	"unicode/utf8"
)

// span is a string value's place: first its contents in the line (quotes
// excluded), then, after scanner.put, its place in the message's string.
type span struct {
	from, to int
	esc      bool // it has escapes (before put)
}

func (p span) len() int { return p.to - p.from }

func (p span) of(all string) string { return all[p.from:p.to] }

// scanner reads JSON from b for the decode plans (plan.go); every method skips
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
	if s.i < len(s.b) && s.b[s.i] > ' ' { // the CLI writes none
		return
	}
	s.skipWS()
}

func (s *scanner) skipWS() {
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
	// Keys and enum values are short: a loop beats IndexByte's call.
	for j := start; j < len(s.b) && j-start < 24; j++ {
		if s.b[j] == '"' {
			s.i = j + 1
			return s.b[start:j], true
		}
	}
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
	esc := false
	for j := start + 1; j < len(s.b); j++ {
		c := s.b[j]
		if plainByte[c] {
			continue
		}
		hi |= c
		switch {
		case c == '\\':
			esc = true
			j++ // skip the escaped byte (a quote or backslash among them)
		case c == '"':
			s.i = j + 1
			if hi >= 0x80 && !utf8.Valid(s.b[start+1:j]) {
				return span{}, false // the general path mangles it into U+FFFD
			}
			return span{from: start + 1, to: j, esc: esc}, true
		case c < 0x20:
			return span{}, false
		}
	}
	return span{}, false
}

// plainByte marks the bytes a string holds as they are: printable ASCII
// but for the quote and the backslash.
var plainByte = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

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
	esc := p.esc
	*p = span{from: from, to: from}
	if !esc {
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

// null consumes a JSON null.
func (s *scanner) null() bool {
	s.ws()
	if len(s.b)-s.i >= 4 && string(s.b[s.i:s.i+4]) == "null" {
		s.i += 4
		return true
	}
	return false
}

// int64 decodes a non-negative integer of up to 18 digits.
func (s *scanner) int64() (int64, bool) {
	s.ws()
	var n int64
	j := s.i
	for j < len(s.b) && j-s.i < 18 && s.b[j] >= '0' && s.b[j] <= '9' {
		n = n*10 + int64(s.b[j]-'0')
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

// skipString scans a string, its escapes checked, and its UTF-8 (the
// general decoder would replace invalid bytes where it keeps a value, so
// such lines are left to it).
func (s *scanner) skipString() bool {
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return false
	}
	var hi byte
	for j := s.i + 1; j < len(s.b); j++ {
		c := s.b[j]
		hi |= c
		switch {
		case c == '"':
			if hi >= 0x80 && !utf8.Valid(s.b[s.i+1:j]) {
				return false
			}
			s.i = j + 1
			return true
		case c < 0x20:
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
