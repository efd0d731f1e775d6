package claude

import (
	"strings"
	"testing"
)

// TestPlanLookup checks the plans' lookup of member names (a hash of a few
// bytes, then a comparison a word at a time) against plain string
// comparison: every name of every length is found, and a key that differs
// from one in any single byte, or in its length, is not.
func TestPlanLookup(t *testing.T) {
	var fields []planField
	for n := range 41 {
		name := strings.Repeat("x", n)
		if n > 0 {
			b := []byte(name)
			for i := range b {
				b[i] = 'a' + byte((i*7+n)%26)
			}
			name = string(b)
		}
		fields = append(fields, planField{name: name})
	}
	p := &plan{byName: map[string]int{}}
	for _, f := range fields {
		p.put(f)
	}
	p.index()
	for i, f := range p.fields {
		key := []byte(f.name)
		if got, ok := p.lookup(key); !ok || got != i {
			t.Errorf("lookup(%q) = %d, %v; want %d, true", key, got, ok, i)
		}
		for j := range key {
			k := []byte(f.name)
			k[j] ^= 0x20
			if got, ok := p.lookup(k); ok {
				t.Errorf("lookup(%q) found %q", k, p.fields[got].name)
			}
		}
		if got, ok := p.lookup(append([]byte(f.name), 'z')); ok && got != i+1 {
			t.Errorf("lookup(%q+z) found %q", key, p.fields[got].name)
		}
	}
}
