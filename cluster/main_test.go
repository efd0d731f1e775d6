package cluster_test

import (
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/tetherhq/tether/claude/claudetest"
)

func TestMain(m *testing.M) {
	// This binary runs again as the fake CLI of the tether processes of
	// the compatibility tests (compat_test.go).
	claudetest.RunScriptIfChild(map[string]claudetest.Script{compatScript: memoryCLI})
	if role := os.Getenv(faultRoleEnv); role != "" {
		// This binary runs again as a NATS server or an agent of the fault
		// tests (fault_test.go), in a process of its own.
		os.Exit(runFaultRole(role))
	}
	goleak.VerifyTestMain(m)
}
