package claude_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
	"github.com/tetherhq/tether/internal/proc"
)

// Session-level scenarios: switching model and thinking budget, thinking
// blocks, subagents, queued messages, and the session ids, files, resume,
// continue and fork that let a conversation outlive its process.
func init() {
	addScenarios(
		sessSetModelScenario(),
		sessSetMaxThinkingTokensScenario(),
		sessThinkingScenario(),
		sessSubagentScenario(),
		sessQueuedScenario(),
		sessFixedIDScenario(),
		sessResumeScenario("resume"),
		sessResumeScenario("continue"),
		sessResumeScenario("fork"),
		sessNoPersistenceScenario(),
		sessStructuredOutputScenario(),
	)
}

// sessModel is the model the set_model scenarios switch to: a real model
// id the CLI knows, so it prices and sizes requests for it.
const sessModel = "claude-sonnet-4-5"

func sessSetModelScenario() scenario {
	return scenario{
		name:   "set_model",
		guards: "SetModel switches the model of the next API call and of system/init; CLI 2.1.197 writes a <local-command-stdout> user replay for it, 2.1.330 does not.",
		record: true,
		api: func() *claudetest.MessagesOptions {
			return &claudetest.MessagesOptions{
				Replies: []*claudetest.Reply{claudetest.TextReply("sonnet here")},
			}
		},
		run: func(t *testing.T, h *harness) {
			if err := h.S.SetModel(h.Ctx, sessModel); err != nil {
				t.Fatalf("SetModel: %v", err)
			}
			msgs := h.turn(t, "which model are you?")
			in := sessInit(t, msgs)
			if in.Model != sessModel {
				t.Errorf("init model = %q, want %q", in.Model, sessModel)
			}
			if r := result(t, msgs); r.IsError || r.Result != "sonnet here" {
				t.Errorf("result = %+v", r)
			}
			var notes []*claude.UserMessage
			for _, u := range find[*claude.UserMessage](msgs) {
				if strings.Contains(u.Text(), "<local-command-stdout>") {
					notes = append(notes, u)
				}
			}
			if proc.CompareVersions(in.ClaudeCodeVersion, "2.1.330") < 0 {
				// 2.1.197: written before set_model's answer, so it is
				// queued ahead of the turn: the first message the user
				// receives.
				if len(notes) != 1 || msgs[0] != notes[0] {
					t.Fatalf("want the set_model replay first, got %d in %v", len(notes), types(msgs))
				}
				if n := notes[0]; !n.IsReplay || !strings.Contains(n.Text(), sessModel) {
					t.Errorf("set_model replay = %s", n.RawJSON())
				}
			} else if len(notes) != 0 {
				t.Errorf("%s wrote a set_model replay: %s", in.ClaudeCodeVersion, notes[0].RawJSON())
			}
			if h.Real() {
				sessCheckModelProbes(t, h, in.ClaudeCodeVersion, sessModel)
				reqs := h.API.MessagesRequests()
				if len(reqs) != 1 || reqs[0].Params.Model != sessModel {
					t.Errorf("the API got %d requests, model %q; want one for %q", len(reqs), sessModelOf(reqs), sessModel)
				}
			}
		},
	}
}

