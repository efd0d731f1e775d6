package cli

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/host"
)

var update = flag.Bool("update", false, "rewrite internal/cli/testdata golden files")

// golden compares got with testdata/render/name, or rewrites it with
// -update. Coloured output is kept as written, escape codes and all.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", "render", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (record it: go test ./internal/cli -run %s -update)", err, t.Name())
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s changed (-want +got); if intended, run go test ./internal/cli -run %s -update and review the diff:\n%s", name, t.Name(), diff)
	}
}

// approvalScreen renders the approval prompt for a tool call, plain or
// coloured, reading files from testdata/render.
func approvalScreen(t *testing.T, color bool, tool string, input any) string {
	t.Helper()
	raw, err := json.Marshal(input)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	r := newRenderer(&out, color, color, thinkingCollapsed, nil)
	r.showApproval(&asking{a: &host.Approval{Request: &claude.ToolPermissionRequest{ToolName: tool, Input: raw}}})
	return out.String()
}

const greetFile = "testdata/render/greet.go"

// An Edit of a file that is there: a unified diff of the file, with its
// own line numbers, three lines of context and a hunk header; red and
// green on a terminal, plain text (no escape codes) elsewhere.
func TestRenderEditDiff(t *testing.T) {
	edit := map[string]any{
		"file_path":  greetFile,
		"old_string": "func greet(name string) string {\n\treturn \"hello, \" + name\n}",
		"new_string": "func greet(name string) string {\n\tif name == \"\" {\n\t\tname = \"world\"\n\t}\n\treturn \"hello, \" + name + \"!\"\n}",
	}
	plain := approvalScreen(t, false, "Edit", edit)
	if strings.Contains(plain, "\x1b[") {
		t.Errorf("escape codes off a terminal:\n%q", plain)
	}
	golden(t, "edit-plain.golden", plain)
	golden(t, "edit-color.golden", approvalScreen(t, true, "Edit", edit))

	// Not on this machine: the edit's own text, numbered from 1, and said so.
	edit["file_path"] = "/nonexistent/greet.go"
	golden(t, "edit-unread-plain.golden", approvalScreen(t, false, "Edit", edit))
}

// A Write shows its content as added lines, numbered.
func TestRenderWriteDiff(t *testing.T) {
	write := map[string]any{"file_path": "/tmp/project/notes.md", "content": "# Notes\n\n- first\n- second\n"}
	golden(t, "write-plain.golden", approvalScreen(t, false, "Write", write))
	golden(t, "write-color.golden", approvalScreen(t, true, "Write", write))
}

// A MultiEdit of a file that is there: one diff of all its edits.
func TestRenderMultiEditDiff(t *testing.T) {
	in := map[string]any{"file_path": greetFile, "edits": []any{
		map[string]any{"old_string": "package greet", "new_string": "// Package greet says hello.\npackage greet"},
		map[string]any{"old_string": "\"hello, \"", "new_string": "\"hi, \""},
	}}
	golden(t, "multiedit-plain.golden", approvalScreen(t, false, "MultiEdit", in))
}

// mdReply is a reply with Markdown: a paragraph, a fenced Go block, a
// list and a heading.
const mdReply = "Here is the **fix**, with `greet` changed:\n\n```go\nfunc greet(name string) string {\n\t// default the name\n\treturn \"hello, \" + name\n}\n```\n\n- tests pass\n- no new imports\n\n## Next\n\nRun `go test ./...`."

// streamText feeds text to r as the CLI streams it: a text block whose
// deltas are cut every n bytes.
func streamText(t *testing.T, r *renderer, text string, n int) {
	t.Helper()
	lines := []string{
		`{"type":"stream_event","event":{"type":"message_start","message":{"id":"msg_md","content":[]}}}`,
		`{"type":"stream_event","event":{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}}`,
	}
	for i := 0; i < len(text); i += n {
		chunk, _ := json.Marshal(text[i:min(i+n, len(text))])
		lines = append(lines, `{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":`+string(chunk)+`}}}`)
	}
	full, _ := json.Marshal(text)
	lines = append(lines,
		`{"type":"stream_event","event":{"type":"content_block_stop","index":0}}`,
		`{"type":"assistant","message":{"id":"msg_md","content":[{"type":"text","text":`+string(full)+`}]}}`,
	)
	feed(t, r, lines...)
}

