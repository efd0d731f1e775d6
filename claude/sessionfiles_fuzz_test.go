package claude

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

// FuzzDecodeSessionEntry: a session file is the CLI's, on disk, and may be
// cut short or hand-edited, so any line decodes without a panic, fails
// only when it is not a JSON object (as DecodeSessionEntry promises), and
// an entry keeps the line as it came.
func FuzzDecodeSessionEntry(f *testing.F) {
	files, _ := filepath.Glob("testdata/sessions/projects/*/*.jsonl")
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			f.Add(bytes.Clone(sc.Bytes()))
		}
	}
	for _, s := range []string{
		`{"type":"user"}`, `{"type":"user","message":{"content":7}}`, `{"type":"assistant","message":[]}`,
		`{"type":"attachment","attachment":"x"}`, `{"type":"system","timestamp":1.5}`, `{"type":"user","type":"tag"}`,
		`{"type":7}`, `{}`, `[]`, `null`, `{"type":"user"`, `{"type":"us\u0065r","uuid":"u"}`, "{\"type\":\"tag\",\"tag\":\"\xff\"}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		e, err := DecodeSessionEntry(line)
		object := jsontext.Value(line).IsValid(decodeOptions) && jsontext.Value(line).Kind() == '{'
		if err != nil {
			if object {
				t.Fatalf("a JSON object failed: %v", err)
			}
			return
		}
		if e == nil {
			t.Fatal("no entry and no error")
		}
		if !bytes.Equal(e.RawJSON(), line) {
			t.Fatalf("the entry's line is %q", e.RawJSON())
		}
	})
}
