package host_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
	"github.com/tetherhq/tether/host"
	"github.com/tetherhq/tether/internal/proc"
)

// TestRealCLIPolicyAnswersRecorded: a session's automatic policy allows
// one call and leaves the next to a person, who allows it too. CLI
// 2.1.336 and later record the first as decided by the host's
// configuration (claude.DecisionConfig), the second as a person's; older
// CLIs record both as a person's, as they always did.
func TestRealCLIPolicyAnswersRecorded(t *testing.T) {
	run := claudetest.NewRealRun(t, &claudetest.MessagesOptions{Replies: []*claudetest.Reply{
		claudetest.ToolUseReply("toolu_policy", "Bash", map[string]string{"command": "echo p > p.txt"}),
		claudetest.ToolUseReply("toolu_person", "Bash", map[string]string{"command": "echo q > q.txt"}),
		claudetest.TextReply("done"),
	}})
	co := run.Options
	co.CanUseTool = func(_ context.Context, req *claude.ToolPermissionRequest) (claude.PermissionResult, error) {
		if strings.Contains(string(req.Input), "p.txt") {
			return &claude.PermissionAllow{}, nil
		}
		return nil, nil // a person decides
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := host.Start(ctx, &host.Options{CLI: co})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	l := watchStates(ctx, s)
	d, err := s.Send(ctx, "go")
	if err != nil {
		t.Fatal(err)
	}
	// The policy's call is listed too while it decides; the person
	// answers the other.
	a := l.waitFor(t, ctx, "the approval of q.txt", func(v host.Liveness) bool {
		return v.State == host.StateAwaitingApproval && strings.Contains(string(v.Approval.Request.Input), "q.txt")
	}).Approval
	if err := a.Allow(); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := run.CLI.PermissionSources()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"toolu_policy": "config", "toolu_person": "user_temporary"}
	switch v := claudetest.CLIVersion(); {
	case proc.CompareVersions(v, "2.1.332") < 0:
		want = map[string]string{}
	case proc.CompareVersions(v, "2.1.336") < 0:
		want["toolu_policy"] = "user_temporary"
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the CLI's record of who decided (-want +got):\n%s", diff)
	}
}
