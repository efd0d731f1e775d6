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
	"github.com/tetherhq/tether/internal/proc"
)

// Control requests and options added for parity with the TypeScript SDK
// (docs/parity.md), against the real CLI. Requests 2.1.197 does not know
// must fail there with a *ControlError, never hang.
func init() {
	addScenarios(
		scenario{
			name: "control_parity",
			guards: `The typed control requests added for parity decode against the real CLI: ReadFile (text and base64),
ReloadOutputStyles, HooksListing (listing the session's Go hook), PermissionRules (listing AllowedTools),
SetMCPPermissionModeOverride (warning for an unknown server), UpdateSettings (writing the local settings
file), Reinitialize and InterruptTurn while idle, after which a turn still runs.
On CLIs that predate a request it fails with a *ControlError.`,
			api: func() *claudetest.MessagesOptions {
				return &claudetest.MessagesOptions{Replies: []*claudetest.Reply{
					claudetest.ToolUseReply("toolu_env", "Bash", map[string]string{"command": "printenv TETHER_PARITY_VAR", "description": "Print the variable"}),
					claudetest.TextReply("done"),
				}}
			},
			opts: func(o *claude.Options) {
				o.AllowedTools = []string{"Bash(printenv *)"}
				if o.Env == nil {
					o.Env = map[string]string{}
				}
				o.Env["TETHER_PARITY_VAR"] = "set-at-start"
				o.Hooks = map[claude.HookEvent][]claude.HookMatcher{
					claude.HookEventPreToolUse: {{Matcher: "Bash", Hooks: []claude.HookFunc{func(context.Context, *claude.HookInput) (*claude.HookOutput, error) {
						return nil, nil
					}}}},
				}
				if o.Cwd != "" {
					if err := os.WriteFile(filepath.Join(o.Cwd, "hello.txt"), []byte("hello\n"), 0o644); err != nil {
						panic(err)
					}
				}
			},
			run: runControlParity,
		},
	)
}

// newer reports whether the session's CLI is 2.1.330 or later.
func newer(t *testing.T, h *harness) bool {
	t.Helper()
	v, err := h.S.BinaryVersion(h.Ctx, nil)
	if err != nil {
		t.Fatalf("BinaryVersion: %v", err)
	}
	return proc.CompareVersions(v.Version, "2.1.330") >= 0
}

// unsupported checks that an old CLI refused a request it does not know.
func unsupported(t *testing.T, what string, err error) {
	t.Helper()
	var ce *claude.ControlError
	if !errors.As(err, &ce) || !errors.Is(err, claude.ErrUnsupportedRequest) {
		t.Errorf("%s on an old CLI: err = %v, want a *ControlError matching ErrUnsupportedRequest", what, err)
	}
}

