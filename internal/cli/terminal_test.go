package cli

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/tetherhq/tether/claude/claudetest"
	"github.com/tetherhq/tether/internal/mcptest"
	"github.com/tetherhq/tether/internal/proc"
)

// The tether binary, built once (on first use) from ./cmd/tether: the
// tests drive it as a person would, in a pseudo-terminal.
var (
	binOnce sync.Once
	binDir  string
	binPath string
	binErr  error
)

func tetherBinary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		binDir, binErr = os.MkdirTemp("", "tether-bin-")
		if binErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "tether")
		out, err := exec.Command("go", "build", "-o", binPath, "github.com/tetherhq/tether/cmd/tether").CombinedOutput()
		if err != nil {
			binErr = errors.New("go build ./cmd/tether: " + err.Error() + "\n" + string(out))
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

// ansi matches the escape sequences tether writes on a terminal.
var ansi = regexp.MustCompile(`\x1b\[[0-9;]*[A-Za-z]|\r`)

// A terminal is tether running in a pseudo-terminal, with everything it
// wrote kept for the test to wait on.
type terminal struct {
	t    *testing.T
	ctx  context.Context
	pty  *os.File
	cmd  *exec.Cmd
	mu   sync.Mutex
	out  bytes.Buffer
	more chan struct{} // closed and replaced on each write
	read chan struct{} // closed when the pty reports the end
	done chan struct{} // closed when the process has exited
	err  error         // the process's exit, after done
	seen int           // how far waitFor has matched (in the plain text)
}

// startTerminal runs tether with args in a pty of 40×160, in dir, with env.
func startTerminal(t *testing.T, ctx context.Context, env []string, dir string, args ...string) *terminal {
	t.Helper()
	cmd := exec.Command(tetherBinary(t), args...)
	cmd.Env = append(env, "TERM=xterm-256color")
	cmd.Dir = dir
	f, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: 160})
	if err != nil {
		t.Fatal(err)
	}
	term := &terminal{t: t, ctx: ctx, pty: f, cmd: cmd, more: make(chan struct{}), read: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(term.read)
		buf := make([]byte, 4096)
		for {
			n, err := f.Read(buf)
			term.mu.Lock()
			term.out.Write(buf[:n])
			close(term.more)
			term.more = make(chan struct{})
			term.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	go func() {
		term.err = cmd.Wait()
		close(term.done)
	}()
	t.Cleanup(func() {
		select {
		case <-term.done:
		default:
			cmd.Process.Kill()
			<-term.done
		}
		f.Close()
		<-term.read
		if t.Failed() || os.Getenv("TETHER_SHOW_SCREEN") != "" {
			t.Logf("screen:\n%s", term.text())
		}
	})
	return term
}

// raw is what the program wrote to the terminal, escape sequences and all.
func (term *terminal) raw() string {
	term.mu.Lock()
	defer term.mu.Unlock()
	return term.out.String()
}

// text is what the screen showed, escape sequences removed.
func (term *terminal) text() string {
	term.mu.Lock()
	defer term.mu.Unlock()
	return ansi.ReplaceAllString(term.out.String(), "")
}

// waitFor waits until the screen shows want after what earlier waits
// matched. The deadline is the test's context: a hang guard only.
func (term *terminal) waitFor(want string) {
	term.t.Helper()
	for {
		term.mu.Lock()
		more := term.more
		term.mu.Unlock()
		text := term.text()
		if i := strings.Index(text[term.seen:], want); i >= 0 {
			term.seen += i + len(want)
			return
		}
		select {
		case <-more:
		case <-term.read:
			if !strings.Contains(term.text()[term.seen:], want) {
				term.t.Fatalf("tether ended without showing %q", want)
			}
		case <-term.ctx.Done():
			term.t.Fatalf("the screen never showed %q", want)
		}
	}
}

// typeLine types a line and presses Enter.
func (term *terminal) typeLine(s string) { term.send(s + "\r") }

func (term *terminal) send(s string) {
	term.t.Helper()
	if _, err := io.WriteString(term.pty, s); err != nil {
		term.t.Fatal(err)
	}
}

// exitCode waits for tether to exit and returns its status. It returns
// once the screen has been read to its end too, so what tether wrote last
// is in text(): the pty reports its end when no process holds it any
// more, so one that does (a process tether left behind) fails the test.
func (term *terminal) exitCode() int {
	term.t.Helper()
	select {
	case <-term.done:
	case <-term.ctx.Done():
		term.t.Fatal("tether did not exit")
	}
	select {
	case <-term.read:
	case <-term.ctx.Done():
		term.t.Fatal("tether exited, but its terminal stayed open: a process it started still holds it")
	}
	return term.cmd.ProcessState.ExitCode()
}

// realCLI sets up the real CLI against a fake Messages API with opts,
// skipping (failing under CI=true) when the CLI is not installed.
func realCLI(t *testing.T, opts *claudetest.MessagesOptions) (context.Context, *claudetest.MessagesServer, *claudetest.RealCLI) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	api := claudetest.NewMessagesServer(opts)
	t.Cleanup(api.Close)
	cli := claudetest.NewRealCLI(t, api)
	return ctx, api, cli
}

