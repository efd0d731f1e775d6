package main

import (
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/tetherhq/tether/claude/claudetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The quickstart must keep working: run it against the pinned CLI.
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
