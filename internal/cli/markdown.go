package cli

import (
	"regexp"
	"strings"

	"github.com/charmbracelet/glamour"
	"github.com/mattn/go-runewidth"
	"github.com/muesli/termenv"
)

// The assistant's text on a terminal: Markdown rendered by glamour, code
// blocks highlighted. Off a terminal, with NO_COLOR, or with --json the
// text is written as the model wrote it (Markdown source, no escape
// codes).
//
// Streaming: the text arrives in small deltas, and a Markdown block
// cannot be rendered until it is complete (a fence may close, a
// paragraph may turn into a table). So the block being written is shown
// live, as raw text, and once it is complete (a paragraph at the blank
// line after it, a fenced code block at its closing fence, a heading at
// its end of line, anything left when the text block stops) the raw
// rows are erased and its rendering written in their place. Raw text
// grown taller than maxLiveRows is left as written: its first rows may
// have scrolled off the screen, where they cannot be erased.

// markdownStyle uses only the terminal's own 16 colours (and bold,
// italic, faint), so it reads on a dark background and a light one
// alike: the terminal's palette decides what "blue" is. No colour is set
// for plain text, which keeps the terminal's foreground. Code is
// highlighted by chroma through its 16-colour formatter, whose palette
// the chroma colours below are (#7f0000 is ANSI red, and so on).
const markdownStyle = `{
  "document": {"margin": 0},
  "block_quote": {"indent": 1, "indent_token": "│ ", "faint": true},
  "paragraph": {},
  "list": {"level_indent": 2},
  "heading": {"block_suffix": "\n", "bold": true, "color": "4"},
  "h1": {"prefix": "# "},
  "h2": {"prefix": "## "},
  "h3": {"prefix": "### "},
  "h4": {"prefix": "#### "},
  "h5": {"prefix": "##### "},
  "h6": {"prefix": "###### ", "bold": false},
  "text": {},
  "strikethrough": {"crossed_out": true},
  "emph": {"italic": true},
  "strong": {"bold": true},
  "hr": {"faint": true, "format": "\n────────\n"},
  "item": {"block_prefix": "• "},
  "enumeration": {"block_prefix": ". "},
  "task": {"ticked": "[✓] ", "unticked": "[ ] "},
  "link": {"color": "4", "underline": true},
  "link_text": {"bold": true},
  "image": {"color": "4", "underline": true},
  "image_text": {"format": "Image: {{.text}} →"},
  "code": {"color": "5"},
  "code_block": {
    "margin": 2,
    "chroma": {
      "comment": {"color": "#555555", "italic": true},
      "comment_preproc": {"color": "#7f007f"},
      "keyword": {"color": "#00007f", "bold": true},
      "keyword_reserved": {"color": "#00007f", "bold": true},
      "keyword_namespace": {"color": "#7f007f"},
      "keyword_type": {"color": "#007f7f"},
      "operator": {},
      "punctuation": {},
      "name_builtin": {"color": "#007f7f"},
      "name_tag": {"color": "#00007f"},
      "name_attribute": {"color": "#007f7f"},
      "name_class": {"bold": true},
      "name_decorator": {"color": "#7f007f"},
      "name_function": {"color": "#7f007f"},
      "literal_number": {"color": "#007f7f"},
      "literal_string": {"color": "#007f00"},
      "literal_string_escape": {"color": "#7f0000"},
      "generic_deleted": {"color": "#7f0000"},
      "generic_inserted": {"color": "#007f00"},
      "generic_emph": {"italic": true},
      "generic_strong": {"bold": true},
      "generic_subheading": {"faint": true}
    }
  },
  "table": {},
  "definition_description": {"block_prefix": "\n🠶 "}
}`

// maxMarkdownWidth bounds the wrap width on wide terminals: long lines
// of prose are hard to read.
const maxMarkdownWidth = 120

// A markdown renders Markdown for the terminal, one glamour renderer per
// wrap width (the terminal can be resized between blocks).
type markdown struct {
	width int
	tr    *glamour.TermRenderer
}

