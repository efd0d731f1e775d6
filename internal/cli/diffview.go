package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	udiff "github.com/aymanbagabas/go-udiff"

	"github.com/tetherhq/tether/claude"
)

// Diffs of file edits, shown when the CLI asks to run Edit, MultiEdit or
// Write: a unified diff with three lines of context, hunk headers and
// the old and new line numbers, coloured on a terminal (red removed,
// green added, dim context, cyan hunk headers) and plain elsewhere.
//
// An Edit's input holds only the text replaced and its replacement. When
// the file can be read (it is on this machine, under maxDiffFile) and
// holds that text, the diff is of the whole file before and after, so
// the line numbers and context are the file's own; otherwise it is of
// the two texts alone, numbered from 1, and says so. A Write is shown as
// its content, every line added: the tool's input, not the file on disk.

const (
	diffContext = 3       // unchanged lines around each change
	maxDiffFile = 1 << 20 // a larger file is not read: the diff falls back to the edit's own text
	maxDiffRows = 400     // rows shown; the rest are counted in a note
)

// multiEditInput is MultiEdit's input (older CLIs have the tool; package
// claude does not declare it).
type multiEditInput struct {
	FilePath string `json:"file_path"`
	Edits    []struct {
		OldString  string `json:"old_string"`
		NewString  string `json:"new_string"`
		ReplaceAll bool   `json:"replace_all,omitempty"`
	} `json:"edits"`
}

// fileDiff is a file's change, ready to show.
type fileDiff struct {
	path     string
	header   []string        // the ---/+++ lines
	note     string          // how the lines are numbered, when not the file's own
	hunks    []*udiff.Hunk   // nil when there is no change
	hunkSets [][]*udiff.Hunk // MultiEdit without the file: one set per edit
}

// readSmallFile reads path when it is a regular file of at most
// maxDiffFile bytes.
func readSmallFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() || st.Size() > maxDiffFile {
		return nil, fmt.Errorf("%s: not a small regular file", path)
	}
	return io.ReadAll(io.LimitReader(f, maxDiffFile+1))
}

// hunksOf diffs before into after.
func hunksOf(before, after string) []*udiff.Hunk {
	u, err := udiff.ToUnifiedDiff("", "", before, udiff.Lines(before, after), diffContext)
	if err != nil {
		return nil // udiff's own edits are consistent; no diff is shown rather than a wrong one
	}
	return u.Hunks
}

// replaceIn applies one Edit to content, as the tool would: the text must
// be there, exactly once unless every occurrence is replaced.
func replaceIn(content, old, new string, all bool) (string, bool) {
	if old == "" {
		return "", false
	}
	n := strings.Count(content, old)
	if n == 0 || (n > 1 && !all) {
		return "", false
	}
	if all {
		return strings.ReplaceAll(content, old, new), true
	}
	return strings.Replace(content, old, new, 1), true
}

