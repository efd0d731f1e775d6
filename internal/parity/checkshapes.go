package parity

import (
	"fmt"
	"slices"
	"strings"
)

// CheckShapes checks the table down to fields and parameters.
//
// Types: every object type the SDK declares needs a row. A covered row
// names Go struct types; each of the type's fields must then be the JSON
// name of a field of one of them (a json tag, so naming a wrong Go type
// fails), or have a row of its own, "Type.field": covered by the Go
// names given (a Go field named there must carry that JSON name),
// declined or a gap with a note. A declined type row declines all its
// fields at once, for the reason given.
//
// Parameters: every parameter of a Query method or an exported function
// whose row is covered must match, by name, a parameter of a Go function
// or method of that row (or a field of a struct parameter), or have a
// row "method(param)" of its own.
//
// Messages and built-in tools: a covered row must name the Go type the
// Types section gives its declared type, so a row pointing at an existing
// but wrong type fails.
func CheckShapes(sh *Shapes, rows []Row, goShapes *GoShapes) (problems []string, gaps []Row) {
	byName := map[string]map[string]Row{}
	for _, r := range rows {
		if byName[r.Section] == nil {
			byName[r.Section] = map[string]Row{}
		}
		if _, dup := byName[r.Section][r.Name]; !dup {
			byName[r.Section][r.Name] = r
		}
	}
	where := func(r Row) string { return fmt.Sprintf("line %d (%s: %s)", r.Line, r.Section, r.Name) }
	types := byName[SectionTypes]

	// Rows for names the SDK does not declare.
	for _, r := range rows {
		switch r.Section {
		case SectionTypes:
			t, f, isField := strings.Cut(r.Name, ".")
			fields, ok := sh.Types[t]
			switch {
			case !ok:
				problems = append(problems, fmt.Sprintf("%s: the SDK declares no object type %s (remove the row)", where(r), t))
			case isField && !slices.Contains(fields, f):
				problems = append(problems, fmt.Sprintf("%s: %s has no field %q (remove the row)", where(r), t, f))
			}
			if isField && r.Status == Covered {
				problems = append(problems, checkFieldJSON(r, f, goShapes)...)
			}
		case SectionParams:
			m, p, ok := splitParam(r.Name)
			if !ok {
				problems = append(problems, fmt.Sprintf("%s: write a parameter as method(param)", where(r)))
				continue
			}
			if ps, ok := sh.Params[m]; !ok || !slices.Contains(trimUnderscores(ps), p) {
				problems = append(problems, fmt.Sprintf("%s: the SDK declares no parameter %s of %s (remove the row)", where(r), p, m))
			}
		}
		if (r.Section == SectionTypes || r.Section == SectionParams) && r.Status == Gap {
			gaps = append(gaps, r)
		}
	}

	// Every type, and every field of a covered one.
	for _, t := range sortedKeys(sh.Types) {
		tr, ok := types[t]
		if !ok {
			problems = append(problems, fmt.Sprintf("%s: %s is not in the table; add a row: | `%s` | covered/declined/gap | `GoType` | note |", SectionTypes, t, t))
			continue
		}
		if tr.Status != Covered {
			continue
		}
		have := map[string]bool{}
		var structs []string
		for _, g := range tr.Tether {
			if js, ok := goShapes.JSON[g]; ok {
				structs = append(structs, g)
				for k := range js {
					have[k] = true
				}
			}
		}
		for _, f := range sh.Types[t] {
			if w, ok := WireNames[t+"."+f]; ok {
				if !have[w] {
					problems = append(problems, fmt.Sprintf("%s: %s.%s: no field of %s has the wire's JSON name %q (WireNames)", SectionTypes, t, f, strings.Join(structs, ", "), w))
				}
				continue
			}
			if fr, ok := types[t+"."+f]; ok && fr.Status == Gap && have[f] {
				problems = append(problems, fmt.Sprintf("%s: a gap no more: a field of %s has the JSON name %q (remove the row)", where(fr), strings.Join(structs, ", "), f))
			}
			if _, ok := types[t+"."+f]; ok || have[f] {
				continue
			}
			if len(structs) == 0 {
				problems = append(problems, fmt.Sprintf("%s: %s.%s: %s has no JSON fields (not a struct, nor a method building one), so each field needs a row: | `%s.%s` | covered/declined/gap | `Go.Name` | note |",
					SectionTypes, t, f, strings.Join(tr.Tether, ", "), t, f))
				continue
			}
			problems = append(problems, fmt.Sprintf("%s: %s.%s: no field of %s has the JSON name %q; add one, or a row: | `%s.%s` | covered/declined/gap | | note |",
				SectionTypes, t, f, strings.Join(structs, ", "), f, t, f))
		}
	}

	// Parameters.
	for _, m := range sortedKeys(sh.Params) {
		section, name := SectionFunctions, m
		if q, ok := strings.CutPrefix(m, "Query."); ok {
			section, name = SectionQuery, q
		}
		mr, ok := byName[section][name]
		if !ok || mr.Status != Covered {
			continue // the method's own row accounts for it
		}
		for _, p := range trimUnderscores(sh.Params[m]) {
			if _, ok := byName[SectionParams][m+"("+p+")"]; ok {
				continue
			}
			if paramMatches(p, mr.Tether, goShapes) {
				continue
			}
			problems = append(problems, fmt.Sprintf("%s: %s(%s): no parameter of %s is named %s (nor a field of a struct parameter); rename it, or add a row: | `%s(%s)` | covered/declined/gap | `Go.Name` | note |",
				SectionParams, m, p, strings.Join(mr.Tether, ", "), p, m, p))
		}
	}

	// Results: a covered method or function whose declared result is an
	// object type must have, among its row's Go names, one that returns
	// (or, for a struct field, holds) a Go type the Types section gives
	// that type. So a result type that drifts (void becoming an answer,
	// one type replacing another) fails until the Go API returns it.
	for _, m := range sortedKeys(sh.Results) {
		section, name := SectionFunctions, m
		if q, ok := strings.CutPrefix(m, "Query."); ok {
			section, name = SectionQuery, q
		}
		mr, ok := byName[section][name]
		if !ok || mr.Status != Covered {
			continue
		}
		for _, decl := range sh.Results[m] {
			tr, ok := types[decl]
			if !ok || tr.Status != Covered {
				continue // a missing or declined type row says it already
			}
			if returnsOneOf(mr.Tether, tr.Tether, goShapes) {
				continue
			}
			problems = append(problems, fmt.Sprintf("%s: the result of %s is %s (in Go %s), which none of %s returns; return it, or name the Go function or field that does",
				where(mr), m, decl, strings.Join(tr.Tether, ", "), strings.Join(mr.Tether, ", ")))
		}
	}

	// Messages and tools name the Go type of their declared type.
	check := func(section, name, decl string) {
		r, ok := byName[section][name]
		if !ok || r.Status != Covered {
			return
		}
		tr, ok := types[decl]
		if !ok || tr.Status != Covered {
			return
		}
		for _, g := range r.Tether {
			if slices.Contains(tr.Tether, g) {
				return
			}
		}
		problems = append(problems, fmt.Sprintf("%s: names none of %s, the Go types the Types section gives %s", where(r), strings.Join(tr.Tether, ", "), decl))
	}
	for _, name := range sortedKeys(sh.MessageTypes) {
		for _, decl := range sh.MessageTypes[name] {
			check(SectionMessages, name, decl)
		}
	}
	for _, section := range []string{SectionToolInputs, SectionToolOutputs} {
		for name := range byName[section] {
			check(section, name, name)
		}
	}
	return problems, gaps
}

