package rawjson

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// marshalsUnchanged is what Verbatim stands for: encoding/json writes b
// as a RawMessage without error and without changing a byte.
func marshalsUnchanged(b []byte) bool {
	out, err := json.Marshal(json.RawMessage(b))
	return err == nil && bytes.Equal(out, b)
}

var cases = []struct {
	in   string
	want bool
}{
	{`{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi \"there\"\n\u00e9"}},"session_id":"s","parent_tool_use_id":null,"uuid":"u"}`, true},
	{`[]`, true},
	{`{}`, true},
	{`[1,-0,2.5,-3e10,4E+2,5e-1,0.0]`, true},
	{`[true,false,null,"",{"a":[{}]}]`, true},
	{`"caf\u00e9 ☕"`, true},
	{"\"\xff\xfe\"", true}, // encoding/json does not check UTF-8
	{`"\u003cb\u003e"`, true},
	{`"<b>"`, false},      // escaped by encoding/json
	{`"a & b"`, false},    // likewise
	{"\"\u2028\"", false}, // likewise
	{"\"\u2029\"", false},
	{"\"\xe2\x80\xa7\"", true}, // U+2027: not escaped
	{`{"a": 1}`, false},        // not compact
	{` 1`, false},
	{`1 `, false},
	{``, false},
	{`{`, false},
	{`{"a"}`, false},
	{`{"a":}`, false},
	{`{"a":1,}`, false},
	{`[1,]`, false},
	{`[1 2]`, false},
	{`{1:2}`, false},
	{`01`, false},
	{`1.`, false},
	{`.5`, false},
	{`1e`, false},
	{`-`, false},
	{`tru`, false},
	{`nul`, false},
	{`"\x"`, false},
	{`"\u12"`, false},
	{"\"a\tb\"", false},
	{`"abc`, false},
	{`1}`, false},
	{`[1]]`, false},
	{`{"a":1}}`, false},
	{`"a""b"`, false},
	{strings.Repeat("[", 10000) + strings.Repeat("]", 10000), true},
	{strings.Repeat("[", 10001) + strings.Repeat("]", 10001), false},
}

func TestVerbatim(t *testing.T) {
	for _, c := range cases {
		name := c.in
		if len(name) > 40 {
			name = name[:40]
		}
		if got := Verbatim([]byte(c.in)); got != c.want {
			t.Errorf("Verbatim(%q) = %v, want %v", name, got, c.want)
		}
		if got := marshalsUnchanged([]byte(c.in)); got != c.want {
			t.Errorf("encoding/json on %q: unchanged = %v; the case is wrong", name, got)
		}
	}
}

// FuzzVerbatim holds Verbatim to encoding/json: true exactly when
// json.Marshal writes the bytes as they are.
func FuzzVerbatim(f *testing.F) {
	for _, c := range cases {
		if len(c.in) < 1000 {
			f.Add([]byte(c.in))
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := Verbatim(b), marshalsUnchanged(b); got != want {
			t.Fatalf("Verbatim(%q) = %v, encoding/json unchanged = %v", b, got, want)
		}
	})
}

var line = []byte(`{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello there, this is token 7 of 3"}},"session_id":"7d5a3c9e-6a3b-4a5e-9f0e-2b8f5a1c9d10","parent_tool_use_id":null,"uuid":"4b0d8a4e-5c8e-4f0e-8a3b-2f1e9c7d0003"}`)

// BenchmarkVerbatim against BenchmarkValid (encoding/json's check alone)
// and BenchmarkMarshalRaw (what a record's raw field costs json.Marshal):
//
//	go test ./internal/rawjson -run '^$' -bench . -benchmem
func BenchmarkVerbatim(b *testing.B) {
	b.SetBytes(int64(len(line)))
	for b.Loop() {
		if !Verbatim(line) {
			b.Fatal("not verbatim")
		}
	}
}

func BenchmarkValid(b *testing.B) {
	b.SetBytes(int64(len(line)))
	for b.Loop() {
		if !json.Valid(line) {
			b.Fatal("not valid")
		}
	}
}

func BenchmarkMarshalRaw(b *testing.B) {
	b.SetBytes(int64(len(line)))
	for b.Loop() {
		if _, err := json.Marshal(json.RawMessage(line)); err != nil {
			b.Fatal(err)
		}
	}
}
