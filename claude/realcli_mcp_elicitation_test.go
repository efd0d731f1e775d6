package claude_test

import (
	"strings"
	"testing"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
	"github.com/tetherhq/tether/internal/mcptest"
)

// TestRealCLIMCPRemoteElicitation: a remote (streamable HTTP) server's
// elicitation reaches Options.OnElicitation through the real CLI, and the
// answer reaches the tool, where an in-process server's is refused in -p
// mode (the elicitation scenario). Form mode on every pinned CLI; URL
// mode from 2.1.336 on (2.1.197 declares no URL capability, so the
// server's request fails and OnElicitation is not called), and the
// server's notifications/elicitation/complete then reaches the session as
// an ElicitationCompleteMessage.
func TestRealCLIMCPRemoteElicitation(t *testing.T) {
	t.Parallel()
	// mcptest's deploy server: pick asks a form, signin a page.
	url, _ := mcptest.ServeHTTP(t, mcptest.Deploy())
	var asked elicitRecorder
	r := newMCPRun(t, []*claudetest.Reply{
		claudetest.TextReply("hi"),
		claudetest.ToolUseReply("toolu_pick", "mcp__deploy__pick", map[string]any{}),
		claudetest.ToolUseReply("toolu_signin", "mcp__deploy__signin", map[string]any{}),
		claudetest.TextReply("deployed"),
	}, func(o *claude.Options) {
		o.MCPServers = map[string]claude.MCPServerConfig{"deploy": &claude.MCPHTTPServer{URL: url + "/"}}
		o.AllowedTools = []string{"mcp__deploy"}
		o.OnElicitation = asked.answer
	})
	turnOf(t, r.Ctx, r.S, "hello")
	waitMCPConnected(t, r.Ctx, r.S, "deploy")
	msgs := turnOf(t, r.Ctx, r.S, "deploy it")

	text := func(id string) string { return toolResultText(msgs, id) }
	if got := text("toolu_pick"); !strings.Contains(got, "accept map[env:staging]") {
		t.Errorf("pick's result = %s, want the form's answer", got)
	}
	form, byURL := asked.lastOf(""), asked.lastOf("url")
	if form == nil || form.ServerName != "deploy" || form.Message != mcptest.DeployMessage || !strings.Contains(string(form.RequestedSchema), `"env"`) {
		t.Errorf("form elicitation = %+v", form)
	}
	completed := find[*claude.ElicitationCompleteMessage](msgs)
	if !r.atLeast("2.1.336") {
		if byURL != nil || !strings.Contains(text("toolu_signin"), `does not support \"url\" elicitation`) {
			t.Errorf("CLI %s: url elicitation asked %+v, signin's result %s; want it refused before OnElicitation", r.Version, byURL, text("toolu_signin"))
		}
		return
	}
	if byURL == nil || byURL.URL != mcptest.SignInURL || byURL.ElicitationID != "signin-1" || byURL.ServerName != "deploy" {
		t.Errorf("CLI %s: url elicitation = %+v", r.Version, byURL)
	}
	if got := text("toolu_signin"); !strings.Contains(got, "signin accept") {
		t.Errorf("CLI %s: signin's result = %s", r.Version, got)
	}
	if len(completed) != 1 || completed[0].MCPServerName != "deploy" || completed[0].ElicitationID != "signin-1" {
		t.Errorf("CLI %s: elicitation_complete = %+v in %v", r.Version, completed, types(msgs))
	}
}
