package cluster_test

import (
	"strings"
	"testing"
	"time"

	"github.com/tetherhq/tether/claude/claudetest"
	"github.com/tetherhq/tether/cluster"
	"github.com/tetherhq/tether/host"
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
	info, err := c.Start(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
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
