package claude_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
	"github.com/tetherhq/tether/internal/control"
)

type addIn struct {
	A int `json:"a" jsonschema:"the first addend"`
	B int `json:"b" jsonschema:"the second addend"`
}

type addOut struct {
	Sum int `json:"sum"`
}

// calc is an in-process MCP server for the tests: add (typed, records the
// tool_use ids it was called for), fail (always fails), and block (waits
// for its context to end, and reports that it did).
type calc struct {
	srv *mcp.Server

	mu         sync.Mutex
	toolUseIDs []string

	blockStarted chan struct{} // one value per block call
	blockEnded   chan error    // ctx.Err() of each ended block call
}

func newCalc() *calc { return newCalcOptions(nil) }

func newCalcOptions(opts *mcp.ServerOptions) *calc {
	c := &calc{
		srv:          mcp.NewServer(&mcp.Implementation{Name: "calc", Version: "1.0.0"}, opts),
		blockStarted: make(chan struct{}, 16),
		blockEnded:   make(chan error, 16),
	}
	mcp.AddTool(c.srv, &mcp.Tool{Name: "add", Description: "Add two integers"},
		func(ctx context.Context, req *mcp.CallToolRequest, in addIn) (*mcp.CallToolResult, addOut, error) {
			c.mu.Lock()
			c.toolUseIDs = append(c.toolUseIDs, claude.ToolUseID(req))
			c.mu.Unlock()
			return nil, addOut{Sum: in.A + in.B}, nil
		})
	mcp.AddTool(c.srv, &mcp.Tool{Name: "fail", Description: "Always fails"},
		func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, any, error) {
			return nil, nil, errors.New("the abacus is broken")
		})
	mcp.AddTool(c.srv, &mcp.Tool{Name: "block", Description: "Waits until cancelled"},
		func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, any, error) {
			c.blockStarted <- struct{}{}
			<-ctx.Done()
			c.blockEnded <- ctx.Err()
			return nil, nil, ctx.Err()
		})
	return c
}

func (c *calc) ids() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.toolUseIDs)
}

// mcpCallResult is the part of a CallToolResult the tests look at.
type mcpCallResult struct {
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent"`
	IsError           bool            `json:"isError"`
}

func decodeToolResult(t *testing.T, raw json.RawMessage) mcpCallResult {
	t.Helper()
	var r mcpCallResult
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatalf("tool result %s: %v", raw, err)
	}
	return r
}

func calcOptions(c *calc) *claude.Options {
	return &claude.Options{MCPServers: map[string]claude.MCPServerConfig{"calc": claude.SDKServer(c.srv)}}
}

