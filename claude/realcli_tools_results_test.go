package claude_test

import (
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
)

// toolResultsCwd is the working directory of the tool_results_typed
// scenario, for its API script.
var toolResultsCwd atomic.Pointer[string]

func init() {
	addScenarios(scenario{
		name: "tool_results_typed",
		guards: `The structured results of Read, Edit, Glob and Grep decode into their Go types (DecodeToolUseResult)
with the real CLI's values; Options.Tools brings Glob and Grep back on 2.1.330.`,
		api: func() *claudetest.MessagesOptions {
			// The script needs the working directory, which is made after
			// the API: Respond builds each reply when it is asked for.
			var n atomic.Int32
			return &claudetest.MessagesOptions{Respond: func(*claudetest.Request) *claudetest.Reply {
				path := filepath.Join(*toolResultsCwd.Load(), "notes.txt")
				replies := []*claudetest.Reply{
					claudetest.ToolUseReply("toolu_read", "Read", map[string]any{"file_path": path}),
					claudetest.ToolUseReply("toolu_edit", "Edit", map[string]any{"file_path": path, "old_string": "hello", "new_string": "howdy"}),
					claudetest.ToolUseReply("toolu_glob", "Glob", map[string]any{"pattern": "*.txt"}),
					claudetest.ToolUseReply("toolu_grep", "Grep", map[string]any{"pattern": "howdy", "output_mode": "content"}),
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
			o.Tools = []string{"Read", "Edit", "Glob", "Grep"}
			o.PermissionMode = claude.PermissionModeAcceptEdits
			o.AllowedTools = []string{"Read", "Glob", "Grep"}
			toolResultsCwd.Store(&o.Cwd)
			if o.Cwd != "" {
				if err := os.WriteFile(filepath.Join(o.Cwd, "notes.txt"), []byte("hello world\nsecond line\n"), 0o644); err != nil {
					panic(err)
				}
			}
		},
		run: func(t *testing.T, h *harness) {
			results := map[string]*claude.UserMessage{}
			for _, m := range h.turn(t, "work on notes") {
				if u, ok := m.(*claude.UserMessage); ok {
					for _, tr := range u.ToolResults() {
						results[tr.ToolUseID] = u
					}
				}
			}
			path := filepath.Join(h.Opts.Cwd, "notes.txt")
			if r, err := claude.DecodeToolUseResult[claude.ReadResult](results["toolu_read"]); err != nil || r.Type != "text" || r.File == nil ||
				r.File.FilePath != path || !strings.Contains(r.File.Content, "hello world") || r.File.TotalLines < 2 || len(r.Raw) == 0 {
				t.Errorf("Read result = %+v %+v, %v", r, r.File, err)
			}
			if r, err := claude.DecodeToolUseResult[claude.EditResult](results["toolu_edit"]); err != nil || r.FilePath != path ||
				r.OldString != "hello" || r.NewString != "howdy" || !strings.Contains(r.OriginalFile, "hello world") ||
				len(r.StructuredPatch) != 1 || len(r.StructuredPatch[0].Lines) == 0 {
				t.Errorf("Edit result = %+v, %v", r, err)
			}
			if r, err := claude.DecodeToolUseResult[claude.GlobResult](results["toolu_glob"]); err != nil || r.NumFiles != 1 ||
				len(r.Filenames) != 1 || !strings.HasSuffix(r.Filenames[0], "notes.txt") {
				t.Errorf("Glob result = %+v, %v", r, err)
			}
			if r, err := claude.DecodeToolUseResult[claude.GrepResult](results["toolu_grep"]); err != nil || r.Mode != "content" ||
				!strings.Contains(r.Content, "howdy world") {
				t.Errorf("Grep result = %+v, %v", r, err)
			}

		},
	})
}
