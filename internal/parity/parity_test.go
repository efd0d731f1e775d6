package parity

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// SDKVersion is the pinned @anthropic-ai/claude-agent-sdk the table is
// checked against (it bundles CLI 2.1.337). scripts/test.sh installs it.
const SDKVersion = "0.3.337"

const tablePath = "../../docs/parity.md"

// goNames reads the exported names the table may refer to: package
// claude (unprefixed), claudetest and host.
func goNames(t *testing.T) GoNames {
	t.Helper()
	names := GoNames{}
	for _, p := range []struct{ dir, prefix string }{
		{"../../claude", ""},
		{"../../claude/claudetest", "claudetest."},
		{"../../host", "host."},
	} {
		if err := ReadGoNames(p.dir, p.prefix, names); err != nil {
			t.Fatalf("reading %s: %v", p.dir, err)
		}
	}
	return names
}

// goShapes reads the JSON fields and parameters of the same packages.
func goShapes(t *testing.T) *GoShapes {
	t.Helper()
	sh := &GoShapes{}
	for _, p := range []struct{ dir, prefix string }{
		{"../../claude", ""},
		{"../../claude/claudetest", "claudetest."},
		{"../../host", "host."},
	} {
		if err := ReadGoShapes(p.dir, p.prefix, sh); err != nil {
			t.Fatalf("reading %s: %v", p.dir, err)
		}
	}
	return sh
}

func readTable(t *testing.T) []Row {
	t.Helper()
	f, err := os.Open(tablePath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := ReadTable(f)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// loadSDK parses the pinned SDK's declarations and extracts its names
// and shapes.
func loadSDK(t *testing.T) (Names, *Shapes) {
	t.Helper()
	fs, ft := loadDecls(t)
	names, err := Extract(fs, ft)
	if err != nil {
		t.Fatal(err)
	}
	shapes, err := ExtractShapes(fs, ft)
	if err != nil {
		t.Fatal(err)
	}
	names[SectionTypes] = sortedKeys(shapes.Types)
	names[SectionParams] = nil
	for _, m := range sortedKeys(shapes.Params) {
		for _, p := range trimUnderscores(shapes.Params[m]) {
			names[SectionParams] = append(names[SectionParams], m+"("+p+")")
		}
	}
	return names, shapes
}

// loadDecls parses the pinned SDK's sdk.d.ts and sdk-tools.d.ts, or
// skips (fails under CI=true) when the package is not installed.
func loadDecls(t *testing.T) (sdk, tools *File) {
	t.Helper()
	dir := SDKDir(SDKVersion)
	src, err := os.ReadFile(filepath.Join(dir, "sdk.d.ts"))
	if err != nil {
		msg := fmt.Sprintf("the TypeScript SDK %s is not installed (%v); install it with: scripts/install-sdk.sh %s", SDKVersion, err, SDKVersion)
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	toolsSrc, err := os.ReadFile(filepath.Join(dir, "sdk-tools.d.ts"))
	if err != nil {
		t.Fatal(err)
	}
	if sdk, err = ParseDecls(string(src)); err != nil {
		t.Fatal(err)
	}
	if tools, err = ParseDecls(string(toolsSrc)); err != nil {
		t.Fatal(err)
	}
	return sdk, tools
}

// TestParityValues checks that every value of the string unions Tether names
// as constants (Values) has its constant.
func TestParityValues(t *testing.T) {
	sdk, _ := loadDecls(t)
	values := GoValues{}
	for _, p := range []struct{ dir, prefix string }{{"../../claude", ""}, {"../../host", "host."}} {
		if err := ReadGoValues(p.dir, p.prefix, values); err != nil {
			t.Fatalf("reading %s: %v", p.dir, err)
		}
	}
	for _, p := range CheckValues(sdk, values) {
		t.Error(p)
	}
}

// TestParityTable checks the table on its own, without the SDK: every row
// is well formed and every Tether name it gives exists.
func TestParityTable(t *testing.T) {
	rows := readTable(t)
	problems, _ := Check(nil, rows, goNames(t))
	problems = append(problems, CheckIdentifiers(rows)...)
	for _, p := range problems {
		t.Error(p)
	}
}

// TestParity checks that docs/parity.md lists every name the pinned SDK
// declares: an Options field, a Query method, a function, a control
// request, a message, a hook event or output field, a built-in tool's
// input or output; and, down to fields and parameters, every field of
// every object type and every parameter of every method and function
// (CheckShapes). It fails on a name or field the table misses, a row for
// a name the SDK does not declare, a Tether name that does not exist, a
// Go type whose JSON fields do not match, and on any gap: the table is
// strict, every row covered or declined.
func TestParity(t *testing.T) {
	declared, shapes := loadSDK(t)
	rows := readTable(t)
	problems, gaps := Check(declared, rows, goNames(t))
	p2, g2 := CheckShapes(shapes, rows, goShapes(t))
	problems, gaps = append(problems, p2...), append(gaps, g2...)
	for _, p := range problems {
		t.Error(p)
	}
	// Strict: a gap is a failure. Every name, field and parameter is
	// covered, or declined with its reason.
	seen := map[int]bool{} // Check and CheckShapes both report a Types gap
	for _, g := range gaps {
		if !seen[g.Line] {
			seen[g.Line] = true
			t.Errorf("line %d (%s: %s): a gap; cover it, or decline it with the reason", g.Line, g.Section, g.Name)
		}
	}
	count := map[string]map[Status]int{}
	for _, r := range rows {
		if count[r.Section] == nil {
			count[r.Section] = map[Status]int{}
		}
		count[r.Section][r.Status]++
	}
	var b strings.Builder
	fmt.Fprintf(&b, "parity with @anthropic-ai/claude-agent-sdk %s:\n", SDKVersion)
	for _, s := range Sections {
		c := count[s]
		fmt.Fprintf(&b, "  %-22s %4d names: %4d rows covered, %4d declined, %4d gaps\n", s, len(declared[s]), c[Covered], c[Declined], c[Gap])
	}
	if testing.Verbose() {
		b.WriteString("gaps:\n")
		for _, g := range gaps {
			fmt.Fprintf(&b, "  %s: %s — %s\n", g.Section, g.Name, g.Note)
		}
	}
	t.Log(b.String())
}