// returnsOneOf reports whether one of the Go names returns one of the Go
// types: a function or method among its results, a struct field as its
// type, or the type itself named.
func returnsOneOf(goNames, goTypes []string, goShapes *GoShapes) bool {
	for _, g := range goNames {
		got := goShapes.Results[g]
		if ft, ok := goShapes.FieldType[g]; ok {
			got = append(got, ft)
		}
		got = append(got, g)
		for _, t := range got {
			if slices.Contains(goTypes, t) {
				return true
			}
		}
	}
	return false
}

// checkFieldJSON checks a covered "Type.field" row: a Go field it names
// must carry the JSON name field (names that are not struct fields,
// such as methods or Options fields, are not checked).
func checkFieldJSON(r Row, field string, goShapes *GoShapes) []string {
	var named []string
	for _, g := range r.Tether {
		if j, ok := goShapes.FieldJSON[g]; ok {
			if j == field {
				return nil
			}
			named = append(named, fmt.Sprintf("%s is %q", g, j))
		}
	}
	if len(named) == 0 {
		return nil
	}
	return []string{fmt.Sprintf("line %d (%s: %s): the JSON name of %s, not %q", r.Line, r.Section, r.Name, strings.Join(named, ", "), field)}
}

// splitParam splits "Query.setModel(model)" into the method and the
// parameter.
func splitParam(s string) (method, param string, ok bool) {
	m, rest, ok := strings.Cut(s, "(")
	if !ok || !strings.HasSuffix(rest, ")") {
		return "", "", false
	}
	return m, strings.TrimSuffix(rest, ")"), true
}

func trimUnderscores(ps []string) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = strings.TrimLeft(p, "_")
	}
	return out
}

// paramMatches reports whether a TypeScript parameter has a Go
// counterpart by name: a parameter of one of the Go functions named
// (case aside; "opts", "options" and "params" are one), or a field of a struct
// parameter of one, by Go or JSON name.
func paramMatches(p string, goNames []string, goShapes *GoShapes) bool {
	norm := func(s string) string {
		s = strings.ToLower(s)
		if s == "options" || s == "params" {
			return "opts"
		}
		return s
	}
	want := norm(p)
	for _, g := range goNames {
		for _, gp := range goShapes.Params[g] {
			if norm(gp.Name) == want {
				return true
			}
			prefix := gp.Type
			if i := strings.Index(g, "."); strings.HasPrefix(g, "host.") && i > 0 {
				prefix = "host." + gp.Type
			}
			if gp.Type == "" {
				continue
			}
			for k := range goShapes.Fields {
				if t, f, ok := strings.Cut(k, "."); ok && t == prefix && (norm(f) == want || goShapes.FieldJSON[k] == p) {
					return true
				}
			}
		}
	}
	return false
}
