package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tetherhq/tether/claude/claudetest"
	"github.com/tetherhq/tether/internal/mcptest"
)

func fileBash(name string) *claudetest.Reply {
	return claudetest.ToolUseReply("toolu_bash", "Bash", map[string]string{
		"command": "echo made-by-tether > " + name + " && cat " + name, "description": "Make a file",
	})
}

// A person approves a Bash call: the prompt shows the command, the tool
// runs, its output and the final answer stream to the screen, and the
// run ends with the cost and exit code 0, leaving no process behind.
func TestRealCLIRunApprove(t *testing.T) {
	t.Parallel()
	ctx, api, cli := realCLI(t, &claudetest.MessagesOptions{Replies: []*claudetest.Reply{
		{Content: []claudetest.ContentBlock{
			claudetest.ThinkingBlock("A file is wanted; Bash will do.", "sig"),
			claudetest.TextBlock("Making the file now."),
			claudetest.ToolUseBlock("toolu_bash", "Bash", map[string]string{"command": "echo made-by-tether > out.txt && cat out.txt", "description": "Make a file"}),
		}},
		claudetest.TextReply("The file says made-by-tether."),
	}})
	term := startTerminal(t, ctx, cli.Environ(), cli.Dir, runArgs(cli, "make a file")...)
	term.waitFor("A file is wanted; Bash will do.")
	term.waitFor("Making the file now.")
	term.waitFor("? Bash wants to run")
	term.waitFor("$ echo made-by-tether > out.txt && cat out.txt")
	term.waitFor("[y] allow")
	term.typeLine("y")
	term.waitFor("allowed Bash")
	term.waitFor("⎿ made-by-tether")
	term.waitFor("The file says made-by-tether.")
	term.waitFor("✓ done")
	term.waitFor("cost: $")
	if code := term.exitCode(); code != 0 {
		t.Errorf("exit code %d", code)
	}
	if b, err := os.ReadFile(filepath.Join(cli.Dir, "out.txt")); err != nil || string(b) != "made-by-tether\n" {
		t.Errorf("out.txt = %q, %v", b, err)
	}
	reqs := api.MessagesRequests()
	if len(reqs) != 2 {
		t.Fatalf("%d API requests, want 2", len(reqs))
	}
	if tr := reqs[1].Params.ToolResult("toolu_bash"); tr == nil || tr.IsError {
		t.Errorf("tool result sent = %+v", tr)
	}
	if !strings.Contains(term.raw(), "\x1b[") {
		t.Error("no colours on a terminal")
	}
	noProcessIn(t, cli.Dir)
}

// A person denies with a reason: the model gets it as the tool's error
// and the command never runs.
func TestRealCLIRunDeny(t *testing.T) {
	t.Parallel()
	ctx, api, cli := realCLI(t, &claudetest.MessagesOptions{Replies: []*claudetest.Reply{
		fileBash("denied.txt"),
		claudetest.TextReply("Fine, no file."),
	}})
	term := startTerminal(t, ctx, cli.Environ(), cli.Dir, runArgs(cli, "make a file")...)
	term.waitFor("? Bash wants to run")
	term.waitFor("> ")
	term.typeLine("maybe")
	term.waitFor("answer y, a or n")
	term.typeLine("n not on my machine")
	term.waitFor("denied Bash: not on my machine")
	term.waitFor("Fine, no file.")
	if code := term.exitCode(); code != 0 {
		t.Errorf("exit code %d", code)
	}
	if _, err := os.Stat(filepath.Join(cli.Dir, "denied.txt")); err == nil {
		t.Error("the denied command ran")
	}
	reqs := api.MessagesRequests()
	if len(reqs) != 2 {
		t.Fatalf("%d API requests, want 2", len(reqs))
	}
	tr := reqs[1].Params.ToolResult("toolu_bash")
	if tr == nil || !tr.IsError || !strings.Contains(string(tr.Raw), "not on my machine") {
		t.Errorf("tool result sent = %+v", tr)
	}
}

