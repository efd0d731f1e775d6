package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/host"
	"github.com/tetherhq/tether/serve"
)

// serveDemo is `tether demo --serve`: the offline demo (the real CLI,
// the fake Messages API, the scripted agent, the Go tool and hook) in
// the browser UI. One session is started and waits for a prompt.
func serveDemo(ctx context.Context, sf *serveFlags, o *claude.Options, notes <-chan string, apiURL string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	// The hook's notes are for the terminal; here nobody reads them.
	go func() {
		for {
			select {
			case <-notes:
			case <-ctx.Done():
				return
			}
		}
	}()
	fmt.Fprintf(stdout, "tether demo: the real CLI (%s)\n  against a fake Messages API at %s — offline, no account.\n", o.CLIPath, apiURL)
	lo := &serve.LocalOptions{Session: &host.Options{CLI: o}, DefaultCwd: o.Cwd}
	return runServe(ctx, sf, lo, func(string) {
		fmt.Fprintf(stdout, "  Open the link, press New session (or n), and type anything, e.g. %q.\n", demoPrompt)
	}, stdout, stderr)
}
