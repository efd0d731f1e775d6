package claude_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
	"github.com/tetherhq/tether/internal/proc"
)

// In-process MCP servers against the real CLI: the model (the fake API)
// calls an mcp__calc__* tool, the CLI asks the session through
// mcp_message, and the Go handler's result reaches the API.

// calcs maps each scenario run's server to its recorder, so a scenario's
// run finds the calc its opts attached.
var calcs sync.Map // *mcp.Server -> *calc

func withCalc(o *claude.Options) { withCalcOptions(o, nil) }

func withCalcOptions(o *claude.Options, so *mcp.ServerOptions) {
	c := newCalcOptions(so)
	calcs.Store(c.srv, c)
	if o.MCPServers == nil {
		o.MCPServers = map[string]claude.MCPServerConfig{}
	}
	o.MCPServers["calc"] = claude.SDKServer(c.srv)
}

func calcOf(t *testing.T, h *harness) *calc {
	t.Helper()
	sdk, ok := h.Opts.MCPServers["calc"].(*claude.MCPSDKServer)
	if !ok {
		t.Fatal("no calc server in the options")
	}
	c, ok := calcs.Load(sdk.Server)
	if !ok {
		t.Fatal("calc server not registered")
	}
	return c.(*calc)
}

// toolResultOf returns the tool_result block for id in the turn's user
// messages.
func toolResultOf(msgs []claude.Message, id string) *claude.ToolResultBlock {
	for _, u := range find[*claude.UserMessage](msgs) {
		for _, r := range u.ToolResults() {
			if r.ToolUseID == id {
				return r
			}
		}
	}
	return nil
}

// toolResultText is the content of the tool result answering id, as
// JSON, or "" when there is none.
func toolResultText(msgs []claude.Message, id string) string {
	if tr := toolResultOf(msgs, id); tr != nil {
		return string(tr.Content)
	}
	return ""
}

// waitForMCPTool polls MCPStatus until server lists tool. The number of
// polls is part of the transcript, and replay gives the same answers in
// the same order, so it polls exactly as often as the recording did.
func waitForMCPTool(t *testing.T, h *harness, server, tool string) {
	t.Helper()
	for range 200 {
		st, err := h.S.MCPStatus(h.Ctx)
		if err != nil {
			t.Fatalf("MCPStatus: %v", err)
		}
		for _, s := range st {
			if s.Name == server && slices.ContainsFunc(s.Tools, func(ti claude.MCPToolInfo) bool { return ti.Name == tool }) {
				return
			}
		}
		if h.Real() {
			time.Sleep(20 * time.Millisecond)
		}
	}
	t.Fatalf("the CLI never listed %s's new tool %s", server, tool)
}

