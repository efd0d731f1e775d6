package claude_test

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
)

func init() {
	addScenarios(scenario{
		name: "tool_results_extra",
		guards: `The structured results of TaskCreate, TaskGet, TaskUpdate, TaskList, ListMcpResourcesTool, ReadMcpResourceTool
(an external MCP server's resource), EnterWorktree and ExitWorktree (in a git repository), EnterPlanMode and
ExitPlanMode, and ReadMcpResourceDirTool (whose listing neither build enables) decode into their Go types with the real CLI's values. 2.1.330 disables the Task* tools in SDK
sessions, and both CLIs disable EnterPlanMode and ExitPlanMode there: those results are a *ToolUseError saying so.`,
		api: func() *claudetest.MessagesOptions {
			return &claudetest.MessagesOptions{Replies: []*claudetest.Reply{
				claudetest.ToolUseReply("toolu_tc", "TaskCreate", map[string]any{"subject": "Write tests", "description": "Cover the parser"}),
				claudetest.ToolUseReply("toolu_tg", "TaskGet", map[string]any{"taskId": "1"}),
				claudetest.ToolUseReply("toolu_tu", "TaskUpdate", map[string]any{"taskId": "1", "status": "in_progress"}),
				claudetest.ToolUseReply("toolu_tl", "TaskList", map[string]any{}),
				claudetest.ToolUseReply("toolu_lr", "ListMcpResourcesTool", map[string]any{"server": "docs"}),
				claudetest.ToolUseReply("toolu_rr", "ReadMcpResourceTool", map[string]any{"server": "docs", "uri": "file:///notes.txt"}),
				claudetest.ToolUseReply("toolu_rd", "ReadMcpResourceDirTool", map[string]any{"server": "docs", "uri": "file:///"}),
				claudetest.ToolUseReply("toolu_ew", "EnterWorktree", map[string]any{"name": "wt1"}),
				claudetest.ToolUseReply("toolu_xw", "ExitWorktree", map[string]any{"action": "remove", "discard_changes": true}),
				claudetest.ToolUseReply("toolu_ep", "EnterPlanMode", map[string]any{}),
				claudetest.ToolUseReply("toolu_xp", "ExitPlanMode", map[string]any{"plan": "1. Write the tests"}),
				claudetest.TextReply("done"),
			}}
		},
		opts: func(o *claude.Options) {
			o.PermissionMode = claude.PermissionModeBypassPermissions
			if o.Cwd == "" {
				return
			}
			if err := os.WriteFile(o.Cwd+"/README", []byte("repo\n"), 0o644); err != nil {
				panic(err)
			}
			for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "README"}, {"-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init"}} {
				cmd := exec.Command("git", args...)
				cmd.Dir = o.Cwd
				if out, err := cmd.CombinedOutput(); err != nil {
					panic(string(out))
				}
			}
			srv := mcp.NewServer(&mcp.Implementation{Name: "docs", Version: "1.0.0"}, nil)
			srv.AddResource(&mcp.Resource{URI: "file:///notes.txt", Name: "notes", MIMEType: "text/plain", Description: "The notes"},
				func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
					return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "file:///notes.txt", MIMEType: "text/plain", Text: "remember the milk"}}}, nil
				})
			hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
			extraServers.Store(o, func() {
				hs.CloseClientConnections()
				for ss := range srv.Sessions() {
					ss.Close()
				}
				hs.Close()
			})
			if o.MCPServers == nil {
				o.MCPServers = map[string]claude.MCPServerConfig{}
			}
			o.MCPServers["docs"] = &claude.MCPHTTPServer{URL: hs.URL}
		},
		run: runToolResultsExtra,
	})
}

