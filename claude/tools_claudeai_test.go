package claude_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tetherhq/tether/claude"
)

// toolInputExtraCases are inputs of the tools of tools_claudeai.go, shaped
// per sdk-tools.d.ts (0.3.330).
var toolInputExtraCases = []struct {
	tool  string
	input string
	want  claude.ToolInput
}{
	{"Artifact", `{"action":"publish","file_path":"/w/report.html","icon":"chart","title":"Q3 report","description":"The numbers","label":"Draft","url":"https://claude.ai/artifact/x","force":true,"pin":true,"capabilities":{"storage":{}},"contract":"latest"}`,
		&claude.ArtifactInput{Action: "publish", FilePath: "/w/report.html", Icon: "chart", Title: "Q3 report", Description: "The numbers", Label: "Draft",
			URL: "https://claude.ai/artifact/x", Force: true, Pin: true, Capabilities: json.RawMessage(`{"storage":{}}`), Contract: "latest"}},
	{"Artifact", `{"action":"upload_asset","url":"https://claude.ai/artifact/x","file_paths":["a.png","b.png"],"limit":5,"page_token":"p","scope":"all","prompt":"q","out_dir":"/o","asset_id":"abc","after":"n","favicon":"f"}`,
		&claude.ArtifactInput{Action: "upload_asset", URL: "https://claude.ai/artifact/x", FilePaths: []string{"a.png", "b.png"}, Limit: 5, PageToken: "p",
			Scope: "all", Prompt: "q", OutDir: "/o", AssetID: "abc", After: "n", Favicon: "f"}},
	{"ClaudeDesign", `{"operation":"list","arguments":{}}`, &claude.ClaudeDesignInput{Operation: "list", Arguments: json.RawMessage(`{}`)}},
	{"OfferChromeSetup", `{"reason":"log in to your bank"}`, &claude.OfferChromeSetupInput{Reason: "log in to your bank"}},
	{"Projects", `{"method":"project_write","path":"notes.md","content":"hi","local_path":"x.md","present_to_user":true,"query":"q","n":3}`,
		&claude.ProjectsInput{Method: "project_write", Path: "notes.md", Content: "hi", LocalPath: "x.md", PresentToUser: true, Query: "q", N: 3}},
	{"ProposeGoal", `{"condition":"all tests pass","ask_user":false}`, &claude.ProposeGoalInput{Condition: "all tests pass", AskUser: valuePtr(false)}},
	{"propose_skills", `{"proposals":[{"name":"release-notes","kind":"new","description":"Write release notes","evidence":["m.md"],"skillMd":"---\nname: x\n---\n"},{"name":"fix","kind":"improvement","target":"old","description":"d","edits":[{"old_string":"a","new_string":"b"}]}]}`,
		&claude.ProposeSkillsInput{Proposals: []claude.SkillProposal{
			{Name: "release-notes", Kind: "new", Description: "Write release notes", Evidence: []string{"m.md"}, SkillMD: "---\nname: x\n---\n"},
			{Name: "fix", Kind: "improvement", Target: "old", Description: "d", Edits: []claude.SkillEdit{{OldString: "a", NewString: "b"}}},
		}}},
	{"PushNotification", `{"message":"build done","status":"proactive"}`, &claude.PushNotificationInput{Message: "build done", Status: "proactive"}},
	{"ReadMcpResourceDirTool", `{"server":"docs","uri":"file:///d/"}`, &claude.ReadMCPResourceDirInput{Server: "docs", URI: "file:///d/"}},
	{"ReadNotifications", `{}`, &claude.ReadNotificationsInput{}},
	{"RefreshMcpTools", `{"server":"docs"}`, &claude.RefreshMCPToolsInput{Server: "docs"}},
	{"RemoteTrigger", `{"action":"update","trigger_id":"t1","session_id":"s","cursor":"c","body":{"cron":"0 * * * *"}}`,
		&claude.RemoteTriggerInput{Action: "update", TriggerID: "t1", SessionID: "s", Cursor: "c", Body: json.RawMessage(`{"cron":"0 * * * *"}`)}},
	{"SendFeedback", `{"type":"bug","title":"t","details":"d","area":"hooks config","failure_mode":"overeager","task_category":"debug"}`,
		&claude.SendFeedbackInput{Type: "bug", Title: "t", Details: "d", Area: "hooks config", FailureMode: "overeager", TaskCategory: "debug"}},
	{"ShowOnboardingRolePicker", `{}`, &claude.ShowOnboardingRolePickerInput{}},
}

