package claude_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
)

// envStdioDeploy makes this test binary an MCP server on its stdin and
// stdout (newDeployServer), for the CLI to start as a stdio server:
// TestMain runs it instead of the tests.
const envStdioDeploy = "TETHER_TEST_MCP_STDIO_DEPLOY"

// serveDeployStdio serves newDeployServer over stdio until the CLI
// closes the pipe, then exits.
func serveDeployStdio() {
	srv := newDeployServer()
	// ask is pick written for MCP 2026-07-28 (multi round-trip requests):
	// it returns the form as an input request, and the call comes again
	// with the answer. The SDK asks an older client itself.
	mcp.AddTool(srv, &mcp.Tool{Name: "ask", Description: "Ask which environment"},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			if res, ok := req.Params.InputResponses["env"].(*mcp.ElicitResult); ok {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("asked: %s %v", res.Action, res.Content)}}}, nil, nil
			}
			return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"env": deployForm()}}, nil, nil
		})
	err := srv.Run(context.Background(), &mcp.StdioTransport{})
	if err != nil && !strings.Contains(err.Error(), "EOF") {
		os.Exit(1)
	}
	os.Exit(0)
}

// TestRealCLIMCPStdioElicitation: a tool of an external stdio server (a
// process the CLI starts) asks the user for input; the CLI forwards the
// form to Options.OnElicitation and the answer reaches the tool, on
// every pinned CLI, as a remote server's does
// (TestRealCLIMCPRemoteElicitation), when the tool asks the way MCP
// 2026-07-28 wants (an input request in its result, the call repeated
// with the answer). A tool that sends elicitation/create in the middle of
// its call is answered by 2.1.197 only: the newer CLIs speak 2026-07-28
// to stdio servers, where the Go SDK refuses to send it.
func TestRealCLIMCPStdioElicitation(t *testing.T) {
	t.Parallel()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var asked elicitRecorder
	r := newMCPRun(t, []*claudetest.Reply{
		claudetest.TextReply("hi"),
		claudetest.ToolUseReply("toolu_pick", "mcp__deploy__pick", map[string]any{}),
		claudetest.ToolUseReply("toolu_ask", "mcp__deploy__ask", map[string]any{}),
		claudetest.TextReply("deployed"),
	}, func(o *claude.Options) {
		o.MCPServers = map[string]claude.MCPServerConfig{"deploy": &claude.MCPStdioServer{Command: self, Env: map[string]string{envStdioDeploy: "1"}}}
		o.AllowedTools = []string{"mcp__deploy"}
		o.OnElicitation = asked.answer
	})
	turnOf(t, r.Ctx, r.S, "hello")
	waitMCPConnected(t, r.Ctx, r.S, "deploy")
	msgs := turnOf(t, r.Ctx, r.S, "deploy it")

	text := func(id string) string { return toolResultText(msgs, id) }
	if got := text("toolu_ask"); !strings.Contains(got, "asked: accept map[env:staging]") {
		t.Errorf("ask's result = %s, want the form's answer", got)
	}
	// pick sends elicitation/create in the middle of its call, which MCP
	// 2026-07-28 no longer allows: CLI 2.1.336 and later speak it to a
	// stdio server, and the Go SDK refuses to send the request.
	wantAsked := 2
	if got := text("toolu_pick"); r.atLeast("2.1.336") {
		if !strings.Contains(got, "protocol version 2026-07-28") {
			t.Errorf("CLI %s: pick's result = %s, want the SDK's refusal under MCP 2026-07-28", r.Version, got)
		}
		wantAsked = 1
	} else if !strings.Contains(got, "accept map[env:staging]") {
		t.Errorf("CLI %s: pick's result = %s, want the form's answer", r.Version, got)
	}
	all := asked.all()
	if len(all) != wantAsked {
		t.Errorf("CLI %s: %d elicitations, want %d", r.Version, len(all), wantAsked)
	}
	for _, a := range all {
		if !isDeployForm(a) {
			t.Errorf("elicitation = %+v", a)
		}
	}
}
