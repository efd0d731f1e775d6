package mcpbridge_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/tetherhq/tether/internal/mcpbridge"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

const initialize = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"claude-code","version":"2.1.197"}}}`
const initialized = `{"jsonrpc":"2.0","method":"notifications/initialized"}`

func call(id int, tool string, args string) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, id, tool, args))
}

func handle(t *testing.T, ctx context.Context, b *mcpbridge.Bridge, msg string) string {
	t.Helper()
	out, err := b.Handle(ctx, json.RawMessage(msg))
	if err != nil {
		t.Fatalf("Handle(%.60s): %v", msg, err)
	}
	return string(out)
}

func connectClient(t *testing.T, ctx context.Context, b *mcpbridge.Bridge) {
	t.Helper()
	if out := handle(t, ctx, b, initialize); !strings.Contains(out, `"id":0`) || !strings.Contains(out, `"serverInfo"`) {
		t.Fatalf("initialize = %s", out)
	}
	if out := handle(t, ctx, b, initialized); out != string(mcpbridge.Ack) {
		t.Fatalf("notifications/initialized = %s, want the ack", out)
	}
}

// TestTwoClientsSameIDs: the 2.1.197 CLI connects twice to an in-process
// server after mcp_set_servers, both clients counting ids from 0. Equal
// ids in flight at once must each get their own answer.
func TestTwoClientsSameIDs(t *testing.T) {
	ctx := testCtx(t)
	srv := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
	var arrived sync.WaitGroup
	arrived.Add(2)
	mcp.AddTool(srv, &mcp.Tool{Name: "echo"}, func(ctx context.Context, req *mcp.CallToolRequest, in struct {
		S string `json:"s"`
	}) (*mcp.CallToolResult, any, error) {
		arrived.Done()
		arrived.Wait() // both calls are in flight together
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.S}}}, nil, nil
	})
	b := mcpbridge.New(srv, func(context.Context, json.RawMessage) error { return nil }, nil)
	defer closeBridge(t, b)
	connectClient(t, ctx, b)
	connectClient(t, ctx, b)
	var wg sync.WaitGroup
	outs := make([]string, 2)
	for i, s := range []string{"one", "two"} {
		wg.Go(func() { outs[i] = handle(t, ctx, b, string(call(1, "echo", fmt.Sprintf(`{"s":%q}`, s)))) })
	}
	wg.Wait()
	for i, s := range []string{"one", "two"} {
		if !strings.Contains(outs[i], `"id":1`) || !strings.Contains(outs[i], `"text":"`+s+`"`) {
			t.Errorf("call %d = %s", i, outs[i])
		}
	}
}

// TestCancelledNotification: the CLI's own notifications/cancelled names
// its request id; the handler of that request is cancelled.
func TestCancelledNotification(t *testing.T) {
	ctx := testCtx(t)
	srv := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
	started, ended := make(chan struct{}), make(chan error, 1)
	mcp.AddTool(srv, &mcp.Tool{Name: "block"}, func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, any, error) {
		close(started)
		<-ctx.Done()
		ended <- ctx.Err()
		return nil, nil, ctx.Err()
	})
	b := mcpbridge.New(srv, func(context.Context, json.RawMessage) error { return nil }, nil)
	defer closeBridge(t, b)
	connectClient(t, ctx, b)
	hctx, stop := context.WithCancel(ctx)
	defer stop()
	go b.Handle(hctx, call(5, "block", `{}`))
	<-started
	handle(t, ctx, b, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":5,"reason":"AbortError"}}`)
	select {
	case err := <-ended:
		if err == nil {
			t.Error("handler ended without its context ending")
		}
	case <-ctx.Done():
		t.Fatal("the handler was not cancelled")
	}
}

