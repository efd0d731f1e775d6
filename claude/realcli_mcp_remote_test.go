package claude_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
	"github.com/tetherhq/tether/internal/mcptest"
	"github.com/tetherhq/tether/internal/proc"
)

// External MCP servers against the real CLI: an httptest server on the
// official Go MCP SDK, over streamable HTTP and over SSE, behind a secret
// header. The model (the fake API) calls its tool; the CLI connects with
// the header, calls the tool and hands the result to the API. How the
// configuration reached the CLI (Options.MCPServersDelivery) is read off
// the CLI's own command line in /proc.

// remoteServer is an MCP server the CLI reaches over the network.
type remoteServer struct {
	URL string

	mu      sync.Mutex
	secrets []string // the X-Tether-Secret header of each request
}

const remoteSecret = "s3cret-header-value-8d1f"

type lookupIn struct {
	Key string `json:"key"`
}

// newRemoteServer serves an MCP server with a lookup tool and a slow one
// (which waits until its call is cancelled) over transport ("http" or
// "sse").
func newRemoteServer(t *testing.T, transport string) *remoteServer {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "remote", Version: "2.0.0"}, nil)
	// stop ends the slow tool's calls at cleanup: a CLI that gives up on
	// a call does not always cancel it, and the server's Close waits for
	// every request in flight.
	stop := make(chan struct{})
	mcp.AddTool(srv, &mcp.Tool{Name: "lookup", Description: "Look a key up"},
		func(ctx context.Context, req *mcp.CallToolRequest, in lookupIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "value-of-" + in.Key}}}, nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "slow", Description: "Waits until cancelled"},
		func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, any, error) {
			select {
			case <-ctx.Done():
				return nil, nil, ctx.Err()
			case <-stop:
				return nil, nil, errors.New("the test ended")
			}
		})
	srv.AddPrompt(&mcp.Prompt{Name: "greet", Description: "Greet someone", Arguments: []*mcp.PromptArgument{{Name: "name", Required: true}}},
		func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "Say hello to " + req.Params.Arguments["name"] + " in French"}}}}, nil
		})
	rs := &remoteServer{}
	rs.URL, _ = mcptest.Serve(t, srv, &mcptest.ServeOptions{SSE: transport == "sse", OnRequest: func(r *http.Request) {
		rs.mu.Lock()
		rs.secrets = append(rs.secrets, r.Header.Get("X-Tether-Secret"))
		rs.mu.Unlock()
	}, OnCleanup: func() { close(stop) }})
	return rs
}

// headers returns the secret header of every request so far.
func (rs *remoteServer) headers() []string {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return slices.Clone(rs.secrets)
}

func (rs *remoteServer) config(transport string) claude.MCPServerConfig {
	h := map[string]string{"X-Tether-Secret": remoteSecret}
	if transport == "sse" {
		return &claude.MCPSSEServer{URL: rs.URL + "/", Headers: h}
	}
	return &claude.MCPHTTPServer{URL: rs.URL + "/", Headers: h}
}

// realCLIVersion returns the version of the CLI the tests run.
func realCLIVersion(t *testing.T, path string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	v, err := proc.Version(ctx, path)
	if err != nil {
		t.Fatalf("CLI version: %v", err)
	}
	return v
}

// cmdlines returns the command lines of pid and its descendants, by pid.
func cmdlines(t *testing.T, pid int) map[int]string {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	children := map[int][]int{}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid …; comm may hold spaces and parentheses.
		rest := b[bytes.LastIndexByte(b, ')')+1:]
		f := strings.Fields(string(rest))
		if len(f) < 2 {
			continue
		}
		pp, _ := strconv.Atoi(f[1])
		children[pp] = append(children[pp], p)
	}
	out := map[int]string{}
	var walk func(int)
	walk = func(p int) {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p))
		if err == nil {
			out[p] = strings.ReplaceAll(string(b), "\x00", " ")
		}
		for _, c := range children[p] {
			walk(c)
		}
	}
	walk(pid)
	if len(out) == 0 {
		t.Fatalf("no process %d", pid)
	}
	return out
}

