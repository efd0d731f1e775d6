package claude_test

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
)

// TestRealCLIMCPToolPolicy: what the real CLI does with MCPToolPolicy.
// On an in-process server, 2.1.197 ignores it, and from 2.1.330 on
// always_deny denies the tool (its handler never runs) and always_ask
// asks CanUseTool even for a tool AllowedTools grants, while always_allow
// is ignored there: the call is asked about as any other. A remote
// server's policies are ignored at start, whether its entry came in a
// file or in the initialize request (2.1.337 reads them there only in
// its own remote sessions), and applied from SetMCPServers on: after one,
// always_allow runs the tool without asking.
func TestRealCLIMCPToolPolicy(t *testing.T) {
	t.Parallel()
	k := newKBServer()
	rs := newRemoteServer(t, "http")
	var mu sync.Mutex
	var asked []string
	var servers map[string]claude.MCPServerConfig
	r := newMCPRun(t, []*claudetest.Reply{
		claudetest.TextReply("hi"),
		claudetest.ToolUseReply("toolu_search", "mcp__kb__search", map[string]string{}),
		claudetest.ToolUseReply("toolu_bigplain", "mcp__kb__bigplain", map[string]string{}),
		claudetest.ToolUseReply("toolu_lookup", "mcp__remote__lookup", map[string]string{"key": "k"}),
		claudetest.ToolUseReply("toolu_work", "mcp__kb__work", map[string]string{}),
		claudetest.TextReply("done"),
		claudetest.ToolUseReply("toolu_lookup2", "mcp__remote__lookup", map[string]string{"key": "k"}),
		claudetest.ToolUseReply("toolu_work2", "mcp__kb__work", map[string]string{}),
		claudetest.TextReply("done again"),
	}, func(o *claude.Options) {
		kb := claude.SDKServer(k.srv)
		kb.Tools = []claude.MCPToolPolicy{
			{Name: "search", PermissionPolicy: claude.MCPToolAlwaysAsk},
			{Name: "bigplain", PermissionPolicy: claude.MCPToolAlwaysAllow},
			{Name: "work", PermissionPolicy: claude.MCPToolAlwaysDeny},
		}
		remote := rs.config("http").(*claude.MCPHTTPServer)
		remote.Tools = []claude.MCPToolPolicy{{Name: "lookup", PermissionPolicy: claude.MCPToolAlwaysAllow}}
		servers = map[string]claude.MCPServerConfig{"kb": kb, "remote": remote}
		o.MCPServers = servers
		o.AllowedTools = []string{"mcp__kb__search"}
		o.CanUseTool = func(ctx context.Context, req *claude.ToolPermissionRequest) (claude.PermissionResult, error) {
			mu.Lock()
			asked = append(asked, req.ToolName)
			mu.Unlock()
			return &claude.PermissionAllow{}, nil
		}
	})
	turnOf(t, r.Ctx, r.S, "hello")
	waitMCPConnected(t, r.Ctx, r.S, "remote")
	msgs := turnOf(t, r.Ctx, r.S, "use the tools")

	honoured := r.atLeast("2.1.330") // in-process servers' policies
	for _, id := range []string{"toolu_search", "toolu_bigplain", "toolu_lookup"} {
		if tr := toolResultOf(msgs, id); tr == nil || tr.IsError {
			t.Errorf("%s: %+v, want a result", id, tr)
		}
	}
	work := toolResultOf(msgs, "toolu_work")
	if work == nil || work.IsError != honoured {
		t.Errorf("CLI %s: work (always_deny) result = %+v, want IsError %v", r.Version, work, honoured)
	}
	var called []string
	for _, ex := range r.mcpExchanges("kb", false) {
		if ex.Message.Method == "tools/call" {
			called = append(called, ex.Message.Params.Name)
		}
	}
	if got := slices.Contains(called, "work"); got == honoured {
		t.Errorf("CLI %s: work (always_deny) called = %v, want %v (calls: %q)", r.Version, got, !honoured, called)
	}

	askedFor := func() []string {
		mu.Lock()
		defer mu.Unlock()
		out := slices.Clone(asked)
		asked = nil
		return out
	}
	// bigplain: always_allow, ignored in process; lookup: always_allow,
	// ignored at start.
	want := []string{"mcp__kb__bigplain", "mcp__remote__lookup", "mcp__kb__work"}
	if honoured {
		want = []string{"mcp__kb__search", "mcp__kb__bigplain", "mcp__remote__lookup"}
	}
	if got := askedFor(); !slices.Equal(got, want) {
		t.Errorf("CLI %s: CanUseTool asked for %q, want %q", r.Version, got, want)
	}

	// The same servers again, through SetMCPServers: the remote
	// server's policy now holds.
	res, err := r.S.SetMCPServers(r.Ctx, servers)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(res.Added, "remote") {
		t.Errorf("SetMCPServers added %q, want the remote server among them (connected again)", res.Added)
	}
	waitMCPConnected(t, r.Ctx, r.S, "remote")
	msgs = turnOf(t, r.Ctx, r.S, "look it up again")
	if tr := toolResultOf(msgs, "toolu_lookup2"); tr == nil || tr.IsError {
		t.Errorf("lookup after SetMCPServers: %+v, want a result", tr)
	}
	if w := toolResultOf(msgs, "toolu_work2"); w == nil || w.IsError != honoured {
		t.Errorf("CLI %s: work (always_deny) after SetMCPServers = %+v, want IsError %v", r.Version, w, honoured)
	}
	want = nil // lookup: always_allow
	if !honoured {
		want = []string{"mcp__kb__work"}
	}
	if got := askedFor(); !slices.Equal(got, want) {
		t.Errorf("CLI %s: after SetMCPServers, CanUseTool asked for %q, want %q", r.Version, got, want)
	}
}
