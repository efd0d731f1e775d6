package team_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tetherhq/tether/team"
)

// An audit log on a JetStream server (here an embedded one): record what
// people do, then read back one person's events.
func ExampleAudit() {
	dir, _ := os.MkdirTemp("", "audit-example")
	defer os.RemoveAll(dir)
	ns, _ := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: dir, NoLog: true, NoSigs: true})
	ns.Start()
	defer func() { ns.Shutdown(); ns.WaitForShutdown() }()
	ns.ReadyForConnections(10 * time.Second)
	nc, err := nats.Connect(ns.ClientURL())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx := context.Background()

	audit, err := team.OpenAudit(ctx, js, &team.AuditOptions{Retention: 30 * 24 * time.Hour})
	if err != nil {
		fmt.Println(err)
		return
	}
	// Usually the Authorizer and the sign-in records these.
	audit.Record(ctx, &team.AuditEvent{Actor: "alice@example.com", Action: team.ActionSignIn, Outcome: team.OutcomeOK})
	audit.Record(ctx, &team.AuditEvent{Actor: "bob@example.com", Action: team.ActionSignIn, Outcome: team.OutcomeOK})
	audit.Record(ctx, &team.AuditEvent{Actor: "alice@example.com", Action: team.ActionApproval, Session: "s1",
		Outcome: team.OutcomeOK, Tool: "Bash", Rule: "allow"})

	for ev, err := range audit.Query(ctx, &team.AuditQuery{Actor: "alice@example.com", Since: time.Now().Add(-time.Hour)}) {
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("%d %s %s session=%q tool=%q rule=%q\n", ev.Seq, ev.Actor, ev.Action, ev.Session, ev.Tool, ev.Rule)
	}
	// Output:
	// 1 alice@example.com sign_in session="" tool="" rule=""
	// 3 alice@example.com approval session="s1" tool="Bash" rule="allow"
}