// AskUserQuestion with several answers: the options are listed, "1,3"
// picks two, and the model reads both labels.
func TestRealCLIRunQuestion(t *testing.T) {
	t.Parallel()
	ctx, api, cli := realCLI(t, &claudetest.MessagesOptions{Replies: []*claudetest.Reply{
		claudetest.ToolUseReply("toolu_q", "AskUserQuestion", map[string]any{"questions": []any{map[string]any{
			"question": "Which colors?", "header": "Colors", "multiSelect": true,
			"options": []any{
				map[string]any{"label": "Red", "description": "warm"},
				map[string]any{"label": "Green", "description": "calm"},
				map[string]any{"label": "Blue", "description": "cold"},
			},
		}}}),
		claudetest.TextReply("Red and blue, noted."),
	}})
	term := startTerminal(t, ctx, cli.Environ(), cli.Dir, runArgs(cli, "pick colors")...)
	term.waitFor("? Colors: Which colors?")
	term.waitFor("1. Red — warm")
	term.waitFor("3. Blue — cold")
	term.waitFor("several allowed")
	term.typeLine("1,3")
	term.waitFor(`answered: Which colors? → Red, Blue`)
	term.waitFor("Red and blue, noted.")
	if code := term.exitCode(); code != 0 {
		t.Errorf("exit code %d", code)
	}
	reqs := api.MessagesRequests()
	if len(reqs) != 2 || !strings.Contains(string(reqs[1].Body), "Red, Blue") {
		t.Errorf("the answer did not reach the model (%d requests)", len(reqs))
	}
}

// Ctrl-C interrupts a streaming turn; in -i mode the session stays for a
// follow-up prompt, and a Ctrl-C while nothing runs quits, with no CLI
// left behind.
func TestRealCLIRunInterruptAndQuit(t *testing.T) {
	t.Parallel()
	ctx, api, cli := realCLI(t, &claudetest.MessagesOptions{Replies: []*claudetest.Reply{
		{Content: []claudetest.ContentBlock{claudetest.TextBlock("This answer goes on and on and never ends")}, ChunkSize: 8, StallAfterEvents: 4},
		claudetest.TextReply("Second answer."),
	}})
	term := startTerminal(t, ctx, cli.Environ(), cli.Dir, runArgs(cli, "-i", "talk for ever")...)
	term.waitFor("This answer goes")
	term.send("\x03")
	term.waitFor("interrupting… (Ctrl-C again to quit)")
	term.waitFor("⏹ interrupted")
	term.waitFor("> ")
	term.typeLine("now briefly")
	term.waitFor("Second answer.")
	term.waitFor("✓ done")
	term.waitFor("> ")
	term.send("\x03")
	term.waitFor("quitting")
	if code := term.exitCode(); code != 130 {
		t.Errorf("exit code %d, want 130", code)
	}
	reqs := api.MessagesRequests()
	if len(reqs) != 2 || !strings.Contains(string(reqs[1].Body), "now briefly") {
		t.Errorf("the follow-up did not reach the model (%d requests)", len(reqs))
	}
	noProcessIn(t, cli.Dir)
}

// Ctrl-C twice in a row quits at once, mid-turn, with no CLI left.
func TestRealCLIRunDoubleCtrlC(t *testing.T) {
	t.Parallel()
	ctx, _, cli := realCLI(t, &claudetest.MessagesOptions{Replies: []*claudetest.Reply{
		fileBash("never.txt"),
	}})
	term := startTerminal(t, ctx, cli.Environ(), cli.Dir, runArgs(cli, "make a file")...)
	term.waitFor("? Bash wants to run")
	term.send("\x03")
	term.waitFor("interrupting")
	term.send("\x03")
	if code := term.exitCode(); code != 130 {
		t.Errorf("exit code %d, want 130", code)
	}
	noProcessIn(t, cli.Dir)
}

