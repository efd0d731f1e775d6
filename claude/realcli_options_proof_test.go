package claude_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
	"github.com/tetherhq/tether/internal/proc"
)

// Real-CLI proofs of rows of docs/parity.md that were covered (the value
// reaches the CLI) but never seen to work: start-up options sent in
// initialize, AgentDefinition fields, and a claim's settings overlay.
// Each test compares a run with the option to one without, on what the
// CLI sends the fake API or writes to the host.

// subagentAPI scripts a turn in which the main thread starts the agent
// named agent (in the foreground) and the subagent answers subText.
func subagentAPI(agent, subText string) *claudetest.MessagesOptions {
	return &claudetest.MessagesOptions{Respond: func(req *claudetest.Request) *claudetest.Reply {
		switch {
		case req.Subagent() && req.Params.ToolResult("toolu_proof_glob") == nil:
			// One tool call first: some of the subagent's context (the
			// per-turn reminders) is attached between tool calls.
			return claudetest.ToolUseReply("toolu_proof_glob", "Glob", map[string]any{"pattern": "*.md"})
		case req.Subagent():
			return claudetest.TextReply(subText)
		case req.Params.ToolResult("toolu_proof_agent") != nil:
			return claudetest.TextReply("done")
		default:
			return claudetest.ToolUseReply("toolu_proof_agent", "Agent", map[string]any{
				"description": "Do the task", "prompt": "Do the task", "subagent_type": agent, "run_in_background": false,
			})
		}
	}}
}

// subagentBodies are the bodies of the subagent's API requests.
func subagentBodies(api *claudetest.MessagesServer) []string {
	var out []string
	for _, r := range api.MessagesRequests() {
		if r.Params != nil && r.Subagent() {
			out = append(out, string(r.Body))
		}
	}
	return out
}

// atLeast330 reports a CLI version at least 2.1.330, where the newer
// AgentDefinition fields take effect.
func atLeast330(version string) bool { return proc.CompareVersions(version, "2.1.330") >= 0 }

func anyContains(bodies []string, s string) bool {
	return slices.ContainsFunc(bodies, func(b string) bool { return strings.Contains(b, s) })
}

// agentRun runs one turn in which the main thread starts the agent "proof"
// defined by def, and returns the subagent's request bodies.
func agentRun(t *testing.T, def claude.AgentDefinition, set func(o *claude.Options)) (*mcpRun, []string) {
	t.Helper()
	r := parityRun(t, subagentAPI("proof", "SUB-DONE"), func(o *claude.Options) {
		if def.Description == "" {
			def.Description = "Does the task"
		}
		if def.Prompt == "" {
			def.Prompt = "You do the task."
		}
		o.Agents = map[string]claude.AgentDefinition{"proof": def}
		if set != nil {
			set(o)
		}
	})
	turnOf(t, r.Ctx, r.S, "start the agent")
	bodies := subagentBodies(r.API)
	if len(bodies) == 0 {
		t.Fatalf("the subagent made no request (CLI %s)", r.Version)
	}
	return r, bodies
}

// TestRealCLIAgentOmitClaudeMd: the project's CLAUDE.md reaches a
// subagent's requests unless its agent sets OmitClaudeMd (2.1.330 and
// newer; 2.1.197 ignores the field).
func TestRealCLIAgentOmitClaudeMd(t *testing.T) {
	t.Parallel()
	const marker = "PROJECT-INSTRUCTIONS-3ZK"
	for _, omit := range []bool{false, true} {
		r, bodies := agentRun(t, claude.AgentDefinition{OmitClaudeMd: omit}, func(o *claude.Options) {
			writeFiles(o.Cwd, map[string]string{"CLAUDE.md": "Always say " + marker + "."})
			o.SettingSources = []claude.SettingSource{claude.SettingSourceProject}
		})
		want := !omit || !atLeast330(r.Version) // 2.1.197 ignores the field
		if got := anyContains(bodies, marker); got != want {
			t.Errorf("OmitClaudeMd %v: CLAUDE.md in the subagent's request = %v, want %v (CLI %s)", omit, got, want, r.Version)
		}
		if main := mainRequests(r.API); len(main) == 0 || !strings.Contains(string(main[0].Body), marker) {
			t.Errorf("OmitClaudeMd %v: the main thread lost CLAUDE.md (CLI %s)", omit, r.Version)
		}
	}
}

