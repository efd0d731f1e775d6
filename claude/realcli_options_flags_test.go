package claude_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
)

// The options added for parity with the TypeScript SDK, proven on the
// wire: what the CLI sends the (fake) Messages API, or what it does.
func init() {
	addScenarios(
		scenario{
			name: "options_thinking_budget",
			guards: `Options.Thinking with a budget and a display reaches the API request as thinking {type: enabled,
budget_tokens, display}, and TaskBudget as output_config.task_budget.`,
			opts: func(o *claude.Options) {
				o.Thinking = &claude.ThinkingConfig{Type: claude.ThinkingEnabled, BudgetTokens: 3000, Display: claude.ThinkingDisplayOmitted}
				o.TaskBudget = 40000
			},
			run: func(t *testing.T, h *harness) {
				h.turn(t, "hi")
				p := lastMain(t, h)
				var oc struct {
					TaskBudget struct {
						Type  string `json:"type"`
						Total int    `json:"total"`
					} `json:"task_budget"`
				}
				if err := json.Unmarshal(p.Params.OutputConfig, &oc); err != nil || oc.TaskBudget.Total != 40000 || oc.TaskBudget.Type != "tokens" {
					t.Errorf("output_config = %s, want task_budget total 40000", p.Params.OutputConfig)
				}
				// Models with adaptive thinking turn a budget into adaptive
				// thinking; 2.1.330 also picks its own display.
				if th := p.Params.Thinking; th == nil || !newer(t, h) && th.Display != "omitted" {
					t.Errorf("thinking = %+v, want display omitted", th)
				}
			},
		},
		scenario{
			name:   "options_thinking_adaptive",
			guards: `Options.Thinking adaptive with a summarized display reaches the API request.`,
			opts: func(o *claude.Options) {
				o.Thinking = &claude.ThinkingConfig{Type: claude.ThinkingAdaptive, Display: claude.ThinkingDisplaySummarized}
			},
			run: func(t *testing.T, h *harness) {
				h.turn(t, "hi")
				p := lastMain(t, h)
				if th := p.Params.Thinking; th == nil || th.Type != "adaptive" || th.Display != "summarized" {
					t.Errorf("thinking = %+v, want adaptive, summarized", th)
				}
			},
		},
		scenario{
			name:   "options_thinking_disabled",
			guards: `Options.Thinking disabled sends no thinking.`,
			opts: func(o *claude.Options) {
				o.Thinking = &claude.ThinkingConfig{Type: claude.ThinkingDisabled}
			},
			run: func(t *testing.T, h *harness) {
				h.turn(t, "hi")
				p := lastMain(t, h)
				// 2.1.330 keeps thinking on for the default model whatever
				// the flag says (so does the TypeScript SDK, which passes
				// the same flag).
				if th := p.Params.Thinking; !newer(t, h) && (th == nil || th.Type != "disabled") {
					t.Errorf("thinking = %+v, want disabled", th)
				}
			},
		},
		scenario{
			name:   "options_tools_agent",
			guards: `Options.Tools narrows the tools the model is offered; Options.Agent runs the main thread as an agent from Options.Agents.`,
			opts: func(o *claude.Options) {
				o.Tools = []string{"Read", "Glob"}
				o.Agents = map[string]claude.AgentDefinition{"pirate": {Description: "Talks like a pirate", Prompt: "You are a pirate who answers in rhymes."}}
				o.Agent = "pirate"
			},
			run: func(t *testing.T, h *harness) {
				h.turn(t, "hi")
				p := lastMain(t, h)
				var names []string
				for _, tl := range p.Params.Tools {
					names = append(names, tl.Name)
				}
				sys := ""
				for _, b := range p.Params.System {
					sys += b.Text
				}
				names = slices.DeleteFunc(names, func(n string) bool { return n == "DeferredToolPlaceholder" })
				slices.Sort(names)
				if !slices.Equal(names, []string{"Glob", "Read"}) {
					t.Errorf("tools offered = %v, want Glob and Read", names)
				}
				if !strings.Contains(sys, "pirate who answers in rhymes") {
					t.Errorf("the agent's prompt is not in the system prompt: %.300s", sys)
				}
			},
		},
		scenario{
			name: "options_hook_events_title",
			guards: `Options.IncludeHookEvents makes the CLI report a settings UserPromptSubmit command hook with
hook_started and hook_response; Options.Title names the session in its file (and, on 2.1.330, with a
session_title_changed message).`,
			opts: func(o *claude.Options) {
				o.IncludeHookEvents = true
				o.Title = "Parity title"
				o.Settings = `{"hooks":{"UserPromptSubmit":[{"hooks":[{"type":"command","command":"echo hooked"}]}]}}`
			},
			run: func(t *testing.T, h *harness) {
				msgs := h.turn(t, "hi")
				var started, responded, titled bool
				for _, m := range msgs {
					switch m := m.(type) {
					case *claude.HookStartedMessage:
						started = started || m.HookEvent == "UserPromptSubmit"
					case *claude.HookResponseMessage:
						responded = responded || m.HookEvent == "UserPromptSubmit"
					case *claude.SessionTitleChangedMessage:
						titled = m.Title == "Parity title"
					}
				}
				if !started || !responded {
					t.Errorf("hook events: started %v, response %v; messages %v", started, responded, types(msgs))
				}
				if newer(t, h) && !titled {
					t.Errorf("no session_title_changed with the title: %v", types(msgs))
				}
				h.S.Close() // the CLI flushes its session file as it exits
				sessions, err := claude.ListSessions(h.Opts.Cwd, &claude.ListSessionsOptions{ConfigDir: filepath.Join(h.CLI.Home, ".claude")})
				if err != nil || len(sessions) != 1 || sessions[0].Title != "Parity title" {
					t.Errorf("sessions = %+v, %v; want one titled %q", sessions, err, "Parity title")
				}
			},
		},
		scenario{
			name:   "options_allow_bypass",
			guards: `Options.AllowDangerouslySkipPermissions lets SetPermissionMode switch to bypassPermissions later.`,
			opts: func(o *claude.Options) {
				o.AllowDangerouslySkipPermissions = true
			},
			run: func(t *testing.T, h *harness) {
				if err := h.S.SetPermissionMode(h.Ctx, claude.PermissionModeBypassPermissions); err != nil {
					t.Errorf("SetPermissionMode(bypass): %v", err)
				}
			},
		},
		scenario{
			name:   "options_no_allow_bypass",
			guards: `Without AllowDangerouslySkipPermissions, SetPermissionMode to bypassPermissions is refused.`,
			run: func(t *testing.T, h *harness) {
				err := h.S.SetPermissionMode(h.Ctx, claude.PermissionModeBypassPermissions)
				var ce *claude.ControlError
				if !errors.As(err, &ce) {
					t.Errorf("SetPermissionMode(bypass) without the option: %v, want a *ControlError", err)
				}
			},
		},
	)
}