func sessSetMaxThinkingTokensScenario() scenario {
	const budget = 2048
	return scenario{
		name:   "set_max_thinking_tokens",
		guards: "SetModel(sessModel) then SetMaxThinkingTokens(N, \"\"): the next API call asks for thinking {type:enabled, budget_tokens:N}, with the CLI's own display (none on 2.1.197, updates on 2.1.330); SetMaxThinkingTokens(N, summarized) then asks for display summarized, as the TypeScript SDK's thinkingDisplay does.",
		record: true,
		api: func() *claudetest.MessagesOptions {
			return &claudetest.MessagesOptions{
				Replies: []*claudetest.Reply{claudetest.TextReply("thought within budget"), claudetest.TextReply("summarized")},
			}
		},
		run: func(t *testing.T, h *harness) {
			if err := h.S.SetModel(h.Ctx, sessModel); err != nil {
				t.Fatalf("SetModel: %v", err)
			}
			if err := h.S.SetMaxThinkingTokens(h.Ctx, budget, ""); err != nil {
				t.Fatalf("SetMaxThinkingTokens: %v", err)
			}
			msgs := h.turn(t, "think a little")
			in := sessInit(t, msgs)
			if in.Model != sessModel {
				t.Errorf("init model = %q, want %q", in.Model, sessModel)
			}
			if r := result(t, msgs); r.IsError || r.Result != "thought within budget" {
				t.Errorf("result = %+v", r)
			}
			if h.Real() {
				sessCheckModelProbes(t, h, in.ClaudeCodeVersion, sessModel)
				reqs := h.API.MessagesRequests()
				if len(reqs) != 1 {
					t.Fatalf("the API got %d requests, want 1", len(reqs))
				}
				// Without a display the CLI picks its own: none in
				// 2.1.197, "updates" in 2.1.330.
				wantDisplay := "updates"
				if in.ClaudeCodeVersion == "2.1.197" {
					wantDisplay = ""
				}
				if th := reqs[0].Params.Thinking; th == nil || th.Type != "enabled" || th.BudgetTokens != budget || th.Display != wantDisplay {
					t.Errorf("thinking = %+v, want {type:enabled budget_tokens:%d display:%q}", th, budget, wantDisplay)
				}
				if reqs[0].Params.Model != sessModel {
					t.Errorf("model = %q, want %q", reqs[0].Params.Model, sessModel)
				}
			}
			// With a display, the CLI asks the API for it.
			if err := h.S.SetMaxThinkingTokens(h.Ctx, budget, claude.ThinkingDisplaySummarized); err != nil {
				t.Fatalf("SetMaxThinkingTokens with a display: %v", err)
			}
			if r := result(t, h.turn(t, "think and summarize")); r.IsError || r.Result != "summarized" {
				t.Errorf("result = %+v", r)
			}
			if h.Real() {
				reqs := h.API.MessagesRequests()
				if len(reqs) != 2 {
					t.Fatalf("the API got %d requests, want 2", len(reqs))
				}
				if th := reqs[1].Params.Thinking; th == nil || th.Type != "enabled" || th.BudgetTokens != budget || th.Display != "summarized" {
					t.Errorf("thinking with display summarized = %+v, want {type:enabled budget_tokens:%d display:summarized}", th, budget)
				}
			}
		},
	}
}

func sessThinkingScenario() scenario {
	const (
		thought   = "The user wants a number. Two and two make four."
		signature = "sig-fake-EqQBCkYIBxgCKkA"
		redacted  = "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP"
	)
	return scenario{
		name:   "thinking",
		guards: "A reply with thinking (signed), redacted thinking and text, with partial messages: thinking and signature deltas, typed thinking blocks, thinking_tokens estimates, and the blocks sent back verbatim on the next call.",
		record: true,
		api: func() *claudetest.MessagesOptions {
			return &claudetest.MessagesOptions{Replies: []*claudetest.Reply{
				{Content: []claudetest.ContentBlock{
					claudetest.ThinkingBlock(thought, signature),
					claudetest.RedactedThinkingBlock(redacted),
					claudetest.TextBlock("four"),
				}, ChunkSize: 12},
				claudetest.TextReply("still four"),
			}}
		},
		opts: func(o *claude.Options) { o.IncludePartialMessages = true },
		run: func(t *testing.T, h *harness) {
			msgs := h.turn(t, "what is 2+2?")
			if r := result(t, msgs); r.IsError || r.Result != "four" {
				t.Errorf("result = %+v", r)
			}

			// The stream: thinking deltas that add up to the thought, the
			// signature, and the redacted block whole in its start event.
			var thinking, sig, startedRedacted string
			var nThinkingDeltas int
			for _, se := range find[*claude.StreamEvent](msgs) {
				switch e := se.Event.(type) {
				case *claude.ContentBlockDeltaEvent:
					switch d := e.Delta.(type) {
					case *claude.ThinkingDelta:
						thinking += d.Thinking
						nThinkingDeltas++
					case *claude.SignatureDelta:
						sig += d.Signature
					}
				case *claude.ContentBlockStartEvent:
					if b, ok := e.ContentBlock.(*claude.RedactedThinkingBlock); ok {
						startedRedacted = b.Data
					}
				}
			}
			if thinking != thought || nThinkingDeltas < 2 || sig != signature || startedRedacted != redacted {
				t.Errorf("stream: thinking %q in %d deltas, signature %q, redacted start %q", thinking, nThinkingDeltas, sig, startedRedacted)
			}

			// One assistant message per block, typed.
			var blocks []string
			for _, a := range find[*claude.AssistantMessage](msgs) {
				for _, c := range a.Message.Content {
					switch b := c.(type) {
					case *claude.ThinkingBlock:
						blocks = append(blocks, "thinking:"+b.Thinking+"|"+b.Signature)
					case *claude.RedactedThinkingBlock:
						blocks = append(blocks, "redacted:"+b.Data)
					case *claude.TextBlock:
						blocks = append(blocks, "text:"+b.Text)
					default:
						blocks = append(blocks, fmt.Sprintf("%T", c))
					}
				}
			}
			wantBlocks := []string{"thinking:" + thought + "|" + signature, "redacted:" + redacted, "text:four"}
			if diff := cmp.Diff(wantBlocks, blocks); diff != "" {
				t.Errorf("assistant blocks (-want +got):\n%s", diff)
			}

			// The thinking-token estimates: one before each thinking delta,
			// adding up.
			tt := find[*claude.ThinkingTokensMessage](msgs)
			if len(tt) != nThinkingDeltas {
				t.Errorf("%d thinking_tokens messages for %d thinking deltas", len(tt), nThinkingDeltas)
			}
			var sum int64
			for i, m := range tt {
				sum += m.EstimatedTokensDelta
				if m.EstimatedTokens != sum || m.EstimatedTokensDelta <= 0 {
					t.Errorf("thinking_tokens[%d] = %+v (running sum %d)", i, m, sum)
				}
			}
			wantTypesInOrder(t, msgs, "*claude.ThinkingTokensMessage", "*claude.StreamEvent", "*claude.AssistantMessage", "*claude.ResultMessage")

			msgs = h.turn(t, "are you sure?")
			if r := result(t, msgs); r.IsError || r.Result != "still four" {
				t.Errorf("second result = %+v", r)
			}
			if h.Real() {
				reqs := h.API.MessagesRequests()
				if len(reqs) != 2 {
					t.Fatalf("the API got %d requests, want 2", len(reqs))
				}
				var back []string
				for _, m := range reqs[1].Params.Messages {
					if m.Role != "assistant" {
						continue
					}
					for _, b := range m.Content {
						switch b.Type {
						case claudetest.BlockTypeThinking:
							back = append(back, "thinking:"+b.Thinking+"|"+b.Signature)
						case claudetest.BlockTypeRedactedThinking:
							back = append(back, "redacted:"+b.Data)
						case claudetest.BlockTypeText:
							back = append(back, "text:"+b.Text)
						}
					}
				}
				if diff := cmp.Diff(wantBlocks, back); diff != "" {
					t.Errorf("blocks sent back (-want +got):\n%s", diff)
				}
			}
		},
	}
}

