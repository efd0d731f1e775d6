package claude_test

import (
	"strings"
	"testing"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
)

// Basic turns: what every user sees first.
func init() {
	addScenarios(
		scenario{
			name:   "basic_turn",
			guards: "A plain turn without partial messages: system/init, one assistant text, a successful result, no stream events.",
			record: true,
			api: func() *claudetest.MessagesOptions {
				return &claudetest.MessagesOptions{Replies: []*claudetest.Reply{claudetest.TextReply("pong")}}
			},
			run: func(t *testing.T, h *harness) {
				msgs := h.turn(t, "ping")
				wantTypesInOrder(t, msgs, "*claude.InitMessage", "*claude.AssistantMessage", "*claude.ResultMessage")
				if hasType[*claude.StreamEvent](msgs) {
					t.Error("stream events without IncludePartialMessages")
				}
				if got := assistantText(msgs); got != "pong" {
					t.Errorf("assistant text = %q", got)
				}
				r := result(t, msgs)
				if r.IsError || r.Subtype != claude.ResultSuccess || r.Result != "pong" || r.SessionID == "" || r.NumTurns != 1 {
					t.Errorf("result = %+v", r)
				}
				init := find[*claude.InitMessage](msgs)[0]
				if init.SessionID != r.SessionID || len(init.Tools) == 0 || init.ClaudeCodeVersion == "" || init.Cwd == "" {
					t.Errorf("init = %+v", init)
				}
				if h.Real() {
					reqs := h.API.MessagesRequests()
					if len(reqs) != 1 || !strings.Contains(reqs[0].Params.LastUser().Text(), "ping") {
						t.Errorf("the API got %d requests; want one with the prompt", len(reqs))
					}
				}
			},
		},
		scenario{
			name:   "basic_turn_partial",
			guards: "A turn with IncludePartialMessages: status requesting, message_start, text deltas that add up to the assistant text, message_stop, the result.",
			record: true,
			api: func() *claudetest.MessagesOptions {
				return &claudetest.MessagesOptions{Replies: []*claudetest.Reply{{Content: []claudetest.ContentBlock{claudetest.TextBlock("Hello, streaming world")}, ChunkSize: 4}}}
			},
			opts: func(o *claude.Options) { o.IncludePartialMessages = true },
			run: func(t *testing.T, h *harness) {
				msgs := h.turn(t, "stream please")
				var deltas string
				var sawStart, sawStop, sawRequesting bool
				for _, m := range msgs {
					switch m := m.(type) {
					case *claude.StatusMessage:
						sawRequesting = sawRequesting || m.Status == "requesting"
					case *claude.StreamEvent:
						switch e := m.Event.(type) {
						case *claude.MessageStartEvent:
							sawStart = true
						case *claude.MessageStopEvent:
							sawStop = true
						case *claude.ContentBlockDeltaEvent:
							if d, ok := e.Delta.(*claude.TextDelta); ok {
								deltas += d.Text
							}
						}
					}
				}
				if !sawStart || !sawStop || !sawRequesting {
					t.Errorf("message_start %v, message_stop %v, status requesting %v in %v", sawStart, sawStop, sawRequesting, types(msgs))
				}
				if want := "Hello, streaming world"; deltas != want || assistantText(msgs) != want {
					t.Errorf("deltas %q, assistant %q", deltas, assistantText(msgs))
				}
				wantTypesInOrder(t, msgs, "*claude.InitMessage", "*claude.StreamEvent", "*claude.AssistantMessage", "*claude.ResultMessage")
			},
		},
		scenario{
			name:   "initialize_typed",
			guards: "The initialize response decodes into typed commands, models, account and pid.",
			record: true,
			run: func(t *testing.T, h *harness) {
				ir := h.S.Initialize()
				if ir == nil || len(ir.Commands) == 0 || len(ir.Models) == 0 || ir.Account == nil || ir.PID == 0 || ir.OutputStyle == "" || len(ir.Raw) == 0 {
					t.Fatalf("initialize response = %+v", ir)
				}
				if h.Real() {
					if ir.PID != h.S.PID() {
						t.Errorf("initialize pid %d, process pid %d", ir.PID, h.S.PID())
					}
					if ir.Account.APIKeySource != "ANTHROPIC_API_KEY" {
						t.Errorf("account = %+v", ir.Account)
					}
				}
				for _, m := range ir.Models {
					if m.Value == "" || m.DisplayName == "" {
						t.Errorf("model %+v", m)
					}
				}
			},
		},
		scenario{
			name:   "replay_user_messages",
			guards: "With ReplayUserMessages the CLI echoes the host's message, uuid kept, IsReplay set, before the first assistant message.",
			record: true,
			api: func() *claudetest.MessagesOptions {
				return &claudetest.MessagesOptions{Replies: []*claudetest.Reply{claudetest.TextReply("seen")}}
			},
			opts: func(o *claude.Options) { o.ReplayUserMessages = true },
			run: func(t *testing.T, h *harness) {
				m := claude.NewUserMessage("echo me")
				m.UUID = "6f1c2d3e-4a5b-4c6d-8e7f-90a1b2c3d4e5"
				if err := h.S.SendMessage(h.Ctx, m); err != nil {
					t.Fatal(err)
				}
				msgs := h.receiveTurn(t)
				var replay *claude.UserMessage
				for _, u := range find[*claude.UserMessage](msgs) {
					if u.IsReplay && u.Text() == "echo me" {
						replay = u
					}
				}
				if replay == nil {
					t.Fatalf("no replay in %v", types(msgs))
				}
				if h.Real() && replay.UUID != m.UUID {
					// Transcripts renumber UUIDs, so only the live run can
					// compare them.
					t.Errorf("replay uuid = %q, want the host's %q", replay.UUID, m.UUID)
				}
				wantTypesInOrder(t, msgs, "*claude.UserMessage", "*claude.AssistantMessage", "*claude.ResultMessage")
			},
		},
	)
}