// Not a terminal: plain text with no escape sequences, states as lines
// of their own, and answers read from stdin (typed ahead).
func TestRealCLIRunPlain(t *testing.T) {
	t.Parallel()
	ctx, api, cli := realCLI(t, &claudetest.MessagesOptions{Replies: []*claudetest.Reply{
		fileBash("plain.txt"),
		claudetest.TextReply("Understood."),
	}})
	cmd := exec.CommandContext(ctx, tetherBinary(t), runArgs(cli, "make a file")...)
	cmd.Env, cmd.Dir = cli.Environ(), cli.Dir
	cmd.Stdin = strings.NewReader("n piped no\n")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v\n%s%s", err, out.String(), errb.String())
	}
	got := out.String()
	for _, want := range []string{"[awaiting_approval Bash]", "? Bash wants to run", "> n piped no\n", "denied Bash: piped no", "Understood.", "[idle]", "cost: $"} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if strings.Contains(got, "\x1b") {
		t.Error("escape sequences in plain output")
	}
	if tr := api.MessagesRequests()[1].Params.ToolResult("toolu_bash"); tr == nil || !tr.IsError {
		t.Errorf("tool result = %+v", tr)
	}
	if t.Failed() {
		t.Logf("output:\n%s", got)
	}
}

// --json writes one event per line: messages with the CLI's own JSON,
// states, notes (the --yes answer) and the cost at the end.
func TestRealCLIRunJSON(t *testing.T) {
	t.Parallel()
	ctx, _, cli := realCLI(t, &claudetest.MessagesOptions{Replies: []*claudetest.Reply{
		fileBash("json.txt"),
		claudetest.TextReply("Done."),
	}})
	cmd := exec.CommandContext(ctx, tetherBinary(t), runArgs(cli, "--json", "--yes", "make a file")...)
	cmd.Env, cmd.Dir = cli.Environ(), cli.Dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v\n%s%s", err, out.String(), errb.String())
	}
	var states, types []string
	var last map[string]any
	sc := bufio.NewScanner(&out)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var ev map[string]any
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("not JSON: %q", sc.Text())
		}
		last = ev
		switch ev["type"] {
		case "state":
			states = append(states, ev["state"].(string))
		case "message":
			types = append(types, ev["message"].(map[string]any)["type"].(string))
		case "note":
			if ev["text"] != "--yes: allowed Bash" {
				t.Errorf("note %q", ev["text"])
			}
		}
	}
	if last["type"] != "cost" || last["usd"].(float64) <= 0 {
		t.Errorf("last event %v, want the cost", last)
	}
	for _, want := range []string{"requesting", "running_tool", "idle"} {
		if !slices.Contains(states, want) {
			t.Errorf("states %q lack %s", states, want)
		}
	}
	for _, want := range []string{"stream_event", "assistant", "user", "result"} {
		if !slices.Contains(types, want) {
			t.Errorf("message types %q lack %s", types, want)
		}
	}
	if b, err := os.ReadFile(filepath.Join(cli.Dir, "json.txt")); err != nil || string(b) != "made-by-tether\n" {
		t.Errorf("json.txt = %q, %v", b, err)
	}
}

