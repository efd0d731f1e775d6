package cluster_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
	"github.com/tetherhq/tether/cluster"
	"github.com/tetherhq/tether/host"
)

// An agent runs sessions; a client anywhere starts one on the cluster,
// sends a prompt and follows the session's events. Here everything runs in
// one process, with an embedded NATS server and the fake CLI.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	store, _ := os.MkdirTemp("", "nats")
	defer os.RemoveAll(store)
	ns, _ := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: store, NoSigs: true})
	ns.Start()
	defer ns.Shutdown()
	ns.ReadyForConnections(10 * time.Second)

	agent, err := cluster.NewAgent(ctx, &cluster.AgentOptions{
		URL: ns.ClientURL(), Capacity: 4,
		Session: &host.Options{CLI: &claude.Options{Transport: &claudetest.FakeCLI{Script: claudetest.Echo}}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer agent.Close()

	client, err := cluster.NewClient(ctx, &cluster.ClientOptions{URL: ns.ClientURL()})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()
	info, err := client.Start(ctx, nil) // waits for an agent with room
	if err != nil {
		fmt.Println(err)
		return
	}
	if _, err := client.Command(ctx, info.ID, &host.Command{Type: host.CommandSend, Text: "hello"}); err != nil {
		fmt.Println(err)
		return
	}
	for ev, err := range client.Events(ctx, info.ID, 0) {
		if err != nil {
			fmt.Println(err)
			return
		}
		var m struct{ Type, Result string }
		if ev.Kind == host.EventMessage && json.Unmarshal(ev.Data, &m) == nil && m.Type == "result" {
			fmt.Println(m.Result)
			break
		}
	}
	// Output: echo: hello
}
