package main

import (
	"os"
	"testing"

	"github.com/tetherhq/tether/claude/claudetest"
)

// The README's first command must keep working: run the quickstart
// against the pinned CLI.
func TestRealCLIQuickstart(t *testing.T) {
	if _, err := claudetest.FindCLI(""); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(err)
		}
		t.Skipf("%v", err)
	}
	if err := run(); err != nil {
		t.Fatal(err)
	}
}