func runToolResultsExtra(t *testing.T, h *harness) {
	if v, ok := extraServers.LoadAndDelete(h.Opts); ok {
		t.Cleanup(v.(func()))
	}
	// The turn reads the external "docs" server's resources, which the
	// CLI connects in the background: wait until it is connected.
	waitMCPConnected(t, h.Ctx, h.S, "docs")
	results := map[string]*claude.UserMessage{}
	for _, u := range find[*claude.UserMessage](h.turn(t, "do it all")) {
		for _, tr := range u.ToolResults() {
			results[tr.ToolUseID] = u
		}
	}
	isNew := newer(t, h)
	disabled := func(id, tool string) {
		t.Helper()
		_, err := claude.DecodeToolUseResult[struct{}](results[id])
		var te *claude.ToolUseError
		if !errors.As(err, &te) || !strings.Contains(te.Message, "No such tool available: "+tool) {
			t.Errorf("%s result: %v, want a *ToolUseError saying it is not available", tool, err)
		}
	}

	if isNew {
		for id, tool := range map[string]string{"toolu_tc": "TaskCreate", "toolu_tg": "TaskGet", "toolu_tu": "TaskUpdate", "toolu_tl": "TaskList"} {
			disabled(id, tool)
		}
	} else {
		tc, err := claude.DecodeToolUseResult[claude.TaskCreateResult](results["toolu_tc"])
		if err != nil || tc.Task != (claude.TaskRef{ID: "1", Subject: "Write tests"}) {
			t.Errorf("TaskCreate result = %+v, %v", tc, err)
		}
		tg, err := claude.DecodeToolUseResult[claude.TaskGetResult](results["toolu_tg"])
		if err != nil || tg.Task == nil || tg.Task.Description != "Cover the parser" || tg.Task.Status != "pending" || tg.Task.Blocks == nil {
			t.Errorf("TaskGet result = %+v, %v", tg, err)
		}
		tu, err := claude.DecodeToolUseResult[claude.TaskUpdateResult](results["toolu_tu"])
		if err != nil || !tu.Success || tu.TaskID != "1" || !slices.Equal(tu.UpdatedFields, []string{"status"}) ||
			tu.StatusChange == nil || *tu.StatusChange != (claude.TaskStatusChange{From: "pending", To: "in_progress"}) {
			t.Errorf("TaskUpdate result = %+v, %v", tu, err)
		}
		tl, err := claude.DecodeToolUseResult[claude.TaskListResult](results["toolu_tl"])
		if err != nil || len(tl.Tasks) != 1 || tl.Tasks[0].Status != "in_progress" || tl.Tasks[0].Subject != "Write tests" {
			t.Errorf("TaskList result = %+v, %v", tl, err)
		}
	}

	lr, err := claude.DecodeToolUseResult[claude.ListMCPResourcesResult](results["toolu_lr"])
	want := claude.ListMCPResourcesResult{{URI: "file:///notes.txt", Name: "notes", MIMEType: "text/plain", Description: "The notes", Server: "docs"}}
	if err != nil || !slices.Equal(lr, want) {
		t.Errorf("ListMcpResources result = %+v, %v", lr, err)
	}
	rr, err := claude.DecodeToolUseResult[claude.ReadMCPResourceToolResult](results["toolu_rr"])
	if err != nil || len(rr.Contents) != 1 || rr.Contents[0] != (claude.MCPResourceToolContents{URI: "file:///notes.txt", MIMEType: "text/plain", Text: "remember the milk"}) {
		t.Errorf("ReadMcpResource result = %+v, %v", rr, err)
	}

	// Neither CLI build lists directory resources: 2.1.197 says so in the
	// result's error member, 2.1.330 fails the tool.
	rd, err := claude.DecodeToolUseResult[claude.ReadMCPResourceDirResult](results["toolu_rd"])
	var te *claude.ToolUseError
	if isNew {
		if !errors.As(err, &te) || !strings.Contains(te.Message, "Directory listing is not enabled") {
			t.Errorf("ReadMcpResourceDir result = %+v, %v; want a *ToolUseError", rd, err)
		}
	} else if err != nil || rd.Resources == nil || len(rd.Resources) != 0 || !strings.Contains(rd.Error, "Directory listing is not enabled") {
		t.Errorf("ReadMcpResourceDir result = %+v, %v", rd, err)
	}

	wt := filepath.Join(h.Opts.Cwd, ".claude", "worktrees", "wt1")
	ew, err := claude.DecodeToolUseResult[claude.EnterWorktreeResult](results["toolu_ew"])
	if err != nil || ew.WorktreePath != wt || ew.WorktreeBranch != "worktree-wt1" || !strings.Contains(ew.Message, "Created worktree") {
		t.Errorf("EnterWorktree result = %+v, %v", ew, err)
	}
	xw, err := claude.DecodeToolUseResult[claude.ExitWorktreeResult](results["toolu_xw"])
	if err != nil || xw.Action != "remove" || xw.OriginalCwd != h.Opts.Cwd || xw.WorktreePath != wt || xw.WorktreeBranch != "worktree-wt1" {
		t.Errorf("ExitWorktree result = %+v, %v", xw, err)
	}
	if _, err := os.Stat(wt); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the worktree is still there after ExitWorktree remove: %v", err)
	}

	// Neither CLI enables plan mode's tools in an SDK session.
	disabled("toolu_ep", "EnterPlanMode")
	disabled("toolu_xp", "ExitPlanMode")
}

