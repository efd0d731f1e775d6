// Package rawjson tells, in one pass, whether JSON that is passed through
// as it is (a json.RawMessage inside a record) would come out of
// encoding/json unchanged. encoding/json validates and compacts every
// raw message it writes, a byte at a time through its scanner's state
// functions: for a record that is mostly a CLI line carried verbatim (the
// cluster's events), that is most of the record's encoding cost, paid
// again by every reader that checks what it got. Verbatim costs a
// fraction of it, and says when the bytes can be copied without either.
package rawjson

// maxDepth is encoding/json's nesting limit: deeper is invalid there.
const maxDepth = 10000

// Character classes inside a string.
const (
	plain   = iota
	quote   // the string's end
	escape  // a backslash
	control // below 0x20: invalid
	html    // <, > or &: encoding/json writes \u003c, \u003e, \u0026
	lineSep // 0xE2: maybe U+2028 or U+2029, which it writes escaped too
)

var inString = func() (t [256]uint8) {
	for c := range 0x20 {
		t[c] = control
	}
	t['"'], t['\\'] = quote, escape
	t['<'], t['>'], t['&'] = html, html, html
	t[0xE2] = lineSep
	return t
}()

// Verbatim reports whether b is one valid JSON value that encoding/json
// writes unchanged as a json.RawMessage (json.Marshal, or a RawMessage
// field of a struct it marshals): no whitespace outside strings, and none
// of the characters it escapes when it compacts (<, >, &, U+2028,
// U+2029). Like encoding/json it does not check UTF-8, and it refuses
// nesting deeper than 10,000.
//
// When Verbatim is true, json.Marshal(json.RawMessage(b)) returns a copy
// of b; when it is false, either b is not valid JSON or encoding/json
// would change it (FuzzVerbatim holds the two to this).
func Verbatim(b []byte) bool {
	// One container per level: '{' or '['. The first levels need no
	// allocation.
	var small [64]byte
	stack := small[:0]
	i := 0
	for {
		// A value.
		if i >= len(b) {
			return false
		}
		switch c := b[i]; {
		case c == '"':
			j, ok := str(b, i+1)
			if !ok {
				return false
			}
			i = j
		case c == '{' || c == '[':
			if len(stack) == maxDepth {
				return false
			}
			stack = append(stack, c)
			i++
			if i < len(b) && b[i] == c+2 { // '}' is '{'+2, ']' is '['+2
				stack = stack[:len(stack)-1]
				i++
				break
			}
			if c == '{' {
				j, ok := key(b, i)
				if !ok {
					return false
				}
				i = j
			}
			continue // the first member's or element's value
		case c == '-' || (c >= '0' && c <= '9'):
			j, ok := number(b, i)
			if !ok {
				return false
			}
			i = j
		case c == 't':
			if !lit(b, i, "true") {
				return false
			}
			i += 4
		case c == 'f':
			if !lit(b, i, "false") {
				return false
			}
			i += 5
		case c == 'n':
			if !lit(b, i, "null") {
				return false
			}
			i += 4
		default:
			return false
		}
		// After a value: close containers, or go on to the next value.
		for {
			if len(stack) == 0 {
				return i == len(b)
			}
			if i >= len(b) {
				return false
			}
			top := stack[len(stack)-1]
			if b[i] == top+2 {
				stack = stack[:len(stack)-1]
				i++
				continue
			}
			if b[i] != ',' {
				return false
			}
			i++
			if top == '{' {
				j, ok := key(b, i)
				if !ok {
					return false
				}
				i = j
			}
			break
		}
	}
}

// key scans a member's name and its colon from i and returns the index
// after the colon.
func key(b []byte, i int) (int, bool) {
	if i >= len(b) || b[i] != '"' {
		return 0, false
	}
	j, ok := str(b, i+1)
	if !ok || j >= len(b) || b[j] != ':' {
		return 0, false
	}
	return j + 1, true
}

// str scans a string's contents from i (after its opening quote) and
// returns the index after its closing quote.
func str(b []byte, i int) (int, bool) {
	for i < len(b) {
		switch inString[b[i]] {
		case plain:
			i++
		case quote:
			return i + 1, true
		case escape:
			if i+1 >= len(b) {
				return 0, false
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(b) || !hex(b[i+2]) || !hex(b[i+3]) || !hex(b[i+4]) || !hex(b[i+5]) {
					return 0, false
				}
				i += 6
			default:
				return 0, false
			}
		case lineSep:
			if i+2 < len(b) && b[i+1] == 0x80 && (b[i+2] == 0xA8 || b[i+2] == 0xA9) {
				return 0, false
			}
			i++
		default: // control, html
			return 0, false
		}
	}
	return 0, false
}

func hex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// number scans a JSON number from i and returns the index after it.
func number(b []byte, i int) (int, bool) {
	if b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		i = digits(b, i+1)
	default:
		return 0, false
	}
	if i < len(b) && b[i] == '.' {
		j := digits(b, i+1)
		if j == i+1 {
			return 0, false
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digits(b, i)
		if j == i {
			return 0, false
		}
		i = j
	}
	return i, true
}

func digits(b []byte, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}

func lit(b []byte, i int, word string) bool {
	return len(b)-i >= len(word) && string(b[i:i+len(word)]) == word
}
