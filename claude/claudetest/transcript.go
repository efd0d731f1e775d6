package claudetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strings"
	"sync"

	"golang.org/x/tools/txtar"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/internal/control"
)

// A Transcript is a recorded conversation between a host and a CLI: every
// line each side wrote, in the order the host saw them. Record one from a
// real CLI with a Recorder, keep it under testdata/, and replay it through
// the fake CLI (Replay) so unit tests exercise what the real CLI really
// sends, at the speed of a fake.
//
// On disk a transcript is a txtar archive: the comment says what the
// transcript guards against and which CLI made it; the file "stdio" holds
// one line per message, "> " for host to CLI (stdin) and "< " for CLI to
// host (stdout).
type Transcript struct {
	Comment string
	Lines   []TranscriptLine
}

// TranscriptLine is one line of a Transcript.
type TranscriptLine struct {
	FromHost bool            // written by the host to the CLI's stdin
	JSON     json.RawMessage // the line, without its newline
}

// ParseTranscript parses the txtar form of a transcript.
func ParseTranscript(data []byte) (*Transcript, error) {
	a := txtar.Parse(data)
	t := &Transcript{Comment: strings.TrimSpace(string(a.Comment))}
	var stdio []byte
	for _, f := range a.Files {
		if f.Name == "stdio" {
			stdio = f.Data
		}
	}
	if stdio == nil {
		return nil, errors.New("claudetest: transcript has no stdio file")
	}
	for i, l := range bytes.Split(stdio, []byte("\n")) {
		if len(bytes.TrimSpace(l)) == 0 {
			continue
		}
		var from bool
		switch {
		case bytes.HasPrefix(l, []byte("> ")):
			from = true
		case bytes.HasPrefix(l, []byte("< ")):
		default:
			return nil, fmt.Errorf("claudetest: transcript stdio line %d starts with neither %q nor %q", i+1, "> ", "< ")
		}
		js := bytes.Clone(l[2:])
		if !json.Valid(js) {
			return nil, fmt.Errorf("claudetest: transcript stdio line %d is not JSON", i+1)
		}
		t.Lines = append(t.Lines, TranscriptLine{FromHost: from, JSON: js})
	}
	return t, nil
}

// ReadTranscript reads a transcript file.
func ReadTranscript(path string) (*Transcript, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	t, err := ParseTranscript(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// Format returns the txtar form of t.
func (t *Transcript) Format() []byte {
	var b bytes.Buffer
	for _, l := range t.Lines {
		if l.FromHost {
			b.WriteString("> ")
		} else {
			b.WriteString("< ")
		}
		b.Write(l.JSON)
		b.WriteByte('\n')
	}
	comment := strings.TrimSpace(t.Comment)
	if comment != "" {
		comment += "\n"
	}
	return txtar.Format(&txtar.Archive{Comment: []byte(comment), Files: []txtar.File{{Name: "stdio", Data: b.Bytes()}}})
}

// WriteFile writes t to path in its txtar form.
func (t *Transcript) WriteFile(path string) error {
	return os.WriteFile(path, t.Format(), 0o644)
}

// A Recorder is a claude.Transport that records every line between the
// host and the CLI it wraps. One Recorder records one session.
//
//	rec := &claudetest.Recorder{Transport: &claude.CommandTransport{}}
//	opts.Transport = rec
//	… run the session …
//	rec.Transcript("guards against …").WriteFile("testdata/x.txtar")
type Recorder struct {
	// Transport is the transport to record; nil means a
	// *claude.CommandTransport (the real CLI, which then needs
	// Options.CLIPath since custom transports skip discovery).
	Transport claude.Transport
	// Replace rewrites substrings in every recorded line, e.g. a temporary
	// directory to a fixed placeholder, so transcripts stay stable.
	Replace map[string]string

	mu    sync.Mutex
	lines []TranscriptLine
}

// Connect connects the wrapped transport and records its lines.
func (r *Recorder) Connect(ctx context.Context, l *claude.Launch) (claude.Conn, error) {
	tr := r.Transport
	if tr == nil {
		tr = &claude.CommandTransport{}
	}
	c, err := tr.Connect(ctx, l)
	if err != nil {
		return nil, err
	}
	return &recordingConn{Conn: c, r: r}, nil
}

func (r *Recorder) record(fromHost bool, line []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lines = append(r.lines, TranscriptLine{FromHost: fromHost, JSON: bytes.Clone(line)})
}

// Transcript returns what was recorded so far, with comment as its header.
// Strings that look like UUIDs are renumbered in order of appearance
// (00000000-0000-4000-8000-000000000001, …) and Replace is applied, so
// that re-recording the same scenario changes little.
func (r *Recorder) Transcript(comment string) *Transcript {
	r.mu.Lock()
	lines := append([]TranscriptLine(nil), r.lines...)
	r.mu.Unlock()
	ids := map[string]string{}
	keys := make([]string, 0, len(r.Replace))
	for k := range r.Replace {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return len(keys[i]) > len(keys[j]) }) // longest first
	for i, l := range lines {
		s := uuidRE.ReplaceAllStringFunc(string(l.JSON), func(u string) string {
			if v, ok := ids[u]; ok {
				return v
			}
			v := fmt.Sprintf("00000000-0000-4000-8000-%012d", len(ids)+1)
			ids[u] = v
			return v
		})
		for _, k := range keys {
			s = strings.ReplaceAll(s, k, r.Replace[k])
		}
		lines[i].JSON = json.RawMessage(s)
	}
	return &Transcript{Comment: comment, Lines: lines}
}

var uuidRE = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)

