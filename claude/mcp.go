package claude

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"sort"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tetherhq/tether/internal/mcpbridge"
)

// MCPServerConfig is an MCP server the CLI connects to, named by its key in
// Options.MCPServers or SetMCPServers. The model sees its tools as
// mcp__<name>__<tool>, and they go through permission checks like any
// other tool (allow them with Options.AllowedTools, e.g. "mcp__calc", or
// with CanUseTool).
//
// It is one of:
//   - *MCPStdioServer: a program the CLI starts and talks to over stdio;
//   - *MCPSSEServer, *MCPHTTPServer: a server the CLI reaches over the network;
//   - *MCPSDKServer (made by SDKServer): an *mcp.Server running inside this
//     process, which the CLI reaches through the session's control channel.
type MCPServerConfig interface {
	// wire returns the server's entry in the CLI's MCP configuration.
	wire(name string) any
}

// MCPStdioServer is an MCP server the CLI starts as a subprocess.
type MCPStdioServer struct {
	Command string
	Args    []string
	Env     map[string]string // added to the server's environment

	// Timeout bounds each tool call of the server, wall clock: the CLI
	// fails a call that runs longer with an error result the model sees,
	// and progress notifications do not extend it. Zero leaves the CLI's
	// default (the MCP_TOOL_TIMEOUT variable, else many hours). The CLI
	// counts milliseconds and ignores values below one second, which
	// Options validation therefore refuses.
	Timeout time.Duration
	// AlwaysLoad puts every tool of the server in the model's tool list
	// from the first request, never deferred behind the CLI's ToolSearch
	// tool (2.1.330 defers MCP tools by default; 2.1.197 lists them
	// anyway). The CLI then waits for the server to connect at start, at
	// most its connect timeout. One tool can opt in on its own with
	// MCPToolMeta.AlwaysLoad.
	AlwaysLoad bool
}

// MCPSSEServer is an MCP server the CLI reaches over Server-Sent Events.
type MCPSSEServer struct {
	URL     string
	Headers map[string]string
	// Timeout and AlwaysLoad are as for MCPStdioServer.
	Timeout    time.Duration
	AlwaysLoad bool
	// Tools is the host's permission policy per tool of the server. The
	// CLI applies it from SetMCPServers only: in Options.MCPServers it
	// reaches the CLI and is ignored there (see MCPToolPolicy).
	Tools []MCPToolPolicy
}

// MCPHTTPServer is an MCP server the CLI reaches over streamable HTTP.
type MCPHTTPServer struct {
	URL     string
	Headers map[string]string
	// Timeout and AlwaysLoad are as for MCPStdioServer.
	Timeout    time.Duration
	AlwaysLoad bool
	// Tools is the host's permission policy per tool of the server. The
	// CLI applies it from SetMCPServers only: in Options.MCPServers it
	// reaches the CLI and is ignored there (see MCPToolPolicy).
	Tools []MCPToolPolicy
}

// MCPSDKServer is an MCP server running in this process: an *mcp.Server
// from the official Go SDK, with its tools (mcp.AddTool, schemas inferred
// from Go types), resources and prompts. Make one with SDKServer.
//
// The CLI talks to it through the session: each MCP message is a control
// request the session hands to the server, so the server needs no port,
// no process and no transport of its own. A server may back several
// sessions at once; each gets its own MCP session of it.
type MCPSDKServer struct {
	Server *mcp.Server
	// Timeout bounds each tool call (see MCPStdioServer). The CLI reads
	// it from CLI 2.1.330 on (initialize.sdkMcpServerConfigs and
	// SetMCPServers); 2.1.197 ignores it.
	Timeout time.Duration
	// AlwaysLoad marks every tool of the server with
	// _meta["anthropic/alwaysLoad"] in the tools/list answers the CLI
	// gets, which keeps them out of ToolSearch (see MCPStdioServer and
	// MCPToolMeta).
	AlwaysLoad bool
	// Tools is the host's permission policy per tool: only
	// MCPToolAlwaysAsk and MCPToolAlwaysDeny take effect here (CLI
	// 2.1.330 on, through initialize.sdkMcpServerConfigs and
	// SetMCPServers).
	Tools []MCPToolPolicy
}

