package claude_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
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

// What an in-process MCP server offers besides tools, against the real
// CLI: resources, prompts, progress notifications, the _meta keys the CLI
// reads from tool definitions, per-server timeout and alwaysLoad, and the
// provenance the CLI attaches to permission requests and hook inputs.

// kb is an in-process server with a resource, a prompt and tools that
// exercise progress, _meta and timeouts. methods records the MCP methods
// it received.
type kb struct {
	srv *mcp.Server

	mu      sync.Mutex
	methods []string
}

const kbBigSize = 3000

func newKBServer() *kb {
	k := &kb{srv: mcp.NewServer(&mcp.Implementation{Name: "kb", Version: "1.0.0"}, nil)}
	srv := k.srv
	srv.AddResource(&mcp.Resource{URI: "kb://notes/today", Name: "today", MIMEType: "text/plain"},
		func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain", Text: "remember the milk"}}}, nil
		})
	srv.AddPrompt(&mcp.Prompt{Name: "greet", Description: "Greet someone", Arguments: []*mcp.PromptArgument{{Name: "name", Required: true}}},
		func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "Say hello to " + req.Params.Arguments["name"] + " in French"}}}}, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "work", Description: "Works, reporting progress"},
		func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, any, error) {
			tok := req.Params.GetProgressToken()
			for i := 1; i <= 2; i++ {
				err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
					ProgressToken: tok, Progress: float64(i), Total: 2, Message: fmt.Sprintf("step %d of 2", i),
				})
				if err != nil {
					return nil, nil, err
				}
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "worked"}}}, nil, nil
		})
	mcp.AddTool(srv, claude.MCPToolMeta{AlwaysLoad: true, SearchHint: "find documents"}.Apply(&mcp.Tool{Name: "search", Description: "Search the notes"}),
		func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "nothing found"}}}, nil, nil
		})
	big := strings.Repeat("abcdefghij", kbBigSize/10)
	mcp.AddTool(srv, claude.MCPToolMeta{MaxResultSizeChars: 1000}.Apply(&mcp.Tool{Name: "big", Description: "A big result, capped"}),
		func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: big}}}, nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "bigplain", Description: "A big result"},
		func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: big}}}, nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "slow", Description: "Waits until cancelled"},
		func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, any, error) {
			<-ctx.Done()
			return nil, nil, ctx.Err()
		})
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			k.mu.Lock()
			k.methods = append(k.methods, method)
			k.mu.Unlock()
			return next(ctx, method, req)
		}
	})
	return k
}

func (k *kb) received() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return slices.Clone(k.methods)
}

// mcpRun is a session on the real CLI through the recording transport, so
// that a test can read the control lines both ways.
type mcpRun struct {
	*claudetest.RealRun
	S       *claude.Session
	Ctx     context.Context
	Version string
}

func newMCPRun(t *testing.T, replies []*claudetest.Reply, set func(o *claude.Options)) *mcpRun {
	t.Helper()
	return newRealSession(t, &claudetest.MessagesOptions{Replies: replies}, set)
}

// newRealSession connects a session to the real CLI, the fake API
// answering as api says, after set (if not nil) changed the options.
func newRealSession(t *testing.T, api *claudetest.MessagesOptions, set func(o *claude.Options)) *mcpRun {
	t.Helper()
	path, err := claudetest.FindCLI("")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	version := realCLIVersion(t, path)
	run := claudetest.NewRealRun(t, api)
	if set != nil {
		set(run.Options)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	s, err := claude.Connect(ctx, run.Options)
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return &mcpRun{RealRun: run, S: s, Ctx: ctx, Version: version}
}

func (r *mcpRun) atLeast(v string) bool { return proc.CompareVersions(r.Version, v) >= 0 }

// controlLine is a control_request or control_response line of the
// transcript.
type controlLine struct {
	FromHost bool
	Type     string `json:"type"`
	ID       string `json:"request_id"`
	Request  struct {
		Subtype    string          `json:"subtype"`
		ServerName string          `json:"server_name"`
		Message    json.RawMessage `json:"message"`
	} `json:"request"`
	Response struct {
		Subtype  string          `json:"subtype"`
		ID       string          `json:"request_id"`
		Response json.RawMessage `json:"response"`
		Error    string          `json:"error"`
	} `json:"response"`
}

func (r *mcpRun) controlLines() []controlLine {
	var out []controlLine
	for _, l := range r.Recorder.Transcript("").Lines {
		var c controlLine
		if json.Unmarshal(l.JSON, &c) != nil || !strings.HasPrefix(c.Type, "control_") {
			continue
		}
		c.FromHost = l.FromHost
		out = append(out, c)
	}
	return out
}

// rpc is the part of a JSON-RPC message the tests read.
type rpc struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		Name          string          `json:"name"`
		ProgressToken json.RawMessage `json:"progressToken"`
		Progress      float64         `json:"progress"`
		Message       string          `json:"message"`
		Meta          struct {
			ProgressToken json.RawMessage `json:"progressToken"`
		} `json:"_meta"`
	} `json:"params"`
	Result json.RawMessage `json:"result"`
}