func runControlParity(t *testing.T, h *harness) {
	isNew := newer(t, h)

	// read_file: both versions.
	f, err := h.S.ReadFile(h.Ctx, &claude.ReadFileParams{Path: "hello.txt"})
	if err != nil {
		t.Fatalf("ReadFile: %v", err)
	}
	if f.Contents != "hello\n" || f.AbsPath != filepath.Join(h.Opts.Cwd, "hello.txt") || f.Encoding != "" {
		t.Errorf("ReadFile = %+v", f)
	}
	f, err = h.S.ReadFile(h.Ctx, &claude.ReadFileParams{Path: "hello.txt", Encoding: claude.ReadFileBase64})
	if err != nil || f.Contents != "aGVsbG8K" || f.Encoding != claude.ReadFileBase64 {
		t.Errorf("ReadFile base64 = %+v, %v", f, err)
	}
	var ce *claude.ControlError
	if _, err := h.S.ReadFile(h.Ctx, &claude.ReadFileParams{Path: "missing.txt"}); !errors.As(err, &ce) || errors.Is(err, claude.ErrUnsupportedRequest) {
		t.Errorf("ReadFile of a missing file: err = %v, want a *ControlError that is not ErrUnsupportedRequest", err)
	}

	// set_mcp_permission_mode_override: both versions.
	mo, err := h.S.SetMCPPermissionModeOverride(h.Ctx, "nosuchserver", claude.MCPPermissionModeAuto)
	if err != nil || !strings.Contains(mo.Warning, "nosuchserver") {
		t.Errorf("SetMCPPermissionModeOverride = %+v, %v; want a warning naming the server", mo, err)
	}
	if _, err := h.S.SetMCPPermissionModeOverride(h.Ctx, "nosuchserver", claude.MCPPermissionModeClear); err != nil {
		t.Errorf("clearing the override: %v", err)
	}

	// initialize, again: both versions.
	ri, err := h.S.Reinitialize(h.Ctx)
	if err != nil || len(ri.Commands) == 0 || len(ri.Models) == 0 {
		t.Errorf("Reinitialize = %+v, %v", ri, err)
	}

	// The interrupt's receipt (2.1.330; 2.1.197 answers with no payload).
	ir, err := h.S.InterruptTurn(h.Ctx, &claude.InterruptParams{CancelQueued: true})
	if err != nil {
		t.Errorf("InterruptTurn: %v", err)
	} else if isNew && (ir.StillQueued == nil || len(ir.StillQueued) != 0) {
		t.Errorf("InterruptTurn while idle = %+v, want an empty still_queued", ir)
	}

	// Newer requests.
	st, err := h.S.ReloadOutputStyles(h.Ctx, nil)
	hl, herr := h.S.HooksListing(h.Ctx, nil)
	pr, perr := h.S.PermissionRules(h.Ctx, nil)
	uerr := h.S.UpdateSettings(h.Ctx, &claude.UpdateSettingsParams{Source: claude.SettingsFileLocal, Settings: json.RawMessage(`{"outputStyle":"Concise"}`)})
	if !isNew {
		unsupported(t, "ReloadOutputStyles", err)
		unsupported(t, "HooksListing", herr)
		unsupported(t, "PermissionRules", perr)
		unsupported(t, "UpdateSettings", uerr)
	} else {
		if err != nil || !slices.Contains(st.AvailableOutputStyles, "default") {
			t.Errorf("ReloadOutputStyles = %+v, %v", st, err)
		}
		if herr != nil || !slices.ContainsFunc(hl.EventCatalog, func(e claude.HookListingEvent) bool { return e.Name == "PreToolUse" && e.SupportsMatcher }) {
			t.Errorf("HooksListing = %+v, %v", hl, herr)
		}
		if perr != nil || !slices.ContainsFunc(pr.State.Rules, func(r claude.PermissionRuleEntry) bool {
			return r.Rule == "Bash(printenv *)" && r.Behavior == claude.PermissionBehaviorAllow && r.Source == "cliArg"
		}) {
			t.Errorf("PermissionRules = %+v, %v", pr, perr)
		}
		// The rule's plain-language reading, as 2.1.330 and 2.1.331 send it.
		if perr == nil && len(pr.State.Rules) > 0 {
			want := claude.PermissionRuleDescription{Prefix: "Any Bash command starting with ", Emphasis: "printenv"}
			if d := pr.State.Rules[0].Description; d == nil || *d != want {
				t.Errorf("the rule's description = %+v, want %+v", d, want)
			}
		}
		if uerr != nil {
			t.Errorf("UpdateSettings: %v", uerr)
		} else if b, err := os.ReadFile(filepath.Join(h.Opts.Cwd, ".claude", "settings.local.json")); err != nil || !strings.Contains(string(b), `"Concise"`) {
			t.Errorf("settings.local.json = %s, %v", b, err)
		}
		err := h.S.UpdateSettings(h.Ctx, &claude.UpdateSettingsParams{Source: claude.SettingsFileLocal, Settings: json.RawMessage(`{"permissions":{}}`)})
		if !errors.As(err, &ce) || !strings.Contains(ce.Message, "permissions") {
			t.Errorf("UpdateSettings with a key the CLI refuses: %v", err)
		}
	}

	// A turn still runs after all of it.
	h.turn(t, "print the variable")
	tr := h.API.MessagesRequests()[1].Params.ToolResult("toolu_env")
	if tr == nil || !slices.ContainsFunc(tr.Content, func(b claudetest.ContentBlock) bool { return strings.TrimSpace(b.Text) == "set-at-start" }) {
		t.Errorf("printenv's result = %+v", tr)
	}
}
