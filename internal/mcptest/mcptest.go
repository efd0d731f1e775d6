// Package mcptest is the test kit of MCP servers that Tether's tests give
// the real CLI: a server whose tool asks the person for input
// (elicitation), served over streamable HTTP in the test's process.
package mcptest

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// DeployMessage is what the Deploy server's tool pick asks.
const DeployMessage = "Which environment, and why?"

// SignInMessage and SignInURL are what the Deploy server's tool signin
// asks: a page to visit (an elicitation in URL mode).
const (
	SignInMessage = "Sign in to deploy"
	SignInURL     = "https://deploy.invalid/signin"
)

// Deploy is an MCP server named deploy whose tool pick asks DeployMessage
// with a form: env, titled Environment, a required choice of staging or
// production, staging by default; note, free text described "Why now" of at most 200
// characters; and when, titled When, an optional RFC 3339 date-time. The
// tool's result is the action and the values it got ("accept
// map[env:staging note:x]", "decline map[]").
//
// Its tool signin asks SignInMessage with the page SignInURL to visit,
// tells the CLI the visit is complete once answered, and its result is
// the action ("signin accept"). The CLI lets servers ask for a page from
// 2.1.336 on; before, the request fails and the result is that error.
func Deploy() *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "deploy", Version: "1.0.0"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "pick", Description: "Ask which environment"},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{
				Message: DeployMessage,
				RequestedSchema: map[string]any{"type": "object", "required": []string{"env"}, "properties": map[string]any{
					"env":  map[string]any{"type": "string", "title": "Environment", "enum": []string{"staging", "production"}, "default": "staging"},
					"note": map[string]any{"type": "string", "description": "Why now", "maxLength": 200},
					"when": map[string]any{"type": "string", "title": "When", "format": "date-time"},
				}},
			})
			if err != nil {
				return nil, nil, err
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("%s %v", res.Action, res.Content)}}}, nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "signin", Description: "Sign in through a page"},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Mode: "url", Message: SignInMessage, URL: SignInURL, ElicitationID: "signin-1"})
			if err != nil {
				return nil, nil, err
			}
			if err := req.Session.NotifyElicitationComplete(ctx, &mcp.ElicitationCompleteParams{ElicitationID: "signin-1"}); err != nil {
				return nil, nil, err
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "signin " + res.Action}}}, nil, nil
		})
	return srv
}

// ServeHTTP serves srv over streamable HTTP until t ends: Serve with no
// options.
func ServeHTTP(t testing.TB, srv *mcp.Server) (url string, listed <-chan struct{}) {
	return Serve(t, srv, nil)
}

// ServeOptions are Serve's; nil means streamable HTTP and nothing more.
type ServeOptions struct {
	// SSE serves MCP's older HTTP+SSE transport instead.
	SSE bool
	// OnRequest, when set, sees each HTTP request before the server does
	// (its headers, say).
	OnRequest func(*http.Request)
	// OnCleanup, when set, runs first when t ends: to end tool calls
	// still in flight, which the server's Close waits for.
	OnCleanup func()
}

// Serve serves srv until t ends. It returns the URL and a channel closed
// once a client has listed the tools: the CLI connects to remote servers
// in the background, and a turn that calls one of their tools must wait
// for that. At cleanup it cuts what is left: the CLI's SSE stream stays
// open until the CLI goes, and a streamable HTTP session until the client
// deletes it, which the CLI does not do on exit.
func Serve(t testing.TB, srv *mcp.Server, o *ServeOptions) (url string, listed <-chan struct{}) {
	if o == nil {
		o = &ServeOptions{}
	}
	ch := make(chan struct{})
	var once sync.Once
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			if method == "tools/list" {
				once.Do(func() { close(ch) })
			}
			return res, err
		}
	})
	var h http.Handler = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	if o.SSE {
		h = mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if o.OnRequest != nil {
			o.OnRequest(r)
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		if o.OnCleanup != nil {
			o.OnCleanup()
		}
		hs.CloseClientConnections()
		hs.Close()
		for ss := range srv.Sessions() {
			ss.Close()
		}
	})
	return hs.URL, ch
}
