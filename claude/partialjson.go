package claude

import "unicode/utf8"

// completeJSON turns the prefix of a JSON value that has arrived so far
// into valid JSON, keeping as much as can be kept: an unfinished string
// value is closed where it stops (so a command shows as it is typed),
// open objects and arrays are closed, and what cannot be completed
// honestly (half a key, a key without its value, half a literal, a
// number that ends in "." or "e") is cut off. The result of a complete
// value is the value itself. It returns nil when nothing is usable yet.
func completeJSON(b []byte) []byte {
	type frame struct {
		obj bool
		st  int // obj: 0 open, 1 want ':', 2 want value, 3 after value, 4 want key; arr: 0 open, 1 after value, 2 want value
	}
	var stack []frame
	closers := func() []byte {
		c := make([]byte, 0, len(stack))
		for i := len(stack) - 1; i >= 0; i-- {
			if stack[i].obj {
				c = append(c, '}')
			} else {
				c = append(c, ']')
			}
		}
		return c
	}
	safe, safeClose := 0, []byte(nil)
	mark := func(pos int) { safe, safeClose = pos, closers() }
	cut := func() []byte {
		if safe == 0 {
			return nil
		}
		out := make([]byte, 0, safe+len(safeClose))
		return append(append(out, b[:safe]...), safeClose...)
	}
	// valueDone records a complete value ending at pos.
	valueDone := func(pos int) {
		if n := len(stack); n > 0 {
			if stack[n-1].obj {
				stack[n-1].st = 3
			} else {
				stack[n-1].st = 1
			}
		}
		mark(pos)
	}
	// scanString returns the index after the closing quote of the string
	// starting at b[i] == '"', or -1 and the index of the first byte that
	// cannot be kept (an unfinished escape) when the input ends first.
	scanString := func(i int) (end, keep int) {
		for j := i + 1; j < len(b); j++ {
			switch b[j] {
			case '"':
				return j + 1, 0
			case '\\':
				if j+1 >= len(b) {
					return -1, j
				}
				if b[j+1] == 'u' {
					if j+6 > len(b) {
						return -1, j
					}
					j += 5
				} else {
					j++
				}
			}
		}
		keep = len(b)
		for keep > i+1 && !utf8.Valid(b[i+1:keep]) {
			keep--
		}
		return -1, keep
	}
	wantValue := func() bool {
		if len(stack) == 0 {
			return safe == 0
		}
		f := stack[len(stack)-1]
		return (f.obj && f.st == 2) || (!f.obj && (f.st == 0 || f.st == 2))
	}
	i := 0
	for {
		for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
			i++
		}
		if i >= len(b) {
			return cut()
		}
		c := b[i]
		if wantValue() {
			switch {
			case c == '{':
				stack = append(stack, frame{obj: true})
				i++
				mark(i)
			case c == '[':
				stack = append(stack, frame{})
				i++
				mark(i)
			case c == ']' && len(stack) > 0 && !stack[len(stack)-1].obj && stack[len(stack)-1].st == 0:
				stack = stack[:len(stack)-1]
				i++
				valueDone(i)
			case c == '"':
				end, keep := scanString(i)
				if end < 0 {
					out := make([]byte, 0, keep+1+len(stack))
					out = append(append(out, b[:keep]...), '"')
					return append(out, closers()...)
				}
				i = end
				valueDone(i)
			case c == '-' || (c >= '0' && c <= '9'):
				j := i
				for j < len(b) && (b[j] == '-' || b[j] == '+' || b[j] == '.' || b[j] == 'e' || b[j] == 'E' || (b[j] >= '0' && b[j] <= '9')) {
					j++
				}
				if j == len(b) && !(b[j-1] >= '0' && b[j-1] <= '9') {
					return cut() // "1." or "-" or "1e": not a number yet
				}
				i = j
				valueDone(i)
			case c == 't' || c == 'f' || c == 'n':
				lit := map[byte]string{'t': "true", 'f': "false", 'n': "null"}[c]
				if len(b)-i < len(lit) {
					return cut()
				}
				if string(b[i:i+len(lit)]) != lit {
					return cut()
				}
				i += len(lit)
				valueDone(i)
			default:
				return cut()
			}
			continue
		}
		if len(stack) == 0 {
			return cut() // trailing bytes after a complete value
		}
		f := &stack[len(stack)-1]
		switch {
		case f.obj && (f.st == 0 || f.st == 4) && c == '"':
			end, _ := scanString(i)
			if end < 0 {
				return cut() // half a key
			}
			i = end
			f.st = 1
		case f.obj && f.st == 0 && c == '}', f.obj && f.st == 3 && c == '}', !f.obj && f.st == 1 && c == ']':
			stack = stack[:len(stack)-1]
			i++
			valueDone(i)
		case f.obj && f.st == 1 && c == ':':
			f.st = 2
			i++
		case f.obj && f.st == 3 && c == ',':
			f.st = 4
			i++
		case !f.obj && f.st == 1 && c == ',':
			f.st = 2
			i++
		default:
			return cut()
		}
	}
}
