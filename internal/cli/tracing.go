package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/tetherhq/tether/internal/telemetry/export"
)

// traceFlushTimeout bounds the flush of buffered spans at exit: a
// collector out of reach must not hold the program.
const traceFlushTimeout = 5 * time.Second

// startTracing sets up the global tracer provider from the OTEL_
// environment for a long-running command (service is its service.name
// unless OTEL_SERVICE_NAME says otherwise). It returns the provider to
// hand to the libraries, nil when no OTEL_ variable asks for traces, and
// stop, which flushes what is buffered within traceFlushTimeout.
// Exporting errors go to stderr, at most one a minute.
func startTracing(ctx context.Context, service string, stderr io.Writer) (trace.TracerProvider, func(), error) {
	ts, err := export.SetupTracing(ctx, service, slog.New(slog.NewTextHandler(stderr, nil)))
	if err != nil {
		return nil, nil, err
	}
	stop := func() {
		sctx, cancel := context.WithTimeout(context.Background(), traceFlushTimeout)
		defer cancel()
		if err := ts.Shutdown(sctx); err != nil {
			fmt.Fprintf(stderr, "%s: flushing traces: %v\n", service, err)
		}
	}
	return ts.TracerProvider(), stop, nil
}