func sessSubagentScenario() scenario {
	const (
		agentID      = "toolu_agent_0001"
		agentDesc    = "Count files"
		agentPrompt  = "Count the files in the working directory and report the number."
		agentReport  = "There are no files: the count is 0."
		finalText    = "The subagent counted 0 files."
		notifiedText = "The background count is in: 0 files."
	)
	return scenario{
		name: "subagent",
		guards: "The model calls the Agent tool (init lists it as Task): the subagent's messages carry the Agent tool_use id, task_started and task_notification arrive typed, " +
			"and the Agent tool result decodes as AgentResult (completed in 2.1.197; async_launched in 2.1.330, whose report then starts a turn of its own).",
		record: true,
		api: func() *claudetest.MessagesOptions {
			// 2.1.330 runs agents in the background, so the subagent's call
			// races the main loop's: route on the request, not on order.
			return &claudetest.MessagesOptions{Respond: func(r *claudetest.Request) *claudetest.Reply {
				switch {
				case r.Subagent():
					return claudetest.TextReply(agentReport)
				case strings.Contains(r.Params.LastUser().Text(), "<task-notification>"):
					return claudetest.TextReply(notifiedText)
				case r.Params.ToolResult(agentID) == nil:
					return claudetest.ToolUseReply(agentID, "Agent", map[string]string{
						"description": agentDesc, "prompt": agentPrompt, "subagent_type": "general-purpose",
					})
				default:
					return claudetest.TextReply(finalText)
				}
			}}
		},
		run: func(t *testing.T, h *harness) {
			if err := h.S.Send(h.Ctx, "delegate the file count"); err != nil {
				t.Fatal(err)
			}
			// 2.1.197 runs the agent inside the turn: one result. 2.1.330
			// runs it in the background: the turn may end before the agent
			// does, and its notification then starts a turn of its own, so
			// read on until the result that answers the notification.
			var msgs []claude.Message
			var last string
			inTurn := false // the Agent call's result came back completed
			for m, err := range h.S.Receive(h.Ctx) {
				var re *claude.ResultError
				if err != nil && !errors.As(err, &re) {
					t.Fatalf("Receive: %v (after %v)", err, types(msgs))
				}
				msgs = append(msgs, m)
				if u, ok := m.(*claude.UserMessage); ok && u.ParentToolUseID == "" {
					if ar, err := claude.DecodeToolUseResult[claude.AgentResult](u); err == nil && ar.Status == "completed" {
						inTurn = true
					}
				}
				if r, ok := m.(*claude.ResultMessage); ok {
					last = r.Result
					if last == notifiedText || inTurn && last == finalText {
						break
					}
				}
			}
			version := sessInit(t, msgs).ClaudeCodeVersion
			if in := sessInit(t, msgs); !slices.Contains(in.Tools, "Task") {
				t.Errorf("init tools %v lack Task", in.Tools)
			}
			for _, r := range find[*claude.ResultMessage](msgs) {
				if r.IsError {
					t.Errorf("result = %s", r.RawJSON())
				}
			}

			// The main loop's Agent call.
			var call *claude.ToolUseBlock
			for _, a := range find[*claude.AssistantMessage](msgs) {
				for _, tu := range a.ToolUses() {
					if a.ParentToolUseID == "" && tu.ID == agentID && tu.Name == "Agent" {
						call = tu
					}
				}
			}
			if call == nil {
				t.Fatalf("no Agent call in %v", types(msgs))
			}

			// The task's lifecycle, typed.
			started := find[*claude.TaskStartedMessage](msgs)
			notes := find[*claude.TaskNotificationMessage](msgs)
			if len(started) != 1 || len(notes) != 1 {
				t.Fatalf("%d task_started, %d task_notification in %v", len(started), len(notes), types(msgs))
			}
			st, nt := started[0], notes[0]
			if st.TaskID == "" || st.ToolUseID != agentID || st.Description != agentDesc || st.SubagentType != "general-purpose" ||
				st.TaskType != "local_agent" || st.Prompt != agentPrompt {
				t.Errorf("task_started = %s", st.RawJSON())
			}
			if nt.TaskID != st.TaskID || nt.ToolUseID != agentID || nt.Status != "completed" || nt.Usage == nil {
				t.Errorf("task_notification = %s", nt.RawJSON())
			}

			// The subagent's own messages carry the Agent call's id: 2.1.197
			// shows its prompt, 2.1.330 its answer.
			var subUser, subAssistant []string
			for _, m := range msgs {
				switch m := m.(type) {
				case *claude.UserMessage:
					if m.ParentToolUseID == agentID {
						subUser = append(subUser, m.Text())
						if m.SubagentType != "general-purpose" || m.TaskDescription != agentDesc {
							t.Errorf("subagent prompt = %s", m.RawJSON())
						}
					}
				case *claude.AssistantMessage:
					if m.ParentToolUseID == agentID {
						subAssistant = append(subAssistant, m.Text())
						if m.SubagentType != "general-purpose" || m.AgentID != st.TaskID {
							t.Errorf("subagent answer = %s", m.RawJSON())
						}
					}
				}
			}
			// 2.1.197 forwards the subagent's prompt; 2.1.330 and later
			// its answer instead.
			newer := proc.CompareVersions(version, "2.1.330") >= 0
			if newer {
				if len(subUser) != 0 || !slices.Equal(subAssistant, []string{agentReport}) {
					t.Errorf("subagent messages: user %q, assistant %q", subUser, subAssistant)
				}
			} else if !slices.Equal(subUser, []string{agentPrompt}) || len(subAssistant) != 0 {
				t.Errorf("subagent messages: user %q, assistant %q", subUser, subAssistant)
			}

			// The Agent call's result, back in the main loop.
			var res *claude.UserMessage
			for _, u := range find[*claude.UserMessage](msgs) {
				if trs := u.ToolResults(); u.ParentToolUseID == "" && len(trs) == 1 && trs[0].ToolUseID == agentID {
					res = u
				}
			}
			if res == nil {
				t.Fatalf("no Agent tool_result in %v", types(msgs))
			}
			ar, err := claude.DecodeToolUseResult[claude.AgentResult](res)
			if err != nil {
				t.Fatalf("DecodeToolUseResult: %v", err)
			}
			if ar.Prompt != agentPrompt || ar.AgentID != st.TaskID {
				t.Errorf("AgentResult = %+v", ar)
			}
			if newer {
				if ar.Status != "async_launched" || last != notifiedText {
					t.Errorf("AgentResult = %+v, final %q", ar, last)
				}
			} else if ar.Status != "completed" || ar.AgentType != "general-purpose" || !strings.Contains(string(ar.Content), agentReport) ||
				!strings.Contains(res.ToolResults()[0].Text(), agentReport) || last != finalText {
				t.Errorf("AgentResult = %+v, tool result %q, final %q", ar, res.ToolResults()[0].Text(), last)
			}

			if !h.Real() {
				return
			}
			// What the API saw: the main loop offered the tool as Agent, the
			// subagent was asked the prompt, and its report reached the main
			// loop (in the tool result, or in the task notification).
			var sub, reported int
			for _, r := range h.API.MessagesRequests() {
				if r.Subagent() {
					sub++
					if !strings.Contains(r.Params.LastUser().Text(), agentPrompt) {
						t.Errorf("subagent request #%d does not ask the prompt", r.Seq)
					}
					continue
				}
				if !slices.Contains(r.Params.ToolNames(), "Agent") {
					t.Errorf("main request #%d offers no Agent tool: %v", r.Seq, r.Params.ToolNames())
				}
				if r.Params.Contains(agentReport) {
					reported++
				}
			}
			if sub != 1 || reported == 0 {
				t.Errorf("%d subagent requests, %d main requests with the report", sub, reported)
			}
		},
	}
}

