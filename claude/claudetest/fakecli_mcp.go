package claudetest

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// The CLI's side of in-process MCP servers (claude.SDKServer): the CLI is
// the MCP client, and each JSON-RPC message travels as an mcp_message
// control request whose answer wraps the server's response in
// {"mcp_response": …}. These helpers let a Script play that client.

// MCPProtocolVersion is the MCP protocol version the 2.1.197 CLI asks for.
const MCPProtocolVersion = "2025-11-25"

// MCPConnect opens an MCP connection to the host's in-process server
// named server, as the CLI does when it first needs the server: an
// initialize request (id 0) and the notifications/initialized
// notification. It returns the initialize result (the server's
// capabilities and serverInfo).
func (c *CLI) MCPConnect(ctx context.Context, server string) (json.RawMessage, error) {
	c.mu.Lock()
	if c.mcpIDs == nil {
		c.mcpIDs = map[string]int64{}
	}
	c.mcpIDs[server] = 0
	c.mu.Unlock()
	res, err := c.MCPRequest(ctx, server, "initialize", map[string]any{
		"protocolVersion": MCPProtocolVersion,
		"capabilities":    map[string]any{"roots": map[string]any{}, "elicitation": map[string]any{}},
		"clientInfo":      map[string]any{"name": "claude-code", "version": "2.1.197"},
	})
	if err != nil {
		return nil, err
	}
	if _, err := c.MCPMessage(ctx, server, map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"}); err != nil {
		return nil, err
	}
	return res, nil
}

// MCPRequest sends a JSON-RPC request to the in-process server named
// server, with the next id of its connection (0 after MCPConnect's
// initialize, then 1, 2, …), and returns the response's result. A
// JSON-RPC error response is returned as a *jsonrpc.Error; a control
// error (no such server, say) as a *claude.ControlError.
func (c *CLI) MCPRequest(ctx context.Context, server, method string, params any) (json.RawMessage, error) {
	c.mu.Lock()
	if c.mcpIDs == nil {
		c.mcpIDs = map[string]int64{}
	}
	id := c.mcpIDs[server]
	c.mcpIDs[server] = id + 1
	c.mu.Unlock()
	msg := map[string]any{"jsonrpc": "2.0", "id": id, "method": method}
	if params != nil {
		msg["params"] = params
	}
	raw, err := c.MCPMessage(ctx, server, msg)
	if err != nil {
		return nil, err
	}
	var resp struct {
		ID     json.RawMessage `json:"id"`
		Result json.RawMessage `json:"result"`
		Error  *jsonrpc.Error  `json:"error"`
	}
	if err := json.Unmarshal(raw, &resp); err != nil {
		return nil, fmt.Errorf("claudetest: %s: the host's mcp_response is not a JSON-RPC response: %s", method, raw)
	}
	if string(resp.ID) != fmt.Sprint(id) {
		return nil, fmt.Errorf("claudetest: %s: response id %s, want %d", method, resp.ID, id)
	}
	if resp.Error != nil {
		return nil, resp.Error
	}
	return resp.Result, nil
}

// MCPCallTool calls a tool of the in-process server named server, with
// the _meta the CLI sends (the model's tool_use id), and returns the raw
// CallToolResult.
func (c *CLI) MCPCallTool(ctx context.Context, server, toolUseID, tool string, args any) (json.RawMessage, error) {
	return c.MCPRequest(ctx, server, "tools/call", map[string]any{
		"name":      tool,
		"arguments": args,
		"_meta":     map[string]any{"claudecode/toolUseId": toolUseID},
	})
}

// MCPMessage sends any JSON-RPC message to the in-process server named
// server and returns the JSON-RPC message inside the host's mcp_response.
func (c *CLI) MCPMessage(ctx context.Context, server string, msg any) (json.RawMessage, error) {
	raw, err := c.Request(ctx, "mcp_message", map[string]any{"server_name": server, "message": msg})
	if err != nil {
		return nil, err
	}
	var w struct {
		MCPResponse json.RawMessage `json:"mcp_response"`
	}
	if err := json.Unmarshal(raw, &w); err != nil || len(w.MCPResponse) == 0 {
		return nil, fmt.Errorf("claudetest: mcp_message answer has no mcp_response: %s", raw)
	}
	return w.MCPResponse, nil
}

// MCPFromHost decodes a host mcp_message request (a message the server
// sent on its own, e.g. notifications/tools/list_changed): the server's
// name, the JSON-RPC method ("" for a response) and the whole message.
func MCPFromHost(l *Line) (server, method string, msg json.RawMessage, err error) {
	if l.Type != "control_request" || l.Subtype != "mcp_message" {
		return "", "", nil, fmt.Errorf("claudetest: not an mcp_message request: %s", l.Raw)
	}
	var r struct {
		ServerName string          `json:"server_name"`
		Message    json.RawMessage `json:"message"`
	}
	if err := json.Unmarshal(l.Request, &r); err != nil {
		return "", "", nil, err
	}
	var m struct {
		Method string `json:"method"`
	}
	_ = json.Unmarshal(r.Message, &m)
	return r.ServerName, m.Method, r.Message, nil
}
