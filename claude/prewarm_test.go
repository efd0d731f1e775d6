package claude_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/tetherhq/tether/claude"
)

// TestPrewarmNeedsNewerCLI: a CLI older than ClaimVersion, or one whose
// version is unknown (it might have ignored --await-claim), is not
// prewarmed: Prewarm returns a *CLIFeatureError for "Prewarm".
func TestPrewarmNeedsNewerCLI(t *testing.T) {
	ctx := testCtx(t)
	for _, v := range []string{"2.1.200", ""} {
		sp, err := claude.Prewarm(ctx, &claude.Options{Transport: versionedCLI(v)})
		var fe *claude.CLIFeatureError
		if !errors.Is(err, claude.ErrNeedsNewerCLI) || !errors.As(err, &fe) || fe.Option != "Prewarm" || fe.Needs != claude.ClaimVersion {
			if sp != nil {
				sp.Close()
			}
			t.Errorf("Prewarm on %q: err = %v, want a *CLIFeatureError for Prewarm", v, err)
		}
	}
	_, err := claude.Prewarm(ctx, &claude.Options{Transport: versionedCLI("2.1.330"), Resume: "x"})
	var ne *claude.NotClaimableError
	if !errors.As(err, &ne) || !slices.Equal(ne.Fields, []string{"Resume"}) {
		t.Errorf("Prewarm with Resume: err = %v, want a *NotClaimableError naming Resume", err)
	}
}

// TestClaimFor: the per-session fields become the claim; any other
// difference (a flag fixed at start, an environment variable the CLI
// reads while starting) is a *NotClaimableError naming it.
func TestClaimFor(t *testing.T) {
	stderr := func(string) {}
	tmpl := &claude.Options{CLIPath: "/x/claude", Env: map[string]string{"A": "1"}, Stderr: stderr, Model: "haiku"}
	want := *tmpl
	want.Cwd, want.Model, want.PermissionMode, want.AppendSystemPrompt = "/w", "sonnet", claude.PermissionModePlan, "more"
	want.Env = map[string]string{"A": "1", "CLAUDE_CODE_HOST_SESSION_ID": "h"}
	c, err := claude.ClaimFor(tmpl, &want)
	if err != nil {
		t.Fatal(err)
	}
	if c.Cwd != "/w" || c.Model != "sonnet" || c.PermissionMode != claude.PermissionModePlan || c.AppendSystemPrompt != "more" || c.Env["CLAUDE_CODE_HOST_SESSION_ID"] != "h" || len(c.Env) != 1 {
		t.Errorf("claim = %+v", c)
	}
	bad := want
	bad.IncludePartialMessages = true
	bad.Env = map[string]string{"A": "2"}
	bad.Stderr = func(string) { panic("other") }
	_, err = claude.ClaimFor(tmpl, &bad)
	var ne *claude.NotClaimableError
	if !errors.Is(err, claude.ErrNotClaimable) || !errors.As(err, &ne) || !slices.Equal(ne.Fields, []string{"IncludePartialMessages", "Stderr", "Env[A]"}) {
		t.Errorf("ClaimFor: err = %v, want IncludePartialMessages, Stderr, Env[A]", err)
	}
}
