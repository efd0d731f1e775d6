package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const module = "github.com/tetherhq/tether"

func canned(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

const exceptions = `# reviewed incompatible SDK changes
./claude.(*Session).SetMaxThinkingTokens: changed from func(context.Context, int, ThinkingDisplay) error to func(context.Context, int, ...ThinkingDisplay) error # every call compiles
`

const changelog = `# Changelog

## [0.7.0] - Unreleased

### Changed
- ` + "`serve.NewToken`" + ` returns bytes. ` + "`cluster.SessionInfo`" + ` is now host.SessionInfo.
- serve.Server.Close is gone; package cluster/clustertest moved.

## [0.6.0] - 2026-11-25
- serve.Other
`

func run(t *testing.T, report, oldV, newV, exc, log string) (bool, string) {
	t.Helper()
	var out strings.Builder
	ok := Check(&Input{Module: module, Report: report, OldVersion: oldV, NewVersion: newV,
		Exceptions: strings.Split(exc, "\n"), ChangelogMD: log}, &out)
	return ok, out.String()
}

// The break that started it all: f95a7ed's new parameter stopped every
// caller compiling. The check fails on it.
func TestSDKBreakFails(t *testing.T) {
	for _, f := range []string{"sdk-break.txt", "claudetest-break.txt"} {
		ok, out := run(t, canned(t, f), "0.6.0", "0.7.0", exceptions, changelog)
		if ok || !strings.Contains(out, "Go 1 promise") {
			t.Errorf("%s: ok %v\n%s", f, ok, out)
		}
	}
}

// A reviewed exception lets exactly its message through; the same file
// without the line fails; a line with no reason is refused.
func TestReviewedException(t *testing.T) {
	if ok, out := run(t, canned(t, "reviewed.txt"), "0.6.0", "0.7.0", exceptions, changelog); !ok || !strings.Contains(out, "every call compiles") {
		t.Errorf("with the exception: ok %v\n%s", ok, out)
	}
	if ok, out := run(t, canned(t, "reviewed.txt"), "0.6.0", "0.7.0", "", changelog); ok {
		t.Errorf("without the exception: ok\n%s", out)
	}
	noReason := strings.ReplaceAll(exceptions, " # every call compiles", "")
	if ok, out := run(t, canned(t, "reviewed.txt"), "0.6.0", "0.7.0", noReason, changelog); ok || !strings.Contains(out, "no reason") {
		t.Errorf("no reason: ok %v\n%s", ok, out)
	}
}

// host, serve, cluster and team may change shape in a new minor version
// whose changelog section names each change; not in a patch release, and
// not unnamed.
func TestShapeChangesNeedMinorAndChangelog(t *testing.T) {
	report := canned(t, "shape.txt")
	if ok, out := run(t, report, "0.6.0", "0.7.0", exceptions, changelog); !ok {
		t.Errorf("new minor, named: failed\n%s", out)
	}
	if ok, out := run(t, report, "0.7.0", "0.7.1", exceptions, strings.Replace(changelog, "[0.7.0]", "[0.7.1]", 1)); ok || !strings.Contains(out, "needs a new minor version") {
		t.Errorf("patch release: ok %v\n%s", ok, out)
	}
	unnamed := strings.Replace(changelog, "`serve.NewToken` returns bytes.", "A token function returns bytes.", 1)
	if ok, out := run(t, report, "0.6.0", "0.7.0", exceptions, unnamed); ok || !strings.Contains(out, "must name serve.NewToken") || strings.Count(out, "FAIL") != 1 {
		t.Errorf("unnamed: ok %v\n%s", ok, out)
	}
	// A name in another version's section does not count.
	if ok, out := run(t, "Incompatible changes:\n- ./serve.Other: removed\n", "0.6.0", "0.7.0", exceptions, changelog); ok {
		t.Errorf("named in 0.6.0 only: ok\n%s", out)
	}
}

func TestVersionRules(t *testing.T) {
	if ok, out := run(t, "", "0.6.0", "0.8.0", exceptions, changelog); ok || !strings.Contains(out, `no section "## [0.8.0]"`) {
		t.Errorf("no section: ok %v\n%s", ok, out)
	}
	if ok, out := run(t, "", "0.8.0", "0.7.0", exceptions, changelog); ok || !strings.Contains(out, "older than") {
		t.Errorf("backwards: ok %v\n%s", ok, out)
	}
	if ok, out := run(t, "", "0.6.0", "v0.7", exceptions, changelog); ok {
		t.Errorf("not semver: ok\n%s", out)
	}
	if ok, out := run(t, "Compatible changes:\n- ./host.X: added\n", "0.7.0", "0.7.0", exceptions, changelog); !ok {
		t.Errorf("compatible only: failed\n%s", out)
	}
}

func TestParseChange(t *testing.T) {
	for _, c := range []struct{ msg, pkg, name string }{
		{"./claude.(*Session).SetMaxThinkingTokens: changed", "claude", "Session.SetMaxThinkingTokens"},
		{"./claude/claudetest.TextBlock: removed", "claude/claudetest", "TextBlock"},
		{"./serve.SessionInfo.Agent: removed", "serve", "SessionInfo.Agent"},
		{"./cluster/clustertest.(Fleet).Stop: removed", "cluster/clustertest", "Fleet.Stop"},
		{"package github.com/tetherhq/tether/cluster/clustertest: removed", "cluster/clustertest", ""},
	} {
		got, err := parseChange(module, c.msg)
		if err != nil || got.Pkg != c.pkg || got.Name != c.name {
			t.Errorf("%q: %+v, %v", c.msg, got, err)
		}
	}
	if _, err := parseChange(module, "gibberish"); err == nil {
		t.Error("gibberish parsed")
	}
}

// The tree's own files hold the rules' inputs: claude.Version is a
// version, CHANGELOG.md has its section, and every exception has a reason.
func TestTreeIsConsistent(t *testing.T) {
	v, err := sdkVersion("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ParseSemver(v); err != nil {
		t.Fatal(err)
	}
	log, err := os.ReadFile("../../CHANGELOG.md")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := Section(string(log), v); !ok {
		t.Errorf("CHANGELOG.md has no section for claude.Version %s", v)
	}
	exc, err := os.ReadFile("../../compat/api-exceptions.txt")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ParseExceptions(strings.Split(string(exc), "\n")); err != nil {
		t.Error(err)
	}
}

// The release version's own constant changes value every release: that
// is not a break.
func TestVersionValueChangeIsTheRelease(t *testing.T) {
	report := "Incompatible changes:\n- ./claude.Version: value changed from \"0.6.0\" to \"0.7.0\"\n"
	if ok, out := run(t, report, "0.6.0", "0.7.0", exceptions, changelog); !ok {
		t.Errorf("failed\n%s", out)
	}
	report = "Incompatible changes:\n- ./claude.MinCLIVersion: value changed from \"2.1.197\" to \"2.1.330\"\n"
	if ok, out := run(t, report, "0.6.0", "0.7.0", exceptions, changelog); ok {
		t.Errorf("another constant: ok\n%s", out)
	}
}

// Commands, scripts, examples and deploy/ are packages apidiff lists but
// no program imports.
func TestNotAPIPackagesIgnored(t *testing.T) {
	report := "Incompatible changes:\n- package github.com/tetherhq/tether/scripts/benchhost: removed\n- ./examples/quickstart.X: removed\n"
	if ok, out := run(t, report, "0.7.0", "0.7.0", exceptions, changelog); !ok {
		t.Errorf("failed\n%s", out)
	}
}
