package claudetest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tetherhq/tether/claude"
)

// fakeInstall makes <cache>/<version>/node_modules/.bin/claude.
func fakeInstall(t *testing.T, cache, version string) string {
	t.Helper()
	p := filepath.Join(cache, version, "node_modules", ".bin", "claude")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// These tests change the environment, so they are not parallel.

func TestFindCLI(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("TETHER_CLI_CACHE", cache)
	t.Setenv(claude.EnvCLIPath, "")
	t.Setenv(EnvCLIVersion, "")
	def := fakeInstall(t, cache, DefaultCLIVersion)
	other := fakeInstall(t, cache, "9.9.9")

	if got, err := FindCLI(""); err != nil || got != def {
		t.Errorf(`FindCLI("") = %q, %v; want the default version %q`, got, err, def)
	}
	if got, err := FindCLI("9.9.9"); err != nil || got != other {
		t.Errorf(`FindCLI("9.9.9") = %q, %v`, got, err)
	}
	t.Setenv(EnvCLIVersion, "9.9.9")
	if got, err := FindCLI(""); err != nil || got != other {
		t.Errorf(`FindCLI("") with TETHER_CLI_VERSION = %q, %v; want %q`, got, err, other)
	}

	_, err := FindCLI("1.2.3")
	if !errors.Is(err, claude.ErrCLINotFound) || !strings.Contains(err.Error(), "scripts/install-cli.sh 1.2.3") {
		t.Errorf(`FindCLI("1.2.3") error = %v; want ErrCLINotFound naming the install script`, err)
	}

	t.Setenv(claude.EnvCLIPath, def)
	if got, err := FindCLI("9.9.9"); err != nil || got != def {
		t.Errorf("FindCLI with TETHER_CLI_PATH = %q, %v; want the override %q", got, err, def)
	}
	t.Setenv(claude.EnvCLIPath, filepath.Join(cache, "missing"))
	if _, err := FindCLI(""); !errors.Is(err, claude.ErrCLINotFound) {
		t.Errorf("FindCLI with a missing TETHER_CLI_PATH = %v; want ErrCLINotFound", err)
	}
}

func TestCLICacheDir(t *testing.T) {
	t.Setenv("TETHER_CLI_CACHE", "")
	t.Setenv("XDG_CACHE_HOME", "/xdg")
	if got, _ := CLICacheDir(); got != "/xdg/tether/cli" {
		t.Errorf("with XDG_CACHE_HOME: %q", got)
	}
	t.Setenv("XDG_CACHE_HOME", "")
	t.Setenv("HOME", "/home/u")
	if got, _ := CLICacheDir(); got != "/home/u/.cache/tether/cli" {
		t.Errorf("with HOME only: %q", got)
	}
	t.Setenv("TETHER_CLI_CACHE", "/c")
	if got, _ := CLICacheDir(); got != "/c" {
		t.Errorf("with TETHER_CLI_CACHE: %q", got)
	}
}

func TestCLIEnv(t *testing.T) {
	for _, tt := range []struct {
		maxRetries int
		want       string // "" = unset
	}{{0, ""}, {3, "3"}, {-1, "0"}} {
		t.Run(fmt.Sprint(tt.maxRetries), func(t *testing.T) {
			s := NewMessagesServer(&MessagesOptions{MaxRetries: tt.maxRetries})
			defer s.Close()
			want := map[string]string{
				"ANTHROPIC_BASE_URL":                       s.URL,
				"ANTHROPIC_API_KEY":                        DefaultAPIKey,
				"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
				"DISABLE_TELEMETRY":                        "1",
				"DISABLE_AUTOUPDATER":                      "1",
				"DISABLE_ERROR_REPORTING":                  "1",
				"IS_SANDBOX":                               "1",
				"HOME":                                     "/tmp/h",
			}
			if tt.want != "" {
				want["CLAUDE_CODE_MAX_RETRIES"] = tt.want
			}
			if diff := cmp.Diff(want, s.CLIEnv("/tmp/h")); diff != "" {
				t.Errorf("CLIEnv (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEnvironIsolated(t *testing.T) {
	t.Setenv("ANTHROPIC_AUTH_TOKEN", "real-token")
	t.Setenv("CLAUDE_CODE_USE_BEDROCK", "1")
	t.Setenv("XDG_CONFIG_HOME", "/home/dev/.config")
	t.Setenv("PATH", "/usr/bin:/bin")
	c := &RealCLI{Env: map[string]string{"HOME": "/tmp/h", "EXTRA": "1"}}
	got := c.Environ()
	for _, kv := range got {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_USE_BEDROCK", "XDG_CONFIG_HOME":
			t.Errorf("Environ leaks %s", kv)
		}
	}
	for _, kv := range []string{"PATH=/usr/bin:/bin", "HOME=/tmp/h", "EXTRA=1"} {
		if !contains(got, kv) {
			t.Errorf("Environ lacks %s: %v", kv, got)
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// stopTB records Skip and Fatal calls; like the real ones, they end the
// calling goroutine.
type stopTB struct {
	testing.TB
	skipped, fatal string
}

func (s *stopTB) Helper() {}

func (s *stopTB) Skipf(format string, args ...any) {
	s.skipped = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func (s *stopTB) Fatalf(format string, args ...any) {
	s.fatal = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func runTB(tb *stopTB, f func(testing.TB)) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(tb)
	}()
	<-done
}

func TestSetupWithoutCLI(t *testing.T) {
	t.Setenv("TETHER_CLI_CACHE", t.TempDir())
	t.Setenv(claude.EnvCLIPath, "")
	t.Setenv(EnvCLIVersion, "")
	s := NewMessagesServer(nil)
	defer s.Close()

	t.Setenv("CI", "")
	tb := &stopTB{TB: t}
	runTB(tb, func(tb testing.TB) { NewRealCLI(tb, s) })
	if !strings.Contains(tb.skipped, "scripts/install-cli.sh "+DefaultCLIVersion) || tb.fatal != "" {
		t.Errorf("outside CI: skipped %q, fatal %q; want a skip naming the install script", tb.skipped, tb.fatal)
	}

	t.Setenv("CI", "true")
	tb = &stopTB{TB: t}
	runTB(tb, func(tb testing.TB) { NewRealCLI(tb, s) })
	if tb.fatal == "" || tb.skipped != "" {
		t.Errorf("under CI=true: skipped %q, fatal %q; want a failure, never a skip", tb.skipped, tb.fatal)
	}
}

func TestSetupFindsCLI(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("TETHER_CLI_CACHE", cache)
	t.Setenv(claude.EnvCLIPath, "")
	t.Setenv(EnvCLIVersion, "")
	bin := fakeInstall(t, cache, DefaultCLIVersion)
	s := NewMessagesServer(&MessagesOptions{MaxRetries: 1})
	defer s.Close()
	c := NewRealCLI(t, s)
	if c.Path != bin || c.Home == "" || c.Dir == "" || c.Home == c.Dir {
		t.Errorf("RealCLI = %+v", c)
	}
	if c.Env["HOME"] != c.Home || c.Env["CLAUDE_CODE_MAX_RETRIES"] != "1" || c.Env["ANTHROPIC_BASE_URL"] != s.URL {
		t.Errorf("Env = %v", c.Env)
	}
	cmd := c.Command(t.Context(), "--include-partial-messages")
	want := append([]string{bin}, append(StreamJSONArgs, "--include-partial-messages")...)
	if diff := cmp.Diff(want, cmd.Args); diff != "" {
		t.Errorf("args (-want +got):\n%s", diff)
	}
	if cmd.Dir != c.Dir || !contains(cmd.Env, "HOME="+c.Home) || cmd.WaitDelay == 0 {
		t.Errorf("command dir %q, env %v, wait delay %v", cmd.Dir, cmd.Env, cmd.WaitDelay)
	}
}
