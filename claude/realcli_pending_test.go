package claude_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
	"github.com/tetherhq/tether/internal/control"
)

// losingTransport runs the real CLI and loses the first control request
// of one subtype on its way to the session, as a host that joins a
// running CLI late, or reconnects, has never seen it.
type losingTransport struct {
	subtype string
	lost    chan string // the lost request's id

	mu     sync.Mutex
	served []string // ids CanUseTool saw
}

func (lt *losingTransport) servedIDs() []string {
	lt.mu.Lock()
	defer lt.mu.Unlock()
	return append([]string(nil), lt.served...)
}

func (lt *losingTransport) Connect(ctx context.Context, l *claude.Launch) (claude.Conn, error) {
	c, err := (&claude.CommandTransport{}).Connect(ctx, l)
	if err != nil {
		return nil, err
	}
	return &losingConn{Conn: c, lt: lt}, nil
}

type losingConn struct {
	claude.Conn
	lt   *losingTransport
	once sync.Once
}

func (c *losingConn) Read(ctx context.Context) ([]byte, error) {
	for {
		line, err := c.Conn.Read(ctx)
		if err != nil {
			return line, err
		}
		if typ, _ := control.PeekType(line); typ == "control_request" {
			var env control.Envelope
			if json.Unmarshal(line, &env) == nil && control.Subtype(env.Request) == c.lt.subtype {
				lost := false
				c.once.Do(func() { lost = true })
				if lost {
					c.lt.lost <- env.RequestID
					continue
				}
			}
		}
		return line, nil
	}
}

func init() {
	addScenarios(scenario{
		name: "pending_permission_redelivered",
		guards: "A permission request the host never received is listed by the CLI in its answer to a repeated initialize (pending_permission_requests); " +
			"Reinitialize serves it through CanUseTool like a live one, the CLI takes the answer and the turn finishes (CLI 2.1.197 and 2.1.330).",
		api: func() *claudetest.MessagesOptions {
			return &claudetest.MessagesOptions{Replies: []*claudetest.Reply{
				claudetest.ToolUseReply("toolu_late", "Bash", map[string]string{"command": "echo late > late.txt"}),
				claudetest.TextReply("done late"),
			}}
		},
		opts: func(o *claude.Options) {
			lt := &losingTransport{subtype: "can_use_tool", lost: make(chan string, 1)}
			o.Transport = lt
			o.CanUseTool = func(ctx context.Context, req *claude.ToolPermissionRequest) (claude.PermissionResult, error) {
				lt.mu.Lock()
				lt.served = append(lt.served, req.RequestID)
				lt.mu.Unlock()
				return &claude.PermissionAllow{}, nil
			}
		},
		run: func(t *testing.T, h *harness) {
			lt := h.Opts.Transport.(*losingTransport)
			if err := h.S.Send(h.Ctx, "write late.txt"); err != nil {
				t.Fatal(err)
			}
			var lost string
			select {
			case lost = <-lt.lost:
			case <-h.Ctx.Done():
				t.Fatal("the CLI never asked for permission")
			}
			if ids := lt.servedIDs(); len(ids) != 0 {
				t.Fatalf("CanUseTool ran before the re-delivery: %v", ids)
			}
			if _, err := h.S.Reinitialize(h.Ctx); err != nil {
				t.Fatal(err)
			}
			msgs := h.receiveTurn(t)
			if r := result(t, msgs); r.IsError || r.Result != "done late" {
				t.Errorf("result = %+v", r)
			}
			if ids := lt.servedIDs(); len(ids) != 1 || ids[0] != lost {
				t.Errorf("CanUseTool served %v, want the lost request %s once", ids, lost)
			}
			if b, err := os.ReadFile(filepath.Join(h.CLI.Dir, "late.txt")); err != nil || string(b) != "late\n" {
				t.Errorf("late.txt = %q, %v: the allowed command did not run", b, err)
			}
		},
	})
}
