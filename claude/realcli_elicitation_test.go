package claude_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
)

// elicited records that the elicitation scenario's callback ran.
var elicited atomic.Bool

func init() {
	addScenarios(scenario{
		name: "elicitation",
		guards: `An in-process MCP tool that asks the user for input (elicitation) either reaches Options.OnElicitation
through the real CLI, the answer reaching the tool, or (2.1.197, 2.1.330 in -p mode) is refused by the CLI's MCP
client ("client does not support elicitation") without calling OnElicitation: never a hang or a crash.`,
		api: func() *claudetest.MessagesOptions {
			return &claudetest.MessagesOptions{Replies: []*claudetest.Reply{
				claudetest.ToolUseReply("toolu_el", "mcp__deploy__pick", map[string]any{}),
				claudetest.TextReply("deployed"),
			}}
		},
		opts: func(o *claude.Options) {
			srv := newDeployServer()
			o.MCPServers = map[string]claude.MCPServerConfig{"deploy": claude.SDKServer(srv)}
			o.AllowedTools = []string{"mcp__deploy__pick"}
			o.OnElicitation = func(ctx context.Context, req *claude.ElicitationRequest) (*claude.ElicitationResult, error) {
				elicited.Store(true)
				if !isDeployForm(req) {
					return nil, fmt.Errorf("unexpected request %+v", req)
				}
				return acceptElicitation(req), nil
			}
		},
		run: func(t *testing.T, h *harness) {
			h.turn(t, "deploy it")
			reqs := h.API.MessagesRequests()
			tr := reqs[len(reqs)-1].Params.ToolResult("toolu_el")
			has := func(s string) bool {
				return tr != nil && slices.ContainsFunc(tr.Content, func(b claudetest.ContentBlock) bool { return strings.Contains(b.Text, s) })
			}
			switch {
			case has("accept map[env:staging]"):
				t.Log("the CLI forwarded the elicitation to OnElicitation")
			case has("client does not support elicitation"):
				// The CLI's MCP client does not declare the elicitation
				// capability to in-process servers in -p mode.
				if elicited.Load() {
					t.Error("OnElicitation was called, yet the tool saw the capability missing")
				}
			default:
				t.Errorf("the tool's result = %+v", tr)
			}
		},
	})
}

// newDeployServer is an MCP server named deploy whose tool pick asks
// "Which environment?" with a form (elicitation) and answers with the
// action and the values it got.
func newDeployServer() *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "deploy", Version: "1.0.0"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "pick", Description: "Ask which environment"},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			res, err := req.Session.Elicit(ctx, deployForm())
			if err != nil {
				return nil, nil, err
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("%s %v", res.Action, res.Content)}}}, nil, nil
		})
	return srv
}

// deployForm is the deploy server's question: which environment, as a
// form with one string field.
func deployForm() *mcp.ElicitParams {
	return &mcp.ElicitParams{
		Message: "Which environment?",
		RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{
			"env": map[string]any{"type": "string"}}},
	}
}

// isDeployForm reports whether req is deployForm as the CLI forwarded
// it from the server named deploy.
func isDeployForm(req *claude.ElicitationRequest) bool {
	return req != nil && req.ServerName == "deploy" && req.Message == "Which environment?" && strings.Contains(string(req.RequestedSchema), `"env"`)
}

// acceptElicitation accepts req: a form with env=staging (deployForm's
// answer), a URL with nothing.
func acceptElicitation(req *claude.ElicitationRequest) *claude.ElicitationResult {
	if req.Mode == "url" {
		return &claude.ElicitationResult{Action: claude.ElicitationAccept}
	}
	return &claude.ElicitationResult{Action: claude.ElicitationAccept, Content: json.RawMessage(`{"env":"staging"}`)}
}

// elicitRecorder is an Options.OnElicitation (answer) that keeps every
// request and accepts it (acceptElicitation).
type elicitRecorder struct {
	mu   sync.Mutex
	reqs []*claude.ElicitationRequest
}

func (l *elicitRecorder) answer(_ context.Context, req *claude.ElicitationRequest) (*claude.ElicitationResult, error) {
	l.mu.Lock()
	l.reqs = append(l.reqs, req)
	l.mu.Unlock()
	return acceptElicitation(req), nil
}

// all returns the requests so far, in order.
func (l *elicitRecorder) all() []*claude.ElicitationRequest {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.reqs)
}

// lastOf returns the last request in mode ("" for a form), or nil.
func (l *elicitRecorder) lastOf(mode string) *claude.ElicitationRequest {
	var last *claude.ElicitationRequest
	for _, r := range l.all() {
		if r.Mode == mode || (mode == "" && r.Mode == "form") {
			last = r
		}
	}
	return last
}