func TestDecodeToolInputExtra(t *testing.T) {
	for _, tc := range toolInputExtraCases {
		t.Run(tc.tool, func(t *testing.T) {
			got, err := claude.DecodeToolInput(tc.tool, json.RawMessage(tc.input))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("decoded (-want +got):\n%s", diff)
			}
			if got.ToolName() != tc.tool {
				t.Errorf("ToolName() = %q", got.ToolName())
			}
			// A round trip keeps every field.
			b, err := json.Marshal(got)
			if err != nil {
				t.Fatal(err)
			}
			again, err := claude.DecodeToolInput(tc.tool, b)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, again); diff != "" {
				t.Errorf("after a round trip through %s (-want +got):\n%s", b, diff)
			}
		})
	}
	if _, err := claude.DecodeToolInput("Projects", json.RawMessage(`{"method":7}`)); err == nil {
		t.Error("a Projects input with a number for method decoded")
	}
}

// decodeResult decodes a tool_use_result as DecodeToolUseResult does.
func decodeResult[T any](raw string) (any, error) {
	v, err := claude.DecodeToolUseResult[T](&claude.UserMessage{ToolUseResult: json.RawMessage(raw)})
	return v, err
}

// toolResultExtraCases are structured results shaped per sdk-tools.d.ts
// (0.3.330); those marked "seen" are what a real CLI sent.
var toolResultExtraCases = []struct {
	name   string
	raw    string
	decode func(string) (any, error)
	want   any
}{
	{"EnterPlanMode", `{"message":"Entered plan mode."}`, decodeResult[claude.EnterPlanModeResult], claude.EnterPlanModeResult{Message: "Entered plan mode."}},
	{"ExitPlanMode", `{"plan":"1. do it","isAgent":false,"filePath":"/p.md","hasTaskTool":true,"planWasEdited":true,"awaitingLeaderApproval":true,"requestId":"r"}`,
		decodeResult[claude.ExitPlanModeResult], claude.ExitPlanModeResult{Plan: valuePtr("1. do it"), FilePath: "/p.md", HasTaskTool: true, PlanWasEdited: true, AwaitingLeaderApproval: true, RequestID: "r"}},
	{"ExitPlanModeNull", `{"plan":null,"isAgent":true}`, decodeResult[claude.ExitPlanModeResult], claude.ExitPlanModeResult{IsAgent: true}},
	{"EnterWorktree", `{"worktreePath":"/r/.claude/worktrees/w","worktreeBranch":"worktree-w","message":"Switched"}`,
		decodeResult[claude.EnterWorktreeResult], claude.EnterWorktreeResult{WorktreePath: "/r/.claude/worktrees/w", WorktreeBranch: "worktree-w", Message: "Switched"}},
	{"ExitWorktree", `{"action":"remove","originalCwd":"/r","worktreePath":"/r/w","worktreeBranch":"b","tmuxSessionName":"t","discardedFiles":2,"discardedCommits":1,"message":"Removed"}`,
		decodeResult[claude.ExitWorktreeResult], claude.ExitWorktreeResult{Action: "remove", OriginalCwd: "/r", WorktreePath: "/r/w", WorktreeBranch: "b", TmuxSessionName: "t", DiscardedFiles: 2, DiscardedCommits: 1, Message: "Removed"}},
	{"TaskCreate", `{"task":{"id":"1","subject":"Write tests"}}`, decodeResult[claude.TaskCreateResult], claude.TaskCreateResult{Task: claude.TaskRef{ID: "1", Subject: "Write tests"}}},
	{"TaskGet", `{"task":{"id":"1","subject":"s","description":"d","status":"in_progress","blocks":["2"],"blockedBy":[]}}`,
		decodeResult[claude.TaskGetResult], claude.TaskGetResult{Task: &claude.TaskDetail{ID: "1", Subject: "s", Description: "d", Status: "in_progress", Blocks: []string{"2"}, BlockedBy: []string{}}}},
	{"TaskGetNull", `{"task":null}`, decodeResult[claude.TaskGetResult], claude.TaskGetResult{}},
	{"TaskList", `{"tasks":[{"id":"1","subject":"s","status":"pending","owner":"me","blockedBy":["0"]}]}`,
		decodeResult[claude.TaskListResult], claude.TaskListResult{Tasks: []claude.TaskSummary{{ID: "1", Subject: "s", Status: "pending", Owner: "me", BlockedBy: []string{"0"}}}}},
	{"TaskUpdate", `{"success":true,"taskId":"1","updatedFields":["status"],"statusChange":{"from":"pending","to":"completed"}}`,
		decodeResult[claude.TaskUpdateResult], claude.TaskUpdateResult{Success: true, TaskID: "1", UpdatedFields: []string{"status"}, StatusChange: &claude.TaskStatusChange{From: "pending", To: "completed"}}},
	{"ListMcpResources", `[{"uri":"file:///a","name":"a","mimeType":"text/plain","description":"A","server":"docs"}]`,
		decodeResult[claude.ListMCPResourcesResult], claude.ListMCPResourcesResult{{URI: "file:///a", Name: "a", MIMEType: "text/plain", Description: "A", Server: "docs"}}},
	{"ReadMcpResource", `{"contents":[{"uri":"file:///a","mimeType":"text/plain","text":"hi"},{"uri":"file:///b","blobSavedTo":"/tmp/b"}]}`,
		decodeResult[claude.ReadMCPResourceToolResult], claude.ReadMCPResourceToolResult{Contents: []claude.MCPResourceToolContents{{URI: "file:///a", MIMEType: "text/plain", Text: "hi"}, {URI: "file:///b", BlobSavedTo: "/tmp/b"}}}},
	{"ReadMcpResourceDir", `{"resources":[{"uri":"file:///d/x","name":"x","mimeType":"inode/directory"}],"error":"partial"}`,
		decodeResult[claude.ReadMCPResourceDirResult], claude.ReadMCPResourceDirResult{Resources: []claude.MCPResourceDirEntry{{URI: "file:///d/x", Name: "x", MIMEType: "inode/directory"}}, Error: "partial"}},
	{"RefreshMcpTools", `[{"server":"docs","status":"refreshed","toolCount":3,"added":["a"],"removed":["b"]},{"server":"x","status":"error","error":"boom"}]`,
		decodeResult[claude.RefreshMCPToolsResult], claude.RefreshMCPToolsResult{{Server: "docs", Status: "refreshed", ToolCount: 3, Added: []string{"a"}, Removed: []string{"b"}}, {Server: "x", Status: "error", Error: "boom"}}},
	{"ScheduleWakeup", `{"scheduledFor":1700000000000,"clampedDelaySeconds":60,"wasClamped":true,"stopped":false,"cancelledWakeups":1}`,
		decodeResult[claude.ScheduleWakeupResult], claude.ScheduleWakeupResult{ScheduledFor: 1700000000000, ClampedDelaySeconds: 60, WasClamped: true, CancelledWakeups: 1}},
	{"Workflow", `{"status":"async_launched","taskId":"w1","taskType":"local_workflow","workflowName":"review","runId":"r","summary":"s","transcriptDir":"/t","scriptPath":"/s.js","sessionUrl":"u","warning":"w","error":"e"}`,
		decodeResult[claude.WorkflowResult], claude.WorkflowResult{Status: "async_launched", TaskID: "w1", TaskType: "local_workflow", WorkflowName: "review", RunID: "r", Summary: "s", TranscriptDir: "/t", ScriptPath: "/s.js", SessionURL: "u", Warning: "w", Error: "e"}},
	{"WebFetch", `{"bytes":1234,"code":200,"codeText":"OK","result":"A page","durationMs":12.5,"url":"http://x/","artifactRead":{"slug":"s","ver":"1","seeded":false}}`,
		decodeResult[claude.WebFetchResult], claude.WebFetchResult{Bytes: 1234, Code: 200, CodeText: "OK", Result: "A page", DurationMS: 12.5, URL: "http://x/", ArtifactRead: &claude.ArtifactReadRef{Slug: "s", Ver: "1", Seeded: valuePtr(false)}}},
	{"WebSearch", `{"query":"go","results":[{"tool_use_id":"srvtoolu_1","content":[{"title":"Go","url":"https://go.dev"}]},"Go is a language."],"durationSeconds":1.5,"searchCount":1}`,
		decodeResult[claude.WebSearchResult], claude.WebSearchResult{Query: "go", Results: []claude.WebSearchResultItem{
			{ToolUseID: "srvtoolu_1", Hits: []claude.WebSearchHit{{Title: "Go", URL: "https://go.dev"}}}, {Text: "Go is a language."}}, DurationSeconds: 1.5, SearchCount: 1}},
	{"SendFeedback", `{"success":true,"message":"Thanks"}`, decodeResult[claude.SendFeedbackResult], claude.SendFeedbackResult{Success: true, Message: "Thanks"}},
	{"RemoteTrigger", `{"status":200,"json":"{}","summary":"ok"}`, decodeResult[claude.RemoteTriggerResult], claude.RemoteTriggerResult{Status: 200, JSON: "{}", Summary: "ok"}},
	{"ShowOnboardingRolePicker", `{"role":"engineer","dismissed":false}`, decodeResult[claude.ShowOnboardingRolePickerResult], claude.ShowOnboardingRolePickerResult{Role: "engineer"}},
	{"OfferChromeSetup", `{"outcome":"not_now"}`, decodeResult[claude.OfferChromeSetupResult], claude.OfferChromeSetupResult{Outcome: "not_now"}},
	{"ReadNotifications", `{"notifications":[{"notification_id":"n1","origin":"ci","queued_at":"t0","content":"green","arrived_at":"t1"}],"remaining":2,"read_at":"t2"}`,
		decodeResult[claude.ReadNotificationsResult], claude.ReadNotificationsResult{Notifications: []claude.QueuedNotification{{NotificationID: "n1", Origin: "ci", QueuedAt: "t0", Content: "green", ArrivedAt: "t1"}}, Remaining: 2, ReadAt: "t2"}},
	{"ProposeSkills", `{"proposalCount":2}`, decodeResult[claude.ProposeSkillsResult], claude.ProposeSkillsResult{ProposalCount: 2}},
	{"ProposeGoal", `{"condition":"tests pass","askUser":true}`, decodeResult[claude.ProposeGoalResult], claude.ProposeGoalResult{Condition: "tests pass", AskUser: true}},
	{"PushNotification", `{"message":"done","pushSent":true,"localSent":false,"disabledReason":"user_present","sentAt":"t"}`,
		decodeResult[claude.PushNotificationResult], claude.PushNotificationResult{Message: "done", PushSent: true, DisabledReason: "user_present", SentAt: "t"}},
	{"ClaudeDesign", `{"operation":"list","content":[{"ops":["a"]}],"isError":false}`,
		decodeResult[claude.ClaudeDesignResult], claude.ClaudeDesignResult{Operation: "list", Content: []json.RawMessage{json.RawMessage(`{"ops":["a"]}`)}}},
}

