package claude_test

import (
	"context"
	"errors"
	"os/exec"
	"testing"
	"time"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
)

// TestRealCLISandboxFailsClosed: Options.Sandbox on a machine where the
// CLI's sandbox cannot start (no bubblewrap) ends the session with an
// error instead of running Bash unsandboxed; AllowUnsandboxedFallback
// lets it run.
func TestRealCLISandboxFailsClosed(t *testing.T) {
	if _, err := exec.LookPath("bwrap"); err == nil {
		t.Skip("bubblewrap is installed: the sandbox can start here, so failing closed cannot be shown")
	}
	for _, fallback := range []bool{false, true} {
		run := claudetest.NewRealRun(t, &claudetest.MessagesOptions{Replies: []*claudetest.Reply{claudetest.TextReply("ran")}})
		o := run.Options
		o.Sandbox = &claude.SandboxSettings{Enabled: true, AllowUnsandboxedFallback: fallback}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		var res *claude.ResultMessage
		var err error
		for m, e := range claude.Query(ctx, "hi", o) {
			if r, ok := m.(*claude.ResultMessage); ok {
				res = r
			}
			if e != nil {
				err = e
				break
			}
		}
		cancel()
		t.Logf("fallback %v: result %v, err %v", fallback, res != nil, err)
		if fallback {
			if err != nil || res == nil || res.Result != "ran" {
				t.Errorf("with AllowUnsandboxedFallback: result %+v, err %v", res, err)
			}
			continue
		}
		var pe *claude.ProcessError
		if !errors.As(err, &pe) || len(run.API.MessagesRequests()) != 0 {
			t.Errorf("sandbox unavailable: err = %v (want a *ProcessError), %d API requests (want 0)", err, len(run.API.MessagesRequests()))
		}
	}
}