// Markdown off a terminal is the text as the model wrote it; on a
// terminal it is rendered, the Go block highlighted, whatever the deltas'
// cuts.
func TestRenderMarkdown(t *testing.T) {
	var plain bytes.Buffer
	streamText(t, newRenderer(&plain, false, false, thinkingCollapsed, nil), mdReply, 7)
	if plain.String() != mdReply+"\n" {
		t.Errorf("plain text changed:\n%q\nwant\n%q", plain.String(), mdReply+"\n")
	}
	golden(t, "markdown-plain.golden", plain.String())

	render := func(n int) string {
		var out bytes.Buffer
		r := newRenderer(&out, true, true, thinkingCollapsed, nil)
		r.width = func() int { return 72 }
		streamText(t, r, mdReply, n)
		return screen(out.String())
	}
	tty := render(7)
	golden(t, "markdown-tty.golden", tty)
	for _, want := range []string{"\x1b[", "func", "• tests pass"} {
		if !strings.Contains(tty, want) {
			t.Errorf("terminal rendering lacks %q:\n%s", want, tty)
		}
	}
	if strings.Contains(tty, "```") || strings.Contains(tty, "**fix**") {
		t.Errorf("Markdown markup left on the terminal:\n%s", tty)
	}
	// The block being written shows live, as written, before it is
	// complete (then its rendering takes its place).
	var live bytes.Buffer
	r := newRenderer(&live, true, true, thinkingCollapsed, nil)
	feed(t, r,
		`{"type":"stream_event","event":{"type":"message_start","message":{"id":"msg_live","content":[]}}}`,
		`{"type":"stream_event","event":{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}}`,
		`{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Still **writ"}}}`,
	)
	if !strings.Contains(screen(live.String()), "Still **writ") {
		t.Errorf("the text being written is not shown live: %q", live.String())
	}
	feed(t, r, `{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"ing**."}}}`,
		`{"type":"stream_event","event":{"type":"content_block_stop","index":0}}`)
	if got := screen(live.String()); got != "Still \x1b[1mwriting\x1b[0m.\n" {
		t.Errorf("the live text was not replaced by its rendering: %q", got)
	}
	for _, n := range []int{1, 3, 1000} {
		if got := render(n); got != tty {
			t.Errorf("deltas of %d bytes render differently:\n%s", n, cmp.Diff(tty, got))
		}
	}
}

// cursorRe matches the cursor movements and erasures the renderer
// writes: up n rows, erase to the end of the screen, erase the line.
var cursorRe = regexp.MustCompile(`\x1b\[(\d*)A|\x1b\[J|\x1b\[2K|\r`)

// screen is what a terminal shows after out, for output whose lines do
// not wrap: text (style codes kept) by rows, with the renderer's cursor
// moves and erasures applied.
func screen(out string) string {
	rows := []string{""}
	row := 0
	text := func(s string) {
		for i, part := range strings.Split(s, "\n") {
			if i > 0 {
				row++
				if row == len(rows) {
					rows = append(rows, "")
				}
			}
			rows[row] += part
		}
	}
	for out != "" {
		loc := cursorRe.FindStringSubmatchIndex(out)
		if loc == nil {
			text(out)
			break
		}
		text(out[:loc[0]])
		switch m := out[loc[0]:loc[1]]; {
		case m == "\r":
			// Only ever before an erasure or a move: the column is not kept.
		case m == "\x1b[J":
			rows = rows[:row+1]
			rows[row] = ""
		case m == "\x1b[2K":
			rows[row] = ""
		default:
			n, err := strconv.Atoi(out[loc[2]:loc[3]])
			if err != nil {
				n = 1
			}
			row = max(row-n, 0)
		}
		out = out[loc[1]:]
	}
	return strings.Join(rows, "\n")
}