func TestDecodeToolUseResultExtra(t *testing.T) {
	for _, tc := range toolResultExtraCases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.decode(tc.raw)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("decoded (-want +got):\n%s", diff)
			}
		})
	}
}

// The union-shaped results keep their whole JSON in Raw and decode each
// variant's members.
func TestDecodeToolUseResultUnions(t *testing.T) {
	info := `{"method":"project_info","name":"P","description":"D","instructions":"I","docs":[{"path":"a.md","created_at":null}],"files":[{"path":"f","file_kind":"pdf","created_at":"t"}],"knowledge":{"knowledge_size":1,"max_knowledge_size":2}}`
	p, err := decodeResult[claude.ProjectsResult](info)
	if err != nil {
		t.Fatal(err)
	}
	pr := p.(claude.ProjectsResult)
	if pr.Method != "project_info" || pr.Name != "P" || !reflect.DeepEqual(pr.Docs, []claude.ProjectDoc{{Path: "a.md"}}) ||
		len(pr.Files) != 1 || pr.Files[0].FileKind != "pdf" || string(pr.Raw) != info {
		t.Errorf("project_info = %+v", pr)
	}
	p, err = decodeResult[claude.ProjectsResult](`{"method":"project_search","rag":true,"hits":[{"name":"a","text":"t"}],"docs":["a.md","b.md"]}`)
	if err != nil {
		t.Fatal(err)
	}
	if pr := p.(claude.ProjectsResult); !pr.RAG || !reflect.DeepEqual(pr.SearchDocs, []string{"a.md", "b.md"}) || pr.Docs != nil {
		t.Errorf("project_search = %+v", pr)
	}
	p, err = decodeResult[claude.ProjectsResult](`{"method":"project_memory_list","files":[{"path":"m","size_bytes":9,"updated_at":null,"truncated":true}],"truncated":false}`)
	if err != nil || p.(claude.ProjectsResult).Files[0].SizeBytes != 9 {
		t.Errorf("project_memory_list = %+v, %v", p, err)
	}
	if _, err := decodeResult[claude.ProjectsResult](`{"method":"project_search","docs":[{"path":"a"}]}`); err == nil {
		t.Error("project_search with document objects for docs decoded")
	}

	for _, tc := range []struct {
		raw   string
		check func(claude.ArtifactResult) bool
	}{
		{`{"url":"https://claude.ai/artifact/x","path":"/w/r.html","title":"R","warnings":["w"],"publishesRemaining":0,"stored":{"contract":"v1"},"pinned":true}`,
			func(r claude.ArtifactResult) bool {
				return r.URL == "https://claude.ai/artifact/x" && r.Title == "R" && *r.PublishesLeft == 0 && r.Pinned && string(r.Stored) == `{"contract":"v1"}`
			}},
		{`{"artifacts":[{"title":"A","url":"u","rel":"shared","role":"reader"}],"truncated":true,"next_page_token":"n","scope":"all"}`,
			func(r claude.ArtifactResult) bool {
				return len(r.Artifacts) == 1 && r.Artifacts[0].Role == "reader" && r.NextPageToken == "n" && r.Scope == "all"
			}},
		{`{"read":{"url":"u","bytes":3,"code":200,"codeText":"OK","result":"<p>","durationMs":1},"owned":true,"artifactRead":{"slug":"s"}}`,
			func(r claude.ArtifactResult) bool {
				return r.Read != nil && r.Read.Code == 200 && r.Owned && r.ArtifactRead.Slug == "s"
			}},
		{`{"pin":{"action":"unpin","url":"u","pinned":false}}`,
			func(r claude.ArtifactResult) bool { return r.Pin != nil && r.Pin.Action == "unpin" }},
		{`{"watches":[{"url":"u","rail":"durable_wake","trigger_id":"t","since":"s"}],"arms":[]}`,
			func(r claude.ArtifactResult) bool { return len(r.Watches) > 0 && string(r.Arms) == `[]` }},
		{`{"written":{"url":"u"},"asset_upload":{"id":"i","url":"u","size_bytes":1,"content_type":"image/png","file_name":"a.png"}}`,
			func(r claude.ArtifactResult) bool { return len(r.AssetUpload) > 0 && len(r.Written) > 0 }},
	} {
		v, err := decodeResult[claude.ArtifactResult](tc.raw)
		if err != nil {
			t.Errorf("%s: %v", tc.raw, err)
			continue
		}
		if r := v.(claude.ArtifactResult); !tc.check(r) || string(r.Raw) != tc.raw {
			t.Errorf("Artifact result %s decoded as %+v", tc.raw, r)
		}
	}

	// A failed tool is a *ToolUseError, for these types too.
	var tue *claude.ToolUseError
	if _, err := decodeResult[claude.TaskGetResult](`"Error: no such task"`); !errors.As(err, &tue) {
		t.Errorf("string result: %v", err)
	}
	// WebSearch items re-encode in the form they came in.
	ws, _ := decodeResult[claude.WebSearchResult](`{"query":"q","results":["text",{"tool_use_id":"t","content":[]}],"durationSeconds":0}`)
	b, err := json.Marshal(ws.(claude.WebSearchResult).Results)
	if err != nil || string(b) != `["text",{"tool_use_id":"t","content":[]}]` {
		t.Errorf("WebSearch results re-encoded as %s, %v", b, err)
	}
}