// mcpExchange is one mcp_message control request with its answer.
type mcpExchange struct {
	Message       rpc
	ResponseType  string // the answer's subtype: success or error
	MCPResponse   json.RawMessage
	ResponseError string
}

// mcpExchanges returns the mcp_message requests for server sent by the
// CLI (fromHost false) or by the session (true), with their answers.
func (r *mcpRun) mcpExchanges(server string, fromHost bool) []mcpExchange {
	lines := r.controlLines()
	var out []mcpExchange
	for _, l := range lines {
		if l.Type != "control_request" || l.FromHost != fromHost || l.Request.Subtype != "mcp_message" || l.Request.ServerName != server {
			continue
		}
		var ex mcpExchange
		_ = json.Unmarshal(l.Request.Message, &ex.Message)
		for _, a := range lines {
			if a.Type == "control_response" && a.FromHost != fromHost && a.Response.ID == l.ID {
				ex.ResponseType = a.Response.Subtype
				ex.ResponseError = a.Response.Error
				var body struct {
					MCPResponse json.RawMessage `json:"mcp_response"`
				}
				_ = json.Unmarshal(a.Response.Response, &body)
				ex.MCPResponse = body.MCPResponse
			}
		}
		out = append(out, ex)
	}
	return out
}

// TestRealCLIMCPResources: the model lists and reads an in-process
// server's resources with the CLI's ListMcpResourcesTool and
// ReadMcpResourceTool; the server answers resources/list and
// resources/read through the session.
func TestRealCLIMCPResources(t *testing.T) {
	t.Parallel()
	k := newKBServer()
	r := newMCPRun(t, []*claudetest.Reply{
		claudetest.ToolUseReply("toolu_list", "ListMcpResourcesTool", map[string]string{"server": "kb"}),
		claudetest.ToolUseReply("toolu_read", "ReadMcpResourceTool", map[string]string{"server": "kb", "uri": "kb://notes/today"}),
		claudetest.TextReply("the note says to remember the milk"),
	}, func(o *claude.Options) {
		o.MCPServers = map[string]claude.MCPServerConfig{"kb": claude.SDKServer(k.srv)}
	})
	msgs := turnOf(t, r.Ctx, r.S, "what is in my notes?")
	if res := result(t, msgs); res.IsError || res.Result != "the note says to remember the milk" {
		t.Errorf("result = %+v", res)
	}
	reqs := r.API.MessagesRequests()
	if len(reqs) != 3 {
		t.Fatalf("the API got %d requests, want 3", len(reqs))
	}
	list := reqs[1].Params.ToolResult("toolu_list")
	if list == nil || list.IsError || !strings.Contains(claudetestText(list), `"uri":"kb://notes/today"`) || !strings.Contains(claudetestText(list), `"server":"kb"`) {
		t.Errorf("ListMcpResourcesTool result sent to the API = %+v", list)
	}
	read := reqs[2].Params.ToolResult("toolu_read")
	if read == nil || read.IsError || !strings.Contains(claudetestText(read), "remember the milk") {
		t.Errorf("ReadMcpResourceTool result sent to the API = %+v", read)
	}
	got := k.received()
	for _, m := range []string{"resources/list", "resources/read"} {
		if !slices.Contains(got, m) {
			t.Errorf("the server never got %s: %q", m, got)
		}
	}
}

