package mcpbridge

import (
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// TestPatchToolMeta: the server-wide _meta is merged into every tool, over
// the tool's own keys; answers that are not a tool list go out unchanged.
func TestPatchToolMeta(t *testing.T) {
	meta := map[string]any{"anthropic/alwaysLoad": true}
	id, _ := jsonrpc.MakeID(float64(1))
	for _, tc := range []struct{ in, want string }{
		{`{"tools":[{"name":"a"},{"name":"b","_meta":{"k":1,"anthropic/alwaysLoad":false}}]}`,
			`{"tools":[{"_meta":{"anthropic/alwaysLoad":true},"name":"a"},{"_meta":{"anthropic/alwaysLoad":true,"k":1},"name":"b"}]}`},
		{`{"tools":[{"name":"a","_meta":null}]}`, `{"tools":[{"_meta":{"anthropic/alwaysLoad":true},"name":"a"}]}`},
		{`{"tools":[{"name":"a","_meta":"x"}]}`, `{"tools":[{"name":"a","_meta":"x"}]}`},
		{`{"tools":"nope"}`, `{"tools":"nope"}`},
		{`[1,2]`, `[1,2]`},
		{`{}`, `{}`},
	} {
		got := patchToolMeta(&jsonrpc.Response{ID: id, Result: json.RawMessage(tc.in)}, meta)
		if string(got.Result) != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.in, got.Result, tc.want)
		}
	}
	resp := &jsonrpc.Response{ID: id, Result: json.RawMessage(`{"tools":[]}`)}
	if patchToolMeta(resp, nil) != resp {
		t.Error("no meta must leave the response as it is")
	}
}
