package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestAdoptCLIMovesPins runs scripts/adopt-cli.sh --pins on a copy of the
// files it edits: the oldest supported version stays, the newest two are
// the previous newest and the new one, the SDK follows, and
// docs/cli-versions.md names the version dropped from the tested set.
func TestAdoptCLIMovesPins(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	repo := filepath.Join("..", "..")
	dir := t.TempDir()
	files := []string{"scripts/adopt-cli.sh", "scripts/test.sh", "scripts/install-sdk.sh", "internal/cli/doctor.go",
		"internal/parity/parity_test.go", "internal/sdkgen/main.go", "README.md", "docs/parity.md", "docs/cli-versions.md"}
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(repo, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	oldest, mid, newest := TestedCLIVersions[0], TestedCLIVersions[len(TestedCLIVersions)-2], TestedCLIVersions[len(TestedCLIVersions)-1]
	cmd := exec.Command("bash", "scripts/adopt-cli.sh", "--pins", "9.9.9")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "SDK_VERSION=8.8.8", "TETHER_ADOPT_DIR="+t.TempDir())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("adopt-cli.sh --pins: %v\n%s", err, out)
	}
	read := func(f string) string {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	wantIn := map[string][]string{
		"scripts/test.sh":                {"versions=(" + oldest + " " + newest + " 9.9.9)", "scripts/install-sdk.sh 8.8.8 >/dev/null"},
		"scripts/install-sdk.sh":         {"set -- 8.8.8"},
		"internal/cli/doctor.go":         {`var TestedCLIVersions = []string{"` + oldest + `", "` + newest + `", "9.9.9"}`},
		"internal/parity/parity_test.go": {`const SDKVersion = "8.8.8"`, "(it bundles CLI 9.9.9)"},
		"internal/sdkgen/main.go":        {`const SDKVersion = "8.8.8"`},
		"README.md":                      {"again against " + newest + " and 9.9.9.", "the TypeScript SDK 8.8.8 "},
		"docs/parity.md":                 {"**8.8.8** (which bundles Claude Code CLI 9.9.9)", "on every pinned CLI version: " + oldest + ", " + newest + " and 9.9.9,"},
		"docs/cli-versions.md":           {"Tested set: **" + oldest + "** (the oldest supported), **" + newest + "** and **9.9.9** (the newest two).", "| " + mid + " |"},
	}
	for f, wants := range wantIn {
		got := read(f)
		for _, w := range wants {
			if !strings.Contains(got, w) {
				t.Errorf("%s lacks %q after the move", f, w)
			}
		}
	}
	if slices.Contains(TestedCLIVersions, "9.9.9") {
		t.Fatal("the test must not touch the repository's own files")
	}
}
