package claudetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tetherhq/tether/claude"
)

// DefaultCLIVersion is the CLI version FindCLI looks for when neither its
// argument nor TETHER_CLI_VERSION names one: the version the protocol notes
// were written against.
const DefaultCLIVersion = claude.MinCLIVersion

// EnvCLIVersion names the environment variable that picks the CLI version
// the real-CLI tests run against, e.g. TETHER_CLI_VERSION=2.1.330.
const EnvCLIVersion = "TETHER_CLI_VERSION"

// CLICacheDir returns the folder scripts/install-cli.sh installs pinned CLI
// versions into: $TETHER_CLI_CACHE, else $XDG_CACHE_HOME/tether/cli, else
// $HOME/.cache/tether/cli. Each version lives in <dir>/<version>, with the
// binary at node_modules/.bin/claude.
func CLICacheDir() (string, error) {
	if d := os.Getenv("TETHER_CLI_CACHE"); d != "" {
		return d, nil
	}
	if d := os.Getenv("XDG_CACHE_HOME"); d != "" {
		return filepath.Join(d, "tether", "cli"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("locating the CLI cache: %w", err)
	}
	return filepath.Join(home, ".cache", "tether", "cli"), nil
}

// FindCLI returns the path of a pinned CLI binary. TETHER_CLI_PATH, when
// set, wins over everything (a developer's own build, say). Otherwise
// version "" means $TETHER_CLI_VERSION, else DefaultCLIVersion, and the
// binary is looked up in CLICacheDir. The error, when the binary is
// missing, wraps claude.ErrCLINotFound and says how to install it.
func FindCLI(version string) (string, error) {
	if p := os.Getenv(claude.EnvCLIPath); p != "" {
		if err := checkExecutable(p); err != nil {
			return "", fmt.Errorf("%s=%s: %w", claude.EnvCLIPath, p, err)
		}
		return p, nil
	}
	version = cliVersion(version)
	dir, err := CLICacheDir()
	if err != nil {
		return "", err
	}
	p := filepath.Join(dir, version, "node_modules", ".bin", "claude")
	if err := checkExecutable(p); err != nil {
		return "", fmt.Errorf("CLI %s not installed (run scripts/install-cli.sh %s): %w", version, version, err)
	}
	return p, nil
}

// CLIVersion is the version of the pinned CLI the real-CLI tests run
// (FindCLI("")): $TETHER_CLI_VERSION, else DefaultCLIVersion. A test that
// checks what a release changed asks it which side it is on. (With
// TETHER_CLI_PATH set the binary is the developer's, whatever this says.)
func CLIVersion() string { return cliVersion("") }

func cliVersion(version string) string {
	if version != "" {
		return version
	}
	if v := os.Getenv(EnvCLIVersion); v != "" {
		return v
	}
	return DefaultCLIVersion
}

func checkExecutable(p string) error {
	fi, err := os.Stat(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%w: %v", claude.ErrCLINotFound, err)
		}
		return err
	}
	if fi.IsDir() || fi.Mode()&0o111 == 0 {
		return fmt.Errorf("%w: %s is not an executable file", claude.ErrCLINotFound, p)
	}
	return nil
}

// CLIEnv returns the environment variables that point a real CLI at s and
// keep it from reaching anything else:
//
//   - ANTHROPIC_BASE_URL=s.URL and ANTHROPIC_API_KEY (the fake key);
//   - CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC, DISABLE_TELEMETRY,
//     DISABLE_AUTOUPDATER, DISABLE_ERROR_REPORTING: no update checks,
//     telemetry or error reports, which would go elsewhere than s;
//   - CLAUDE_CODE_MAX_RETRIES when MessagesOptions.MaxRetries is set;
//   - IS_SANDBOX=1, which lets --dangerously-skip-permissions run as root;
//   - HOME=home when home is not empty, so settings, credentials and
//     transcripts of the developer's own HOME are neither read nor written.
//
// These are only the variables this package sets; RealCLI.Environ builds
// a whole environment around them.
func (s *MessagesServer) CLIEnv(home string) map[string]string {
	env := map[string]string{
		"ANTHROPIC_BASE_URL":                       s.URL,
		"ANTHROPIC_API_KEY":                        s.opts.APIKey,
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
		"DISABLE_TELEMETRY":                        "1",
		"DISABLE_AUTOUPDATER":                      "1",
		"DISABLE_ERROR_REPORTING":                  "1",
		"IS_SANDBOX":                               "1",
	}
	if n := s.opts.MaxRetries; n != 0 {
		env["CLAUDE_CODE_MAX_RETRIES"] = strconv.Itoa(max(n, 0))
	}
	if home != "" {
		env["HOME"] = home
	}
	return env
}

