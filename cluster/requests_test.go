package cluster_test

import (
	"encoding/json"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/tetherhq/tether/cluster"
	"github.com/tetherhq/tether/host"
)

// A command whose reply is lost on its way (a connection replaced in a
// reconnect, as a loaded machine sees) is sent again under its name, and
// the agent answers the copy with the reply it gave: the caller gets its
// result, not its ctx's end, and the prompt runs once.
func TestCommandReplyLostIsAnsweredAgain(t *testing.T) {
	l := startLone(t, "first")
	ctx, c, f, id := l.ctx, l.c, l.f, l.id
	cluster.LoseReplies(l.a, 1)
	res, err := c.Command(ctx, id, &host.Command{Type: host.CommandSend, Text: "only once"})
	if err != nil {
		t.Fatalf("a send whose reply was lost: %v", err)
	}
	if res.UUID == "" {
		t.Fatalf("the result of a send whose reply was lost has no uuid: %+v", res)
	}
	f.wait(t, "its turn", result("echo: only once"))
	send(t, c, id, "after")
	f.wait(t, "the turn after", result("echo: after"))
	if n := count(f.list(), result("echo: only once")); n != 1 {
		t.Fatalf("the prompt ran %d times, want once", n)
	}
}

// Copies of a command under one name (Tether-Request) run it once, and
// every copy gets the same reply; a command without a name, or under
// another, runs again.
func TestCommandCopiesRunOnce(t *testing.T) {
	l := startLone(t, "first")
	ctx, c, f, id := l.ctx, l.c, l.f, l.id
	raw := newRawBus(t, l.ns.URL())
	ask := func(name, text string) string {
		t.Helper()
		m := nats.NewMsg("tether.v1.cmd." + id)
		m.Header.Set("Tether-Wire", "5")
		if name != "" {
			m.Header.Set("Tether-Request", name)
		}
		m.Data, _ = json.Marshal(map[string]string{"type": "send", "text": text})
		r, err := raw.nc.RequestMsgWithContext(ctx, m)
		if err != nil {
			t.Fatalf("%s %q: %v", name, text, err)
		}
		var rep struct {
			Result *host.CommandResult `json:"result"`
			Error  any                 `json:"error"`
		}
		if err := json.Unmarshal(r.Data, &rep); err != nil || rep.Result == nil {
			t.Fatalf("%s %q: reply %s", name, text, r.Data)
		}
		return rep.Result.UUID
	}
	first := ask("n1", "once")
	f.wait(t, "its turn", result("echo: once"))
	if again := ask("n1", "once"); again != first {
		t.Fatalf("a copy got the prompt uuid %q, the command %q", again, first)
	}
	if other := ask("n2", "twice"); other == first {
		t.Fatal("a command of another name got the first one's reply")
	}
	f.wait(t, "the other's turn", result("echo: twice"))
	ask("", "twice")
	f.wait(t, "the unnamed one's turn", func(ev host.Event) bool { return count(f.list(), result("echo: twice")) == 2 })
	send(t, c, id, "after")
	f.wait(t, "the turn after", result("echo: after"))
	if n := count(f.list(), result("echo: once")); n != 1 {
		t.Fatalf("the named prompt ran %d times, want once", n)
	}
}
