package team_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tetherhq/tether/host"
	"github.com/tetherhq/tether/team"
)

// A team file becomes an Authorizer, which becomes the command layer's
// check: host.CommandPolicy.Authorize refuses a command the person in
// the ctx may not send (SessionOptions installs it, with the denied
// tools and the spend counting, into a session's host.Options).
func Example() {
	ctx := context.Background()
	cfg, err := team.ParseConfig([]byte(`
people:
  - {email: alice@example.com, name: Alice, role: member}
  - {email: bob@example.com, name: Bob, role: member}
policies:
  member: {modes: [default, plan], denied_tools: [WebFetch], daily_budget_usd: 5}
`))
	if err != nil {
		fmt.Println(err)
		return
	}

	// The store: JetStream KV (here an embedded server for the example).
	dir, _ := os.MkdirTemp("", "team-example")
	defer os.RemoveAll(dir)
	ns, _ := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: dir, NoLog: true, NoSigs: true})
	ns.Start()
	defer func() { ns.Shutdown(); ns.WaitForShutdown() }()
	ns.ReadyForConnections(10 * time.Second)
	nc, _ := nats.Connect(ns.ClientURL())
	defer nc.Close()
	js, _ := jetstream.New(nc)
	st, err := team.OpenStore(ctx, js, nil)
	if err != nil {
		fmt.Println(err)
		return
	}

	az := team.NewAuthorizer(cfg, st, nil)
	person := func(email string) context.Context {
		id, _ := cfg.Resolve(&team.Identity{Subject: email, Email: email})
		return team.NewContext(ctx, id)
	}
	alice, bob := person("alice@example.com"), person("bob@example.com")

	// Alice starts a session: the front end checks, the backend starts
	// it, Created makes it hers.
	if err := az.Start(alice, &team.StartCheck{Mode: "plan"}); err != nil {
		fmt.Println(err)
		return
	}
	opts := az.SessionOptions(alice, nil)
	fmt.Println("denied tools:", opts.CLI.DisallowedTools)
	_ = az.Created(alice, "s1", "/srv/work/alice")
	_ = az.Share(alice, "s1", []team.Grant{{Person: "bob@example.com", Level: team.ShareViewer}})

	// The command layer asks, as host.Session.Do would.
	policy := &host.CommandPolicy{Authorize: func(ctx context.Context, _ *host.Session, c *host.Command) error {
		return az.Command(ctx, "s1", c)
	}}
	send := &host.Command{Type: host.CommandSend, Text: "hello"}
	fmt.Println("alice sends:", policy.Authorize(alice, nil, send))
	err = policy.Authorize(bob, nil, send)
	fmt.Println("bob sends:", err, errors.Is(err, host.ErrForbidden))

	_ = st.AddSpend(ctx, "alice@example.com", 5.5)
	fmt.Println("alice sends:", policy.Authorize(alice, nil, send))
	// Output:
	// denied tools: [WebFetch]
	// alice sends: <nil>
	// bob sends: team: you may only watch session s1 true
	// alice sends: team: daily budget of $5.00 spent ($5.50 today); it resets at 00:00 UTC
}