// inheritedEnv lists the variables RealCLI.Environ copies from the test's
// own environment. Everything else is left out on purpose: a developer's
// ANTHROPIC_AUTH_TOKEN, CLAUDE_CODE_USE_BEDROCK, proxy settings or
// XDG_CONFIG_HOME would send the CLI elsewhere or load their settings.
var inheritedEnv = []string{"PATH", "SHELL", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR"}

// RealCLI is a real CLI binary set up to run against a MessagesServer in
// throw-away HOME and working directories.
type RealCLI struct {
	// Path is the CLI binary.
	Path string
	// Home and Dir are the CLI's HOME and working directory.
	Home string
	Dir  string
	// Env holds the variables from MessagesServer.CLIEnv; add to it before
	// calling Environ or Command to set more.
	Env map[string]string
}

// NewRealCLI finds the CLI (FindCLI with TETHER_CLI_VERSION) and prepares
// it to talk to s, with HOME and working directory from t.TempDir.
//
// When the CLI is not installed the test is skipped with a message saying
// how to install it, except under CI=true, where it fails: a CI run must
// never pass by skipping its real-CLI tests.
func NewRealCLI(t testing.TB, s *MessagesServer) *RealCLI {
	t.Helper()
	path, err := FindCLI("")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("real CLI required under CI=true: %v", err)
		}
		v := cliVersion("")
		t.Skipf("real CLI %s not found; install it with scripts/install-cli.sh %s (%v)", v, v, err)
	}
	home := t.TempDir()
	// A HOME where the CLI has run before, as far as one folder goes:
	// the CLI's start-up cleanup removes ~/.claude/session-env when it
	// finds it empty, and its Bash tool makes session-env/<session> a
	// step at a time; under load the removal came in between and the
	// first Bash call failed with ENOENT (CLI 2.1.197). Not empty, it
	// stays.
	if err := os.MkdirAll(filepath.Join(home, ".claude", "session-env", "tether-test"), 0o700); err != nil {
		t.Fatal(err)
	}
	env := s.CLIEnv(home)
	// The CLI keeps large tool outputs and image copies under its temp
	// directory (/tmp/claude-<uid> by default); keep them with the test.
	// Task outputs go under $TMPDIR/claude-<uid>: keep those too.
	tmp := t.TempDir()
	env["CLAUDE_CODE_TMPDIR"] = tmp
	env["TMPDIR"] = tmp
	return &RealCLI{Path: path, Home: home, Dir: t.TempDir(), Env: env}
}

// Environ returns the CLI's whole environment in os/exec form: the few
// harmless variables of inheritedEnv (PATH, SHELL, locale, TZ, TMPDIR)
// from the current process, then c.Env, sorted by name.
func (c *RealCLI) Environ() []string {
	env := make(map[string]string, len(c.Env)+len(inheritedEnv))
	for _, k := range inheritedEnv {
		if v, ok := os.LookupEnv(k); ok {
			env[k] = v
		}
	}
	for k, v := range c.Env {
		env[k] = v
	}
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	slices.Sort(out)
	return out
}

// Options returns session options that run this CLI, in its directories
// and with exactly its environment (Environ): nothing else of the test's
// environment reaches it.
func (c *RealCLI) Options() *claude.Options {
	env := make(map[string]string)
	for _, kv := range c.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	return &claude.Options{CLIPath: c.Path, Cwd: c.Dir, Env: env, EnvOnly: true}
}

// StreamJSONArgs are the flags every stream-json session starts with.
var StreamJSONArgs = []string{"-p", "--output-format", "stream-json", "--input-format", "stream-json", "--verbose"}

// Command returns a command running the CLI in stream-json mode
// (StreamJSONArgs followed by args) in c.Dir with c.Environ(). Cancelling
// ctx sends SIGTERM, then SIGKILL after WaitDelay (5 s), so Wait cannot
// hang on a CLI that ignores its stdin closing.
func (c *RealCLI) Command(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, c.Path, append(slices.Clone(StreamJSONArgs), args...)...)
	cmd.Dir = c.Dir
	cmd.Env = c.Environ()
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// PermissionSources reads what the CLI recorded in its session
// transcripts under c.Home (claude.ReadSession) of how each tool call was
// allowed or denied: the source of the stored permission decision
// ("user_temporary", "config", "rule"…) by tool_use id. CLIs before
// 2.1.332 record none; the map is then empty. Entries it cannot read are
// skipped: a transcript may be mid-write.
func (c *RealCLI) PermissionSources() (map[string]string, error) {
	out := map[string]string{}
	root := filepath.Join(c.Home, ".claude", "projects")
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".jsonl") {
			return err
		}
		for e, err := range claude.ReadSession(p) {
			if err != nil {
				continue
			}
			var rec struct {
				Message struct {
					Content []struct {
						ToolUseID string `json:"tool_use_id"`
					} `json:"content"`
				} `json:"message"`
				PermissionDecision *struct {
					Source string `json:"source"`
				} `json:"permissionDecision"`
			}
			if json.Unmarshal(e.RawJSON(), &rec) != nil || rec.PermissionDecision == nil {
				continue
			}
			for _, b := range rec.Message.Content {
				if b.ToolUseID != "" {
					out[b.ToolUseID] = rec.PermissionDecision.Source
				}
			}
		}
		return nil
	})
	if errors.Is(err, fs.ErrNotExist) {
		err = nil
	}
	return out, err
}
