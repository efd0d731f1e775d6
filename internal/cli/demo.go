package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
	"github.com/tetherhq/tether/host"
	"github.com/tetherhq/tether/internal/proc"
)

// The demo's scripted tool calls, by id.
const (
	demoBashID     = "toolu_demo_bash"
	demoMCPID      = "toolu_demo_words"
	demoQuestionID = "toolu_demo_question"
	demoMCPTool    = "mcp__demo__count_words"
	demoQuestion   = "Which part of Tether should you read next?"
	demoPrompt     = "Show me what Tether can do."
)

// demo is `tether demo`: the real CLI against the embedded fake Messages
// API, playing a scripted agent through every part of the flow.
func demo(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("tether demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, `Usage: tether demo [flags]

Runs the real Claude Code CLI offline, against Tether's fake Messages API,
with a scripted agent: it streams thinking and text, asks to run a Bash
command (answer y or n), calls an MCP tool written in Go (allowed by a Go
hook), asks you a question, and ends with the cost. No account needed.

Flags:
`)
		fs.PrintDefaults()
	}
	cliPath := fs.String("cli", "", "the Claude Code CLI (default: the pinned version in the cache, then discovery)")
	install := fs.Bool("install", false, "install the pinned CLI version into the cache first if it is missing")
	yes := fs.Bool("yes", false, "unattended: approve everything and pick the first option")
	thinking := fs.String("thinking", "full", "how to show thinking: full, collapsed or hidden")
	jsonOut := fs.Bool("json", false, "write Tether's events as newline-delimited JSON")
	inBrowser := fs.Bool("serve", false, "open the demo in the browser UI (tether serve) instead of the terminal")
	sf := addServeFlags(fs)
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		return 2
	}
	path, err := demoCLI(ctx, *cliPath, *install, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "tether demo: %v\n", err)
		return 1
	}

	api := claudetest.NewMessagesServer(&claudetest.MessagesOptions{Respond: demoAgent})
	defer api.Close() // after the session below has closed its CLI
	home, err := os.MkdirTemp("", "tether-demo-home-")
	if err != nil {
		fmt.Fprintf(stderr, "tether demo: %v\n", err)
		return 1
	}
	defer os.RemoveAll(home)
	work, err := os.MkdirTemp("", "tether-demo-work-")
	if err != nil {
		fmt.Fprintf(stderr, "tether demo: %v\n", err)
		return 1
	}
	defer os.RemoveAll(work)
	env := api.CLIEnv(home)
	env["PATH"] = os.Getenv("PATH")

	notes := make(chan string)
	srv := mcp.NewServer(&mcp.Implementation{Name: "demo", Version: claude.Version}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "count_words", Description: "Count the words of a text"}, countWords)
	hook := func(ctx context.Context, in *claude.HookInput) (*claude.HookOutput, error) {
		tool := ""
		if e, ok := in.Event.(*claude.PreToolUseHookInput); ok {
			tool = e.ToolName
		}
		select {
		case notes <- fmt.Sprintf("hook PreToolUse (Go): allowed %s without asking", tool):
		case <-ctx.Done():
		}
		return &claude.HookOutput{Event: &claude.PreToolUseHookOutput{
			PermissionDecision:       claude.HookPermissionDecisionAllow,
			PermissionDecisionReason: "the demo's own Go tool is always allowed",
		}}, nil
	}
	o := &claude.Options{
		CLIPath: path,
		Cwd:     work,
		Env:     env,
		EnvOnly: true, // nothing of this shell's environment (no credentials) reaches the CLI
		MCPServers: map[string]claude.MCPServerConfig{
			"demo": claude.SDKServer(srv),
		},
		Hooks: map[claude.HookEvent][]claude.HookMatcher{
			claude.HookEventPreToolUse: {{Matcher: demoMCPTool, Hooks: []claude.HookFunc{hook}}},
		},
	}
	if *inBrowser {
		return serveDemo(ctx, sf, o, notes, api.URL, stdout, stderr)
	}
	if !*jsonOut {
		fmt.Fprintf(stdout, "tether demo: the real CLI (%s)\n  against a fake Messages API at %s — offline, no account.\n\n", path, api.URL)
		fmt.Fprintf(stdout, "you: %s\n", demoPrompt)
	}
	return runSession(ctx, loopConfig{
		opts:     host.Options{CLI: o},
		prompt:   demoPrompt,
		json:     *jsonOut,
		yes:      *yes,
		thinking: thinkingMode(*thinking),
		notes:    notes,
	}, stdin, stdout, stderr)
}

type wordsIn struct {
	Text string `json:"text" jsonschema:"the text to count the words of"`
}

type wordsOut struct {
	Words int `json:"words"`
}

// countWords is the demo's MCP tool: plain Go, typed input and output.
func countWords(ctx context.Context, req *mcp.CallToolRequest, in wordsIn) (*mcp.CallToolResult, wordsOut, error) {
	return nil, wordsOut{Words: len(strings.Fields(in.Text))}, nil
}

// demoAgent is the scripted model: each step answers the tool result the
// last one asked for.
func demoAgent(r *claudetest.Request) *claudetest.Reply {
	p := r.Params
	slow := func(blocks ...claudetest.ContentBlock) *claudetest.Reply {
		return &claudetest.Reply{Content: blocks, ChunkSize: 6, EventDelay: 12 * time.Millisecond}
	}
	switch {
	case p.ToolResult(demoQuestionID) != nil:
		answer := resultText(p.ToolResult(demoQuestionID))
		return slow(claudetest.TextBlock(fmt.Sprintf("Thanks! (%s.) That was the whole flow: streaming, a permission prompt, "+
			"an MCP tool in Go, a hook, and a question, all through the real CLI. Goodbye!", strings.TrimRight(truncate(answer, 160), "."))))
	case p.ToolResult(demoMCPID) != nil:
		got := resultText(p.ToolResult(demoMCPID))
		return slow(
			claudetest.TextBlock(fmt.Sprintf("The Go tool answered %s. One last thing:", got)),
			claudetest.ToolUseBlock(demoQuestionID, "AskUserQuestion", map[string]any{"questions": []any{map[string]any{
				"question": demoQuestion, "header": "Next", "multiSelect": false,
				"options": []any{
					map[string]any{"label": "claude", "description": "the library: Query, Session, permissions, MCP"},
					map[string]any{"label": "host", "description": "liveness, approvals and costs for UIs"},
					map[string]any{"label": "claudetest", "description": "the fake CLI and the fake Messages API"},
				},
			}}}),
		)
	case p.ToolResult(demoBashID) != nil:
		tr := p.ToolResult(demoBashID)
		said := "The shell said: " + strings.TrimSpace(resultText(tr)) + "."
		if tr.IsError {
			said = "No shell then (" + truncate(strings.TrimSpace(resultText(tr)), 120) + ")."
		}
		return slow(
			claudetest.TextBlock(said+" Next, a tool written in Go that runs inside tether itself:"),
			claudetest.ToolUseBlock(demoMCPID, demoMCPTool, map[string]string{"text": "Tether drives Claude Code from Go"}),
		)
	}
	return slow(
		claudetest.ThinkingBlock("The user wants a tour. I will show a shell command first, so they see a permission prompt, "+
			"then the in-process MCP tool, then ask them a question.", "sig-demo"),
		claudetest.TextBlock("Hello! I am a scripted agent, played by Tether's fake Messages API, driving the real Claude Code CLI. "+
			"First, a shell command; you decide whether it runs."),
		claudetest.ToolUseBlock(demoBashID, "Bash", map[string]string{
			"command": "echo 'hello from the shell' > hello.txt && cat hello.txt", "description": "Write a file and show it",
		}),
	)
}

func resultText(b *claudetest.ContentBlock) string {
	var parts []string
	for _, c := range b.Content {
		parts = append(parts, c.Text)
	}
	return strings.Join(parts, " ")
}

// demoCLI finds the CLI for the demo: --cli, the pinned version in the
// cache, then the usual discovery; with install, it installs the pinned
// version when none is found.
func demoCLI(ctx context.Context, flagPath string, install bool, stderr io.Writer) (string, error) {
	if flagPath != "" {
		path, _, err := proc.Find(flagPath, os.Getenv)
		return path, err
	}
	if path, err := claudetest.FindCLI(""); err == nil {
		return path, nil
	}
	if path, _, err := proc.Find("", os.Getenv); err == nil && !install {
		return path, nil
	}
	version := claudetest.CLIVersion()
	if !install {
		return "", fmt.Errorf("the Claude Code CLI is not installed; run `tether demo --install` to install version %s into %s, "+
			"or scripts/install-cli.sh %s from the repository, or `npm install -g @anthropic-ai/claude-code`", version, cacheDirOr(), version)
	}
	if err := installCLI(ctx, version, stderr); err != nil {
		return "", err
	}
	path, err := claudetest.FindCLI(version)
	if err != nil {
		return "", errors.Join(errors.New("installed, but still not found"), err)
	}
	return path, nil
}

func cacheDirOr() string {
	d, err := claudetest.CLICacheDir()
	if err != nil {
		return "the cache"
	}
	return d
}
