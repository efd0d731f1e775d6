package claude_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
)

func valuePtr[T any](v T) *T { return &v }

// toolInputCases are realistic inputs of every typed tool: those marked
// "seen" are what CLI 2.1.197 or 2.1.330 sent in can_use_tool requests or
// assistant messages; the others follow the CLI's tool schemas.
var toolInputCases = []struct {
	tool  string
	input string
	want  claude.ToolInput
}{
	{"Agent", `{"description":"review it","prompt":"review the code","subagent_type":"reviewer"}`, // seen
		&claude.AgentInput{Description: "review it", Prompt: "review the code", SubagentType: "reviewer"}},
	{"Task", `{"description":"find uses","prompt":"Find every use of Foo","subagent_type":"Explore","model":"haiku","effort":"low","run_in_background":false,"name":"finder","mode":"plan","isolation":"worktree"}`,
		&claude.AgentInput{Description: "find uses", Prompt: "Find every use of Foo", SubagentType: "Explore", Model: "haiku",
			Effort: claude.EffortLow, RunInBackground: valuePtr(false), Name: "finder", Mode: claude.PermissionModePlan, Isolation: "worktree"}},
	{"Bash", `{"command":"echo hi > hi.txt","description":"Write hi to hi.txt","timeout":5000,"run_in_background":true,"dangerouslyDisableSandbox":true}`, // seen, but the last two
		&claude.BashInput{Command: "echo hi > hi.txt", Description: "Write hi to hi.txt", Timeout: 5000, RunInBackground: true, DangerouslyDisableSandbox: true}},
	{"TaskOutput", `{"task_id":"b7x2","block":true,"timeout":30000}`,
		&claude.TaskOutputInput{TaskID: "b7x2", Block: true, Timeout: 30000}},
	{"TaskStop", `{"task_id":"a2a3906b2c8ccb453"}`,
		&claude.TaskStopInput{TaskID: "a2a3906b2c8ccb453"}},
	{"ExitPlanMode", `{"allowedPrompts":[{"tool":"Bash","prompt":"run tests"}]}`, // seen
		&claude.ExitPlanModeInput{AllowedPrompts: []claude.AllowedPrompt{{Tool: "Bash", Prompt: "run tests"}}}},
	{"Edit", `{"file_path":"/work/x.txt","old_string":"x","new_string":"y","replace_all":false}`, // seen
		&claude.EditInput{FilePath: "/work/x.txt", OldString: "x", NewString: "y"}},
	{"Read", `{"file_path":"/work/doc.pdf","offset":10,"limit":50,"pages":"1-5","allow_large":true}`,
		&claude.ReadInput{FilePath: "/work/doc.pdf", Offset: 10, Limit: 50, Pages: "1-5", AllowLarge: true}},
	{"Write", `{"file_path":"/work/x.txt","content":"x"}`, // seen
		&claude.WriteInput{FilePath: "/work/x.txt", Content: "x"}},
	{"Glob", `{"pattern":"**/*.go","path":"/work"}`,
		&claude.GlobInput{Pattern: "**/*.go", Path: "/work"}},
	{"Grep", `{"pattern":"func \\w+","path":"/work","glob":"*.go","type":"go","output_mode":"content","-A":2,"-B":1,"-C":3,"context":3,"-n":false,"-i":true,"-o":true,"head_limit":0,"offset":5,"multiline":true}`,
		&claude.GrepInput{Pattern: `func \w+`, Path: "/work", Glob: "*.go", Type: "go", OutputMode: "content", After: 2, Before: 1, C: 3, Context: 3,
			LineNumbers: valuePtr(false), CaseInsensitive: true, OnlyMatching: true, HeadLimit: valuePtr(0), Offset: 5, Multiline: true}},
	{"NotebookEdit", `{"notebook_path":"/work/a.ipynb","cell_id":"c1","new_source":"print(1)","cell_type":"code","edit_mode":"insert"}`,
		&claude.NotebookEditInput{NotebookPath: "/work/a.ipynb", CellID: "c1", NewSource: "print(1)", CellType: "code", EditMode: "insert"}},
	{"TodoWrite", `{"todos":[{"content":"a","status":"pending","activeForm":"doing a"},{"content":"b","status":"completed","activeForm":"doing b"}]}`, // seen
		&claude.TodoWriteInput{Todos: []claude.Todo{{Content: "a", Status: "pending", ActiveForm: "doing a"}, {Content: "b", Status: "completed", ActiveForm: "doing b"}}}},
	{"WebFetch", `{"url":"http://localhost:8080/notes","prompt":"Summarise the page","offset":4000}`,
		&claude.WebFetchInput{URL: "http://localhost:8080/notes", Prompt: "Summarise the page", Offset: 4000}},
	{"WebSearch", `{"query":"go iterators","allowed_domains":["docs.internal"],"blocked_domains":["ads.internal"]}`,
		&claude.WebSearchInput{Query: "go iterators", AllowedDomains: []string{"docs.internal"}, BlockedDomains: []string{"ads.internal"}}},
	{"AskUserQuestion", `{"questions":[{"question":"Which color?","header":"Color","options":[{"label":"Red","description":"warm"},{"label":"Blue","description":"cool","preview":"#00f"}],"multiSelect":false}],"answers":{"Which color?":"Blue"},"annotations":{"Which color?":{"notes":"my favourite"}},"metadata":{"source":"remember"}}`, // seen, but answers on
		&claude.AskUserQuestionInput{
			Questions: []claude.Question{{Question: "Which color?", Header: "Color", Options: []claude.QuestionOption{
				{Label: "Red", Description: "warm"}, {Label: "Blue", Description: "cool", Preview: "#00f"}}}},
			Answers:     map[string]string{"Which color?": "Blue"},
			Annotations: map[string]claude.QuestionAnnotation{"Which color?": {Notes: "my favourite"}},
			Metadata:    &claude.QuestionMetadata{Source: "remember"},
		}},
	{"TaskCreate", `{"subject":"Write tests","description":"Cover the parser","activeForm":"Writing tests","metadata":{"priority":1}}`,
		&claude.TaskCreateInput{Subject: "Write tests", Description: "Cover the parser", ActiveForm: "Writing tests", Metadata: json.RawMessage(`{"priority":1}`)}},
	{"TaskGet", `{"taskId":"3"}`, &claude.TaskGetInput{TaskID: "3"}},
	{"TaskUpdate", `{"taskId":"3","subject":"s","description":"d","activeForm":"a","status":"in_progress","addBlocks":["4"],"addBlockedBy":["1","2"],"owner":"me","metadata":{"priority":null}}`,
		&claude.TaskUpdateInput{TaskID: "3", Subject: "s", Description: "d", ActiveForm: "a", Status: "in_progress",
			AddBlocks: []string{"4"}, AddBlockedBy: []string{"1", "2"}, Owner: "me", Metadata: json.RawMessage(`{"priority":null}`)}},
	{"ListMcpResourcesTool", `{"server":"docs"}`, &claude.ListMCPResourcesInput{Server: "docs"}},
	{"ReadMcpResourceTool", `{"server":"docs","uri":"file:///readme.md"}`, &claude.ReadMCPResourceInput{Server: "docs", URI: "file:///readme.md"}},
	{"CronCreate", `{"cron":"*/5 * * * *","prompt":"check the build","recurring":false,"durable":true}`,
		&claude.CronCreateInput{Cron: "*/5 * * * *", Prompt: "check the build", Recurring: valuePtr(false), Durable: true}},
	{"CronDelete", `{"id":"job-1"}`, &claude.CronDeleteInput{ID: "job-1"}},
	{"EnterWorktree", `{"name":"fix/parser"}`, &claude.EnterWorktreeInput{Name: "fix/parser"}},
	{"ExitWorktree", `{"action":"remove","discard_changes":true}`, &claude.ExitWorktreeInput{Action: "remove", DiscardChanges: true}},
	// tools_tasks.go, from sdk-tools.d.ts 0.3.330.
	{"CronList", `{}`, &claude.CronListInput{}},
	{"TaskList", `{}`, &claude.TaskListInput{}},
	{"EnterPlanMode", `{}`, &claude.EnterPlanModeInput{}},
	{"Monitor", `{"description":"watch the build","timeout_ms":60000,"command":"tail -f build.log"}`,
		&claude.MonitorInput{Description: "watch the build", TimeoutMS: 60000, Command: "tail -f build.log"}},
	{"Monitor", `{"description":"events","timeout_ms":1000,"ws":{"url":"ws://localhost:9/x","protocols":["v1"]}}`,
		&claude.MonitorInput{Description: "events", TimeoutMS: 1000, WS: &claude.MonitorWebSocket{URL: "ws://localhost:9/x", Protocols: []string{"v1"}}}},
	{"ScheduleWakeup", `{"delaySeconds":120,"reason":"build runs","prompt":"/loop check","noop":true}`,
		&claude.ScheduleWakeupInput{DelaySeconds: 120, Reason: "build runs", Prompt: "/loop check", Noop: true}},
	{"Workflow", `{"name":"review","args":{"files":["a.go"]},"resumeFromRunId":"r1"}`,
		&claude.WorkflowInput{Name: "review", Args: json.RawMessage(`{"files":["a.go"]}`), ResumeFromRunID: "r1"}},
	{"ReportFindings", `{"level":"high","findings":[{"file":"a.go","line":3,"summary":"nil map","failure_scenario":"empty input panics","severity":"important","verdict":"CONFIRMED"}]}`,
		&claude.ReportFindingsInput{Level: claude.EffortHigh, Findings: []claude.ReviewFinding{{File: "a.go", Line: 3, Summary: "nil map",
			FailureScenario: "empty input panics", Severity: "important", Verdict: "CONFIRMED"}}}},
}

