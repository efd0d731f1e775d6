package claude

import (
	"encoding/json"
	"testing"
)

func TestCompleteJSON(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{``, ``},
		{`{`, `{}`},
		{`{"comm`, `{}`},
		{`{"command"`, `{}`},
		{`{"command":`, `{}`},
		{`{"command": "ls -l`, `{"command": "ls -l"}`},
		{`{"command":"ls -l"`, `{"command":"ls -l"}`},
		{`{"command":"ls -l",`, `{"command":"ls -l"}`},
		{`{"command":"ls -l","timeout":12`, `{"command":"ls -l","timeout":12}`},
		{`{"command":"ls -l","timeout":1.`, `{"command":"ls -l"}`},
		{`{"a":"x\`, `{"a":"x"}`},
		{`{"a":"x\u00`, `{"a":"x"}`},
		{`{"a":"x\n`, `{"a":"x\n"}`},
		{`{"a":"\"q\""`, `{"a":"\"q\""}`},
		{`{"a":tr`, `{}`},
		{`{"a":true`, `{"a":true}`},
		{`{"a":[1,2`, `{"a":[1,2]}`},
		{`{"a":[1,2,`, `{"a":[1,2]}`},
		{`{"a":[{"b":"c`, `{"a":[{"b":"c"}]}`},
		{`{"a":[]`, `{"a":[]}`},
		{`{"a":{}}`, `{"a":{}}`},
		{`{"q":[{"question":"Which?","options":[{"label":"A"},{"lab`, `{"q":[{"question":"Which?","options":[{"label":"A"},{}]}]}`},
		{`"hal`, `"hal"`},
		{`{"a":"é`, `{"a":"é"}`},
		{"{\"a\":\"\xc3", `{"a":""}`},
	} {
		got := string(completeJSON([]byte(c.in)))
		if got != c.want {
			t.Errorf("completeJSON(%q) = %q, want %q", c.in, got, c.want)
		}
		if got != "" && !json.Valid([]byte(got)) {
			t.Errorf("completeJSON(%q) = %q is not valid JSON", c.in, got)
		}
	}
}

// FuzzCompleteJSON checks that every prefix of a valid value completes
// to valid JSON.
func FuzzCompleteJSON(f *testing.F) {
	f.Add(`{"command":"ls -l","n":[1,2.5e3,{"x":null}],"t":true,"s":"a\"b\u00e9"}`)
	f.Fuzz(func(t *testing.T, s string) {
		if !json.Valid([]byte(s)) {
			return
		}
		for i := range len(s) + 1 {
			if out := completeJSON([]byte(s[:i])); out != nil && !json.Valid(out) {
				t.Fatalf("completeJSON(%q) = %q is not valid JSON", s[:i], out)
			}
		}
	})
}