// WebFetch's structured result, offline: the page is served over TLS by
// an httptest server the CLI trusts through NODE_EXTRA_CA_CERTS, the
// claude.ai domain check is off (skipWebFetchPreflight), and the fake
// Messages API plays the model that applies the prompt to the page.
func TestRealCLIWebFetchResult(t *testing.T) {
	page := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, "<html><body>Hello page</body></html>")
	}))
	t.Cleanup(page.Close)
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: page.Certificate().Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	url := page.URL + "/page"
	runReal(t, scenario{
		name: "web_fetch_result",
		api: func() *claudetest.MessagesOptions {
			return &claudetest.MessagesOptions{Replies: []*claudetest.Reply{
				claudetest.ToolUseReply("toolu_wf", "WebFetch", map[string]any{"url": url, "prompt": "Summarise the page"}),
				claudetest.TextReply("A page that says hello."), // the model applying the prompt
				claudetest.TextReply("done"),
			}}
		},
		opts: func(o *claude.Options) {
			o.AllowedTools = []string{"WebFetch"}
			o.Settings = `{"skipWebFetchPreflight":true}`
			if o.Env == nil {
				o.Env = map[string]string{}
			}
			o.Env["NODE_EXTRA_CA_CERTS"] = ca
		},
		run: func(t *testing.T, h *harness) {
			var res *claude.UserMessage
			for _, u := range find[*claude.UserMessage](h.turn(t, "fetch it")) {
				for _, tr := range u.ToolResults() {
					if tr.ToolUseID == "toolu_wf" {
						res = u
					}
				}
			}
			if res == nil {
				t.Fatal("no WebFetch result")
			}
			wf, err := claude.DecodeToolUseResult[claude.WebFetchResult](res)
			if err != nil || wf.Code != 200 || wf.CodeText != "OK" || wf.URL != url || wf.Bytes != len("<html><body>Hello page</body></html>") ||
				wf.Result != "A page that says hello." {
				t.Errorf("WebFetch result = %+v, %v (raw %s)", wf, err, res.ToolUseResult)
			}
		},
	})
}

// WebSearch's structured result, offline: the fake Messages API answers
// the CLI's search request as the API's web_search server tool does.
func TestRealCLIWebSearchResult(t *testing.T) {
	search := &claudetest.Reply{Content: []claudetest.ContentBlock{
		{Type: "server_tool_use", Raw: json.RawMessage(`{"type":"server_tool_use","id":"srvtoolu_01","name":"web_search","input":{"query":"go iterators"}}`)},
		{Type: "web_search_tool_result", Raw: json.RawMessage(`{"type":"web_search_tool_result","tool_use_id":"srvtoolu_01","content":[` +
			`{"type":"web_search_result","title":"Range over function types","url":"https://go.dev/blog/range-functions","encrypted_content":"abc","page_age":null}]}`)},
		claudetest.TextBlock("Go 1.23 added range-over-func iterators."),
	}}
	runReal(t, scenario{
		name: "web_search_result",
		api: func() *claudetest.MessagesOptions {
			return &claudetest.MessagesOptions{Replies: []*claudetest.Reply{
				claudetest.ToolUseReply("toolu_ws", "WebSearch", map[string]any{"query": "go iterators"}),
				search,
				claudetest.TextReply("done"),
			}}
		},
		opts: func(o *claude.Options) { o.AllowedTools = []string{"WebSearch"} },
		run: func(t *testing.T, h *harness) {
			var res *claude.UserMessage
			for _, u := range find[*claude.UserMessage](h.turn(t, "search")) {
				for _, tr := range u.ToolResults() {
					if tr.ToolUseID == "toolu_ws" {
						res = u
					}
				}
			}
			if res == nil {
				t.Fatal("no WebSearch result")
			}
			ws, err := claude.DecodeToolUseResult[claude.WebSearchResult](res)
			want := []claude.WebSearchResultItem{
				{ToolUseID: "srvtoolu_01", Hits: []claude.WebSearchHit{{Title: "Range over function types", URL: "https://go.dev/blog/range-functions"}}},
				{Text: "Go 1.23 added range-over-func iterators."},
			}
			if err != nil || ws.Query != "go iterators" || ws.SearchCount != 1 || !reflect.DeepEqual(ws.Results, want) {
				t.Errorf("WebSearch result = %+v, %v (raw %s)", ws, err, res.ToolUseResult)
			}
		},
	})
}

