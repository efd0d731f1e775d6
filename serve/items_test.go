package serve

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestItemsGolden derives the items of recorded CLI turns, line by line,
// and compares them with testdata/items_*.golden (rewrite with -update):
// text growing from deltas, a Bash call whose input streams as partial
// JSON (completed into a valid value at every step), its result, a
// thinking block cut off by an interrupt, an API retry, the turn's end.
func TestItemsGolden(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("testdata", "items_*.jsonl"))
	if len(files) == 0 {
		t.Fatal("no testdata/items_*.jsonl")
	}
	for _, in := range files {
		t.Run(filepath.Base(in), func(t *testing.T) {
			data, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			z := NewItemizer()
			var log bytes.Buffer
			sc := bufio.NewScanner(bytes.NewReader(data))
			sc.Buffer(nil, 1<<20)
			for n := 1; sc.Scan(); n++ {
				line := append([]byte(nil), sc.Bytes()...)
				var env struct {
					Type  string `json:"type"`
					Event struct {
						Type string `json:"type"`
					} `json:"event"`
				}
				json.Unmarshal(line, &env)
				what := env.Type
				if env.Event.Type != "" {
					what += " " + env.Event.Type
				}
				fmt.Fprintf(&log, "# %d %s\n", n, what)
				for _, it := range z.Add(line) {
					if it.Kind == ItemToolUse && !json.Valid(it.Input) {
						t.Errorf("line %d: tool input %s is not valid JSON", n, it.Input)
					}
					b, _ := json.Marshal(it)
					fmt.Fprintf(&log, "%s\n", b)
				}
			}
			got := log.String()
			golden := strings.TrimSuffix(in, ".jsonl") + ".golden"
			if updating() {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (record it: go test ./serve -run TestItemsGolden -update)", err)
			}
			if got != string(want) {
				t.Errorf("items changed; if intended, run go test ./serve -run TestItemsGolden -update and review the diff.\ngot:\n%s", got)
			}
		})
	}
}

// updating reports whether -update was given (the flag is serve_test's,
// in the same test binary).
func updating() bool {
	f := flag.Lookup("update")
	return f != nil && f.Value.String() == "true"
}