// TestRealCLIAgentMemory: an agent with Memory "project" is told about
// its memory folder, .claude/agent-memory/<agent>/.
func TestRealCLIAgentMemory(t *testing.T) {
	t.Parallel()
	for _, scope := range []string{"project", ""} {
		r, bodies := agentRun(t, claude.AgentDefinition{Memory: scope}, nil)
		if got := anyContains(bodies, "agent-memory"); got != (scope != "") {
			t.Errorf("Memory %q: agent-memory in the subagent's request = %v (CLI %s)", scope, got, r.Version)
		}
	}
}

// TestRealCLIForwardSubagentText: with ForwardSubagentText the
// subagent's text reaches the host as an AssistantMessage with
// ParentToolUseID set; without it only its tool calls would.
func TestRealCLIForwardSubagentText(t *testing.T) {
	t.Parallel()
	for _, fwd := range []bool{true, false} {
		r := parityRun(t, subagentAPI("proof", "SUBAGENT-TEXT-9D"), func(o *claude.Options) {
			o.Agents = map[string]claude.AgentDefinition{"proof": {Description: "Does the task", Prompt: "You do the task."}}
			o.ForwardSubagentText = fwd
		})
		msgs := turnOf(t, r.Ctx, r.S, "start the agent")
		got := slices.ContainsFunc(msgs, func(m claude.Message) bool {
			a, ok := m.(*claude.AssistantMessage)
			return ok && a.ParentToolUseID == "toolu_proof_agent" && strings.Contains(a.Text(), "SUBAGENT-TEXT-9D")
		})
		if got != fwd {
			t.Errorf("ForwardSubagentText %v: the subagent's text reached the host = %v (CLI %s)", fwd, got, r.Version)
		}
	}
}

// TestRealCLIPlanModeInstructions: in plan mode the CLI's plan-mode
// reminder carries Options.PlanModeInstructions.
func TestRealCLIPlanModeInstructions(t *testing.T) {
	t.Parallel()
	const marker = "PLAN-WORKFLOW-4HX"
	for _, with := range []bool{true, false} {
		r := parityRun(t, nil, func(o *claude.Options) {
			o.PermissionMode = claude.PermissionModePlan
			if with {
				o.PlanModeInstructions = "Follow " + marker + "."
			}
		})
		turnOf(t, r.Ctx, r.S, "plan it")
		main := mainRequests(r.API)
		if len(main) == 0 {
			t.Fatal("no messages request")
		}
		if got := strings.Contains(string(main[0].Body), marker); got != with {
			t.Errorf("PlanModeInstructions set %v: in the request = %v (CLI %s)", with, got, r.Version)
		}
	}
}

// TestRealCLIToolAliases: a tool call by an alias name runs the tool the
// alias maps to; without the alias the call fails as an unknown tool.
func TestRealCLIToolAliases(t *testing.T) {
	t.Parallel()
	for _, with := range []bool{true, false} {
		api := &claudetest.MessagesOptions{Respond: func(req *claudetest.Request) *claudetest.Reply {
			if req.Params.ToolResult("toolu_alias") != nil {
				return claudetest.TextReply("done")
			}
			return claudetest.ToolUseReply("toolu_alias", "Shell", map[string]any{"command": "echo ALIAS-RAN-$((6*7))"})
		}}
		r := parityRun(t, api, func(o *claude.Options) {
			o.CanUseTool = func(context.Context, *claude.ToolPermissionRequest) (claude.PermissionResult, error) {
				return &claude.PermissionAllow{}, nil
			}
			if with {
				o.ToolAliases = map[string]string{"Shell": "Bash"}
			}
		})
		turnOf(t, r.Ctx, r.S, "run it")
		var res string
		for _, req := range mainRequests(r.API) {
			if tr := req.Params.ToolResult("toolu_alias"); tr != nil {
				b, _ := json.Marshal(tr)
				res = string(b)
			}
		}
		if got := strings.Contains(res, "ALIAS-RAN-42"); got != with {
			t.Errorf("ToolAliases set %v: the command ran = %v; tool result %s (CLI %s)", with, got, res, r.Version)
		}
	}
}