// waitMCPConnected polls MCPStatus until server is connected: the CLI
// connects to configured servers in the background.
func waitMCPConnected(t *testing.T, ctx context.Context, s *claude.Session, server string) claude.MCPServerStatus {
	t.Helper()
	var last []claude.MCPServerStatus
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); {
		st, err := s.MCPStatus(ctx)
		if err != nil {
			t.Fatalf("MCPStatus: %v", err)
		}
		last = st
		for _, x := range st {
			if x.Name == server && x.Status == claude.MCPConnectionStatusConnected {
				return x
			}
			if x.Name == server && x.Status == claude.MCPConnectionStatusFailed {
				t.Fatalf("%s failed: %+v", server, x)
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s never connected: %+v", server, last)
	return claude.MCPServerStatus{}
}

// realSession connects a session to the real CLI the way an application
// does (Tether starts the CLI and probes its version: no recording
// transport), with the fake API replying replies.
func realSession(t *testing.T, replies []*claudetest.Reply, set func(o *claude.Options)) (*claude.Session, *claudetest.RealRun, error) {
	t.Helper()
	run := claudetest.NewRealRun(t, &claudetest.MessagesOptions{Replies: replies})
	o := run.Options
	o.Transport = nil
	o.SkipVersionCheck = false
	set(o)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	s, err := claude.Connect(ctx, o)
	if err == nil {
		t.Cleanup(func() { s.Close() })
	}
	return s, run, err
}

func turnOf(t *testing.T, ctx context.Context, s *claude.Session, prompt string) []claude.Message {
	t.Helper()
	return turnWith(t, ctx, s, prompt, nil)
}

// turnWith is turnOf calling each (if not nil) with every message as it
// arrives, for a test that acts on what it sees before the turn ends.
func turnWith(t *testing.T, ctx context.Context, s *claude.Session, prompt string, each func(claude.Message)) []claude.Message {
	t.Helper()
	if err := s.Send(ctx, prompt); err != nil {
		t.Fatalf("Send: %v", err)
	}
	var msgs []claude.Message
	for m, err := range s.ReceiveTurn(ctx) {
		var re *claude.ResultError
		if err != nil && !errors.As(err, &re) {
			t.Fatalf("ReceiveTurn: %v", err)
		}
		if m != nil {
			msgs = append(msgs, m)
			if each != nil {
				each(m)
			}
		}
	}
	return msgs
}

// TestRealCLIMCPRemote: a tool of an external server over streamable
// HTTP and SSE, its configuration delivered each way Tether knows.
func TestRealCLIMCPRemote(t *testing.T) {
	path, err := claudetest.FindCLI("")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	version := realCLIVersion(t, path)
	initOK := proc.CompareVersions(version, "2.1.261") >= 0
	for _, tc := range []struct {
		transport string
		delivery  claude.Delivery
	}{
		{"http", claude.DeliveryAuto},
		{"sse", claude.DeliveryAuto},
		{"http", claude.DeliveryArgv},
		{"sse", claude.DeliveryFile},
		{"http", claude.DeliveryInitialize},
	} {
		name := tc.transport + "_" + cmpOr(string(tc.delivery), "auto")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			rs := newRemoteServer(t, tc.transport)
			replies := []*claudetest.Reply{
				claudetest.TextReply("connected"),
				claudetest.ToolUseReply("toolu_remote_1", "mcp__remote__lookup", map[string]string{"key": "k1"}),
				claudetest.TextReply("found it"),
			}
			// A stdio server with a secret in its environment rides
			// along: the CLI cannot start it, which it reports with
			// the configuration it received.
			s, run, err := realSession(t, replies, func(o *claude.Options) {
				o.MCPServersDelivery = tc.delivery
				o.AllowedTools = []string{"mcp__remote"}
				o.MCPServers = map[string]claude.MCPServerConfig{
					"remote":  rs.config(tc.transport),
					"envonly": &claude.MCPStdioServer{Command: "/nonexistent/tether-mcp", Env: map[string]string{"TETHER_MCP_TOKEN": "env-secret-77ac"}},
				}
			})
			if tc.delivery == claude.DeliveryInitialize && !initOK {
				// 2.1.197 has no --await-initialize: Connect says so
				// before it starts the CLI.
				var fe *claude.CLIFeatureError
				if !errors.Is(err, claude.ErrNeedsNewerCLI) || !errors.As(err, &fe) || fe.Option != "MCPServersDelivery" || fe.Path == "" {
					t.Fatalf("Connect on CLI %s with DeliveryInitialize = %v, want a *CLIFeatureError for MCPServersDelivery", version, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Connect: %v", err)
			}
			ctx := context.Background()

			// Where the configuration went.
			argv := cmdlines(t, s.PID())
			joined := fmt.Sprint(argv)
			inArgv := tc.delivery == claude.DeliveryArgv
			for _, secret := range []string{remoteSecret, "env-secret-77ac"} {
				if got := strings.Contains(joined, secret); got != inArgv {
					t.Errorf("secret %q in the command lines = %v, want %v: %v", secret, got, inArgv, argv)
				}
			}
			self := argv[s.PID()]
			wantInit := tc.delivery == claude.DeliveryInitialize || (tc.delivery == claude.DeliveryAuto && initOK)
			if got := strings.Contains(self, "--await-initialize"); got != wantInit {
				t.Errorf("--await-initialize in %q = %v, want %v", self, got, wantInit)
			}
			if tc.delivery == claude.DeliveryFile || (tc.delivery == claude.DeliveryAuto && !initOK) {
				// The file is named on the command line and gone once
				// Connect returned.
				i := strings.Index(self, "--mcp-config=")
				if i < 0 {
					t.Fatalf("no --mcp-config in %q", self)
				}
				file := strings.Fields(self[i+len("--mcp-config="):])[0]
				if _, err := os.Stat(file); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("the MCP file %s is still there: %v", file, err)
				}
			}

			msgs := turnOf(t, ctx, s, "hello")
			if r := result(t, msgs); r.IsError {
				t.Fatalf("first turn: %+v", r)
			}
			st := waitMCPConnected(t, ctx, s, "remote")
			if st.ServerInfo != nil && st.ServerInfo.Name != "remote" {
				t.Errorf("remote serverInfo = %+v", st.ServerInfo)
			}
			all, err := s.MCPStatus(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, x := range all {
				if x.Name == "envonly" {
					if x.Status != claude.MCPConnectionStatusFailed {
						t.Errorf("envonly = %+v, want failed", x)
					}
					if c, ok := x.Config.(*claude.MCPStdioServer); !ok || c.Command != "/nonexistent/tether-mcp" {
						t.Errorf("envonly config = %#v", x.Config)
					}
				}
			}

			msgs = turnOf(t, ctx, s, "look k1 up")
			tr := toolResultOf(msgs, "toolu_remote_1")
			if tr == nil || tr.IsError || !strings.Contains(tr.Text(), "value-of-k1") {
				t.Fatalf("tool result = %+v in %v", tr, types(msgs))
			}
			reqs := run.API.MessagesRequests()
			b := reqs[len(reqs)-1].Params.ToolResult("toolu_remote_1")
			if b == nil || b.IsError || claudetestText(b) != "value-of-k1" {
				t.Errorf("tool_result sent to the API = %+v", b)
			}
			hs := rs.headers()
			if len(hs) == 0 {
				t.Fatal("the server got no request")
			}
			for i, h := range hs {
				if h != remoteSecret {
					t.Errorf("request %d to the server had X-Tether-Secret %q", i, h)
				}
			}
		})
	}
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
