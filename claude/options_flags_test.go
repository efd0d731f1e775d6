package claude_test

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/tetherhq/tether/claude"
)

// The thinking configurations map onto the flags the TypeScript SDK
// passes for them.
func TestThinkingArgs(t *testing.T) {
	for _, c := range []struct {
		cfg  claude.ThinkingConfig
		want []string
		not  []string
	}{
		{claude.ThinkingConfig{Type: claude.ThinkingAdaptive}, []string{"--thinking=adaptive"}, []string{"--thinking-display"}},
		{claude.ThinkingConfig{Type: claude.ThinkingEnabled, BudgetTokens: 2048, Display: claude.ThinkingDisplayOmitted},
			[]string{"--max-thinking-tokens=2048", "--thinking-display=omitted"}, []string{"--thinking=adaptive"}},
		{claude.ThinkingConfig{Type: claude.ThinkingEnabled}, []string{"--thinking=adaptive"}, []string{"--max-thinking-tokens"}},
		{claude.ThinkingConfig{Type: claude.ThinkingDisabled}, []string{"--thinking=disabled"}, []string{"--thinking-display"}},
	} {
		l, _ := launched(t, &claude.Options{Thinking: &c.cfg})
		for _, w := range c.want {
			if !slices.Contains(l.Args, w) {
				t.Errorf("%+v: argv lacks %q: %q", c.cfg, w, l.Args)
			}
		}
		for _, n := range c.not {
			if slices.ContainsFunc(l.Args, func(a string) bool { return len(a) >= len(n) && a[:len(n)] == n }) {
				t.Errorf("%+v: argv has %q: %q", c.cfg, n, l.Args)
			}
		}
	}
	// An empty non-nil Tools means no built-in tools.
	l, _ := launched(t, &claude.Options{Tools: []string{}})
	if !slices.Contains(l.Args, "--tools=") {
		t.Errorf("Tools: []string{}: argv = %q, want --tools=", l.Args)
	}
	// With bypassPermissions the flag is passed once.
	l, _ = launched(t, &claude.Options{PermissionMode: claude.PermissionModeBypassPermissions, AllowDangerouslySkipPermissions: true})
	n := 0
	for _, a := range l.Args {
		if a == "--allow-dangerously-skip-permissions" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("--allow-dangerously-skip-permissions %d times: %q", n, l.Args)
	}
}

// InitializeExtra adds keys without replacing Tether's own.
func TestInitializeExtra(t *testing.T) {
	_, init := launched(t, &claude.Options{
		Title:           "T",
		InitializeExtra: map[string]json.RawMessage{"futureKey": json.RawMessage(`[1,2]`), "other": json.RawMessage(`"x"`)},
	})
	if init["title"] != "T" || init["other"] != "x" || init["subtype"] != "initialize" {
		t.Errorf("initialize = %v", init)
	}
	if v, ok := init["futureKey"].([]any); !ok || len(v) != 2 {
		t.Errorf("futureKey = %v", init["futureKey"])
	}
}

// An empty non-nil Skills means no skills: it is sent, not omitted.
func TestSkillsEmpty(t *testing.T) {
	_, init := launched(t, &claude.Options{Skills: []string{}})
	if v, ok := init["skills"].([]any); !ok || len(v) != 0 {
		t.Errorf("skills = %#v, want []", init["skills"])
	}
	_, init = launched(t, &claude.Options{})
	if _, ok := init["skills"]; ok {
		t.Error("skills sent without Options.Skills")
	}
}
