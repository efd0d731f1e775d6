package claude_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
	"github.com/tetherhq/tether/internal/control"
)

// Permissions, user content and big lines: what a host decides about tool
// use through CanUseTool, and what reaches the model when it does.
func init() {
	addScenarios(
		scenario{
			name:   "bash_allowed",
			guards: "A Bash call that needs permission reaches CanUseTool as a typed request (tool, input, tool_use_id, suggestions, blocked path); allowing it unchanged runs the command and its result reaches the API.",
			record: true,
			api: func() *claudetest.MessagesOptions {
				return &claudetest.MessagesOptions{Replies: []*claudetest.Reply{
					claudetest.ToolUseReply("toolu_allow", "Bash", map[string]string{"command": "echo hi > hi.txt", "description": "Write hi.txt"}),
					claudetest.TextReply("wrote it"),
				}}
			},
			opts: onPermission(func(ctx context.Context, req *claude.ToolPermissionRequest) (claude.PermissionResult, error) {
				return &claude.PermissionAllow{}, nil
			}),
			run: func(t *testing.T, h *harness) {
				p := permsOf(t, h)
				msgs := h.turn(t, "write hi.txt")
				reqs := p.requests()
				if len(reqs) != 1 {
					t.Fatalf("CanUseTool called %d times, want once", len(reqs))
				}
				req := reqs[0]
				if req.ToolName != "Bash" || req.DisplayName != "Bash" || req.ToolUseID != "toolu_allow" || req.RequestID == "" || len(req.Raw) == 0 {
					t.Errorf("request = %+v", req)
				}
				if got := inputString(t, req.Input, "command"); got != "echo hi > hi.txt" {
					t.Errorf("request input command = %q", got)
				}
				if req.Description != "Write hi.txt" {
					t.Errorf("request description = %q", req.Description)
				}
				if filepath.Base(req.BlockedPath) != "hi.txt" {
					t.Errorf("blocked path = %q", req.BlockedPath)
				}
				if h.Real() && filepath.Dir(req.BlockedPath) != h.CLI.Dir {
					t.Errorf("blocked path %q is not in the CLI's directory %q", req.BlockedPath, h.CLI.Dir)
				}
				if s := bashRuleSuggestion(req); s == nil || s.Behavior != claude.PermissionBehaviorAllow || s.Destination == "" || s.Rules[0].RuleContent == "" {
					t.Errorf("no allow-rule suggestion for Bash in %+v", req.Suggestions)
				}

				tu := toolUse(t, msgs, "toolu_allow")
				if tu.Name != "Bash" || inputString(t, tu.Input, "command") != "echo hi > hi.txt" {
					t.Errorf("assistant tool use = %+v", tu)
				}
				um, tr := toolResult(t, msgs, "toolu_allow")
				if tr.IsError {
					t.Errorf("tool result is an error: %s", tr.Text())
				}
				if br, err := claude.DecodeToolUseResult[claude.BashResult](um); err != nil || br.Interrupted {
					t.Errorf("Bash result = %+v, %v", br, err)
				}
				r := result(t, msgs)
				if r.IsError || r.Result != "wrote it" || len(r.PermissionDenials) != 0 {
					t.Errorf("result = %+v", r)
				}
				wantTypesInOrder(t, msgs, "*claude.AssistantMessage", "*claude.UserMessage", "*claude.AssistantMessage", "*claude.ResultMessage")
				if h.Real() {
					if b, err := os.ReadFile(filepath.Join(h.CLI.Dir, "hi.txt")); err != nil || string(b) != "hi\n" {
						t.Errorf("hi.txt = %q, %v; the command did not run", b, err)
					}
					reqs := h.API.MessagesRequests()
					if len(reqs) != 2 {
						t.Fatalf("the API got %d requests, want 2", len(reqs))
					}
					if b := reqs[1].Params.ToolResult("toolu_allow"); b == nil || b.IsError {
						t.Errorf("the API got tool result %+v", b)
					}
				}
			},
		},
		scenario{
			name:   "bash_allowed_changed_input",
			guards: "Allowing with UpdatedInput runs the host's command instead of the model's: the changed command's output is the tool result the API gets, while the assistant message keeps the model's input.",
			record: true,
			api: func() *claudetest.MessagesOptions {
				return &claudetest.MessagesOptions{Replies: []*claudetest.Reply{
					claudetest.ToolUseReply("toolu_change", "Bash", map[string]string{"command": "echo original > original.txt"}),
					claudetest.TextReply("done"),
				}}
			},
			opts: onPermission(func(ctx context.Context, req *claude.ToolPermissionRequest) (claude.PermissionResult, error) {
				return &claude.PermissionAllow{UpdatedInput: json.RawMessage(`{"command":"printf changed > changed.txt; cat changed.txt"}`)}, nil
			}),
			run: func(t *testing.T, h *harness) {
				p := permsOf(t, h)
				msgs := h.turn(t, "write a file")
				if n := len(p.requests()); n != 1 {
					t.Fatalf("CanUseTool called %d times, want once", n)
				}
				if got := inputString(t, toolUse(t, msgs, "toolu_change").Input, "command"); got != "echo original > original.txt" {
					t.Errorf("assistant tool use command = %q, want the model's", got)
				}
				um, tr := toolResult(t, msgs, "toolu_change")
				if tr.IsError || tr.Text() != "changed" {
					t.Errorf("tool result = %q (error %v), want the changed command's output", tr.Text(), tr.IsError)
				}
				if br, err := claude.DecodeToolUseResult[claude.BashResult](um); err != nil || br.Stdout != "changed" {
					t.Errorf("Bash result = %+v, %v", br, err)
				}
				if r := result(t, msgs); r.IsError {
					t.Errorf("result = %+v", r)
				}
				if h.Real() {
					if b, err := os.ReadFile(filepath.Join(h.CLI.Dir, "changed.txt")); err != nil || string(b) != "changed" {
						t.Errorf("changed.txt = %q, %v", b, err)
					}
					if _, err := os.Stat(filepath.Join(h.CLI.Dir, "original.txt")); !errors.Is(err, os.ErrNotExist) {
						t.Errorf("original.txt exists (%v): the model's command ran", err)
					}
					reqs := h.API.MessagesRequests()
					if len(reqs) != 2 {
						t.Fatalf("the API got %d requests, want 2", len(reqs))
					}
					if b := reqs[1].Params.ToolResult("toolu_change"); b == nil || b.IsError || blockText(b) != "changed" {
						t.Errorf("the API got tool result %+v", b)
					}
					// The history the model sees keeps its own call.
					if in := apiToolUseInput(reqs[1], "toolu_change"); inputString(t, in, "command") != "echo original > original.txt" {
						t.Errorf("the API's history has tool input %s", in)
					}
				}
			},
		},
		scenario{
			name:   "bash_denied",
			guards: "Denying with a message: the model gets an error tool_result carrying the message, the turn goes on to a successful result, and the result lists the denial.",
			record: true,
			api: func() *claudetest.MessagesOptions {
				return &claudetest.MessagesOptions{Replies: []*claudetest.Reply{
					claudetest.ToolUseReply("toolu_deny", "Bash", map[string]string{"command": "echo hi > hi.txt"}),
					claudetest.TextReply("understood"),
				}}
			},
			opts: onPermission(func(ctx context.Context, req *claude.ToolPermissionRequest) (claude.PermissionResult, error) {
				return &claude.PermissionDeny{Message: "no shell writes today"}, nil
			}),
			run: func(t *testing.T, h *harness) {
				p := permsOf(t, h)
				msgs := h.turn(t, "write hi.txt")
				if n := len(p.requests()); n != 1 {
					t.Fatalf("CanUseTool called %d times, want once", n)
				}
				um, tr := toolResult(t, msgs, "toolu_deny")
				if !tr.IsError || tr.Text() != "no shell writes today" {
					t.Errorf("tool result = %q (error %v), want the deny message as an error", tr.Text(), tr.IsError)
				}
				var te *claude.ToolUseError
				if _, err := claude.DecodeToolUseResult[claude.BashResult](um); !errors.As(err, &te) || !strings.Contains(te.Message, "no shell writes today") {
					t.Errorf("DecodeToolUseResult error = %v, want a *ToolUseError with the message", err)
				}
				r := result(t, msgs)
				if r.IsError || r.Subtype != claude.ResultSuccess || r.Result != "understood" {
					t.Errorf("result = %+v", r)
				}
				if len(r.PermissionDenials) != 1 {
					t.Fatalf("permission denials = %+v, want one", r.PermissionDenials)
				}
				if d := r.PermissionDenials[0]; d.ToolName != "Bash" || d.ToolUseID != "toolu_deny" || inputString(t, d.ToolInput, "command") != "echo hi > hi.txt" {
					t.Errorf("denial = %+v", d)
				}
				if h.Real() {
					if _, err := os.Stat(filepath.Join(h.CLI.Dir, "hi.txt")); !errors.Is(err, os.ErrNotExist) {
						t.Errorf("hi.txt exists (%v): a denied command ran", err)
					}
					reqs := h.API.MessagesRequests()
					if len(reqs) != 2 {
						t.Fatalf("the API got %d requests, want 2", len(reqs))
					}
					if b := reqs[1].Params.ToolResult("toolu_deny"); b == nil || !b.IsError || blockText(b) != "no shell writes today" {
						t.Errorf("the API got tool result %+v", b)
					}
				}
			},
		},
		scenario{
			name: "bash_denied_interrupt",
			guards: "Denying with Interrupt ends the turn at once: error_during_execution with terminal reason aborted_tools, a *ResultError whose Interrupted() is true, the denial listed, and no further API call. " +
				"The model-facing tool_result is the CLI's own rejection text, not the host's message (CLI 2.1.197 and 2.1.330).",
			record: true,
			api: func() *claudetest.MessagesOptions {
				return &claudetest.MessagesOptions{Replies: []*claudetest.Reply{
					claudetest.ToolUseReply("toolu_stop", "Bash", map[string]string{"command": "echo hi > hi.txt"}),
				}}
			},
			opts: onPermission(func(ctx context.Context, req *claude.ToolPermissionRequest) (claude.PermissionResult, error) {
				return &claude.PermissionDeny{Message: "stop everything", Interrupt: true}, nil
			}),
			run: func(t *testing.T, h *harness) {
				p := permsOf(t, h)
				if err := h.S.Send(h.Ctx, "write hi.txt"); err != nil {
					t.Fatal(err)
				}
				msgs, re := receiveTurnErr(t, h)
				if n := len(p.requests()); n != 1 {
					t.Fatalf("CanUseTool called %d times, want once", n)
				}
				if re == nil || !re.Interrupted() || re.Subtype != claude.ResultErrorDuringExecution || re.TerminalReason != claude.TerminalAbortedTools {
					t.Errorf("turn error = %#v, want an interrupted *ResultError", re)
				}
				r := result(t, msgs)
				if !r.IsError || len(r.PermissionDenials) != 1 || r.PermissionDenials[0].ToolUseID != "toolu_stop" {
					t.Errorf("result = %+v", r)
				}
				um, tr := toolResult(t, msgs, "toolu_stop")
				if !tr.IsError {
					t.Errorf("tool result is not an error: %s", tr.Text())
				}
				for i, m := range msgs {
					if m == claude.Message(um) && hasType[*claude.AssistantMessage](msgs[i:]) {
						t.Errorf("the model answered after the interrupt: %v", types(msgs))
					}
				}
				if h.Real() {
					if _, err := os.Stat(filepath.Join(h.CLI.Dir, "hi.txt")); !errors.Is(err, os.ErrNotExist) {
						t.Errorf("hi.txt exists (%v): a denied command ran", err)
					}
					if n := len(h.API.MessagesRequests()); n != 1 {
						t.Errorf("the API got %d requests, want 1: the turn went on after the interrupt", n)
					}
				}
			},
		},
		scenario{
			name:   "allow_session_rule",
			guards: "Allowing with the CLI's suggested rule, moved to the session destination, lets the next call of the same pattern run without asking again, and writes no settings file.",
			record: true,
			api: func() *claudetest.MessagesOptions {
				// Output redirects are path-checked on every call, whatever
				// the rules say, so the pattern here is a plain command.
				return &claudetest.MessagesOptions{Replies: []*claudetest.Reply{
					claudetest.ToolUseReply("toolu_git1", "Bash", map[string]string{"command": "git init -q repo1"}),
					claudetest.ToolUseReply("toolu_git2", "Bash", map[string]string{"command": "git init -q repo2"}),
					claudetest.TextReply("two repos"),
				}}
			},
			opts: onPermission(func(ctx context.Context, req *claude.ToolPermissionRequest) (claude.PermissionResult, error) {
				s := bashRuleSuggestion(req)
				if s == nil {
					return &claude.PermissionDeny{Message: "no rule suggested"}, nil
				}
				rule := *s
				rule.Destination = claude.DestinationSession
				return &claude.PermissionAllow{UpdatedPermissions: []claude.PermissionUpdate{rule}}, nil
			}),
			run: func(t *testing.T, h *harness) {
				if h.Real() {
					if _, err := exec.LookPath("git"); err != nil {
						t.Skip("git is not installed")
					}
				}
				p := permsOf(t, h)
				msgs := h.turn(t, "make two repos")
				reqs := p.requests()
				if len(reqs) != 1 || reqs[0].ToolUseID != "toolu_git1" {
					t.Fatalf("CanUseTool saw %d requests (%v), want one, for the first call", len(reqs), toolUseIDs(reqs))
				}
				if s := bashRuleSuggestion(reqs[0]); s == nil || !strings.HasPrefix(s.Rules[0].RuleContent, "git init") {
					t.Errorf("suggestions = %+v", reqs[0].Suggestions)
				}
				for _, id := range []string{"toolu_git1", "toolu_git2"} {
					if _, tr := toolResult(t, msgs, id); tr.IsError {
						t.Errorf("%s: tool result is an error: %s", id, tr.Text())
					}
				}
				if r := result(t, msgs); r.IsError || len(r.PermissionDenials) != 0 {
					t.Errorf("result = %+v", r)
				}
				if h.Real() {
					for _, repo := range []string{"repo1", "repo2"} {
						if _, err := os.Stat(filepath.Join(h.CLI.Dir, repo, ".git")); err != nil {
							t.Errorf("%s was not created: %v", repo, err)
						}
					}
					for _, f := range []string{"settings.local.json", "settings.json"} {
						if _, err := os.Stat(filepath.Join(h.CLI.Dir, ".claude", f)); !errors.Is(err, os.ErrNotExist) {
							t.Errorf(".claude/%s exists (%v): a session rule was persisted", f, err)
						}
					}
					if n := len(h.API.MessagesRequests()); n != 3 {
						t.Errorf("the API got %d requests, want 3", n)
					}
				}
			},
		},
		scenario{
			name:   "ask_user_question",
			guards: "AskUserQuestion arrives as a can_use_tool request; Questions decodes it and AnswerQuestions answers it, and the chosen label reaches the model in the tool_result.",
			record: true,
			api: func() *claudetest.MessagesOptions {
				return &claudetest.MessagesOptions{Replies: []*claudetest.Reply{
					claudetest.ToolUseReply("toolu_ask", "AskUserQuestion", map[string]any{"questions": []any{map[string]any{
						"question": "Which colour should the button be?", "header": "Colour", "multiSelect": false,
						"options": []any{
							map[string]string{"label": "Red", "description": "Warm and loud"},
							map[string]string{"label": "Blue", "description": "Calm"},
						},
					}}}),
					claudetest.TextReply("Blue it is"),
				}}
			},
			opts: onPermission(func(ctx context.Context, req *claude.ToolPermissionRequest) (claude.PermissionResult, error) {
				qs, err := req.Questions()
				if err != nil {
					return nil, err
				}
				answers := map[string]string{}
				for _, q := range qs {
					for _, o := range q.Options {
						if o.Label == "Blue" {
							answers[q.Question] = o.Label
						}
					}
				}
				return claude.AnswerQuestions(req, answers)
			}),
			run: func(t *testing.T, h *harness) {
				p := permsOf(t, h)
				msgs := h.turn(t, "style the button")
				reqs := p.requests()
				if len(reqs) != 1 || reqs[0].ToolName != "AskUserQuestion" || reqs[0].ToolUseID != "toolu_ask" {
					t.Fatalf("CanUseTool saw %d requests, want the AskUserQuestion call", len(reqs))
				}
				qs, err := reqs[0].Questions()
				if err != nil || len(qs) != 1 || qs[0].Question != "Which colour should the button be?" || qs[0].Header != "Colour" ||
					len(qs[0].Options) != 2 || qs[0].Options[1].Label != "Blue" || qs[0].Options[1].Description != "Calm" || qs[0].MultiSelect {
					t.Errorf("questions = %+v, %v", qs, err)
				}
				um, tr := toolResult(t, msgs, "toolu_ask")
				if tr.IsError || !strings.Contains(tr.Text(), `"Which colour should the button be?"="Blue"`) {
					t.Errorf("tool result = %q (error %v)", tr.Text(), tr.IsError)
				}
				if ar, err := claude.DecodeToolUseResult[claude.AskUserQuestionResult](um); err != nil || ar.Answers["Which colour should the button be?"] != "Blue" {
					t.Errorf("AskUserQuestion result = %+v, %v", ar, err)
				}
				if r := result(t, msgs); r.IsError || r.Result != "Blue it is" {
					t.Errorf("result = %+v", r)
				}
				if h.Real() {
					reqs := h.API.MessagesRequests()
					if len(reqs) != 2 {
						t.Fatalf("the API got %d requests, want 2", len(reqs))
					}
					if b := reqs[1].Params.ToolResult("toolu_ask"); b == nil || b.IsError || !strings.Contains(blockText(b), "Blue") {
						t.Errorf("the API got tool result %+v", b)
					}
				}
			},
		},
		scenario{
			name: "interrupt_pending_permission",
			guards: "Interrupt while CanUseTool is pending: the CLI withdraws the request (control_cancel_request), the callback's ctx is cancelled with control.ErrCancelled as its cause, the turn ends aborted, " +
				"the callback's late answer is dropped, and the next turn works.",
			record: true,
			api: func() *claudetest.MessagesOptions {
				return &claudetest.MessagesOptions{Replies: []*claudetest.Reply{
					claudetest.ToolUseReply("toolu_wait", "Bash", map[string]string{"command": "echo late > late.txt"}),
					claudetest.TextReply("still here"),
				}}
			},
			opts: onPermission(func(ctx context.Context, req *claude.ToolPermissionRequest) (claude.PermissionResult, error) {
				<-ctx.Done()
				// A late answer: the session must not send it.
				return &claude.PermissionAllow{}, nil
			}),
			run: func(t *testing.T, h *harness) {
				p := permsOf(t, h)
				if err := h.S.Send(h.Ctx, "write late.txt"); err != nil {
					t.Fatal(err)
				}
				req := wait(t, h, p.entered, "the permission request")
				if req.ToolUseID != "toolu_wait" {
					t.Errorf("request for %q", req.ToolUseID)
				}
				if err := h.S.Interrupt(h.Ctx); err != nil {
					t.Fatalf("Interrupt: %v", err)
				}
				msgs, re := receiveTurnErr(t, h)
				if re == nil || !re.Interrupted() {
					t.Errorf("turn error = %#v, want an interrupted *ResultError", re)
				}
				if cause := wait(t, h, p.returned, "the callback to return"); !errors.Is(cause, control.ErrCancelled) {
					t.Errorf("callback ctx cause = %v, want %v", cause, control.ErrCancelled)
				}
				if _, tr := toolResult(t, msgs, "toolu_wait"); !tr.IsError {
					t.Errorf("tool result is not an error: %s", tr.Text())
				}
				if h.Real() {
					if _, err := os.Stat(filepath.Join(h.CLI.Dir, "late.txt")); !errors.Is(err, os.ErrNotExist) {
						t.Errorf("late.txt exists (%v): the withdrawn call ran", err)
					}
					if n := len(h.API.MessagesRequests()); n != 1 {
						t.Errorf("the API got %d requests before the next turn, want 1", n)
					}
				}

				msgs = h.turn(t, "are you there?")
				if r := result(t, msgs); r.IsError || r.Result != "still here" {
					t.Errorf("next turn's result = %+v", r)
				}
				if n := len(p.requests()); n != 1 {
					t.Errorf("CanUseTool called %d times, want once", n)
				}
				if h.Real() {
					reqs := h.API.MessagesRequests()
					if len(reqs) != 2 || !strings.Contains(reqs[1].Params.LastUser().Text(), "are you there?") {
						t.Errorf("the API got %d requests; want a second one with the next prompt", len(reqs))
					}
				}
			},
		},
		scenario{
			name:   "set_permission_mode",
			guards: "SetPermissionMode(acceptEdits) lets a Write run without asking the host and is reported by a system/status message; bypassPermissions without the launch flag is refused with a *ControlError.",
			record: true,
			api: func() *claudetest.MessagesOptions {
				return &claudetest.MessagesOptions{Replies: []*claudetest.Reply{
					claudetest.ToolUseReply("toolu_write", "Write", map[string]string{"file_path": "notes.txt", "content": "accepted\n"}),
					claudetest.TextReply("written"),
				}}
			},
			opts: onPermission(func(ctx context.Context, req *claude.ToolPermissionRequest) (claude.PermissionResult, error) {
				return &claude.PermissionDeny{Message: "the host should not have been asked"}, nil
			}),
			run: func(t *testing.T, h *harness) {
				p := permsOf(t, h)
				if err := h.S.SetPermissionMode(h.Ctx, claude.PermissionModeAcceptEdits); err != nil {
					t.Fatalf("SetPermissionMode(acceptEdits): %v", err)
				}
				err := h.S.SetPermissionMode(h.Ctx, claude.PermissionModeBypassPermissions)
				var ce *claude.ControlError
				if !errors.As(err, &ce) || ce.Subtype != "set_permission_mode" || ce.Message == "" {
					t.Errorf("SetPermissionMode(bypassPermissions) = %v, want a *ControlError", err)
				}
				msgs := h.turn(t, "write notes.txt")
				if reqs := p.requests(); len(reqs) != 0 {
					t.Errorf("CanUseTool was asked about %v in acceptEdits mode", toolUseIDs(reqs))
				}
				var mode claude.PermissionMode
				for _, s := range find[*claude.StatusMessage](msgs) {
					if s.PermissionMode != "" {
						mode = s.PermissionMode
					}
				}
				if mode != claude.PermissionModeAcceptEdits {
					t.Errorf("status permission mode = %q, want acceptEdits (messages %v)", mode, types(msgs))
				}
				um, tr := toolResult(t, msgs, "toolu_write")
				if tr.IsError {
					t.Errorf("Write failed: %s", tr.Text())
				}
				if wr, err := claude.DecodeToolUseResult[claude.WriteResult](um); err != nil || wr.Type != "create" || wr.Content != "accepted\n" {
					t.Errorf("Write result = %+v, %v", wr, err)
				}
				if r := result(t, msgs); r.IsError || len(r.PermissionDenials) != 0 {
					t.Errorf("result = %+v", r)
				}
				if h.Real() {
					if b, err := os.ReadFile(filepath.Join(h.CLI.Dir, "notes.txt")); err != nil || string(b) != "accepted\n" {
						t.Errorf("notes.txt = %q, %v", b, err)
					}
				}
			},
		},
		scenario{
			name:   "image_block",
			guards: "A user message with an image block (NewImageBlock) reaches the API as an image block with the same media type and base64 data.",
			record: true,
			api: func() *claudetest.MessagesOptions {
				return &claudetest.MessagesOptions{Replies: []*claudetest.Reply{claudetest.TextReply("a red square")}}
			},
			run: func(t *testing.T, h *harness) {
				img := tinyPNG(t)
				if err := h.S.SendMessage(h.Ctx, claude.NewUserMessage("What is in this image?", claude.NewImageBlock("image/png", img))); err != nil {
					t.Fatal(err)
				}
				msgs := h.receiveTurn(t)
				if r := result(t, msgs); r.IsError || r.Result != "a red square" {
					t.Errorf("result = %+v", r)
				}
				if !h.Real() {
					return
				}
				reqs := h.API.MessagesRequests()
				if len(reqs) != 1 {
					t.Fatalf("the API got %d requests, want 1", len(reqs))
				}
				u := reqs[0].Params.LastUser()
				if !strings.Contains(u.Text(), "What is in this image?") {
					t.Errorf("the API's user message lacks the prompt: %q", u.Text())
				}
				var images []json.RawMessage
				for _, b := range u.Content {
					if b.Type == claudetest.BlockTypeImage {
						images = append(images, b.Raw)
					}
				}
				if len(images) != 1 {
					t.Fatalf("the API got %d image blocks, want 1", len(images))
				}
				var blk struct {
					Source struct {
						Type      string `json:"type"`
						MediaType string `json:"media_type"`
						Data      string `json:"data"`
					} `json:"source"`
				}
				if err := json.Unmarshal(images[0], &blk); err != nil {
					t.Fatal(err)
				}
				if blk.Source.Type != "base64" || blk.Source.MediaType != "image/png" || blk.Source.Data != base64.StdEncoding.EncodeToString(img) {
					t.Errorf("the API got image source %s", images[0])
				}
			},
		},
		scenario{
			name: "big_tool_result",
			guards: "Big output: a Bash command printing 5 MiB is not handed over whole (the CLI saves it to a file, gives the model a preview and cuts tool_use_result.stdout short), " +
				"and a 5 MiB assistant text arrives as a stdout line of over 5 MiB, read whole.",
			record: false, // the 5 MiB lines have no place in testdata
			api: func() *claudetest.MessagesOptions {
				return &claudetest.MessagesOptions{Replies: []*claudetest.Reply{
					claudetest.ToolUseReply("toolu_big", "Bash", map[string]string{"command": `head -c 5242880 /dev/zero | tr '\0' x`}),
					{Content: []claudetest.ContentBlock{claudetest.TextBlock(bigText())}, ChunkSize: 256 << 10},
				}}
			},
			opts: func(o *claude.Options) {
				onPermission(func(ctx context.Context, req *claude.ToolPermissionRequest) (claude.PermissionResult, error) {
					return &claude.PermissionAllow{}, nil
				})(o)
				// The CLI keeps every Bash output in its temp dir,
				// /tmp/claude-UID unless told otherwise: keep these 5 MiB
				// in the test's throw-away HOME.
				if home := o.Env["HOME"]; home != "" {
					o.Env["CLAUDE_CODE_TMPDIR"] = home
				}
			},
			run: func(t *testing.T, h *harness) {
				const size = 5 << 20
				msgs := h.turn(t, "print a lot")
				um, tr := toolResult(t, msgs, "toolu_big")
				if tr.IsError {
					t.Fatalf("tool result is an error: %.200s", tr.Text())
				}
				br, err := claude.DecodeToolUseResult[claude.BashResult](um)
				if err != nil {
					t.Fatal(err)
				}
				if br.PersistedOutputSize != size || br.PersistedOutputPath == "" || len(br.Stdout) == 0 || len(br.Stdout) >= size {
					t.Errorf("Bash result: persisted %d bytes to %q, stdout %d bytes; want all %d persisted and stdout cut short",
						br.PersistedOutputSize, br.PersistedOutputPath, len(br.Stdout), size)
				}
				if !strings.Contains(tr.Text(), br.PersistedOutputPath) || len(tr.Text()) >= size {
					t.Errorf("tool result (%d bytes) does not point to the saved output: %.300s", len(tr.Text()), tr.Text())
				}
				if h.Real() {
					if fi, err := os.Stat(br.PersistedOutputPath); err != nil || fi.Size() != size {
						t.Errorf("saved output: %v, %v", fi, err)
					}
					reqs := h.API.MessagesRequests()
					if len(reqs) != 2 {
						t.Fatalf("the API got %d requests, want 2", len(reqs))
					}
					if b := reqs[1].Params.ToolResult("toolu_big"); b == nil || len(blockText(b)) >= size || !strings.Contains(blockText(b), br.PersistedOutputPath) {
						t.Errorf("the API got a tool result of %d bytes", len(blockText(b)))
					}
				}

				want := bigText()
				as := find[*claude.AssistantMessage](msgs)
				last := as[len(as)-1]
				if got := last.Text(); got != want {
					t.Errorf("assistant text: %d bytes, want the %d scripted", len(got), len(want))
				}
				if n := len(last.RawJSON()); n <= size {
					t.Errorf("assistant line is %d bytes, want over %d", n, size)
				}
				if r := result(t, msgs); r.IsError || r.Result != want {
					t.Errorf("result: error %v, %d bytes of text", r.IsError, len(r.Result))
				}
			},
		},
	)
}

