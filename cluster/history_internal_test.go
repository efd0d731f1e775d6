package cluster

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/tetherhq/tether/host"
)

// The answers a snapshot rebuilds from a session's events are the ones
// the session itself lists: an MCP server's form keeps its server, what
// it asked and the call that asked; a withdrawn approval is no answer.
func TestAnswersFromEvents(t *testing.T) {
	at := time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)
	form := host.ApprovalInfo{ID: "r1", Kind: "elicitation", ToolName: "mcp__deploy", ToolUseID: "toolu_1", Server: "deploy",
		Message: "Which environment?", Form: []host.FormField{{Name: "env", Title: "env", Type: "string"}}}
	tool := host.ApprovalInfo{ID: "r2", Kind: "tool", ToolName: "Bash", ToolUseID: "toolu_2"}
	declined := host.ApprovalResolved{ID: "r1", Outcome: "denied", AnsweredBy: "Ann"}
	event := func(kind host.EventKind, v any) host.Event {
		data, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return host.Event{Kind: kind, Data: data, Time: at}
	}
	var a answers
	for _, ev := range []host.Event{
		event(host.EventApproval, form), event(host.EventApproval, tool),
		event(host.EventApprovalResolved, declined), event(host.EventApprovalResolved, host.ApprovalResolved{ID: "r2", Outcome: "withdrawn"}),
	} {
		a.add(ev)
	}
	want := []host.ResolvedApproval{{ApprovalResolved: declined, Kind: "elicitation", ToolName: "mcp__deploy", ToolUseID: "toolu_1",
		Server: "deploy", ServerMessage: "Which environment?", Resolved: at}}
	if diff := cmp.Diff(want, a.out); diff != "" {
		t.Errorf("answers (-want +got):\n%s", diff)
	}
	if got := form.Resolved(declined, at); !cmp.Equal(got, want[0]) {
		t.Errorf("the session's own entry %+v", got)
	}
}