func sessQueuedScenario() scenario {
	// The first API call is held until the test has queued two more
	// messages. api makes the channels afresh for every run.
	var (
		mu      sync.Mutex
		entered chan struct{} // closed by the server: the first call is in
		release func()        // lets the first call be answered
	)
	return scenario{
		name:   "queued_messages_merged",
		guards: "Two messages sent while a turn runs are merged into one next turn (one user message of two text blocks) with one result; the turn after that is a turn of its own.",
		record: true,
		api: func() *claudetest.MessagesOptions {
			e, gate := make(chan struct{}), make(chan struct{})
			mu.Lock()
			entered, release = e, sync.OnceFunc(func() { close(gate) })
			mu.Unlock()
			var first atomic.Bool
			return &claudetest.MessagesOptions{Respond: func(r *claudetest.Request) *claudetest.Reply {
				if first.CompareAndSwap(false, true) {
					close(e)
					select {
					case <-gate:
					case <-time.After(time.Minute):
					}
				}
				// Answer with the prompts this call is about, so that a
				// result says which messages its turn took.
				return claudetest.TextReply("got:" + sessPromptsIn(r.Params.Messages[sessLastAssistant(r.Params.Messages)+1:]))
			}}
		},
		run: func(t *testing.T, h *harness) {
			var e <-chan struct{}
			if h.Real() {
				mu.Lock()
				e = entered
				defer release()
				mu.Unlock()
			}
			if err := h.S.Send(h.Ctx, "kumquat"); err != nil {
				t.Fatal(err)
			}
			var msgs []claude.Message
			queued := false
			for m, err := range h.S.Receive(h.Ctx) {
				var re *claude.ResultError
				if err != nil && !errors.As(err, &re) {
					t.Fatalf("Receive: %v (after %v)", err, types(msgs))
				}
				msgs = append(msgs, m)
				if _, ok := m.(*claude.InitMessage); ok && !queued {
					// The first turn has started; against the real CLI, wait
					// until its API call is held, queue two messages, give the
					// CLI a moment to read them, then let the call finish.
					queued = true
					if h.Real() {
						select {
						case <-e:
						case <-h.Ctx.Done():
							t.Fatal("the first API call never came")
						}
					}
					for _, p := range []string{"rambutan", "durian"} {
						if err := h.S.Send(h.Ctx, p); err != nil {
							t.Fatal(err)
						}
					}
					if h.Real() {
						time.Sleep(300 * time.Millisecond)
						release()
					}
				}
				if _, ok := m.(*claude.ResultMessage); ok && len(find[*claude.ResultMessage](msgs)) == 2 {
					break
				}
			}
			// One more message once idle: a turn of its own. Had the CLI
			// kept a third turn for durian, its result would come first.
			msgs = append(msgs, h.turn(t, "mangosteen")...)

			var got []string
			for _, r := range find[*claude.ResultMessage](msgs) {
				if r.IsError {
					t.Errorf("result = %s", r.RawJSON())
				}
				got = append(got, r.Result)
			}
			want := []string{"got:kumquat", "got:rambutan durian", "got:mangosteen"}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("results (-want +got):\n%s", diff)
			}
			if n := len(find[*claude.InitMessage](msgs)); n != 3 {
				t.Errorf("%d turns started, want 3", n)
			}

			if h.Real() {
				reqs := h.API.MessagesRequests()
				if len(reqs) != 3 {
					t.Fatalf("the API got %d requests, want 3", len(reqs))
				}
				// The merged turn's prompt: one user message, a text block
				// for each queued message (2.1.330 ends all but the last
				// with a newline).
				var texts []string
				for _, b := range reqs[1].Params.LastUser().Content {
					texts = append(texts, strings.TrimSpace(b.Text))
				}
				if diff := cmp.Diff([]string{"rambutan", "durian"}, texts); diff != "" {
					t.Errorf("merged prompt (-want +got):\n%s", diff)
				}
			}
		},
	}
}

