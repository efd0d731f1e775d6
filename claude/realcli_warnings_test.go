package claude_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
)

func init() {
	var asked atomic.Int32
	addScenarios(scenario{
		name: "can_use_tool_shadowed",
		guards: "The warnings tell the truth: with AllowedTools \"Bash\" and PermissionMode acceptEdits, Session.Warnings reports CanUseTool shadowed " +
			"for Bash and the edit tools, and the CLI indeed runs a Bash command and a Write without asking it (2.1.197 and 2.1.330).",
		api: func() *claudetest.MessagesOptions {
			return &claudetest.MessagesOptions{Replies: []*claudetest.Reply{
				claudetest.ToolUseReply("toolu_sh", "Bash", map[string]string{"command": "echo ran > ran.txt"}),
				claudetest.ToolUseReply("toolu_w", "Write", map[string]string{"file_path": "written.txt", "content": "w\n"}),
				claudetest.TextReply("both ran"),
			}}
		},
		opts: func(o *claude.Options) {
			o.AllowedTools = []string{"Bash"}
			o.PermissionMode = claude.PermissionModeAcceptEdits
			o.CanUseTool = func(ctx context.Context, req *claude.ToolPermissionRequest) (claude.PermissionResult, error) {
				asked.Add(1)
				return &claude.PermissionDeny{Message: "asked"}, nil
			}
		},
		run: func(t *testing.T, h *harness) {
			ws := h.S.Warnings()
			if len(ws) != 2 || !slices.Equal(ws[0].Tools, []string{"Bash"}) || ws[1].Option != "PermissionMode" || !slices.Contains(ws[1].Tools, "Write") {
				t.Errorf("warnings %+v", ws)
			}
			msgs := h.turn(t, "run and write")
			if n := asked.Load(); n != 0 {
				t.Errorf("CanUseTool was asked %d times", n)
			}
			if r := result(t, msgs); r.IsError || r.Result != "both ran" {
				t.Errorf("result %+v", r)
			}
			for _, f := range []string{"ran.txt", "written.txt"} {
				if _, err := os.Stat(filepath.Join(h.CLI.Dir, f)); err != nil {
					t.Errorf("%s: %v", f, err)
				}
			}
		},
	})
}
