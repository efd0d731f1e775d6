package host_test

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
	"github.com/tetherhq/tether/host"
	"github.com/tetherhq/tether/internal/syncbuf"
)

// TestRealCLIChanges: the real CLI reads and edits a file, writes a new
// one and deletes a third with Bash in a git repository; the session's
// changes are those three with their diffs, and reverting them all (the
// CLI's rewind_files first, with checkpointing on; then git for what it
// does not know of) puts the repository back as it was.
func TestRealCLIChanges(t *testing.T) {
	dir := gitRepo(t, map[string]string{"a.go": "package a\n\nfunc A() int { return 1 }\n", "b.txt": "bee\n"})
	a, b, n := filepath.Join(dir, "a.go"), filepath.Join(dir, "b.txt"), filepath.Join(dir, "new.txt")
	run := claudetest.NewRealRun(t, &claudetest.MessagesOptions{Replies: []*claudetest.Reply{
		claudetest.ToolUseReply("toolu_r", "Read", map[string]any{"file_path": a}),
		claudetest.ToolUseReply("toolu_e", "Edit", map[string]any{"file_path": a, "old_string": "return 1", "new_string": "return 2"}),
		claudetest.ToolUseReply("toolu_w", "Write", map[string]any{"file_path": n, "content": "fresh\n"}),
		claudetest.ToolUseReply("toolu_b", "Bash", map[string]any{"command": "rm b.txt", "description": "remove b"}),
		claudetest.TextReply("Done."),
	}})
	co := run.Options
	co.Transport = nil
	co.Cwd = dir
	co.EnableFileCheckpointing = true
	var logs syncbuf.Buffer
	co.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	co.CanUseTool = func(context.Context, *claude.ToolPermissionRequest) (claude.PermissionResult, error) {
		return &claude.PermissionAllow{}, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	s, err := host.Start(ctx, &host.Options{CLI: co})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	d, err := s.Send(ctx, "change the repository")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	run.CheckScripted(t)
	cs, err := s.Changes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []changeRow{
		{"a.go", "modified", []string{"Edit"}, 1, 1},
		{"new.txt", "created", []string{"Write"}, 1, 0},
		{"b.txt", "deleted", nil, 0, 1},
	}
	if diff := cmp.Diff(want, rows(cs)); diff != "" {
		t.Fatalf("changes (-want +got):\n%s", diff)
	}
	if !strings.Contains(cs[0].Diff, "+func A() int { return 2 }") {
		t.Errorf("a.go's diff:\n%s", cs[0].Diff)
	}
	got, err := s.RevertChanges(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 {
		t.Errorf("reverted %v", got)
	}
	if strings.Contains(logs.String(), "rewind_files did not apply") {
		t.Errorf("the CLI's rewind_files was not used:\n%s", logs.String())
	}
	if got := readFile(t, a); got != "package a\n\nfunc A() int { return 1 }\n" {
		t.Errorf("a.go: %q", got)
	}
	if got := readFile(t, b); got != "bee\n" {
		t.Errorf("b.txt: %q", got)
	}
	if _, err := os.Stat(n); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("new.txt: %v", err)
	}
	if cs, _ := s.Changes(ctx); len(cs) != 0 {
		t.Errorf("left after the revert: %+v", rows(cs))
	}
}
