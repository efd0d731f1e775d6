package cluster_test

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if role := os.Getenv(faultRoleEnv); role != "" {
		// This binary runs again as a NATS server or an agent of the fault
		// tests (fault_test.go), in a process of its own.
		os.Exit(runFaultRole(role))
	}
	goleak.VerifyTestMain(m)
}