func init() {
	addScenarios(scenario{
		name: "tool_results_schedule_wakeup",
		guards: `ScheduleWakeup's structured result decodes into ScheduleWakeupResult: 2.1.330 clamps a 30 s delay to 60 s and
then stops the loop (stopped, one wake-up cancelled); 2.1.197, outside a /loop, schedules nothing (zeros) and does
not know "stop" (a *ToolUseError).`,
		api: func() *claudetest.MessagesOptions {
			return &claudetest.MessagesOptions{Replies: []*claudetest.Reply{
				claudetest.ToolUseReply("toolu_sw", "ScheduleWakeup", map[string]any{"delaySeconds": 30, "reason": "wait for CI", "prompt": "check CI"}),
				claudetest.ToolUseReply("toolu_stop", "ScheduleWakeup", map[string]any{"stop": true}),
				claudetest.TextReply("done"),
			}}
		},
		opts: func(o *claude.Options) { o.AllowedTools = []string{"ScheduleWakeup"} },
		run: func(t *testing.T, h *harness) {
			results := map[string]*claude.UserMessage{}
			for _, u := range find[*claude.UserMessage](h.turn(t, "loop")) {
				for _, tr := range u.ToolResults() {
					results[tr.ToolUseID] = u
				}
			}
			sw, err := claude.DecodeToolUseResult[claude.ScheduleWakeupResult](results["toolu_sw"])
			stop, serr := claude.DecodeToolUseResult[claude.ScheduleWakeupResult](results["toolu_stop"])
			if newer(t, h) {
				if err != nil || sw.ClampedDelaySeconds != 60 || !sw.WasClamped || sw.ScheduledFor <= 0 {
					t.Errorf("ScheduleWakeup result = %+v, %v", sw, err)
				}
				if serr != nil || !stop.Stopped || stop.CancelledWakeups != 1 {
					t.Errorf("ScheduleWakeup stop result = %+v, %v", stop, serr)
				}
				return
			}
			if err != nil || sw != (claude.ScheduleWakeupResult{}) {
				t.Errorf("ScheduleWakeup result outside a loop = %+v, %v", sw, err)
			}
			var te *claude.ToolUseError
			if !errors.As(serr, &te) {
				t.Errorf("ScheduleWakeup stop on 2.1.197 = %+v, %v; want a *ToolUseError", stop, serr)
			}
		},
	})
}

func init() {
	addScenarios(scenario{
		name: "tool_results_workflow",
		guards: `Workflow's structured result decodes into WorkflowResult on both CLIs: a script with no phases is launched as a
local_workflow task, with its name, summary and where its script and transcripts are kept.`,
		api: func() *claudetest.MessagesOptions {
			return &claudetest.MessagesOptions{Replies: []*claudetest.Reply{
				claudetest.ToolUseReply("toolu_wf", "Workflow", map[string]any{"script": "export const meta = { name: 'noop', description: 'Does nothing', phases: [] }\nreturn 'nothing'\n"}),
				claudetest.TextReply("done"),
				// The workflow's end may start a turn of its own before the
				// session closes.
				claudetest.TextReply("noted"),
			}}
		},
		opts: func(o *claude.Options) { o.AllowedTools = []string{"Workflow"} },
		run: func(t *testing.T, h *harness) {
			var res *claude.UserMessage
			for _, u := range find[*claude.UserMessage](h.turn(t, "run it")) {
				for _, tr := range u.ToolResults() {
					if tr.ToolUseID == "toolu_wf" {
						res = u
					}
				}
			}
			if res == nil {
				t.Fatal("no Workflow result")
			}
			wf, err := claude.DecodeToolUseResult[claude.WorkflowResult](res)
			if err != nil || wf.Status != "async_launched" || wf.TaskID == "" || wf.TaskType != "local_workflow" || wf.WorkflowName != "noop" ||
				wf.Summary != "Does nothing" || !strings.HasPrefix(wf.RunID, "wf_") || wf.ScriptPath == "" || wf.TranscriptDir == "" {
				t.Errorf("Workflow result = %+v, %v", wf, err)
			}
		},
	})
}
