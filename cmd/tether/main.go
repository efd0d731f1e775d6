// Command tether is a terminal host for Claude Code: see `tether help`.
package main

import (
	"context"
	"os"

	"github.com/tetherhq/tether/internal/cli"
)

func main() {
	// Ctrl-C is handled inside: the first interrupts the turn, the second
	// quits, and the CLI is closed on the way out either way.
	os.Exit(cli.Main(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
