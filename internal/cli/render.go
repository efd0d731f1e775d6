package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/host"
)

// thinkingMode says how thinking is shown.
type thinkingMode string

const (
	thinkingFull      thinkingMode = "full"      // every word, dimmed
	thinkingCollapsed thinkingMode = "collapsed" // one dimmed line saying how much
	thinkingHidden    thinkingMode = "hidden"
)

// ANSI styles, written only on a terminal.
const (
	styleDim    = "\x1b[2m"
	styleBold   = "\x1b[1m"
	styleRed    = "\x1b[31m"
	styleGreen  = "\x1b[32m"
	styleYellow = "\x1b[33m"
	styleCyan   = "\x1b[36m"
	styleReset  = "\x1b[0m"
	clearLine   = "\r\x1b[2K"
)

// maxResultLines and maxInputChars bound what a tool's result and a
// finished tool call's input take on screen.
const (
	maxResultLines = 6
	maxLineChars   = 160
	maxInputChars  = 240
)

// A renderer turns a host session's messages and liveness into what a
// person reads: text as it streams, thinking, tool calls with their input
// as it is typed and their results, subagents indented under the tool call
// that started them, and a status line. It is fed from one goroutine (the
// run loop) and is not safe for concurrent use.
//
// On a terminal (tty) it uses colours and keeps the status line as the
// screen's last line, redrawn in place; elsewhere it writes plain text and
// prints the state as a line of its own when it changes.
type renderer struct {
	w        io.Writer
	tty      bool
	color    bool
	thinking thinkingMode

	col         int  // characters since the last newline written (content only)
	statusShown bool // the status line is on screen (tty)
	lastState   string
	pendingLine string // a plain-mode state line waiting for the content line to end

	// Streaming the main thread: the block being written and, per API
	// message id, how many blocks were streamed and how many of their
	// complete assistant messages have been seen since.
	open      string // "text", "thinking", "tool", "" for none
	openMsg   string
	thinkLen  int
	streamed  map[string]int
	completed map[string]int

	tools map[string]string // tool_use id → tool name, for results and subagents

	width func() int // the terminal's width; nil when unknown

	// md renders the assistant's Markdown (nil: the text is written as
	// it comes); mdPending is the streamed text of blocks not yet
	// complete, mdBlocks how many blocks of the open text were written.
	md        *markdown
	mdPending strings.Builder
	mdBlocks  int
	mdLive    strings.Builder // the raw text of the pending block, as on the screen
	mdKept    bool            // the live text grew too tall to replace
	mdSep     bool            // a blank line was written before the live text

	readFile func(string) ([]byte, error) // reads a file an Edit changes, for its diff

	live      host.Liveness
	turnStart time.Time
	cost      func() host.Cost
}

func newRenderer(w io.Writer, tty, color bool, thinking thinkingMode, cost func() host.Cost) *renderer {
	r := &renderer{w: w, tty: tty, color: color, thinking: thinking, cost: cost,
		streamed: map[string]int{}, completed: map[string]int{}, tools: map[string]string{},
		readFile: readSmallFile}
	if color {
		// Markdown is rendered only where colours are: on a terminal
		// without NO_COLOR. Elsewhere it stays as written.
		r.md = &markdown{}
	}
	return r
}

// termWidth is the terminal's width, or 80 when it is not known.
func (r *renderer) termWidth() int {
	if r.width != nil {
		if w := r.width(); w > 0 {
			return w
		}
	}
	return 80
}

// textDelta takes streamed text of the main thread. Without Markdown
// rendering it is written as it comes. With it, the block being written
// is shown live as raw text and, once complete, replaced in place by its
// rendering (see markdown.go).
func (r *renderer) textDelta(s string) {
	if r.md == nil {
		r.write(s)
		return
	}
	r.mdPending.WriteString(s)
	done, rest := completeBlocks(r.mdPending.String())
	if done == "" {
		r.writeLive(s)
		return
	}
	r.mdPending.Reset()
	r.mdPending.WriteString(rest)
	if r.eraseLive() {
		r.writeMarkdown(done)
	}
	r.writeLive(rest)
}

