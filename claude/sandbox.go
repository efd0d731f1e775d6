package claude

import (
	"encoding/json"
	"fmt"
	"strings"
)

// SandboxSettings are the CLI's sandbox settings (the "sandbox" key of
// its settings file) for Options.Sandbox. The CLI sandboxes Bash commands
// with the platform's tools (bubblewrap on Linux, sandbox-exec on macOS).
type SandboxSettings struct {
	// Enabled runs Bash commands in the sandbox.
	Enabled bool
	// AllowUnsandboxedFallback lets the CLI run commands unsandboxed, with
	// a warning, when the sandbox cannot start (missing tools, an
	// unsupported platform). By default Tether sets the CLI's
	// failIfUnavailable, so the CLI exits at start instead: asking for a
	// sandbox and silently not getting one is the failure this prevents.
	AllowUnsandboxedFallback bool
	// AutoAllowBashIfSandboxed allows sandboxed Bash commands without
	// asking.
	AutoAllowBashIfSandboxed bool
	// AllowUnsandboxedCommands lets the model ask to run a command
	// outside the sandbox (dangerouslyDisableSandbox); false refuses.
	AllowUnsandboxedCommands bool
	// ExcludedCommands run outside the sandbox (e.g. "docker").
	ExcludedCommands []string
	// Network limits sandboxed commands' network access; nil means the
	// CLI's default.
	Network *SandboxNetwork
	// Extra holds more settings keys for the sandbox object, as JSON, for
	// those Tether does not model. Keys above win.
	Extra json.RawMessage
}

// SandboxNetwork is the sandbox's network policy.
type SandboxNetwork struct {
	AllowedDomains    []string `json:"allowedDomains,omitempty"`
	AllowUnixSockets  []string `json:"allowUnixSockets,omitempty"`
	AllowLocalBinding bool     `json:"allowLocalBinding,omitempty"`
}

// settingsJSON is the sandbox object in the settings file format.
func (s *SandboxSettings) settingsJSON() (map[string]any, error) {
	m := map[string]any{}
	if len(s.Extra) > 0 {
		if err := json.Unmarshal(s.Extra, &m); err != nil || m == nil {
			return nil, fmt.Errorf("claude: Options.Sandbox.Extra is not a JSON object")
		}
	}
	m["enabled"] = s.Enabled
	m["failIfUnavailable"] = !s.AllowUnsandboxedFallback
	m["autoAllowBashIfSandboxed"] = s.AutoAllowBashIfSandboxed
	m["allowUnsandboxedCommands"] = s.AllowUnsandboxedCommands
	if len(s.ExcludedCommands) > 0 {
		m["excludedCommands"] = s.ExcludedCommands
	}
	if s.Network != nil {
		m["network"] = s.Network
	}
	return m, nil
}

func (o *Options) validateSandbox() error {
	if o.Sandbox == nil {
		return nil
	}
	if _, err := o.Sandbox.settingsJSON(); err != nil {
		return err
	}
	if o.Settings == "" {
		return nil
	}
	var m map[string]json.RawMessage
	if !strings.HasPrefix(strings.TrimSpace(o.Settings), "{") || json.Unmarshal([]byte(o.Settings), &m) != nil {
		return fmt.Errorf("claude: Options.Sandbox needs Options.Settings to be empty or a JSON object, not a file path")
	}
	if _, ok := m["sandbox"]; ok {
		return fmt.Errorf("claude: Options.Sandbox and a \"sandbox\" key in Options.Settings are exclusive")
	}
	return nil
}

// settingsArg is the --settings value: Options.Settings, with the
// sandbox merged in. validate has checked that they merge.
func (o *Options) settingsArg() string {
	if o.Sandbox == nil {
		return o.Settings
	}
	m := map[string]json.RawMessage{}
	if o.Settings != "" {
		if err := json.Unmarshal([]byte(o.Settings), &m); err != nil {
			return o.Settings
		}
	}
	sb, err := o.Sandbox.settingsJSON()
	if err != nil {
		return o.Settings
	}
	b, _ := json.Marshal(sb)
	m["sandbox"] = b
	out, _ := json.Marshal(m)
	return string(out)
}
