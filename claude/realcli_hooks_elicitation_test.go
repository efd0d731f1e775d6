package claude_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
)

// The elicitation hooks, against the real CLI: an external MCP server
// (streamable HTTP on an httptest server) elicits. The CLI declares the
// elicitation capability to external servers only, not to in-process ones
// (see the elicitation scenario), so this is how the events fire offline.
func init() {
	var (
		elicitLog *eventLog
		elicitSrv *httptest.Server
		elicitMCP *mcp.Server
	)
	addScenarios(scenario{
		name: "hooks_events_elicitation",
		guards: "An external MCP server's elicitation fires Elicitation (server, message, mode, schema), then the host's " +
			"OnElicitation answers, then ElicitationResult (its action and content) and a Notification (elicitation_response), " +
			"on both versions. The CLI reads an elicitation hook's answer only from a command hook's output: a HookFunc's " +
			"ElicitationHookOutput changes nothing, and the tool gets OnElicitation's answer.",
		api: func() *claudetest.MessagesOptions {
			return &claudetest.MessagesOptions{Replies: []*claudetest.Reply{
				claudetest.ToolUseReply("toolu_elicit", "mcp__ext__pick", map[string]any{}),
				claudetest.TextReply("picked"),
			}}
		},
		opts: func(o *claude.Options) {
			elicitLog = newEventLog()
			elicitMCP = mcp.NewServer(&mcp.Implementation{Name: "ext", Version: "1.0.0"}, nil)
			mcp.AddTool(elicitMCP, &mcp.Tool{Name: "pick", Description: "Ask which environment"},
				func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
					res, err := req.Session.Elicit(ctx, deployForm())
					text := ""
					if err != nil {
						text = "elicit failed: " + err.Error()
					} else {
						text = fmt.Sprintf("%s %v", res.Action, res.Content)
					}
					return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil, nil
				})
			elicitSrv = httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return elicitMCP }, nil))
			o.MCPServers = map[string]claude.MCPServerConfig{"ext": &claude.MCPHTTPServer{URL: elicitSrv.URL}}
			o.AllowedTools = []string{"mcp__ext__pick"}
			o.OnElicitation = func(ctx context.Context, req *claude.ElicitationRequest) (*claude.ElicitationResult, error) {
				return &claude.ElicitationResult{Action: claude.ElicitationAccept, Content: json.RawMessage(`{"env":"from-callback"}`)}, nil
			}
			elicitLog.register(o, map[claude.HookEvent]func(*claude.HookInput) *claude.HookOutput{
				claude.HookEventElicitation: func(*claude.HookInput) *claude.HookOutput {
					return &claude.HookOutput{Event: &claude.ElicitationHookOutput{Action: "accept", Content: json.RawMessage(`{"env":"from-hook"}`)}}
				},
			}, claude.HookEventElicitation, claude.HookEventElicitationResult, claude.HookEventNotification)
		},
		run: func(t *testing.T, h *harness) {
			t.Cleanup(func() {
				for ss := range elicitMCP.Sessions() {
					ss.Close()
				}
				elicitSrv.Close()
			})
			// The CLI connects external servers in the background: a
			// turn started before "ext" is connected finds no
			// mcp__ext__pick ("No such tool available"). Wait for the
			// state mcp_status reports, not for time.
			waitMCPConnected(t, h.Ctx, h.S, "ext")
			msgs := h.turn(t, "pick an environment")
			if _, tr := toolResult(t, msgs, "toolu_elicit"); !strings.Contains(tr.Text(), "accept map[env:from-callback]") {
				t.Errorf("tool result = %q, want OnElicitation's answer", tr.Text())
			}
			el := one[*claude.ElicitationHookInput](t, elicitLog, claude.HookEventElicitation)
			if el.MCPServerName != "ext" || el.Message != "Which environment?" || el.Mode != "form" || !strings.Contains(string(el.RequestedSchema), `"env"`) {
				t.Errorf("Elicitation input = %+v", el)
			}
			er := one[*claude.ElicitationResultHookInput](t, elicitLog, claude.HookEventElicitationResult)
			if er.MCPServerName != "ext" || er.Action != "accept" || !strings.Contains(string(er.Content), "from-callback") {
				t.Errorf("ElicitationResult input = %+v", er)
			}
			waitFired(t, h.Ctx, elicitLog, claude.HookEventNotification)
			if !slices.ContainsFunc(events[*claude.NotificationHookInput](t, elicitLog, claude.HookEventNotification),
				func(n *claude.NotificationHookInput) bool {
					return n.NotificationType == "elicitation_response" && strings.Contains(n.Message, "ext")
				}) {
				t.Errorf("no elicitation_response Notification: %v", elicitLog.get(claude.HookEventNotification))
			}
		},
	})
}
