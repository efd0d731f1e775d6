package claude_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
	"github.com/tetherhq/tether/internal/proc"
)

// TestPrewarmRealCLI prewarms the real CLI and claims it for a session
// in another folder with its own model, permission mode, appended system
// prompt and agents, then checks on the wire (the request the CLI sends
// to the Messages API, its init message) that the session runs there
// with those. 2.1.197 has no --await-claim: Prewarm returns the typed
// error.
func TestPrewarmRealCLI(t *testing.T) {
	run := claudetest.NewRealRun(t, nil)
	o := run.Options
	o.Cwd = t.TempDir() // the parking directory
	target := t.TempDir()
	if err := os.WriteFile(filepath.Join(target, "CLAUDE.md"), []byte("PROJECT-MARKER-7731"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	sp, err := claude.Prewarm(ctx, o)
	if proc.CompareVersions(claudetest.CLIVersion(), claude.ClaimVersion) < 0 {
		var fe *claude.CLIFeatureError
		if !errors.Is(err, claude.ErrNeedsNewerCLI) || !errors.As(err, &fe) || fe.Option != "Prewarm" {
			t.Fatalf("Prewarm on CLI %s: err = %v, want a *CLIFeatureError for Prewarm", claudetest.CLIVersion(), err)
		}
		return
	}
	if err != nil {
		t.Fatalf("Prewarm: %v", err)
	}
	defer sp.Close()
	s, err := sp.Claim(ctx, &claude.ClaimOptions{
		Cwd:                target,
		Model:              "claude-sonnet-4-5",
		PermissionMode:     claude.PermissionModeAcceptEdits,
		AppendSystemPrompt: "APPEND-MARKER-5521",
		Agents:             map[string]claude.AgentDefinition{"marker-reviewer": {Description: "Reviews AGENT-MARKER-9902", Prompt: "review"}},
	})
	if err != nil {
		t.Fatalf("Claim: %v", err)
	}
	defer s.Close()
	if _, err := sp.Claim(ctx, &claude.ClaimOptions{Cwd: target}); !errors.Is(err, claude.ErrSpareSpent) {
		t.Errorf("second Claim: err = %v, want ErrSpareSpent", err)
	}
	if got := s.Initialize().Agents; !hasAgent(got, "marker-reviewer") {
		t.Errorf("Initialize after the claim lists agents %v, want marker-reviewer", got)
	}
	if err := s.Send(ctx, "hi"); err != nil {
		t.Fatal(err)
	}
	var init *claude.InitMessage
	var res *claude.ResultMessage
	for m, err := range s.ReceiveTurn(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		switch m := m.(type) {
		case *claude.InitMessage:
			init = m
		case *claude.ResultMessage:
			res = m
		}
	}
	if res == nil || res.IsError {
		t.Fatalf("turn result = %+v", res)
	}
	want, _ := filepath.EvalSymlinks(target)
	if init == nil || init.Cwd != want {
		t.Fatalf("init message cwd = %v, want %s", init, want)
	}
	if init.PermissionMode != claude.PermissionModeAcceptEdits {
		t.Errorf("init permission mode = %q, want acceptEdits", init.PermissionMode)
	}
	reqs := run.API.MessagesRequests()
	if len(reqs) == 0 {
		t.Fatal("no Messages API request")
	}
	r := reqs[len(reqs)-1]
	body := string(r.Body)
	for _, marker := range []string{"PROJECT-MARKER-7731", "APPEND-MARKER-5521", "AGENT-MARKER-9902"} {
		if !strings.Contains(body, marker) {
			t.Errorf("the request lacks %s", marker)
		}
	}
	if r.Params.Model != "claude-sonnet-4-5" {
		t.Errorf("request model = %q, want the claimed claude-sonnet-4-5", r.Params.Model)
	}
	if strings.Contains(body, o.Cwd) {
		t.Errorf("the request still names the parking directory %s", o.Cwd)
	}
}

// TestPrewarmClaimRefusedRealCLI: a claim the CLI refuses (a folder that
// does not exist) is a *ClaimError with the CLI's reason, and the spare's
// CLI is gone.
func TestPrewarmClaimRefusedRealCLI(t *testing.T) {
	if proc.CompareVersions(claudetest.CLIVersion(), claude.ClaimVersion) < 0 {
		t.Skipf("CLI %s cannot be prewarmed (TestPrewarmRealCLI checks the error)", claudetest.CLIVersion())
	}
	run := claudetest.NewRealRun(t, nil)
	run.Options.Cwd = t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	sp, err := claude.Prewarm(ctx, run.Options)
	if err != nil {
		t.Fatalf("Prewarm: %v", err)
	}
	defer sp.Close()
	pid := sp.PID()
	_, err = sp.Claim(ctx, &claude.ClaimOptions{Cwd: filepath.Join(t.TempDir(), "missing")})
	var ce *claude.ClaimError
	if !errors.Is(err, claude.ErrClaimRefused) || !errors.As(err, &ce) || ce.Reason != "cwd_not_found" {
		t.Fatalf("Claim of a missing folder: err = %v, want a *ClaimError cwd_not_found", err)
	}
	select {
	case <-sp.Done():
	case <-ctx.Done():
		t.Fatal("the refused spare's session did not end")
	}
	if _, err := os.Stat(filepath.Join("/proc", strconv.Itoa(pid))); err == nil {
		t.Errorf("the refused spare's CLI (pid %d) is still running", pid)
	}
	_, err = sp.Claim(ctx, nil)
	if !errors.Is(err, claude.ErrSpareSpent) {
		t.Errorf("Claim after a refusal: err = %v, want ErrSpareSpent", err)
	}
}

func hasAgent(as []claude.AgentInfo, name string) bool {
	for _, a := range as {
		if a.Name == name {
			return true
		}
	}
	return false
}