// TestRealCLIMCPPrompts: an MCP server's prompt is a slash command,
// /mcp__<server>__<prompt> args, whose text goes to the model: true for a
// server the CLI connects itself (here over streamable HTTP), not for an
// in-process server, which the CLI never asks for its prompts in
// stream-json mode (2.1.197 and 2.1.330). The test pins both, so a CLI
// that starts listing in-process prompts shows up here.
func TestRealCLIMCPPrompts(t *testing.T) {
	t.Parallel()
	k := newKBServer()
	rs := newRemoteServer(t, "http")
	r := newMCPRun(t, []*claudetest.Reply{
		claudetest.TextReply("hi"),
		claudetest.TextReply("Bonjour Alice"),
		claudetest.TextReply("no such command"),
	}, func(o *claude.Options) {
		o.MCPServers = map[string]claude.MCPServerConfig{"kb": claude.SDKServer(k.srv), "remote": rs.config("http")}
	})
	turnOf(t, r.Ctx, r.S, "hello")
	waitMCPConnected(t, r.Ctx, r.S, "remote")

	msgs := turnOf(t, r.Ctx, r.S, "/mcp__remote__greet Alice")
	if res := result(t, msgs); res.IsError || res.Result != "Bonjour Alice" {
		t.Errorf("result = %+v", res)
	}
	init := find[*claude.InitMessage](msgs)
	if len(init) != 1 || !slices.Contains(init[0].SlashCommands, "mcp__remote__greet") {
		t.Errorf("slash commands lack mcp__remote__greet: %+v", init)
	}
	reqs := r.API.MessagesRequests()
	if len(reqs) != 2 {
		t.Fatalf("the API got %d requests, want 2", len(reqs))
	}
	if got := lastUserText(reqs[1].Params); !strings.Contains(got, "Say hello to Alice in French") {
		t.Errorf("the prompt's text did not reach the model: %q", got)
	}

	// The in-process server's prompt: never listed.
	msgs = turnOf(t, r.Ctx, r.S, "/mcp__kb__greet Alice")
	if init := find[*claude.InitMessage](msgs); len(init) == 1 && slices.Contains(init[0].SlashCommands, "mcp__kb__greet") {
		t.Errorf("CLI %s lists in-process prompts as slash commands: update TestRealCLIMCPPrompts and docs/mcp.md", r.Version)
	}
	if got := k.received(); slices.Contains(got, "prompts/list") {
		t.Errorf("CLI %s asked the in-process server for its prompts (%q): update TestRealCLIMCPPrompts and docs/mcp.md", r.Version, got)
	}
	if reqs := r.API.MessagesRequests(); len(reqs) == 3 && strings.Contains(lastUserText(reqs[2].Params), "Say hello to Alice") {
		t.Errorf("the in-process prompt reached the model")
	}
}

