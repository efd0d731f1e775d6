package host_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
	"github.com/tetherhq/tether/host"
)

// A person asks what the session changed, and takes it back.
func ExampleSession_Changes() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	notes := filepath.Join(dir, "notes.md")
	os.WriteFile(notes, []byte("# Notes\nmilk\n"), 0o644)

	// A fake CLI whose turn edits notes.md, as the Edit tool does: the
	// call, the change on disk, the result with the file as it was.
	edit := func(ctx context.Context, c *claudetest.CLI) error {
		if _, err := c.HandleInitialize(ctx); err != nil {
			return err
		}
		if _, err := c.ReadUser(ctx); err != nil {
			return err
		}
		c.Write(c.SystemInit(), c.AssistantToolUse("toolu_1", "Edit", map[string]any{"file_path": notes, "old_string": "milk", "new_string": "oat milk"}))
		os.WriteFile(notes, []byte("# Notes\noat milk\n"), 0o644)
		r := c.ToolResult("toolu_1", "The file has been updated.", false)
		r["tool_use_result"] = map[string]any{"filePath": notes, "oldString": "milk", "newString": "oat milk", "originalFile": "# Notes\nmilk\n"}
		c.Write(r, c.AssistantText("Done."), c.ResultSuccess("Done."))
		_, err := c.ReadUser(ctx)
		return ignoreEOF(err)
	}
	s, err := host.Start(ctx, &host.Options{CLI: &claude.Options{Cwd: dir, Transport: &claudetest.FakeCLI{Script: edit}}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	d, _ := s.Send(ctx, "make it oat milk")
	d.Wait(ctx)

	changes, _ := s.Changes(ctx)
	for _, c := range changes {
		fmt.Printf("%s %s (%s) +%d -%d\n%s", c.Kind, c.Rel, c.Tools[0], c.Added, c.Removed, c.Diff)
	}
	s.RevertChanges(ctx, "notes.md")
	b, _ := os.ReadFile(notes)
	fmt.Printf("after revert: %q\n", b)
	// Output:
	// modified notes.md (Edit) +1 -1
	// --- a/notes.md
	// +++ b/notes.md
	// @@ -1,2 +1,2 @@
	//  # Notes
	// -milk
	// +oat milk
	// after revert: "# Notes\nmilk\n"
}
