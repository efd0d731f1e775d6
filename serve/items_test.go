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

	"github.com/tetherhq/tether/host"
	"golang.org/x/tools/txtar"
)

// TestItemsGolden derives the items of recorded CLI turns, line by line,
// and compares them with testdata/items_*.golden (rewrite with -update):
// text growing from deltas, a Bash call whose input streams as partial
// JSON (completed into a valid value at every step), its result, a
// thinking block cut off by an interrupt, an API retry, the turn's end;
// and prompts queued during a turn, echoed alone and then merged, each
// given once (items_queued); the CLI's warning that auto mode cannot
// check anything and a turn that ends failed because of it, with the
// CLI's words as its reason, not its final text (items_auto_unchecked);
// the CLI's guess at the next prompt after a result, and a blank guess
// that gives nothing (items_suggestion).
//
// The recorded sessions of claude/testdata/transcripts (real CLI output)
// are derived too, into testdata/items_recorded_<name>.golden.
func TestItemsGolden(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("testdata", "items_*.jsonl"))
	if len(files) == 0 {
		t.Fatal("no testdata/items_*.jsonl")
	}
	inputs := map[string][]byte{}
	for _, in := range files {
		data, err := os.ReadFile(in)
		if err != nil {
			t.Fatal(err)
		}
		inputs[strings.TrimSuffix(in, ".jsonl")+".golden"] = data
	}
	for _, name := range []string{"basic_turn_partial", "thinking", "bash_allowed", "subagent", "tool_inputs_bash_and_ask"} {
		ar, err := txtar.ParseFile(filepath.Join("..", "claude", "testdata", "transcripts", name+".txtar"))
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		for _, f := range ar.Files {
			if f.Name != "stdio" {
				continue
			}
			for l := range strings.Lines(string(f.Data)) {
				if rest, ok := strings.CutPrefix(l, "< "); ok && !strings.HasPrefix(rest, `{"type":"control_`) {
					b.WriteString(rest)
				}
			}
		}
		inputs[filepath.Join("testdata", "items_recorded_"+name+".golden")] = b.Bytes()
	}
	for golden, data := range inputs {
		t.Run(filepath.Base(golden), func(t *testing.T) {
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

// FuzzItemizer feeds arbitrary lines, after a recorded turn's first
// ones, to an Itemizer: it never panics, and every tool input it gives
// is valid JSON.
func FuzzItemizer(f *testing.F) {
	data, err := os.ReadFile(filepath.Join("testdata", "items_turn.jsonl"))
	if err != nil {
		f.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSpace(data), []byte("\n"))
	for _, l := range lines {
		f.Add(l)
	}
	f.Add([]byte(`{"type":"stream_event","event":{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"a\":[1,{\"b\":\"\\u12"}}}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		z := NewItemizer()
		for _, l := range lines[:10] {
			z.Add(l)
		}
		for _, it := range z.Add(line) {
			if it.Kind == ItemToolUse && !json.Valid(it.Input) {
				t.Fatalf("invalid tool input %s", it.Input)
			}
		}
	})
}

// TestSnapshotItemsAnyPoint: a client that takes a snapshot with items
// after any line, and then follows the frames of the Itemizer the
// snapshot leaves (as a subscription does), has at every step the items
// a client that followed from the first line has: a block streaming
// when the snapshot was taken comes whole, not as its last growth.
func TestSnapshotItemsAnyPoint(t *testing.T) {
	inputs := map[string][]json.RawMessage{"long": longStream(20)}
	for _, name := range []string{"items_turn", "items_queued"} {
		data, err := os.ReadFile(filepath.Join("testdata", name+".jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		for l := range bytes.Lines(bytes.TrimSpace(data)) {
			inputs[name] = append(inputs[name], json.RawMessage(bytes.TrimSpace(l)))
		}
	}
	for name, lines := range inputs {
		t.Run(name, func(t *testing.T) {
			// What a client that followed from the first line has after
			// each line.
			from0 := make([]string, len(lines)+1)
			var c foldedItems
			z := NewItemizer()
			from0[0] = c.String()
			for i, l := range lines {
				c.apply(z.Add(l))
				from0[i+1] = c.String()
			}
			for k := range len(lines) + 1 {
				z := NewItemizer()
				sn := withItems(&snapshotJSON{Snapshot: &host.Snapshot{Transcript: lines[:k]}}, z)
				var c foldedItems
				c.apply(sn.Items)
				if got := c.String(); got != from0[k] {
					t.Fatalf("snapshot after line %d:\n got %s\nwant %s", k, got, from0[k])
				}
				for i := k; i < len(lines); i++ {
					c.apply(z.Add(lines[i]))
					if got := c.String(); got != from0[i+1] {
						t.Fatalf("snapshot after line %d, then line %d:\n got %s\nwant %s", k, i+1, got, from0[i+1])
					}
				}
			}
		})
	}
}

// foldedItems is what a client keeps of items frames: each item at its
// latest version, a growth (Append) added to the text it has.
type foldedItems struct {
	order []string
	byID  map[string]Item
}

func (c *foldedItems) apply(its []Item) {
	if c.byID == nil {
		c.byID = map[string]Item{}
	}
	for _, it := range its {
		old, ok := c.byID[it.ID]
		if !ok {
			c.order = append(c.order, it.ID)
		}
		if it.Append {
			it.Text, it.Append = old.Text+it.Text, false
		}
		c.byID[it.ID] = it
	}
}

func (c *foldedItems) String() string {
	var b strings.Builder
	for _, id := range c.order {
		j, _ := json.Marshal(c.byID[id])
		b.Write(j)
		b.WriteByte('\n')
	}
	return b.String()
}

// longStream is a message streamed in n deltas: a text block of n
// pieces, then a Write call whose input (a file of n pieces) is typed in
// n deltas.
func longStream(n int) []json.RawMessage {
	var out []json.RawMessage
	add := func(format string, args ...any) { out = append(out, json.RawMessage(fmt.Sprintf(format, args...))) }
	add(`{"type":"stream_event","event":{"type":"message_start","message":{"id":"msg_long","type":"message","role":"assistant","model":"m","content":[]}},"uuid":"s0"}`)
	add(`{"type":"stream_event","event":{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}},"uuid":"s1"}`)
	for i := range n {
		add(`{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"word %05d, "}},"uuid":"t%d"}`, i, i)
	}
	add(`{"type":"stream_event","event":{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_w","name":"Write","input":{}}},"uuid":"s2"}`)
	add(`{"type":"stream_event","event":{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"file_path\":\"/a\",\"content\":\""}},"uuid":"s3"}`)
	for i := range n {
		add(`{"type":"stream_event","event":{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"line %05d\\n"}},"uuid":"w%d"}`, i, i)
	}
	return out
}

// TestItemsLinear: a long text and a long tool input being typed cost,
// in the items given, a bounded multiple of their final size, not their
// size times their deltas.
func TestItemsLinear(t *testing.T) {
	const n = 2000
	z := NewItemizer()
	var text, input int
	var last Item
	for _, l := range longStream(n) {
		for _, it := range z.Add(l) {
			text += len(it.Text)
			input += len(it.Input)
			if it.Kind == ItemToolUse {
				last = it
			}
		}
	}
	finalText, finalInput := n*len("word 00000, "), n*len(`line 00000\n`)
	if text != finalText {
		t.Errorf("text given: %d bytes for %d", text, finalText)
	}
	if input > 10*finalInput {
		t.Errorf("tool input given: %d bytes for %d", input, finalInput)
	}
	if !json.Valid(last.Input) || !bytes.Contains(last.Input, []byte(`line 01`)) {
		t.Errorf("last input given: %.200s", last.Input)
	}
}

func BenchmarkItemizerLongStream(b *testing.B) {
	lines := longStream(2000)
	b.ReportAllocs()
	for b.Loop() {
		z := NewItemizer()
		for _, l := range lines {
			z.Add(l)
		}
	}
}
