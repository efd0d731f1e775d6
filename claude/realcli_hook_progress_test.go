package claude_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
)

// TestRealCLIHookProgress: with IncludeHookEvents, a settings command hook
// that runs a while is reported as it runs: the CLI looks at its output
// every second and writes a hook_progress line when it changed, before
// the hook's hook_response. The hook prints a line and then waits for the
// test to release it, so the test acts on the state it sees, not on time.
func TestRealCLIHookProgress(t *testing.T) {
	t.Parallel()
	release := filepath.Join(t.TempDir(), "release")
	// Waits at most a minute, so a broken test cannot leave it behind.
	hook := `echo first-line; i=0; while [ ! -e ` + release + ` ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done; echo second-line`
	r := newRealSession(t, &claudetest.MessagesOptions{Replies: []*claudetest.Reply{claudetest.TextReply("done")}}, func(o *claude.Options) {
		o.IncludeHookEvents = true
		o.Settings = `{"hooks":{"UserPromptSubmit":[{"hooks":[{"type":"command","command":"` + hook + `"}]}]}}`
	})
	var progress *claude.HookProgressMessage
	var response *claude.HookResponseMessage
	msgs := turnWith(t, r.Ctx, r.S, "hi", func(m claude.Message) {
		switch m := m.(type) {
		case *claude.HookProgressMessage:
			if m.HookEvent == "UserPromptSubmit" && progress == nil {
				progress = m
				if err := os.WriteFile(release, nil, 0o600); err != nil {
					t.Fatal(err)
				}
			}
		case *claude.HookResponseMessage:
			if m.HookEvent == "UserPromptSubmit" {
				response = m
			}
		}
	})
	switch {
	case progress == nil:
		t.Fatalf("no hook_progress for UserPromptSubmit in %v", types(msgs))
	case !strings.Contains(progress.Stdout, "first-line") || strings.Contains(progress.Stdout, "second-line") || progress.HookID == "":
		t.Errorf("hook_progress = %+v, want the first line only, with the hook's id", progress)
	case response == nil:
		t.Errorf("no hook_response after the progress in %v", types(msgs))
	case response.HookID != progress.HookID || !strings.Contains(response.Stdout, "second-line"):
		t.Errorf("hook_response = %+v, want the same hook with both lines", response)
	}
}
