package host_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
	"github.com/tetherhq/tether/host"
)

// Slash commands with the real CLI: the session lists what its CLI takes
// as a prompt (its own commands and a project's), the slash_commands
// command answers the same, a project command sent as a prompt is
// expanded by the CLI, and a session asleep still lists its last CLI's
// commands without waking.
func init() {
	addScenarios(scenario{
		name:   "slash_commands",
		guards: "SlashCommands lists the CLI's own commands and a project's; /greet Ada reaches the model expanded; asleep, the list stays and nothing wakes.",
		api: func() *claudetest.MessagesOptions {
			return &claudetest.MessagesOptions{Replies: []*claudetest.Reply{claudetest.TextReply("Hello, Ada.")}}
		},
		opts: func(o *host.Options) {
			dir := filepath.Join(o.CLI.Cwd, ".claude", "commands")
			if err := os.MkdirAll(dir, 0o755); err != nil {
				panic(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "greet.md"), []byte("---\ndescription: Greet someone\nargument-hint: <name>\n---\nGreet $ARGUMENTS warmly.\n"), 0o644); err != nil {
				panic(err)
			}
		},
		run: func(t *testing.T, h *harness) {
			cmds := h.S.SlashCommands()
			find := func(name string) *claude.SlashCommand {
				i := slices.IndexFunc(cmds, func(c claude.SlashCommand) bool { return c.Name == name })
				if i < 0 {
					return nil
				}
				return &cmds[i]
			}
			if g := find("greet"); g == nil || !strings.Contains(g.Description, "Greet someone") || g.ArgumentHint != "<name>" {
				t.Errorf("the project's greet: %+v (of %d commands)", g, len(cmds))
			}
			if find("compact") == nil {
				t.Errorf("no compact among the CLI's %d commands", len(cmds))
			}
			res, err := h.S.Do(h.Ctx, &host.Command{Type: host.CommandSlashCommands})
			if err != nil {
				t.Fatalf("slash_commands: %v", err)
			}
			if d := cmp.Diff(cmds, res.SlashCommands); d != "" {
				t.Errorf("the command's list differs from SlashCommands (-want +got):\n%s", d)
			}

			d := h.turn(t, "/greet Ada")
			if r, err := d.Wait(h.Ctx); err != nil || r.Result != "Hello, Ada." {
				t.Fatalf("/greet Ada: %v, %v", r, err)
			}
			reqs := h.API.MessagesRequests()
			if len(reqs) == 0 || !strings.Contains(string(reqs[len(reqs)-1].Body), "Greet Ada warmly.") {
				t.Errorf("the model was not asked to greet Ada warmly")
			}
			h.states.waitState(t, h.Ctx, host.StateIdle)

			if err := h.S.Sleep(h.Ctx); err != nil {
				t.Fatalf("Sleep: %v", err)
			}
			res, err = h.S.Do(h.Ctx, &host.Command{Type: host.CommandSlashCommands})
			if err != nil || len(res.SlashCommands) != len(cmds) {
				t.Errorf("asleep: %d commands, %v; want %d", len(res.SlashCommands), err, len(cmds))
			}
			if st := h.S.State().State; st != host.StateAsleep {
				t.Errorf("after slash_commands the session is %s; want it still asleep", st)
			}
		},
	})
}