// writeLive writes raw text of the block still being written, keeping
// what it put on the screen so eraseLive can take it back.
func (r *renderer) writeLive(s string) {
	if s == "" {
		return
	}
	if r.mdLive.Len() == 0 && r.mdBlocks > 0 && !r.mdKept {
		r.newline()
		r.write("\n") // the blank line between blocks, as glamour puts within one
		r.mdSep = true
	}
	s = strings.ReplaceAll(s, "\t", "    ") // a known width, to count the rows
	r.mdLive.WriteString(s)
	r.write(s)
	if screenRows(r.mdLive.String(), r.termWidth()) > maxLiveRows {
		r.mdKept = true // too tall to take back: it stays as written
	}
}

// eraseLive takes the live raw text off the screen, so its rendering can
// take its place. It returns false when the text is to stay: it grew
// taller than can be taken back, and the rendering is skipped.
func (r *renderer) eraseLive() bool {
	live := r.mdLive.String()
	r.mdLive.Reset()
	sep := r.mdSep
	r.mdSep = false
	if r.mdKept {
		r.mdKept = false
		r.mdBlocks++
		r.newline()
		return false
	}
	if live == "" {
		if sep {
			r.mdBlocks++ // the blank line written stays; count the block so none is added
		}
		return true
	}
	r.hideStatus()
	up := screenRows(live, r.termWidth()) - 1
	if sep {
		up++ // the blank line before it goes too: writeMarkdown puts it back
	}
	seq := "\r"
	if up > 0 {
		seq += fmt.Sprintf("\x1b[%dA", up)
	}
	io.WriteString(r.w, seq+"\x1b[J")
	r.col = 0
	return true
}

// flushText renders what is left of the streamed text.
func (r *renderer) flushText() {
	if r.md == nil {
		return
	}
	s := r.mdPending.String()
	r.mdPending.Reset()
	if r.eraseLive() && strings.TrimSpace(s) != "" {
		r.writeMarkdown(s)
	}
	r.mdBlocks = 0
}

func (r *renderer) writeMarkdown(src string) {
	out := r.md.render(src, r.termWidth())
	if out == "" {
		return
	}
	r.newline()
	if r.mdBlocks > 0 {
		r.write("\n") // a blank line between blocks, as glamour puts within one
	}
	r.mdBlocks++
	r.write(out)
}

func (r *renderer) style(s, text string) string {
	if !r.color || text == "" || s == "" {
		return text
	}
	return s + text + styleReset
}

// write writes content, taking the status line off the screen first.
func (r *renderer) write(s string) {
	if s == "" {
		return
	}
	r.hideStatus()
	io.WriteString(r.w, s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		r.col = len(s) - i - 1
	} else {
		r.col += len(s)
	}
}

// newline ends the content line being written, if any.
func (r *renderer) newline() {
	if r.col > 0 {
		r.write("\n")
	}
}

// println writes whole lines, each with prefix.
func (r *renderer) println(prefix, style, text string) {
	r.closeBlock()
	r.newline()
	for _, l := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		r.write(prefix + r.style(style, l) + "\n")
	}
}

// note is a line from Tether itself (an answer taken, a hook that ran).
func (r *renderer) note(text string) { r.println("", styleCyan, text) }

func (r *renderer) hideStatus() {
	if r.statusShown {
		io.WriteString(r.w, clearLine)
		r.statusShown = false
	}
}

// setState takes a liveness transition.
func (r *renderer) setState(l host.Liveness) {
	if l.State.Busy() && !r.live.State.Busy() {
		r.turnStart = time.Now()
	}
	r.live = l
	if !r.tty {
		s := l.String()
		if s != r.lastState {
			r.lastState = s
			r.pendingLine = "[" + s + "]"
		}
	}
}

// statusText is the status line: the liveness state, the turn's elapsed
// time, tokens and cost.
func (r *renderer) statusText() string {
	l := r.live
	var b strings.Builder
	b.WriteString("● " + l.String())
	if l.State.Busy() && !r.turnStart.IsZero() {
		fmt.Fprintf(&b, " · %.1fs", time.Since(r.turnStart).Seconds())
	}
	if r.cost != nil {
		c := r.cost()
		t := c.Tokens.Input + c.Tokens.Output + c.Tokens.CacheCreation + c.Tokens.CacheRead
		fmt.Fprintf(&b, " · %s tokens · $%.4f", countString(t), c.USD)
	}
	if l.State.Busy() {
		b.WriteString(" · Ctrl-C to interrupt")
	}
	return b.String()
}