func init() {
	addScenarios(
		scenario{
			name: "mcp_tool_call",
			guards: "An in-process MCP tool: the model calls mcp__calc__add, the CLI asks for permission (CanUseTool), " +
				"connects to the server through mcp_message (initialize, notifications/initialized, tools/list) and " +
				"calls it; the Go handler sees the tool_use id and its result reaches the API as the tool_result.",
			record: true,
			api: func() *claudetest.MessagesOptions {
				return &claudetest.MessagesOptions{Replies: []*claudetest.Reply{
					claudetest.ToolUseReply("toolu_mcp_add_1", "mcp__calc__add", map[string]int{"a": 2, "b": 3}),
					claudetest.TextReply("2 + 3 = 5"),
				}}
			},
			opts: func(o *claude.Options) {
				withCalc(o)
				o.CanUseTool = func(ctx context.Context, req *claude.ToolPermissionRequest) (claude.PermissionResult, error) {
					if req.ToolName != "mcp__calc__add" {
						return &claude.PermissionDeny{Message: "only calc"}, nil
					}
					return &claude.PermissionAllow{}, nil
				}
			},
			run: func(t *testing.T, h *harness) {
				msgs := h.turn(t, "what is 2 + 3?")
				r := result(t, msgs)
				if r.IsError || r.Result != "2 + 3 = 5" {
					t.Errorf("result = %+v", r)
				}
				init := find[*claude.InitMessage](msgs)
				if len(init) != 1 || !slices.Contains(init[0].Tools, "mcp__calc__add") ||
					!slices.ContainsFunc(init[0].MCPServers, func(s claude.MCPServerStatus) bool {
						return s.Name == "calc" && s.Status == claude.MCPConnectionStatusConnected
					}) {
					t.Errorf("init does not show calc connected with its tool: %+v", init)
				}
				tr := toolResultOf(msgs, "toolu_mcp_add_1")
				if tr == nil || tr.IsError || !strings.Contains(tr.Text(), `{"sum":5}`) {
					t.Fatalf("tool result = %+v in %v", tr, types(msgs))
				}
				if ids := calcOf(t, h).ids(); !slices.Equal(ids, []string{"toolu_mcp_add_1"}) {
					t.Errorf("the handler saw tool_use ids %q", ids)
				}
				if h.Real() {
					reqs := h.API.MessagesRequests()
					if len(reqs) != 2 {
						t.Fatalf("the API got %d requests, want 2", len(reqs))
					}
					// 2.1.197 offers mcp__calc__add to the model in the request's
					// tools; 2.1.330 defers MCP tools behind ToolSearch, yet
					// runs a direct call to one all the same.
					b := reqs[1].Params.ToolResult("toolu_mcp_add_1")
					if b == nil || b.IsError || !strings.Contains(claudetestText(b), `{"sum":5}`) {
						t.Errorf("tool_result sent to the API = %+v", b)
					}
				}
			},
		},
		scenario{
			name: "mcp_tool_error",
			guards: "A failing in-process MCP tool: the handler's error is a tool result with isError, the model sees it " +
				"as an is_error tool_result and the turn goes on to a normal end.",
			record: true,
			api: func() *claudetest.MessagesOptions {
				return &claudetest.MessagesOptions{Replies: []*claudetest.Reply{
					claudetest.ToolUseReply("toolu_mcp_fail_1", "mcp__calc__fail", map[string]any{}),
					claudetest.TextReply("the tool failed"),
				}}
			},
			opts: func(o *claude.Options) {
				withCalc(o)
				o.AllowedTools = []string{"mcp__calc__fail"}
			},
			run: func(t *testing.T, h *harness) {
				msgs := h.turn(t, "try the failing tool")
				r := result(t, msgs)
				if r.IsError || r.Subtype != claude.ResultSuccess || r.Result != "the tool failed" {
					t.Errorf("result = %+v", r)
				}
				tr := toolResultOf(msgs, "toolu_mcp_fail_1")
				if tr == nil || !tr.IsError || !strings.Contains(tr.Text(), "the abacus is broken") {
					t.Fatalf("tool result = %+v", tr)
				}
				if len(r.PermissionDenials) != 0 {
					t.Errorf("permission denials = %+v", r.PermissionDenials)
				}
				if h.Real() {
					reqs := h.API.MessagesRequests()
					if len(reqs) != 2 {
						t.Fatalf("the API got %d requests, want 2", len(reqs))
					}
					b := reqs[1].Params.ToolResult("toolu_mcp_fail_1")
					if b == nil || !b.IsError || !strings.Contains(claudetestText(b), "the abacus is broken") {
						t.Errorf("tool_result sent to the API = %+v", b)
					}
				}
			},
		},
		scenario{
			name: "mcp_runtime_tool",
			guards: "A tool added to a running in-process server (mcp.AddTool after the CLI connected) becomes callable " +
				"after ReconnectMCPServer, which Tether does for in-process servers with two mcp_set_servers requests " +
				"(without the server, then with it): the CLI starts a new MCP session, lists the tools again, and the " +
				"model calls the new tool in the next turn. The server announces no list changes here, so the reconnect " +
				"alone must do it, on every CLI version.",
			record: true,
			api: func() *claudetest.MessagesOptions {
				return &claudetest.MessagesOptions{Replies: []*claudetest.Reply{
					claudetest.ToolUseReply("toolu_mcp_add_2", "mcp__calc__add", map[string]int{"a": 1, "b": 2}),
					claudetest.TextReply("3"),
					claudetest.ToolUseReply("toolu_mcp_mul_1", "mcp__calc__mul", map[string]int{"a": 3, "b": 4}),
					claudetest.TextReply("12"),
				}}
			},
			opts: func(o *claude.Options) {
				withCalcOptions(o, &mcp.ServerOptions{Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}}})
				o.AllowedTools = []string{"mcp__calc"}
			},
			run: func(t *testing.T, h *harness) {
				msgs := h.turn(t, "add 1 and 2")
				if tr := toolResultOf(msgs, "toolu_mcp_add_2"); tr == nil || tr.IsError {
					t.Fatalf("add: %+v", tr)
				}
				addMul(calcOf(t, h))
				if err := h.S.ReconnectMCPServer(h.Ctx, "calc"); err != nil {
					t.Fatalf("ReconnectMCPServer: %v", err)
				}
				waitForMCPTool(t, h, "calc", "mul")
				msgs = h.turn(t, "now multiply 3 by 4")
				checkMul(t, h, msgs, 4)
			},
		},
		scenario{
			name: "mcp_list_changed",
			guards: "A tool added to a running in-process server reaches the CLI by itself: the server's " +
				"notifications/tools/list_changed goes out as a host mcp_message request and the CLI lists the tools " +
				"again. CLI 2.1.197 acknowledges the notification but registers no handler for in-process servers (the " +
				"test then stops there); 2.1.330 re-lists.",
			api: func() *claudetest.MessagesOptions {
				return &claudetest.MessagesOptions{Replies: []*claudetest.Reply{
					claudetest.TextReply("hello"),
					claudetest.ToolUseReply("toolu_mcp_mul_1", "mcp__calc__mul", map[string]int{"a": 3, "b": 4}),
					claudetest.TextReply("12"),
				}}
			},
			opts: func(o *claude.Options) {
				withCalc(o)
				o.AllowedTools = []string{"mcp__calc"}
			},
			run: func(t *testing.T, h *harness) {
				msgs := h.turn(t, "hello")
				init := find[*claude.InitMessage](msgs)
				if len(init) != 1 {
					t.Fatalf("no init message")
				}
				addMul(calcOf(t, h))
				if proc.CompareVersions(init[0].ClaudeCodeVersion, "2.1.330") < 0 {
					// 2.1.197 acknowledges the notification and keeps its
					// old tool list: ReconnectMCPServer (mcp_runtime_tool)
					// is the way there. Pin that down, so a CLI that starts
					// re-listing shows up here.
					st, err := h.S.MCPStatus(h.Ctx)
					if err != nil {
						t.Fatal(err)
					}
					for _, s := range st {
						for _, ti := range s.Tools {
							if s.Name == "calc" && ti.Name == "mul" {
								t.Errorf("CLI %s re-listed tools on tools/list_changed: update mcp_list_changed and docs/mcp.md", init[0].ClaudeCodeVersion)
							}
						}
					}
					return
				}
				waitForMCPTool(t, h, "calc", "mul")
				msgs = h.turn(t, "now multiply 3 by 4")
				checkMul(t, h, msgs, 3)
			},
		},
		scenario{
			name: "mcp_status",
			guards: "MCPStatus decodes the CLI's mcp_status answer: an in-process server connected with its serverInfo and " +
				"tools, an external stdio server that failed (with its config and error).",
			record: true,
			api: func() *claudetest.MessagesOptions {
				return &claudetest.MessagesOptions{Replies: []*claudetest.Reply{claudetest.TextReply("ok")}}
			},
			opts: func(o *claude.Options) {
				withCalc(o)
				o.MCPServers["broken"] = &claude.MCPStdioServer{Command: "/nonexistent/mcp-server", Args: []string{"--flag"}}
			},
			run: func(t *testing.T, h *harness) {
				// The CLI connects to in-process servers declared in
				// initialize when the first turn starts.
				h.turn(t, "hello")
				st, err := h.S.MCPStatus(h.Ctx)
				if err != nil {
					t.Fatalf("MCPStatus: %v", err)
				}
				byName := map[string]claude.MCPServerStatus{}
				for _, s := range st {
					byName[s.Name] = s
				}
				calc, ok := byName["calc"]
				if !ok || calc.Status != claude.MCPConnectionStatusConnected || calc.Config != nil || len(calc.Raw) == 0 {
					t.Errorf("calc = %+v", calc)
				}
				// 2.1.197 reports no serverInfo for in-process servers.
				if si := calc.ServerInfo; si != nil && (si.Name != "calc" || si.Version != "1.0.0") {
					t.Errorf("calc serverInfo = %+v", si)
				}
				var tools []string
				for _, ti := range calc.Tools {
					tools = append(tools, ti.Name)
				}
				slices.Sort(tools)
				if !slices.Equal(tools, []string{"add", "block", "fail"}) {
					t.Errorf("calc tools = %q", tools)
				}
				broken, ok := byName["broken"]
				if !ok || broken.Status != claude.MCPConnectionStatusFailed {
					t.Errorf("broken = %+v", broken)
				}
				if cfg, ok := broken.Config.(*claude.MCPStdioServer); !ok || cfg.Command != "/nonexistent/mcp-server" || !slices.Equal(cfg.Args, []string{"--flag"}) {
					t.Errorf("broken config = %#v", broken.Config)
				}
			},
		},
		scenario{
			name: "mcp_set_servers",
			guards: "SetMCPServers adds an in-process server at runtime (the CLI answers, then reconnects every in-process " +
				"server, 2.1.197 twice each with ids from 0) and the model calls its tool; ToggleMCPServer disables a server; ReconnectMCPServer on an " +
				"in-process server reconnects it (Tether's two mcp_set_servers), on an unknown one is refused with a *ControlError.",
			record: true,
			api: func() *claudetest.MessagesOptions {
				return &claudetest.MessagesOptions{Replies: []*claudetest.Reply{
					claudetest.TextReply("first"),
					claudetest.ToolUseReply("toolu_extra_add_1", "mcp__extra__add", map[string]int{"a": 20, "b": 22}),
					claudetest.TextReply("42"),
				}}
			},
			opts: func(o *claude.Options) {
				withCalc(o)
				o.AllowedTools = []string{"mcp__calc", "mcp__extra"}
			},
			run: func(t *testing.T, h *harness) {
				h.turn(t, "hello")
				extra := newCalc()
				res, err := h.S.SetMCPServers(h.Ctx, map[string]claude.MCPServerConfig{
					"calc":  h.Opts.MCPServers["calc"],
					"extra": claude.SDKServer(extra.srv),
				})
				if err != nil {
					t.Fatalf("SetMCPServers: %v", err)
				}
				if !slices.Contains(res.Added, "extra") || len(res.Errors) != 0 {
					t.Errorf("SetMCPServers = %+v", res)
				}
				msgs := h.turn(t, "add 20 and 22 with the extra server")
				tr := toolResultOf(msgs, "toolu_extra_add_1")
				if tr == nil || tr.IsError || !strings.Contains(tr.Text(), `{"sum":42}`) {
					t.Fatalf("extra add: %+v in %v", tr, types(msgs))
				}
				if ids := extra.ids(); !slices.Equal(ids, []string{"toolu_extra_add_1"}) {
					t.Errorf("extra's handler saw %q", ids)
				}

				// The CLI refuses mcp_reconnect for in-process servers;
				// Tether reconnects them itself.
				if err := h.S.ReconnectMCPServer(h.Ctx, "extra"); err != nil {
					t.Errorf("ReconnectMCPServer(extra): %v", err)
				}
				err = h.S.ReconnectMCPServer(h.Ctx, "nosuch")
				var ce *claude.ControlError
				if !errors.As(err, &ce) || ce.Subtype != "mcp_reconnect" {
					t.Errorf("ReconnectMCPServer(nosuch) = %v, want a *ControlError", err)
				}
				if err := h.S.ToggleMCPServer(h.Ctx, "extra", false); err != nil {
					t.Errorf("ToggleMCPServer(extra, false): %v", err)
				}
				st, err := h.S.MCPStatus(h.Ctx)
				if err != nil {
					t.Fatalf("MCPStatus: %v", err)
				}
				// 2.1.197 keeps reporting a disabled in-process server as
				// connected, with no tools.
				for _, s := range st {
					if s.Name == "extra" && s.Status != claude.MCPConnectionStatusDisabled && len(s.Tools) != 0 {
						t.Errorf("extra after disabling = %+v", s)
					}
				}
			},
		},
	)
}

