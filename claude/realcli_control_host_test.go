package claude_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
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

// The last typed control requests of the TypeScript SDK's declarations
// (control_host.go), against the real CLI: each works where the CLI
// serves it and is a *ControlError matching ErrUnsupportedRequest where it
// does not.
func init() {
	addScenarios(scenario{
		name: "control_extra",
		guards: `FileSuggestions completes "hel" to hello.txt; RegisterRepoRoot adds a subdirectory (2.1.330 refuses it twice);
CallMCPTool calls an external streamable-HTTP MCP server's tool without a turn; SeedReadState lets the model Edit a
file it never Read in this conversation while an unseeded file is refused; TaskOutput reads a background Bash
task's output (2.1.330); SetHasSubscribers is accepted (2.1.330); SetColor is unsupported in stream-json on both.`,
		api: func() *claudetest.MessagesOptions {
			replies := []*claudetest.Reply{
				claudetest.ToolUseReply("toolu_unseeded", "Edit", map[string]string{"file_path": "other.txt", "old_string": "other", "new_string": "changed"}),
				claudetest.ToolUseReply("toolu_seeded", "Edit", map[string]string{"file_path": "hello.txt", "old_string": "hello", "new_string": "seeded"}),
				claudetest.TextReply("edited"),
			}
			if proc.CompareVersions(claudetest.CLIVersion(), "2.1.330") >= 0 {
				// A background task for TaskOutput, which 2.1.197 lacks.
				replies = append(replies,
					claudetest.ToolUseReply("toolu_bg", "Bash", map[string]any{"command": "echo task-line-one; sleep 120", "description": "Start a task", "run_in_background": true}),
					claudetest.TextReply("started"))
			}
			return &claudetest.MessagesOptions{Replies: replies}
		},
		opts: func(o *claude.Options) {
			o.PermissionMode = claude.PermissionModeAcceptEdits
			o.AllowedTools = []string{"Bash(echo *)"}
			if o.Cwd == "" {
				return
			}
			for name, body := range map[string]string{"hello.txt": "hello\n", "other.txt": "other\n"} {
				if err := os.WriteFile(filepath.Join(o.Cwd, name), []byte(body), 0o644); err != nil {
					panic(err)
				}
			}
			if err := os.MkdirAll(filepath.Join(o.Cwd, "sub", "repo"), 0o755); err != nil {
				panic(err)
			}
			srv := mcp.NewServer(&mcp.Implementation{Name: "echoer", Version: "1.0.0"}, nil)
			type echoIn struct {
				Text string `json:"text"`
			}
			type echoOut struct {
				Echoed string `json:"echoed"`
			}
			mcp.AddTool(srv, &mcp.Tool{Name: "echo", Description: "Echo a text"},
				func(ctx context.Context, req *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, echoOut, error) {
					return nil, echoOut{Echoed: "echo: " + in.Text}, nil
				})
			mcp.AddTool(srv, &mcp.Tool{Name: "fail", Description: "Fail as a tool"},
				func(ctx context.Context, req *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
					return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "tool-failed: " + in.Text}}}, nil, nil
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
			o.MCPServers["echoer"] = &claude.MCPHTTPServer{URL: hs.URL}
		},
		run: runControlExtra,
	})
}

// extraServers holds each run's MCP server, by its options, for the run
// to close.
var extraServers sync.Map