// sessFixedID is the session id the session scenarios ask for. Each scenario
// has its own HOME, so they may share it.
const sessFixedID = "5b0c9a4e-2f6d-4e1a-9c3b-7d8e1f2a3b4c"

// sessFile returns where the CLI keeps a session's transcript:
// $HOME/.claude/projects/<cwd, every character other than a letter or a
// digit turned into "-">/<id>.jsonl.
func sessFile(cli *claudetest.RealCLI, id string) string {
	dir := regexp.MustCompile(`[^A-Za-z0-9]`).ReplaceAllString(cli.Dir, "-")
	return filepath.Join(cli.Home, ".claude", "projects", dir, id+".jsonl")
}

func sessFixedIDScenario() scenario {
	return scenario{
		name:   "fixed_session_id",
		guards: "Options.SessionID fixes the session id: system/init and the result carry it, the API gets it in x-claude-code-session-id, and the session file is named for it.",
		record: true,
		api: func() *claudetest.MessagesOptions {
			return &claudetest.MessagesOptions{Replies: []*claudetest.Reply{claudetest.TextReply("fixed")}}
		},
		opts: func(o *claude.Options) { o.SessionID = sessFixedID },
		run: func(t *testing.T, h *harness) {
			msgs := h.turn(t, "hello")
			in, r := sessInit(t, msgs), result(t, msgs)
			if in.SessionID == "" || in.SessionID != r.SessionID {
				t.Errorf("init session %q, result session %q", in.SessionID, r.SessionID)
			}
			if !h.Real() {
				return // transcripts renumber UUIDs, the session id with them
			}
			if in.SessionID != sessFixedID {
				t.Errorf("session id = %q, want %q", in.SessionID, sessFixedID)
			}
			for _, req := range h.API.MessagesRequests() {
				if got := req.SessionID(); got != sessFixedID {
					t.Errorf("request #%d x-claude-code-session-id = %q, want %q", req.Seq, got, sessFixedID)
				}
			}
			h.S.Close() // the CLI flushes its session file as it exits
			b, err := os.ReadFile(sessFile(h.CLI, sessFixedID))
			if err != nil {
				t.Fatalf("session file: %v", err)
			}
			if !strings.Contains(string(b), "hello") || !strings.Contains(string(b), sessFixedID) {
				t.Errorf("session file lacks the prompt or the id:\n%.2000s", b)
			}
		},
	}
}