// TestMCPHandshakeAndCalls plays the CLI's MCP client the way 2.1.197
// does (initialize, notifications/initialized, tools/list, tools/call)
// against a real *mcp.Server, through the session.
func TestMCPHandshakeAndCalls(t *testing.T) {
	ctx := testCtx(t)
	calc := newCalc()
	type outcome struct {
		init    json.RawMessage
		ack     json.RawMessage
		list    json.RawMessage
		add     json.RawMessage
		fail    json.RawMessage
		initReq json.RawMessage
		args    []string
	}
	got := make(chan outcome, 1)
	s := connect(t, calcOptions(calc), func(ctx context.Context, c *claudetest.CLI) error {
		var o outcome
		var err error
		o.args = c.Launch.Args
		if o.initReq, err = c.HandleInitialize(ctx); err != nil {
			return err
		}
		if o.init, err = c.MCPRequest(ctx, "calc", "initialize", map[string]any{
			"protocolVersion": claudetest.MCPProtocolVersion, "capabilities": map[string]any{},
			"clientInfo": map[string]any{"name": "claude-code", "version": "2.1.197"},
		}); err != nil {
			return err
		}
		if o.ack, err = c.MCPMessage(ctx, "calc", map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"}); err != nil {
			return err
		}
		if o.list, err = c.MCPRequest(ctx, "calc", "tools/list", map[string]any{}); err != nil {
			return err
		}
		if o.add, err = c.MCPCallTool(ctx, "calc", "toolu_add_1", "add", map[string]int{"a": 2, "b": 3}); err != nil {
			return err
		}
		if o.fail, err = c.MCPCallTool(ctx, "calc", "toolu_fail_1", "fail", map[string]any{}); err != nil {
			return err
		}
		got <- o
		_, err = c.ReadUser(ctx)
		return err
	})
	var o outcome
	select {
	case o = <-got:
	case <-ctx.Done():
		t.Fatal("the fake CLI never finished its MCP calls")
	}
	s.Close()

	var init struct {
		SDKMCPServers []string `json:"sdkMcpServers"`
	}
	json.Unmarshal(o.initReq, &init)
	if diff := cmp.Diff([]string{"calc"}, init.SDKMCPServers); diff != "" {
		t.Errorf("initialize sdkMcpServers (-want +got):\n%s", diff)
	}
	for _, a := range o.args {
		if strings.HasPrefix(a, "--mcp-config") {
			t.Errorf("an in-process server is also in argv (%s): the 2.1.197 CLI would connect twice", a)
		}
	}

	var ir struct {
		ServerInfo   mcp.Implementation `json:"serverInfo"`
		Capabilities struct {
			Tools *mcp.ToolCapabilities `json:"tools"`
		} `json:"capabilities"`
	}
	if err := json.Unmarshal(o.init, &ir); err != nil || ir.ServerInfo.Name != "calc" || ir.Capabilities.Tools == nil || !ir.Capabilities.Tools.ListChanged {
		t.Errorf("initialize result = %s", o.init)
	}
	if want := `{"jsonrpc":"2.0","result":{},"id":0}`; string(o.ack) != want {
		t.Errorf("notification answered with %s, want the CLI's %s", o.ack, want)
	}

	var list struct {
		Tools []struct {
			Name        string          `json:"name"`
			InputSchema json.RawMessage `json:"inputSchema"`
		} `json:"tools"`
	}
	json.Unmarshal(o.list, &list)
	var names []string
	for _, tl := range list.Tools {
		names = append(names, tl.Name)
		if tl.Name == "add" && !strings.Contains(string(tl.InputSchema), `"the first addend"`) {
			t.Errorf("add's input schema was not inferred from its Go type: %s", tl.InputSchema)
		}
	}
	if diff := cmp.Diff([]string{"add", "block", "fail"}, names); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}

	add := decodeToolResult(t, o.add)
	if add.IsError || string(add.StructuredContent) != `{"sum":5}` || len(add.Content) != 1 || add.Content[0].Text != `{"sum":5}` {
		t.Errorf("add result = %s", o.add)
	}
	if diff := cmp.Diff([]string{"toolu_add_1"}, calc.ids()); diff != "" {
		t.Errorf("ToolUseID in the handler (-want +got):\n%s", diff)
	}
	fail := decodeToolResult(t, o.fail)
	if !fail.IsError || len(fail.Content) != 1 || !strings.Contains(fail.Content[0].Text, "the abacus is broken") {
		t.Errorf("a failing tool must give an isError result, got %s", o.fail)
	}
}

