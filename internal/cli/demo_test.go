package cli

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tetherhq/tether/claude/claudetest"
	"github.com/tetherhq/tether/internal/proc"
)

// The demo, as a person runs it: approve the shell command, watch the Go
// MCP tool run under the Go hook, answer the question, read the cost.
func TestRealCLIDemo(t *testing.T) {
	t.Parallel()
	requireCLI(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	term := startTerminal(t, ctx, os.Environ(), t.TempDir(), "demo")
	term.waitFor("you: Show me what Tether can do.")
	term.waitFor("✻ The user wants a tour.")
	term.waitFor("First, a shell command; you decide whether it runs.")
	term.waitFor("? Bash wants to run")
	term.waitFor("$ echo 'hello from the shell' > hello.txt && cat hello.txt")
	term.waitFor("> ")
	term.typeLine("y")
	term.waitFor("⎿ hello from the shell")
	term.waitFor("The shell said: hello from the shell.")
	term.waitFor("⏺ " + demoMCPTool)
	term.waitFor(`⎿ {"words":6}`)
	term.waitFor("? Next: " + demoQuestion)
	term.waitFor("2. host — liveness, approvals and costs for UIs")
	term.waitFor("> ")
	term.typeLine("2")
	term.waitFor("answered: " + demoQuestion + " → host")
	term.waitFor(`"` + demoQuestion + `"="host"`)
	term.waitFor("Goodbye!")
	term.waitFor("✓ done")
	term.waitFor("cost: $")
	if code := term.exitCode(); code != 0 {
		t.Errorf("exit code %d", code)
	}
	// The hook's note may come before or after the tool call's line (it
	// is told from the hook's goroutine), so look for it anywhere.
	if !strings.Contains(term.text(), "hook PreToolUse (Go): allowed "+demoMCPTool+" without asking") {
		t.Error("the hook's note is missing")
	}
	if strings.Contains(term.text(), "? "+demoMCPTool) {
		t.Error("the MCP tool asked for permission despite the hook")
	}
}

// Denying the demo's shell command: the agent carries on without it.
func TestRealCLIDemoDeny(t *testing.T) {
	t.Parallel()
	requireCLI(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	term := startTerminal(t, ctx, os.Environ(), t.TempDir(), "demo", "--thinking", "collapsed")
	term.waitFor("✻ thought for")
	term.waitFor("? Bash wants to run")
	term.waitFor("> ")
	term.typeLine("n not today")
	term.waitFor("No shell then (not today")
	term.waitFor("? Next: ")
	term.waitFor("> ")
	term.typeLine("my own answer")
	term.waitFor(`"="my own answer"`)
	term.waitFor("Goodbye!")
	if code := term.exitCode(); code != 0 {
		t.Errorf("exit code %d", code)
	}
	if strings.Contains(term.text(), "The user wants a tour") {
		t.Error("collapsed thinking was shown in full")
	}
}

// The README's first command runs the demo; run exactly its tether
// invocation, non-interactively (no terminal, no stdin), as CI would.
func TestRealCLIReadmeDemo(t *testing.T) {
	t.Parallel()
	requireCLI(t)
	args := readmeDemoArgs(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, tetherBinary(t), args...)
	cmd.Dir = repoRoot(t) // where the README's command runs (for --install's script)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("tether %s: %v\n%s%s", strings.Join(args, " "), err, out.String(), errb.String())
	}
	for _, want := range []string{"--yes: allowed Bash", "⎿ hello from the shell", `{"words":6}`, "hook PreToolUse", "--yes: answered", "Goodbye!", "cost: $"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the demo's output lacks %q:\n%s", want, out.String())
		}
	}
}

// readmeDemoArgs returns the arguments of the `tether demo` invocation on
// the README's first command line (the first line of its first sh block
// that is not a comment): `go run ./cmd/tether demo …`.
func readmeDemoArgs(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	inBlock := false
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case !inBlock:
			inBlock = line == "```sh"
		case line == "" || strings.HasPrefix(line, "#"):
		default:
			const run = "go run ./cmd/tether "
			i := strings.Index(line, run)
			if i < 0 {
				t.Fatalf("the README's first command does not run tether: %q", line)
			}
			rest := line[i+len(run):]
			if j := strings.IndexAny(rest, "&|;#"); j >= 0 {
				rest = rest[:j]
			}
			args := strings.Fields(rest)
			if len(args) == 0 || args[0] != "demo" {
				t.Fatalf("the README's first command runs %q, not tether demo", rest)
			}
			return args
		}
	}
	t.Fatal("no sh block in the README")
	return nil
}

