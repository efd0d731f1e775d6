package serve

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadHistory: the user and assistant entries of a session file,
// reshaped as stream-json lines; the CLI's own (isMeta), subagent
// (sidechain) and bookkeeping lines and a torn line left out; bounded by
// count and bytes, the oldest dropped and counted.
func TestReadHistory(t *testing.T) {
	lines := []string{
		`{"type":"summary","summary":"s","leafUuid":"x"}`,
		`{"type":"user","uuid":"u0","isMeta":true,"message":{"role":"user","content":"<local-command-caveat>"}}`,
		`{"type":"user","uuid":"u1","message":{"role":"user","content":"first prompt"}}`,
		`{"type":"assistant","uuid":"a1","message":{"id":"m1","role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}}]}}`,
		`{"type":"user","uuid":"u2","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"a.go"}]},"toolUseResult":{"stdout":"a.go"}}`,
		`{"type":"assistant","uuid":"s1","isSidechain":true,"message":{"id":"m9","role":"assistant","content":[{"type":"text","text":"subagent"}]}}`,
		`{"torn`,
		`{"type":"assistant","uuid":"a2","message":{"id":"m2","role":"assistant","content":[{"type":"text","text":"done"}]}}`,
	}
	path := filepath.Join(t.TempDir(), "s.jsonl")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	h := readHistory(path, "sid", 100, 1<<20)
	if h == nil || h.Source != "sid" || h.Dropped != 0 {
		t.Fatalf("history %+v", h)
	}
	var got []string
	for _, raw := range h.Messages {
		var m struct {
			Type, UUID    string
			ToolUseResult json.RawMessage `json:"tool_use_result"`
		}
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprintf("%s/%s/%t", m.Type, m.UUID, m.ToolUseResult != nil))
	}
	want := "user/u1/false assistant/a1/false user/u2/true assistant/a2/false"
	if strings.Join(got, " ") != want {
		t.Errorf("history %v, want %s", got, want)
	}
	// By count: the last two.
	if h := readHistory(path, "sid", 2, 1<<20); h == nil || len(h.Messages) != 2 || h.Dropped != 2 || !strings.Contains(string(h.Messages[1]), `"a2"`) {
		t.Errorf("bounded by count: %+v", h)
	}
	// By bytes: what fits of the newest.
	last := len(h.Messages[3])
	if h := readHistory(path, "sid", 100, last); h == nil || len(h.Messages) != 1 || h.Dropped != 3 {
		t.Errorf("bounded by bytes: %+v", h)
	}
	// No file, no history.
	if h := readHistory(filepath.Join(t.TempDir(), "none.jsonl"), "sid", 100, 1<<20); h != nil {
		t.Errorf("history of no file: %+v", h)
	}
}
