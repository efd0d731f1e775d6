package claudetest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/tetherhq/tether/internal/syncbuf"
	"io"
	"os"
	"strings"
	"testing"
	"time"
)

// This file is a deliberately tiny stand-in for a session API: it runs the
// real CLI with os/exec and speaks raw JSON lines, so that the fake
// Messages API can be tested end to end before package claude has a
// session to do it with.

// lineTimeout bounds every wait for CLI output. A cold CLI start takes up
// to ~4 s; under -race with two CLIs per core it takes longer.
const lineTimeout = 90 * time.Second

// cliLine is one stdout line of the CLI.
type cliLine struct {
	Type    string `json:"type"`
	Subtype string `json:"subtype"`
	Raw     json.RawMessage
}

func (l cliLine) String() string {
	if l.Subtype != "" {
		return l.Type + "/" + l.Subtype
	}
	return l.Type
}

// decode unmarshals the whole line into v.
func (l cliLine) decode(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(l.Raw, v); err != nil {
		t.Fatalf("decoding %s line: %v\n%s", l, err, l.Raw)
	}
}

// resultLine is the part of a result line the tests check.
type resultLine struct {
	Subtype        string `json:"subtype"`
	IsError        bool   `json:"is_error"`
	Result         string `json:"result"`
	NumTurns       int    `json:"num_turns"`
	StopReason     string `json:"stop_reason"`
	APIErrorStatus *int   `json:"api_error_status"`
	Usage          struct {
		InputTokens  int `json:"input_tokens"`
		OutputTokens int `json:"output_tokens"`
	} `json:"usage"`
}

// assistantLine is the part of an assistant line the tests check.
type assistantLine struct {
	RequestID string `json:"request_id"`
	Error     string `json:"error"`
	Message   struct {
		ID      string `json:"id"`
		Model   string `json:"model"`
		Content []struct {
			Type      string          `json:"type"`
			Text      string          `json:"text"`
			Thinking  string          `json:"thinking"`
			Signature string          `json:"signature"`
			Data      string          `json:"data"`
			ID        string          `json:"id"`
			Name      string          `json:"name"`
			Input     json.RawMessage `json:"input"`
		} `json:"content"`
	} `json:"message"`
}

// cliProc is one running CLI.
type cliProc struct {
	t      testing.TB
	stdin  io.WriteCloser
	lines  chan cliLine
	stderr *syncbuf.Buffer
	all    []cliLine // every line read so far, for failure messages
}

// startCLI starts the real CLI against s with extra flags. On cleanup it
// closes stdin, gives the CLI a few seconds to exit, then kills it; by the
// time cleanup returns the process has been reaped and the stdout reader
// has ended.
func startCLI(t testing.TB, s *MessagesServer, args ...string) *cliProc {
	t.Helper()
	rc := NewRealCLI(t, s)
	ctx, cancel := context.WithCancel(context.Background())
	cmd := rc.Command(ctx, args...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	// An *os.File as Stdout, rather than StdoutPipe, lets Wait run at the
	// same time as the reader: Wait then has no copying to finish, and a
	// tool's grandchild holding stdout open cannot keep it from returning.
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = pw
	p := &cliProc{t: t, stdin: stdin, lines: make(chan cliLine, 1024), stderr: &syncbuf.Buffer{}}
	cmd.Stderr = p.stderr
	err = cmd.Start()
	pw.Close()
	if err != nil {
		pr.Close()
		cancel()
		t.Fatal(err)
	}
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		defer close(p.lines)
		r := bufio.NewReader(pr) // no line limit: assistant lines reach 90 KB
		for {
			b, err := r.ReadBytes('\n')
			if len(bytes.TrimSpace(b)) > 0 {
				l := cliLine{Raw: bytes.TrimSpace(b)}
				if jerr := json.Unmarshal(l.Raw, &l); jerr != nil {
					l.Type = "non-json"
				}
				p.lines <- l
			}
			if err != nil {
				return
			}
		}
	}()
	waitDone := make(chan struct{})
	go func() {
		defer close(waitDone)
		cmd.Wait()
	}()
	t.Cleanup(func() {
		stdin.Close()
		select {
		case <-waitDone:
		case <-time.After(10 * time.Second):
			t.Logf("CLI did not exit 10 s after stdin closed; stopping it")
			cancel() // SIGTERM, then SIGKILL after WaitDelay
			<-waitDone
		}
		cancel()
		pr.Close()
		go func() { // unblock the reader if the channel is full
			for range p.lines {
			}
		}()
		<-readerDone
		if t.Failed() {
			t.Logf("CLI stderr:\n%s", p.stderr.String())
		}
	})
	return p
}

// send writes one raw JSON line.
func (p *cliProc) send(line string) {
	p.t.Helper()
	if _, err := io.WriteString(p.stdin, line+"\n"); err != nil {
		p.t.Fatalf("writing to CLI: %v", err)
	}
}

func (p *cliProc) sendUser(text string) {
	p.t.Helper()
	b, _ := json.Marshal(text)
	p.send(fmt.Sprintf(`{"type":"user","message":{"role":"user","content":[{"type":"text","text":%s}]},"parent_tool_use_id":null,"session_id":""}`, b))
}

// initialize sends the initialize control request and waits for its
// answer.
func (p *cliProc) initialize() {
	p.t.Helper()
	p.send(`{"type":"control_request","request_id":"init_1","request":{"subtype":"initialize"}}`)
	p.readUntil(func(l cliLine) bool { return l.Type == "control_response" })
}

// readUntil reads lines until done accepts one and returns every line read
// on the way, the accepted one last. It fails the test if the CLI's stdout
// ends or nothing matching comes within lineTimeout.
func (p *cliProc) readUntil(done func(cliLine) bool) []cliLine {
	p.t.Helper()
	timer := time.NewTimer(lineTimeout)
	defer timer.Stop()
	var got []cliLine
	for {
		select {
		case l, ok := <-p.lines:
			if !ok {
				p.t.Fatalf("CLI stdout ended; lines: %s\nstderr:\n%s", p.summary(), p.stderr.String())
			}
			p.all = append(p.all, l)
			got = append(got, l)
			if done(l) {
				return got
			}
		case <-timer.C:
			p.t.Fatalf("no matching line within %v; lines: %s", lineTimeout, p.summary())
		}
	}
}

// turn sends a prompt and reads through the turn's result.
func (p *cliProc) turn(prompt string) ([]cliLine, resultLine) {
	p.t.Helper()
	p.sendUser(prompt)
	lines := p.readUntil(func(l cliLine) bool { return l.Type == "result" })
	var res resultLine
	lines[len(lines)-1].decode(p.t, &res)
	return lines, res
}

func (p *cliProc) summary() string {
	s := make([]string, len(p.all))
	for i, l := range p.all {
		s[i] = l.String()
	}
	return strings.Join(s, " ")
}

// assistants decodes the assistant lines among lines.
func assistants(t testing.TB, lines []cliLine) []assistantLine {
	t.Helper()
	var out []assistantLine
	for _, l := range lines {
		if l.Type == "assistant" {
			var a assistantLine
			l.decode(t, &a)
			out = append(out, a)
		}
	}
	return out
}

// linesOf returns the lines of the given type/subtype.
func linesOf(lines []cliLine, typ, subtype string) []cliLine {
	var out []cliLine
	for _, l := range lines {
		if l.Type == typ && (subtype == "" || l.Subtype == subtype) {
			out = append(out, l)
		}
	}
	return out
}
