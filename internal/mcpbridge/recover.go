package mcpbridge

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"runtime/debug"
	"sync"
	"weak"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The server's handlers are user code running on the SDK's goroutines,
// where a panic would end the whole host process: no recover of the
// session's reaches them. Recover adds a receiving middleware that does.

// recovering holds the servers Recover has already wrapped, so a server
// that backs many sessions gets the middleware once.
var recovering sync.Map // weak.Pointer[mcp.Server] → struct{}

// Recover makes a panic in any of srv's handlers (tools, resources,
// prompts, completions) an error instead of a crash: a panicking tool
// call returns a tool result with isError set carrying the panic message,
// which the model sees, and any other request a JSON-RPC error. The panic
// and its stack go to log at error level. Calling it again for the same
// server does nothing.
//
// Middleware added to srv after Recover runs outside it and is not
// covered.
func Recover(srv *mcp.Server, log *slog.Logger) {
	key := weak.Make(srv)
	if _, loaded := recovering.LoadOrStore(key, struct{}{}); loaded {
		return
	}
	runtime.AddCleanup(srv, func(k weak.Pointer[mcp.Server]) { recovering.Delete(k) }, key)
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (res mcp.Result, err error) {
			defer func() {
				p := recover()
				if p == nil {
					return
				}
				log.Error("mcp: handler panicked", "method", method, "panic", p, "stack", string(debug.Stack()))
				if method == "tools/call" {
					res, err = &mcp.CallToolResult{
						IsError: true,
						Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("tool panicked: %v", p)}},
					}, nil
					return
				}
				res, err = nil, fmt.Errorf("%s handler panicked: %v", method, p)
			}()
			return next(ctx, method, req)
		}
	})
}