// permCalls records one run's CanUseTool calls. A scenario's opts and run
// get the same *claude.Options, so the record is kept under that key.
type permCalls struct {
	decide claude.CanUseToolFunc
	// entered receives each request as the callback starts; returned
	// receives context.Cause of its ctx as it returns (nil when not
	// cancelled).
	entered  chan *claude.ToolPermissionRequest
	returned chan error

	mu   sync.Mutex
	reqs []*claude.ToolPermissionRequest
}

var permRuns sync.Map // *claude.Options -> *permCalls

// onPermission returns a scenario's opts: CanUseTool answers with decide,
// and permsOf gives run the record of the calls.
func onPermission(decide claude.CanUseToolFunc) func(*claude.Options) {
	return func(o *claude.Options) {
		p := &permCalls{decide: decide, entered: make(chan *claude.ToolPermissionRequest, 16), returned: make(chan error, 16)}
		permRuns.Store(o, p)
		o.CanUseTool = p.canUseTool
	}
}

func (p *permCalls) canUseTool(ctx context.Context, req *claude.ToolPermissionRequest) (claude.PermissionResult, error) {
	p.mu.Lock()
	p.reqs = append(p.reqs, req)
	p.mu.Unlock()
	select {
	case p.entered <- req:
	default:
	}
	res, err := p.decide(ctx, req)
	select {
	case p.returned <- context.Cause(ctx):
	default:
	}
	return res, err
}

