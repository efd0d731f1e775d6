package host

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/tetherhq/tether/claude"
)

// An MCP server's form schema and a person's answer to it are read
// without a panic, whatever they hold: every field Form lists is a
// property of the schema, once; an answer refused is refused with a
// *FormError.
func FuzzForm(f *testing.F) {
	f.Add([]byte(`{"type":"object","required":["env"],"properties":{"env":{"type":"string","enum":["a","b"]},"n":{"type":"integer","oneOf":[{"const":1}]}}}`), "env,n,env", []byte(`{"env":"a"}`))
	f.Add([]byte(`{"properties":{"x":{"type":5,"enum":"no","title":7}},"required":"x"}`), "", []byte(`[1]`))
	f.Add([]byte(`[]`), "a", []byte(`null`))
	f.Fuzz(func(t *testing.T, schema []byte, order string, content []byte) {
		req := &claude.ElicitationRequest{RequestedSchema: schema, PropertyOrder: strings.Split(order, ",")}
		a := &Approval{Kind: ApprovalElicitation, Elicitation: req}
		var sc struct {
			Properties map[string]json.RawMessage `json:"properties"`
		}
		_ = json.Unmarshal(schema, &sc)
		seen := map[string]bool{}
		for _, fl := range a.Form() {
			if _, ok := sc.Properties[fl.Name]; seen[fl.Name] || !ok {
				t.Fatalf("field %q listed twice or not in the schema", fl.Name)
			}
			seen[fl.Name] = true
		}
		var fe *FormError
		if err := checkForm(req, content); err != nil && !errors.As(err, &fe) {
			t.Fatalf("checkForm: %v, not a *FormError", err)
		}
	})
}
