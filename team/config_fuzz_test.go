package team_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/tetherhq/tether/team"
)

// FuzzParseConfig: whatever the file holds, ParseConfig returns a
// configuration or a *ConfigError whose line, when it names one, is a
// line of the file; it never panics.
func FuzzParseConfig(f *testing.F) {
	for _, s := range []string{
		sampleConfig, "", "{}", "people: 7", "policies: {member: {modes: [yolo]}}", "default_role: ruler",
		"people:\n  - email: a@b\n    role: admin\n  - email: A@B\n", "audit: {retention: forever}",
		"a: &x [1, *x]", "isolation: [auto]", "groups: {eng: {role: member, extra: 1}}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := team.ParseConfig(b)
		if err == nil {
			if c == nil {
				t.Fatal("no configuration and no error")
			}
			return
		}
		var ce *team.ConfigError
		if !errors.As(err, &ce) {
			t.Fatalf("an error of type %T: %v", err, err)
		}
		if lines := bytes.Count(b, []byte("\n")) + 1; ce.Line < 0 || ce.Line > lines {
			t.Fatalf("line %d of a file of %d lines: %v", ce.Line, lines, err)
		}
	})
}
