package cluster_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tetherhq/tether/claude/claudetest"
	"github.com/tetherhq/tether/cluster"
	"github.com/tetherhq/tether/host"
	"github.com/tetherhq/tether/internal/proctree"
	"github.com/tetherhq/tether/team"
)

// TestRealCLIFailover runs the real CLI against the fake Messages API on
// two agents with separate HOMEs (two machines, as far as the CLI can
// tell): a turn on the first, the first dies, the session resumes on the
// second, and the model's next request carries the first turn: the
// conversation came over through the transcript mirror.
func TestRealCLIFailover(t *testing.T) {
	api := claudetest.NewMessagesServer(&claudetest.MessagesOptions{Replies: []*claudetest.Reply{
		claudetest.TextReply("the answer is 42"),
		claudetest.TextReply("you asked about 42"),
	}})
	t.Cleanup(api.Close)
	cliA := claudetest.NewRealCLI(t, api)
	cliB := claudetest.NewRealCLI(t, api)
	ctx := testCtx(t)
	ns := newNATS(t, nil)
	agent := func(id string, cli *claudetest.RealCLI) *cluster.Agent {
		a, err := cluster.NewAgent(ctx, &cluster.AgentOptions{URL: ns.URL(), ID: id, Capacity: 1, Limits: limits,
			MirrorInterval: 20 * time.Millisecond, Logger: testLogger(),
			Session: &host.Options{CLI: cli.Options()}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { a.Close() })
		return a
	}
	a1 := agent("a1", cliA)
	c := newClient(t, ns.URL())
	info := mustStart(ctx, t, c, nil)
	f := follow(t, c, info.ID, 0)
	send(t, c, info.ID, "what is six times seven")
	f.wait(t, "the first turn", result("the answer is 42"))
	waitFor(t, "the transcript mirrored", mirrored(t, ns.URL(), info.ID, "the answer is 42"))

	cluster.Crash(a1)
	f.wait(t, "disconnected", state("disconnected"))
	agent("a2", cliB)
	resumed, err := c.Resume(ctx, info.ID)
	if err != nil {
		t.Fatal(err)
	}
	if resumed.Agent != "a2" {
		t.Fatalf("resumed on %s", resumed.Agent)
	}
	send(t, c, info.ID, "what did I ask")
	f.wait(t, "the turn after the failover", result("you asked about 42"))
	checkSeqs(t, f.list(), 1)
	reqs := api.MessagesRequests()
	last := string(reqs[len(reqs)-1].Body)
	for _, want := range []string{"what is six times seven", "the answer is 42", "what did I ask"} {
		if !strings.Contains(last, want) {
			t.Errorf("the model's request after the failover lacks %q", want)
		}
	}
}

// TestRealCLITeamIsolation runs an agent of a team with isolation on the
// real CLI: alice's session starts confined to her workspace and runs a
// turn (its transcript mirrored from her isolated HOME), then carol's
// session runs Bash to read a file in alice's workspace and gets "No such
// file or directory": the secret never reaches carol's model.
func TestRealCLITeamIsolation(t *testing.T) {
	iso, err := team.NewIsolation(&team.IsolationOptions{StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if err := iso.Check(testCtx(t)); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("isolation required under CI=true: %v", err)
		}
		t.Skipf("isolation unavailable here: %v", err)
	}
	ns := newNATS(t, nil)
	tt := newTestTeam(t, ns.URL())
	wsA, wsC := filepath.Join(tt.root, "alice"), filepath.Join(tt.root, "carol")
	for _, d := range []string{wsA, wsC} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	secret := filepath.Join(wsA, "secret.txt")
	if err := os.WriteFile(secret, []byte("the-secret-of-alice\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	api := claudetest.NewMessagesServer(&claudetest.MessagesOptions{Replies: []*claudetest.Reply{
		claudetest.TextReply("hello alice"),
		claudetest.ToolUseReply("toolu_peek", "Bash", map[string]any{"command": "cat " + secret, "description": "peek"}),
		claudetest.TextReply("done"),
	}})
	t.Cleanup(api.Close)
	cli := claudetest.NewRealCLI(t, api)
	o := cli.Options()
	o.SkipVersionCheck = true
	o.AllowedTools = []string{"Bash"}
	a, err := cluster.NewAgent(testCtx(t), &cluster.AgentOptions{URL: ns.URL(), ID: "iso", Capacity: 2, Limits: limits,
		MirrorInterval: 20 * time.Millisecond, Logger: testLogger(), Team: tt.Authorizer, Isolation: iso,
		Session: &host.Options{CLI: o}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	c := newClient(t, ns.URL())
	run := func(who *team.Identity, ws, prompt, want string) string {
		t.Helper()
		ctx := team.NewContext(testCtx(t), who)
		info, err := c.Start(ctx, &cluster.StartOptions{Cwd: ws})
		if err != nil {
			t.Fatalf("%s's start: %v", who.Name, err)
		}
		if err := tt.Created(ctx, info.ID, info.Cwd); err != nil {
			t.Fatal(err)
		}
		f := follow(t, c, info.ID, 0)
		if _, err := c.Command(ctx, info.ID, &host.Command{Type: host.CommandSend, Text: prompt}); err != nil {
			t.Fatal(err)
		}
		f.wait(t, who.Name+"'s turn", result(want))
		return info.ID
	}
	idA := run(alice, wsA, "hi", "hello alice")
	waitFor(t, "alice's transcript mirrored from her isolated HOME", mirrored(t, ns.URL(), idA, "hello alice"))
	run(carol, wsC, "look at alice's file", "done")
	reqs := api.MessagesRequests()
	last := string(reqs[len(reqs)-1].Body)
	if !strings.Contains(last, "toolu_peek") {
		t.Fatalf("the model's last request has no result of carol's Bash: %.500s", last)
	}
	if strings.Contains(last, "the-secret-of-alice") || !strings.Contains(last, "No such file or directory") {
		t.Fatalf("carol's Bash read alice's file, or failed otherwise: %.2000s", last)
	}
}

// TestRealCLISessionSleepsAndWakes runs sleep and wake through the
// cluster on the real CLI against the fake Messages API: a turn on the
// first agent, the session idle for SleepAfter goes asleep (no CLI
// process left, the registry listing it asleep with no agent), its agent
// goes, and a prompt wakes it on a second agent with a HOME of its own:
// "waking", the model's request carries the first turn (the conversation
// came over through the transcript mirror), the numbers go on.
func TestRealCLISessionSleepsAndWakes(t *testing.T) {
	api := claudetest.NewMessagesServer(&claudetest.MessagesOptions{Replies: []*claudetest.Reply{
		claudetest.TextReply("noted: apricot"),
		claudetest.TextReply("the word was apricot"),
	}})
	t.Cleanup(api.Close)
	cliA := claudetest.NewRealCLI(t, api)
	cliB := claudetest.NewRealCLI(t, api)
	ctx := testCtx(t)
	ns := newNATS(t, nil)
	agent := func(id string, cli *claudetest.RealCLI, sleepAfter time.Duration) *cluster.Agent {
		a, err := cluster.NewAgent(ctx, &cluster.AgentOptions{URL: ns.URL(), ID: id, Capacity: 1, Limits: limits,
			MirrorInterval: 20 * time.Millisecond, Logger: testLogger(), SleepAfter: sleepAfter,
			Session: &host.Options{CLI: cli.Options()}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { a.Close() })
		return a
	}
	a1 := agent("a1", cliA, time.Second)
	c := newClient(t, ns.URL())
	info := mustStart(ctx, t, c, nil)
	f := follow(t, c, info.ID, 0)
	send(t, c, info.ID, "remember the word apricot")
	f.wait(t, "the first turn", result("noted: apricot"))
	if n := len(children(t)); n == 0 {
		t.Fatal("no CLI process under the test while the session is awake")
	}

	f.wait(t, "asleep", state("asleep"))
	s := waitAsleep(t, c, info.ID)
	if s.CLISession == "" || s.LastPrompt == "" {
		t.Errorf("the asleep entry: %+v", s)
	}
	waitFor(t, "no CLI process left", func() bool { return len(children(t)) == 0 })
	a1.Close()
	agent("a2", cliB, 0)

	send(t, c, info.ID, "which word")
	f.wait(t, "the turn after the wake", result("the word was apricot"))
	f.wait(t, "waking", state("waking"))
	checkSeqs(t, f.list(), 1)
	storedOnce(t, ns.URL(), info.ID)
	if w, err := c.Session(ctx, info.ID); err != nil || w.Agent != "a2" || w.CLISession != s.CLISession {
		t.Errorf("woken: %+v, %v (asleep as CLI session %s)", w, err, s.CLISession)
	}
	reqs := api.MessagesRequests()
	last := string(reqs[len(reqs)-1].Body)
	for _, want := range []string{"remember the word apricot", "noted: apricot", "which word"} {
		if !strings.Contains(last, want) {
			t.Errorf("the model's request after the wake lacks %q", want)
		}
	}
}

// children lists the live processes below the test's (the CLIs and
// their supervisors).
func children(t *testing.T) []proctree.Proc {
	t.Helper()
	tree, err := proctree.Tree(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	return tree[1:]
}
