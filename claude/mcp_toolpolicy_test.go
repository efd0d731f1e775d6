package claude_test

import (
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tetherhq/tether/claude"
)

// TestMCPToolPolicyOnTheWire: the per-tool permission policy reaches the
// CLI as the TypeScript SDK sends it: in sdkMcpServerConfigs for an
// in-process server. (A remote server's entry carries it as "tools",
// through the same wire struct; not asserted here.)
func TestMCPToolPolicyOnTheWire(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "calc", Version: "1.0.0"}, nil)
	sdk := claude.SDKServer(srv)
	sdk.Tools = []claude.MCPToolPolicy{{Name: "add", PermissionPolicy: claude.MCPToolAlwaysAsk}}
	o := &claude.Options{
		MCPServers: map[string]claude.MCPServerConfig{"calc": sdk},
	}
	_, init := launched(t, o)
	get := func(v any) json.RawMessage {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	cfg, _ := init["sdkMcpServerConfigs"].(map[string]any)
	jsonEqual(t, "sdkMcpServerConfigs.calc", get(cfg["calc"]), `{"tools":[{"name":"add","permission_policy":"always_ask"}]}`)
}