// TestRealCLIStrictMCPConfig: a server in the project's .mcp.json (its
// servers enabled by the project settings) is loaded unless
// StrictMCPConfig limits the session to the servers Options gives.
func TestRealCLIStrictMCPConfig(t *testing.T) {
	t.Parallel()
	for _, strict := range []bool{false, true} {
		r := parityRun(t, nil, func(o *claude.Options) {
			writeFiles(o.Cwd, map[string]string{
				".mcp.json":             `{"mcpServers":{"projsrv":{"command":"` + filepath.Join(o.Cwd, "no-such-server") + `"}}}`,
				".claude/settings.json": `{"enableAllProjectMcpServers":true}`,
			})
			o.SettingSources = []claude.SettingSource{claude.SettingSourceProject}
			o.StrictMCPConfig = strict
		})
		msgs := turnOf(t, r.Ctx, r.S, "hi")
		var servers []string
		for _, m := range msgs {
			if in, ok := m.(*claude.InitMessage); ok {
				for _, s := range in.MCPServers {
					servers = append(servers, s.Name)
				}
			}
		}
		if got := slices.Contains(servers, "projsrv"); got == strict {
			t.Errorf("StrictMCPConfig %v: .mcp.json's server loaded = %v (servers %v, CLI %s)", strict, got, servers, r.Version)
		}
	}
}

