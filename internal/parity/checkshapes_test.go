package parity

import (
	"strings"
	"testing"
)

const shapesFixture = `
export declare type Agent = { type: 'agent'; description: string; prompt: string; memory?: string };
export declare type Base = { session_id: string };
export declare type Hooked = Base & { tool: string };
export interface Query { setModel(model?: string): Promise<void>; toggle(serverName: string, enabled: boolean): Promise<void>; }
declare type SDKControlRequestInner = never;
export declare type SDKMessage = Agent | Base;
export declare type AgentAlias = Agent;
`

func shapesFor(t *testing.T) (*Shapes, *GoShapes) {
	t.Helper()
	f, err := ParseDecls(shapesFixture)
	if err != nil {
		t.Fatal(err)
	}
	f.Decls["SDKControlRequestInner"].Type = &Union{}
	sh, err := ExtractShapes(f, &File{Decls: map[string]*Decl{}})
	if err != nil {
		t.Fatal(err)
	}
	gs := &GoShapes{}
	if err := ReadGoShapes("testdata/goshapes", "", gs); err != nil {
		t.Fatal(err)
	}
	return sh, gs
}

func TestExtractShapes(t *testing.T) {
	sh, _ := shapesFor(t)
	// The discriminant "type" and the inherited session_id are left out.
	for name, want := range map[string]string{"Agent": "description prompt memory", "Base": "session_id", "Hooked": "tool"} {
		if got := strings.Join(sh.Types[name], " "); got != want {
			t.Errorf("%s fields = %q, want %q", name, got, want)
		}
	}
	if got := strings.Join(sh.Params["Query.toggle"], " "); got != "serverName enabled" {
		t.Errorf("toggle params = %q", got)
	}
}

func TestCheckShapes(t *testing.T) {
	sh, gs := shapesFor(t)
	row := func(section, name string, st Status, tether ...string) Row {
		return Row{Section: section, Name: name, Status: st, Tether: tether, Note: "n"}
	}
	base := []Row{
		row(SectionTypes, "Base", Declined),
		row(SectionTypes, "Hooked", Declined),
		row(SectionQuery, "setModel", Covered, "Session.SetModel"),
		row(SectionQuery, "toggle", Covered, "Session.Toggle"),
		row(SectionParams, "Query.toggle(serverName)", Covered, "Session.Toggle"),
	}
	for _, tc := range []struct {
		name string
		rows []Row
		want []string // substrings of the problems, in any order; none = no problems
	}{
		{"a missing field is named", []Row{row(SectionTypes, "Agent", Covered, "Agent")},
			[]string{`Agent.memory: no field of Agent has the JSON name "memory"`}},
		{"a wrong Go type fails", []Row{row(SectionTypes, "Agent", Covered, "Other")},
			[]string{`Agent.description: no field of Other`, `Agent.prompt`, `Agent.memory`}},
		{"a field row accounts for it", []Row{row(SectionTypes, "Agent", Covered, "Agent"), row(SectionTypes, "Agent.memory", Gap)}, nil},
		{"a field row naming a Go field with another JSON name fails",
			[]Row{row(SectionTypes, "Agent", Covered, "Agent"), row(SectionTypes, "Agent.memory", Covered, "Agent.Prompt")},
			[]string{`the JSON name of Agent.Prompt is "prompt", not "memory"`}},
		{"a row for a field the SDK does not declare", []Row{row(SectionTypes, "Agent", Declined), row(SectionTypes, "Agent.nope", Gap)},
			[]string{`Agent has no field "nope"`}},
		{"a missing type row", nil, []string{"Types: Agent is not in the table"}},
		{"a message row naming a wrong Go type", []Row{row(SectionTypes, "Agent", Covered, "Agent"), row(SectionTypes, "Agent.memory", Gap), row(SectionMessages, "agent", Covered, "Other")},
			[]string{"names none of Agent"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			problems, _ := CheckShapes(sh, append(tc.rows, base...), gs)
			if len(tc.want) == 0 && len(problems) > 0 {
				t.Fatalf("problems: %q", problems)
			}
			for _, w := range tc.want {
				found := false
				for _, p := range problems {
					found = found || strings.Contains(p, w)
				}
				if !found {
					t.Errorf("no problem says %q; got %q", w, problems)
				}
			}
			if len(tc.want) > 0 && len(problems) != len(tc.want) {
				t.Errorf("%d problems, want %d: %q", len(problems), len(tc.want), problems)
			}
		})
	}
}