func (p *permCalls) requests() []*claude.ToolPermissionRequest {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]*claude.ToolPermissionRequest(nil), p.reqs...)
}

func permsOf(t *testing.T, h *harness) *permCalls {
	t.Helper()
	v, ok := permRuns.Load(h.Opts)
	if !ok {
		t.Fatal("the scenario's opts did not call onPermission")
	}
	t.Cleanup(func() { permRuns.Delete(h.Opts) })
	return v.(*permCalls)
}

// wait receives from ch, failing the test after 30 s.
func wait[T any](t *testing.T, h *harness, ch <-chan T, what string) T {
	t.Helper()
	tm := time.NewTimer(30 * time.Second)
	defer tm.Stop()
	select {
	case v := <-ch:
		return v
	case <-tm.C:
	case <-h.Ctx.Done():
	}
	t.Fatalf("timed out waiting for %s", what)
	var zero T
	return zero
}

// receiveTurnErr collects a turn and the *ResultError it ended with, if
// any; other errors fail the test.
func receiveTurnErr(t *testing.T, h *harness) ([]claude.Message, *claude.ResultError) {
	t.Helper()
	var (
		msgs []claude.Message
		re   *claude.ResultError
	)
	for m, err := range h.S.ReceiveTurn(h.Ctx) {
		if err != nil && !errors.As(err, &re) {
			t.Fatalf("ReceiveTurn: %v (after %v)", err, types(msgs))
		}
		if m != nil {
			msgs = append(msgs, m)
		}
	}
	return msgs, re
}

