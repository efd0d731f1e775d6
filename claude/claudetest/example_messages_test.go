package claudetest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/tetherhq/tether/claude/claudetest"
)

// A script of two replies: a tool call, then an answer that depends on the
// tool's result. Here a plain HTTP client plays the CLI.
func ExampleMessagesServer() {
	s := claudetest.NewMessagesServer(&claudetest.MessagesOptions{
		Replies: []*claudetest.Reply{
			claudetest.ToolUseReply("toolu_1", "Bash", map[string]string{"command": "echo hi"}),
		},
		Respond: func(r *claudetest.Request) *claudetest.Reply {
			if tr := r.Params.ToolResult("toolu_1"); tr != nil {
				return claudetest.TextReply("the tool said " + tr.Content[0].Text)
			}
			return nil // use the queue
		},
	})
	defer s.Close()

	ask := func(body string) {
		resp, err := http.Post(s.URL+"/v1/messages", "application/json", strings.NewReader(body))
		if err != nil {
			panic(err)
		}
		defer resp.Body.Close()
		var m struct {
			StopReason string `json:"stop_reason"`
			Content    []struct {
				Type, Text, Name string
			} `json:"content"`
		}
		json.NewDecoder(resp.Body).Decode(&m)
		fmt.Println(m.StopReason, m.Content[0].Type, m.Content[0].Name+m.Content[0].Text)
	}
	ask(`{"model":"claude-test","max_tokens":100,"messages":[{"role":"user","content":"run echo hi"}]}`)
	ask(`{"model":"claude-test","max_tokens":100,"messages":[{"role":"user","content":"run echo hi"},
		{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"echo hi"}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"hi"}]}]}`)

	fmt.Println(len(s.MessagesRequests()), "requests,", len(s.Unexpected()), "unexpected")
	// Output:
	// tool_use tool_use Bash
	// end_turn text the tool said hi
	// 2 requests, 0 unexpected
}

// Running the real CLI against the fake in a test. NewRealCLI skips the
// test when the pinned CLI is not installed (and fails it under CI=true).
func ExampleNewRealCLI() {
	var t *testing.T // the test's own
	s := claudetest.NewMessagesServer(&claudetest.MessagesOptions{
		Replies:    []*claudetest.Reply{claudetest.TextReply("hello")},
		MaxRetries: 1, // keep error tests fast
	})
	t.Cleanup(s.Close)
	cli := claudetest.NewRealCLI(t, s)
	cmd := cli.Command(context.Background(), "--include-partial-messages")
	_ = cmd // wire up stdin/stdout, Start, write a user line, read until "result"
}