// TestRealCLIClaimSettings: ClaimOptions.Settings, a flag-settings
// overlay applied with the claim, is in force in the claimed session: a
// deny rule for Bash refuses the model's Bash call, which a claim without
// it runs (the host's CanUseTool allows everything; a deny rule comes
// first). A hook key is refused before anything is sent. Prewarm needs
// CLI 2.1.330 or newer.
func TestRealCLIClaimSettings(t *testing.T) {
	t.Parallel()
	if proc.CompareVersions(claudetest.CLIVersion(), claude.ClaimVersion) < 0 {
		t.Skipf("CLI %s cannot be prewarmed (TestPrewarmRealCLI checks the error)", claudetest.CLIVersion())
	}
	for _, deny := range []bool{true, false} {
		run := claudetest.NewRealRun(t, &claudetest.MessagesOptions{Respond: func(req *claudetest.Request) *claudetest.Reply {
			if req.Params.ToolResult("toolu_claim_bash") != nil {
				return claudetest.TextReply("done")
			}
			return claudetest.ToolUseReply("toolu_claim_bash", "Bash", map[string]any{"command": "echo CLAIM-RAN-$((6*7))"})
		}})
		o := run.Options
		o.Cwd = t.TempDir()
		o.CanUseTool = func(context.Context, *claude.ToolPermissionRequest) (claude.PermissionResult, error) {
			return &claude.PermissionAllow{}, nil
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		sp, err := claude.Prewarm(ctx, o)
		if err != nil {
			t.Fatalf("Prewarm: %v", err)
		}
		defer sp.Close()
		c := &claude.ClaimOptions{Cwd: t.TempDir()}
		if deny {
			c.Settings = json.RawMessage(`{"hooks":{}}`)
			var ne *claude.NotClaimableError
			if _, err := sp.Claim(ctx, c); !errors.As(err, &ne) || !slices.Equal(ne.Fields, []string{"Settings.hooks"}) {
				t.Fatalf("Claim with a hooks overlay: err = %v, want a *NotClaimableError naming Settings.hooks", err)
			}
			c.Settings = json.RawMessage(`{"permissions":{"deny":["Bash"]}}`)
		}
		s, err := sp.Claim(ctx, c)
		if err != nil {
			t.Fatalf("Claim: %v", err)
		}
		defer s.Close()
		turnOf(t, ctx, s, "run it")
		var res string
		for _, req := range mainRequests(run.API) {
			if tr := req.Params.ToolResult("toolu_claim_bash"); tr != nil {
				b, _ := json.Marshal(tr)
				res = string(b)
			}
		}
		if ran := strings.Contains(res, "CLAIM-RAN-42"); ran == deny {
			t.Errorf("overlay denying Bash %v: Bash ran = %v; tool result %s (CLI %s)", deny, ran, res, claudetest.CLIVersion())
		}
	}
}

// compactPrompt begins the CLI's request for a summary when it compacts a
// conversation (every pinned version).
const compactPrompt = "CRITICAL: Respond with TEXT ONLY"

// TestRealCLIAgentAutoCompactWindow: a subagent whose API usage reports
// 150,000 input tokens compacts its conversation when its agent's
// AutoCompactWindow is 100,000 (the CLI's minimum: a smaller value drops
// the whole agent), and goes on without compacting otherwise. 2.1.330 and
// newer; 2.1.197 ignores the field.
func TestRealCLIAgentAutoCompactWindow(t *testing.T) {
	t.Parallel()
	for _, window := range []int{100000, 0} {
		var mu sync.Mutex
		calls := 0
		api := &claudetest.MessagesOptions{Respond: func(req *claudetest.Request) *claudetest.Reply {
			switch {
			case req.Subagent():
				mu.Lock()
				calls++
				n := calls
				mu.Unlock()
				if n > 3 {
					return claudetest.TextReply("SUB-DONE")
				}
				r := claudetest.ToolUseReply(fmt.Sprintf("toolu_big_%d", n), "Glob", map[string]any{"pattern": "*.md"})
				r.Usage = claudetest.Usage{InputTokens: 150000, OutputTokens: 10}
				return r
			case req.Params.ToolResult("toolu_proof_agent") != nil:
				return claudetest.TextReply("done")
			default:
				return claudetest.ToolUseReply("toolu_proof_agent", "Agent", map[string]any{
					"description": "Do the task", "prompt": "Do the task", "subagent_type": "proof", "run_in_background": false,
				})
			}
		}}
		r := parityRun(t, api, func(o *claude.Options) {
			o.Agents = map[string]claude.AgentDefinition{"proof": {Description: "Does the task", Prompt: "You do the task.", AutoCompactWindow: window}}
		})
		turnOf(t, r.Ctx, r.S, "start the agent")
		subs := subagentBodies(r.API)
		if len(subs) == 0 {
			t.Fatalf("window %d: the subagent made no request (CLI %s)", window, r.Version)
		}
		want := window > 0 && atLeast330(r.Version)
		if got := anyContains(subs, compactPrompt); got != want {
			t.Errorf("AutoCompactWindow %d: the subagent compacted = %v, want %v (CLI %s)", window, got, want, r.Version)
		}
	}
}

// TestRealCLIAgentObserver: an agent's Observer is started as a
// background agent while the agent runs, and its ObserverMessage ends the
// activity digests it is sent. The CLI does this only with its own
// switch CLAUDE_CODE_EXPERIMENTAL_OBSERVER_AGENTS set (in Options.Env),
// and from 2.1.330 on (2.1.197 ignores the fields).
func TestRealCLIAgentObserver(t *testing.T) {
	t.Parallel()
	const watcherPrompt, note = "WATCHER-PROMPT-77", "OBSERVER-NOTE-55"
	for _, with := range []bool{true, false} {
		var mu sync.Mutex
		calls := 0
		api := &claudetest.MessagesOptions{Respond: func(req *claudetest.Request) *claudetest.Reply {
			switch {
			case strings.Contains(string(req.Body), watcherPrompt):
				return claudetest.TextReply("observed")
			case req.Subagent():
				// A few tool calls: the observer is sent digests of the
				// agent's activity.
				mu.Lock()
				calls++
				n := calls
				mu.Unlock()
				if n > 3 {
					return claudetest.TextReply("SUB-DONE")
				}
				return claudetest.ToolUseReply(fmt.Sprintf("toolu_obs_%d", n), "Glob", map[string]any{"pattern": "*.md"})
			case req.Params.ToolResult("toolu_proof_agent") != nil:
				return claudetest.TextReply("done")
			default:
				return claudetest.ToolUseReply("toolu_proof_agent", "Agent", map[string]any{
					"description": "Do the task", "prompt": "Do the task", "subagent_type": "proof", "run_in_background": false,
				})
			}
		}}
		r := parityRun(t, api, func(o *claude.Options) {
			def := claude.AgentDefinition{Description: "Does the task", Prompt: "You do the task."}
			if with {
				def.Observer, def.ObserverMessage = "watcher", note
			}
			o.Agents = map[string]claude.AgentDefinition{"proof": def, "watcher": {Description: "Watches the task", Prompt: watcherPrompt}}
			if o.Env == nil {
				o.Env = map[string]string{}
			}
			o.Env["CLAUDE_CODE_EXPERIMENTAL_OBSERVER_AGENTS"] = "1"
		})
		turnOf(t, r.Ctx, r.S, "start the agent")
		var watcher []string
		for _, req := range r.API.MessagesRequests() {
			if b := string(req.Body); strings.Contains(b, watcherPrompt) {
				watcher = append(watcher, b)
			}
		}
		want := with && atLeast330(r.Version)
		if got := len(watcher) > 0; got != want {
			t.Errorf("Observer set %v: the observer ran = %v, want %v (CLI %s)", with, got, want, r.Version)
		}
		if want && !anyContains(watcher, note) {
			t.Errorf("the observer's requests lack ObserverMessage (CLI %s)", r.Version)
		}
	}
}

// summaryPrompt begins the CLI's request for a subagent's progress
// summary.
const summaryPrompt = "Describe your most recent action in 3-5 words"

// TestRealCLIAgentProgressSummaries: with AgentProgressSummaries the CLI
// forks a running subagent's conversation about every 30 seconds to ask
// for a short summary, and reports the answer in a *TaskProgressMessage.
// The subagent here keeps calling Bash until the summary has been asked
// for and reported (about 30 s), then finishes.
func TestRealCLIAgentProgressSummaries(t *testing.T) {
	t.Parallel()
	const summary = "Checking the proof file"
	var mu sync.Mutex
	asked, after, calls := false, 0, 0
	var first time.Time // the subagent's first call
	api := &claudetest.MessagesOptions{Respond: func(req *claudetest.Request) *claudetest.Reply {
		last := ""
		if u := req.Params.LastUser(); u != nil {
			last = u.Text()
		}
		switch {
		case req.Subagent() && strings.Contains(last, summaryPrompt):
			mu.Lock()
			asked = true
			mu.Unlock()
			return claudetest.TextReply(summary)
		case req.Subagent():
			mu.Lock()
			calls++
			n := calls
			if first.IsZero() {
				first = time.Now()
			}
			if asked {
				after++
			}
			// Done a few calls after the summary, or, if none comes, when
			// three timer periods have passed.
			done := after > 3 || time.Since(first) > 90*time.Second
			mu.Unlock()
			if done {
				return claudetest.TextReply("SUB-DONE")
			}
			time.Sleep(time.Second) // the subagent is busy; the summary timer runs
			return claudetest.ToolUseReply(fmt.Sprintf("toolu_busy_%d", n), "Bash", map[string]any{"command": "true"})
		case req.Params.ToolResult("toolu_proof_agent") != nil:
			return claudetest.TextReply("done")
		default:
			return claudetest.ToolUseReply("toolu_proof_agent", "Agent", map[string]any{
				"description": "Do the task", "prompt": "Do the task", "subagent_type": "proof", "run_in_background": false,
			})
		}
	}}
	r := parityRun(t, api, func(o *claude.Options) {
		o.Agents = map[string]claude.AgentDefinition{"proof": {Description: "Does the task", Prompt: "You do the task."}}
		o.AgentProgressSummaries = true
		o.CanUseTool = func(context.Context, *claude.ToolPermissionRequest) (claude.PermissionResult, error) {
			return &claude.PermissionAllow{}, nil
		}
	})
	msgs := turnOf(t, r.Ctx, r.S, "start the agent")
	mu.Lock()
	defer mu.Unlock()
	if !asked {
		t.Fatalf("the CLI never asked for a progress summary in %d subagent calls (CLI %s)", calls, r.Version)
	}
	if !slices.ContainsFunc(msgs, func(m claude.Message) bool {
		p, ok := m.(*claude.TaskProgressMessage)
		return ok && p.Summary == summary
	}) {
		t.Errorf("no task_progress carried the summary %q (CLI %s)", summary, r.Version)
	}
}
