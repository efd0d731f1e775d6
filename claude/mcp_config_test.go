package claude_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
)

// mcpConfigArg returns the value of the one --mcp-config flag in args.
func mcpConfigArg(t *testing.T, args []string) string {
	t.Helper()
	var found []string
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--mcp-config="); ok {
			found = append(found, v)
		}
	}
	if len(found) != 1 {
		t.Fatalf("want one --mcp-config, got %q", found)
	}
	return found[0]
}

// TestMCPServerWire: Timeout (milliseconds) and AlwaysLoad reach the CLI
// in each external server's configuration.
func TestMCPServerWire(t *testing.T) {
	o := &claude.Options{
		MCPServersDelivery: claude.DeliveryArgv,
		MCPServers: map[string]claude.MCPServerConfig{
			"s": &claude.MCPStdioServer{Command: "srv", Env: map[string]string{"K": "v"}, Timeout: 90 * time.Second, AlwaysLoad: true},
			"e": &claude.MCPSSEServer{URL: "http://e", Timeout: 1500 * time.Millisecond},
			"h": &claude.MCPHTTPServer{URL: "http://h", Headers: map[string]string{"A": "b"}, AlwaysLoad: true},
		},
	}
	l, _ := launched(t, o)
	want := `{"mcpServers":{` +
		`"e":{"type":"sse","url":"http://e","timeout":1500},` +
		`"h":{"type":"http","url":"http://h","headers":{"A":"b"},"alwaysLoad":true},` +
		`"s":{"type":"stdio","command":"srv","env":{"K":"v"},"timeout":90000,"alwaysLoad":true}}}`
	if got := mcpConfigArg(t, l.Args); got != want {
		t.Errorf("--mcp-config\n got %s\nwant %s", got, want)
	}
}

// TestMCPTimeoutValidation: timeouts the CLI would silently ignore are
// refused before anything starts.
func TestMCPTimeoutValidation(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "x", Version: "1"}, nil)
	for name, c := range map[string]claude.MCPServerConfig{
		"sdk below 1s":  &claude.MCPSDKServer{Server: srv, Timeout: 999 * time.Millisecond},
		"http negative": &claude.MCPHTTPServer{URL: "http://h", Timeout: -time.Second},
		"stdio 1ms":     &claude.MCPStdioServer{Command: "x", Timeout: time.Millisecond},
		"sse 500ms":     &claude.MCPSSEServer{URL: "http://h", Timeout: 500 * time.Millisecond},
	} {
		o := &claude.Options{MCPServers: map[string]claude.MCPServerConfig{"a": c}, Transport: &claudetest.FakeCLI{Script: claudetest.Echo}}
		_, err := claude.Connect(context.Background(), o)
		if err == nil || !strings.Contains(err.Error(), "Timeout") {
			t.Errorf("%s: Connect = %v, want a Timeout error", name, err)
		}
	}
}

// TestMCPDeliveryFile: the configuration goes in a private file named on
// the command line, readable while the CLI starts and gone after Connect.
func TestMCPDeliveryFile(t *testing.T) {
	var (
		path string
		perm os.FileMode
		body []byte
	)
	o := &claude.Options{
		MCPServersDelivery: claude.DeliveryFile,
		MCPServers: map[string]claude.MCPServerConfig{
			"h": &claude.MCPHTTPServer{URL: "http://h", Headers: map[string]string{"Authorization": "Bearer secret"}},
		},
	}
	s := connect(t, o, func(ctx context.Context, c *claudetest.CLI) error {
		path = mcpConfigArg(t, c.Launch.Args)
		if fi, err := os.Stat(path); err == nil {
			perm = fi.Mode().Perm()
			body, _ = os.ReadFile(path)
		}
		if _, err := c.HandleInitialize(ctx); err != nil {
			return err
		}
		_, err := c.ReadUser(ctx)
		return err
	})
	if perm != 0o600 {
		t.Errorf("the MCP file's mode is %v, want 0600", perm)
	}
	if want := `{"mcpServers":{"h":{"type":"http","url":"http://h","headers":{"Authorization":"Bearer secret"}}}}`; string(body) != want {
		t.Errorf("the MCP file holds %s, want %s", body, want)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the MCP file outlived Connect: %v", err)
	}
	s.Close()
}

