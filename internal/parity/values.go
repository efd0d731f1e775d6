package parity

import (
	"fmt"
	"go/ast"
	"go/token"
	"slices"
	"strings"
)

// A value added to a string union the SDK declares (0.3.336 added
// "config" to PermissionDecisionClassification) adds no declaration, so
// the name lists Extract compares see nothing new. Tether names the
// values of the unions below as Go constants; CheckValues fails when one
// of them has a value no constant names.

// Values maps a string union of sdk.d.ts to the Go string type whose
// constants carry its values ("host." in front for package host).
var Values = map[string]string{
	"EffortLevel":                      "Effort",
	"HookEvent":                        "HookEvent",
	"HookPermissionDecision":           "HookPermissionDecision",
	"PermissionBehavior":               "PermissionBehavior",
	"PermissionDecisionClassification": "PermissionDecisionClass",
	"PermissionMode":                   "PermissionMode",
	"PermissionUpdateDestination":      "PermissionUpdateDestination",
	"SdkBeta":                          "Beta",
	"SessionStoreFlush":                "SessionStoreFlush",
	"SettingSource":                    "SettingSource",
	"TerminalReason":                   "TerminalReason",
}

// GoValues maps a Go string type ("PermissionMode", "host.EventKind") to
// the values of the exported constants declared with that type.
type GoValues map[string]map[string]bool

// ReadGoValues adds the typed string constants of the package in dir
// (test files excluded) to into, type names prefixed with prefix.
func ReadGoValues(dir, prefix string, into GoValues) error {
	files, err := parseDir(dir)
	if err != nil {
		return err
	}
	for _, f := range files {
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, s := range g.Specs {
				v := s.(*ast.ValueSpec)
				typ, ok := v.Type.(*ast.Ident)
				if !ok {
					continue
				}
				for i, n := range v.Names {
					if !n.IsExported() || i >= len(v.Values) {
						continue
					}
					if lit, ok := stringLit(v.Values[i]); ok {
						k := prefix + typ.Name
						if into[k] == nil {
							into[k] = map[string]bool{}
						}
						into[k][lit] = true
					}
				}
			}
		}
	}
	return nil
}

// CheckValues reports each value of a union in Values that no constant
// of its Go type names, and each union in Values that sdk does not
// declare as a union of string literals (renamed or reshaped: look at
// it, and update Values).
func CheckValues(sdk *File, goValues GoValues) (problems []string) {
	x := &resolver{f: sdk}
	for _, union := range sortedKeys(Values) {
		goType := Values[union]
		d := sdk.Decls[union]
		var lits []string
		if d != nil {
			lits = x.literals(d.Type)
		}
		if len(lits) == 0 {
			problems = append(problems, fmt.Sprintf("%s: sdk.d.ts declares no union of strings by that name; update Values in internal/parity/values.go", union))
			continue
		}
		var missing []string
		for _, l := range lits {
			if !goValues[goType][l] {
				missing = append(missing, fmt.Sprintf("%q", l))
			}
		}
		if len(missing) > 0 {
			slices.Sort(missing)
			problems = append(problems, fmt.Sprintf("%s has %s, which no %s constant names: add one", union, strings.Join(missing, ", "), goType))
		}
	}
	return problems
}