// drawStatus puts the status line back (tty) or prints a pending state
// change (plain), when the content is at the start of a line.
func (r *renderer) drawStatus() {
	if r.col != 0 {
		return
	}
	if !r.tty {
		if r.pendingLine != "" {
			io.WriteString(r.w, r.pendingLine+"\n")
			r.pendingLine = ""
		}
		return
	}
	if r.live.State == host.StateStarting && r.live.Seq == 0 {
		return
	}
	status := r.statusText()
	if r.width != nil {
		if w := r.width(); w > 1 {
			status = truncate(status, w-2) // one line, or the clear would leave the rest
		}
	}
	io.WriteString(r.w, clearLine+r.style(styleDim, status))
	r.statusShown = true
}

// message renders one message of the session.
func (r *renderer) message(m claude.Message) {
	switch m := m.(type) {
	case *claude.StreamEvent:
		if m.ParentToolUseID == "" {
			r.stream(m)
		}
	case *claude.AssistantMessage:
		r.assistant(m)
	case *claude.UserMessage:
		r.user(m)
	case *claude.ResultMessage:
		r.result(m)
	case *claude.APIRetryMessage:
		r.println("", styleYellow, fmt.Sprintf("API call failed, retrying (%s)", compact(m.RawJSON(), 120)))
	case *claude.InformationalMessage:
		// What the CLI would tell its own terminal: that auto mode can
		// check nothing in this session, a mode that changed.
		style := styleCyan
		if m.Level == "warning" {
			style = styleYellow
		}
		if m.Content != "" {
			r.println("", style, m.Content)
		}
	}
}

func (r *renderer) stream(e *claude.StreamEvent) {
	switch ev := e.Event.(type) {
	case *claude.MessageStartEvent:
		r.openMsg = ev.Message.ID
	case *claude.ContentBlockStartEvent:
		r.closeBlock()
		r.streamed[r.openMsg]++
		switch b := ev.ContentBlock.(type) {
		case *claude.TextBlock:
			r.newline()
			r.open, r.mdBlocks = "text", 0
			r.textDelta(b.Text)
		case *claude.ThinkingBlock:
			r.newline()
			r.open, r.thinkLen = "thinking", 0
			if r.thinking == thinkingFull {
				r.write(r.style(styleDim, "✻ "))
			}
			r.thinkDelta(b.Thinking)
		case *claude.ToolUseBlock:
			r.newline()
			r.open = "tool"
			r.tools[b.ID] = b.Name
			r.write(r.style(styleBold, "⏺ "+b.Name) + " ")
		default:
			r.open = "other"
		}
	case *claude.ContentBlockDeltaEvent:
		switch d := ev.Delta.(type) {
		case *claude.TextDelta:
			if r.open == "text" {
				r.textDelta(d.Text)
			}
		case *claude.ThinkingDelta:
			if r.open == "thinking" {
				r.thinkDelta(d.Thinking)
			}
		case *claude.InputJSONDelta:
			if r.open == "tool" {
				r.write(r.style(styleDim, d.PartialJSON))
			}
		}
	case *claude.ContentBlockStopEvent:
		r.closeBlock()
	}
}

func (r *renderer) thinkDelta(s string) {
	r.thinkLen += len(s)
	if r.thinking == thinkingFull {
		r.write(r.style(styleDim, s))
	}
}

// closeBlock ends the block being streamed.
func (r *renderer) closeBlock() {
	switch r.open {
	case "":
		return
	case "text":
		r.flushText()
	case "thinking":
		if r.thinking == thinkingCollapsed {
			r.newline()
			r.write(r.style(styleDim, fmt.Sprintf("✻ thought for %d characters (--thinking full shows them)", r.thinkLen)) + "\n")
		}
	}
	r.open = ""
	r.newline()
}