// With --json an MCP server's form comes as one approval event of kind
// elicitation carrying the host's reading of the form (fields, choices,
// bounds), and a script answers it a line per field, in that order.
func TestRealCLIRunJSONElicitation(t *testing.T) {
	t.Parallel()
	url, listed := mcptest.ServeHTTP(t, mcptest.Deploy())
	ctx, api, cli := realCLI(t, &claudetest.MessagesOptions{Replies: []*claudetest.Reply{
		claudetest.TextReply("Ready."),
		claudetest.ToolUseReply("toolu_pick", "mcp__deploy__pick", map[string]any{}),
		claudetest.TextReply("Deployed."),
	}})
	mcpConfig := `{"mcpServers":{"deploy":{"type":"http","url":"` + url + `/"}}}`
	cmd := exec.CommandContext(ctx, tetherBinary(t), runArgs(cli, "--json", "-i", "--mcp-config", mcpConfig, "--allow", "mcp__deploy", "hello")...)
	cmd.Env, cmd.Dir = cli.Environ(), cli.Dir
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	events := make(chan map[string]any)
	go func() {
		defer close(events)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var ev map[string]any
			if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
				ev = map[string]any{"type": "not JSON", "text": sc.Text()}
			}
			select {
			case events <- ev:
			case <-ctx.Done():
				return
			}
		}
	}()
	// await reads events until one that ok accepts.
	await := func(what string, ok func(map[string]any) bool) map[string]any {
		t.Helper()
		for {
			select {
			case ev, open := <-events:
				if !open {
					t.Fatalf("the output ended before %s\n%s", what, errb.String())
				}
				if ev["type"] == "not JSON" {
					t.Errorf("not JSON: %q", ev["text"])
				}
				if ok(ev) {
					return ev
				}
			case <-ctx.Done():
				t.Fatalf("no %s: %v", what, ctx.Err())
			}
		}
	}
	result := func(ev map[string]any) bool {
		m, _ := ev["message"].(map[string]any)
		return ev["type"] == "message" && m["type"] == "result"
	}
	await("the first turn's result", result)
	select {
	case <-listed:
	case <-ctx.Done():
		t.Fatal("the CLI never listed the deploy server's tools")
	}
	io.WriteString(stdin, "deploy it\n")
	ap := await("the elicitation", func(ev map[string]any) bool { return ev["type"] == "approval" })
	type field struct {
		Name      string
		Required  bool
		Choices   []struct{ Value, Label string }
		MaxLength *int `json:"max_length"`
		Format    string
		Default   any
	}
	var got struct {
		Kind, Server, Text string
		Form               []field
	}
	if b, err := json.Marshal(ap); err != nil || json.Unmarshal(b, &got) != nil {
		t.Fatalf("approval %v", ap)
	}
	if got.Kind != "elicitation" || got.Server != "deploy" || got.Text != mcptest.DeployMessage || len(got.Form) != 3 ||
		got.Form[0].Name != "env" || !got.Form[0].Required || len(got.Form[0].Choices) != 2 || got.Form[0].Choices[1].Value != "production" || got.Form[0].Default != "staging" ||
		got.Form[1].Name != "note" || got.Form[1].MaxLength == nil || *got.Form[1].MaxLength != 200 || got.Form[2].Name != "when" || got.Form[2].Format != "date-time" {
		t.Errorf("the approval event: %+v", got)
	}
	// An empty line takes a field's default; a value that does not fit
	// is asked again, with a note saying what fits.
	io.WriteString(stdin, "\nsmoke test\nsoon\n")
	await("the note on when", func(ev map[string]any) bool {
		return ev["type"] == "note" && ev["text"] == "When must be a date and time, as 2026-12-06T16:30:00Z"
	})
	io.WriteString(stdin, "2026-12-07T09:00:00Z\n")
	await("the answer's note", func(ev map[string]any) bool {
		return ev["type"] == "note" && ev["text"] == "sent deploy: env=staging, note=smoke test, when=2026-12-07T09:00:00Z"
	})
	await("the second turn's result", result)
	stdin.Close()
	await("the cost", func(ev map[string]any) bool { return ev["type"] == "cost" })
	if err := cmd.Wait(); err != nil {
		t.Errorf("%v\n%s", err, errb.String())
	}
	reqs := api.MessagesRequests()
	if tr := reqs[len(reqs)-1].Params.ToolResult("toolu_pick"); tr == nil || len(tr.Content) == 0 || tr.Content[0].Text != "accept map[env:staging note:smoke test when:2026-12-07T09:00:00Z]" {
		t.Errorf("the tool's result = %+v", tr)
	}
	noProcessIn(t, cli.Dir)
}
