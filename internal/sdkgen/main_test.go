package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tetherhq/tether/internal/parity"
)

// sdkDir returns the pinned SDK's directory, or skips (fails under
// CI=true) when it is not installed, as the parity test does.
func sdkDir(t *testing.T) string {
	t.Helper()
	dir := parity.SDKDir(SDKVersion)
	v, err := packageVersion(dir)
	switch {
	case err != nil:
		msg := fmt.Sprintf("the TypeScript SDK %s is not installed (%v); install it with: scripts/install-sdk.sh %s", SDKVersion, err, SDKVersion)
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	case v != SDKVersion:
		// TETHER_SDK_PATH points at another SDK, for the parity test:
		// the generated files are not from it.
		t.Skipf("TETHER_SDK_PATH holds SDK %s; the generated files are from %s", v, SDKVersion)
	}
	return dir
}

// TestGeneratedFilesUpToDate regenerates the files in memory and fails
// when the committed ones differ: edit the mapping tables, not the
// generated files, and run go generate ./claude.
func TestGeneratedFilesUpToDate(t *testing.T) {
	files, notes, err := generate(sdkDir(t), SDKVersion)
	if err != nil {
		t.Fatal(err)
	}
	// Notes mean the tables and the declarations disagree: a field or
	// tool without documentation, or a table entry for nothing.
	for _, n := range notes {
		t.Errorf("sdkgen: %s", n)
	}
	for name, want := range files {
		have, err := os.ReadFile(filepath.Join("../../claude", name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(have, want) {
			t.Errorf("claude/%s is stale: run go generate ./claude", name)
		}
	}
}

// TestNewDeclarationsGenerate feeds the generator declarations the
// tables know nothing of, as a new SDK release would bring: a new tool
// and a new field are typed with derived names, and noted.
func TestNewDeclarationsGenerate(t *testing.T) {
	src := `export type ToolInputSchemas = BashInput | FrobnicateInput | ToolOutputSchemas;
export type ToolOutputSchemas = FrobnicateOutput;
export interface BashInput { command: string; timeout?: number; description?: string; run_in_background?: boolean; dangerouslyDisableSandbox?: boolean; sandbox_profile_id?: string; }
export interface FrobnicateInput { target_url: string; level?: "low" | "high"; steps?: { name: string }[]; extra?: { [k: string]: unknown }; }
export interface FrobnicateOutput { doneAtMs: number; }
`
	decls, err := parity.ParseDecls(src)
	if err != nil {
		t.Fatal(err)
	}
	g := newGenerator(decls, inputSpecs)
	in, err := g.toolInputs()
	if err != nil {
		t.Fatal(err)
	}
	if len(g.errs) > 0 {
		t.Fatal(g.errs)
	}
	out, err := source("test", "inputs", in)
	if err != nil {
		t.Fatal(err)
	}
	// Compared with runs of spaces as one, gofmt's alignment aside.
	for _, want := range []string{
		"SandboxProfileID string `json:\"sandbox_profile_id,omitempty\"`",
		"type FrobnicateInput struct",
		"TargetURL string `json:\"target_url\"`",
		"Steps []FrobnicateInputSteps `json:\"steps,omitempty\"`",
		"type FrobnicateInputSteps struct",
		"Extra json.RawMessage `json:\"extra,omitempty\"`",
		`"Frobnicate": func() ToolInput { return new(FrobnicateInput) }`,
	} {
		if !strings.Contains(strings.Join(strings.Fields(string(out)), " "), want) {
			t.Errorf("generated source lacks %s:\n%s", want, out)
		}
	}
	if !strings.Contains(strings.Join(g.notes, "\n"), `FrobnicateInput: not in the mapping; generated as FrobnicateInput for the tool "Frobnicate"`) {
		t.Errorf("no note on the new tool; notes:\n%s", strings.Join(g.notes, "\n"))
	}
}
