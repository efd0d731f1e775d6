package claude_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
	"github.com/tetherhq/tether/internal/proc"
)

// What CLI 2.1.336 added to the protocol, against the real CLI.

// TestRealCLIDecisionConfig2_1_336: an answer classed DecisionConfig
// (nobody was asked) is recorded by CLI 2.1.336 and later as decided by
// configuration, an allow as much as a deny, while an answer with no
// class is still recorded as a person's. Older CLIs take the class
// without complaint and record what they always did: the allowed tool
// runs and the denied one does not.
func TestRealCLIDecisionConfig2_1_336(t *testing.T) {
	run := claudetest.NewRealRun(t, &claudetest.MessagesOptions{Replies: []*claudetest.Reply{
		claudetest.ToolUseReply("toolu_auto_allow", "Bash", map[string]string{"command": "echo a > a.txt"}),
		claudetest.ToolUseReply("toolu_auto_deny", "Bash", map[string]string{"command": "echo b > b.txt"}),
		claudetest.ToolUseReply("toolu_person", "Bash", map[string]string{"command": "echo c > c.txt"}),
		claudetest.TextReply("done"),
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	run.Options.CanUseTool = func(ctx context.Context, r *claude.ToolPermissionRequest) (claude.PermissionResult, error) {
		switch r.ToolUseID {
		case "toolu_auto_allow":
			return &claude.PermissionAllow{DecisionClassification: claude.DecisionConfig}, nil
		case "toolu_auto_deny":
			return &claude.PermissionDeny{Message: "not by policy", DecisionClassification: claude.DecisionConfig}, nil
		}
		return &claude.PermissionAllow{}, nil
	}
	s, err := claude.Connect(ctx, run.Options)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	msgs := turnOf(t, ctx, s, "go")
	if r := result(t, msgs); r.IsError || r.Result != "done" {
		t.Fatalf("result %+v", r)
	}
	for name, want := range map[string]bool{"a.txt": true, "b.txt": false, "c.txt": true} {
		if _, err := os.Stat(filepath.Join(run.CLI.Dir, name)); (err == nil) != want {
			t.Errorf("%s: written %v, want %v", name, err == nil, want)
		}
	}
	got, err := run.CLI.PermissionSources()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"toolu_auto_allow": "config", "toolu_auto_deny": "config", "toolu_person": "user_temporary"}
	switch v := claudetest.CLIVersion(); {
	case proc.CompareVersions(v, "2.1.332") < 0:
		want = map[string]string{} // no record of the decisions
	case proc.CompareVersions(v, "2.1.336") < 0:
		want = map[string]string{"toolu_auto_allow": "user_temporary", "toolu_auto_deny": "user_reject", "toolu_person": "user_temporary"}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the CLI's record of who decided (-want +got):\n%s", diff)
	}
}
