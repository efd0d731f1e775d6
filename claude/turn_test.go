package claude_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
)

// hostLines is what a fake CLI saw the host write after the script's last
// turn, up to stdin's end: where Close's interrupt would show.
type hostLines struct {
	mu    sync.Mutex
	lines []string
}

func (h *hostLines) add(l *claudetest.Line) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := l.Type
	if l.Subtype != "" {
		s += "/" + l.Subtype
	}
	h.lines = append(h.lines, s)
}

func (h *hostLines) get() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.lines)
}

// drain reads the host's lines until stdin ends, answering an interrupt
// with an interrupted result.
func (h *hostLines) drain(ctx context.Context, c *claudetest.CLI) error {
	for {
		l, err := c.Read(ctx)
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		h.add(l)
		if l.Subtype == "interrupt" {
			c.Respond(l.RequestID, nil)
			c.Write(c.ResultInterrupted())
		}
	}
}

// Close interrupts a running turn and only a running turn: not an idle
// session, but a session whose queued prompt will start a turn, yes.
func TestCloseInterruptsOnlyARunningTurn(t *testing.T) {
	for _, tc := range []struct {
		name string
		// script plays the CLI up to the moment the host closes.
		script func(ctx context.Context, c *claudetest.CLI, ready chan<- struct{}) error
		// host drives the session before Close.
		host      func(ctx context.Context, t *testing.T, s *claude.Session, ready <-chan struct{})
		interrupt bool
	}{{
		name: "idle after a turn",
		script: func(ctx context.Context, c *claudetest.CLI, ready chan<- struct{}) error {
			_, err := c.Turn(ctx, "done")
			return err
		},
		host: func(ctx context.Context, t *testing.T, s *claude.Session, ready <-chan struct{}) {
			s.Send(ctx, "hi")
			collect(t, s.ReceiveTurn(ctx))
		},
	}, {
		name: "never prompted",
		script: func(ctx context.Context, c *claudetest.CLI, ready chan<- struct{}) error {
			return nil
		},
		host: func(ctx context.Context, t *testing.T, s *claude.Session, ready <-chan struct{}) {},
	}, {
		name: "turn running",
		script: func(ctx context.Context, c *claudetest.CLI, ready chan<- struct{}) error {
			if _, err := c.ReadUser(ctx); err != nil {
				return err
			}
			return c.Write(c.SystemInit(), c.AssistantText("working"))
		},
		host: func(ctx context.Context, t *testing.T, s *claude.Session, ready <-chan struct{}) {
			s.Send(ctx, "hi")
			for m := range s.Receive(ctx) {
				if _, ok := m.(*claude.AssistantMessage); ok {
					return
				}
			}
		},
		interrupt: true,
	}, {
		name: "prompt queued behind a finished turn",
		script: func(ctx context.Context, c *claudetest.CLI, ready chan<- struct{}) error {
			if _, err := c.ReadUser(ctx); err != nil {
				return err
			}
			c.Write(c.SystemInit())
			if _, err := c.ReadUser(ctx); err != nil { // queued while the turn runs
				return err
			}
			return c.Write(c.AssistantText("first"), c.ResultSuccess("first"))
		},
		host: func(ctx context.Context, t *testing.T, s *claude.Session, ready <-chan struct{}) {
			s.Send(ctx, "one")
			for m := range s.Receive(ctx) {
				if _, ok := m.(*claude.InitMessage); ok {
					break
				}
			}
			s.Send(ctx, "two")
			collect(t, s.ReceiveTurn(ctx))
		},
		interrupt: true,
	}, {
		name: "prompt sent, no init yet",
		script: func(ctx context.Context, c *claudetest.CLI, ready chan<- struct{}) error {
			_, err := c.ReadUser(ctx)
			close(ready)
			return err
		},
		host: func(ctx context.Context, t *testing.T, s *claude.Session, ready <-chan struct{}) {
			s.Send(ctx, "hi")
			<-ready
		},
		interrupt: true,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			var seen hostLines
			ready := make(chan struct{})
			fake := &claudetest.FakeCLI{Script: func(ctx context.Context, c *claudetest.CLI) error {
				if _, err := c.HandleInitialize(ctx); err != nil {
					return err
				}
				if err := tc.script(ctx, c, ready); err != nil {
					return err
				}
				return seen.drain(ctx, c)
			}}
			ctx := testCtx(t)
			s, err := claude.Connect(ctx, &claude.Options{Transport: fake})
			if err != nil {
				t.Fatal(err)
			}
			tc.host(ctx, t, s, ready)
			s.Close()
			got := slices.Contains(seen.get(), "control_request/interrupt")
			if got != tc.interrupt {
				t.Errorf("Close interrupted: %v, want %v (host wrote %v)", got, tc.interrupt, seen.get())
			}
		})
	}
}

