package clustertest_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
	"github.com/tetherhq/tether/cluster/clustertest"
	"github.com/tetherhq/tether/host"
	"github.com/tetherhq/tether/serve"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestBackend drives a test cluster through serve.Backend, as `tether
// serve --nats` does.
func TestBackend(t *testing.T) {
	c := clustertest.New(t, &clustertest.Options{Agents: 2, Capacity: 1,
		Session: &host.Options{CLI: &claude.Options{Transport: &claudetest.FakeCLI{Script: claudetest.Echo}}}})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var b serve.Backend = c.Backend(nil)
	info, err := b.Start(ctx, &serve.StartRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Do(ctx, info.ID, &host.Command{Type: "send", Text: "hi"}); err != nil {
		t.Fatal(err)
	}
	for ev, err := range b.Events(ctx, info.ID, 0) {
		if err != nil {
			t.Fatal(err)
		}
		var m struct{ Type, Result string }
		if ev.Kind == host.EventMessage && json.Unmarshal(ev.Data, &m) == nil && m.Type == "result" {
			if m.Result != "echo: hi" {
				t.Fatalf("result %q", m.Result)
			}
			break
		}
	}
	list, err := b.List(ctx)
	if err != nil || len(list) != 1 || list[0].Owner == "" {
		t.Fatalf("list: %+v, %v", list, err)
	}
	if _, err := b.Do(ctx, "nope", &host.Command{Type: "interrupt"}); !errors.Is(err, serve.ErrNoSession) {
		t.Fatalf("a command to no session: %v", err)
	}
	c.Restart()
	deadline := time.Now().Add(time.Minute)
	for {
		_, err := b.Do(ctx, info.ID, &host.Command{Type: "send", Text: "again"})
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
