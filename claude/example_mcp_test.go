package claude_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
)

// An in-process MCP server gives the model tools written in Go: typed
// arguments and results, schemas inferred from the Go types. The CLI
// reaches it through the session, so it needs no port and no process.
//
// Here the fake CLI plays both the CLI and the model: it connects to the
// server, calls mcp__calc__add and reports the result, as the real CLI
// would after the model asked for the tool.
func ExampleSDKServer() {
	type addArgs struct {
		A int `json:"a" jsonschema:"the first addend"`
		B int `json:"b" jsonschema:"the second addend"`
	}
	type sum struct {
		Sum int `json:"sum"`
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "calc", Version: "1.0.0"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "add", Description: "Add two integers"},
		func(ctx context.Context, req *mcp.CallToolRequest, in addArgs) (*mcp.CallToolResult, sum, error) {
			fmt.Printf("add(%d, %d) for %s\n", in.A, in.B, claude.ToolUseID(req))
			return nil, sum{in.A + in.B}, nil
		})

	script := func(ctx context.Context, c *claudetest.CLI) error {
		if _, err := c.HandleInitialize(ctx); err != nil {
			return err
		}
		if _, err := c.ReadUser(ctx); err != nil {
			return err
		}
		// What the CLI does when the model calls mcp__calc__add.
		if _, err := c.MCPConnect(ctx, "calc"); err != nil {
			return err
		}
		raw, err := c.MCPCallTool(ctx, "calc", "toolu_01", "add", map[string]int{"a": 2, "b": 3})
		if err != nil {
			return err
		}
		var res struct {
			StructuredContent sum `json:"structuredContent"`
		}
		if err := json.Unmarshal(raw, &res); err != nil {
			return err
		}
		answer := fmt.Sprintf("2 + 3 = %d", res.StructuredContent.Sum)
		c.Write(c.SystemInit(), c.AssistantText(answer), c.ResultSuccess(answer))
		_, err = c.ReadUser(ctx)
		return ignoreEOF(err)
	}

	opts := &claude.Options{
		Transport:    &claudetest.FakeCLI{Script: script},
		MCPServers:   map[string]claude.MCPServerConfig{"calc": claude.SDKServer(srv)},
		AllowedTools: []string{"mcp__calc__add"}, // MCP tools need permission like any other
	}
	for msg, err := range claude.Query(context.Background(), "What is 2 + 3?", opts) {
		if err != nil {
			fmt.Println("error:", err)
			return
		}
		if m, ok := msg.(*claude.AssistantMessage); ok {
			fmt.Println(strings.TrimSpace(m.Text()))
		}
	}
	// Output:
	// add(2, 3) for toolu_01
	// 2 + 3 = 5
}

// External MCP servers go to the CLI as they are: it starts a stdio
// server itself, or connects to an HTTP or SSE one. In-process and
// external servers mix in one map. With a custom Transport, as this fake
// CLI, their configuration goes on the command line; when Tether starts
// the CLI itself it keeps it, headers and env included, out of ps (see
// Options.MCPServersDelivery).
func ExampleOptions_mcpServers() {
	srv := mcp.NewServer(&mcp.Implementation{Name: "notes", Version: "1.0.0"}, nil)
	opts := &claude.Options{
		MCPServers: map[string]claude.MCPServerConfig{
			"notes": claude.SDKServer(srv),
			"files": &claude.MCPStdioServer{Command: "mcp-files", Args: []string{"--root", "/srv/data"}},
			"tickets": &claude.MCPHTTPServer{
				URL:     "http://127.0.0.1:8080/mcp",
				Headers: map[string]string{"Authorization": "Bearer " + "token"},
			},
		},
		AllowedTools: []string{"mcp__notes", "mcp__files"},
	}
	fake := &claudetest.FakeCLI{Script: claudetest.Echo}
	opts.Transport = fake
	s, err := claude.Connect(context.Background(), opts)
	if err != nil {
		fmt.Println(err)
		return
	}
	s.Close()
	for _, a := range fake.Launches()[0].Args {
		if strings.HasPrefix(a, "--mcp-config=") {
			fmt.Println(a)
		}
	}
	// Output:
	// --mcp-config={"mcpServers":{"files":{"type":"stdio","command":"mcp-files","args":["--root","/srv/data"]},"tickets":{"type":"http","url":"http://127.0.0.1:8080/mcp","headers":{"Authorization":"Bearer token"}}}}
}

// MCPToolMeta sets the _meta keys the CLI reads from a tool definition:
// here a tool the model is offered from the first request (not deferred
// behind ToolSearch) and whose results above 20,000 characters reach the
// model as a preview of a saved file.
func ExampleMCPToolMeta() {
	srv := mcp.NewServer(&mcp.Implementation{Name: "docs", Version: "1.0.0"}, nil)
	tool := claude.MCPToolMeta{AlwaysLoad: true, SearchHint: "search documentation", MaxResultSizeChars: 20000}.
		Apply(&mcp.Tool{Name: "search", Description: "Search the docs"})
	mcp.AddTool(srv, tool, func(ctx context.Context, req *mcp.CallToolRequest, in struct {
		Query string `json:"query"`
	}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "no match for " + in.Query}}}, nil, nil
	})
	b, _ := json.Marshal(tool.Meta)
	fmt.Println(string(b))
	// Output:
	// {"anthropic/alwaysLoad":true,"anthropic/maxResultSizeChars":20000,"anthropic/searchHint":"search documentation"}
}