func TestCheckShapesParams(t *testing.T) {
	sh, gs := shapesFor(t)
	rows := []Row{
		{Section: SectionTypes, Name: "Agent", Status: Declined, Note: "n"},
		{Section: SectionTypes, Name: "Base", Status: Declined, Note: "n"},
		{Section: SectionTypes, Name: "Hooked", Status: Declined, Note: "n"},
		{Section: SectionQuery, Name: "setModel", Status: Covered, Tether: []string{"Session.SetModel"}},
		// toggle's Go method has "name", not serverName: a problem.
		{Section: SectionQuery, Name: "toggle", Status: Covered, Tether: []string{"Session.SetModel"}},
	}
	problems, _ := CheckShapes(sh, rows, gs)
	if len(problems) != 2 || !strings.Contains(problems[0], "Query.toggle(serverName)") || !strings.Contains(problems[1], "Query.toggle(enabled)") {
		t.Fatalf("problems = %q", problems)
	}
	rows[4].Tether = []string{"Session.Toggle"}
	rows = append(rows, Row{Section: SectionParams, Name: "Query.toggle(serverName)", Status: Covered, Tether: []string{"Session.Toggle"}})
	if problems, _ := CheckShapes(sh, rows, gs); len(problems) != 0 {
		t.Fatalf("problems = %q", problems)
	}
}

// TestGoShapesCodecs: a type's JSON names include those its JSON methods
// and decode functions write and read (wire structs, map keys), which
// its untagged fields do not show.
func TestGoShapesCodecs(t *testing.T) {
	_, gs := shapesFor(t)
	for _, name := range []string{"session_id", "memory", "extra", "tool"} {
		if !gs.JSON["Wired"][name] {
			t.Errorf("Wired has no JSON name %q: %v", name, gs.JSON["Wired"])
		}
	}
	if gs.JSON["Plain"]["session_id"] || !gs.JSON["Plain"]["SessionID"] {
		t.Errorf("Plain = %v, want only its Go field name", gs.JSON["Plain"])
	}
}

// TestCheckShapesResults: a covered method whose declared result is an
// object type must name a Go function returning (or a field holding) the
// Go type the Types section gives it. A result that drifts, from void to
// an answer as setPermissionMode's did in SDK 0.3.332, fails until the Go
// API returns it.
func TestCheckShapesResults(t *testing.T) {
	decls := func(result string) *Shapes {
		f, err := ParseDecls(`
export declare type ModeResponse = { mode?: string };
export interface Query { setMode(mode: string): ` + result + `; }
declare type SDKControlRequestInner = never;
export declare type SDKMessage = ModeResponse;
`)
		if err != nil {
			t.Fatal(err)
		}
		f.Decls["SDKControlRequestInner"].Type = &Union{}
		sh, err := ExtractShapes(f, &File{Decls: map[string]*Decl{}})
		if err != nil {
			t.Fatal(err)
		}
		return sh
	}
	_, gs := shapesFor(t)
	rows := func(tether ...string) []Row {
		return []Row{
			{Section: SectionTypes, Name: "ModeResponse", Status: Covered, Tether: []string{"ModeResult"}},
			{Section: SectionQuery, Name: "setMode", Status: Covered, Tether: tether},
		}
	}
	for _, tc := range []struct {
		name, result string
		tether       []string
		fails        bool
	}{
		{"void needs nothing", "Promise<void>", []string{"Session.SetMode"}, false},
		{"a drifted result fails", "Promise<ModeResponse | undefined>", []string{"Session.SetMode"}, true},
		{"returned by a method of the row", "Promise<ModeResponse | undefined>", []string{"Session.SetMode", "Session.SetModeWith"}, false},
		{"an array of it", "Promise<ModeResponse[]>", []string{"Session.SetModeWith"}, false},
		{"held by a field", "Promise<ModeResponse>", []string{"Session.SetMode", "Init.Last"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sh := decls(tc.result)
			problems, _ := CheckShapes(sh, rows(tc.tether...), gs)
			var hit []string
			for _, p := range problems {
				if strings.Contains(p, "the result of Query.setMode is ModeResponse (in Go ModeResult)") {
					hit = append(hit, p)
				}
			}
			if tc.fails != (len(hit) == 1) || len(problems) != len(hit) {
				t.Errorf("result %s, row %v: problems %q; want a result problem: %v", tc.result, tc.tether, problems, tc.fails)
			}
		})
	}
}
