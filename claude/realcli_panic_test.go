package claude_test

import (
	"context"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
)

func init() {
	addScenarios(scenario{
		name: "mcp_tool_panics",
		guards: "An in-process MCP tool handler that panics (on the MCP SDK's goroutine) must not kill the host: the " +
			"panic becomes an isError tool result carrying its message, the model sees it, and the session goes on " +
			"to a second turn.",
		api: func() *claudetest.MessagesOptions {
			return &claudetest.MessagesOptions{Replies: []*claudetest.Reply{
				claudetest.ToolUseReply("toolu_boom_1", "mcp__boom__boom", map[string]any{}),
				claudetest.TextReply("the tool panicked"),
				claudetest.TextReply("still here"),
			}}
		},
		opts: func(o *claude.Options) {
			srv := mcp.NewServer(&mcp.Implementation{Name: "boom", Version: "1.0.0"}, nil)
			mcp.AddTool(srv, &mcp.Tool{Name: "boom", Description: "Panics"},
				func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
					panic("kaboom in the tool")
				})
			o.MCPServers = map[string]claude.MCPServerConfig{"boom": claude.SDKServer(srv)}
			o.AllowedTools = []string{"mcp__boom"}
		},
		run: func(t *testing.T, h *harness) {
			msgs := h.turn(t, "call boom")
			tr := toolResultOf(msgs, "toolu_boom_1")
			if tr == nil || !tr.IsError || !strings.Contains(tr.Text(), "kaboom in the tool") {
				t.Fatalf("tool result = %+v; want isError with the panic", tr)
			}
			if r := result(t, msgs); r.IsError || r.Result != "the tool panicked" {
				t.Errorf("first result = %+v", r)
			}
			if h.Real() {
				reqs := h.API.MessagesRequests()
				if len(reqs) != 2 {
					t.Fatalf("the API got %d requests, want 2", len(reqs))
				}
				b := reqs[1].Params.ToolResult("toolu_boom_1")
				if b == nil || !b.IsError || !strings.Contains(claudetestText(b), "kaboom in the tool") {
					t.Errorf("tool_result sent to the API = %+v", b)
				}
			}
			msgs = h.turn(t, "again")
			if r := result(t, msgs); r.IsError || r.Result != "still here" {
				t.Errorf("second result = %+v", r)
			}
		},
	})
}