func TestDecodeToolInput(t *testing.T) {
	seen := map[reflect.Type]bool{}
	for _, tc := range toolInputCases {
		t.Run(tc.tool, func(t *testing.T) {
			got, err := claude.DecodeToolInput(tc.tool, json.RawMessage(tc.input))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("decoded (-want +got):\n%s", diff)
			}
			if name := got.ToolName(); name != tc.tool && !(tc.tool == "Task" && name == "Agent") {
				t.Errorf("ToolName() = %q", name)
			}
			// The generic form gives the same value.
			v := reflect.New(reflect.TypeOf(tc.want).Elem())
			if err := json.Unmarshal([]byte(tc.input), v.Interface()); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, v.Interface()); diff != "" {
				t.Errorf("json.Unmarshal (-want +got):\n%s", diff)
			}
			// Re-encoding keeps the meaning: every key the input set to a
			// non-default value survives.
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
		seen[reflect.TypeOf(tc.want)] = true
	}
	// Every input type named in ToolInput's doc has a case here.
	for _, typ := range []claude.ToolInput{
		&claude.AgentInput{}, &claude.BashInput{}, &claude.TaskOutputInput{}, &claude.TaskStopInput{}, &claude.ExitPlanModeInput{},
		&claude.EditInput{}, &claude.ReadInput{}, &claude.WriteInput{}, &claude.GlobInput{}, &claude.GrepInput{},
		&claude.NotebookEditInput{}, &claude.TodoWriteInput{}, &claude.WebFetchInput{}, &claude.WebSearchInput{},
		&claude.AskUserQuestionInput{}, &claude.TaskCreateInput{}, &claude.TaskGetInput{}, &claude.TaskUpdateInput{},
		&claude.ListMCPResourcesInput{}, &claude.ReadMCPResourceInput{}, &claude.CronCreateInput{}, &claude.CronDeleteInput{},
		&claude.EnterWorktreeInput{}, &claude.ExitWorktreeInput{},
	} {
		if !seen[reflect.TypeOf(typ)] {
			t.Errorf("no case decodes %T", typ)
		}
	}
}