// sessResumeScenario is resume, continue or fork: a first session with a fixed
// id, closed, then a second one that picks the conversation up.
func sessResumeScenario(mode string) scenario {
	sc := scenario{
		name: mode,
		// The scenario starts a second process from the first one's
		// session file: no transcript can stand in for that.
		record: false,
		api: func() *claudetest.MessagesOptions {
			return &claudetest.MessagesOptions{Replies: []*claudetest.Reply{
				claudetest.TextReply("Noted: the code word is pineapple."),
				claudetest.TextReply("It was pineapple."),
			}}
		},
		opts: func(o *claude.Options) { o.SessionID = sessFixedID },
	}
	switch mode {
	case "resume":
		sc.guards = "Options.Resume continues a closed session: same session id, and the API gets the earlier conversation."
	case "continue":
		sc.guards = "Options.Continue picks up the most recent session in the working directory: same session id, and the API gets the earlier conversation."
	case "fork":
		sc.guards = "Options.Resume with ForkSession: a new session id, with the earlier conversation."
	}
	sc.run = func(t *testing.T, h *harness) {
		msgs := h.turn(t, "remember the code word pineapple")
		if r := result(t, msgs); r.IsError || r.SessionID != sessFixedID {
			t.Fatalf("first result = %+v", r)
		}
		if err := h.S.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}

		o := *h.Opts
		o.Transport = nil
		o.SessionID = ""
		switch mode {
		case "resume":
			o.Resume = sessFixedID
		case "continue":
			o.Continue = true
		case "fork":
			o.Resume, o.ForkSession = sessFixedID, true
		}
		h2 := *h
		s2, err := claude.Connect(h.Ctx, &o)
		if err != nil {
			t.Fatalf("second Connect: %v", err)
		}
		defer s2.Close()
		h2.S = s2
		msgs = h2.turn(t, "what was the code word?")
		in, r := sessInit(t, msgs), result(t, msgs)
		if r.IsError || r.Result != "It was pineapple." {
			t.Errorf("second result = %+v", r)
		}
		if in.SessionID != r.SessionID {
			t.Errorf("init session %q, result session %q", in.SessionID, r.SessionID)
		}
		id := r.SessionID
		if mode == "fork" {
			if id == sessFixedID || id == "" {
				t.Errorf("forked session id = %q, want a new one", id)
			}
		} else if id != sessFixedID {
			t.Errorf("session id = %q, want %q kept", id, sessFixedID)
		}

		reqs := h.API.MessagesRequests()
		if len(reqs) != 2 {
			t.Fatalf("the API got %d requests, want 2", len(reqs))
		}
		p := reqs[1].Params
		if !p.Contains("remember the code word pineapple") || !p.Contains("Noted: the code word is pineapple.") ||
			!strings.Contains(p.LastUser().Text(), "what was the code word?") {
			t.Errorf("the resumed request lacks the history: %s", reqs[1].Body)
		}
		if got := reqs[1].SessionID(); got != id {
			t.Errorf("resumed request x-claude-code-session-id = %q, want %q", got, id)
		}
		if mode == "fork" {
			s2.Close()
			if _, err := os.Stat(sessFile(h.CLI, id)); err != nil {
				t.Errorf("forked session file: %v", err)
			}
		}
	}
	return sc
}

