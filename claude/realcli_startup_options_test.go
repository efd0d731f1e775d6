package claude_test

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
	"github.com/tetherhq/tether/internal/mcptest"
)

// Rows of docs/parity.md that had no real-CLI proof: FallbackModel,
// SettingSources, Session.ReadMCPResource and the AgentDefinition fields
// InitialPrompt and MCPServers. Each test says what differs between the
// pinned CLI versions.

// parityRun starts a session against the real CLI with the fake API
// scripted by api; set adjusts the options before Connect.
func parityRun(t *testing.T, api *claudetest.MessagesOptions, set func(o *claude.Options)) *mcpRun {
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
	set(run.Options)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	s, err := claude.Connect(ctx, run.Options)
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return &mcpRun{RealRun: run, S: s, Ctx: ctx, Version: version}
}

// mainRequests are the API's main-loop requests so far.
func mainRequests(api *claudetest.MessagesServer) []*claudetest.Request {
	var out []*claudetest.Request
	for _, r := range api.MessagesRequests() {
		if !r.Side && r.Params != nil {
			out = append(out, r)
		}
	}
	return out
}

// TestRealCLIFallbackModel: when the main model is overloaded (HTTP 529
// on every try), the CLI switches to Options.FallbackModel and the turn
// succeeds with the fallback's answer; on every pinned CLI.
func TestRealCLIFallbackModel(t *testing.T) {
	t.Parallel()
	const mainModel, fallback = "claude-sonnet-4-5", "claude-haiku-4-5"
	r := parityRun(t, &claudetest.MessagesOptions{
		MaxRetries: 5,
		Respond: func(req *claudetest.Request) *claudetest.Reply {
			if strings.Contains(req.Params.Model, "sonnet") {
				return claudetest.ErrorReply(529, "overloaded_error", "Overloaded")
			}
			return claudetest.TextReply("answered by the fallback")
		},
	}, func(o *claude.Options) {
		o.Model = mainModel
		o.FallbackModel = fallback
	})
	msgs := turnOf(t, r.Ctx, r.S, "hi")
	if res := result(t, msgs); res.IsError || res.Result != "answered by the fallback" {
		t.Errorf("result = %+v, want the fallback's answer", res)
	}
	var models []string
	for _, req := range mainRequests(r.API) {
		models = append(models, req.Params.Model)
	}
	if len(models) < 2 || !strings.Contains(models[0], "sonnet") || !strings.Contains(models[len(models)-1], "haiku") {
		t.Errorf("models asked = %q, want the main model first and the fallback last", models)
	}
}

// TestRealCLIFallbackModelUnset is the control: without FallbackModel the
// same overload ends the turn with an error.
func TestRealCLIFallbackModelUnset(t *testing.T) {
	t.Parallel()
	r := parityRun(t, &claudetest.MessagesOptions{
		MaxRetries: 2,
		Respond: func(req *claudetest.Request) *claudetest.Reply {
			if strings.Contains(req.Params.Model, "sonnet") {
				return claudetest.ErrorReply(529, "overloaded_error", "Overloaded")
			}
			return claudetest.TextReply("answered by another model")
		},
	}, func(o *claude.Options) { o.Model = "claude-sonnet-4-5" })
	msgs := turnOf(t, r.Ctx, r.S, "hi")
	res := result(t, msgs)
	if res.Result == "answered by another model" {
		t.Errorf("without a fallback model the CLI still switched: %+v", res)
	}
	for _, req := range mainRequests(r.API) {
		if !strings.Contains(req.Params.Model, "sonnet") {
			t.Errorf("asked model %q without a fallback", req.Params.Model)
		}
	}
}

// writeProjectDeny writes a project settings file denying the Bash tool.
func writeProjectDeny(dir string) {
	writeFiles(dir, map[string]string{".claude/settings.json": `{"permissions":{"deny":["Bash"]}}`})
}

// TestRealCLISettingSources: a project settings file that denies Bash
// takes the tool away only when SettingSources includes "project"; with
// "user" alone the file is not read. On every pinned CLI.
func TestRealCLISettingSources(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		sources  []claude.SettingSource
		wantBash bool
	}{
		{"project", []claude.SettingSource{claude.SettingSourceProject}, false},
		{"user", []claude.SettingSource{claude.SettingSourceUser}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := parityRun(t, nil, func(o *claude.Options) {
				writeProjectDeny(o.Cwd)
				o.SettingSources = tc.sources
			})
			turnOf(t, r.Ctx, r.S, "hi")
			reqs := mainRequests(r.API)
			if len(reqs) == 0 {
				t.Fatal("no messages request")
			}
			tools := reqs[len(reqs)-1].Params.ToolNames()
			if got := slices.Contains(tools, "Bash"); got != tc.wantBash {
				t.Errorf("sources %v: Bash offered = %v, want %v (tools %v)", tc.sources, got, tc.wantBash, tools)
			}
		})
	}
}

