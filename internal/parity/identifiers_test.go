package parity

import (
	"strings"
	"testing"
)

// TestCheckIdentifiers: a covered Options or Query row that names an
// existing but wrong Go member fails; so do a rename the row does not
// use and a stale Renamed entry.
func TestCheckIdentifiers(t *testing.T) {
	row := func(section, name string, tether ...string) Row {
		return Row{Section: section, Name: name, Status: Covered, Tether: tether, Line: 1}
	}
	all := func(rows ...Row) []Row {
		// Every Renamed entry is used, so only the rows under test can fail.
		for k, v := range Renamed {
			sec, name, _ := strings.Cut(k, ".")
			s := SectionOptions
			if sec == "Query" {
				s = SectionQuery
			}
			rows = append(rows, row(s, name, v))
		}
		return rows
	}
	if p := CheckIdentifiers(all(row(SectionOptions, "maxBudgetUsd", "Options.MaxBudgetUSD"), row(SectionQuery, "setModel", "Session.SetModel"))); len(p) != 0 {
		t.Errorf("right names: %q", p)
	}
	for _, tc := range []struct {
		r    Row
		want string
	}{
		{row(SectionOptions, "fallbackModel", "Options.Model"), "names none of Options.FallbackModel"},
		{row(SectionQuery, "setModel", "Session.SetPermissionMode"), "names none of Session.SetModel"},
		{row(SectionOptions, "plugins", "Options.Skills"), "Renamed gives Options.PluginDirs"},
	} {
		var rows []Row
		for _, r := range all() {
			if r.Section != tc.r.Section || r.Name != tc.r.Name {
				rows = append(rows, r) // the row under test replaces the good one
			}
		}
		rows = append(rows, tc.r)
		p := CheckIdentifiers(rows)
		if len(p) != 1 || !strings.Contains(p[0], tc.want) {
			t.Errorf("%s: problems %q, want one with %q", tc.r.Name, p, tc.want)
		}
	}
	if p := CheckIdentifiers(nil); len(p) != len(Renamed) {
		t.Errorf("stale Renamed entries: %d problems, want %d", len(p), len(Renamed))
	}
}