func (r *renderer) assistant(m *claude.AssistantMessage) {
	prefix := ""
	if m.ParentToolUseID != "" {
		prefix = r.style(styleDim, "    │ ")
	} else {
		id := m.Message.ID
		if r.completed[id] < r.streamed[id] {
			// Streamed already: only learn its tool names.
			r.completed[id]++
			for _, tu := range m.ToolUses() {
				r.tools[tu.ID] = tu.Name
			}
			return
		}
	}
	if m.Error != "" {
		r.println(prefix, styleRed, "API error ("+m.Error+"): "+m.Text())
		return
	}
	for _, b := range m.Message.Content {
		switch b := b.(type) {
		case *claude.TextBlock:
			text := b.Text
			if r.md != nil {
				text = r.md.render(text, r.termWidth()-6) // room for a subagent's prefix
			}
			r.println(prefix, "", text)
		case *claude.ThinkingBlock:
			switch r.thinking {
			case thinkingFull:
				r.println(prefix, styleDim, "✻ "+b.Thinking)
			case thinkingCollapsed:
				r.println(prefix, styleDim, fmt.Sprintf("✻ thought for %d characters", len(b.Thinking)))
			}
		case *claude.ToolUseBlock:
			r.tools[b.ID] = b.Name
			r.println(prefix, "", r.style(styleBold, "⏺ "+b.Name)+" "+r.style(styleDim, compact(b.Input, maxInputChars)))
		}
	}
}

func (r *renderer) user(m *claude.UserMessage) {
	if m.IsReplay {
		return
	}
	prefix := "  "
	if m.ParentToolUseID != "" {
		prefix = r.style(styleDim, "    │ ") + "  "
	}
	results := m.ToolResults()
	if len(results) == 0 {
		if m.IsSynthetic || m.ParentToolUseID != "" {
			if t := m.Text(); t != "" && m.ParentToolUseID == "" {
				r.println(prefix, styleDim, truncate(t, maxLineChars))
			}
		}
		return
	}
	for _, tr := range results {
		text := tr.Text()
		style := ""
		if tr.IsError {
			style = styleRed
		}
		lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
		if text == "" {
			lines = []string{"(no output)"}
		}
		more := 0
		if len(lines) > maxResultLines {
			more = len(lines) - maxResultLines
			lines = lines[:maxResultLines]
		}
		for i, l := range lines {
			lead := "  "
			if i == 0 {
				lead = "⎿ "
			}
			r.println(prefix, style, lead+truncate(l, maxLineChars))
		}
		if more > 0 {
			r.println(prefix, styleDim, fmt.Sprintf("  … %d more lines", more))
		}
	}
}

func (r *renderer) result(m *claude.ResultMessage) {
	r.closeBlock()
	r.newline()
	c := ""
	if r.cost != nil {
		cost := r.cost()
		c = fmt.Sprintf(" · session $%.4f, %s tokens", cost.USD, countString(cost.Tokens.Input+cost.Tokens.Output+cost.Tokens.CacheCreation+cost.Tokens.CacheRead))
	}
	err := m.Err()
	var re *claude.ResultError
	switch {
	case err == nil:
		r.println("", styleGreen, fmt.Sprintf("✓ done in %.1fs, %d steps, $%.4f%s", float64(m.DurationMS)/1000, m.NumTurns, m.TotalCostUSD, c))
	case asResultError(err, &re) && re.Interrupted():
		r.println("", styleYellow, "⏹ interrupted"+c)
	default:
		r.println("", styleRed, "✗ "+err.Error()+c)
	}
}

// costSummary is the session's cost, by model.
func costSummary(c host.Cost) string {
	var b strings.Builder
	fmt.Fprintf(&b, "cost: $%.4f over %d turn(s); tokens: %s in, %s out, %s cache write, %s cache read",
		c.USD, c.Turns, countString(c.Tokens.Input), countString(c.Tokens.Output), countString(c.Tokens.CacheCreation), countString(c.Tokens.CacheRead))
	for model, mc := range c.Models {
		fmt.Fprintf(&b, "\n  %s: $%.4f, %s in, %s out", model, mc.USD, countString(mc.Tokens.Input), countString(mc.Tokens.Output))
	}
	return b.String()
}

// countString writes n with thousands separators.
func countString(n int64) string {
	s := fmt.Sprint(n)
	if n < 0 {
		return s
	}
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// compact returns JSON on one line, cut to max characters.
func compact(raw json.RawMessage, max int) string {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return truncate(string(raw), max)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return truncate(string(raw), max)
	}
	return truncate(strings.TrimSpace(buf.String()), max)
}

// truncate cuts s to max runes, saying so.
func truncate(s string, max int) string {
	rs := []rune(s)
	if len(rs) <= max {
		return s
	}
	return string(rs[:max]) + "…"
}