// TestRealCLIReadMCPResourceControl: Session.ReadMCPResource reads a
// ui:// resource of a server the CLI connects itself (streamable HTTP) on
// 2.1.330 and newer, which refuse other schemes and in-process servers
// (the caller hosts those); 2.1.197 does not know the request.
func TestRealCLIReadMCPResourceControl(t *testing.T) {
	t.Parallel()
	srv := mcp.NewServer(&mcp.Implementation{Name: "apps", Version: "1.0.0"}, nil)
	const page = "<html><body>card</body></html>"
	srv.AddResource(&mcp.Resource{URI: "ui://apps/card.html", Name: "card", MIMEType: "text/html;profile=mcp-app"},
		func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/html;profile=mcp-app", Text: page}}}, nil
		})
	srv.AddResource(&mcp.Resource{URI: "kb://notes/today", Name: "today", MIMEType: "text/plain"},
		func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain", Text: "remember the milk"}}}, nil
		})
	url, _ := mcptest.ServeHTTP(t, srv)
	inproc := mcp.NewServer(&mcp.Implementation{Name: "local", Version: "1.0.0"}, nil)
	r := parityRun(t, nil, func(o *claude.Options) {
		o.MCPServers = map[string]claude.MCPServerConfig{
			"apps":  &claude.MCPHTTPServer{URL: url + "/"},
			"local": claude.SDKServer(inproc),
		}
	})
	turnOf(t, r.Ctx, r.S, "hi") // the CLI has connected the servers by the end of a turn
	res, err := r.S.ReadMCPResource(r.Ctx, &claude.ReadMCPResourceParams{ServerName: "apps", URI: "ui://apps/card.html"})
	if !r.atLeast("2.1.330") {
		unsupported(t, "ReadMCPResource", err)
		return
	}
	if err != nil {
		t.Fatalf("ReadMCPResource(ui://): %v", err)
	}
	if len(res.Contents) != 1 || res.Contents[0].Text != page || res.Contents[0].URI != "ui://apps/card.html" {
		t.Errorf("ReadMCPResource = %+v", res)
	}
	var ce *claude.ControlError
	if _, err := r.S.ReadMCPResource(r.Ctx, &claude.ReadMCPResourceParams{ServerName: "apps", URI: "kb://notes/today"}); !errors.As(err, &ce) || errors.Is(err, claude.ErrUnsupportedRequest) {
		t.Errorf("ReadMCPResource(kb://) = %v, want the CLI's refusal (a *ControlError)", err)
	}
	if _, err := r.S.ReadMCPResource(r.Ctx, &claude.ReadMCPResourceParams{ServerName: "local", URI: "ui://local/x.html"}); !errors.As(err, &ce) || !strings.Contains(err.Error(), "SDK MCP") {
		t.Errorf("ReadMCPResource of an in-process server = %v, want the CLI's refusal naming SDK MCP servers", err)
	}
}

// TestRealCLIAgentInitialPrompt: AgentDefinition.InitialPrompt of the
// session's own agent (Options.Agent) reaches the model with the first
// turn, on every pinned CLI.
func TestRealCLIAgentInitialPrompt(t *testing.T) {
	t.Parallel()
	const initial = "INITIAL-PROMPT-5C2E: read the changelog first."
	r := parityRun(t, nil, func(o *claude.Options) {
		o.Agents = map[string]claude.AgentDefinition{"starter": {Description: "Starts with a fixed prompt", Prompt: "You are STARTER.", InitialPrompt: initial}}
		o.Agent = "starter"
	})
	turnOf(t, r.Ctx, r.S, "hi")
	reqs := mainRequests(r.API)
	if len(reqs) == 0 {
		t.Fatal("no messages request")
	}
	if body := string(reqs[0].Body); !strings.Contains(body, "INITIAL-PROMPT-5C2E") {
		t.Errorf("the first request lacks the agent's initial prompt (CLI %s)", r.Version)
	}
}

// TestRealCLIAgentMCPServers: a server defined in AgentDefinition.MCPServers
// is connected for the subagent only: its tools are offered in the
// subagent's request and not in the main thread's.
func TestRealCLIAgentMCPServers(t *testing.T) {
	t.Parallel()
	rs := newRemoteServer(t, "http")
	r := parityRun(t, &claudetest.MessagesOptions{Respond: func(req *claudetest.Request) *claudetest.Reply {
		switch {
		case req.Subagent():
			return claudetest.TextReply("LOOKED-UP")
		case req.Params.ToolResult("toolu_agent_mcp") != nil:
			return claudetest.TextReply("done")
		default:
			return claudetest.ToolUseReply("toolu_agent_mcp", "Agent", map[string]any{
				"description": "Look it up", "prompt": "Look up the key", "subagent_type": "looker", "run_in_background": false,
			})
		}
	}}, func(o *claude.Options) {
		o.Agents = map[string]claude.AgentDefinition{"looker": {
			Description: "Looks keys up",
			Prompt:      "You look keys up.",
			MCPServers:  []claude.AgentMCPServer{{Servers: map[string]claude.MCPServerConfig{"agentkb": rs.config("http")}}},
		}}
	})
	turnOf(t, r.Ctx, r.S, "look up the key")
	// The tool is offered directly or, where the CLI defers MCP tools
	// (2.1.330 and newer), named for ToolSearch: either way its name is
	// in the subagent's request body and nowhere in the main thread's.
	const tool = "mcp__agentkb__lookup"
	var inSub, inMain bool
	for _, req := range mainRequests(r.API) {
		has := strings.Contains(string(req.Body), tool)
		if req.Subagent() {
			inSub = inSub || has
		} else {
			inMain = inMain || has
		}
	}
	if !inSub {
		t.Errorf("the subagent was not offered %s (CLI %s)", tool, r.Version)
	}
	if inMain {
		t.Errorf("the main thread was offered the agent's own server's tool %s", tool)
	}
	if len(rs.headers()) == 0 {
		t.Errorf("the CLI never connected to the agent's server")
	}
}