type recordingConn struct {
	claude.Conn
	r *Recorder
}

func (c *recordingConn) Read(ctx context.Context) ([]byte, error) {
	line, err := c.Conn.Read(ctx)
	if err == nil {
		c.r.record(false, line)
	}
	return line, err
}

func (c *recordingConn) Write(ctx context.Context, line []byte) error {
	c.r.record(true, line)
	return c.Conn.Write(ctx, line)
}

// CloseInput closes the wrapped connection's stdin, if it can.
func (c *recordingConn) CloseInput() error {
	if ic, ok := c.Conn.(claude.InputCloser); ok {
		return ic.CloseInput()
	}
	return errors.New("claudetest: the recorded transport cannot close stdin alone")
}

// PID reports the wrapped connection's process id, if it has one.
func (c *recordingConn) PID() int {
	if p, ok := c.Conn.(claude.PIDer); ok {
		return p.PID()
	}
	return 0
}

// Replay returns a Script that plays the CLI's side of t: it writes the
// CLI's lines in order and, at each host line, waits for the host to write
// a line of the same kind (type, and subtype for control requests),
// failing with a clear error if it writes something else. Request ids the
// host chose are mapped onto the live ones, so the CLI's answers reach the
// host's pending requests, and so are the uuids of the host's user
// messages, which the CLI echoes back. After the last line it answers control
// requests as an idle CLI would, until stdin closes; a transcript in which
// the host sent end_session ends there, as the CLI exits.
//
// The host answers the CLI's requests (permissions, hooks, MCP messages)
// on goroutines of their own, so those answers may come in another order
// than recorded, relative to each other and to what else the host writes.
// Replay accepts a host answer to a CLI request ahead of its place, and
// any host line while the transcript waits for such an answer, as long as
// the transcript has a line of that kind still to come.
func Replay(t *Transcript) Script {
	return func(ctx context.Context, c *CLI) error {
		ids := map[string]string{}   // recorded host request id -> live id
		uuids := map[string]string{} // recorded host message uuid -> live uuid
		early := map[int]*Line{}     // transcript index -> host line that came ahead of it
		ended := false               // the host sent end_session: the CLI exits after the transcript
		wants := make([]*Line, len(t.Lines))
		for i, l := range t.Lines {
			if l.FromHost {
				w, err := parseLine(l.JSON)
				if err != nil {
					return err
				}
				wants[i] = w
			}
		}
		// ahead finds the unmatched host line after i that got can stand
		// for, if got may come early.
		ahead := func(i int, got *Line) int {
			answer := isAnswer(got)
			if !answer && !isAnswer(wants[i]) {
				return -1
			}
			for j := i + 1; j < len(wants); j++ {
				w := wants[j]
				if w == nil || early[j] != nil || kind(w) != kind(got) {
					continue
				}
				if !answer || answerID(w) == answerID(got) {
					return j
				}
			}
			return -1
		}
		for i, l := range t.Lines {
			if !l.FromHost {
				line := mapResponseID(l.JSON, ids)
				for rec, live := range uuids {
					line = bytes.ReplaceAll(line, []byte(rec), []byte(live))
				}
				if err := c.Write(line); err != nil {
					return err
				}
				continue
			}
			want := wants[i]
			got := early[i]
			for got == nil {
				g, err := c.Read(ctx)
				if err != nil {
					return fmt.Errorf("claudetest: replay: waiting for the host's %s (transcript line %d): %w", kind(want), i+1, err)
				}
				if kind(g) == kind(want) && (!isAnswer(g) || answerID(g) == answerID(want) || ahead(i, g) < 0) {
					got = g
					break
				}
				j := ahead(i, g)
				if j < 0 {
					return fmt.Errorf("claudetest: replay: the host wrote %s, the transcript has %s at line %d", bytes.TrimSpace(g.Raw), kind(want), i+1)
				}
				early[j] = g
			}
			if g, w := hostPayload(got), hostPayload(want); g != w {
				return fmt.Errorf("claudetest: replay: at transcript line %d the host wrote %s\nthe transcript has %s", i+1, g, w)
			}
			if want.Type == "control_request" && want.RequestID != "" {
				ids[want.RequestID] = got.RequestID
			}
			if want.Type == "user" {
				// The CLI echoes the host's message uuid (replays, 2.1.330's
				// command_lifecycle): give the live host its own back.
				if rec, live := messageUUID(want.Raw), messageUUID(got.Raw); rec != "" && live != "" && rec != live {
					uuids[rec] = live
				}
			}
			ended = ended || kind(want) == "control_request/end_session"
		}
		if ended {
			return nil
		}
		for {
			l, err := c.Read(ctx)
			if err != nil {
				if errors.Is(err, io.EOF) || errors.Is(err, context.Canceled) {
					return nil
				}
				return err
			}
			if l.Type == "control_request" {
				if err := c.AnswerIdle(l); err != nil {
					if errors.Is(err, ErrSessionEnded) {
						return nil
					}
					return err
				}
			}
		}
	}
}