func runControlExtra(t *testing.T, h *harness) {
	if v, ok := extraServers.LoadAndDelete(h.Opts); ok {
		t.Cleanup(v.(func()))
	}
	isNew := newer(t, h)
	var ce *claude.ControlError

	// file_suggestions: both. The CLI indexes files in the background on
	// the first request, so ask until the index is there.
	var fs *claude.FileSuggestionsResult
	for attempt := 1; ; attempt++ {
		var err error
		fs, err = h.S.FileSuggestions(h.Ctx, &claude.FileSuggestionsParams{Query: "hel"})
		if err != nil {
			t.Fatalf("FileSuggestions: %v", err)
		}
		if len(fs.Suggestions) > 0 || attempt == 300 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !slices.Contains(fs.Suggestions, claude.FileSuggestion{Path: "hello.txt"}) {
		t.Errorf("FileSuggestions(hel) = %s", fs.Raw)
	}
	if isNew && fs.Cwd != h.Opts.Cwd {
		t.Errorf("FileSuggestions cwd = %q, want %q", fs.Cwd, h.Opts.Cwd)
	}

	// register_repo_root: both; 2.1.330 refuses a second registration.
	dir := filepath.Join(h.Opts.Cwd, "sub", "repo")
	rr, err := h.S.RegisterRepoRoot(h.Ctx, &claude.RegisterRepoRootParams{Directory: dir})
	if err != nil || rr.Directory != dir {
		t.Errorf("RegisterRepoRoot = %+v, %v", rr, err)
	}
	_, err = h.S.RegisterRepoRoot(h.Ctx, &claude.RegisterRepoRootParams{Directory: dir})
	if isNew && (!errors.As(err, &ce) || !strings.Contains(ce.Message, "already a registered working directory")) {
		t.Errorf("RegisterRepoRoot again: %v, want a *ControlError saying it is registered", err)
	} else if !isNew && err != nil {
		t.Errorf("RegisterRepoRoot again on 2.1.197: %v", err)
	}

	// mcp_call: both, on an external server once it is connected.
	for attempt := 1; ; attempt++ {
		st, err := h.S.MCPStatus(h.Ctx)
		if err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(st, func(s claude.MCPServerStatus) bool { return s.Name == "echoer" })
		if i >= 0 && st[i].Status == claude.MCPConnectionStatusConnected {
			break
		}
		if attempt == 300 {
			t.Fatalf("the MCP server never connected: %+v", st)
		}
		time.Sleep(100 * time.Millisecond)
	}
	mc, err := h.S.CallMCPTool(h.Ctx, &claude.MCPCallParams{Tool: "mcp__echoer__echo", Arguments: json.RawMessage(`{"text":"hi"}`)})
	if err != nil {
		t.Fatalf("CallMCPTool: %v", err)
	}
	blocks, err := mc.Blocks()
	if err != nil || len(blocks) == 0 || blocks[0].Type != "text" || !strings.Contains(blocks[0].Text, "echo: hi") {
		t.Errorf("CallMCPTool blocks = %+v, %v (raw %s)", blocks, err, mc.Raw)
	}
	var so struct{ Echoed string }
	if err := json.Unmarshal(mc.StructuredContent, &so); err != nil || so.Echoed != "echo: hi" {
		t.Errorf("CallMCPTool structured content = %s", mc.StructuredContent)
	}
	// soft_error_result: a CLI with mcp_call_soft_error_result_v1
	// answers the tool's failure as a result with isError; one without
	// ignores the member and the failure is a *ControlError with the text.
	soft, err := h.S.CallMCPTool(h.Ctx, &claude.MCPCallParams{Tool: "mcp__echoer__fail", Arguments: json.RawMessage(`{"text":"x"}`), SoftErrorResult: true})
	if h.S.HasCapability("mcp_call_soft_error_result_v1") {
		if err != nil || !soft.IsError || !strings.Contains(string(soft.Content), "tool-failed: x") {
			t.Errorf("CallMCPTool(SoftErrorResult) on a failing tool = %+v, %v; want IsError with the tool's text", soft, err)
		}
	} else if !errors.As(err, &ce) || !strings.Contains(ce.Message, "tool-failed: x") {
		t.Errorf("CallMCPTool(SoftErrorResult) on a CLI without the capability = %+v, %v; want a *ControlError with the tool's text", soft, err)
	}
	if _, err := h.S.CallMCPTool(h.Ctx, &claude.MCPCallParams{Tool: "mcp__nosuch__tool"}); !errors.As(err, &ce) || errors.Is(err, claude.ErrUnsupportedRequest) {
		t.Errorf("CallMCPTool on an unknown server: %v, want a *ControlError", err)
	}

	// seed_read_state: both. The model edits hello.txt, which it never
	// read; the seed lets it. other.txt, unseeded, is refused.
	hello := filepath.Join(h.Opts.Cwd, "hello.txt")
	fi, err := os.Stat(hello)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.S.SeedReadState(h.Ctx, &claude.SeedReadStateParams{Path: hello, ModTime: fi.ModTime()}); err != nil {
		t.Fatalf("SeedReadState: %v", err)
	}
	msgs := h.turn(t, "edit both")
	if b, _ := os.ReadFile(hello); string(b) != "seeded\n" {
		t.Errorf("hello.txt after the seeded Edit = %q (turn %v)", b, types(msgs))
	}
	if b, _ := os.ReadFile(filepath.Join(h.Opts.Cwd, "other.txt")); !isNew && string(b) != "other\n" {
		t.Errorf("other.txt after the unseeded Edit = %q", b)
	}
	// 2.1.330 lets the model edit a file it has not read in some cases
	// (it judges by the model and the file); 2.1.197 never does.
	if tr := h.API.MessagesRequests()[1].Params.ToolResult("toolu_unseeded"); !isNew && (tr == nil || !tr.IsError) {
		t.Errorf("unseeded Edit's result = %+v, want an error", tr)
	}

	// get_task_output: 2.1.330.
	if !isNew {
		_, err := h.S.TaskOutput(h.Ctx, &claude.TaskOutputParams{TaskID: "bnosuch12"})
		unsupported(t, "TaskOutput", err)
	} else {
		msgs := h.turn(t, "start a task")
		var task string
		for _, ts := range find[*claude.TaskStartedMessage](msgs) {
			if ts.ToolUseID == "toolu_bg" {
				task = ts.TaskID
			}
		}
		if task == "" {
			t.Fatalf("no task_started for the background command in %v", types(msgs))
		}
		var out *claude.TaskOutputResult
		for attempt := 1; ; attempt++ {
			out, err = h.S.TaskOutput(h.Ctx, &claude.TaskOutputParams{TaskID: task})
			if err != nil {
				t.Fatalf("TaskOutput: %v", err)
			}
			if strings.Contains(out.Output, "task-line-one") || attempt == 300 {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if out.Output != "task-line-one\n" || out.TotalBytes != int64(len("task-line-one\n")) || out.Truncated {
			t.Errorf("TaskOutput = %s", out.Raw)
		}
		if err := h.S.StopTask(h.Ctx, task); err != nil {
			t.Errorf("StopTask: %v", err)
		}
	}

	// set_has_subscribers: 2.1.330.
	f := false
	err = h.S.SetHasSubscribers(h.Ctx, &claude.SetHasSubscribersParams{HasSubscribers: &f})
	errNull := h.S.SetHasSubscribers(h.Ctx, nil)
	if isNew {
		if err != nil || errNull != nil {
			t.Errorf("SetHasSubscribers: %v, %v", err, errNull)
		}
	} else {
		unsupported(t, "SetHasSubscribers", err)
	}

	// set_color: no stream-json session serves it.
	unsupported(t, "SetColor", h.S.SetColor(h.Ctx, "red"))
}

// Options.VerbatimPrompts and Options.ToolConfig on the wire to the
// (fake) Messages API.
func init() {
	addScenarios(scenario{
		name: "options_verbatim_toolconfig",
		guards: `With VerbatimPrompts 2.1.330 sends "@hello.txt …" as written (the file's text never reaches the API);
2.1.197, older than 2.1.248, ignores it and expands the mention. ToolConfig's HTML preview format changes what
AskUserQuestion's description tells the model on both CLIs.`,
		opts: func(o *claude.Options) {
			o.VerbatimPrompts = true
			o.ToolConfig = &claude.ToolConfig{AskUserQuestion: &claude.AskUserQuestionConfig{PreviewFormat: claude.PreviewHTML}}
			// AskUserQuestion is offered to hosts that answer permission
			// requests.
			o.CanUseTool = func(context.Context, *claude.ToolPermissionRequest) (claude.PermissionResult, error) {
				return &claude.PermissionDeny{Message: "no"}, nil
			}
			if o.Cwd != "" {
				if err := os.WriteFile(filepath.Join(o.Cwd, "hello.txt"), []byte("MARKER-CONTENT\n"), 0o644); err != nil {
					panic(err)
				}
			}
		},
		run: func(t *testing.T, h *harness) {
			h.turn(t, "@hello.txt what is in it")
			p := lastMain(t, h)
			if expanded := strings.Contains(string(p.Body), "MARKER-CONTENT"); expanded == newer(t, h) {
				t.Errorf("the mentioned file's text reached the API: %v (VerbatimPrompts on)", expanded)
			}
			i := slices.IndexFunc(p.Params.Tools, func(tl claudetest.Tool) bool { return tl.Name == "AskUserQuestion" })
			if i < 0 {
				t.Fatal("no AskUserQuestion tool in the request")
			}
			if d := p.Params.Tools[i].Description; !strings.Contains(d, "self-contained HTML fragment") {
				t.Errorf("AskUserQuestion's description does not ask for HTML previews: %.2000s", d)
			}
		},
	})
}

// Options.ProjectConfigRoot: 2.1.330 reads the .claude tree from the
// named root, not from Cwd; 2.1.197 does not know the flag and fails to
// start, with an error that says so.
func TestRealCLIProjectConfigRoot(t *testing.T) {
	run := claudetest.NewRealRun(t, nil)
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, ".claude", "commands"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, ".claude", "commands", "rootmarker.md"), []byte("Say hi.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	o := run.Options
	o.ProjectConfigRoot = root
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := claude.Connect(ctx, o)
	if proc.CompareVersions(claudetest.CLIVersion(), "2.1.330") < 0 {
		if err == nil {
			s.Close()
			t.Fatal("2.1.197 started with --project-config-root")
		}
		if !strings.Contains(err.Error(), "project-config-root") {
			t.Errorf("Connect on 2.1.197: %v, want an error naming the flag", err)
		}
		return
	}
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	defer s.Close()
	if err := s.Send(ctx, "hi"); err != nil {
		t.Fatal(err)
	}
	var init *claude.InitMessage
	for m, err := range s.ReceiveTurn(ctx) {
		if err != nil {
			t.Fatalf("ReceiveTurn: %v", err)
		}
		if im, ok := m.(*claude.InitMessage); ok {
			init = im
		}
	}
	if init == nil || !slices.Contains(init.SlashCommands, "rootmarker") {
		t.Errorf("the root's command is not offered: init = %+v", init)
	}
}

// Options.ResumeDropsTurn: 2.1.330 checks a truncating resume drops only
// the named turn; 2.1.197 does not know the flag.
func init() {
	addScenarios(scenario{
		name: "options_resume_drops_turn",
		guards: `A resume at the first answer that declares the second turn's prompt UUID as the dropped turn goes
through (2.1.330); one that declares another UUID is refused with "Resume rejected by --resume-drops-turn".
2.1.197 refuses to start with the flag.`,
		api: func() *claudetest.MessagesOptions {
			replies := []*claudetest.Reply{claudetest.TextReply("First answer: apples."), claudetest.TextReply("Second answer: bananas.")}
			if proc.CompareVersions(claudetest.CLIVersion(), "2.1.330") >= 0 {
				replies = append(replies, claudetest.TextReply("Resumed."))
			}
			return &claudetest.MessagesOptions{Replies: replies}
		},
		opts: func(o *claude.Options) { o.SessionID = "8e1d7b4f-6c20-4d3e-8f90-1b2c3d4e5f60" },
		run: func(t *testing.T, h *harness) {
			isNew := newer(t, h)
			var firstAnswer string
			for _, m := range h.turn(t, "first question") {
				if a, ok := m.(*claude.AssistantMessage); ok && strings.Contains(a.Text(), "apples") {
					firstAnswer = a.UUID
				}
			}
			second := claude.NewUserMessage("second question")
			second.UUID = "0a1b2c3d-4e5f-4a6b-8c7d-8e9f0a1b2c3d"
			if err := h.S.SendMessage(h.Ctx, second); err != nil {
				t.Fatal(err)
			}
			h.receiveTurn(t)
			if err := h.S.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			resume := func(drops string) (*claude.Session, error) {
				o := *h.Opts
				o.Transport = nil
				o.SessionID = ""
				o.Resume = "8e1d7b4f-6c20-4d3e-8f90-1b2c3d4e5f60"
				o.ResumeSessionAt = firstAnswer
				o.ResumeDropsTurn = drops
				o.ForkSession = true
				return claude.Connect(h.Ctx, &o)
			}
			s, err := resume("99999999-9999-4999-8999-999999999999")
			if !isNew {
				if err == nil {
					s.Close()
					t.Fatal("2.1.197 started with --resume-drops-turn")
				}
				return
			}
			if err == nil {
				if err := s.Send(h.Ctx, "third question"); err != nil {
					t.Fatal(err)
				}
				for _, err = range s.ReceiveTurn(h.Ctx) {
					if err != nil {
						break
					}
				}
				s.Close()
			}
			if err == nil || !strings.Contains(err.Error(), "Resume rejected by --resume-drops-turn") {
				t.Errorf("resume dropping another turn: %v, want a refusal", err)
			}
			s, err = resume(second.UUID)
			if err != nil {
				t.Fatalf("resume dropping the second turn: %v", err)
			}
			defer s.Close()
			h2 := *h
			h2.S = s
			if got := assistantText(h2.turn(t, "third question")); got != "Resumed." {
				t.Errorf("resumed turn said %q", got)
			}
		},
	})
}
