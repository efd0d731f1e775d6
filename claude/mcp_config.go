package claude

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tetherhq/tether/internal/proc"
)

// MCPToolMeta are the keys the CLI reads from an MCP tool's _meta (its
// definition in tools/list). Set them on an in-process server's tool with
// Apply; an external server sets the same keys in its own tool
// definitions.
type MCPToolMeta struct {
	// AlwaysLoad ("anthropic/alwaysLoad") puts the tool in the model's
	// tool list from the first request instead of deferring it behind
	// ToolSearch, which CLI 2.1.330 does with MCP tools by default.
	AlwaysLoad bool
	// SearchHint ("anthropic/searchHint") is a phrase ToolSearch matches
	// the tool by, besides its name and description.
	SearchHint string
	// MaxResultSizeChars ("anthropic/maxResultSizeChars") is the size in
	// characters above which the CLI does not hand the tool's result to
	// the model as it is but saves it to a file and sends a preview with
	// the file's path. Zero leaves the CLI's threshold (50,000); the CLI
	// caps the value at 500,000.
	MaxResultSizeChars int
}

// MCP _meta keys the CLI reads from a tool definition.
const (
	MetaAlwaysLoad         = "anthropic/alwaysLoad"
	MetaSearchHint         = "anthropic/searchHint"
	MetaMaxResultSizeChars = "anthropic/maxResultSizeChars"
)

// Apply sets m's keys in t.Meta (keys m leaves zero are not touched) and
// returns t, so that it fits in mcp.AddTool:
//
//	mcp.AddTool(srv, claude.MCPToolMeta{AlwaysLoad: true}.Apply(&mcp.Tool{Name: "add"}), add)
func (m MCPToolMeta) Apply(t *mcp.Tool) *mcp.Tool {
	if t == nil {
		return nil
	}
	set := func(k string, v any) {
		if t.Meta == nil {
			t.Meta = mcp.Meta{}
		}
		t.Meta[k] = v
	}
	if m.AlwaysLoad {
		set(MetaAlwaysLoad, true)
	}
	if m.SearchHint != "" {
		set(MetaSearchHint, m.SearchHint)
	}
	if m.MaxResultSizeChars > 0 {
		set(MetaMaxResultSizeChars, m.MaxResultSizeChars)
	}
	return t
}

// externalMCPWire returns the wire form of the external servers of
// Options.MCPServers; nil when there are none.
func (o *Options) externalMCPWire() map[string]any {
	var ext map[string]any
	for name, c := range o.MCPServers {
		if _, sdk := c.(*MCPSDKServer); !sdk && c != nil {
			if ext == nil {
				ext = map[string]any{}
			}
			ext[name] = c.wire(name)
		}
	}
	return ext
}

// prepareMCPDelivery decides how the external servers reach the CLI
// (started: Tether starts the CLI itself, whose version is in
// o.cliVersion unless the probe was skipped) and writes the file of
// DeliveryFile. Connect calls done once the CLI has answered
// initialize.
func (o *Options) prepareMCPDelivery(started bool) (done func(), err error) {
	done = func() {}
	ext := o.externalMCPWire()
	if len(ext) == 0 {
		o.mcpVia = DeliveryArgv
		return done, nil
	}
	via := o.MCPServersDelivery
	known := o.cliVersion != ""
	if via == DeliveryAuto {
		switch {
		case !started:
			via = DeliveryArgv
		case known && proc.CompareVersions(o.cliVersion, InitializeDeliveryVersion) >= 0:
			via = DeliveryInitialize
		default:
			via = DeliveryFile
		}
	}
	if via == DeliveryInitialize && known && proc.CompareVersions(o.cliVersion, InitializeDeliveryVersion) < 0 {
		return done, &CLIFeatureError{Option: "MCPServersDelivery", Needs: InitializeDeliveryVersion, Found: o.cliVersion}
	}
	o.mcpVia = via
	if via != DeliveryFile {
		return done, nil
	}
	b, err := json.Marshal(map[string]any{"mcpServers": ext})
	if err != nil {
		return done, fmt.Errorf("claude: encoding Options.MCPServers: %w", err)
	}
	dir, err := os.MkdirTemp("", "tether-mcp-")
	if err != nil {
		return done, fmt.Errorf("claude: writing the MCP configuration: %w", err)
	}
	done = func() { os.RemoveAll(dir) }
	path := filepath.Join(dir, "mcp.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		done()
		return func() {}, fmt.Errorf("claude: writing the MCP configuration: %w", err)
	}
	o.mcpFile = path
	return done, nil
}

// mcpInitialize fills the initialize request's MCP fields: the external
// servers under DeliveryInitialize, and the settings of in-process
// servers (sdkMcpServerConfigs, which CLIs before 2.1.330 ignore).
func (o *Options) mcpInitialize(r *initializeRequest) {
	if o.mcpVia == DeliveryInitialize {
		r.MCPServers = o.externalMCPWire()
	}
	for _, name := range sortedKeys(o.MCPServers) {
		if c, ok := o.MCPServers[name].(*MCPSDKServer); ok && (c.Timeout > 0 || len(c.Tools) > 0) {
			if r.SDKMCPServerConfigs == nil {
				r.SDKMCPServerConfigs = map[string]any{}
			}
			r.SDKMCPServerConfigs[name] = mcpSDKSettings{Timeout: c.Timeout.Milliseconds(), Tools: c.Tools}
		}
	}
}

// checkMCPApplied fails a session whose CLI did not confirm it took the
// servers sent in initialize (mcp_servers_applied): such a CLI started
// without them.
func (s *Session) checkMCPApplied() error {
	if s.opts.mcpVia != DeliveryInitialize || s.init == nil {
		return nil
	}
	var w struct {
		Applied *bool  `json:"mcp_servers_applied"`
		Version string `json:"claude_code_version"`
	}
	_ = json.Unmarshal(s.init.Raw, &w)
	if w.Applied == nil || !*w.Applied {
		return fmt.Errorf("%w: the MCP servers (the initialize answer does not confirm them; CLI %s)", ErrNotApplied, w.Version)
	}
	return nil
}

// toolMeta is what the bridge adds to each tool of an in-process server.
func (c *MCPSDKServer) toolMeta() map[string]any {
	if c.AlwaysLoad {
		return map[string]any{MetaAlwaysLoad: true}
	}
	return nil
}