func sessNoPersistenceScenario() scenario {
	return scenario{
		name:   "no_session_persistence",
		guards: "With NoSessionPersistence no session file is written, and resuming the session fails: Connect returns a *ProcessError whose stderr says no conversation was found.",
		record: false, // the scenario starts a second process
		api: func() *claudetest.MessagesOptions {
			return &claudetest.MessagesOptions{Replies: []*claudetest.Reply{claudetest.TextReply("forgotten soon")}}
		},
		opts: func(o *claude.Options) { o.SessionID, o.NoSessionPersistence = sessFixedID, true },
		run: func(t *testing.T, h *harness) {
			msgs := h.turn(t, "do not keep this")
			if r := result(t, msgs); r.IsError || r.SessionID != sessFixedID {
				t.Fatalf("result = %+v", r)
			}
			if err := h.S.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			if _, err := os.Stat(sessFile(h.CLI, sessFixedID)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("session file: %v, want none", err)
			}

			// The CLI answers --resume of an unknown id with an
			// error_during_execution result instead of the initialize
			// response, then exits 1: Connect fails with the exit.
			o := *h.Opts
			o.Transport, o.SessionID, o.NoSessionPersistence = nil, "", false
			o.Resume = sessFixedID
			s2, err := claude.Connect(h.Ctx, &o)
			if err == nil {
				s2.Close()
				t.Fatal("resuming a session that was never saved succeeded")
			}
			var pe *claude.ProcessError
			if !errors.As(err, &pe) {
				t.Fatalf("Connect: %T %v, want a *claude.ProcessError", err, err)
			}
			want := "No conversation found with session ID: " + sessFixedID
			if pe.ExitCode != 1 || !slices.Contains(pe.Stderr, want) {
				t.Errorf("ProcessError exit %d, stderr %q; want exit 1 and %q", pe.ExitCode, pe.Stderr, want)
			}
			if len(h.API.MessagesRequests()) != 1 {
				t.Errorf("the API got %d requests, want only the first session's", len(h.API.MessagesRequests()))
			}
		},
	}
}