// SDKServer attaches an in-process MCP server:
//
//	srv := mcp.NewServer(&mcp.Implementation{Name: "calc", Version: "1.0.0"}, nil)
//	mcp.AddTool(srv, &mcp.Tool{Name: "add", Description: "Add two numbers"}, add)
//	opts.MCPServers = map[string]claude.MCPServerConfig{"calc": claude.SDKServer(srv)}
//
// A tool handler's error becomes a tool result with isError set, which the
// model sees and can recover from; it does not fail the turn.
//
// Tools added while the session runs (mcp.AddTool on the live server)
// reach the CLI in one of two ways. The server announces the change
// (notifications/tools/list_changed, which the session forwards as an
// mcp_message request of its own) and CLI 2.1.330 lists the tools again;
// it only listens when the server announced the tools capability at
// connection time, which the SDK does once a tool exists (a server that
// starts with none should set mcp.ServerOptions.Capabilities.Tools to
// &mcp.ToolCapabilities{ListChanged: true}). CLI 2.1.197 takes the
// notification and ignores it: call Session.ReconnectMCPServer, which
// works on both.
func SDKServer(srv *mcp.Server) *MCPSDKServer { return &MCPSDKServer{Server: srv} }

// MCPToolPermission is a per-tool permission policy.
type MCPToolPermission string

// Per-tool permission policies.
const (
	// MCPToolAlwaysAsk makes the CLI ask the host (CanUseTool) before each
	// call of the tool, even where an allow rule, AllowedTools or
	// bypassPermissions would let it run; under dontAsk the call is
	// denied.
	MCPToolAlwaysAsk MCPToolPermission = "always_ask"
	// MCPToolAlwaysDeny denies every call of the tool.
	MCPToolAlwaysDeny MCPToolPermission = "always_deny"
	// MCPToolAlwaysAllow allows every call; remote (http, sse) servers
	// only: the CLI ignores it on in-process servers, where AllowedTools
	// or CanUseTool grants.
	MCPToolAlwaysAllow MCPToolPermission = "always_allow"
)

// MCPToolPolicy is the host's permission policy for one tool of an MCP
// server (the TypeScript SDK's McpServerToolPolicy). What the real CLI
// does with it (TestRealCLIMCPToolPolicy, CLI 2.1.197 to 2.1.337):
//
//   - In-process servers (MCPSDKServer): from 2.1.330 on, at Connect and
//     in SetMCPServers, always_ask and always_deny hold and always_allow
//     is ignored; 2.1.197 ignores all three.
//   - Remote servers (MCPHTTPServer, MCPSSEServer): applied when they come
//     through SetMCPServers, on every version. In Options.MCPServers the
//     CLI ignores them, however MCPServersDelivery sends the servers
//     (2.1.337 reads them at start only in its own remote sessions). To
//     have them hold from the first turn, call SetMCPServers with the
//     same servers right after Connect; the CLI then connects to the
//     remote servers afresh.
//   - Stdio servers carry none.
//
// Tether sends the policies as given and does not apply them itself: the
// CLI decides, and a later CLI may read them at start.
type MCPToolPolicy struct {
	// Name is the tool's name on its server (not mcp__server__tool).
	Name             string            `json:"name"`
	PermissionPolicy MCPToolPermission `json:"permission_policy,omitempty"`
	// OrgMaxPermission is an organisation's ceiling for the tool:
	// "allow", "ask" or "blocked"; "ask" makes even auto mode ask. The
	// CLI ignores it on in-process servers.
	OrgMaxPermission string `json:"org_max_permission,omitempty"`
}

type mcpStdioWire struct {
	Type       string            `json:"type"`
	Command    string            `json:"command"`
	Args       []string          `json:"args,omitempty"`
	Env        map[string]string `json:"env,omitempty"`
	Timeout    int64             `json:"timeout,omitempty"` // milliseconds
	AlwaysLoad bool              `json:"alwaysLoad,omitempty"`
}