// TestMCPBeforeInitializeResponse: CLI 2.1.330 (and 2.1.197 with an SDK
// server in --mcp-config) connects to in-process servers before it
// answers initialize, so the session must serve them from the start.
func TestMCPBeforeInitializeResponse(t *testing.T) {
	ctx := testCtx(t)
	calc := newCalc()
	sum := make(chan json.RawMessage, 1)
	s := connect(t, calcOptions(calc), func(ctx context.Context, c *claudetest.CLI) error {
		l, err := c.Expect(ctx, "control_request", "initialize")
		if err != nil {
			return err
		}
		if _, err := c.MCPConnect(ctx, "calc"); err != nil {
			return err
		}
		res, err := c.MCPCallTool(ctx, "calc", "toolu_1", "add", map[string]int{"a": 40, "b": 2})
		if err != nil {
			return err
		}
		sum <- res
		if err := c.Respond(l.RequestID, claudetest.InitializeResponse()); err != nil {
			return err
		}
		_, err = c.ReadUser(ctx)
		return err
	})
	defer s.Close()
	select {
	case res := <-sum:
		if r := decodeToolResult(t, res); string(r.StructuredContent) != `{"sum":42}` {
			t.Errorf("add result = %s", res)
		}
	case <-ctx.Done():
		t.Fatal("no tool result")
	}
}

func TestMCPUnknownServer(t *testing.T) {
	ctx := testCtx(t)
	errc := make(chan error, 1)
	s := connect(t, calcOptions(newCalc()), func(ctx context.Context, c *claudetest.CLI) error {
		if _, err := c.HandleInitialize(ctx); err != nil {
			return err
		}
		_, err := c.MCPConnect(ctx, "abacus")
		errc <- err
		_, err = c.ReadUser(ctx)
		return err
	})
	defer s.Close()
	var err error
	select {
	case err = <-errc:
	case <-ctx.Done():
		t.Fatal("no answer")
	}
	var ce *claude.ControlError
	if !errors.As(err, &ce) || !strings.Contains(ce.Message, `"abacus"`) {
		t.Errorf("mcp_message to an unknown server: got %v, want a control error naming it", err)
	}
}

// TestMCPConcurrentCalls: tool calls run side by side; a slow tool must
// not hold up another (the CLI runs MCP tools concurrently).
func TestMCPConcurrentCalls(t *testing.T) {
	ctx := testCtx(t)
	srv := mcp.NewServer(&mcp.Implementation{Name: "meet", Version: "1"}, nil)
	arrived := make(chan string, 2)
	release := make(chan struct{})
	mcp.AddTool(srv, &mcp.Tool{Name: "meet"}, func(ctx context.Context, req *mcp.CallToolRequest, in struct {
		Who string `json:"who"`
	}) (*mcp.CallToolResult, any, error) {
		arrived <- in.Who
		select {
		case <-release: // both calls are in the handler at once
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "met " + in.Who}}}, nil, nil
	})
	go func() {
		<-arrived
		<-arrived
		close(release)
	}()
	results := make(chan []string, 1)
	s := connect(t, &claude.Options{MCPServers: map[string]claude.MCPServerConfig{"meet": claude.SDKServer(srv)}},
		func(ctx context.Context, c *claudetest.CLI) error {
			if _, err := c.HandleInitialize(ctx); err != nil {
				return err
			}
			if _, err := c.MCPConnect(ctx, "meet"); err != nil {
				return err
			}
			var ids []string
			var chans []<-chan *control.ResponseBody
			for i, who := range []string{"ann", "bob"} {
				id, ch, err := c.SendRequest("mcp_message", map[string]any{"server_name": "meet", "message": map[string]any{
					"jsonrpc": "2.0", "id": i + 1, "method": "tools/call",
					"params": map[string]any{"name": "meet", "arguments": map[string]string{"who": who}},
				}})
				if err != nil {
					return err
				}
				ids = append(ids, id)
				chans = append(chans, ch)
			}
			var out []string
			for i, id := range ids {
				raw, err := c.AwaitResponse(ctx, id, "mcp_message", chans[i])
				if err != nil {
					return err
				}
				out = append(out, string(raw))
			}
			results <- out
			_, err := c.ReadUser(ctx)
			return err
		})
	defer s.Close()
	select {
	case out := <-results:
		for i, who := range []string{"ann", "bob"} {
			want := fmt.Sprintf(`"id":%d`, i+1)
			if !strings.Contains(out[i], want) || !strings.Contains(out[i], "met "+who) {
				t.Errorf("response %d = %s, want id %d and %q", i, out[i], i+1, "met "+who)
			}
		}
	case <-ctx.Done():
		t.Fatal("the calls did not run concurrently")
	}
}

