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

// FuzzPatchToolMeta: whatever the server answers, patching neither panics
// nor makes invalid JSON of valid JSON.
func FuzzPatchToolMeta(f *testing.F) {
	f.Add(`{"tools":[{"name":"a","_meta":{"k":1}}]}`)
	f.Add(`{"tools":[null,1,"x",{"_meta":[]}]}`)
	f.Add(`{"tools":null,"nextCursor":"c"}`)
	f.Add(`{"tools":[null]}`)
	id, _ := jsonrpc.MakeID(float64(1))
	f.Fuzz(func(t *testing.T, result string) {
		got := patchToolMeta(&jsonrpc.Response{ID: id, Result: json.RawMessage(result)}, map[string]any{"anthropic/alwaysLoad": true})
		if json.Valid([]byte(result)) && !json.Valid(got.Result) {
			t.Errorf("%s became invalid JSON: %s", result, got.Result)
		}
	})
}
