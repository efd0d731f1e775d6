package claude_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
)

// controlFake starts a session on a fake CLI that records each control
// request body and answers with answer(subtype), or as an idle CLI when
// answer returns nil.
func controlFake(t *testing.T, answer func(l *claudetest.Line) any) (*claude.Session, <-chan string) {
	t.Helper()
	bodies := make(chan string, 20)
	s := connect(t, nil, func(ctx context.Context, c *claudetest.CLI) error {
		if _, err := c.HandleInitialize(ctx); err != nil {
			return err
		}
		for {
			l, err := c.Read(ctx)
			if err != nil {
				return err
			}
			if l.Type != "control_request" {
				continue
			}
			bodies <- string(l.Request)
			if answer != nil {
				if a := answer(l); a != nil {
					if err := c.Respond(l.RequestID, a); err != nil {
						return err
					}
					continue
				}
			}
			if err := c.AnswerIdle(l); err != nil {
				if errors.Is(err, claudetest.ErrSessionEnded) {
					return nil
				}
				return err
			}
		}
	})
	return s, bodies
}

// TestControlMethodsIdle runs every typed method against the fake's idle
// answers (trimmed real ones): the request bodies are what the CLI
// expects, and the answers decode.
func TestControlMethodsIdle(t *testing.T) {
	ctx := testCtx(t)
	s, bodies := controlFake(t, nil)
	body := func(want string) {
		t.Helper()
		if got := <-bodies; got != want {
			t.Errorf("request body = %s, want %s", got, want)
		}
	}

	cu, err := s.ContextUsage(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	body(`{"subtype":"get_context_usage"}`)
	if cu.TotalTokens == 0 || cu.MaxTokens == 0 || len(cu.Categories) == 0 || cu.Categories[0].Name != "System prompt" || cu.Model == "" || len(cu.Raw) == 0 {
		t.Errorf("context usage = %s", cu.Raw)
	}
	if _, err := s.ContextUsage(ctx, &claude.ContextUsageParams{Detail: claude.ContextUsageDetailSummary}); err != nil {
		t.Fatal(err)
	}
	body(`{"subtype":"get_context_usage","detail":"summary"}`)

	u, err := s.Usage(ctx, &claude.UsageParams{SkipBehaviors: true})
	if err != nil {
		t.Fatal(err)
	}
	body(`{"subtype":"get_usage","skip_behaviors":true}`)
	if u.RateLimitsAvailable || u.SubscriptionType != "" || string(u.RateLimits) != "null" || u.Session.ModelUsage == nil {
		t.Errorf("usage = %s", u.Raw)
	}

	cost, err := s.SessionCost(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	body(`{"subtype":"get_session_cost"}`)
	if !strings.HasPrefix(cost.Text, "Total cost:") {
		t.Errorf("cost = %q", cost.Text)
	}

	st, err := s.Settings(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	body(`{"subtype":"get_settings"}`)
	if st.Applied.Model == "" || st.Applied.Effort != "high" || string(st.Effective) != "{}" || st.Sources == nil {
		t.Errorf("settings = %s", st.Raw)
	}

	v, err := s.BinaryVersion(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	body(`{"subtype":"get_binary_version"}`)
	if v.Version != claude.MinCLIVersion || v.BuildTime == "" {
		t.Errorf("version = %s", v.Raw)
	}

	sk, err := s.ReloadSkills(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	body(`{"subtype":"reload_skills"}`)
	if sk.Skills == nil {
		t.Errorf("skills = %s", sk.Raw)
	}

	rp, err := s.ReloadPlugins(ctx, &claude.ReloadPluginsParams{HoldOnCacheImpact: true})
	if err != nil {
		t.Fatal(err)
	}
	body(`{"subtype":"reload_plugins","hold_on_cache_impact":true}`)
	if len(rp.Commands) == 0 || len(rp.Agents) == 0 || rp.Plugins == nil || rp.ErrorCount != 0 {
		t.Errorf("reload plugins = %s", rp.Raw)
	}

	if err := s.RenameSession(ctx, "New title"); err != nil {
		t.Fatal(err)
	}
	body(`{"subtype":"rename_session","title":"New title"}`)
	if err := s.RenameSessionWith(ctx, &claude.RenameSessionParams{Title: "T", Source: claude.RenameSourceHost, SessionID: "sid"}); err != nil {
		t.Fatal(err)
	}
	body(`{"subtype":"rename_session","title":"T","source":"host","session_id":"sid"}`)
	if _, err := s.ReloadPlugins(ctx, &claude.ReloadPluginsParams{AddPlugins: []claude.PluginConfig{{Path: "/p", SkipMCPDiscovery: true}}}); err != nil {
		t.Fatal(err)
	}
	body(`{"subtype":"reload_plugins","add_plugins":[{"type":"local","path":"/p","skipMcpDiscovery":true}]}`)

	if err := s.ApplyFlagSettings(ctx, json.RawMessage(`{"model":"claude-sonnet-4-5"}`)); err != nil {
		t.Fatal(err)
	}
	body(`{"subtype":"apply_flag_settings","settings":{"model":"claude-sonnet-4-5"}}`)

	rw, err := s.RewindFiles(ctx, &claude.RewindFilesParams{UserMessageID: "u1", DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	body(`{"subtype":"rewind_files","user_message_id":"u1","dry_run":true}`)
	if rw.CanRewind || rw.Error != "File rewinding is not enabled." {
		t.Errorf("rewind = %s", rw.Raw)
	}

	ca, err := s.CancelAsyncMessage(ctx, &claude.CancelAsyncMessageParams{MessageUUID: "m1"})
	if err != nil {
		t.Fatal(err)
	}
	body(`{"subtype":"cancel_async_message","message_uuid":"m1"}`)
	if ca.Cancelled || string(ca.Raw) != `{"cancelled":false}` {
		t.Errorf("cancel = %s", ca.Raw)
	}

	if err := s.StopTask(ctx, "task1"); err != nil {
		t.Fatal(err)
	}
	body(`{"subtype":"stop_task","task_id":"task1"}`)

	bg, err := s.BackgroundTasks(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	body(`{"subtype":"background_tasks"}`)
	if bg.Backgrounded || string(bg.Raw) != `{}` {
		t.Errorf("background = %s", bg.Raw)
	}
	if _, err := s.BackgroundTasks(ctx, &claude.BackgroundTasksParams{ToolUseID: "toolu_1"}); err != nil {
		t.Fatal(err)
	}
	body(`{"subtype":"background_tasks","tool_use_id":"toolu_1"}`)
}

// TestControlMethodsValidate: requests that cannot mean anything fail
// before anything is sent.
func TestControlMethodsValidate(t *testing.T) {
	ctx := testCtx(t)
	s, bodies := controlFake(t, nil)
	if _, err := s.RewindFiles(ctx, nil); err == nil || !strings.Contains(err.Error(), "rewind_files") {
		t.Errorf("RewindFiles(nil) = %v", err)
	}
	if _, err := s.CancelAsyncMessage(ctx, &claude.CancelAsyncMessageParams{}); err == nil {
		t.Error("CancelAsyncMessage without uuid succeeded")
	}
	for _, bad := range []string{``, `[1]`, `null`, `"x"`, `{`} {
		if err := s.ApplyFlagSettings(ctx, json.RawMessage(bad)); err == nil {
			t.Errorf("ApplyFlagSettings(%q) succeeded", bad)
		}
	}
	if _, err := s.BinaryVersion(ctx, nil); err != nil { // a probe: nothing was sent before it
		t.Fatal(err)
	}
	if got := <-bodies; got != `{"subtype":"get_binary_version"}` {
		t.Errorf("first request sent = %s", got)
	}
}

// TestControlMethodsNewerShapes: a newer CLI's extra fields are kept in
// Raw; a field that changed type does not cost the answer.
func TestControlMethodsNewerShapes(t *testing.T) {
	ctx := testCtx(t)
	s, _ := controlFake(t, func(l *claudetest.Line) any {
		switch l.Subtype {
		case "get_binary_version":
			return json.RawMessage(`{"version":"9.9.9","buildTime":"x","oldestDesktopSdk":"0.3.280"}`)
		case "cancel_async_message":
			return json.RawMessage(`{"cancelled":true,"message_uuid":"m1"}`)
		case "get_context_usage":
			// totalTokens turned into an object.
			return json.RawMessage(`{"categories":[{"id":"messages","name":"Messages","tokens":5,"kind":"used"}],"totalTokens":{"n":5},"maxTokens":10}`)
		}
		return nil
	})
	v, err := s.BinaryVersion(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if v.Version != "9.9.9" || !strings.Contains(string(v.Raw), "oldestDesktopSdk") {
		t.Errorf("version = %s", v.Raw)
	}
	ca, err := s.CancelAsyncMessage(ctx, &claude.CancelAsyncMessageParams{MessageUUID: "m1"})
	if err != nil || !ca.Cancelled || ca.MessageUUID != "m1" {
		t.Errorf("cancel = %v, %v", ca != nil && ca.Cancelled, err)
	}
	cu, err := s.ContextUsage(ctx, nil)
	if err != nil {
		t.Fatalf("a changed field failed the call: %v", err)
	}
	if !strings.Contains(string(cu.Raw), `"totalTokens":{"n":5}`) {
		t.Errorf("raw = %s", cu.Raw)
	}
}

// TestControlMethodsErrors: a CLI error answer is a *ControlError naming
// the subtype.
func TestControlMethodsErrors(t *testing.T) {
	ctx := testCtx(t)
	s := connect(t, nil, func(ctx context.Context, c *claudetest.CLI) error {
		if _, err := c.HandleInitialize(ctx); err != nil {
			return err
		}
		for {
			l, err := c.Expect(ctx, "control_request")
			if err != nil {
				return err
			}
			if err := c.RespondError(l.RequestID, "Unsupported control request subtype: "+l.Subtype); err != nil {
				return err
			}
		}
	})
	_, err := s.Settings(ctx, nil)
	var ce *claude.ControlError
	if !errors.As(err, &ce) || ce.Subtype != "get_settings" {
		t.Errorf("Settings error = %v", err)
	}
	if err := s.StopTask(ctx, "t"); !errors.As(err, &ce) || ce.Subtype != "stop_task" {
		t.Errorf("StopTask error = %v", err)
	}
}

// TestEndSession: after end_session the CLI exits 0, and the session
// ends as cleanly as after stdin EOF: Receive ends without an error and
// Wait returns nil.
func TestEndSession(t *testing.T) {
	ctx := testCtx(t)
	s := connect(t, nil, claudetest.Echo)
	if err := s.Send(ctx, "hi"); err != nil {
		t.Fatal(err)
	}
	if _, errs := collect(t, s.ReceiveTurn(ctx)); len(errs) > 0 {
		t.Fatal(errs)
	}
	if err := s.EndSession(ctx, "done"); err != nil {
		t.Fatal(err)
	}
	msgs, errs := collect(t, s.Receive(ctx))
	if len(msgs) != 0 || len(errs) != 0 {
		t.Errorf("after end_session: messages %v, errors %v", msgs, errs)
	}
	if err := s.Wait(); err != nil {
		t.Errorf("Wait = %v", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("Close = %v", err)
	}
	if err := s.Send(ctx, "again"); !errors.Is(err, claude.ErrClosed) {
		t.Errorf("Send after the end = %v, want ErrClosed", err)
	}
}

// TestEndSessionRequestBody checks the reason is sent only when given.
func TestEndSessionRequestBody(t *testing.T) {
	ctx := testCtx(t)
	for reason, want := range map[string]string{"": `{"subtype":"end_session"}`, "bye": `{"subtype":"end_session","reason":"bye"}`} {
		s, bodies := controlFake(t, nil)
		if err := s.EndSession(ctx, reason); err != nil {
			t.Fatal(err)
		}
		if got := <-bodies; got != want {
			t.Errorf("body = %s, want %s", got, want)
		}
		if err := s.Wait(); err != nil {
			t.Errorf("Wait = %v", err)
		}
	}
}

// TestControlResultDecodeWarning: the warning for a result that does not
// fit its type names the subtype.
func TestControlResultDecodeWarning(t *testing.T) {
	ctx := testCtx(t)
	var logs syncWriter
	var b strings.Builder
	logs.w = &b
	o := &claude.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	s := connect(t, o, func(ctx context.Context, c *claudetest.CLI) error {
		if _, err := c.HandleInitialize(ctx); err != nil {
			return err
		}
		l, err := c.Expect(ctx, "control_request", "get_settings")
		if err != nil {
			return err
		}
		if err := c.Respond(l.RequestID, json.RawMessage(`{"applied":{"model":7}}`)); err != nil {
			return err
		}
		_, err = c.Read(ctx)
		return err
	})
	st, err := s.Settings(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(`{"applied":{"model":7}}`, string(st.Raw)); diff != "" {
		t.Error(diff)
	}
	logs.mu.Lock()
	defer logs.mu.Unlock()
	if !strings.Contains(b.String(), "subtype=get_settings") {
		t.Errorf("log = %q", b.String())
	}
}