// TestMCPCancelledByCLI: when the CLI withdraws an mcp_message (an
// interrupt during a tool call), the tool handler's context is cancelled.
func TestMCPCancelledByCLI(t *testing.T) {
	ctx := testCtx(t)
	calc := newCalc()
	s := connect(t, calcOptions(calc), func(ctx context.Context, c *claudetest.CLI) error {
		if _, err := c.HandleInitialize(ctx); err != nil {
			return err
		}
		if _, err := c.MCPConnect(ctx, "calc"); err != nil {
			return err
		}
		id, _, err := c.SendRequest("mcp_message", map[string]any{"server_name": "calc", "message": map[string]any{
			"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": map[string]any{"name": "block", "arguments": map[string]any{}},
		}})
		if err != nil {
			return err
		}
		select {
		case <-calc.blockStarted:
		case <-ctx.Done():
			return ctx.Err()
		}
		if err := c.Cancel(id); err != nil {
			return err
		}
		_, err = c.ReadUser(ctx)
		return err
	})
	defer s.Close()
	select {
	case err := <-calc.blockEnded:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("handler ctx ended with %v", err)
		}
	case <-ctx.Done():
		t.Fatal("the tool handler was not cancelled")
	}
}

// TestMCPCloseEndsHandlers: Close cancels tool calls in flight and ends
// every bridge goroutine (TestMain checks for leaks).
func TestMCPCloseEndsHandlers(t *testing.T) {
	ctx := testCtx(t)
	calc := newCalc()
	s := connect(t, calcOptions(calc), func(ctx context.Context, c *claudetest.CLI) error {
		if _, err := c.HandleInitialize(ctx); err != nil {
			return err
		}
		if _, err := c.MCPConnect(ctx, "calc"); err != nil {
			return err
		}
		_, err := c.MCPCallTool(ctx, "calc", "toolu_1", "block", map[string]any{})
		if err == nil {
			return errors.New("block returned before Close")
		}
		return nil
	})
	select {
	case <-calc.blockStarted:
	case <-ctx.Done():
		t.Fatal("the tool call never started")
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	select {
	case err := <-calc.blockEnded:
		if err == nil {
			t.Error("handler ended without its context ending")
		}
	default:
		t.Error("Close returned while a tool handler was still running")
	}
}

// TestMCPServerNotifiesCLI: a tool added to a running server reaches the
// CLI as a host mcp_message carrying notifications/tools/list_changed;
// the CLI then lists the tools again and finds the new one.
func TestMCPServerNotifiesCLI(t *testing.T) {
	ctx := testCtx(t)
	calc := newCalc()
	connected := make(chan struct{})
	got := make(chan []string, 1)
	s := connect(t, calcOptions(calc), func(ctx context.Context, c *claudetest.CLI) error {
		if _, err := c.HandleInitialize(ctx); err != nil {
			return err
		}
		if _, err := c.MCPConnect(ctx, "calc"); err != nil {
			return err
		}
		close(connected)
		l, err := c.Expect(ctx, "control_request", "mcp_message")
		if err != nil {
			return err
		}
		server, method, _, err := claudetest.MCPFromHost(l)
		if err != nil {
			return err
		}
		if err := c.Respond(l.RequestID, nil); err != nil {
			return err
		}
		raw, err := c.MCPRequest(ctx, server, "tools/list", map[string]any{})
		if err != nil {
			return err
		}
		var list struct {
			Tools []struct {
				Name string `json:"name"`
			} `json:"tools"`
		}
		json.Unmarshal(raw, &list)
		out := []string{server, method}
		for _, tl := range list.Tools {
			out = append(out, tl.Name)
		}
		got <- out
		_, err = c.ReadUser(ctx)
		return err
	})
	defer s.Close()
	select {
	case <-connected:
	case <-ctx.Done():
		t.Fatal("no MCP connection")
	}
	mcp.AddTool(calc.srv, &mcp.Tool{Name: "mul"}, func(ctx context.Context, req *mcp.CallToolRequest, in addIn) (*mcp.CallToolResult, addOut, error) {
		return nil, addOut{Sum: in.A * in.B}, nil
	})
	select {
	case out := <-got:
		if diff := cmp.Diff([]string{"calc", "notifications/tools/list_changed", "add", "block", "fail", "mul"}, out); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
	case <-ctx.Done():
		t.Fatal("the CLI never heard of the new tool")
	}
}

// TestMCPReconnect: a second MCP initialize (the CLI reconnecting) starts
// a fresh MCP session of the server.
func TestMCPReconnect(t *testing.T) {
	ctx := testCtx(t)
	errc := make(chan error, 1)
	s := connect(t, calcOptions(newCalc()), func(ctx context.Context, c *claudetest.CLI) error {
		if _, err := c.HandleInitialize(ctx); err != nil {
			return err
		}
		err := func() error {
			for range 2 {
				if _, err := c.MCPConnect(ctx, "calc"); err != nil {
					return err
				}
				res, err := c.MCPCallTool(ctx, "calc", "toolu_1", "add", map[string]int{"a": 1, "b": 1})
				if err != nil {
					return err
				}
				if !strings.Contains(string(res), `"sum":2`) {
					return fmt.Errorf("add = %s", res)
				}
			}
			return nil
		}()
		errc <- err
		_, err = c.ReadUser(ctx)
		return err
	})
	defer s.Close()
	select {
	case err := <-errc:
		if err != nil {
			t.Error(err)
		}
	case <-ctx.Done():
		t.Fatal("timed out")
	}
}

func TestMCPInvalidJSONRPC(t *testing.T) {
	ctx := testCtx(t)
	errc := make(chan error, 1)
	s := connect(t, calcOptions(newCalc()), func(ctx context.Context, c *claudetest.CLI) error {
		if _, err := c.HandleInitialize(ctx); err != nil {
			return err
		}
		_, err := c.MCPMessage(ctx, "calc", map[string]any{"hello": "world"})
		errc <- err
		_, err = c.ReadUser(ctx)
		return err
	})
	defer s.Close()
	var ce *claude.ControlError
	if err := recv(t, ctx, errc); !errors.As(err, &ce) {
		t.Errorf("a message that is not JSON-RPC: got %v, want a control error", err)
	}
}

func TestMCPToolErrorIsNotAProtocolError(t *testing.T) {
	ctx := testCtx(t)
	errc := make(chan error, 1)
	s := connect(t, calcOptions(newCalc()), func(ctx context.Context, c *claudetest.CLI) error {
		if _, err := c.HandleInitialize(ctx); err != nil {
			return err
		}
		if _, err := c.MCPConnect(ctx, "calc"); err != nil {
			return err
		}
		_, err := c.MCPCallTool(ctx, "calc", "toolu_1", "no_such_tool", map[string]any{})
		errc <- err
		_, err = c.ReadUser(ctx)
		return err
	})
	defer s.Close()
	// An unknown tool is the one protocol error: the CLI shows it as
	// "MCP error <code>: <message>".
	var je *jsonrpc.Error
	if err := recv(t, ctx, errc); !errors.As(err, &je) {
		t.Errorf("unknown tool: got %v, want a JSON-RPC error", err)
	}
}

// TestSetMCPServers: in-process servers added at runtime are served from
// before the request is sent (the CLI may connect before it answers); the
// ones left out are detached.
func TestSetMCPServers(t *testing.T) {
	ctx := testCtx(t)
	calc, extra := newCalc(), newCalc()
	type seen struct {
		body     json.RawMessage
		extraAdd json.RawMessage
		calcErr  error
	}
	got := make(chan seen, 1)
	s := connect(t, calcOptions(calc), func(ctx context.Context, c *claudetest.CLI) error {
		if _, err := c.HandleInitialize(ctx); err != nil {
			return err
		}
		l, err := c.Expect(ctx, "control_request", "mcp_set_servers")
		if err != nil {
			return err
		}
		var sn seen
		sn.body = l.Request
		if _, err := c.MCPConnect(ctx, "extra"); err != nil {
			return err
		}
		if err := c.Respond(l.RequestID, map[string]any{"added": []string{"extra", "files"}, "removed": []string{"calc"}, "errors": map[string]string{}}); err != nil {
			return err
		}
		if sn.extraAdd, err = c.MCPCallTool(ctx, "extra", "toolu_1", "add", map[string]int{"a": 3, "b": 4}); err != nil {
			return err
		}
		// The host detaches calc once SetMCPServers has its answer; the
		// test's next prompt says that happened.
		if _, err := c.ReadUser(ctx); err != nil {
			return err
		}
		_, sn.calcErr = c.MCPConnect(ctx, "calc")
		got <- sn
		_, err = c.ReadUser(ctx)
		return err
	})
	defer s.Close()
	res, err := s.SetMCPServers(ctx, map[string]claude.MCPServerConfig{
		"extra": claude.SDKServer(extra.srv),
		"files": &claude.MCPStdioServer{Command: "mcp-files", Args: []string{"--root", "/tmp"}, Env: map[string]string{"X": "1"}},
	})
	if err != nil {
		t.Fatalf("SetMCPServers: %v", err)
	}
	want := &claude.MCPSetServersResult{Added: []string{"extra", "files"}, Removed: []string{"calc"}, Errors: map[string]string{}}
	if diff := cmp.Diff(want, res); diff != "" {
		t.Errorf("result (-want +got):\n%s", diff)
	}
	if err := s.Send(ctx, "servers set"); err != nil {
		t.Fatal(err)
	}
	sn := recv(t, ctx, got)
	var body map[string]any
	json.Unmarshal(sn.body, &body)
	wantBody := map[string]any{"subtype": "mcp_set_servers", "servers": map[string]any{
		"extra": map[string]any{"type": "sdk", "name": "extra"},
		"files": map[string]any{"type": "stdio", "command": "mcp-files", "args": []any{"--root", "/tmp"}, "env": map[string]any{"X": "1"}},
	}}
	if diff := cmp.Diff(wantBody, body); diff != "" {
		t.Errorf("request (-want +got):\n%s", diff)
	}
	if r := decodeToolResult(t, sn.extraAdd); string(r.StructuredContent) != `{"sum":7}` {
		t.Errorf("extra add = %s", sn.extraAdd)
	}
	var ce *claude.ControlError
	if !errors.As(sn.calcErr, &ce) {
		t.Errorf("calc was left out but still answers: %v", sn.calcErr)
	}
}

func TestMCPControlRequests(t *testing.T) {
	ctx := testCtx(t)
	bodies := make(chan json.RawMessage, 4)
	s := connect(t, nil, func(ctx context.Context, c *claudetest.CLI) error {
		if _, err := c.HandleInitialize(ctx); err != nil {
			return err
		}
		for {
			l, err := c.Read(ctx)
			if err != nil {
				return err
			}
			if l.Type != "control_request" {
				continue
			}
			bodies <- l.Request
			switch l.Subtype {
			case "mcp_status":
				c.Respond(l.RequestID, json.RawMessage(`{"mcpServers":[
					{"name":"calc","status":"connected","serverInfo":{"name":"calc","version":"1.0.0"},"scope":"dynamic","tools":[{"name":"add","annotations":{}},{"name":"peek","annotations":{"readOnly":true}}],"future":1},
					{"name":"files","status":"failed","error":"spawn mcp-files ENOENT","config":{"type":"stdio","command":"mcp-files","args":["--root","/tmp"]},"scope":"dynamic"},
					{"name":"web","status":"needs-auth","config":{"type":"http","url":"http://127.0.0.1:1/mcp","headers":{"A":"b"}},"scope":"project"}]}`))
			case "mcp_toggle":
				c.Respond(l.RequestID, nil)
			case "mcp_reconnect":
				c.RespondError(l.RequestID, "SDK servers should be handled in print.ts")
			default:
				c.AnswerIdle(l)
			}
		}
	})
	defer s.Close()

	st, err := s.MCPStatus(ctx)
	if err != nil {
		t.Fatalf("MCPStatus: %v", err)
	}
	if len(st) != 3 {
		t.Fatalf("MCPStatus = %+v", st)
	}
	if st[0].Status != claude.MCPConnectionStatusConnected || st[0].ServerInfo == nil || st[0].ServerInfo.Version != "1.0.0" ||
		st[0].Scope != "dynamic" || st[0].Config != nil || !strings.Contains(string(st[0].Raw), `"future":1`) {
		t.Errorf("calc = %+v", st[0])
	}
	wantTools := []claude.MCPToolInfo{{Name: "add", Annotations: &claude.MCPToolAnnotations{}}, {Name: "peek", Annotations: &claude.MCPToolAnnotations{ReadOnly: true}}}
	if diff := cmp.Diff(wantTools, st[0].Tools); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(&claude.MCPStdioServer{Command: "mcp-files", Args: []string{"--root", "/tmp"}}, st[1].Config); diff != "" || st[1].Status != claude.MCPConnectionStatusFailed || st[1].Error == "" {
		t.Errorf("files = %+v %s", st[1], diff)
	}
	if diff := cmp.Diff(&claude.MCPHTTPServer{URL: "http://127.0.0.1:1/mcp", Headers: map[string]string{"A": "b"}}, st[2].Config); diff != "" || st[2].Status != claude.MCPConnectionStatusNeedsAuth {
		t.Errorf("web = %+v %s", st[2], diff)
	}
	<-bodies

	if err := s.ToggleMCPServer(ctx, "calc", false); err != nil {
		t.Errorf("ToggleMCPServer: %v", err)
	}
	if b := string(<-bodies); b != `{"subtype":"mcp_toggle","serverName":"calc","enabled":false}` {
		t.Errorf("mcp_toggle body = %s", b)
	}
	err = s.ReconnectMCPServer(ctx, "calc")
	var ce *claude.ControlError
	if !errors.As(err, &ce) || ce.Subtype != "mcp_reconnect" {
		t.Errorf("ReconnectMCPServer: %v, want the CLI's refusal as a *ControlError", err)
	}
	if b := string(<-bodies); b != `{"subtype":"mcp_reconnect","serverName":"calc"}` {
		t.Errorf("mcp_reconnect body = %s", b)
	}
}

func TestInitMessageMCPServers(t *testing.T) {
	msg, err := claude.DecodeMessage([]byte(`{"type":"system","subtype":"init","session_id":"s","mcp_servers":[{"name":"calc","status":"connected"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	init, ok := msg.(*claude.InitMessage)
	if !ok || len(init.MCPServers) != 1 || init.MCPServers[0].Name != "calc" || init.MCPServers[0].Status != claude.MCPConnectionStatusConnected {
		t.Errorf("init = %#v", msg)
	}
}

func TestMCPServersValidation(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "x", Version: "1"}, nil)
	for name, servers := range map[string]map[string]claude.MCPServerConfig{
		"nil config":     {"a": nil},
		"nil server":     {"a": &claude.MCPSDKServer{}},
		"no command":     {"a": &claude.MCPStdioServer{}},
		"no url (sse)":   {"a": &claude.MCPSSEServer{}},
		"no url (http)":  {"a": &claude.MCPHTTPServer{}},
		"empty name":     {"": claude.SDKServer(srv)},
		"typed nil sdk":  {"a": (*claude.MCPSDKServer)(nil)},
		"typed nil http": {"a": (*claude.MCPHTTPServer)(nil)},
	} {
		o := &claude.Options{MCPServers: servers, Transport: &claudetest.FakeCLI{Script: claudetest.Echo}}
		if _, err := claude.Connect(context.Background(), o); err == nil {
			t.Errorf("%s: Connect accepted it", name)
		}
	}
}

func TestToolUseIDWithoutMeta(t *testing.T) {
	if id := claude.ToolUseID(nil); id != "" {
		t.Errorf("nil request: %q", id)
	}
	if id := claude.ToolUseID(&mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "x"}}); id != "" {
		t.Errorf("no _meta: %q", id)
	}
}

// recv receives from ch, failing the test if ctx ends first.
func recv[T any](t *testing.T, ctx context.Context, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-ctx.Done():
		t.Fatal("timed out waiting for the fake CLI")
		panic("unreachable")
	}
}

// TestReconnectInProcessServer: the CLI refuses mcp_reconnect for
// in-process servers, so Tether sets the servers without it and with it
// again; the CLI then reconnects and sees tools added since.
func TestReconnectInProcessServer(t *testing.T) {
	ctx := testCtx(t)
	calc := newCalc()
	type seen struct {
		bodies []string
		tools  []string
	}
	got := make(chan seen, 1)
	s := connect(t, calcOptions(calc), func(ctx context.Context, c *claudetest.CLI) error {
		if _, err := c.HandleInitialize(ctx); err != nil {
			return err
		}
		var sn seen
		for i := range 2 {
			l, err := c.Expect(ctx, "control_request", "mcp_set_servers")
			if err != nil {
				return err
			}
			var body struct {
				Servers map[string]json.RawMessage `json:"servers"`
			}
			json.Unmarshal(l.Request, &body)
			sn.bodies = append(sn.bodies, fmt.Sprint(sortedNames(body.Servers)))
			if i == 0 {
				c.Respond(l.RequestID, map[string]any{"added": []string{}, "removed": []string{"calc"}, "errors": map[string]string{}})
				continue
			}
			c.Respond(l.RequestID, map[string]any{"added": []string{"calc"}, "removed": []string{}, "errors": map[string]string{}})
			if _, err := c.MCPConnect(ctx, "calc"); err != nil {
				return err
			}
			raw, err := c.MCPRequest(ctx, "calc", "tools/list", map[string]any{})
			if err != nil {
				return err
			}
			var list struct {
				Tools []struct {
					Name string `json:"name"`
				} `json:"tools"`
			}
			json.Unmarshal(raw, &list)
			for _, tl := range list.Tools {
				sn.tools = append(sn.tools, tl.Name)
			}
		}
		got <- sn
		_, err := c.ReadUser(ctx)
		return err
	})
	defer s.Close()
	mcp.AddTool(calc.srv, &mcp.Tool{Name: "mul"}, func(ctx context.Context, req *mcp.CallToolRequest, in addIn) (*mcp.CallToolResult, addOut, error) {
		return nil, addOut{Sum: in.A * in.B}, nil
	})
	if err := s.ReconnectMCPServer(ctx, "calc"); err != nil {
		t.Fatalf("ReconnectMCPServer: %v", err)
	}
	sn := recv(t, ctx, got)
	if diff := cmp.Diff([]string{"[]", "[calc]"}, sn.bodies); diff != "" {
		t.Errorf("mcp_set_servers bodies (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"add", "block", "fail", "mul"}, sn.tools); diff != "" {
		t.Errorf("tools after the reconnect (-want +got):\n%s", diff)
	}
}

func sortedNames[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
