package cli

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
	"github.com/tetherhq/tether/internal/proc"
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	if code == 0 {
		// regexp2 (chroma's lexers, highlighting Markdown code) keeps a
		// clock goroutine that ends by itself a second after its last
		// match: the library's, not a leak of ours.
		if err := goleak.Find(goleak.IgnoreAnyFunction("github.com/dlclark/regexp2.runClock")); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// tether runs Main and returns its exit code, stdout and stderr.
func tether(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Main(context.Background(), args, strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

func TestUsage(t *testing.T) {
	if code, _, stderr := tether(t); code != 2 || !strings.Contains(stderr, "Usage: tether") {
		t.Errorf("no args: %d, %q", code, stderr)
	}
	if code, _, stderr := tether(t, "frobnicate"); code != 2 || !strings.Contains(stderr, `unknown command "frobnicate"`) {
		t.Errorf("unknown command: %d, %q", code, stderr)
	}
	if code, stdout, _ := tether(t, "help"); code != 0 || !strings.Contains(stdout, "doctor") {
		t.Errorf("help: %d, %q", code, stdout)
	}
	if code, stdout, _ := tether(t, "version"); code != 0 || !strings.HasPrefix(stdout, "tether ") {
		t.Errorf("version: %d, %q", code, stdout)
	}
	// A mode the CLI does not know is refused before anything starts,
	// naming the ones it knows.
	if code, _, stderr := tether(t, "run", "--permission-mode", "auot", "hi"); code != 2 || !strings.Contains(stderr, `--permission-mode "auot": want one of default, acceptEdits, plan, dontAsk, auto, bypassPermissions`) {
		t.Errorf("run with an unknown mode: %d, %q", code, stderr)
	}
}

func TestRealCLIDoctor(t *testing.T) {
	path, err := claudetest.FindCLI("")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	const secret = "sk-test-doctor-do-not-print"
	t.Setenv("ANTHROPIC_API_KEY", secret)
	code, stdout, stderr := tether(t, "doctor", "--cli", path)
	if code != 0 {
		t.Fatalf("doctor exited %d:\n%s%s", code, stdout, stderr)
	}
	// The version line is ok for a tested CLI, and a warning naming the
	// adoption command for one newer than any tested (compat.sh and
	// adopt-cli.sh run this test on a release not pinned yet).
	version := "[ok  ] version: "
	if v, err := proc.Version(context.Background(), path); err == nil && proc.CompareVersions(v, TestedCLIVersions[len(TestedCLIVersions)-1]) > 0 {
		version = "scripts/adopt-cli.sh " + v
	}
	for _, want := range []string{"[ok  ] CLI: " + path, version, "[ok  ] authentication: $ANTHROPIC_API_KEY is set (27 characters)", "[ok  ] offline run: one turn"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("report lacks %q:\n%s", want, stdout)
		}
	}
	if strings.Contains(stdout+stderr, secret) {
		t.Error("doctor printed the API key")
	}
}

func TestDoctorMissingCLI(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "claude")
	code, stdout, _ := tether(t, "doctor", "--cli", missing)
	if code != 1 || !strings.Contains(stdout, "[FAIL] CLI: not found") || !strings.Contains(stdout, missing) {
		t.Errorf("doctor = %d:\n%s", code, stdout)
	}
}

func TestDoctorOldCLI(t *testing.T) {
	old := filepath.Join(t.TempDir(), "claude")
	if err := os.WriteFile(old, []byte("#!/bin/sh\necho '1.0.3 (Claude Code)'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	code, stdout, _ := tether(t, "doctor", "--cli", old, "--timeout", "20s")
	if code != 1 || !strings.Contains(stdout, "[FAIL] version: 1.0.3 is older") || !strings.Contains(stdout, "[FAIL] offline run") {
		t.Errorf("doctor = %d:\n%s", code, stdout)
	}
}

// TestDoctorVersionCheck: every version the suite runs against passes the
// version check without a warning; a version newer than the newest tested
// one warns, naming the tested versions.
func TestDoctorVersionCheck(t *testing.T) {
	fake := func(t *testing.T, version string) string {
		p := filepath.Join(t.TempDir(), "claude")
		if err := os.WriteFile(p, []byte("#!/bin/sh\necho '"+version+" (Claude Code)'\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tested := strings.Join(TestedCLIVersions, ", ")
	for _, v := range append([]string{"2.1.330"}, TestedCLIVersions...) {
		if c := versionCheck(context.Background(), fake(t, v)); c.status != pass || !strings.Contains(c.detail, "tested: "+tested) {
			t.Errorf("version check of %s = %+v, want ok naming the tested versions", v, c)
		}
	}
	// A newer CLI is a warning, not a failure, with what to run.
	c := versionCheck(context.Background(), fake(t, "2.1.999"))
	if c.status != warn || !strings.Contains(c.detail, "newer than any tested version") || !strings.Contains(strings.Join(c.more, "\n"), "scripts/adopt-cli.sh 2.1.999") {
		t.Errorf("version check of 2.1.999 = %+v, want a warning naming scripts/adopt-cli.sh 2.1.999", c)
	}
	code, stdout, _ := tether(t, "doctor", "--cli", fake(t, "2.1.999"), "--timeout", "20s")
	if !strings.Contains(stdout, "[warn] version: 2.1.999") || !strings.Contains(stdout, "scripts/adopt-cli.sh 2.1.999") {
		t.Errorf("doctor = %d:\n%s", code, stdout)
	}
}

// TestTestedVersionsMatchTestScript keeps the doctor's list in step with the
// versions scripts/test.sh runs the suite against, so that neither can
// gain a version alone.
func TestTestedVersionsMatchTestScript(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "scripts", "test.sh"))
	if err != nil {
		t.Fatal(err)
	}
	var script []string
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "versions=("); ok {
			script = strings.Fields(strings.TrimSuffix(strings.TrimSpace(rest), ")"))
			break
		}
	}
	if !slices.Equal(script, TestedCLIVersions) {
		t.Errorf("scripts/test.sh runs %q; TestedCLIVersions = %q", script, TestedCLIVersions)
	}
}

func TestAuthCheckNeverPrintsSecrets(t *testing.T) {
	env := map[string]string{"ANTHROPIC_AUTH_TOKEN": "tok-secret", "CLAUDE_CODE_USE_BEDROCK": "1", "HOME": t.TempDir()}
	c := authCheck(func(k string) string { return env[k] })
	if c.status != pass || strings.Contains(c.detail, "tok-secret") || !strings.Contains(c.detail, "ANTHROPIC_AUTH_TOKEN is set (10 characters)") || !strings.Contains(c.detail, "BEDROCK") {
		t.Errorf("auth check = %+v", c)
	}
	if c := authCheck(func(string) string { return "" }); c.status != warn {
		t.Errorf("no auth = %+v", c)
	}
}

// TestVersion: `tether version` and `tether --version` print the release
// (claude.Version, a semantic version) as the second word of one line,
// which scripts/build-image.sh reads, with the tested CLI versions.
func TestVersion(t *testing.T) {
	for _, arg := range []string{"version", "--version", "-version"} {
		var out, errb strings.Builder
		if code := Main(context.Background(), []string{arg}, strings.NewReader(""), &out, &errb); code != 0 {
			t.Fatalf("%s: exit %d, %s", arg, code, errb.String())
		}
		got := out.String()
		f := strings.Fields(got)
		if strings.Count(got, "\n") != 1 || len(f) < 2 || f[0] != "tether" || f[1] != claude.Version ||
			!strings.Contains(got, strings.Join(TestedCLIVersions, ", ")) {
			t.Errorf("%s printed %q", arg, got)
		}
	}
	if !regexp.MustCompile(`^\d+\.\d+\.\d+$`).MatchString(claude.Version) {
		t.Errorf("claude.Version %q is not major.minor.patch", claude.Version)
	}
}