// TestRealCLIMCPProgress: an in-process tool's progress notifications
// reach the CLI, each as a host mcp_message request the CLI accepts, with
// the progress token the CLI put in its tools/call. The CLI keeps them
// for its own display: none reaches the session's message stream (2.1.197,
// 2.1.330).
func TestRealCLIMCPProgress(t *testing.T) {
	t.Parallel()
	k := newKBServer()
	r := newMCPRun(t, []*claudetest.Reply{
		claudetest.ToolUseReply("toolu_work", "mcp__kb__work", map[string]string{}),
		claudetest.TextReply("done"),
	}, func(o *claude.Options) {
		o.MCPServers = map[string]claude.MCPServerConfig{"kb": claude.SDKServer(k.srv)}
		o.AllowedTools = []string{"mcp__kb"}
	})
	msgs := turnOf(t, r.Ctx, r.S, "work")
	if tr := toolResultOf(msgs, "toolu_work"); tr == nil || tr.IsError || tr.Text() != "worked" {
		t.Fatalf("tool result = %+v", tr)
	}
	var token json.RawMessage
	for _, ex := range r.mcpExchanges("kb", false) {
		if ex.Message.Method == "tools/call" && ex.Message.Params.Name == "work" {
			token = ex.Message.Params.Meta.ProgressToken
		}
	}
	if len(token) == 0 {
		t.Fatal("the CLI's tools/call carried no progress token")
	}
	var steps []string
	for _, ex := range r.mcpExchanges("kb", true) {
		if ex.Message.Method != "notifications/progress" {
			continue
		}
		if string(ex.Message.Params.ProgressToken) != string(token) {
			t.Errorf("progress token %s, want the CLI's %s", ex.Message.Params.ProgressToken, token)
		}
		if ex.ResponseType != "success" {
			t.Errorf("the CLI answered progress with %q %s", ex.ResponseType, ex.ResponseError)
		}
		steps = append(steps, ex.Message.Params.Message)
	}
	if !slices.Equal(steps, []string{"step 1 of 2", "step 2 of 2"}) {
		t.Errorf("progress notifications sent to the CLI: %q", steps)
	}
	for _, m := range find[*claude.ToolProgressMessage](msgs) {
		if m.ToolUseID == "toolu_work" {
			t.Errorf("CLI %s forwards MCP progress as tool_progress (%+v): update TestRealCLIMCPProgress and docs/mcp.md", r.Version, m)
		}
	}
}

