package claude_test

import (
	"strings"
	"testing"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
	"github.com/tetherhq/tether/internal/proc"
)

// PreSkillShellCommand (CLI 2.1.332): a skill whose text runs a shell
// command (a !`…` line) loads through the Skill tool; the hook sees the
// command and lets it run or keeps it from running.

// preSkillSince is the first CLI that fires PreSkillShellCommand.
const preSkillSince = "2.1.332"

func init() {
	var log *eventLog
	addScenarios(scenario{
		name: "hooks_preskill_shell",
		guards: "PreSkillShellCommand (2.1.332): the model loads three project skills through the Skill tool, each with a shell " +
			"command in its text. The hook is called for each command with the command as it would run, the skill's name and " +
			"invoked_by claude; the command it allows runs (its output reaches the model), the one it denies does not (the model " +
			"sees no output, and the denial's reason), and one answered with updatedInput runs in neither form: the CLI never " +
			"applies it, any value blocks. Skipped on older CLIs, which never call the hook.",
		api: func() *claudetest.MessagesOptions {
			return &claudetest.MessagesOptions{Respond: func(r *claudetest.Request) *claudetest.Reply {
				switch {
				case r.Params.ToolResult("toolu_rewrite") != nil:
					return claudetest.TextReply("skills done")
				case r.Params.ToolResult("toolu_deny") != nil:
					return &claudetest.Reply{Content: []claudetest.ContentBlock{
						claudetest.ToolUseBlock("toolu_rewrite", "Skill", map[string]string{"skill": "shell-rewritten"}),
					}}
				case r.Params.ToolResult("toolu_allow") != nil:
					return &claudetest.Reply{Content: []claudetest.ContentBlock{
						claudetest.ToolUseBlock("toolu_deny", "Skill", map[string]string{"skill": "shell-denied"}),
					}}
				}
				return &claudetest.Reply{Content: []claudetest.ContentBlock{
					claudetest.ToolUseBlock("toolu_allow", "Skill", map[string]string{"skill": "shell-allowed"}),
				}}
			}}
		},
		opts: func(o *claude.Options) {
			log = newEventLog()
			writeFiles(o.Cwd, map[string]string{
				".claude/skills/shell-allowed/SKILL.md":   "---\nname: shell-allowed\ndescription: prints a number\nallowed-tools: Bash(echo:*)\n---\nThe number: !`echo ALLOWED-$((40+2))`\n",
				".claude/skills/shell-denied/SKILL.md":    "---\nname: shell-denied\ndescription: prints another number\nallowed-tools: Bash(echo:*)\n---\nThe other number: !`echo DENIED-$((50+5))`\n",
				".claude/skills/shell-rewritten/SKILL.md": "---\nname: shell-rewritten\ndescription: prints a third number\nallowed-tools: Bash(echo:*)\n---\nThe third number: !`echo REWRITTEN-$((60+6))`\n",
			})
			o.SettingSources = []claude.SettingSource{claude.SettingSourceProject}
			// Loading a skill asks for permission, which nobody answers
			// here: allow it by rule.
			o.AllowedTools = []string{"Skill"}
			log.register(o, map[claude.HookEvent]func(*claude.HookInput) *claude.HookOutput{
				claude.HookEventPreSkillShellCommand: func(in *claude.HookInput) *claude.HookOutput {
					e, _ := in.Event.(*claude.PreSkillShellCommandHookInput)
					switch {
					case e != nil && e.CommandName == "shell-allowed":
						return &claude.HookOutput{Event: &claude.PreSkillShellCommandHookOutput{PermissionDecision: claude.HookPermissionDecisionAllow}}
					case e != nil && e.CommandName == "shell-rewritten":
						// An allow with a rewrite: the CLI never applies
						// updatedInput, and any value keeps the command
						// from running.
						return &claude.HookOutput{Event: &claude.PreSkillShellCommandHookOutput{
							PermissionDecision: claude.HookPermissionDecisionAllow, UpdatedInput: []byte(`{"command":"echo REWRITTEN-$((60+7))"}`)}}
					}
					return &claude.HookOutput{Event: &claude.PreSkillShellCommandHookOutput{
						PermissionDecision: claude.HookPermissionDecisionDeny, PermissionDecisionReason: "no shell in this skill"}}
				},
			}, claude.HookEventPreSkillShellCommand)
		},
		run: func(t *testing.T, h *harness) {
			if proc.CompareVersions(claudetest.CLIVersion(), preSkillSince) < 0 {
				t.Skipf("CLI %s has no PreSkillShellCommand event (%s and later)", claudetest.CLIVersion(), preSkillSince)
			}
			msgs := h.turn(t, "load the skills")
			if r := result(t, msgs); r.IsError {
				t.Fatalf("turn failed: %+v", r)
			}
			ins := events[*claude.PreSkillShellCommandHookInput](t, log, claude.HookEventPreSkillShellCommand)
			if len(ins) != 3 {
				t.Fatalf("PreSkillShellCommand called %d times, want 3: %+v", len(ins), ins)
			}
			byName := map[string]*claude.PreSkillShellCommandHookInput{}
			for _, in := range ins {
				byName[in.CommandName] = in
				if in.ToolName != "Bash" || in.InvokedBy != "claude" || in.ToolUseID == "" {
					t.Errorf("hook input = %+v, want Bash, invoked_by claude, an id", in)
				}
			}
			if a := byName["shell-allowed"]; a == nil || !strings.Contains(a.ToolInput.Command, "echo ALLOWED-$((40+2))") {
				t.Errorf("the allowed skill's input = %+v", a)
			}
			if d := byName["shell-denied"]; d == nil || !strings.Contains(d.ToolInput.Command, "echo DENIED-$((50+5))") {
				t.Errorf("the denied skill's input = %+v", d)
			}
			if !h.Real() {
				return
			}
			reqs := h.API.MessagesRequests()
			last := reqs[len(reqs)-1].Params
			if !last.Contains("ALLOWED-42") {
				t.Error("the allowed command's output did not reach the model")
			}
			if last.Contains("DENIED-55") || !last.Contains("[not run: blocked by hook: no shell in this skill]") {
				t.Error("the denied command ran, or the model was not told why it did not")
			}
			if last.Contains("REWRITTEN-66") || last.Contains("REWRITTEN-67") || !last.Contains("The third number: [not run") {
				t.Error("the command whose hook answered with updatedInput ran, in either form")
			}
		},
	})
}
