package claude_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
)

// cmdlinesWith returns the command lines of the processes on this machine
// that contain s.
func cmdlinesWith(t *testing.T, s string) []string {
	t.Helper()
	dirs, err := filepath.Glob("/proc/[0-9]*/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range dirs {
		b, err := os.ReadFile(p)
		if err != nil {
			continue // gone meanwhile, or not ours to read
		}
		if bytes.Contains(b, []byte(s)) {
			out = append(out, p+": "+string(bytes.ReplaceAll(b, []byte{0}, []byte{' '})))
		}
	}
	return out
}

func randomSecret(t *testing.T) string {
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return "tether-secret-" + hex.EncodeToString(b[:])
}

func newerCLI(s *claude.Session) bool { return s.Initialize().CLIVersion != "" }

// TestRealCLISettingsDelivery: settings holding a secret, and managed
// settings, reach the CLI and take effect (the secret is in the Bash
// tool's environment, the managed deny rule is in force); on 2.1.330 they
// travel in the initialize request and no command line on the machine
// holds the secret (/proc/*/cmdline), while on 2.1.197 they fall back to
// argv, as documented. DeliveryInitialize on 2.1.197 is a
// *CLIFeatureError before anything starts.
func TestRealCLISettingsDelivery(t *testing.T) {
	secret := randomSecret(t)
	run := claudetest.NewRealRun(t, &claudetest.MessagesOptions{Replies: []*claudetest.Reply{
		claudetest.ToolUseReply("toolu_secret", "Bash", map[string]string{"command": "echo got=$TETHER_SECRET_TOKEN"}),
		claudetest.TextReply("done"),
	}})
	// The CLI as Connect finds it (no recording transport): Connect
	// probes its version, which picks the delivery.
	o := run.CLI.Options()
	o.AllowedTools = []string{"Bash"}
	o.Settings = `{"env":{"TETHER_SECRET_TOKEN":"` + secret + `"}}`
	o.ManagedSettings = json.RawMessage(`{"permissions":{"deny":["WebFetch"]}}`)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := claude.Connect(ctx, o)
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	defer s.Close()
	leaks := cmdlinesWith(t, secret)
	cli, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(s.Initialize().PID), "cmdline"))
	if newerCLI(s) {
		if len(leaks) > 0 {
			t.Errorf("the secret shows in command lines: %q", leaks)
		}
		if !bytes.Contains(cli, []byte("--await-initialize")) || !bytes.Contains(cli, []byte("--managed-settings-in-initialize")) || bytes.Contains(cli, []byte("WebFetch")) {
			t.Errorf("the CLI's command line: %q", cli)
		}
		if ir := s.Initialize(); ir.SettingsApplied == nil || !*ir.SettingsApplied || ir.ManagedSettingsApplied == nil || !*ir.ManagedSettingsApplied {
			t.Errorf("not confirmed: %s", ir.Raw)
		}
	} else if len(leaks) == 0 {
		t.Errorf("2.1.197: settings should fall back to argv, but no command line holds them (CLI: %q)", cli)
	}
	// The settings took effect.
	st, err := s.Settings(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if eff := string(st.Effective); !strings.Contains(eff, `"deny":["WebFetch"]`) || !strings.Contains(eff, "TETHER_SECRET_TOKEN") {
		t.Errorf("settings not in effect: %s", eff)
	}
	if err := s.Send(ctx, "print the token"); err != nil {
		t.Fatal(err)
	}
	var msgs []claude.Message
	for m, err := range s.ReceiveTurn(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, m)
	}
	if _, tr := toolResult(t, msgs, "toolu_secret"); tr.Text() != "got="+secret {
		t.Errorf("Bash printed %q: the settings' env did not apply", tr.Text())
	}
	s.Close()

	// Insisting on the initialize request.
	o2 := *run.CLI.Options()
	o2.Settings = `{"env":{"TETHER_SECRET_TOKEN":"x"}}`
	o2.SettingsDelivery = claude.DeliveryInitialize
	s2, err := claude.Connect(ctx, &o2)
	var fe *claude.CLIFeatureError
	switch {
	case newerCLI(s):
		if err != nil {
			t.Errorf("DeliveryInitialize on a new CLI: %v", err)
		} else {
			s2.Close()
		}
	case !errors.As(err, &fe) || fe.Option != "SettingsDelivery" || fe.Found != "2.1.197":
		if s2 != nil {
			s2.Close()
		}
		t.Errorf("DeliveryInitialize on 2.1.197: %v, want a *CLIFeatureError", err)
	}
}

// TestRealCLINeedsNewerCLI: PerTaskStopAffordance, which 2.1.197 would
// silently ignore, fails Connect there with a *CLIFeatureError before the
// CLI starts; 2.1.330 takes it.
func TestRealCLINeedsNewerCLI(t *testing.T) {
	run := claudetest.NewRealRun(t, nil)
	o := run.CLI.Options() // Connect probes the version
	o.PerTaskStopAffordance = true
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := claude.Connect(ctx, o)
	if err == nil {
		defer s.Close()
		if !newerCLI(s) {
			t.Fatal("2.1.197 took PerTaskStopAffordance")
		}
		return
	}
	var fe *claude.CLIFeatureError
	if !errors.Is(err, claude.ErrNeedsNewerCLI) || !errors.As(err, &fe) || fe.Option != "PerTaskStopAffordance" || fe.Needs != "2.1.330" || fe.Found != "2.1.197" || fe.Path == "" {
		t.Fatalf("Connect: %v (%+v)", err, fe)
	}
	t.Log(err)
}

// TestRealCLIPluginDelivery: PluginDirs travel in the initialize request
// on 2.1.330 (no --plugin-dir in the CLI's command line, plugins_applied)
// and in argv on 2.1.197; on both the plugin is loaded.
func TestRealCLIPluginDelivery(t *testing.T) {
	run := claudetest.NewRealRun(t, &claudetest.MessagesOptions{Replies: []*claudetest.Reply{claudetest.TextReply("ok")}})
	o := run.CLI.Options() // Connect probes the version
	dir := filepath.Join(o.Cwd, "plugins", "tplug")
	for name, body := range map[string]string{
		".claude-plugin/plugin.json": `{"name":"tplug","version":"0.0.1","description":"a test plugin"}`,
		"commands/hello.md":          "---\ndescription: Say hello\n---\nSay hello to $ARGUMENTS\n",
	} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	o.PluginDirs = []string{dir}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := claude.Connect(ctx, o)
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	defer s.Close()
	cli, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(s.Initialize().PID), "cmdline"))
	inArgv := bytes.Contains(cli, []byte("--plugin-dir"))
	if ir := s.Initialize(); newerCLI(s) {
		if inArgv || ir.PluginsApplied == nil || !*ir.PluginsApplied {
			t.Errorf("2.1.330: plugin in argv %v, plugins_applied %v (command line %q)", inArgv, ir.PluginsApplied, cli)
		}
	} else if !inArgv {
		t.Errorf("2.1.197: no --plugin-dir in %q", cli)
	}
	if err := s.Send(ctx, "hi"); err != nil {
		t.Fatal(err)
	}
	var loaded bool
	for m, err := range s.ReceiveTurn(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		if im, ok := m.(*claude.InitMessage); ok {
			loaded = slices.Contains(im.SlashCommands, "tplug:hello")
		}
	}
	if !loaded {
		t.Error("the plugin's command is not listed: not loaded")
	}
}
