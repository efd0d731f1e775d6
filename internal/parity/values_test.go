package parity

import (
	"strings"
	"testing"
)

// TestCheckValues: a value the Go constants miss is named, and so is a
// union of Values that the declarations lost.
func TestCheckValues(t *testing.T) {
	sdk, err := ParseDecls(`export declare type PermissionDecisionClassification = 'user_temporary' | 'config';`)
	if err != nil {
		t.Fatal(err)
	}
	goValues := GoValues{"PermissionDecisionClass": {"user_temporary": true}}
	var hits []string
	for _, p := range CheckValues(sdk, goValues) {
		if strings.HasPrefix(p, "PermissionDecisionClassification") {
			hits = append(hits, p)
		}
	}
	if len(hits) != 1 || !strings.Contains(hits[0], `"config"`) {
		t.Errorf("problems for PermissionDecisionClassification: %q, want one naming \"config\"", hits)
	}
	if p := CheckValues(sdk, goValues); len(p) != len(Values) {
		t.Errorf("%d problems, want one per union of Values (%d): the others are not declared:\n%s", len(p), len(Values), strings.Join(p, "\n"))
	}
}

// TestReadGoValues reads package claude's typed string constants.
func TestReadGoValues(t *testing.T) {
	v := GoValues{}
	if err := ReadGoValues("../../claude", "", v); err != nil {
		t.Fatal(err)
	}
	if !v["PermissionDecisionClass"]["config"] || !v["PermissionMode"]["plan"] || v["PermissionMode"]["config"] {
		t.Errorf("read %v and %v", v["PermissionDecisionClass"], v["PermissionMode"])
	}
}
