package claude

import (
	"encoding/binary"
	"math/bits"
	"unicode/utf8"
	"unsafe"
)

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
	// As the CLI writes members: no white space, ',"key":'.
	b, i := s.b, s.i
	if i < len(b) && b[i] == ',' && !first {
		i++
	}
	if i < len(b) && b[i] == '"' && (i != s.i || first) {
		if end := indexQuote(b, i+1); end >= 0 && end+1 < len(b) && b[end+1] == ':' {
			s.i = end + 2
			return b[i+1 : end], false, true
		}
	}
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
	end := indexQuote(s.b, start)
	if end < 0 {
		return nil, false
	}
	s.i = end + 1
	return s.b[start:end], true
}

// strValue scans a string value and returns it: without escapes, a
// string that shares the line's memory (see plan.go); with escapes, a
// decoded copy.
func (s *scanner) strValue() (string, bool) {
	s.ws()
	b := s.b
	if s.i >= len(b) || b[s.i] != '"' {
		return "", false
	}
	start := s.i + 1
	var hi uint64 // the bytes or'ed: a high bit set when any is not ASCII
	esc := false
	j := start
	for {
		var w uint64
		j, w = nextSpecial(b, j)
		hi |= w
		if j >= len(b) {
			return "", false
		}
		switch c := b[j]; {
		case c == '"':
			s.i = j + 1
			raw := b[start:j]
			if hi&swarHigh != 0 && !utf8.Valid(raw) {
				return "", false // the general path mangles it into U+FFFD
			}
			if esc {
				return unescape(b[start-1 : j+1])
			}
			if len(raw) == 0 {
				return "", true
			}
			return unsafe.String(&raw[0], len(raw)), true
		case c == '\\':
			esc = true
			j += 2 // skip the escaped byte (a quote or backslash among them)
		default: // a control character
			return "", false
		}
	}
}

// unescape decodes a quoted string with escapes (its syntax not yet
// checked). \u escapes (rare in the CLI's output, and with surrogate pairs
// to get right) go through the general decoder.
func unescape(quoted []byte) (string, bool) {
	raw := quoted[1 : len(quoted)-1]
	out := make([]byte, 0, len(raw))
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if c != '\\' {
			out = append(out, c)
			continue
		}
		i++
		if i >= len(raw) {
			return "", false
		}
		switch raw[i] {
		case '"', '\\', '/':
			out = append(out, raw[i])
		case 'n':
			out = append(out, '\n')
		case 't':
			out = append(out, '\t')
		case 'r':
			out = append(out, '\r')
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'u':
			var v string
			if unmarshal(quoted, &v) != nil {
				return "", false
			}
			return v, true
		default:
			return "", false
		}
	}
	return unsafe.String(unsafe.SliceData(out), len(out)), true
}

// SWAR (SIMD within a register): eight bytes of a string at a time.
const (
	swarOnes = 0x0101010101010101
	swarHigh = 0x8080808080808080
)

// swarSpecial marks (high bit) each byte of x that ends a run of plain
// string bytes: a quote, a backslash or a control character. Marks above
// the lowest may be false (a borrow); the lowest is exact.
func swarSpecial(x uint64) uint64 {
	q := x ^ (swarOnes * '"')
	bs := x ^ (swarOnes * '\\')
	return ((q-swarOnes)&^q | (bs-swarOnes)&^bs | (x-swarOnes*0x20)&^x) & swarHigh
}

// nextSpecial returns the index of the first byte of b from j on that is
// a quote, a backslash or a control character (len(b) if none), and the
// bytes it passed or'ed together (at least), for the caller's check of
// non-ASCII bytes.
func nextSpecial(b []byte, j int) (int, uint64) {
	var hi uint64
	for ; j+8 <= len(b); j += 8 {
		x := binary.LittleEndian.Uint64(b[j:])
		hi |= x
		if m := swarSpecial(x); m != 0 {
			return j + bits.TrailingZeros64(m)>>3, hi
		}
	}
	for ; j < len(b); j++ {
		c := b[j]
		if c == '"' || c == '\\' || c < 0x20 {
			break
		}
		hi |= uint64(c)
	}
	return j, hi
}

// indexQuote returns the index of the first quote in b from j on, -1 if
// none.
func indexQuote(b []byte, j int) int {
	for ; j+8 <= len(b); j += 8 {
		q := binary.LittleEndian.Uint64(b[j:]) ^ (swarOnes * '"')
		if m := (q - swarOnes) &^ q & swarHigh; m != 0 {
			return j + bits.TrailingZeros64(m)>>3
		}
	}
	for ; j < len(b); j++ {
		if b[j] == '"' {
			return j
		}
	}
	return -1
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
	b := s.b
	if s.i >= len(b) || b[s.i] != '"' {
		return false
	}
	var hi uint64
	for j := s.i + 1; ; {
		var w uint64
		j, w = nextSpecial(b, j)
		hi |= w
		if j >= len(b) {
			return false
		}
		switch c := b[j]; {
		case c == '"':
			if hi&swarHigh != 0 && !utf8.Valid(b[s.i+1:j]) {
				return false
			}
			s.i = j + 1
			return true
		case c < 0x20:
			return false
		}
		// A backslash.
		j++
		if j >= len(b) {
			return false
		}
		switch b[j] {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			j++
		case 'u':
			if j+4 >= len(b) {
				return false
			}
			for _, h := range b[j+1 : j+5] {
				if !isHex(h) {
					return false
				}
			}
			j += 5
		default:
			return false
		}
	}
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