// CloseInput lets the running turn finish: the CLI sees stdin end, writes
// the rest of the turn and exits; no interrupt is sent, Receive gets the
// result, and Wait reports the clean exit.
func TestCloseInputLetsTurnFinish(t *testing.T) {
	var seen hostLines
	fake := &claudetest.FakeCLI{Script: func(ctx context.Context, c *claudetest.CLI) error {
		if _, err := c.HandleInitialize(ctx); err != nil {
			return err
		}
		if _, err := c.ReadUser(ctx); err != nil {
			return err
		}
		c.Write(c.SystemInit())
		if err := seen.drain(ctx, c); err != nil { // until stdin ends
			return err
		}
		return c.Write(c.AssistantText("finished"), c.ResultSuccess("finished"))
	}}
	ctx := testCtx(t)
	s, err := claude.Connect(ctx, &claude.Options{Transport: fake})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Send(ctx, "work"); err != nil {
		t.Fatal(err)
	}
	closed := make(chan error, 1)
	go func() { closed <- s.CloseInput(ctx) }()
	msgs, errs := collect(t, s.Receive(ctx))
	if len(errs) > 0 {
		t.Fatalf("Receive errors: %v", errs)
	}
	if r := find[*claude.ResultMessage](msgs); len(r) != 1 || r[0].Result != "finished" {
		t.Fatalf("messages %v, want the turn's end", types(msgs))
	}
	if err := <-closed; err != nil {
		t.Errorf("CloseInput = %v", err)
	}
	if err := s.Wait(); err != nil {
		t.Errorf("Wait = %v", err)
	}
	if err := s.Send(ctx, "more"); err == nil {
		t.Error("Send after CloseInput succeeded")
	}
	if l := seen.get(); len(l) != 0 {
		t.Errorf("host wrote %v after the prompt, want nothing", l)
	}
}

// CloseInput on a subprocess that exits cleanly: Wait says nil; it honours
// its ctx if the CLI does not exit.
func TestCloseInputSubprocess(t *testing.T) {
	ctx := testCtx(t)
	s, err := claude.Connect(ctx, claudetest.ExecOptions("echo"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.CloseInput(ctx); err != nil {
		t.Fatalf("CloseInput = %v", err)
	}
	if err := s.Wait(); err != nil {
		t.Errorf("Wait = %v", err)
	}

	o := claudetest.ExecOptions("never-read")
	o.CloseTimeout = 200 * time.Millisecond
	s2, err := claude.Connect(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	cctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if err := s2.CloseInput(cctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("CloseInput on a CLI that does not exit = %v, want DeadlineExceeded", err)
	}
}

// Nobody receives: past Options.MaxBufferedBytes the session stops reading
// stdout, the CLI blocks on its writes, and nothing is lost; a permission
// request behind the backlog is served once Receive catches up.
func TestBufferBoundStopsReading(t *testing.T) {
	const (
		bound = 64 << 10
		lines = 2000
	)
	var written, asked int64
	var mu sync.Mutex
	fake := &claudetest.FakeCLI{Script: func(ctx context.Context, c *claudetest.CLI) error {
		if _, err := c.HandleInitialize(ctx); err != nil {
			return err
		}
		if _, err := c.ReadUser(ctx); err != nil {
			return err
		}
		for i := range lines {
			if err := c.Write(c.AssistantText(fmt.Sprintf("line %d %s", i, strings.Repeat("x", 900)))); err != nil {
				return err
			}
			mu.Lock()
			written++
			mu.Unlock()
		}
		if _, err := c.CanUseTool(ctx, "toolu_1", "Bash", map[string]string{"command": "ls"}); err != nil {
			return err
		}
		return c.Write(c.ResultSuccess("done"))
	}}
	ctx := testCtx(t)
	s, err := claude.Connect(ctx, &claude.Options{
		Transport:        fake,
		MaxBufferedBytes: bound,
		CanUseTool: func(ctx context.Context, r *claude.ToolPermissionRequest) (claude.PermissionResult, error) {
			mu.Lock()
			asked++
			mu.Unlock()
			return &claude.PermissionAllow{}, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Send(ctx, "flood"); err != nil {
		t.Fatal(err)
	}
	// A negative can only be watched for a while: the writer must stall
	// near the bound and stay there.
	time.Sleep(300 * time.Millisecond)
	mu.Lock()
	w, a := written, asked
	mu.Unlock()
	// The bound, plus the line being read, plus what the pipe and the
	// reader's buffer hold.
	if max := int64((bound+64<<10)/900) + 4; w > max || a != 0 {
		t.Fatalf("with nobody receiving, the CLI wrote %d lines (max %d) and was answered %d times", w, max, a)
	}
	n := 0
	for m, err := range s.ReceiveTurn(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		if a, ok := m.(*claude.AssistantMessage); ok {
			if want := fmt.Sprintf("line %d ", n); !strings.HasPrefix(a.Text(), want) {
				t.Fatalf("message %d = %.20q, want %q…", n, a.Text(), want)
			}
			n++
		}
	}
	if n != lines || asked != 1 {
		t.Errorf("received %d of %d lines, permission asked %d times", n, lines, asked)
	}
}