// TestRealCLIMCPProvenance: the CLI says which MCP server a tool belongs
// to in can_use_tool (ToolPermissionRequest.MCPServer) and in hook inputs
// (PreToolUseHookInput.MCPServer): source "sdk" for an in-process server,
// "dynamic" for one configured through the session. 2.1.330 does; 2.1.197
// sends neither.
func TestRealCLIMCPProvenance(t *testing.T) {
	t.Parallel()
	k := newKBServer()
	rs := newRemoteServer(t, "http")
	var mu sync.Mutex
	perms := map[string]*claude.HookMCPServer{}
	hooks := map[string]*claude.HookMCPServer{}
	r := newMCPRun(t, []*claudetest.Reply{
		claudetest.TextReply("hi"),
		claudetest.ToolUseReply("toolu_work", "mcp__kb__work", map[string]string{}),
		claudetest.ToolUseReply("toolu_lookup", "mcp__remote__lookup", map[string]string{"key": "k"}),
		claudetest.TextReply("done"),
	}, func(o *claude.Options) {
		o.MCPServers = map[string]claude.MCPServerConfig{"kb": claude.SDKServer(k.srv), "remote": rs.config("http")}
		o.CanUseTool = func(ctx context.Context, req *claude.ToolPermissionRequest) (claude.PermissionResult, error) {
			mu.Lock()
			perms[req.ToolName] = req.MCPServer
			mu.Unlock()
			return &claude.PermissionAllow{}, nil
		}
		o.Hooks = map[claude.HookEvent][]claude.HookMatcher{
			claude.HookEventPreToolUse: {{Matcher: "mcp__.*", Hooks: []claude.HookFunc{func(ctx context.Context, in *claude.HookInput) (*claude.HookOutput, error) {
				if e, ok := in.Event.(*claude.PreToolUseHookInput); ok {
					mu.Lock()
					hooks[e.ToolName] = e.MCPServer
					mu.Unlock()
				}
				return nil, nil
			}}}},
		}
	})
	turnOf(t, r.Ctx, r.S, "hello")
	waitMCPConnected(t, r.Ctx, r.S, "remote")
	msgs := turnOf(t, r.Ctx, r.S, "use both")
	for _, id := range []string{"toolu_work", "toolu_lookup"} {
		if tr := toolResultOf(msgs, id); tr == nil || tr.IsError {
			t.Errorf("%s: %+v", id, tr)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	want := map[string]*claude.HookMCPServer{
		"mcp__kb__work":       {Name: "kb", Source: "sdk"},
		"mcp__remote__lookup": {Name: "remote", Source: "dynamic"},
	}
	for tool, w := range want {
		for what, got := range map[string]map[string]*claude.HookMCPServer{"permission request": perms, "PreToolUse input": hooks} {
			p, asked := got[tool]
			switch {
			case !asked:
				t.Errorf("no %s for %s", what, tool)
			case !r.atLeast("2.1.330") && p != nil:
				t.Errorf("CLI %s sent provenance %+v in the %s for %s: update TestRealCLIMCPProvenance and docs", r.Version, p, what, tool)
			case r.atLeast("2.1.330") && (p == nil || *p != *w):
				t.Errorf("%s for %s: MCPServer = %+v, want %+v", what, tool, p, w)
			}
		}
	}
}

// TestRealCLIMCPToolMeta: the _meta keys the CLI reads from tool
// definitions, set with MCPToolMeta.Apply and MCPSDKServer.AlwaysLoad, are
// on the wire of tools/list; AlwaysLoad tools are offered to the model
// from the first request where 2.1.330 defers the others behind
// ToolSearch (2.1.197 offers every MCP tool); a result longer than
// MaxResultSizeChars reaches the model as a preview of a saved file.
func TestRealCLIMCPToolMeta(t *testing.T) {
	t.Parallel()
	k := newKBServer()
	pinned := mcp.NewServer(&mcp.Implementation{Name: "pinned", Version: "1.0.0"}, nil)
	mcp.AddTool(pinned, &mcp.Tool{Name: "ping", Description: "Ping"},
		func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "pong"}}}, nil, nil
		})
	r := newMCPRun(t, []*claudetest.Reply{
		claudetest.ToolUseReply("toolu_big", "mcp__kb__big", map[string]string{}),
		claudetest.ToolUseReply("toolu_bigplain", "mcp__kb__bigplain", map[string]string{}),
		claudetest.TextReply("done"),
	}, func(o *claude.Options) {
		o.MCPServers = map[string]claude.MCPServerConfig{
			"kb":     claude.SDKServer(k.srv),
			"pinned": &claude.MCPSDKServer{Server: pinned, AlwaysLoad: true},
		}
		o.AllowedTools = []string{"mcp__kb", "mcp__pinned"}
	})
	msgs := turnOf(t, r.Ctx, r.S, "make big results")
	if res := result(t, msgs); res.IsError {
		t.Fatalf("result = %+v", res)
	}

	// On the wire of tools/list.
	metaOf := func(server string) map[string]map[string]any {
		out := map[string]map[string]any{}
		for _, ex := range r.mcpExchanges(server, false) {
			if ex.Message.Method != "tools/list" {
				continue
			}
			var resp struct {
				Result struct {
					Tools []struct {
						Name string         `json:"name"`
						Meta map[string]any `json:"_meta"`
					} `json:"tools"`
				} `json:"result"`
			}
			if err := json.Unmarshal(ex.MCPResponse, &resp); err != nil {
				t.Fatalf("tools/list answer %s: %v", ex.MCPResponse, err)
			}
			for _, tl := range resp.Result.Tools {
				out[tl.Name] = tl.Meta
			}
		}
		return out
	}
	kbMeta := metaOf("kb")
	if m := kbMeta["search"]; m[claude.MetaAlwaysLoad] != true || m[claude.MetaSearchHint] != "find documents" {
		t.Errorf("search's _meta on the wire = %v", m)
	}
	if m := kbMeta["big"]; m[claude.MetaMaxResultSizeChars] != float64(1000) {
		t.Errorf("big's _meta on the wire = %v", m)
	}
	if m := kbMeta["bigplain"]; len(m) != 0 {
		t.Errorf("bigplain's _meta on the wire = %v", m)
	}
	if m := metaOf("pinned")["ping"]; m[claude.MetaAlwaysLoad] != true {
		t.Errorf("ping's _meta on the wire = %v (server AlwaysLoad)", m)
	}

	// In the tools the model is offered.
	reqs := r.API.MessagesRequests()
	if len(reqs) != 3 {
		t.Fatalf("the API got %d requests, want 3", len(reqs))
	}
	offered := reqs[0].Params.ToolNames()
	for _, tool := range []string{"mcp__kb__search", "mcp__pinned__ping"} {
		if !slices.Contains(offered, tool) {
			t.Errorf("%s (alwaysLoad) not offered in the first request: %q", tool, offered)
		}
	}
	deferred := r.atLeast("2.1.330")
	if got := slices.Contains(offered, "mcp__kb__bigplain"); got == deferred {
		t.Errorf("CLI %s: mcp__kb__bigplain offered = %v, want %v (deferred behind ToolSearch)", r.Version, got, !deferred)
	}

	// maxResultSizeChars.
	big := reqs[1].Params.ToolResult("toolu_big")
	if big == nil || !strings.Contains(claudetestText(big), "<persisted-output>") || strings.Contains(claudetestText(big), strings.Repeat("abcdefghij", kbBigSize/10)) {
		t.Errorf("big's tool_result (MaxResultSizeChars 1000) = %.300v", big)
	}
	plain := reqs[2].Params.ToolResult("toolu_bigplain")
	if plain == nil || claudetestText(plain) != strings.Repeat("abcdefghij", kbBigSize/10) {
		t.Errorf("bigplain's tool_result = %.300v", plain)
	}
}