type mcpRemoteWire struct {
	Type       string            `json:"type"`
	URL        string            `json:"url"`
	Headers    map[string]string `json:"headers,omitempty"`
	Timeout    int64             `json:"timeout,omitempty"`
	AlwaysLoad bool              `json:"alwaysLoad,omitempty"`
	Tools      []MCPToolPolicy   `json:"tools,omitempty"`
}

type mcpSDKWire struct {
	Type    string          `json:"type"`
	Name    string          `json:"name"`
	Timeout int64           `json:"timeout,omitempty"`
	Tools   []MCPToolPolicy `json:"tools,omitempty"`
}

// mcpSDKSettings is an in-process server's entry in
// initialize.sdkMcpServerConfigs (2.1.330).
type mcpSDKSettings struct {
	Timeout int64           `json:"timeout,omitempty"`
	Tools   []MCPToolPolicy `json:"tools,omitempty"`
}

func (c *MCPStdioServer) wire(string) any {
	return mcpStdioWire{Type: "stdio", Command: c.Command, Args: c.Args, Env: c.Env, Timeout: c.Timeout.Milliseconds(), AlwaysLoad: c.AlwaysLoad}
}
func (c *MCPSSEServer) wire(string) any {
	return mcpRemoteWire{Type: "sse", URL: c.URL, Headers: c.Headers, Timeout: c.Timeout.Milliseconds(), AlwaysLoad: c.AlwaysLoad, Tools: c.Tools}
}
func (c *MCPHTTPServer) wire(string) any {
	return mcpRemoteWire{Type: "http", URL: c.URL, Headers: c.Headers, Timeout: c.Timeout.Milliseconds(), AlwaysLoad: c.AlwaysLoad, Tools: c.Tools}
}
func (c *MCPSDKServer) wire(name string) any {
	return mcpSDKWire{Type: "sdk", Name: name, Timeout: c.Timeout.Milliseconds(), Tools: c.Tools}
}

// checkTimeout refuses a timeout the CLI would silently ignore.
func checkTimeout(field, name string, d time.Duration) error {
	if d < 0 || (d > 0 && d < time.Second) {
		return fmt.Errorf("claude: %s[%q].Timeout is %v: the CLI ignores timeouts below 1s", field, name, d)
	}
	return nil
}