// FuzzToolUseResultExtra: the hand-written decoders of the union-shaped
// results never panic and, when they succeed, keep the input in Raw.
func FuzzToolUseResultExtra(f *testing.F) {
	for _, tc := range toolResultExtraCases {
		f.Add(tc.raw)
	}
	f.Add(`{"method":"project_search","docs":["a"]}`)
	f.Add(`{"method":"project_info","docs":[{"path":"a"}]}`)
	f.Add(`{"artifacts":[{"title":"A","url":"u"}]}`)
	f.Add(`{"results":["a",{"tool_use_id":"t","content":[{"title":"x","url":"y"}]}]}`)
	f.Fuzz(func(t *testing.T, raw string) {
		m := &claude.UserMessage{ToolUseResult: json.RawMessage(raw)}
		if r, err := claude.DecodeToolUseResult[claude.ProjectsResult](m); err == nil && raw != "" && raw[0] == '{' && string(r.Raw) == "" {
			t.Errorf("ProjectsResult from %q has no Raw", raw)
		}
		if r, err := claude.DecodeToolUseResult[claude.ArtifactResult](m); err == nil && raw != "" && raw[0] == '{' && string(r.Raw) == "" {
			t.Errorf("ArtifactResult from %q has no Raw", raw)
		}
		if r, err := claude.DecodeToolUseResult[claude.WebSearchResult](m); err == nil {
			if _, err := json.Marshal(r); err != nil {
				t.Errorf("WebSearchResult from %q does not re-encode: %v", raw, err)
			}
		}
	})
}