// TestServerNeverBlocksOnTheCLI: what the server sends on its own goes out
// in order through the SendFunc, and a SendFunc that has not returned yet
// (the CLI busy waiting for this server) does not hold up responses.
func TestServerNeverBlocksOnTheCLI(t *testing.T) {
	ctx := testCtx(t)
	srv := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "progress"}, func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, any, error) {
		for i := range 3 {
			err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: req.Params.GetProgressToken(), Progress: float64(i)})
			if err != nil {
				return nil, nil, err
			}
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil, nil
	})
	release := make(chan struct{})
	var mu sync.Mutex
	var sent []string
	send := func(ctx context.Context, msg json.RawMessage) error {
		select {
		case <-release:
		case <-ctx.Done():
			return ctx.Err()
		}
		mu.Lock()
		sent = append(sent, string(msg))
		mu.Unlock()
		return nil
	}
	b := mcpbridge.New(srv, send, nil)
	defer closeBridge(t, b)
	connectClient(t, ctx, b)
	out := handle(t, ctx, b, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"progress","arguments":{},"_meta":{"progressToken":"tok"}}}`)
	if !strings.Contains(out, `"done"`) {
		t.Fatalf("call = %s", out)
	}
	close(release)
	for {
		mu.Lock()
		n := len(sent)
		mu.Unlock()
		if n == 3 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("sent %d notifications, want 3", n)
		case <-time.After(5 * time.Millisecond):
		}
	}
	for i, m := range sent {
		if !strings.Contains(m, `"notifications/progress"`) || !strings.Contains(m, fmt.Sprintf(`"progress":%d`, i)) {
			t.Errorf("sent[%d] = %s", i, m)
		}
	}
}

// TestCloseCancelsInFlight: Close cancels a tool call in flight, the
// caller gets an error, and every goroutine ends (TestMain checks).
func TestCloseCancelsInFlight(t *testing.T) {
	ctx := testCtx(t)
	srv := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
	started := make(chan struct{})
	mcp.AddTool(srv, &mcp.Tool{Name: "block"}, func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, any, error) {
		close(started)
		<-ctx.Done()
		return nil, nil, ctx.Err()
	})
	b := mcpbridge.New(srv, func(context.Context, json.RawMessage) error { return nil }, nil)
	connectClient(t, ctx, b)
	type outcome struct {
		out json.RawMessage
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		out, err := b.Handle(ctx, call(3, "block", `{}`))
		done <- outcome{out, err}
	}()
	<-started
	b.Close()
	if !b.Wait(10 * time.Second) {
		t.Fatal("Close timed out")
	}
	// Close cancels the tool's ctx and ends the connection at once; which
	// the caller sees first is a race: ErrClosed, or the tool's answer to
	// its cancelled ctx (an isError result). Either way the call failed.
	if o := <-done; o.err == nil && !strings.Contains(string(o.out), `"isError":true`) {
		t.Errorf("the call in flight got %s and no error", o.out)
	}
	if _, err := b.Handle(ctx, call(4, "block", `{}`)); err == nil {
		t.Error("Handle after Close succeeded")
	}
}

// TestReconnectRetiresOldSession: after a second initialize, the first
// session still answers what it was asked.
func TestReconnectRetiresOldSession(t *testing.T) {
	ctx := testCtx(t)
	srv := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
	started, release := make(chan struct{}), make(chan struct{})
	mcp.AddTool(srv, &mcp.Tool{Name: "slow"}, func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, any, error) {
		close(started)
		<-release
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "late"}}}, nil, nil
	})
	b := mcpbridge.New(srv, func(context.Context, json.RawMessage) error { return nil }, nil)
	defer closeBridge(t, b)
	connectClient(t, ctx, b)
	outc := make(chan string, 1)
	go func() { outc <- handle(t, ctx, b, string(call(1, "slow", `{}`))) }()
	<-started
	connectClient(t, ctx, b)
	close(release)
	if out := <-outc; !strings.Contains(out, `"late"`) || !strings.Contains(out, `"id":1`) {
		t.Errorf("call on the old session = %s", out)
	}
}

func closeBridge(t *testing.T, b *mcpbridge.Bridge) {
	b.Close()
	if !b.Wait(10 * time.Second) {
		t.Error("the bridge did not end")
	}
}

// A panicking handler runs on the SDK's goroutine, out of reach of the
// session's recover: the bridge's middleware turns it into an isError
// tool result (or a JSON-RPC error for other methods), and the server
// goes on serving.
func TestHandlerPanics(t *testing.T) {
	ctx := testCtx(t)
	srv := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "boom"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		panic("kaboom")
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "ok"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "fine"}}}, nil, nil
	})
	srv.AddPrompt(&mcp.Prompt{Name: "p"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		panic("prompt kaboom")
	})
	b := mcpbridge.New(srv, func(context.Context, json.RawMessage) error { return nil }, nil)
	defer closeBridge(t, b)
	b2 := mcpbridge.New(srv, func(context.Context, json.RawMessage) error { return nil }, nil) // wraps once
	closeBridge(t, b2)
	connectClient(t, ctx, b)

	out := handle(t, ctx, b, string(call(1, "boom", `{}`)))
	if !strings.Contains(out, `"isError":true`) || !strings.Contains(out, "tool panicked: kaboom") {
		t.Errorf("panicking tool = %s; want an isError result with the panic", out)
	}
	out = handle(t, ctx, b, `{"jsonrpc":"2.0","id":2,"method":"prompts/get","params":{"name":"p"}}`)
	if !strings.Contains(out, `"error"`) || !strings.Contains(out, "prompt kaboom") {
		t.Errorf("panicking prompt = %s; want a JSON-RPC error with the panic", out)
	}
	if out := handle(t, ctx, b, string(call(3, "ok", `{}`))); !strings.Contains(out, `"text":"fine"`) {
		t.Errorf("the server after the panics: %s", out)
	}
}