// addMul adds a mul tool to a running calc.
func addMul(c *calc) {
	mcp.AddTool(c.srv, &mcp.Tool{Name: "mul", Description: "Multiply two integers"},
		func(ctx context.Context, req *mcp.CallToolRequest, in addIn) (*mcp.CallToolResult, addOut, error) {
			return nil, addOut{Sum: in.A * in.B}, nil
		})
}

// checkMul checks the turn where the model called mul (toolu_mcp_mul_1),
// the apiRequests-th request of the run.
func checkMul(t *testing.T, h *harness, msgs []claude.Message, apiRequests int) {
	t.Helper()
	tr := toolResultOf(msgs, "toolu_mcp_mul_1")
	if tr == nil || tr.IsError || !strings.Contains(tr.Text(), `{"sum":12}`) {
		t.Fatalf("mul: %+v in %v", tr, types(msgs))
	}
	if r := result(t, msgs); r.IsError || r.Result != "12" {
		t.Errorf("result = %+v", r)
	}
	if h.Real() {
		reqs := h.API.MessagesRequests()
		if len(reqs) != apiRequests {
			t.Fatalf("the API got %d requests, want %d", len(reqs), apiRequests)
		}
		if b := reqs[apiRequests-1].Params.ToolResult("toolu_mcp_mul_1"); b == nil || b.IsError {
			t.Errorf("mul's tool_result sent to the API = %+v", b)
		}
	}
}

// claudetestText joins the text of a recorded tool_result block.
func claudetestText(b *claudetest.ContentBlock) string {
	var sb strings.Builder
	for _, c := range b.Content {
		sb.WriteString(c.Text)
	}
	return sb.String()
}
