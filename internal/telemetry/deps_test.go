package telemetry_test

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// The libraries record through the OpenTelemetry and Prometheus APIs and
// link no exporter: a program importing them pays for gRPC, OTLP or the
// OpenTelemetry SDK only if it wires them itself (the tether command does,
// through package export). This holds the line: moving exporter set-up back
// beside the instruments fails here, naming the package that pulled it in.
func TestLibrariesLinkNoExporter(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	libs := []string{"claude", "claude/claudetest", "host", "serve", "cluster", "team", "internal/telemetry"}
	forbidden := []string{
		"google.golang.org/grpc",
		"go.opentelemetry.io/otel/exporters/",
		"go.opentelemetry.io/otel/sdk",
		"go.opentelemetry.io/proto/otlp",
		"github.com/tetherhq/tether/internal/telemetry/export",
		"github.com/prometheus/client_golang/prometheus/promhttp",
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	for _, lib := range libs {
		pkg := "github.com/tetherhq/tether/" + lib
		// Why each dependency is there: -deps lists them all, and for the
		// offender we ask which of its importers brought it.
		out, err := exec.CommandContext(ctx, "go", "list", "-deps", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		importers := map[string]string{}
		var deps []string
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			f := strings.Fields(line)
			if len(f) == 0 {
				continue
			}
			deps = append(deps, f[0])
			for _, imp := range f[1:] {
				if _, ok := importers[imp]; !ok {
					importers[imp] = f[0]
				}
			}
		}
		var bad []string
		for _, d := range deps {
			if forbiddenDep(d, forbidden) {
				bad = append(bad, d)
			}
		}
		if len(bad) > 0 {
			t.Errorf("%s links %d forbidden packages, e.g. %s (%s): exporters belong in the tether command, not in a library",
				lib, len(bad), bad[0], chain(bad[0], pkg, importers))
		}
	}
}

func forbiddenDep(d string, forbidden []string) bool {
	for _, f := range forbidden {
		if d == f || strings.HasSuffix(f, "/") && strings.HasPrefix(d, f) || strings.HasPrefix(d, f+"/") {
			return true
		}
	}
	return false
}

// chain is how root reaches d: "root <- a <- b <- d", read from the
// first importer go list showed for each package.
func chain(d, root string, importers map[string]string) string {
	path := []string{d}
	for p := d; p != root && len(path) < 20; {
		next, ok := importers[p]
		if !ok {
			break
		}
		path = append(path, next)
		p = next
	}
	for i, j := 0, len(path)-1; i < j; i, j = i+1, j-1 {
		path[i], path[j] = path[j], path[i]
	}
	return strings.Join(path, " -> ")
}