// validateMCPServers reports configs that cannot work, by name.
func validateMCPServers(field string, servers map[string]MCPServerConfig) error {
	for _, name := range sortedKeys(servers) {
		switch c := servers[name].(type) {
		case nil:
			return fmt.Errorf("claude: %s[%q] is nil", field, name)
		case *MCPSDKServer:
			if c == nil || c.Server == nil {
				return fmt.Errorf("claude: %s[%q] has no *mcp.Server", field, name)
			}
		case *MCPStdioServer:
			if c == nil || c.Command == "" {
				return fmt.Errorf("claude: %s[%q] has no Command", field, name)
			}
		case *MCPSSEServer:
			if c == nil || c.URL == "" {
				return fmt.Errorf("claude: %s[%q] has no URL", field, name)
			}
		case *MCPHTTPServer:
			if c == nil || c.URL == "" {
				return fmt.Errorf("claude: %s[%q] has no URL", field, name)
			}
		}
		if name == "" {
			return fmt.Errorf("claude: %s has a server with an empty name", field)
		}
		var d time.Duration
		switch c := servers[name].(type) {
		case *MCPSDKServer:
			d = c.Timeout
		case *MCPStdioServer:
			d = c.Timeout
		case *MCPSSEServer:
			d = c.Timeout
		case *MCPHTTPServer:
			d = c.Timeout
		}
		if err := checkTimeout(field, name, d); err != nil {
			return err
		}
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// mcpConfigArgs returns the flags for the external servers of
// Options.MCPServers, as prepareMCPDelivery decided (argv when it was not
// called): one --mcp-config with the JSON, --mcp-config naming the
// private file, or --await-initialize, which makes the CLI read them from
// the initialize request. In-process servers are left out: they are
// declared in the initialize request, and declaring one both ways makes
// the 2.1.197 CLI connect to it twice.
func (o *Options) mcpConfigArgs() []string {
	switch o.mcpVia {
	case DeliveryFile:
		return []string{"--mcp-config=" + o.mcpFile}
	case DeliveryInitialize:
		return []string{"--await-initialize"}
	}
	ext := o.externalMCPWire()
	if len(ext) == 0 {
		return nil
	}
	b, err := json.Marshal(map[string]any{"mcpServers": ext})
	if err != nil {
		// Only strings, numbers and string maps: cannot fail.
		panic(err)
	}
	return []string{"--mcp-config=" + string(b)}
}

// sdkServerNames returns the names of the in-process servers, for
// initialize.sdkMcpServers.
func (o *Options) sdkServerNames() []string {
	var names []string
	for _, name := range sortedKeys(o.MCPServers) {
		if _, ok := o.MCPServers[name].(*MCPSDKServer); ok {
			names = append(names, name)
		}
	}
	return names
}

// The session's side of in-process servers: one bridge per server name.

// startMCP attaches the in-process servers of the options; newSession
// calls it before the read loop starts.
func (s *Session) startMCP() {
	s.attachSDKServers(s.opts.MCPServers)
	s.dynamic = map[string]MCPServerConfig{}
	for name, c := range s.opts.MCPServers {
		if _, ok := c.(*MCPSDKServer); ok {
			s.dynamic[name] = c
		}
	}
}

// attachSDKServers starts a bridge for every in-process server in servers
// that has none yet (or a different server), before the CLI can ask for
// it. It returns the names it attached.
func (s *Session) attachSDKServers(servers map[string]MCPServerConfig) []string {
	s.mcpMu.Lock()
	defer s.mcpMu.Unlock()
	if s.bridges == nil {
		s.bridges = map[string]*mcpbridge.Bridge{}
	}
	var added []string
	for _, name := range sortedKeys(servers) {
		c, ok := servers[name].(*MCPSDKServer)
		if !ok {
			continue
		}
		if b := s.bridges[name]; b != nil {
			if b.Server() == c.Server {
				continue
			}
			b.Close()
			s.retired = append(s.retired, b)
		}
		b := mcpbridge.New(c.Server, s.mcpSender(name), s.log)
		b.SetToolMeta(c.toolMeta())
		s.bridges[name] = b
		added = append(added, name)
	}
	return added
}

// detachSDKServers closes the bridges of the named servers.
func (s *Session) detachSDKServers(names []string) {
	s.mcpMu.Lock()
	defer s.mcpMu.Unlock()
	for _, n := range names {
		if b := s.bridges[n]; b != nil {
			// Not waited for here: the CLI has let the server go, and a
			// slow tool handler must not hold up the caller. Close waits.
			b.Close()
			s.retired = append(s.retired, b)
			delete(s.bridges, n)
		}
	}
}

func (s *Session) bridge(name string) *mcpbridge.Bridge {
	s.mcpMu.Lock()
	defer s.mcpMu.Unlock()
	return s.bridges[name]
}

// closeMCP closes every bridge; Close calls it once the CLI is gone.
func (s *Session) closeMCP() {
	s.mcpMu.Lock()
	bs := s.retired
	for _, b := range s.bridges {
		bs = append(bs, b)
	}
	s.bridges, s.retired = nil, nil
	s.mcpMu.Unlock()
	for _, b := range bs {
		b.Close()
	}
	deadline := time.Now().Add(5 * time.Second)
	for _, b := range bs {
		if !b.Wait(max(time.Until(deadline), time.Millisecond)) {
			s.log.Warn("claude: an MCP tool handler ignored its cancelled context; Close is not waiting for it")
			return
		}
	}
}

// mcpSender returns how the named server's own messages reach the CLI: as
// an mcp_message control request, which the CLI hands to its MCP client.
// That is how a tools/list_changed notification makes the CLI list the
// tools again.
func (s *Session) mcpSender(name string) mcpbridge.SendFunc {
	return func(ctx context.Context, msg json.RawMessage) error {
		_, err := s.request(ctx, "mcp_message", mcpMessageRequest{ServerName: name, Message: msg})
		if errors.Is(err, ErrClosed) {
			return nil
		}
		return err
	}
}

// mcpMessageRequest is the body of an mcp_message control request, in
// either direction.
type mcpMessageRequest struct {
	ServerName string          `json:"server_name"`
	Message    json.RawMessage `json:"message"`
}

// serveMCPMessage hands a JSON-RPC message from the CLI to the named
// in-process server and answers with the server's response.
func (s *Session) serveMCPMessage(ctx context.Context, _ string, raw json.RawMessage) (any, error) {
	var req mcpMessageRequest
	if err := unmarshal(raw, &req); err != nil {
		return nil, fmt.Errorf("decoding mcp_message: %w", err)
	}
	b := s.bridge(req.ServerName)
	if b == nil {
		return nil, fmt.Errorf("no SDK MCP server named %q", req.ServerName)
	}
	resp, err := b.Handle(ctx, req.Message)
	if err != nil {
		return nil, fmt.Errorf("MCP server %q: %w", req.ServerName, err)
	}
	return struct {
		MCPResponse json.RawMessage `json:"mcp_response"`
	}{resp}, nil
}

// ToolUseID returns the id of the model's tool_use block that led to this
// MCP tool call (the CLI passes it in the request's _meta as
// "claudecode/toolUseId"), or "" when there is none. It matches the
// ToolUseBlock.ID in the AssistantMessage and the ToolUseID of the
// permission request, so a handler can tie its work to the conversation.
func ToolUseID(req *mcp.CallToolRequest) string {
	if req == nil || req.Params == nil {
		return ""
	}
	id, _ := req.Params.Meta["claudecode/toolUseId"].(string)
	return id
}

// Runtime control of MCP servers.

// MCPConnectionStatus is the state of the CLI's connection to an MCP
// server.
type MCPConnectionStatus string

// Connection states the CLI reports.
const (
	MCPConnectionStatusConnected MCPConnectionStatus = "connected"
	MCPConnectionStatusFailed    MCPConnectionStatus = "failed"
	MCPConnectionStatusNeedsAuth MCPConnectionStatus = "needs-auth"
	MCPConnectionStatusPending   MCPConnectionStatus = "pending"
	MCPConnectionStatusDisabled  MCPConnectionStatus = "disabled"
)

// MCPServerStatus is what the CLI reports about one MCP server: in full
// from MCPStatus, only Name and Status in an InitMessage.
type MCPServerStatus struct {
	Name   string              `json:"name"`
	Status MCPConnectionStatus `json:"status"`
	// ServerInfo is the server's name and version, once connected.
	ServerInfo *MCPServerInfo `json:"serverInfo,omitempty"`
	// Error says why the connection failed (Status failed).
	Error string `json:"error,omitempty"`
	// Config is the server's configuration as the CLI holds it, for the
	// kinds Tether models (stdio, SSE, HTTP). It is nil for in-process
	// servers, which the CLI reports without one.
	Config MCPServerConfig `json:"-"`
	// Scope is where the configuration came from: "dynamic" for
	// --mcp-config and SetMCPServers, "project", "user", "local", …
	Scope string `json:"scope,omitempty"`
	// Source tells in-process servers ("sdk") from configured ones in
	// newer CLIs; empty where the CLI does not report it.
	Source string `json:"source,omitempty"`
	// Tools are the server's tools as the CLI lists them (connected
	// servers), by their MCP names.
	Tools []MCPToolInfo `json:"tools,omitempty"`
	// Raw is the CLI's entry for the server, with fields Tether doesn't
	// model.
	Raw json.RawMessage `json:"-"`
}

// UnmarshalJSON decodes the CLI's entry, keeping it in Raw.
func (st *MCPServerStatus) UnmarshalJSON(b []byte) error {
	type plain MCPServerStatus
	var w struct {
		plain
		Config json.RawMessage `json:"config"`
	}
	if err := unmarshal(b, &w); err != nil {
		return err
	}
	*st = MCPServerStatus(w.plain)
	st.Config = decodeMCPConfig(w.Config)
	st.Raw = append(json.RawMessage(nil), b...)
	return nil
}

// MCPServerInfo is an MCP server's self-description.
type MCPServerInfo struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// MCPToolInfo is a tool of an MCP server, as the CLI lists it.
type MCPToolInfo struct {
	Name        string              `json:"name"`
	Description string              `json:"description,omitempty"`
	Annotations *MCPToolAnnotations `json:"annotations,omitempty"`
}

// MCPToolAnnotations are the hints a tool declares about its effects.
type MCPToolAnnotations struct {
	ReadOnly    bool `json:"readOnly,omitempty"`
	Destructive bool `json:"destructive,omitempty"`
	OpenWorld   bool `json:"openWorld,omitempty"`
}

// decodeMCPConfig turns a configuration the CLI reports back into the
// matching MCPServerConfig; nil for kinds Tether doesn't model.
func decodeMCPConfig(raw json.RawMessage) MCPServerConfig {
	if len(raw) == 0 {
		return nil
	}
	var w struct {
		Type       string            `json:"type"`
		Command    string            `json:"command"`
		Args       []string          `json:"args"`
		Env        map[string]string `json:"env"`
		URL        string            `json:"url"`
		Headers    map[string]string `json:"headers"`
		Timeout    int64             `json:"timeout"`
		AlwaysLoad bool              `json:"alwaysLoad"`
	}
	if unmarshal(raw, &w) != nil {
		return nil
	}
	d := time.Duration(w.Timeout) * time.Millisecond
	switch w.Type {
	case "stdio", "":
		if w.Command == "" {
			return nil
		}
		return &MCPStdioServer{Command: w.Command, Args: w.Args, Env: w.Env, Timeout: d, AlwaysLoad: w.AlwaysLoad}
	case "sse":
		return &MCPSSEServer{URL: w.URL, Headers: w.Headers, Timeout: d, AlwaysLoad: w.AlwaysLoad}
	case "http":
		return &MCPHTTPServer{URL: w.URL, Headers: w.Headers, Timeout: d, AlwaysLoad: w.AlwaysLoad}
	}
	return nil
}

// MCPStatus asks the CLI for the state of every MCP server it knows:
// in-process, configured with Options.MCPServers or MCPConfig, and from
// settings files.
func (s *Session) MCPStatus(ctx context.Context) ([]MCPServerStatus, error) {
	raw, err := s.request(ctx, "mcp_status", nil)
	if err != nil {
		return nil, err
	}
	var w struct {
		MCPServers []MCPServerStatus `json:"mcpServers"`
	}
	if err := unmarshal(raw, &w); err != nil {
		return nil, fmt.Errorf("claude: mcp_status: decoding the answer: %w", err)
	}
	return w.MCPServers, nil
}

// MCPSetServersResult is the CLI's answer to SetMCPServers.
type MCPSetServersResult struct {
	Added   []string          `json:"added"`
	Removed []string          `json:"removed"`
	Errors  map[string]string `json:"errors"` // server name -> why it failed to connect
}

// SetMCPServers replaces the session's dynamic MCP servers with servers:
// the CLI disconnects those left out, connects the new ones and leaves
// servers from settings files alone. In-process servers attached at
// Connect are dynamic too: a call that leaves one out removes it. An
// empty map removes them all.
//
// The CLI answers before it has connected: in-process servers are served
// from before the request is sent, and the CLI connects to them (2.1.197
// and 2.1.330 reconnect every in-process server, changed or not) soon
// after, at the latest when the next turn starts. MCPStatus reports them
// "pending" meanwhile.
//
// To swap the *mcp.Server behind a name, remove the name in one call and
// add it in the next: the CLI keeps its connection to a name it already
// has.
func (s *Session) SetMCPServers(ctx context.Context, servers map[string]MCPServerConfig) (*MCPSetServersResult, error) {
	if err := validateMCPServers("SetMCPServers", servers); err != nil {
		return nil, err
	}
	s.mcpSetMu.Lock()
	defer s.mcpSetMu.Unlock()
	return s.setMCPServers(ctx, servers)
}

func (s *Session) setMCPServers(ctx context.Context, servers map[string]MCPServerConfig) (*MCPSetServersResult, error) {
	wire := make(map[string]any, len(servers))
	for name, c := range servers {
		wire[name] = c.wire(name)
	}
	// The CLI connects to in-process servers before it answers, so their
	// bridges must be ready before it is asked.
	attached := s.attachSDKServers(servers)
	raw, err := s.request(ctx, "mcp_set_servers", struct {
		Servers map[string]any `json:"servers"`
	}{wire})
	if err != nil {
		s.detachSDKServers(attached)
		return nil, err
	}
	var res MCPSetServersResult
	if len(raw) > 0 {
		if err := unmarshal(raw, &res); err != nil {
			return nil, fmt.Errorf("claude: mcp_set_servers: decoding the answer: %w", err)
		}
	}
	var gone []string
	s.mcpMu.Lock()
	for name := range s.bridges {
		if _, sdk := servers[name].(*MCPSDKServer); !sdk {
			gone = append(gone, name)
		}
	}
	s.dynamic = maps.Clone(servers)
	s.mcpMu.Unlock()
	s.detachSDKServers(gone)
	return &res, nil
}

// ToggleMCPServer enables or disables an MCP server: a disabled server's
// tools are hidden from the model. The 2.1.x CLI cannot re-enable an
// in-process server this way (it answers with a *ControlError); use
// SetMCPServers to remove and add it instead.
func (s *Session) ToggleMCPServer(ctx context.Context, name string, enabled bool) error {
	_, err := s.request(ctx, "mcp_toggle", struct {
		ServerName string `json:"serverName"`
		Enabled    bool   `json:"enabled"`
	}{name, enabled})
	return err
}

// ReconnectMCPServer makes the CLI drop its connection to an MCP server
// and connect again: after an external server restarted, or to make the
// CLI list an in-process server's tools again.
//
// The CLI refuses mcp_reconnect for in-process servers ("SDK servers
// should be handled in print.ts"), so for those Tether does it itself:
// it sets the session's servers once without the server and once with it
// (two SetMCPServers requests, resending the servers of the last
// SetMCPServers or, before any, the in-process servers of
// Options.MCPServers). The CLI then starts a new MCP session, lists the
// tools afresh, and the model sees tools added since; like SetMCPServers
// it returns before the CLI has reconnected. CLI 2.1.330 does that by
// itself when a tool is added to a running server; 2.1.197 does not, and
// needs this call. Don't call it while a turn is using the server: its
// tools are gone between the two requests.
func (s *Session) ReconnectMCPServer(ctx context.Context, name string) error {
	s.mcpMu.Lock()
	_, inProcess := s.dynamic[name].(*MCPSDKServer)
	set := maps.Clone(s.dynamic)
	s.mcpMu.Unlock()
	if !inProcess {
		_, err := s.request(ctx, "mcp_reconnect", struct {
			ServerName string `json:"serverName"`
		}{name})
		return err
	}
	s.mcpSetMu.Lock()
	defer s.mcpSetMu.Unlock()
	without := maps.Clone(set)
	delete(without, name)
	if _, err := s.setMCPServers(ctx, without); err != nil {
		return err
	}
	res, err := s.setMCPServers(ctx, set)
	if err != nil {
		return err
	}
	if msg, ok := res.Errors[name]; ok {
		return &ControlError{Subtype: "mcp_set_servers", Message: msg}
	}
	return nil
}
