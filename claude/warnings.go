package claude

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

// Warnings about options that work, but not as their author probably
// thinks. Connect logs each through Options.Logger (silent by default);
// OptionWarnings and Session.Warnings give them to programs.

// WarningCode names a kind of Warning.
type WarningCode string

// Warning codes.
const (
	// WarningCanUseToolShadowed: CanUseTool is set, but a rule or the
	// permission mode lets some tool run without asking, so the callback
	// never sees those calls.
	WarningCanUseToolShadowed WarningCode = "can_use_tool_shadowed"
)

// Warning is one doubtful combination of options.
type Warning struct {
	Code WarningCode
	// Option is the Options field that causes it, e.g. "AllowedTools".
	Option string
	// Tools are the tools concerned; nil means every tool.
	Tools   []string
	Message string
}

func (w Warning) String() string { return w.Message }

// editTools are the tools PermissionModeAcceptEdits allows without asking
// (for paths in the working directories).
var editTools = []string{"Edit", "Write", "NotebookEdit"}

// OptionWarnings returns the warnings for o: today, the ways CanUseTool
// can be shadowed so that it is never asked about some tool.
//
//   - AllowedTools, or an allow rule of Settings (the JSON, or the file
//     it names), that names a whole tool ("Bash", "mcp__srv" or
//     "mcp__srv__*") rather than a pattern ("Bash(git *)").
//   - PermissionMode bypassPermissions (every tool runs) or dontAsk
//     (what the rules do not allow is denied), or acceptEdits (Edit,
//     Write and NotebookEdit in the working directories run), also when
//     Settings sets it as permissions.defaultMode.
//
// Settings files the CLI loads on its own (SettingSources) are not read.
func OptionWarnings(o *Options) []Warning {
	if o == nil || o.CanUseTool == nil {
		return nil
	}
	var ws []Warning
	if tools := wholeToolRules(o.AllowedTools); len(tools) > 0 {
		ws = append(ws, Warning{
			Code: WarningCanUseToolShadowed, Option: "AllowedTools", Tools: tools,
			Message: fmt.Sprintf("claude: CanUseTool is never asked about %s: Options.AllowedTools allows the whole tool (give a pattern, e.g. %q, to keep asking for the rest)", strings.Join(tools, ", "), tools[0]+"(…)"),
		})
	}
	allow, mode := settingsPermissions(o.Settings)
	if tools := wholeToolRules(allow); len(tools) > 0 {
		ws = append(ws, Warning{
			Code: WarningCanUseToolShadowed, Option: "Settings", Tools: tools,
			Message: fmt.Sprintf("claude: CanUseTool is never asked about %s: an allow rule in Options.Settings allows the whole tool", strings.Join(tools, ", ")),
		})
	}
	for _, m := range []struct {
		option string
		mode   PermissionMode
	}{{"PermissionMode", o.PermissionMode}, {"Settings", mode}} {
		if m.option == "Settings" && o.PermissionMode != "" {
			continue // the flag wins over the settings' default mode
		}
		switch m.mode {
		case PermissionModeBypassPermissions:
			ws = append(ws, Warning{
				Code: WarningCanUseToolShadowed, Option: m.option,
				Message: fmt.Sprintf("claude: CanUseTool is never asked: Options.%s makes the CLI run every tool without asking (bypassPermissions)", m.option),
			})
		case PermissionModeDontAsk:
			ws = append(ws, Warning{
				Code: WarningCanUseToolShadowed, Option: m.option,
				Message: fmt.Sprintf("claude: CanUseTool is never asked: Options.%s is dontAsk, which denies whatever the rules do not allow", m.option),
			})
		case PermissionModeAcceptEdits:
			ws = append(ws, Warning{
				Code: WarningCanUseToolShadowed, Option: m.option, Tools: editTools,
				Message: fmt.Sprintf("claude: CanUseTool is not asked about file edits in the working directories (Edit, Write, NotebookEdit): Options.%s is acceptEdits", m.option),
			})
		}
	}
	return ws
}

// Warnings returns OptionWarnings for the session's options, as Connect
// logged them.
func (s *Session) Warnings() []Warning { return OptionWarnings(&s.opts) }

// warnOptions logs the warnings at Connect.
func (s *Session) warnOptions() {
	for _, w := range s.Warnings() {
		s.log.Warn(w.Message, "code", string(w.Code), "option", w.Option)
	}
}

// wholeToolRules returns the tools of the rules that name a whole tool.
func wholeToolRules(rules []string) []string {
	var tools []string
	for _, r := range rules {
		r = strings.TrimSpace(r)
		if r == "" {
			continue
		}
		if i := strings.IndexByte(r, '('); i >= 0 {
			// "Bash(*)" and "Bash()" allow the whole tool too.
			if p := strings.TrimSuffix(r[i+1:], ")"); p != "*" && p != "" {
				continue
			}
			r = r[:i]
		}
		tools = append(tools, r)
	}
	return tools
}

// settingsPermissions reads the allow rules and default mode of a
// Settings value (JSON, or a file's path); nothing on any error.
func settingsPermissions(settings string) (allow []string, mode PermissionMode) {
	s := strings.TrimSpace(settings)
	if s == "" {
		return nil, ""
	}
	b := []byte(s)
	if !strings.HasPrefix(s, "{") {
		var err error
		if b, err = os.ReadFile(s); err != nil {
			return nil, ""
		}
	}
	var v struct {
		Permissions struct {
			Allow       []string       `json:"allow"`
			DefaultMode PermissionMode `json:"defaultMode"`
		} `json:"permissions"`
	}
	if json.Unmarshal(b, &v) != nil {
		return nil, ""
	}
	return v.Permissions.Allow, v.Permissions.DefaultMode
}