// TestMCPDeliveryAutoCustomTransport: with a custom transport (whose CLI
// may not share this machine's files) the default stays on argv.
func TestMCPDeliveryAutoCustomTransport(t *testing.T) {
	l, init := launched(t, &claude.Options{MCPServers: map[string]claude.MCPServerConfig{"h": &claude.MCPHTTPServer{URL: "http://h"}}})
	if got := mcpConfigArg(t, l.Args); got != `{"mcpServers":{"h":{"type":"http","url":"http://h"}}}` {
		t.Errorf("--mcp-config=%s", got)
	}
	if _, ok := init["mcpServers"]; ok || slices.Contains(l.Args, "--await-initialize") {
		t.Errorf("argv delivery also sent the servers in initialize: %v %q", init, l.Args)
	}
}

// TestMCPDeliveryInitialize: the servers go in initialize.mcpServers with
// --await-initialize, never in argv; a CLI whose answer does not confirm
// them (mcp_servers_applied) fails Connect with ErrNotApplied.
func TestMCPDeliveryInitialize(t *testing.T) {
	servers := map[string]claude.MCPServerConfig{
		"h": &claude.MCPHTTPServer{URL: "http://h", Headers: map[string]string{"Authorization": "Bearer secret"}, Timeout: 2 * time.Second},
		"s": &claude.MCPStdioServer{Command: "srv", Env: map[string]string{"TOKEN": "t"}},
	}
	for _, applied := range []any{true, false, nil} {
		t.Run(jsonString(applied), func(t *testing.T) {
			var req json.RawMessage
			fake := &claudetest.FakeCLI{Script: func(ctx context.Context, c *claudetest.CLI) error {
				l, err := c.Expect(ctx, "control_request", "initialize")
				if err != nil {
					return err
				}
				req = l.Request
				resp := claudetest.InitializeResponse()
				if applied != nil {
					resp["mcp_servers_applied"] = applied
				}
				if err := c.Respond(l.RequestID, resp); err != nil {
					return err
				}
				_, err = c.ReadUser(ctx)
				return err
			}}
			o := &claude.Options{MCPServers: servers, MCPServersDelivery: claude.DeliveryInitialize, Transport: fake}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			s, err := claude.Connect(ctx, o)
			if applied == true {
				if err != nil {
					t.Fatalf("Connect: %v", err)
				}
				s.Close()
			} else if !errors.Is(err, claude.ErrNotApplied) {
				t.Fatalf("Connect = %v, want ErrNotApplied", err)
			}
			args := fake.Launches()[0].Args
			if !slices.Contains(args, "--await-initialize") {
				t.Errorf("argv lacks --await-initialize: %q", args)
			}
			for _, a := range args {
				if strings.Contains(a, "secret") || strings.HasPrefix(a, "--mcp-config") {
					t.Errorf("the servers are in argv: %s", a)
				}
			}
			var init struct {
				MCPServers map[string]json.RawMessage `json:"mcpServers"`
			}
			json.Unmarshal(req, &init)
			want := map[string]string{
				"h": `{"type":"http","url":"http://h","headers":{"Authorization":"Bearer secret"},"timeout":2000}`,
				"s": `{"type":"stdio","command":"srv","env":{"TOKEN":"t"}}`,
			}
			got := map[string]string{}
			for k, v := range init.MCPServers {
				got[k] = string(v)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("initialize.mcpServers (-want +got):\n%s", diff)
			}
		})
	}
}