// TestRealCLIMCPTimeout: a per-server Timeout fails a tool call that runs
// longer, with an error result the model sees: for an external server on
// both CLI versions, for an in-process server from 2.1.330 on (2.1.197
// does not read initialize.sdkMcpServerConfigs). The external server is
// AlwaysLoad, which 2.1.330 shows by offering its tools in the first
// request.
func TestRealCLIMCPTimeout(t *testing.T) {
	t.Parallel()
	k := newKBServer()
	rs := newRemoteServer(t, "http")
	replies := []*claudetest.Reply{
		claudetest.ToolUseReply("toolu_slow_remote", "mcp__remote__slow", map[string]string{}),
		claudetest.TextReply("timed out"),
	}
	r := newMCPRun(t, nil, func(o *claude.Options) {
		o.MCPServers = map[string]claude.MCPServerConfig{
			"remote": &claude.MCPHTTPServer{URL: rs.URL + "/", Headers: map[string]string{"X-Tether-Secret": remoteSecret}, Timeout: time.Second, AlwaysLoad: true},
			"kb":     &claude.MCPSDKServer{Server: k.srv, Timeout: time.Second},
		}
		o.AllowedTools = []string{"mcp__remote", "mcp__kb"}
	})
	inProcess := r.atLeast("2.1.330")
	if inProcess {
		replies = append(replies,
			claudetest.ToolUseReply("toolu_slow_kb", "mcp__kb__slow", map[string]string{}),
			claudetest.TextReply("timed out too"))
	}
	r.API.Enqueue(replies...)
	if _, err := r.S.MCPStatus(r.Ctx); err != nil {
		t.Fatal(err)
	}
	waitMCPConnected(t, r.Ctx, r.S, "remote")

	check := func(id, prompt string) {
		t.Helper()
		start := time.Now()
		msgs := turnOf(t, r.Ctx, r.S, prompt)
		tr := toolResultOf(msgs, id)
		if tr == nil || !tr.IsError {
			t.Fatalf("%s: tool result = %+v, want an error", id, tr)
		}
		// The handler waits until cancelled: only the timeout ends the
		// call, so no upper bound on time is needed to prove it.
		t.Logf("%s: %q after %v", id, tr.Text(), time.Since(start))
	}
	check("toolu_slow_remote", "call the slow remote tool")
	if r.atLeast("2.1.330") {
		if first := r.API.MessagesRequests()[0]; !slices.Contains(first.Params.ToolNames(), "mcp__remote__lookup") {
			t.Errorf("AlwaysLoad: mcp__remote__lookup not offered in the first request: %q", first.Params.ToolNames())
		}
	}
	if inProcess {
		check("toolu_slow_kb", "call the slow in-process tool")
	}
}

// lastUserText joins the text blocks of the request's last user message.
func lastUserText(p *claudetest.MessageParams) string {
	m := p.LastUser()
	if m == nil {
		return ""
	}
	var sb strings.Builder
	for _, b := range m.Content {
		sb.WriteString(b.Text)
		sb.WriteString("\n")
	}
	return sb.String()
}
