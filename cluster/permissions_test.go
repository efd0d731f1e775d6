package cluster_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tetherhq/tether/cluster"
)

// TestNATSPermissions runs the permissions docs/cluster.md gives
// (testdata/permissions.conf): agents and a client (serve's user) work
// under them (a turn, a snapshot, a disconnected marker, a failover), and
// the client's user cannot publish events.
func TestNATSPermissions(t *testing.T) {
	ctx := testCtx(t)
	t.Setenv("TETHER_AGENT_PASSWORD", "agent-secret")
	t.Setenv("TETHER_SERVE_PASSWORD", "serve-secret")
	opts, err := server.ProcessConfigFile("testdata/permissions.conf")
	if err != nil {
		t.Fatal(err)
	}
	ns := newNATS(t, func(o *server.Options) {
		o.Accounts, o.Users = opts.Accounts, opts.Users
	})
	agent := nats.UserInfo("agent", "agent-secret")
	serve := nats.UserInfo("serve", "serve-secret")
	a1 := newAgent(t, ns.URL(), "a1", 2, agent)
	c := newClient(t, ns.URL(), serve)
	info, err := c.Start(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	f := follow(t, c, info.ID, 0)
	send(t, c, info.ID, "one")
	f.wait(t, "a turn", result("echo: one"))
	if _, err := c.Snapshot(ctx, info.ID); err != nil {
		t.Fatal(err)
	}
	reapUntilMarked(t, c, f, info.ID)
	send(t, c, info.ID, "two")
	f.wait(t, "the turn after the marker", result("echo: two"))
	checkSeqs(t, f.list(), 1)
	// A failover: the mirror, the start queue and the registry work
	// under the agents' permissions.
	newAgent(t, ns.URL(), "a2", 2, agent)
	cluster.Crash(a1)
	waitFor(t, "a1 gone", func() bool {
		as, err := c.Agents(ctx)
		return err == nil && len(as) == 1 && as[0].ID == "a2"
	})
	if _, err := c.Resume(ctx, info.ID); err != nil {
		t.Fatal(err)
	}
	send(t, c, info.ID, "recall")
	f.wait(t, "the conversation on a2", result("remember: one|two"))
	checkSeqs(t, f.list(), 1)

	// serve's user may not publish events.
	denied := make(chan error, 8)
	nc, err := nats.Connect(ns.URL(), serve, nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
		denied <- err
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	pctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if _, err := js.Publish(pctx, "tether.v1.ev."+info.ID, []byte(`{}`)); err == nil {
		t.Fatal("serve's user published an event")
	}
	select {
	case err := <-denied:
		if !errors.Is(err, nats.ErrPermissionViolation) {
			t.Fatalf("publishing an event as serve: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("no permission violation reported")
	}
}

// reapUntilMarked marks a session disconnected as a client does when its
// agent's entry lapsed, until the marker is in its events: a reap loses
// (and appends nothing) when the live agent rewrote the registry entry
// between the reap's read and its update.
func reapUntilMarked(t *testing.T, c *cluster.Client, f *follower, id string) {
	t.Helper()
	var last time.Time
	waitFor(t, "the disconnected marker", func() bool {
		for _, ev := range f.list() {
			if state("disconnected")(ev) {
				return true
			}
		}
		if time.Since(last) > 250*time.Millisecond {
			last = time.Now()
			if err := cluster.Reap(testCtx(t), c, id); err != nil {
				t.Fatal(err)
			}
		}
		return false
	})
}
