package claude_test

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
)

var (
	monitorTask = regexp.MustCompile(`Monitor started \(task ([a-z0-9]+),`)
	notebookCwd atomic.Pointer[string]
)

func init() {
	addScenarios(scenario{
		name: "tool_results_monitor_notebook",
		guards: `The structured results of Monitor, TaskStop (stopping the monitor's task; 2.1.330, as 2.1.197 does not
enable Monitor in SDK sessions) and NotebookEdit decode into their Go types with the real CLI's values.`,
		api: func() *claudetest.MessagesOptions {
			var n atomic.Int32
			return &claudetest.MessagesOptions{Respond: func(r *claudetest.Request) *claudetest.Reply {
				// The monitor's task id, from what the model was told:
				// "Monitor started (task bafpdqtny, …".
				id, cwd := "", ""
				if tr := r.Params.ToolResult("toolu_mon"); tr != nil {
					if m := monitorTask.FindStringSubmatch(string(tr.Raw)); m != nil {
						id = m[1]
					}
				}
				if p := notebookCwd.Load(); p != nil {
					cwd = *p
				}
				replies := []*claudetest.Reply{
					claudetest.ToolUseReply("toolu_mon", "Monitor", map[string]any{"description": "watch a loop", "timeout_ms": 60000, "command": "while true; do echo tick; sleep 1; done"}),
					claudetest.ToolUseReply("toolu_stop", "TaskStop", map[string]any{"task_id": id}),
					claudetest.ToolUseReply("toolu_nbread", "Read", map[string]any{"file_path": filepath.Join(cwd, "a.ipynb")}),
					claudetest.ToolUseReply("toolu_nb", "NotebookEdit", map[string]any{"notebook_path": filepath.Join(cwd, "a.ipynb"), "cell_id": "c1", "new_source": "print(2)", "edit_mode": "replace"}),
					claudetest.TextReply("done"),
				}
				i := int(n.Add(1)) - 1
				if i >= len(replies) {
					return nil
				}
				return replies[i]
			}}
		},
		opts: func(o *claude.Options) {
			o.PermissionMode = claude.PermissionModeBypassPermissions
			notebookCwd.Store(&o.Cwd)
			if o.Cwd != "" {
				nb := `{"cells":[{"cell_type":"code","id":"c1","metadata":{},"source":["print(1)"],"outputs":[],"execution_count":null}],"metadata":{"language_info":{"name":"python"}},"nbformat":4,"nbformat_minor":5}`
				if err := os.WriteFile(filepath.Join(o.Cwd, "a.ipynb"), []byte(nb), 0o644); err != nil {
					panic(err)
				}
			}
		},
		run: func(t *testing.T, h *harness) {
			results := map[string]*claude.UserMessage{}
			if err := h.S.Send(h.Ctx, "watch and edit"); err != nil {
				t.Fatal(err)
			}
			for m, err := range h.S.ReceiveTurn(h.Ctx) {
				if err != nil {
					t.Fatalf("ReceiveTurn: %v", err)
				}
				if u, ok := m.(*claude.UserMessage); ok {
					for _, tr := range u.ToolResults() {
						results[tr.ToolUseID] = u
					}
				}
			}
			mon, err := claude.DecodeToolUseResult[claude.MonitorResult](results["toolu_mon"])
			var te *claude.ToolUseError
			if !newer(t, h) {
				// 2.1.197 does not enable Monitor in SDK sessions.
				if !errors.As(err, &te) {
					t.Errorf("Monitor on 2.1.197: %+v, %v; want a *ToolUseError", mon, err)
				}
			} else {
				if err != nil || mon.TaskID == "" || mon.TimeoutMS != 60000 {
					t.Errorf("Monitor result = %+v, %v", mon, err)
				}
				st, err := claude.DecodeToolUseResult[claude.TaskStopResult](results["toolu_stop"])
				if err != nil || st.TaskID != mon.TaskID || st.Message == "" {
					t.Errorf("TaskStop result = %+v, %v", st, err)
				}
			}
			nb, err := claude.DecodeToolUseResult[claude.NotebookEditResult](results["toolu_nb"])
			if err != nil || nb.NewSource != "print(2)" || nb.CellType != "code" || nb.Language != "python" ||
				!strings.Contains(nb.UpdatedFile, "print(2)") || !strings.Contains(nb.OriginalFile, "print(1)") {
				t.Errorf("NotebookEdit result = %+v, %v", nb, err)
			}
		},
	})
}
