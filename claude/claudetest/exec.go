package claudetest

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/tetherhq/tether/claude"
)

// EnvScript names the script a re-executed test binary runs as a fake CLI.
const EnvScript = "TETHER_FAKE_CLI_SCRIPT"

// RunScriptIfChild makes a test binary double as a fake CLI subprocess.
// Call it first thing in TestMain, with every script the tests use:
//
//	func TestMain(m *testing.M) {
//		claudetest.RunScriptIfChild(map[string]claudetest.Script{"echo": claudetest.Echo})
//		os.Exit(m.Run())
//	}
//
// When the binary was started by ExecOptions, it plays the named script on
// its stdin and stdout and exits (1 with the error on stderr if the script
// failed); otherwise it returns at once. The CLI flags the session passes
// are available to the script in CLI.Launch.Args.
func RunScriptIfChild(scripts map[string]Script) {
	name, ok := os.LookupEnv(EnvScript)
	if !ok {
		return
	}
	script := scripts[name]
	if script == nil {
		fmt.Fprintf(os.Stderr, "claudetest: no script named %q\n", name)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	l := &claude.Launch{Path: os.Args[0], Args: os.Args[1:], Env: os.Environ()}
	c := newCLI(os.Stdin, os.Stdout, l)
	err := script(ctx, c)
	c.stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(0)
}

// ExecOptions returns options that run the named script (registered with
// RunScriptIfChild) in a re-executed copy of the running test binary: a
// real subprocess, with real pipes, signals and exit codes, and no CLI.
func ExecOptions(script string) *claude.Options {
	exe, err := os.Executable()
	if err != nil {
		exe = os.Args[0]
	}
	return &claude.Options{
		CLIPath:          exe,
		SkipVersionCheck: true,
		Env:              map[string]string{EnvScript: script},
	}
}
