// Package cli is the logic of the tether command, kept out of package
// main so tests can drive it through Main with their own arguments,
// streams and context.
package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"strings"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/host"
)

// Main runs the tether command with args (without the program name) and
// returns its exit code: 0 for success, 1 for a failure, 2 for a usage
// error, 130 when Ctrl-C ended it. Main handles SIGINT itself (run and
// demo interrupt the turn on the first and quit on the second), so the
// caller must not cancel ctx on it.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	switch args[0] {
	case "run":
		return run(ctx, args[1:], stdin, stdout, stderr)
	case "demo":
		return demo(ctx, args[1:], stdin, stdout, stderr)
	case "agent":
		return agentCmd(ctx, args[1:], stdout, stderr)
	case "serve":
		return serveCmd(ctx, args[1:], stdout, stderr)
	case "audit":
		return auditCmd(ctx, args[1:], stdout, stderr)
	case "doctor":
		ctx, stop := signal.NotifyContext(ctx, os.Interrupt)
		defer stop()
		return doctor(ctx, args[1:], stdout, stderr)
	case "version", "-version", "--version":
		fmt.Fprintln(stdout, versionLine())
		return 0
	case "help", "-h", "-help", "--help":
		usage(stdout)
		return 0
	default:
		fmt.Fprintf(stderr, "tether: unknown command %q\n\n", args[0])
		usage(stderr)
		return 2
	}
}

// versionLine is what `tether version` prints, on one line so that scripts
// read the version as its second word (scripts/build-image.sh does): the
// release, the CLI versions it supports and was tested with, and the Go
// that built it.
func versionLine() string {
	return fmt.Sprintf("tether %s (Claude Code CLI %s and newer; tested with %s; built with %s)",
		claude.Version, claude.MinCLIVersion, strings.Join(TestedCLIVersions, ", "), runtime.Version())
}

func usage(w io.Writer) {
	fmt.Fprint(w, `Usage: tether <command> [flags]

Commands:
  run       run Claude Code on a prompt in the terminal: streaming, approvals, Ctrl-C
  demo      the whole flow offline, against a fake Messages API: no account needed
  serve     Claude Code in the browser: sessions, approvals, streaming, from this machine
  agent     run sessions for a cluster of machines over NATS (see docs/cluster.md)
  audit     print a team's audit log: who signed in, started, shared, prompted, approved
  doctor    check the Claude Code CLI, its version, authentication, and an offline run
  version   print Tether's version (also --version)
  help      show this help

Run "tether <command> -h" for a command's flags.
`)
}

// checkModeFlag refuses a --permission-mode the CLI does not know ("" is
// the default), before anything starts: the CLI would end at start with
// its own words, or a session would be refused later. run, serve and
// agent share it; offered is the modes the refusal names (the command's
// own: agent takes no bypassPermissions default).
func checkModeFlag(mode string, offered []string) error {
	if host.CheckPermissionMode(mode, true) != nil {
		return fmt.Errorf("--permission-mode %q: want one of %s", mode, strings.Join(offered, ", "))
	}
	return nil
}
