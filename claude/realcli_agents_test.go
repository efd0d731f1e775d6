package claude_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
)

// Agents, prompts, settings flags, structured output and typed tool
// inputs, against the real CLI.

const reviewerPrompt = "You are REVIEWER-7F3A, a strict Go code reviewer."

// forecast is the structured output the scenarios ask for.
type forecast struct {
	City  string   `json:"city" jsonschema:"the city"`
	TempC float64  `json:"temp_c"`
	Notes []string `json:"notes,omitempty"`
}

func init() {
	addScenarios(
		scenario{
			name: "agents_subagent",
			guards: "An agent defined in Options.Agents reaches the CLI through initialize.agents (camelCase keys): it is listed in the " +
				"initialize response and in system/init, and when the model calls the Agent tool with its name the subagent runs " +
				"with the agent's prompt as its system prompt, its tools and its model.",
			record: true,
			api: func() *claudetest.MessagesOptions {
				return &claudetest.MessagesOptions{Respond: func(r *claudetest.Request) *claudetest.Reply {
					switch {
					case r.Subagent():
						return claudetest.TextReply("REVIEW: looks good")
					case r.Params.ToolResult("toolu_agent1") != nil:
						return claudetest.TextReply("the reviewer approves")
					default:
						// run_in_background false: 2.1.330 runs agents in
						// the background unless told otherwise.
						return claudetest.ToolUseReply("toolu_agent1", "Agent", map[string]any{
							"description": "Review the diff", "prompt": "Review main.go", "subagent_type": "reviewer", "run_in_background": false,
						})
					}
				}}
			},
			opts: func(o *claude.Options) {
				o.Agents = map[string]claude.AgentDefinition{
					"reviewer": {Description: "Reviews Go code", Prompt: reviewerPrompt, Tools: []string{"Read"}, Model: "haiku"},
				}
			},
			run: func(t *testing.T, h *harness) {
				if !slices.ContainsFunc(h.S.Initialize().Agents, func(a claude.AgentInfo) bool {
					return a.Name == "reviewer" && a.Description == "Reviews Go code"
				}) {
					t.Errorf("initialize response agents = %+v, want reviewer", h.S.Initialize().Agents)
				}
				msgs := h.turn(t, "review my change")
				init := find[*claude.InitMessage](msgs)
				if len(init) == 0 || !slices.Contains(init[0].Agents, "reviewer") {
					t.Errorf("system/init agents lack reviewer: %v", init)
				}
				if !slices.ContainsFunc(find[*claude.TaskStartedMessage](msgs), func(m *claude.TaskStartedMessage) bool {
					return m.SubagentType == "reviewer" && m.ToolUseID == "toolu_agent1"
				}) {
					t.Errorf("no task_started for the reviewer in %v", types(msgs))
				}
				var res claude.AgentResult
				for _, u := range find[*claude.UserMessage](msgs) {
					if len(u.ToolResults()) > 0 && u.ToolResults()[0].ToolUseID == "toolu_agent1" {
						var err error
						if res, err = claude.DecodeToolUseResult[claude.AgentResult](u); err != nil {
							t.Errorf("Agent tool result: %v", err)
						}
					}
				}
				if res.AgentType != "reviewer" || !strings.Contains(string(res.Content), "REVIEW: looks good") || !strings.Contains(res.ResolvedModel, "haiku") {
					t.Errorf("Agent tool result = %+v", res)
				}
				if r := result(t, msgs); r.IsError || r.Result != "the reviewer approves" {
					t.Errorf("result = %+v", r)
				}
				if !h.Real() {
					return
				}
				var sub, main []*claudetest.Request
				for _, r := range h.API.MessagesRequests() {
					if r.Subagent() {
						sub = append(sub, r)
					} else {
						main = append(main, r)
					}
				}
				if len(sub) != 1 || len(main) != 2 {
					t.Fatalf("%d subagent and %d main requests, want 1 and 2", len(sub), len(main))
				}
				if !sub[0].Params.SystemContains(reviewerPrompt) {
					t.Errorf("the subagent's system prompt lacks the agent's prompt: %.300q", systemText(sub[0].Params))
				}
				if got := sub[0].Params.ToolNames(); !slices.Equal(got, []string{"Read"}) {
					t.Errorf("subagent tools = %v, want [Read]", got)
				}
				if !strings.Contains(sub[0].Params.Model, "haiku") {
					t.Errorf("subagent model = %q, want haiku", sub[0].Params.Model)
				}
				if main[0].Params.SystemContains(reviewerPrompt) {
					t.Error("the agent's prompt leaked into the main system prompt")
				}
			},
		},
		scenario{
			name: "system_prompt_custom",
			guards: "Options.SystemPrompt replaces Claude Code's prompt and AppendSystemPrompt follows it, both through the initialize " +
				"request, so a prompt larger than the kernel's 128 KiB limit on one argv string still starts the CLI.",
			api: func() *claudetest.MessagesOptions {
				return &claudetest.MessagesOptions{Replies: []*claudetest.Reply{claudetest.TextReply("ok")}}
			},
			opts: func(o *claude.Options) {
				o.SystemPrompt = "You are CUSTOM-PROMPT-51C2.\n" + strings.Repeat("Be brief. ", 150<<10/10)
				o.AppendSystemPrompt = "APPENDED-9B1E: answer in French."
			},
			run: func(t *testing.T, h *harness) {
				if r := result(t, h.turn(t, "hi")); r.IsError {
					t.Fatalf("result = %+v", r)
				}
				p := h.API.MessagesRequests()[0].Params
				if !p.SystemContains("You are CUSTOM-PROMPT-51C2.") || !p.SystemContains("APPENDED-9B1E") {
					t.Errorf("system lacks the custom prompt or the append: %.200q", systemText(p))
				}
				text := systemText(p)
				if i, j := strings.Index(text, "CUSTOM-PROMPT-51C2"), strings.Index(text, "APPENDED-9B1E"); i > j {
					t.Errorf("the append comes before the prompt")
				}
				if len(text) < 150<<10 {
					t.Errorf("system is %d bytes, want the whole 150 KiB prompt", len(text))
				}
				if p.SystemContains("You are an interactive agent") || p.SystemContains("You are an agent working with the user") {
					t.Error("Claude Code's own prompt is still there")
				}
			},
		},
		scenario{
			name: "system_prompt_preset_append",
			guards: "AppendSystemPrompt alone keeps Claude Code's prompt (the preset) and adds to it; ExcludeDynamicSections moves " +
				"the working directory out of the system prompt into the first user message.",
			api: func() *claudetest.MessagesOptions {
				return &claudetest.MessagesOptions{Replies: []*claudetest.Reply{claudetest.TextReply("ok"), claudetest.TextReply("ok")}}
			},
			opts: func(o *claude.Options) {
				o.AppendSystemPrompt = "APPENDED-4D7C: always cite file paths."
				o.ExcludeDynamicSections = true
			},
			run: func(t *testing.T, h *harness) {
				if r := result(t, h.turn(t, "hi")); r.IsError {
					t.Fatalf("result = %+v", r)
				}
				p := h.API.MessagesRequests()[0].Params
				text := systemText(p)
				if !strings.Contains(text, "You are Claude Code") || !strings.Contains(text, "\n# Harness\n") || !strings.HasSuffix(strings.TrimSpace(text), "APPENDED-4D7C: always cite file paths.") {
					t.Errorf("system is not Claude Code's prompt followed by the append (%d bytes): …%q", len(text), text[max(0, len(text)-200):])
				}
				// 2.1.197 has the working directory in the system prompt
				// unless told otherwise; 2.1.330 never puts it there.
				if p.SystemContains(h.CLI.Dir) {
					t.Error("ExcludeDynamicSections: the working directory is still in the system prompt")
				}
				if !p.Contains(h.CLI.Dir) {
					t.Error("ExcludeDynamicSections: the working directory is not in the messages either")
				}
			},
		},
		scenario{
			name: "options_effort_betas_plugins",
			guards: "Effort reaches the API as output_config.effort, Betas as the anthropic-beta header (one --betas flag per beta), " +
				"and a PluginDirs plugin is loaded: listed in system/init with its command and agent.",
			api: func() *claudetest.MessagesOptions {
				return &claudetest.MessagesOptions{Replies: []*claudetest.Reply{claudetest.TextReply("ok")}}
			},
			opts: func(o *claude.Options) {
				o.Model = "sonnet" // on opus[1m] the 1M beta is sent anyway
				o.Effort = claude.EffortLow
				o.Betas = []claude.Beta{claude.BetaContext1M}
				dir := filepath.Join(o.Cwd, "plugins", "tplug")
				for name, body := range map[string]string{
					".claude-plugin/plugin.json": `{"name":"tplug","version":"0.0.1","description":"a test plugin"}`,
					"commands/hello.md":          "---\ndescription: Say hello\n---\nSay hello to $ARGUMENTS\n",
					"agents/helper.md":           "---\nname: helper\ndescription: A plugin agent\n---\nYou are the plugin's helper.\n",
				} {
					p := filepath.Join(dir, name)
					if os.MkdirAll(filepath.Dir(p), 0o755) != nil || os.WriteFile(p, []byte(body), 0o644) != nil {
						panic("writing the test plugin")
					}
				}
				o.PluginDirs = []string{dir}
			},
			run: func(t *testing.T, h *harness) {
				msgs := h.turn(t, "hi")
				init := find[*claude.InitMessage](msgs)
				if len(init) == 0 {
					t.Fatalf("no system/init in %v", types(msgs))
				}
				if !slices.ContainsFunc(init[0].Plugins, func(p claude.PluginInfo) bool { return p.Name == "tplug" }) ||
					!slices.Contains(init[0].SlashCommands, "tplug:hello") || !slices.Contains(init[0].Agents, "tplug:helper") {
					t.Errorf("plugin not loaded: plugins %+v, commands %v, agents %v", init[0].Plugins, init[0].SlashCommands, init[0].Agents)
				}
				r := h.API.MessagesRequests()[0]
				var oc struct {
					Effort string `json:"effort"`
				}
				if json.Unmarshal(r.Params.OutputConfig, &oc); oc.Effort != "low" {
					t.Errorf("output_config = %s, want effort low", r.Params.OutputConfig)
				}
				if beta := r.Header.Get("anthropic-beta"); !strings.Contains(beta, string(claude.BetaContext1M)) {
					t.Errorf("anthropic-beta = %q, want %s", beta, claude.BetaContext1M)
				}
				if !strings.Contains(r.Params.Model, "sonnet") {
					t.Errorf("model = %q", r.Params.Model)
				}
			},
		},
		scenario{
			name: "structured_output_decode",
			guards: "Options.JSONSchema (built with JSONSchemaFor) reaches the CLI through initialize.jsonSchema: the API gets a " +
				"StructuredOutput tool with that schema, the model's StructuredOutput call ends the turn, and DecodeOutput turns " +
				"the result's structured_output into the Go value.",
			record: true,
			api: func() *claudetest.MessagesOptions {
				return &claudetest.MessagesOptions{Replies: []*claudetest.Reply{
					claudetest.ToolUseReply("toolu_so1", "StructuredOutput", map[string]any{"city": "Oslo", "temp_c": -3.5, "notes": []string{"windy"}}),
				}}
			},
			opts: func(o *claude.Options) { o.JSONSchema = mustSchema[forecast]() },
			run: func(t *testing.T, h *harness) {
				msgs := h.turn(t, "weather in Oslo?")
				r := result(t, msgs)
				got, err := claude.DecodeOutput[forecast](r)
				if err != nil {
					t.Fatalf("DecodeOutput: %v (result %+v)", err, r)
				}
				if diff := cmp.Diff(forecast{City: "Oslo", TempC: -3.5, Notes: []string{"windy"}}, got); diff != "" {
					t.Errorf("structured output (-want +got):\n%s", diff)
				}
				if r.Subtype != claude.ResultSuccess || r.NumTurns != 2 {
					t.Errorf("result = %+v", r)
				}
				if !h.Real() {
					return
				}
				reqs := h.API.MessagesRequests()
				if len(reqs) != 1 {
					t.Fatalf("%d API requests, want 1: the StructuredOutput call ends the turn", len(reqs))
				}
				i := slices.IndexFunc(reqs[0].Params.Tools, func(tl claudetest.Tool) bool { return tl.Name == "StructuredOutput" })
				if i < 0 {
					t.Fatalf("no StructuredOutput tool in %v", reqs[0].Params.ToolNames())
				}
				var want, schema any
				json.Unmarshal(mustSchema[forecast](), &want)
				json.Unmarshal(reqs[0].Params.Tools[i].InputSchema, &schema)
				if diff := cmp.Diff(want, schema); diff != "" {
					t.Errorf("StructuredOutput input schema (-want +got):\n%s", diff)
				}
			},
		},
		scenario{
			name: "structured_output_retries",
			guards: "A model that keeps calling StructuredOutput with input that does not fit the schema gets the CLI's validation " +
				"error as a tool error, and after 5 tries the turn ends with error_max_structured_output_retries; DecodeOutput " +
				"reports ErrNoStructuredOutput and the *ResultError.",
			record: true,
			api: func() *claudetest.MessagesOptions {
				var replies []*claudetest.Reply
				for i := range 5 {
					replies = append(replies, claudetest.ToolUseReply("toolu_bad"+string(rune('1'+i)), "StructuredOutput", map[string]any{"city": 3}))
				}
				return &claudetest.MessagesOptions{Replies: replies}
			},
			opts: func(o *claude.Options) { o.JSONSchema = mustSchema[forecast]() },
			run: func(t *testing.T, h *harness) {
				msgs := h.turn(t, "weather in Oslo?")
				r := result(t, msgs)
				if r.Subtype != claude.ResultErrorMaxStructuredOutputRetries || !r.IsError {
					t.Errorf("result = %+v", r)
				}
				_, err := claude.DecodeOutput[forecast](r)
				var re *claude.ResultError
				if !errors.Is(err, claude.ErrNoStructuredOutput) || !errors.As(err, &re) || re.Subtype != claude.ResultErrorMaxStructuredOutputRetries {
					t.Errorf("DecodeOutput error = %v", err)
				}
				var toolErrors int
				for _, u := range find[*claude.UserMessage](msgs) {
					for _, tr := range u.ToolResults() {
						if tr.IsError && strings.Contains(string(tr.Content), "does not match required schema") {
							toolErrors++
						}
					}
				}
				if toolErrors != 5 {
					t.Errorf("%d schema errors went back to the model, want 5", toolErrors)
				}
				if h.Real() && len(h.API.MessagesRequests()) != 5 {
					t.Errorf("%d API requests, want 5", len(h.API.MessagesRequests()))
				}
			},
		},
		scenario{
			name: "structured_output_text_answer",
			guards: "A model that answers in plain text is reminded once to call StructuredOutput; answering in text again ends " +
				"the turn with a successful result without structured output, which DecodeOutput reports as ErrNoStructuredOutput.",
			record: true,
			api: func() *claudetest.MessagesOptions {
				return &claudetest.MessagesOptions{Replies: []*claudetest.Reply{claudetest.TextReply("It is cold."), claudetest.TextReply("Still cold.")}}
			},
			opts: func(o *claude.Options) { o.JSONSchema = mustSchema[forecast]() },
			run: func(t *testing.T, h *harness) {
				msgs := h.turn(t, "weather in Oslo?")
				r := result(t, msgs)
				if r.IsError || r.Result != "Still cold." {
					t.Errorf("result = %+v", r)
				}
				_, err := claude.DecodeOutput[forecast](r)
				var re *claude.ResultError
				if !errors.Is(err, claude.ErrNoStructuredOutput) || errors.As(err, &re) {
					t.Errorf("DecodeOutput error = %v, want ErrNoStructuredOutput alone", err)
				}
				if !slices.ContainsFunc(find[*claude.UserMessage](msgs), func(u *claude.UserMessage) bool {
					return strings.Contains(u.Text(), "StructuredOutput")
				}) {
					t.Errorf("no reminder to call StructuredOutput in %v", types(msgs))
				}
			},
		},
		scenario{
			name: "tool_inputs_bash_and_ask",
			guards: "CanUseTool decodes a Bash request into BashInput (the path-bearing command the CLI asks about) and answers an " +
				"AskUserQuestion request with AnswerQuestions: the chosen label reaches the model in the tool result and " +
				"comes back in tool_use_result.",
			record: true,
			api: func() *claudetest.MessagesOptions {
				return &claudetest.MessagesOptions{Replies: []*claudetest.Reply{
					claudetest.ToolUseReply("toolu_bash1", "Bash", map[string]any{"command": "echo hi > hi.txt", "description": "Write hi to hi.txt"}),
					claudetest.ToolUseReply("toolu_ask1", "AskUserQuestion", map[string]any{"questions": []any{map[string]any{
						"question": "Which color?", "header": "Color", "multiSelect": false,
						"options": []any{map[string]any{"label": "Red", "description": "warm"}, map[string]any{"label": "Blue", "description": "cool"}},
					}}}),
					claudetest.TextReply("Blue it is"),
				}}
			},
			opts: func(o *claude.Options) {
				var mu sync.Mutex
				seen := map[string]claude.ToolInput{}
				toolInputsSeen.Store(o, func() map[string]claude.ToolInput { mu.Lock(); defer mu.Unlock(); return seen })
				o.CanUseTool = func(ctx context.Context, req *claude.ToolPermissionRequest) (claude.PermissionResult, error) {
					in, err := claude.DecodeToolInput(req.ToolName, req.Input)
					if err != nil {
						return nil, err
					}
					mu.Lock()
					seen[req.ToolName] = in
					mu.Unlock()
					switch in := in.(type) {
					case *claude.BashInput:
						if strings.Contains(in.Command, "rm ") {
							return &claude.PermissionDeny{Message: "no removing"}, nil
						}
					case *claude.AskUserQuestionInput:
						return claude.AnswerQuestions(req, map[string]string{in.Questions[0].Question: "Blue"})
					}
					return &claude.PermissionAllow{}, nil
				}
			},
			run: func(t *testing.T, h *harness) {
				msgs := h.turn(t, "write hi, then ask me for a color")
				if r := result(t, msgs); r.IsError || r.Result != "Blue it is" {
					t.Errorf("result = %+v", r)
				}
				f, _ := toolInputsSeen.Load(h.Opts)
				seen := f.(func() map[string]claude.ToolInput)()
				if diff := cmp.Diff(&claude.BashInput{Command: "echo hi > hi.txt", Description: "Write hi to hi.txt"}, seen["Bash"]); diff != "" {
					t.Errorf("CanUseTool's Bash input (-want +got):\n%s", diff)
				}
				ask, _ := seen["AskUserQuestion"].(*claude.AskUserQuestionInput)
				if ask == nil || len(ask.Questions) != 1 || ask.Questions[0].Header != "Color" || len(ask.Questions[0].Options) != 2 || ask.Answers != nil {
					t.Errorf("CanUseTool's AskUserQuestion input = %+v", seen["AskUserQuestion"])
				}
				var answered claude.AskUserQuestionResult
				for _, u := range find[*claude.UserMessage](msgs) {
					if trs := u.ToolResults(); len(trs) > 0 && trs[0].ToolUseID == "toolu_ask1" {
						answered, _ = claude.DecodeToolUseResult[claude.AskUserQuestionResult](u)
					}
				}
				if answered.Answers["Which color?"] != "Blue" {
					t.Errorf("tool_use_result answers = %v", answered.Answers)
				}
				if !h.Real() {
					return
				}
				reqs := h.API.MessagesRequests()
				tr := reqs[len(reqs)-1].Params.ToolResult("toolu_ask1")
				if tr == nil || !slices.ContainsFunc(tr.Content, func(b claudetest.ContentBlock) bool { return strings.Contains(b.Text, `"Which color?"="Blue"`) }) {
					t.Errorf("the model's AskUserQuestion result = %+v", tr)
				}
				if b, err := os.ReadFile(filepath.Join(h.CLI.Dir, "hi.txt")); err != nil || strings.TrimSpace(string(b)) != "hi" {
					t.Errorf("hi.txt = %q, %v", b, err)
				}
			},
		},
	)
}

// toolInputsSeen hands a scenario's run what its CanUseTool saw, keyed
// by the scenario's options.
var toolInputsSeen sync.Map

// mustSchema is JSONSchemaFor for types known to have a schema.
func mustSchema[T any]() json.RawMessage {
	s, err := claude.JSONSchemaFor[T]()
	if err != nil {
		panic(err)
	}
	return s
}

// systemText joins the text blocks of a request's system prompt.
func systemText(p *claudetest.MessageParams) string {
	var b strings.Builder
	for _, s := range p.System {
		b.WriteString(s.Text)
		b.WriteString("\n")
	}
	return b.String()
}
