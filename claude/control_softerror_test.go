package claude_test

import (
	"encoding/json"
	"testing"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
)

// TestCallMCPToolSoftError: SoftErrorResult travels as soft_error_result,
// and the tool's own failure, which a CLI that honours it (2.1.331, the
// mcp_call_soft_error_result_v1 capability) answers as a success with
// isError, reaches the caller as IsError with the content.
func TestCallMCPToolSoftError(t *testing.T) {
	ctx := testCtx(t)
	s, bodies := controlFake(t, func(l *claudetest.Line) any {
		if l.Subtype == "mcp_call" {
			return json.RawMessage(`{"content":[{"type":"text","text":"no such file"}],"isError":true}`)
		}
		return nil
	})
	r, err := s.CallMCPTool(ctx, &claude.MCPCallParams{Tool: "mcp__fs__read", Arguments: json.RawMessage(`{"path":"x"}`), SoftErrorResult: true})
	if err != nil {
		t.Fatal(err)
	}
	jsonEqual(t, "request", json.RawMessage(<-bodies), `{"subtype":"mcp_call","tool":"mcp__fs__read","arguments":{"path":"x"},"soft_error_result":true}`)
	bs, err := r.Blocks()
	if !r.IsError || err != nil || len(bs) != 1 || bs[0].Text != "no such file" {
		t.Errorf("result = %+v, blocks %+v, %v", r, bs, err)
	}
}