// render returns text rendered for a terminal width columns wide, or
// text itself if glamour fails (it should not; the text is shown either
// way).
func (m *markdown) render(text string, width int) string {
	if width <= 0 {
		width = 80
	}
	width = min(width, maxMarkdownWidth)
	if m.tr == nil || m.width != width {
		tr, err := glamour.NewTermRenderer(
			glamour.WithStylesFromJSONBytes([]byte(markdownStyle)),
			glamour.WithColorProfile(termenv.ANSI),
			glamour.WithChromaFormatter("terminal16"),
			glamour.WithWordWrap(width),
		)
		if err != nil {
			return text
		}
		m.tr, m.width = tr, width
	}
	out, err := m.tr.Render(text)
	if err != nil {
		return text
	}
	return tidyRendered(out)
}

// trailingPad matches the spaces (and style codes among them) glamour
// pads each line with to the wrap width.
var trailingPad = regexp.MustCompile(`(?:[ \t]|\x1b\[[0-9;]*m)+$`)

// tidyRendered drops glamour's blank lines around the block and the
// padding at the end of each line: a line exactly as wide as the
// terminal would wrap on some terminals, and trailing spaces are noise
// when the screen is copied.
func tidyRendered(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if m := trailingPad.FindString(l); m != "" {
			// Keep a reset among the padding, so no style runs on.
			reset := ""
			if strings.Contains(m, "\x1b[") {
				reset = styleReset
			}
			lines[i] = strings.TrimSuffix(l, m) + reset
		}
	}
	for len(lines) > 0 && sgrRe.ReplaceAllString(lines[0], "") == "" {
		lines = lines[1:]
	}
	for len(lines) > 0 && sgrRe.ReplaceAllString(lines[len(lines)-1], "") == "" {
		lines = lines[:len(lines)-1]
	}
	if len(lines) == 0 {
		return ""
	}
	return strings.Join(lines, "\n") + "\n"
}

// sgrRe matches the escape sequences glamour writes.
var sgrRe = regexp.MustCompile(`\x1b\[[0-9;]*[A-Za-z]`)

// fenceRe matches a code fence's opening or closing line, indented or
// not (a fence in a list item is indented).
var fenceRe = regexp.MustCompile("^[ \t]*(`{3,}|~{3,})")

// completeBlocks splits streamed Markdown into the part made of complete
// blocks, ready to render, and the rest, still being written. A block is
// complete at a blank line outside a code fence, at the line closing a
// fence, or at the end of a heading's line.
func completeBlocks(s string) (done, rest string) {
	cut := 0
	fence := "" // the open fence's marker, "" outside one
	pos := 0
	for {
		nl := strings.IndexByte(s[pos:], '\n')
		if nl < 0 {
			break
		}
		line := s[pos : pos+nl]
		end := pos + nl + 1
		trimmed := strings.TrimSpace(line)
		switch m := fenceRe.FindStringSubmatch(line); {
		case fence != "":
			if m != nil && m[1][0] == fence[0] && len(m[1]) >= len(fence) && strings.TrimSpace(line[len(m[0]):]) == "" {
				fence = ""
				cut = end
			}
		case m != nil:
			fence = m[1]
		case trimmed == "":
			cut = end
		case strings.HasPrefix(trimmed, "#"):
			cut = end
		}
		pos = end
	}
	return s[:cut], s[cut:]
}

// maxLiveRows bounds the rows of live raw text that are taken back to
// put the rendering in their place: 23 fit on the smallest usual
// terminal (24 rows, one for the status line), so the text to erase is
// still on the screen. A block taller than that stays as written.
const maxLiveRows = 23

// screenRows counts the terminal rows s takes from the start of a line
// to the cursor after it, on a terminal width columns wide: each line
// wraps every width columns, and a line that ends exactly at the edge
// leaves the cursor on its last row until more is written.
func screenRows(s string, width int) int {
	if width <= 0 {
		width = 80
	}
	lines := strings.Split(s, "\n")
	rows := 0
	for _, l := range lines {
		w := runewidth.StringWidth(sgrRe.ReplaceAllString(l, ""))
		rows += max(1, (w+width-1)/width)
	}
	return rows
}
