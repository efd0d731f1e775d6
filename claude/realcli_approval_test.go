package claude_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
	"github.com/tetherhq/tether/internal/proc"
)

// approvalHold is how long approval_long_hold keeps its approval: longer
// than every Tether bound the scenario sets, and than any timer the CLI
// arms on a host request that a test can wait out (the CLI has none on
// can_use_tool; its stall watchdog, 300 s, only reports).
const approvalHold = 8 * time.Second

func init() {
	addScenarios(
		scenario{
			name: "approval_timeout",
			guards: "Options.ApprovalTimeout: a CanUseTool that does not answer in time is denied with a message saying so, " +
				"its ctx cancelled with ErrApprovalTimeout; the model gets the message as the tool's error and the turn goes on (2.1.197 and 2.1.330).",
			api: func() *claudetest.MessagesOptions {
				return &claudetest.MessagesOptions{Replies: []*claudetest.Reply{
					claudetest.ToolUseReply("toolu_wait", "Bash", map[string]string{"command": "echo waited > waited.txt"}),
					claudetest.TextReply("gave up"),
				}}
			},
			opts: func(o *claude.Options) {
				o.ApprovalTimeout = 300 * time.Millisecond
				causes := make(chan error, 1)
				o.CanUseTool = func(ctx context.Context, req *claude.ToolPermissionRequest) (claude.PermissionResult, error) {
					<-ctx.Done() // nobody answers
					causes <- context.Cause(ctx)
					return &claude.PermissionAllow{}, nil
				}
				approvalCauses = causes
			},
			run: func(t *testing.T, h *harness) {
				msgs := h.turn(t, "write waited.txt")
				_, tr := toolResult(t, msgs, "toolu_wait")
				if !tr.IsError || !strings.Contains(tr.Text(), "No answer to the permission request within 300ms") {
					t.Errorf("tool result %q (error %v)", tr.Text(), tr.IsError)
				}
				if r := result(t, msgs); r.IsError || r.Result != "gave up" || len(r.PermissionDenials) != 1 {
					t.Errorf("result %+v", r)
				}
				select {
				case c := <-approvalCauses:
					if !errors.Is(c, claude.ErrApprovalTimeout) {
						t.Errorf("callback ctx cause %v", c)
					}
				case <-h.Ctx.Done():
					t.Error("the callback's ctx was never cancelled")
				}
				if _, err := os.Stat(filepath.Join(h.CLI.Dir, "waited.txt")); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("waited.txt exists (%v): the denied command ran", err)
				}
				// Nobody answered: CLI 2.1.336 and later record the deny as
				// the host's own (DecisionConfig).
				if proc.CompareVersions(claudetest.CLIVersion(), "2.1.336") >= 0 {
					if got, err := h.CLI.PermissionSources(); err != nil || got["toolu_wait"] != "config" {
						t.Errorf("the CLI recorded the deny as %q (%v), want config", got["toolu_wait"], err)
					}
				}
			},
		},
		scenario{
			name: "approval_long_hold",
			guards: "Nothing times an approval out: a CanUseTool that answers after a hold longer than every Tether bound set (CloseTimeout, QueryTaskTimeout; " +
				"InitializeTimeout bounds only the start, which a loaded CI machine may take seconds over) " +
				"still has its answer taken by the CLI, and the command runs (2.1.197 and 2.1.330).",
			api: func() *claudetest.MessagesOptions {
				return &claudetest.MessagesOptions{Replies: []*claudetest.Reply{
					claudetest.ToolUseReply("toolu_hold", "Bash", map[string]string{"command": "echo held > held.txt"}),
					claudetest.TextReply("held and done"),
				}}
			},
			opts: func(o *claude.Options) {
				o.CloseTimeout = 100 * time.Millisecond
				o.QueryTaskTimeout = 100 * time.Millisecond
				o.CanUseTool = func(ctx context.Context, req *claude.ToolPermissionRequest) (claude.PermissionResult, error) {
					select {
					case <-time.After(approvalHold):
						return &claude.PermissionAllow{}, nil
					case <-ctx.Done():
						return nil, context.Cause(ctx)
					}
				}
			},
			run: func(t *testing.T, h *harness) {
				start := time.Now()
				msgs := h.turn(t, "write held.txt")
				if d := time.Since(start); d < approvalHold {
					t.Errorf("the turn ended after %v, before the approval", d)
				}
				if _, tr := toolResult(t, msgs, "toolu_hold"); tr.IsError {
					t.Errorf("tool result %q is an error", tr.Text())
				}
				if r := result(t, msgs); r.IsError || r.Result != "held and done" {
					t.Errorf("result %+v", r)
				}
				if b, err := os.ReadFile(filepath.Join(h.CLI.Dir, "held.txt")); err != nil || string(b) != "held\n" {
					t.Errorf("held.txt = %q, %v", b, err)
				}
			},
		},
	)
}

// approvalCauses carries approval_timeout's callback ctx cause (set by its
// opts; each scenario runs once per process).
var approvalCauses chan error
