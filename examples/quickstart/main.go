// Command quickstart runs one Query against the real Claude Code CLI,
// offline: the CLI talks to claudetest's fake Messages API, which plays a
// short scripted agent (a Bash call, then an answer that quotes its
// output). It needs the CLI installed by scripts/install-cli.sh (or
// TETHER_CLI_PATH) and nothing else: no account, no network.
//
//	scripts/install-cli.sh 2.1.197 && go run ./examples/quickstart
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
)

func main() {
	if err := run(); err != nil {
		log.SetFlags(0)
		log.Fatal("quickstart: ", err)
	}
}

func run() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// The fake API answers the first request with a Bash call and the
	// second (which carries the command's output) with a summary.
	api := claudetest.NewMessagesServer(&claudetest.MessagesOptions{
		Respond: func(r *claudetest.Request) *claudetest.Reply {
			if tr := r.Params.ToolResult("toolu_quickstart"); tr != nil {
				out := ""
				if len(tr.Content) > 0 {
					out = tr.Content[0].Text
				}
				return claudetest.TextReply(fmt.Sprintf("The command printed %q. That is all for today.", out))
			}
			return claudetest.ToolUseReply("toolu_quickstart", "Bash", map[string]string{
				"command": "echo hello from $(uname -s) > greeting.txt && cat greeting.txt", "description": "Write and show a greeting",
			})
		},
	})
	defer api.Close()

	path, err := claudetest.FindCLI("")
	if err != nil {
		return err
	}
	home, err := os.MkdirTemp("", "tether-quickstart-home-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(home)
	work, err := os.MkdirTemp("", "tether-quickstart-work-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	env := api.CLIEnv(home)
	env["PATH"] = os.Getenv("PATH")

	opts := &claude.Options{
		CLIPath: path,
		Cwd:     work,
		Env:     env,
		EnvOnly: true, // nothing of this shell's environment reaches the CLI
		// The command writes a file, so the CLI asks before running it.
		CanUseTool: func(ctx context.Context, req *claude.ToolPermissionRequest) (claude.PermissionResult, error) {
			var in struct{ Command string }
			_ = json.Unmarshal(req.Input, &in)
			fmt.Printf("? allow %s: %s -> yes\n", req.ToolName, in.Command)
			return &claude.PermissionAllow{}, nil
		},
	}
	fmt.Printf("CLI: %s\nfake Messages API: %s\n\n", path, api.URL)
	for msg, err := range claude.Query(ctx, "Greet me from the shell.", opts) {
		if err != nil {
			return err
		}
		switch m := msg.(type) {
		case *claude.InitMessage:
			fmt.Printf("session %s, model %s, CLI %s\n", m.SessionID, m.Model, m.ClaudeCodeVersion)
		case *claude.AssistantMessage:
			for _, tu := range m.ToolUses() {
				fmt.Printf("> %s %s\n", tu.Name, tu.Input)
			}
			if t := m.Text(); t != "" {
				fmt.Println("claude:", t)
			}
		case *claude.UserMessage:
			for _, tr := range m.ToolResults() {
				fmt.Printf("< %s", tr.Text())
				if len(tr.Text()) > 0 && tr.Text()[len(tr.Text())-1] != '\n' {
					fmt.Println()
				}
			}
		case *claude.ResultMessage:
			fmt.Printf("\ndone: %d API round trips, %d ms, $%.4f (fake prices)\n", m.NumTurns, m.DurationMS, m.TotalCostUSD)
		}
	}
	return nil
}
