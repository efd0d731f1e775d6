package cluster

import (
	"context"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestPeersDoNotImportEachOther: serve and cluster are peers over the
// session service (host.Backend); neither links the other, so a change in
// one cannot reach the other except through host.
func TestPeersDoNotImportEachOther(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	const mod = "github.com/tetherhq/tether/"
	for _, c := range [][2]string{{"cluster", "serve"}, {"serve", "cluster"}} {
		out, err := exec.CommandContext(ctx, "go", "list", "-deps", mod+c[0]).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", c[0], err)
		}
		if slices.Contains(strings.Fields(string(out)), mod+c[1]) {
			t.Errorf("%s links %s: peers meet only in host's session service", c[0], c[1])
		}
	}
}
