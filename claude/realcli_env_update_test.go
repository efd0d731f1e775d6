package claude_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
)

func init() {
	addScenarios(scenario{
		name: "update_environment_variables",
		guards: "UpdateEnvironmentVariables reaches the CLI as its own stdin message and is answered: 2.1.330 lists what it applied " +
			"(CLAUDE_CODE_SESSION_ACCESS_TOKEN, an allowed name) and Tether lists the refused rest; 2.1.197 answers with no list. " +
			"On both, the applied variable reaches the next Bash command and the refused one does not.",
		api: func() *claudetest.MessagesOptions {
			return &claudetest.MessagesOptions{Replies: []*claudetest.Reply{
				claudetest.ToolUseReply("toolu_env", "Bash", map[string]string{"command": `echo "tok=$CLAUDE_CODE_SESSION_ACCESS_TOKEN other=$TETHER_NOT_ALLOWED"`}),
				claudetest.TextReply("printed"),
			}}
		},
		opts: func(o *claude.Options) { o.AllowedTools = []string{"Bash"} },
		run: func(t *testing.T, h *harness) {
			r, err := h.S.UpdateEnvironmentVariables(h.Ctx, map[string]string{
				"CLAUDE_CODE_SESSION_ACCESS_TOKEN": "tok-renewed",
				"TETHER_NOT_ALLOWED":               "x",
			})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("answer %s: applied %v, refused %v", r.Raw, r.Applied, r.Refused)
			if h.S.Initialize().CLIVersion != "" {
				// 2.1.330
				if !slices.Equal(r.Applied, []string{"CLAUDE_CODE_SESSION_ACCESS_TOKEN"}) || !slices.Equal(r.Refused, []string{"TETHER_NOT_ALLOWED"}) {
					t.Errorf("applied %v, refused %v", r.Applied, r.Refused)
				}
			} else if r.Applied != nil || r.Refused != nil {
				t.Errorf("2.1.197 listed applied %v, refused %v", r.Applied, r.Refused)
			}
			if _, err := h.S.UpdateEnvironmentVariables(h.Ctx, nil); err == nil {
				t.Error("no variables: no error")
			}
			msgs := h.turn(t, "print the token")
			_, tr := toolResult(t, msgs, "toolu_env")
			t.Logf("Bash printed %q", tr.Text())
			// The CLI's tools run with the updated environment.
			if !strings.Contains(tr.Text(), "tok=tok-renewed") {
				t.Errorf("the applied variable did not reach the Bash tool: %q", tr.Text())
			}
			if strings.Contains(tr.Text(), "other=x") {
				t.Errorf("a refused variable reached the Bash tool: %q", tr.Text())
			}
		},
	})
}
