package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/internal/parity"
)

func recorded(t *testing.T, version, initialize string, lines ...string) *recording {
	t.Helper()
	r := &recording{version: version, initialize: []byte(initialize)}
	for _, l := range lines {
		m, err := claude.DecodeMessage([]byte(l))
		if err != nil {
			t.Fatal(err)
		}
		r.lines = append(r.lines, m)
	}
	return r
}

// TestReport: fields the Go types lack are listed where they were seen;
// against a baseline, only what the new CLI added counts as new, and the
// exit status says whether there was any.
func TestReport(t *testing.T) {
	known := &parity.GoShapes{}
	if err := parity.ReadGoShapes("../../claude", "", known); err != nil {
		t.Fatal(err)
	}
	base := recorded(t, "1.0.0", `{"pid":1,"old_key":true}`,
		`{"type":"system","subtype":"init","session_id":"s","cwd":"/","old_init":1}`)
	next := recorded(t, "1.0.1", `{"pid":1,"old_key":true,"new_key":"x"}`,
		`{"type":"system","subtype":"init","session_id":"s","cwd":"/","old_init":1}`,
		`{"type":"system","subtype":"brand_new","session_id":"s"}`,
		`{"type":"result","subtype":"success","is_error":false,"session_id":"s","new_result_key":2}`,
		`{"type":"user","message":{"role":"user","content":"hi"},"session_id":"s","new_user_key":3}`)
	var b bytes.Buffer
	if code := report(&b, next, base, known); code != 1 {
		t.Errorf("exit %d, want 1 (something new)", code)
	}
	out := b.String()
	newPart, bothPart, _ := strings.Cut(out, "Written by both")
	for _, want := range []string{"`new_key` (e.g. `\"x\"`)", "`brand_new`", "`new_result_key`", "`user` (`UserMessage`): `new_user_key`"} {
		if !strings.Contains(newPart, want) {
			t.Errorf("the new part lacks %s:\n%s", want, out)
		}
	}
	for _, want := range []string{"`old_key`", "`old_init`"} {
		if strings.Contains(newPart, want) || !strings.Contains(bothPart, want) {
			t.Errorf("%s should be listed as written by both:\n%s", want, out)
		}
	}
	if strings.Contains(out, "`pid`") || strings.Contains(out, "`cwd`") {
		t.Errorf("a typed field was listed:\n%s", out)
	}
	b.Reset()
	if code := report(&b, base, base, known); code != 0 || !strings.Contains(b.String(), "* none") {
		t.Errorf("against itself: exit %d:\n%s", code, b.String())
	}
}
