// Command tether is a terminal host for Claude Code: see `tether help`.
package main

import (
	"context"
	"os"
	"os/signal"

	"github.com/tetherhq/tether/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := cli.Main(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