// lastMain is the last main-loop messages request (not a side request).
func lastMain(t *testing.T, h *harness) *claudetest.Request {
	t.Helper()
	reqs := h.API.MessagesRequests()
	for i := len(reqs) - 1; i >= 0; i-- {
		if !reqs[i].Side {
			return reqs[i]
		}
	}
	t.Fatal("no messages request")
	return nil
}

func init() {
	addScenarios(scenario{
		name: "hook_async_output",
		guards: `A Go hook that answers {"async": true} (HookOutput.Async) does not hold the turn: the CLI runs the tool
and the turn ends, on both pinned CLIs.`,
		api: func() *claudetest.MessagesOptions {
			return &claudetest.MessagesOptions{Replies: []*claudetest.Reply{
				claudetest.ToolUseReply("toolu_async", "Bash", map[string]string{"command": "echo async-ok", "description": "Echo"}),
				claudetest.TextReply("done"),
			}}
		},
		opts: func(o *claude.Options) {
			o.AllowedTools = []string{"Bash(echo *)"}
			o.Hooks = map[claude.HookEvent][]claude.HookMatcher{
				claude.HookEventPreToolUse: {{Matcher: "Bash", Hooks: []claude.HookFunc{func(context.Context, *claude.HookInput) (*claude.HookOutput, error) {
					return &claude.HookOutput{Async: true, AsyncTimeout: 10000}, nil
				}}}},
				claude.HookEventPostToolUse: {{Matcher: "Bash", Hooks: []claude.HookFunc{func(context.Context, *claude.HookInput) (*claude.HookOutput, error) {
					return &claude.HookOutput{Event: &claude.PostToolUseHookOutput{ClassifierContext: "asked for by the user"}}, nil
				}}}},
			}
		},
		run: func(t *testing.T, h *harness) {
			msgs := h.turn(t, "echo")
			if res, ok := msgs[len(msgs)-1].(*claude.ResultMessage); !ok || res.Result != "done" {
				t.Errorf("turn ended with %T", msgs[len(msgs)-1])
			}
			reqs := h.API.MessagesRequests()
			tr := reqs[len(reqs)-1].Params.ToolResult("toolu_async")
			if tr == nil || !slices.ContainsFunc(tr.Content, func(b claudetest.ContentBlock) bool { return strings.Contains(b.Text, "async-ok") }) {
				t.Errorf("the tool's result = %+v", tr)
			}
		},
	})
}

func init() {
	addScenarios(scenario{
		name:   "options_skills",
		guards: `Options.Skills limits the skills listed to the model: of two project skills only the one named is offered.`,
		opts: func(o *claude.Options) {
			o.Skills = []string{"alpha-skill"}
			if o.Cwd == "" {
				return
			}
			for _, name := range []string{"alpha-skill", "beta-skill"} {
				dir := filepath.Join(o.Cwd, ".claude", "skills", name)
				if err := os.MkdirAll(dir, 0o755); err != nil {
					panic(err)
				}
				md := "---\nname: " + name + "\ndescription: The " + name + " does things with zebras.\n---\nDo it.\n"
				if err := os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte(md), 0o644); err != nil {
					panic(err)
				}
			}
		},
		run: func(t *testing.T, h *harness) {
			h.turn(t, "hi")
			body := string(lastMain(t, h).Body)
			if !strings.Contains(body, "alpha-skill") || strings.Contains(body, "beta-skill") {
				t.Errorf("alpha-skill listed: %v, beta-skill listed: %v", strings.Contains(body, "alpha-skill"), strings.Contains(body, "beta-skill"))
			}
		},
	})
}