// toolDiff returns the diff a tool call's input makes, for Edit,
// MultiEdit and Write; ok is false for other tools or input it cannot
// read. read reads the file being edited (readSmallFile outside tests).
func toolDiff(req *claude.ToolPermissionRequest, read func(string) ([]byte, error)) (d *fileDiff, ok bool) {
	switch req.ToolName {
	case "Edit":
		in, err := claude.DecodeInput[claude.EditInput](req.Input)
		if err != nil {
			return nil, false
		}
		d := &fileDiff{path: in.FilePath, header: []string{"--- " + in.FilePath, "+++ " + in.FilePath}}
		if b, err := read(in.FilePath); err == nil {
			if after, ok := replaceIn(string(b), in.OldString, in.NewString, in.ReplaceAll); ok {
				d.hunks = hunksOf(string(b), after)
				if in.ReplaceAll {
					d.note = "every occurrence replaced"
				}
				return d, true
			}
		}
		d.note = "line numbers within the edit"
		if in.ReplaceAll {
			d.note += "; every occurrence replaced"
		}
		d.hunks = hunksOf(in.OldString, in.NewString)
		return d, true
	case "MultiEdit":
		var in multiEditInput
		if err := json.Unmarshal(req.Input, &in); err != nil || len(in.Edits) == 0 {
			return nil, false
		}
		d := &fileDiff{path: in.FilePath, header: []string{"--- " + in.FilePath, "+++ " + in.FilePath}}
		if b, err := read(in.FilePath); err == nil {
			content, ok := string(b), true
			for _, e := range in.Edits {
				if content, ok = replaceIn(content, e.OldString, e.NewString, e.ReplaceAll); !ok {
					break
				}
			}
			if ok {
				d.hunks = hunksOf(string(b), content)
				return d, true
			}
		}
		d.note = fmt.Sprintf("%d edits, line numbers within each", len(in.Edits))
		for _, e := range in.Edits {
			d.hunkSets = append(d.hunkSets, hunksOf(e.OldString, e.NewString))
		}
		return d, true
	case "Write":
		in, err := claude.DecodeInput[claude.WriteInput](req.Input)
		if err != nil {
			return nil, false
		}
		d := &fileDiff{path: in.FilePath, header: []string{"+++ " + in.FilePath + " (whole file)"}}
		d.hunks = hunksOf("", in.Content)
		return d, true
	}
	return nil, false
}

// lines renders d, coloured when color is set.
func (d *fileDiff) lines(color bool) []string {
	st := func(s, text string) string {
		if !color || text == "" {
			return text
		}
		return s + text + styleReset
	}
	var out []string
	for _, h := range d.header {
		out = append(out, st(styleBold, h))
	}
	if d.note != "" {
		out = append(out, st(styleDim, "("+d.note+")"))
	}
	sets := d.hunkSets
	if sets == nil {
		sets = [][]*udiff.Hunk{d.hunks}
	}
	// One width for every line number, so the columns line up.
	width := 1
	for _, hs := range sets {
		for _, h := range hs {
			n := max(h.FromLine, h.ToLine) + len(h.Lines)
			width = max(width, len(strconv.Itoa(n)))
		}
	}
	blank := strings.Repeat(" ", width)
	num := func(n int) string { return fmt.Sprintf("%*d", width, n) }
	rows, more := 0, 0
	empty := true
	for _, hs := range sets {
		for _, h := range hs {
			empty = false
			if rows >= maxDiffRows {
				more += len(h.Lines)
				continue
			}
			out = append(out, st(styleCyan, hunkHeader(h)))
			oldN, newN := h.FromLine, h.ToLine
			for _, l := range h.Lines {
				if rows >= maxDiffRows {
					more++
					continue
				}
				rows++
				text := strings.TrimSuffix(l.Content, "\n")
				switch l.Kind {
				case udiff.Delete:
					out = append(out, st(styleDim, num(oldN)+" "+blank)+" "+st(styleRed, "-"+text))
					oldN++
				case udiff.Insert:
					out = append(out, st(styleDim, blank+" "+num(newN))+" "+st(styleGreen, "+"+text))
					newN++
				default:
					out = append(out, st(styleDim, num(oldN)+" "+num(newN)+"  "+text))
					oldN++
					newN++
				}
			}
		}
	}
	if empty {
		out = append(out, st(styleDim, "(no change)"))
	}
	if more > 0 {
		out = append(out, st(styleDim, fmt.Sprintf("… %d more lines", more)))
	}
	return out
}

// hunkHeader is a hunk's "@@ -from,count +to,count @@" line.
func hunkHeader(h *udiff.Hunk) string {
	from, to := 0, 0
	for _, l := range h.Lines {
		switch l.Kind {
		case udiff.Delete:
			from++
		case udiff.Insert:
			to++
		default:
			from++
			to++
		}
	}
	rng := func(start, n int) string {
		if n == 0 {
			return strconv.Itoa(max(start-1, 0)) + ",0"
		}
		if n == 1 {
			return strconv.Itoa(start)
		}
		return strconv.Itoa(start) + "," + strconv.Itoa(n)
	}
	return "@@ -" + rng(h.FromLine, from) + " +" + rng(h.ToLine, to) + " @@"
}