// toolUse returns the assistant's tool call with the given id.
func toolUse(t *testing.T, msgs []claude.Message, id string) *claude.ToolUseBlock {
	t.Helper()
	for _, a := range find[*claude.AssistantMessage](msgs) {
		for _, tu := range a.ToolUses() {
			if tu.ID == id {
				return tu
			}
		}
	}
	t.Fatalf("no tool use %s in %v", id, types(msgs))
	return nil
}

// inputString returns a string member of a tool input.
func inputString(t *testing.T, input json.RawMessage, key string) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(input, &m); err != nil {
		t.Errorf("tool input %s: %v", input, err)
		return ""
	}
	s, _ := m[key].(string)
	return s
}

// bashRuleSuggestion returns the request's suggested allow rule for Bash.
func bashRuleSuggestion(req *claude.ToolPermissionRequest) *claude.PermissionUpdate {
	for i, s := range req.Suggestions {
		if s.Type == claude.PermissionAddRules && len(s.Rules) > 0 && s.Rules[0].ToolName == "Bash" {
			return &req.Suggestions[i]
		}
	}
	return nil
}

func toolUseIDs(reqs []*claude.ToolPermissionRequest) []string {
	var ids []string
	for _, r := range reqs {
		ids = append(ids, r.ToolName+":"+r.ToolUseID)
	}
	return ids
}

// blockText returns the text of a recorded API tool_result block.
func blockText(b *claudetest.ContentBlock) string {
	if b == nil {
		return ""
	}
	var s strings.Builder
	for _, c := range b.Content {
		s.WriteString(c.Text)
	}
	return s.String()
}

// apiToolUseInput returns the input of the tool_use block id in a
// recorded API request's history.
func apiToolUseInput(r *claudetest.Request, id string) json.RawMessage {
	for _, m := range r.Params.Messages {
		for _, b := range m.Content {
			if b.Type == claudetest.BlockTypeToolUse && b.ID == id {
				return b.Input
			}
		}
	}
	return nil
}

// tinyPNG returns a valid 2×2 red PNG.
func tinyPNG(t *testing.T) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 2, 2))
	for x := range 2 {
		for y := range 2 {
			img.Set(x, y, color.RGBA{R: 255, A: 255})
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// bigText is 5 MiB of numbered 64-byte lines, so that a cut or a shuffled
// chunk shows.
func bigText() string {
	var b strings.Builder
	b.Grow(5 << 20)
	for i := range (5 << 20) / 64 {
		fmt.Fprintf(&b, "%063d\n", i)
	}
	return b.String()
}