func TestDecodeInput(t *testing.T) {
	in, err := claude.DecodeInput[claude.BashInput](json.RawMessage(`{"command":"ls","description":"List files","future_key":{"x":1}}`))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(claude.BashInput{Command: "ls", Description: "List files"}, in); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	// A type of the caller's own, e.g. an MCP tool's input.
	type addInput struct{ A, B int }
	add, err := claude.DecodeInput[addInput](json.RawMessage(`{"A":1,"B":2}`))
	if err != nil || add != (addInput{1, 2}) {
		t.Errorf("addInput = %+v, %v", add, err)
	}
	_, err = claude.DecodeInput[claude.BashInput](json.RawMessage(`{"command":42}`))
	var te *json.UnmarshalTypeError
	if !errors.As(err, &te) || !strings.HasPrefix(err.Error(), "claude: decoding claude.BashInput tool input: ") {
		t.Errorf("error = %v", err)
	}
}

func TestDecodeToolInputUnknownAndBad(t *testing.T) {
	raw := json.RawMessage(`{"a":1,"b":2}`)
	got, err := claude.DecodeToolInput("mcp__calc__add", raw)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(&claude.UnknownToolInput{Name: "mcp__calc__add", Raw: raw}, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if got.ToolName() != "mcp__calc__add" {
		t.Errorf("ToolName() = %q", got.ToolName())
	}
	if _, err := claude.DecodeToolInput("Read", json.RawMessage(`{"file_path":["a"]}`)); err == nil ||
		!strings.HasPrefix(err.Error(), "claude: decoding Read tool input: ") {
		t.Errorf("bad Read input: err = %v", err)
	}
}

// askRequest is the can_use_tool request CLI 2.1.197 sent for an
// AskUserQuestion call (2.1.330 adds requires_user_interaction).
func askRequest(input string) *claude.ToolPermissionRequest {
	return &claude.ToolPermissionRequest{
		RequestID: "e94f3f0f", ToolName: "AskUserQuestion", DisplayName: "AskUserQuestion", ToolUseID: "toolu_q1",
		Input: json.RawMessage(input),
	}
}

const twoQuestions = `{"questions":[` +
	`{"question":"Which color?","header":"Color","options":[{"label":"Red","description":"warm"},{"label":"Blue","description":"cool"}],"multiSelect":false},` +
	`{"question":"Which sizes?","header":"Size","options":[{"label":"S","description":"small"},{"label":"M","description":"medium"},{"label":"L","description":"large"}],"multiSelect":true}` +
	`],"metadata":{"source":"x"},"future_key":true}`

func TestAnswerQuestions(t *testing.T) {
	allow, err := claude.AnswerQuestions(askRequest(twoQuestions), map[string]string{"Which color?": "Blue", "Which sizes?": "S, L"})
	if err != nil {
		t.Fatal(err)
	}
	var got, orig map[string]any
	if err := json.Unmarshal(allow.UpdatedInput, &got); err != nil {
		t.Fatal(err)
	}
	json.Unmarshal([]byte(twoQuestions), &orig)
	// The input as sent, keys this package doesn't know included, plus
	// the answers.
	orig["answers"] = map[string]any{"Which color?": "Blue", "Which sizes?": "S, L"}
	if diff := cmp.Diff(orig, got); diff != "" {
		t.Errorf("updatedInput (-want +got):\n%s", diff)
	}
	if allow.UpdatedPermissions != nil {
		t.Errorf("UpdatedPermissions = %v", allow.UpdatedPermissions)
	}

	// Answers already in the input are replaced, not merged.
	allow, err = claude.AnswerQuestions(askRequest(`{"questions":[{"question":"q","header":"h","options":[],"multiSelect":false}],"answers":{"old":"x"}}`),
		map[string]string{"q": "y"})
	if err != nil {
		t.Fatal(err)
	}
	if got := string(allow.UpdatedInput); !strings.Contains(got, `"answers":{"q":"y"}`) || strings.Contains(got, "old") {
		t.Errorf("updatedInput = %s", got)
	}
}

func TestAnswerQuestionsErrors(t *testing.T) {
	bash := &claude.ToolPermissionRequest{ToolName: "Bash", Input: json.RawMessage(`{"command":"ls"}`)}
	for name, tc := range map[string]struct {
		req     *claude.ToolPermissionRequest
		answers map[string]string
		want    string
	}{
		"nil request":      {nil, map[string]string{"q": "a"}, "request is for nil, not AskUserQuestion"},
		"other tool":       {bash, map[string]string{"q": "a"}, "request is for Bash, not AskUserQuestion"},
		"no answers":       {askRequest(twoQuestions), nil, "no answers"},
		"unknown question": {askRequest(twoQuestions), map[string]string{"Which colour?": "Blue"}, `the request has no question "Which colour?"`},
		"bad input":        {askRequest(`{"questions":"?"}`), map[string]string{"q": "a"}, "decoding claude.AskUserQuestionInput tool input"},
	} {
		allow, err := claude.AnswerQuestions(tc.req, tc.answers)
		if err == nil {
			t.Errorf("%s: AnswerQuestions = %+v, want an error", name, allow)
			continue
		}
		if !strings.HasPrefix(err.Error(), "claude: AnswerQuestions: ") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %q, want it to say %q", name, err, tc.want)
		}
	}
}

