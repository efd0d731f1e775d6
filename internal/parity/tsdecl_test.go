package parity

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func fieldNames(x *resolver, n Node) []string {
	var out []string
	for _, f := range x.fields(n, true) {
		out = append(out, f.Name)
	}
	return out
}

func TestParseFixture(t *testing.T) {
	src, err := os.ReadFile("testdata/fixture.d.ts")
	if err != nil {
		t.Fatal(err)
	}
	f, err := ParseDecls(string(src))
	if err != nil {
		t.Fatal(err)
	}
	x := &resolver{f: f}
	got := fieldNames(x, f.Decls["Options"].Type)
	want := []string{"model", "quoted-name", "fixed", "callback", "method", "tools", "mapped", "tpl", "cond"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Options fields (-want +got):\n%s", diff)
	}
	var subs []string
	for _, m := range x.members(f.Decls["ReqInner"].Type) {
		subs = append(subs, x.literalField(m, "subtype")...)
	}
	if diff := cmp.Diff([]string{"a", "b", "c", "d"}, subs); diff != "" {
		t.Errorf("subtypes (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"subtype"}, fieldNames(x, &Ref{Name: "Omit", Args: []Node{&Ref{Name: "ReqC"}, &Literal{Value: "y"}}})); diff != "" {
		t.Errorf("Omit (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"interrupt", "value", "other"}, fieldNames(x, f.Decls["Query"].Type)); diff != "" {
		t.Errorf("Query members (-want +got):\n%s", diff)
	}
	if d := f.Decls["listThings"]; d == nil || d.Kind != "function" || !d.Exported {
		t.Errorf("listThings = %+v, want an exported function", d)
	}
	if d := f.Decls["hidden"]; d == nil || d.Exported {
		t.Errorf("hidden = %+v, want an unexported function", d)
	}
	if _, ok := f.Decls["Hidden"]; ok {
		t.Error("a class was read as a type")
	}
	if diff := cmp.Diff([]string{"A", "B"}, x.literals(f.Decls["Event"].Type)); diff != "" {
		t.Errorf("Event (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"a"}, fieldNames(x, f.Decls["Self"].Type)); diff != "" {
		t.Errorf("Self (-want +got):\n%s", diff)
	}
	x.members(f.Decls["Loop"].Type)
	// Declarations after the class and the namespace were still read.
	for _, name := range []string{"Query", "Other", "EVENTS", "Event"} {
		if f.Decls[name] == nil {
			t.Errorf("%s not read", name)
		}
	}
}

func TestParseDeepNesting(t *testing.T) {
	src := "type A = " + strings.Repeat("{ a: ", 10000) + "string" + strings.Repeat(" }", 10000) + ";"
	if _, err := ParseDecls(src); err == nil {
		t.Error("no error for 10000 levels of nesting")
	}
	src = "type A = " + strings.Repeat("(", 10000) + ";"
	if _, err := ParseDecls(src); err == nil {
		t.Error("no error for 10000 open parentheses")
	}
}

// FuzzParseDecls: any input parses or fails cleanly, and extraction on
// the result never panics.
func FuzzParseDecls(f *testing.F) {
	src, _ := os.ReadFile("testdata/fixture.d.ts")
	f.Add(string(src))
	f.Add("type A = { b: 'x' | `y${string}` ; c?(): void }")
	f.Add("declare class X { } interface Y extends Z<{[K in T]: U}> { a: B[] }")
	f.Add("type A = B; type B = A; type SDKMessage = A;")
	f.Fuzz(func(t *testing.T, src string) {
		fl, err := ParseDecls(src)
		if err != nil {
			return
		}
		x := &resolver{f: fl}
		for _, name := range fl.Order {
			d := fl.Decls[name]
			x.fields(d.Type, true)
			x.literals(d.Type)
			for _, m := range x.members(d.Type) {
				x.literalField(m, "type")
			}
		}
		Extract(fl, fl)
	})
}

func TestCheck(t *testing.T) {
	declared := Names{SectionOptions: {"model", "tools", "title"}}
	table := strings.Join([]string{
		"## Options",
		"| TypeScript | Status | Tether | Note |",
		"|---|---|---|---|",
		"| `model` | covered | `Options.Model` | |",
		"| `tools` | gap | | |",
		"| `stale` | declined | | gone \\| old |",
		"| `model` | covered | `Options.Model` | again |",
		"| `title` | covered | `Options.Nope` | |",
	}, "\n")
	rows, err := ReadTable(strings.NewReader(table))
	if err != nil {
		t.Fatal(err)
	}
	if rows[2].Note != "gone | old" {
		t.Errorf("escaped bar: note = %q", rows[2].Note)
	}
	problems, gaps := Check(declared, rows, GoNames{"Options.Model": true})
	for _, want := range []string{
		"tools): gap without a note",
		"stale): the SDK declares no such name",
		"model): listed again",
		"Tether name Options.Nope does not exist",
	} {
		if !slices.ContainsFunc(problems, func(p string) bool { return strings.Contains(p, want) }) {
			t.Errorf("no problem containing %q in %q", want, problems)
		}
	}
	if len(gaps) != 1 || gaps[0].Name != "tools" {
		t.Errorf("gaps = %+v", gaps)
	}
	// A declared name without a row.
	problems, _ = Check(Names{SectionOptions: {"model", "missing"}}, rows[:1], GoNames{"Options.Model": true})
	if len(problems) != 1 || !strings.Contains(problems[0], "missing is not in the table") {
		t.Errorf("problems = %q", problems)
	}
	if _, err := ReadTable(strings.NewReader("## Options\n| `a` | covered |\n")); err == nil {
		t.Error("a short row was accepted")
	}
}