func sessStructuredOutputScenario() scenario {
	const schema = `{"type":"object","properties":{"city":{"type":"string"},"population":{"type":"integer"}},"required":["city","population"]}`
	const answer = `{"city":"Lisbon","population":545796}`
	return scenario{
		name:   "structured_output",
		guards: "--json-schema (through ExtraArgs): the CLI offers a StructuredOutput tool with the schema, the model answers by calling it, the turn ends there, and the result's StructuredOutput holds the tool's input.",
		record: true,
		api: func() *claudetest.MessagesOptions {
			// One reply: the CLI ends the turn on the StructuredOutput call
			// without asking the model again.
			return &claudetest.MessagesOptions{Replies: []*claudetest.Reply{
				claudetest.ToolUseReply("toolu_structured_1", "StructuredOutput", json.RawMessage(answer)),
			}}
		},
		opts: func(o *claude.Options) { o.ExtraArgs = append(o.ExtraArgs, "--json-schema="+schema) },
		run: func(t *testing.T, h *harness) {
			msgs := h.turn(t, "the largest city of Portugal, as JSON")
			if in := sessInit(t, msgs); !slices.Contains(in.Tools, "StructuredOutput") {
				t.Errorf("init tools %v lack StructuredOutput", in.Tools)
			}
			wantTypesInOrder(t, msgs, "*claude.InitMessage", "*claude.AssistantMessage", "*claude.UserMessage", "*claude.ResultMessage")
			var call *claude.ToolUseBlock
			for _, a := range find[*claude.AssistantMessage](msgs) {
				for _, tu := range a.ToolUses() {
					call = tu
				}
			}
			if call == nil || call.Name != "StructuredOutput" || !sessJSONEqual(call.Input, answer) {
				t.Errorf("tool call = %+v", call)
			}
			r := result(t, msgs)
			if r.IsError || r.Subtype != claude.ResultSuccess || !sessJSONEqual(r.StructuredOutput, answer) {
				t.Errorf("result = %s", r.RawJSON())
			}
			var got struct {
				City       string `json:"city"`
				Population int    `json:"population"`
			}
			if err := json.Unmarshal(r.StructuredOutput, &got); err != nil || got.City != "Lisbon" || got.Population != 545796 {
				t.Errorf("StructuredOutput %s decodes to %+v, %v", r.StructuredOutput, got, err)
			}
			if h.Real() {
				reqs := h.API.MessagesRequests()
				if len(reqs) != 1 {
					t.Fatalf("the API got %d requests, want 1", len(reqs))
				}
				var tool *claudetest.Tool
				for i, tl := range reqs[0].Params.Tools {
					if tl.Name == "StructuredOutput" {
						tool = &reqs[0].Params.Tools[i]
					}
				}
				if tool == nil || !sessJSONEqual(tool.InputSchema, schema) {
					t.Errorf("StructuredOutput tool offered = %+v", tool)
				}
			}
		},
	}
}

// Helpers.

// sessCheckModelProbes checks the model probes the CLI made (as side
// requests): none before 2.1.330, at most one for the new model after.
func sessCheckModelProbes(t *testing.T, h *harness, version, model string) {
	t.Helper()
	side := h.API.SideRequests()
	for _, r := range side {
		if !claudetest.IsModelProbe(r) || r.Params.Model != model || r.Params.LastUser().Text() != "Hi" {
			t.Errorf("side request #%d: %s", r.Seq, r.Body)
		}
	}
	want := 0 // 2.1.197 does not check the new model
	if proc.CompareVersions(version, "2.1.330") >= 0 {
		want = 1
	}
	if len(side) != want {
		t.Errorf("%s made %d model probes, want %d", version, len(side), want)
	}
}

// sessInit returns the turn's system/init, failing if there is none.
func sessInit(t *testing.T, msgs []claude.Message) *claude.InitMessage {
	t.Helper()
	in := find[*claude.InitMessage](msgs)
	if len(in) == 0 {
		t.Fatalf("no system/init in %v", types(msgs))
	}
	return in[0]
}

// sessModelOf returns the model of the first request, or "".
func sessModelOf(reqs []*claudetest.Request) string {
	if len(reqs) == 0 {
		return ""
	}
	return reqs[0].Params.Model
}

// sessJSONEqual reports whether a and b are the same JSON value.
func sessJSONEqual[T ~[]byte | ~string](a T, b string) bool {
	var x, y any
	return json.Unmarshal([]byte(a), &x) == nil && json.Unmarshal([]byte(b), &y) == nil && cmp.Equal(x, y)
}

// sessLastAssistant returns the index of the last assistant message, or -1.
func sessLastAssistant(ms []claudetest.Message) int {
	for i := len(ms) - 1; i >= 0; i-- {
		if ms[i].Role == "assistant" {
			return i
		}
	}
	return -1
}

// sessPromptsIn returns which of the queued scenario's prompts occur as
// words in the messages' text blocks, in order, space-separated.
func sessPromptsIn(ms []claudetest.Message) string {
	var got []string
	for _, w := range []string{"kumquat", "rambutan", "durian", "mangosteen"} {
	msgs:
		for _, m := range ms {
			for _, b := range m.Content {
				if sessHasWord(b.Text, w) {
					got = append(got, w)
					break msgs
				}
			}
		}
	}
	return strings.Join(got, " ")
}

// sessHasWord reports whether w occurs in s as a word of lower-case
// letters.
func sessHasWord(s, w string) bool {
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return !('a' <= r && r <= 'z') }) {
		if f == w {
			return true
		}
	}
	return false
}