// hostPayload is what a host line decides, normalised for comparison:
// the answer of a control_response, the body of a control_request, the
// message of a user line. Ids and UUIDs are left out: they differ from run
// to run.
func hostPayload(l *Line) string {
	var v any
	switch l.Type {
	case "control_response":
		if l.Response == nil {
			return ""
		}
		v = []any{l.Response.Subtype, l.Response.Response, l.Response.Error}
	case "control_request":
		v = l.Request
	case "user":
		var u struct {
			Message json.RawMessage `json:"message"`
		}
		_ = json.Unmarshal(l.Raw, &u)
		v = u.Message
	default:
		return ""
	}
	b, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	var norm any // re-encode so key order and spacing don't matter
	if json.Unmarshal(b, &norm) == nil {
		b, _ = json.Marshal(norm)
	}
	return uuidRE.ReplaceAllString(string(b), "<uuid>")
}

// isAnswer reports whether l is the host's answer to a CLI request.
func isAnswer(l *Line) bool { return l.Type == "control_response" && l.Response != nil }

// answerID is the CLI request an answer is for. Replay writes the CLI's
// recorded request ids as they are, so they match the recording.
func answerID(l *Line) string {
	if !isAnswer(l) {
		return ""
	}
	return l.Response.RequestID
}

// messageUUID returns the uuid of a user line the host wrote.
func messageUUID(raw json.RawMessage) string {
	var u struct {
		UUID string `json:"uuid"`
	}
	_ = json.Unmarshal(raw, &u)
	return u.UUID
}

func kind(l *Line) string {
	if l.Type == "control_request" {
		return "control_request/" + l.Subtype
	}
	return l.Type
}

// mapResponseID rewrites the request_id of a control_response to a host
// request onto the id the live host used.
func mapResponseID(line json.RawMessage, ids map[string]string) json.RawMessage {
	var env control.Envelope
	if json.Unmarshal(line, &env) != nil || env.Type != "control_response" || env.Response == nil {
		return line
	}
	live, ok := ids[env.Response.RequestID]
	if !ok {
		return line
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(line, &m) != nil {
		return line
	}
	var resp map[string]json.RawMessage
	if json.Unmarshal(m["response"], &resp) != nil {
		return line
	}
	resp["request_id"], _ = json.Marshal(live)
	m["response"], _ = json.Marshal(resp)
	out, err := json.Marshal(m)
	if err != nil {
		return line
	}
	return out
}