func jsonString(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestSDKServerSettings: an in-process server's Timeout goes in
// initialize.sdkMcpServerConfigs and in SetMCPServers' entry; its
// AlwaysLoad marks every tool of its tools/list answers.
func TestSDKServerSettings(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "pinned", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "ping"}, func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{}, nil, nil
	})
	mcp.AddTool(srv, claude.MCPToolMeta{SearchHint: "echo"}.Apply(&mcp.Tool{Name: "pong"}), func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{}, nil, nil
	})
	cfg := &claude.MCPSDKServer{Server: srv, Timeout: 3 * time.Second, AlwaysLoad: true}
	type outcome struct {
		init, list, set json.RawMessage
	}
	got := make(chan outcome, 1)
	s := connect(t, &claude.Options{MCPServers: map[string]claude.MCPServerConfig{"pinned": cfg}}, func(ctx context.Context, c *claudetest.CLI) error {
		var o outcome
		l, err := c.Expect(ctx, "control_request", "initialize")
		if err != nil {
			return err
		}
		o.init = l.Request
		if err := c.Respond(l.RequestID, claudetest.InitializeResponse()); err != nil {
			return err
		}
		if _, err := c.MCPConnect(ctx, "pinned"); err != nil {
			return err
		}
		if o.list, err = c.MCPRequest(ctx, "pinned", "tools/list", map[string]any{}); err != nil {
			return err
		}
		set, err := c.Expect(ctx, "control_request", "mcp_set_servers")
		if err != nil {
			return err
		}
		o.set = set.Request
		if err := c.Respond(set.RequestID, map[string]any{"added": []string{}, "removed": []string{}, "errors": map[string]string{}}); err != nil {
			return err
		}
		got <- o
		_, err = c.ReadUser(ctx)
		return err
	})
	if _, err := s.SetMCPServers(testCtx(t), map[string]claude.MCPServerConfig{"pinned": cfg}); err != nil {
		t.Fatalf("SetMCPServers: %v", err)
	}
	o := <-got

	var init struct {
		Configs map[string]map[string]any `json:"sdkMcpServerConfigs"`
	}
	json.Unmarshal(o.init, &init)
	if diff := cmp.Diff(map[string]map[string]any{"pinned": {"timeout": float64(3000)}}, init.Configs); diff != "" {
		t.Errorf("initialize.sdkMcpServerConfigs (-want +got):\n%s", diff)
	}
	var set struct {
		Servers map[string]map[string]any `json:"servers"`
	}
	json.Unmarshal(o.set, &set)
	if diff := cmp.Diff(map[string]any{"type": "sdk", "name": "pinned", "timeout": float64(3000)}, set.Servers["pinned"]); diff != "" {
		t.Errorf("mcp_set_servers entry (-want +got):\n%s", diff)
	}
	var list struct {
		Tools []struct {
			Name string         `json:"name"`
			Meta map[string]any `json:"_meta"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(o.list, &list); err != nil {
		t.Fatal(err)
	}
	want := map[string]map[string]any{
		"ping": {claude.MetaAlwaysLoad: true},
		"pong": {claude.MetaAlwaysLoad: true, claude.MetaSearchHint: "echo"},
	}
	gotMeta := map[string]map[string]any{}
	for _, tl := range list.Tools {
		gotMeta[tl.Name] = tl.Meta
	}
	if diff := cmp.Diff(want, gotMeta); diff != "" {
		t.Errorf("tools/list _meta (-want +got):\n%s", diff)
	}
}

func TestMCPToolMetaApply(t *testing.T) {
	tool := claude.MCPToolMeta{AlwaysLoad: true, SearchHint: "find", MaxResultSizeChars: 5000}.Apply(&mcp.Tool{Name: "x", Meta: mcp.Meta{"other": 1}})
	want := mcp.Meta{"other": 1, "anthropic/alwaysLoad": true, "anthropic/searchHint": "find", "anthropic/maxResultSizeChars": 5000}
	if diff := cmp.Diff(want, tool.Meta); diff != "" {
		t.Errorf("Meta (-want +got):\n%s", diff)
	}
	if tool := (claude.MCPToolMeta{}).Apply(&mcp.Tool{Name: "y"}); tool.Meta != nil {
		t.Errorf("a zero MCPToolMeta set %v", tool.Meta)
	}
	if (claude.MCPToolMeta{AlwaysLoad: true}).Apply(nil) != nil {
		t.Error("Apply(nil) is not nil")
	}
}

// TestPermissionRequestMCPServer: the provenance of an MCP tool in
// can_use_tool reaches CanUseTool.
func TestPermissionRequestMCPServer(t *testing.T) {
	got := make(chan *claude.HookMCPServer, 1)
	o := &claude.Options{CanUseTool: func(ctx context.Context, req *claude.ToolPermissionRequest) (claude.PermissionResult, error) {
		got <- req.MCPServer
		return &claude.PermissionAllow{}, nil
	}}
	connect(t, o, func(ctx context.Context, c *claudetest.CLI) error {
		if _, err := c.HandleInitialize(ctx); err != nil {
			return err
		}
		if _, err := c.Request(ctx, "can_use_tool", map[string]any{
			"tool_name": "mcp__kb__work", "input": map[string]any{}, "tool_use_id": "toolu_1",
			"mcp_server": map[string]string{"name": "kb", "source": "sdk"},
		}); err != nil {
			return err
		}
		_, err := c.ReadUser(ctx)
		return err
	})
	if p := <-got; p == nil || *p != (claude.HookMCPServer{Name: "kb", Source: "sdk"}) {
		t.Errorf("MCPServer = %+v", p)
	}
}
