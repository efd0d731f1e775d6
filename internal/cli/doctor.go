package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
	"github.com/tetherhq/tether/internal/proc"
)

// TestedCLIVersions are the CLI versions Tether's suite runs against, oldest
// first: the versions scripts/test.sh runs (a test keeps the two lists
// equal; scripts/adopt-cli.sh moves both). The doctor warns about a CLI
// newer than the last one, naming the command that adopts it.
var TestedCLIVersions = []string{"2.1.197", "2.1.336", "2.1.337"}

// check is one line of the doctor's report.
type check struct {
	name   string
	status checkStatus
	detail string
	more   []string // indented lines under the check
}

type checkStatus int

const (
	pass checkStatus = iota
	warn
	fail
)

func (s checkStatus) mark() string {
	return [...]string{"ok  ", "warn", "FAIL"}[s]
}

func doctor(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("tether doctor", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cliPath := fs.String("cli", "", "the Claude Code CLI to check (default: discovery)")
	timeout := fs.Duration("timeout", 90*time.Second, "how long the offline run may take")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	fmt.Fprintln(stdout, "tether doctor")
	var checks []check
	report := func(c check) {
		checks = append(checks, c)
		fmt.Fprintf(stdout, "  [%s] %s: %s\n", c.status.mark(), c.name, c.detail)
		for _, m := range c.more {
			fmt.Fprintf(stdout, "         %s\n", m)
		}
	}

	path, searched, err := proc.Find(*cliPath, os.Getenv)
	if err != nil {
		report(check{name: "CLI", status: fail,
			detail: "not found; install it with `npm install -g @anthropic-ai/claude-code`, or scripts/install-cli.sh " + claude.MinCLIVersion + " for the pinned version, or pass --cli",
			more:   append([]string{"searched:"}, searched...)})
		return summary(stdout, checks)
	}
	report(check{name: "CLI", status: pass, detail: path})
	report(versionCheck(ctx, path))
	report(authCheck(os.Getenv))
	report(offlineRun(ctx, path, *timeout))
	return summary(stdout, checks)
}

func versionCheck(ctx context.Context, path string) check {
	v, err := proc.Version(ctx, path)
	if err != nil {
		return check{name: "version", status: fail, detail: err.Error()}
	}
	c := check{name: "version", detail: fmt.Sprintf("%s (supported: %s and newer; tested: %s)", v, claude.MinCLIVersion, strings.Join(TestedCLIVersions, ", "))}
	newest := TestedCLIVersions[len(TestedCLIVersions)-1]
	switch {
	case proc.CompareVersions(v, claude.MinCLIVersion) < 0:
		c.status = fail
		c.detail = fmt.Sprintf("%s is older than the oldest supported, %s; update the CLI", v, claude.MinCLIVersion)
	case proc.CompareVersions(v, newest) > 0:
		// Not a failure: a newer CLI works (unknown messages and
		// requests are kept raw, or refused with an error), it is only
		// not proven yet. Adopting it is one command.
		c.status = warn
		c.detail += "; newer than any tested version: it should work (unknown messages are kept raw, unknown requests answered with an error), but it is not tested yet"
		c.more = []string{fmt.Sprintf("to test and adopt it, from a Tether checkout: scripts/adopt-cli.sh %s", v),
			"or pin a tested one: scripts/install-cli.sh " + newest}
	}
	return c
}

// authCheck says how the CLI would authenticate, never printing a secret.
func authCheck(getenv func(string) string) check {
	var found []string
	for _, k := range []string{"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN"} {
		if v := getenv(k); v != "" {
			found = append(found, fmt.Sprintf("$%s is set (%d characters)", k, len(v)))
		}
	}
	for _, k := range []string{"CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX", "CLAUDE_CODE_USE_FOUNDRY"} {
		if v := getenv(k); v != "" && v != "0" {
			found = append(found, fmt.Sprintf("$%s selects a cloud provider", k))
		}
	}
	if home := getenv("HOME"); home != "" {
		if _, err := os.Stat(filepath.Join(home, ".claude", ".credentials.json")); err == nil {
			found = append(found, "a login is stored in ~/.claude/.credentials.json")
		}
	}
	if len(found) == 0 {
		return check{name: "authentication", status: warn,
			detail: "none found: set ANTHROPIC_API_KEY or log in by running `claude` once (offline runs against a fake API still work)"}
	}
	return check{name: "authentication", status: pass, detail: strings.Join(found, "; ")}
}

// offlineRun runs one turn against Tether's fake Messages API, in a
// throw-away HOME, with nothing of the caller's environment but PATH.
func offlineRun(ctx context.Context, path string, timeout time.Duration) check {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	c := check{name: "offline run"}
	api := claudetest.NewMessagesServer(&claudetest.MessagesOptions{Replies: []*claudetest.Reply{claudetest.TextReply("doctor: all good")}})
	defer api.Close()
	home, err := os.MkdirTemp("", "tether-doctor-")
	if err != nil {
		c.status, c.detail = fail, err.Error()
		return c
	}
	defer os.RemoveAll(home)
	env := api.CLIEnv(home)
	env["PATH"] = os.Getenv("PATH")
	start := time.Now()
	var text string
	opts := &claude.Options{CLIPath: path, Cwd: home, Env: env, EnvOnly: true, SkipVersionCheck: true}
	for msg, err := range claude.Query(ctx, "ping", opts) {
		if err != nil {
			c.status, c.detail = fail, err.Error()
			var pe *claude.ProcessError
			if errors.As(err, &pe) {
				c.more = pe.Stderr
			}
			return c
		}
		if m, ok := msg.(*claude.AssistantMessage); ok {
			text += m.Text()
		}
	}
	if text != "doctor: all good" {
		c.status, c.detail = fail, fmt.Sprintf("the CLI answered %q, want %q", text, "doctor: all good")
		return c
	}
	c.detail = fmt.Sprintf("one turn through a fake Messages API in %s", time.Since(start).Round(10*time.Millisecond))
	return c
}

func summary(w io.Writer, checks []check) int {
	var fails, warns int
	for _, c := range checks {
		switch c.status {
		case fail:
			fails++
		case warn:
			warns++
		}
	}
	switch {
	case fails > 0:
		fmt.Fprintf(w, "%d check(s) failed.\n", fails)
		return 1
	case warns > 0:
		fmt.Fprintf(w, "All checks passed, %d with a warning.\n", warns)
	default:
		fmt.Fprintln(w, "All checks passed.")
	}
	return 0
}