func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// Without a CLI, the demo says how to install one, naming the cache the
// tests and --install use.
func TestDemoMissingCLI(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("TETHER_CLI_CACHE", cache)
	t.Setenv("TETHER_CLI_PATH", "")
	t.Setenv("PATH", t.TempDir())
	t.Setenv("HOME", t.TempDir())
	if path, _, err := proc.Find("", os.Getenv); err == nil {
		t.Skipf("a CLI is installed where discovery looks: %s", path)
	}
	code, _, stderr := tether(t, "demo")
	if code != 1 || !strings.Contains(stderr, "tether demo --install") || !strings.Contains(stderr, cache) {
		t.Errorf("demo = %d, %q", code, stderr)
	}
}

// Inside a checkout, --install uses the repository's script.
func TestFindInstallScript(t *testing.T) {
	want := filepath.Join(repoRoot(t), "scripts", "install-cli.sh")
	if got := findInstallScript(); got != want {
		t.Errorf("findInstallScript() = %q, want %q", got, want)
	}
}

// installWithFakeNPM runs the demo's --install of version (the default
// when "") outside a checkout, with a fake npm that logs each call to the
// returned log (one line each, "$PWD $*") and then runs body, a shell
// script. It returns the CLI's path and its cache folder.
func installWithFakeNPM(t *testing.T, version, body string) (path, dir, log string) {
	t.Helper()
	cache, bin, work := t.TempDir(), t.TempDir(), t.TempDir()
	logFile := filepath.Join(bin, "npm.log")
	npm := "#!/bin/sh\necho \"$PWD $*\" >> " + logFile + "\n" + body
	if err := os.WriteFile(filepath.Join(bin, "npm"), []byte(npm), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TETHER_CLI_CACHE", cache)
	t.Setenv("TETHER_CLI_PATH", "")
	t.Setenv("TETHER_CLI_VERSION", version)
	t.Setenv("PATH", bin+string(os.PathListSeparator)+"/bin:/usr/bin")
	t.Chdir(work)
	var stderr bytes.Buffer
	path, err := demoCLI(context.Background(), "", true, &stderr)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	if version == "" {
		version = claudetest.DefaultCLIVersion
	}
	dir = filepath.Join(cache, version)
	if path != filepath.Join(dir, "node_modules", ".bin", "claude") {
		t.Errorf("path = %q", path)
	}
	b, _ := os.ReadFile(logFile)
	return path, dir, string(b)
}

// Outside a checkout, --install runs npm into the same cache folder the
// script uses (here a fake npm that records its arguments).
func TestInstallWithoutCheckout(t *testing.T) {
	_, dir, log := installWithFakeNPM(t, "", "mkdir -p node_modules/.bin\n"+
		"printf '#!/bin/sh\\necho \"2.1.197 (Claude Code)\"\\n' > node_modules/.bin/claude\n"+
		"chmod +x node_modules/.bin/claude\n")
	if want := dir + " install --no-audit --no-fund --loglevel=error --save-exact @anthropic-ai/claude-code@" + claudetest.DefaultCLIVersion; !strings.Contains(log, want+"\n") {
		t.Errorf("npm ran as %q, want %q", log, want)
	}
	if _, err := os.Stat(filepath.Join(dir, "package.json")); err != nil {
		t.Error("no package.json of our own in the cache folder")
	}
}

// A release the registry has only as platform packages (2.1.333 to
// 2.1.335): the install takes this machine's, and links its binary where
// the CLI's package would put it, where the demo and the tests look.
func TestInstallFromPlatformPackage(t *testing.T) {
	pkg, err := platformPackage()
	if err != nil {
		t.Skip(err) // no platform package for this machine: nothing to install
	}
	path, dir, log := installWithFakeNPM(t, "2.1.335", "[ \"$1\" = view ] && exit 1\n"+ // not in the registry under the CLI's name
		"mkdir -p node_modules/"+pkg+"\n"+
		"printf '#!/bin/sh\\necho \"2.1.335 (Claude Code)\"\\n' > node_modules/"+pkg+"/claude\n"+
		"chmod +x node_modules/"+pkg+"/claude\n")
	if out, err := exec.Command(path, "--version").Output(); err != nil || !strings.HasPrefix(string(out), "2.1.335 ") {
		t.Errorf("the linked binary says %q, %v", out, err)
	}
	if want := dir + " install --no-audit --no-fund --loglevel=error --save-exact " + pkg + "@2.1.335"; !strings.Contains(log, want+"\n") {
		t.Errorf("npm ran as %q, want %q", log, want)
	}
}