// TestAnswerQuestionsThroughSession answers an AskUserQuestion request in
// CanUseTool and checks what the CLI receives.
func TestAnswerQuestionsThroughSession(t *testing.T) {
	answered := make(chan json.RawMessage, 2)
	opts := &claude.Options{CanUseTool: func(ctx context.Context, req *claude.ToolPermissionRequest) (claude.PermissionResult, error) {
		in, err := claude.DecodeToolInput(req.ToolName, req.Input)
		if err != nil {
			return nil, err
		}
		switch in := in.(type) {
		case *claude.AskUserQuestionInput:
			return claude.AnswerQuestions(req, map[string]string{in.Questions[0].Question: in.Questions[0].Options[1].Label})
		case *claude.BashInput:
			if strings.HasPrefix(in.Command, "rm ") {
				return &claude.PermissionDeny{Message: "no removing"}, nil
			}
		}
		return &claude.PermissionAllow{}, nil
	}}
	s := connect(t, opts, func(ctx context.Context, c *claudetest.CLI) error {
		if _, err := c.HandleInitialize(ctx); err != nil {
			return err
		}
		var q map[string]any
		json.Unmarshal([]byte(twoQuestions), &q)
		for _, call := range []struct {
			tool  string
			input any
		}{{"AskUserQuestion", q}, {"Bash", map[string]string{"command": "rm -rf /"}}} {
			resp, err := c.CanUseTool(ctx, "toolu_"+call.tool, call.tool, call.input)
			if err != nil {
				return err
			}
			answered <- resp
		}
		_, err := c.ReadUser(ctx)
		return err
	})
	defer s.Close()
	var ask, bash map[string]any
	json.Unmarshal(<-answered, &ask)
	json.Unmarshal(<-answered, &bash)
	in, _ := ask["updatedInput"].(map[string]any)
	if ask["behavior"] != "allow" || !reflect.DeepEqual(in["answers"], map[string]any{"Which color?": "Blue"}) || in["questions"] == nil {
		t.Errorf("AskUserQuestion answer = %v", ask)
	}
	if bash["behavior"] != "deny" || bash["message"] != "no removing" {
		t.Errorf("Bash answer = %v", bash)
	}
}