// runArgs are `tether run` flags pointing at the test's CLI.
func runArgs(cli *claudetest.RealCLI, more ...string) []string {
	return append([]string{"run", "--cli", cli.Path, "--cwd", cli.Dir}, more...)
}

// noProcessIn fails if a process still runs in dir: a CLI (or a tool it
// started) that outlived tether.
func noProcessIn(t *testing.T, dir string) {
	t.Helper()
	if runtime.GOOS != "linux" {
		return
	}
	dir, _ = filepath.EvalSymlinks(dir)
	procs, _ := filepath.Glob("/proc/[0-9]*/cwd")
	for _, p := range procs {
		if cwd, err := os.Readlink(p); err == nil && cwd == dir {
			cmdline, _ := os.ReadFile(filepath.Join(filepath.Dir(p), "cmdline"))
			t.Errorf("process %s still runs in %s: %q", filepath.Base(filepath.Dir(p)), dir, bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '}))
		}
	}
}

// requireCLI skips (fails under CI=true) without the pinned CLI.
func requireCLI(t *testing.T) {
	t.Helper()
	if _, err := claudetest.FindCLI(""); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
}

// An Edit approval in a terminal shows a unified diff of the file (hunk
// header, the file's own line numbers, context), coloured; the reply's
// Markdown is rendered, its Go block highlighted, no fence left showing.
func TestRealCLIRunEditDiff(t *testing.T) {
	t.Parallel()
	requireCLI(t)
	ctx, api, cli := realCLI(t, nil)
	file := filepath.Join(cli.Dir, "greet.go")
	before := "package greet\n\nimport \"strings\"\n\n// greet says hello.\nfunc greet(name string) string {\n\treturn \"hello, \" + name\n}\n\n// shout says it louder.\nfunc shout(name string) string {\n\treturn strings.ToUpper(greet(name))\n}\n"
	if err := os.WriteFile(file, []byte(before), 0o644); err != nil {
		t.Fatal(err)
	}
	api.Enqueue(
		claudetest.ToolUseReply("toolu_read", "Read", map[string]any{"file_path": file}),
		claudetest.ToolUseReply("toolu_edit", "Edit", map[string]any{
			"file_path":  file,
			"old_string": "\treturn \"hello, \" + name\n",
			"new_string": "\tif name == \"\" {\n\t\tname = \"world\"\n\t}\n\treturn \"hello, \" + name + \"!\"\n",
		}),
		claudetest.TextReply("Done. The **default** is now:\n\n```go\nif name == \"\" {\n\tname = \"world\"\n}\n```\n"),
	)
	term := startTerminal(t, ctx, cli.Environ(), cli.Dir, runArgs(cli, "default the name")...)
	term.waitFor("? Edit wants to run")
	term.waitFor("@@ -4,7 +4,10 @@")
	term.waitFor(" 6  6  func greet(name string) string {")
	term.waitFor(" 7    -\treturn \"hello, \" + name")
	term.waitFor("   10 +\treturn \"hello, \" + name + \"!\"")
	term.waitFor("[y] allow")
	if !strings.Contains(term.raw(), styleRed+"-\treturn") || !strings.Contains(term.raw(), styleGreen+"+\tif name") {
		t.Error("the diff's lines are not red and green on a terminal")
	}
	term.typeLine("y")
	term.waitFor("allowed Edit")
	term.waitFor("Done. The default is now:")
	term.waitFor("if name == \"\" {")
	term.waitFor("✓ done")
	if code := term.exitCode(); code != 0 {
		t.Errorf("exit code %d", code)
	}
	// The reply showed live as written, then its rendering took its
	// place: what follows the last (rendered) code line has no fence.
	text := term.text()
	tail := text[strings.LastIndex(text, "name = \"world\""):]
	if strings.Contains(tail, "```") || !strings.Contains(term.raw(), "\x1b[J") {
		t.Errorf("the reply's Markdown was not rendered in place of its text:\n%s", tail)
	}
	if b, err := os.ReadFile(file); err != nil || !strings.Contains(string(b), "name = \"world\"") {
		t.Errorf("greet.go = %q, %v", b, err)
	}
	noProcessIn(t, cli.Dir)
}

// With -i --prompt-suggestions, the CLI's guess at the next prompt shows
// above the prompt once a turn has ended, and an empty line sends it as
// the next turn's prompt. The real CLI guesses from the second turn on,
// and only when the last reply's usage reads as a warm prompt cache
// (claude's TestRealCLIPromptSuggestion): the replies report cache reads.
func TestRealCLIRunPromptSuggestion(t *testing.T) {
	t.Parallel()
	requireCLI(t)
	const guess = "Now add a test for the parser"
	ctx, api, cli := realCLI(t, &claudetest.MessagesOptions{
		Replies: []*claudetest.Reply{claudetest.CachedTextReply("The parser is fixed."), claudetest.CachedTextReply("The docs are written."), claudetest.CachedTextReply("The test is added.")},
		RespondSide: func(r *claudetest.Request) *claudetest.Reply {
			if claudetest.IsPromptSuggestion(r) {
				return claudetest.CachedTextReply(guess)
			}
			return nil
		},
	})
	term := startTerminal(t, ctx, cli.Environ(), cli.Dir, runArgs(cli, "-i", "--prompt-suggestions", "Fix the parser")...)
	term.waitFor("The parser is fixed.")
	term.waitFor("> ")
	term.typeLine("Write the docs")
	term.waitFor("The docs are written.")
	term.waitFor("↳ suggested: " + guess + "   (Enter on an empty line sends it)")
	term.waitFor("> ")
	term.typeLine("")
	term.waitFor("sent the suggestion: " + guess)
	term.waitFor("The test is added.")
	term.waitFor("> ")
	term.send("\x04") // Ctrl-D: stdin ends, and with it the session
	if code := term.exitCode(); code != 0 {
		t.Errorf("exit code %d", code)
	}
	reqs := api.MessagesRequests()
	if len(reqs) != 3 || !reqs[2].Params.Contains(guess) {
		t.Errorf("the third turn did not send the suggestion as its prompt (%d main-loop requests)", len(reqs))
	}
	if n := len(api.Unexpected()); n != 0 {
		t.Errorf("%d unscripted requests", n)
	}
	noProcessIn(t, cli.Dir)
}

// An MCP server's request for input is asked in the terminal like a
// question: what the server asks, then the form's fields one at a time
// (a choice by its number, a wrong one asked again, free text over its
// bound asked again), and the values reach the server's tool; a page to
// visit is named, and Enter says the visit is done.
func TestRealCLIRunElicitation(t *testing.T) {
	t.Parallel()
	requireCLI(t)
	url, listed := mcptest.ServeHTTP(t, mcptest.Deploy())
	ctx, api, cli := realCLI(t, &claudetest.MessagesOptions{Replies: []*claudetest.Reply{
		claudetest.TextReply("Ready."),
		claudetest.ToolUseReply("toolu_pick", "mcp__deploy__pick", map[string]any{}),
		claudetest.ToolUseReply("toolu_signin", "mcp__deploy__signin", map[string]any{}),
		claudetest.TextReply("Deployed."),
	}})
	mcpConfig := `{"mcpServers":{"deploy":{"type":"http","url":"` + url + `/"}}}`
	term := startTerminal(t, ctx, cli.Environ(), cli.Dir, runArgs(cli, "-i", "--mcp-config", mcpConfig, "--allow", "mcp__deploy", "hello")...)
	term.waitFor("Ready.")
	term.waitFor("> ")
	select {
	case <-listed:
	case <-ctx.Done():
		t.Fatal("the CLI never listed the deploy server's tools")
	}
	term.typeLine("deploy it")
	term.waitFor("? deploy asks for input: " + mcptest.DeployMessage)
	term.waitFor("Environment * [Enter: staging]")
	term.waitFor("1. staging")
	term.waitFor("2. production")
	term.typeLine("3")
	term.waitFor("pick 1 to 2")
	term.typeLine("") // the default
	term.waitFor("note — Why now")
	term.typeLine(strings.Repeat("x", 201))
	term.waitFor("note must be at most 200 characters (that was 201)")
	term.typeLine("smoke test")
	// A value not of its field's format is asked again, with the host's
	// words for what fits; an empty line skips a field not required.
	term.waitFor("When")
	term.typeLine("tomorrow")
	term.waitFor("When must be a date and time, as 2026-12-06T16:30:00Z")
	term.typeLine("")
	term.waitFor("sent deploy: env=staging, note=smoke test")
	// A page to visit, where the CLI lets a server ask for one.
	byURL := proc.CompareVersions(claudetest.CLIVersion(), "2.1.336") >= 0
	if byURL {
		term.waitFor("? deploy asks for input: " + mcptest.SignInMessage)
		term.waitFor("open " + mcptest.SignInURL)
		term.waitFor("press Enter once done there")
		term.typeLine("")
		term.waitFor("told deploy the page is done")
	}
	term.waitFor("Deployed.")
	term.waitFor("> ")
	term.send("\x04")
	if code := term.exitCode(); code != 0 {
		t.Errorf("exit code %d", code)
	}
	reqs := api.MessagesRequests()
	if tr := reqs[len(reqs)-1].Params.ToolResult("toolu_pick"); tr == nil || len(tr.Content) == 0 || tr.Content[0].Text != "accept map[env:staging note:smoke test]" {
		t.Errorf("the tool's result = %+v", tr)
	}
	if tr := reqs[len(reqs)-1].Params.ToolResult("toolu_signin"); tr == nil || len(tr.Content) == 0 || byURL != (tr.Content[0].Text == "signin accept") {
		t.Errorf("signin's result = %+v (CLI asks for pages: %v)", tr, byURL)
	}
	noProcessIn(t, cli.Dir)
}
