package servetest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
	"github.com/tetherhq/tether/host"
	"github.com/tetherhq/tether/serve"
	"github.com/tetherhq/tether/serve/servetest"
)

// A browser's view of a turn, against a server on the fake CLI: start a
// session, follow it, send a prompt and wait for the session to be idle.
func Example() {
	ctx := context.Background()
	m := host.NewManager(nil)
	defer m.Close()
	b := serve.NewLocalBackend(m, &serve.LocalOptions{
		DefaultCwd: os.TempDir(),
		Session:    &host.Options{CLI: &claude.Options{Transport: &claudetest.FakeCLI{Script: claudetest.Echo}}},
	})
	srv := serve.NewServer(b, nil)
	defer srv.Close()
	hs := httptest.NewServer(srv)
	defer hs.Close()

	c, err := servetest.Dial(ctx, hs.URL, &servetest.DialOptions{Token: srv.Token()})
	if err != nil {
		panic(err)
	}
	defer c.Close()
	info, err := c.Start(ctx, nil)
	if err != nil {
		panic(err)
	}
	if _, err := c.OK(ctx, map[string]any{"type": "subscribe", "session": info.ID}); err != nil {
		panic(err)
	}
	if _, err := c.Do(ctx, info.ID, &host.Command{Type: host.CommandSend, Text: "hello"}); err != nil {
		panic(err)
	}
	n := 0
	f, err := c.WaitFrame(ctx, &n, func(f *servetest.Frame) bool {
		var m struct{ Type, Result string }
		return servetest.IsEvent(info.ID, host.EventMessage)(f) && json.Unmarshal(f.Event.Data, &m) == nil && m.Type == "result"
	})
	if err != nil {
		panic(err)
	}
	var result struct{ Result string }
	_ = json.Unmarshal(f.Event.Data, &result)
	fmt.Println(result.Result)
	if _, err := c.WaitFrame(ctx, &n, servetest.IsState(info.ID, "idle")); err != nil {
		panic(err)
	}
	fmt.Println("idle")
	// Output:
	// echo: hello
	// idle
}
