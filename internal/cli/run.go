package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/host"
)

// listFlag is a flag that may be repeated, each value also split on
// commas outside parentheses ("Bash(git *),Read").
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }

func (l *listFlag) Set(v string) error {
	depth, start := 0, 0
	for i, c := range v {
		switch c {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				if s := strings.TrimSpace(v[start:i]); s != "" {
					*l = append(*l, s)
				}
				start = i + 1
			}
		}
	}
	if s := strings.TrimSpace(v[start:]); s != "" {
		*l = append(*l, s)
	}
	return nil
}

// repeatFlag is a flag that may be repeated, each value taken whole: a
// path or a JSON string may hold commas.
type repeatFlag []string

func (l *repeatFlag) String() string { return strings.Join(*l, " ") }

func (l *repeatFlag) Set(v string) error {
	*l = append(*l, v)
	return nil
}

// run is `tether run [flags] "prompt"`: an agent in the terminal.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("tether run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, `Usage: tether run [flags] "prompt"

Runs Claude Code on the prompt and shows the turn as it happens: text,
thinking, tool calls and their results, subagents, and a status line.
Permission requests, questions and MCP servers' forms are asked here;
Ctrl-C interrupts the turn, a second Ctrl-C quits. With -i the session
stays open for more prompts; there /diff shows the files the session changed since it
started, with their diffs, and /revert [path…] puts them back (all
without a path) after asking; with --prompt-suggestions the CLI's guess
at the next prompt shows after a turn, and an empty line sends it. The
CLI's environment (ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL, …) is passed
on.

Flags:
`)
		fs.PrintDefaults()
	}
	var (
		o                         claude.Options
		allow, deny               listFlag
		addDirs, mcpFiles         repeatFlag
		interactive, jsonOut, yes bool
		thinking                  string
		permMode                  string
	)
	fs.StringVar(&o.CLIPath, "cli", "", "the Claude Code CLI binary (default: $TETHER_CLI_PATH, PATH, the usual places)")
	fs.StringVar(&o.Model, "model", "", "the model, e.g. sonnet or claude-sonnet-4-5")
	fs.StringVar(&permMode, "permission-mode", "", strings.Join(host.PermissionModes, ", "))
	fs.Var(&allow, "allow", "permission rules to allow without asking, e.g. 'Bash(git *)' (repeatable, comma-separated)")
	fs.Var(&deny, "deny", "permission rules that always deny, e.g. WebFetch (repeatable, comma-separated)")
	fs.BoolVar(&yes, "yes", false, "unattended: allow every tool call, answer every question with its first option")
	fs.IntVar(&o.MaxTurns, "max-turns", 0, "stop after this many agent steps (0: no limit)")
	fs.Float64Var(&o.MaxBudgetUSD, "max-budget-usd", 0, "stop once the session has spent this many dollars (0: no budget)")
	fs.StringVar(&o.SystemPrompt, "system-prompt", "", "replace Claude Code's system prompt")
	fs.StringVar(&o.AppendSystemPrompt, "append-system-prompt", "", "add to the system prompt")
	fs.StringVar(&o.Cwd, "cwd", "", "the working directory (default: the current one)")
	fs.Var(&addDirs, "add-dir", "give tools access to another directory (repeatable)")
	fs.Var(&mcpFiles, "mcp-config", "an MCP configuration file or JSON string (repeatable)")
	fs.StringVar(&o.Resume, "resume", "", "continue the session with this id")
	fs.BoolVar(&o.Continue, "continue", false, "continue the most recent session in the working directory")
	fs.BoolVar(&interactive, "i", false, "interactive: keep the session open for follow-up prompts")
	fs.BoolVar(&o.PromptSuggestions, "prompt-suggestions", false, "with -i: after each turn (from the second on) have the CLI guess your next prompt, shown before the prompt; an empty line sends it. Each guess is one more model request, on the session's cost")
	fs.BoolVar(&jsonOut, "json", false, "write Tether's events as newline-delimited JSON, for scripts")
	fs.StringVar(&thinking, "thinking", "full", "how to show thinking: full, collapsed or hidden")
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		return 2
	}
	prompt := strings.Join(fs.Args(), " ")
	if prompt == "" && !interactive {
		fmt.Fprintln(stderr, `tether run: no prompt; usage: tether run [flags] "prompt" (or -i to type prompts)`)
		return 2
	}
	if o.PromptSuggestions && !interactive {
		fmt.Fprintln(stderr, "tether run: --prompt-suggestions needs -i: without it the run ends after one turn, before any suggestion")
		return 2
	}
	switch thinkingMode(thinking) {
	case thinkingFull, thinkingCollapsed, thinkingHidden:
	default:
		fmt.Fprintf(stderr, "tether run: --thinking %q: want full, collapsed or hidden\n", thinking)
		return 2
	}
	if err := checkModeFlag(permMode, host.PermissionModes); err != nil {
		fmt.Fprintf(stderr, "tether run: %v\n", err)
		return 2
	}
	o.PermissionMode = claude.PermissionMode(permMode)
	o.AllowedTools, o.DisallowedTools = allow, deny
	o.AddDirs, o.MCPConfig = addDirs, mcpFiles
	return runSession(ctx, loopConfig{
		opts:        host.Options{CLI: &o},
		prompt:      prompt,
		interactive: interactive,
		json:        jsonOut,
		yes:         yes,
		thinking:    thinkingMode(thinking),
	}, stdin, stdout, stderr)
}
