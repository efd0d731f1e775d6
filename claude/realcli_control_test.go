package claude_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
)

// Host→CLI control requests beyond the basic four, and the session files
// a session leaves behind.
func init() {
	addScenarios(
		scenario{
			name: "control_info",
			guards: `The informational and housekeeping requests decode against the real CLI: context usage, usage, cost,
settings, binary version, skill and plugin reloads, rename, flag settings (which switch the model of the next
API call), the no-op answers of rewind_files without checkpointing, cancel_async_message, stop_task and
background_tasks for unknown ids, and end_session, after which the CLI exits 0 and the session ends cleanly.`,
			record: true,
			api: func() *claudetest.MessagesOptions {
				return &claudetest.MessagesOptions{Replies: []*claudetest.Reply{claudetest.TextReply("pong"), claudetest.TextReply("on sonnet")}}
			},
			run: runControlInfo,
		},
		scenario{
			name: "control_rewind_files",
			guards: `With file checkpointing on (EnvEnableFileCheckpointing), RewindFiles to a user message's UUID reports in a
dry run what would change and then really restores the file the model wrote with the Write tool: to the
previous turn's content, then to not existing at all. An unknown message id is CanRewind false, not an error.`,
			record: true,
			api:    rewindAPI,
			opts: func(o *claude.Options) {
				o.PermissionMode = claude.PermissionModeAcceptEdits
				o.ReplayUserMessages = true
				if o.Env == nil {
					o.Env = map[string]string{}
				}
				o.Env[claude.EnvEnableFileCheckpointing] = "1"
			},
			run: runRewindFiles,
		},
		scenario{
			name: "control_cancel_async_message",
			guards: `A user message sent while a turn runs waits in the CLI's queue; CancelAsyncMessage with its UUID drops it
(cancelled true, then false when asked again, false for an unknown UUID) and it never reaches the model.`,
			record: true,
			api: func() *claudetest.MessagesOptions {
				return &claudetest.MessagesOptions{Replies: []*claudetest.Reply{
					{Content: []claudetest.ContentBlock{claudetest.TextBlock("thinking it over")}, StallAfterEvents: 3},
					claudetest.TextReply("after"),
				}}
			},
			run: runCancelAsyncMessage,
		},
		scenario{
			name: "control_background_stop_task",
			guards: `BackgroundTasks with a running Bash command's tool_use id moves it to the background (the turn goes on with a
"backgrounded" tool result), and StopTask with the task id from its TaskStartedMessage kills it: a
TaskNotificationMessage of status "stopped".`,
			record: true,
			api: func() *claudetest.MessagesOptions {
				return &claudetest.MessagesOptions{Replies: []*claudetest.Reply{
					claudetest.ToolUseReply("toolu_tail", "Bash", map[string]string{"command": "tail -f app.log", "description": "Follow the log"}),
					claudetest.TextReply("left it running"),
				}}
			},
			opts: func(o *claude.Options) {
				o.AllowedTools = []string{"Bash(tail *)"}
				if o.Cwd != "" {
					// tail may only read files in the working directory.
					if err := os.WriteFile(filepath.Join(o.Cwd, "app.log"), []byte("started\n"), 0o644); err != nil {
						panic(err)
					}
				}
			},
			run: runBackgroundStopTask,
		},
		scenario{
			name: "session_files",
			guards: `ListSessions finds the session a real CLI just ran in a directory whose name has dots, underscores and a
space, with its id, title, prompt and path; ReadSession reads back the prompt and the answer. (Also: a
summary ContextUsage makes no token counting requests on CLIs newer than 2.1.197.)`,
			// Not recorded: it reads what the process left on disk.
			api: func() *claudetest.MessagesOptions {
				return &claudetest.MessagesOptions{Replies: []*claudetest.Reply{claudetest.TextReply("Nothing yet.")}}
			},
			opts: func(o *claude.Options) {
				if o.Cwd != "" {
					o.Cwd = filepath.Join(o.Cwd, "my.project_dir v2")
					if err := os.MkdirAll(o.Cwd, 0o755); err != nil {
						panic(err)
					}
				}
			},
			run: runSessionFiles,
		},
	)
}

// checkContextUsage checks a context usage answer's shape. The summary
// breakdown of CLIs after 2.1.197 has no "Messages" row.
func checkContextUsage(t *testing.T, cu *claude.ContextUsageResult, wantMessages bool) {
	t.Helper()
	var names []string
	has := map[string]bool{}
	for _, c := range cu.Categories {
		names = append(names, c.Name)
		has[c.Name] = true
	}
	if !has["System prompt"] || !has["Free space"] || (wantMessages && !has["Messages"]) {
		t.Errorf("context usage categories %q", names)
	}
	if cu.TotalTokens <= 0 || cu.MaxTokens < cu.TotalTokens || cu.RawMaxTokens <= 0 || cu.Model == "" ||
		cu.APIUsage == nil || cu.APIUsage.InputTokens <= 0 {
		t.Errorf("context usage: total %d, max %d, raw max %d, model %q, API usage %+v",
			cu.TotalTokens, cu.MaxTokens, cu.RawMaxTokens, cu.Model, cu.APIUsage)
	}
}

func runControlInfo(t *testing.T, h *harness) {
	msgs := h.turn(t, "ping")
	if got := assistantText(msgs); got != "pong" {
		t.Fatalf("assistant text %q", got)
	}

	v, err := h.S.BinaryVersion(h.Ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if v.Version == "" || v.BuildTime == "" {
		t.Errorf("binary version = %s", v.Raw)
	}
	if init := find[*claude.InitMessage](msgs); len(init) == 1 && init[0].ClaudeCodeVersion != v.Version {
		t.Errorf("binary version %q, init says %q", v.Version, init[0].ClaudeCodeVersion)
	}

	before := 0
	if h.Real() {
		before = len(h.API.Requests())
	}
	cu, err := h.S.ContextUsage(h.Ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkContextUsage(t, cu, true)
	if h.Real() {
		// The full breakdown counts tokens through the Messages API.
		if n := len(h.API.Requests()) - before; n == 0 {
			t.Error("a full context usage made no token counting requests")
		}
	}

	u, err := h.S.Usage(h.Ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if u.Session.TotalCostUSD <= 0 || len(u.Session.ModelUsage) == 0 || u.RateLimitsAvailable || u.SubscriptionType != "" {
		t.Errorf("usage = %s (an API key has no plan limits)", u.Raw)
	}
	cost, err := h.S.SessionCost(h.Ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(cost.Text, "cost:") || !strings.Contains(cost.Text, "$") {
		t.Errorf("session cost text %q", cost.Text)
	}

	sk, err := h.S.ReloadSkills(h.Ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(sk.Skills) == 0 || sk.Skills[0].Name == "" {
		t.Errorf("skills = %+v", sk.Skills)
	}
	rp, err := h.S.ReloadPlugins(h.Ctx, &claude.ReloadPluginsParams{HoldOnCacheImpact: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(rp.Commands) == 0 || len(rp.Agents) == 0 || rp.Plugins == nil || rp.MCPServers == nil || rp.ErrorCount != 0 || rp.Held {
		t.Errorf("reload plugins = commands %d, agents %d, plugins %v, servers %v, errors %d, held %v",
			len(rp.Commands), len(rp.Agents), rp.Plugins, rp.MCPServers, rp.ErrorCount, rp.Held)
	}

	if err := h.S.RenameSession(h.Ctx, "Control tour"); err != nil {
		t.Fatal(err)
	}
	if err := h.S.ApplyFlagSettings(h.Ctx, json.RawMessage(`{"model":"claude-sonnet-4-5","permissions":{"allow":["Bash(ls *)"]}}`)); err != nil {
		t.Fatal(err)
	}
	st, err := h.S.Settings(h.Ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var flag *claude.SettingsSource
	for i := range st.Sources {
		if st.Sources[i].Source == "flagSettings" {
			flag = &st.Sources[i]
		}
	}
	if st.Applied.Model != "claude-sonnet-4-5" || flag == nil || !strings.Contains(string(flag.Settings), "Bash(ls *)") ||
		!strings.Contains(string(st.Effective), "claude-sonnet-4-5") {
		t.Errorf("settings after apply_flag_settings = %s", st.Raw)
	}

	// Without checkpointing, and for ids nobody knows, these say no.
	rw, err := h.S.RewindFiles(h.Ctx, &claude.RewindFilesParams{UserMessageID: "00000000-0000-4000-8000-00000000abcd", DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if rw.CanRewind || rw.Error != "File rewinding is not enabled." {
		t.Errorf("rewind without checkpointing = %s", rw.Raw)
	}
	ca, err := h.S.CancelAsyncMessage(h.Ctx, &claude.CancelAsyncMessageParams{MessageUUID: "00000000-0000-4000-8000-00000000abce"})
	if err != nil {
		t.Fatal(err)
	}
	if ca.Cancelled {
		t.Errorf("cancel of an unknown message = %s", ca.Raw)
	}
	if err := h.S.StopTask(h.Ctx, "no-such-task"); err != nil {
		t.Errorf("StopTask(unknown) = %v", err)
	}
	bg, err := h.S.BackgroundTasks(h.Ctx, &claude.BackgroundTasksParams{ToolUseID: "toolu_nothing"})
	if err != nil {
		t.Fatal(err)
	}
	if bg.Backgrounded || !strings.Contains(string(bg.Raw), `"backgrounded":false`) {
		t.Errorf("background an unknown tool call = %s", bg.Raw)
	}
	if bg, err = h.S.BackgroundTasks(h.Ctx, nil); err != nil {
		t.Fatal(err)
	}
	if bg.Backgrounded {
		t.Errorf("background all (none running) = %s", bg.Raw)
	}

	// The flag settings' model serves the next turn.
	msgs = h.turn(t, "which model?")
	if got := assistantText(msgs); got != "on sonnet" {
		t.Errorf("assistant text %q", got)
	}
	if h.Real() {
		reqs := h.API.MessagesRequests()
		if m := reqs[len(reqs)-1].Params.Model; m != "claude-sonnet-4-5" {
			t.Errorf("the turn after apply_flag_settings used model %q", m)
		}
	}
	for _, tc := range find[*claude.SessionTitleChangedMessage](msgs) {
		if tc.Title != "Control tour" {
			t.Errorf("title changed to %q", tc.Title)
		}
	}

	// end_session: the CLI answers, then exits 0 on its own.
	if err := h.S.EndSession(h.Ctx, "tour over"); err != nil {
		t.Fatal(err)
	}
	for m, err := range h.S.Receive(h.Ctx) {
		if err != nil {
			t.Errorf("Receive after end_session: %v (message %T)", err, m)
		}
	}
	if err := h.S.Wait(); err != nil {
		t.Errorf("Wait after end_session = %v, want nil (exit 0)", err)
	}
}

// rewindAPI writes notes.txt in each of two turns: "v1", then "v2".
func rewindAPI() *claudetest.MessagesOptions {
	return &claudetest.MessagesOptions{Respond: func(r *claudetest.Request) *claudetest.Reply {
		last := r.Params.LastUser()
		if last == nil {
			return nil
		}
		for _, b := range last.Content {
			if b.Type == claudetest.BlockTypeToolResult {
				switch b.ToolUseID {
				case "toolu_write_1":
					return claudetest.TextReply("wrote v1")
				case "toolu_write_2":
					return claudetest.TextReply("wrote v2")
				}
			}
		}
		if strings.Contains(last.Text(), "change it to v2") {
			return claudetest.ToolUseReply("toolu_write_2", "Write", map[string]string{"file_path": "notes.txt", "content": "v2\n"})
		}
		return claudetest.ToolUseReply("toolu_write_1", "Write", map[string]string{"file_path": "notes.txt", "content": "v1\n"})
	}}
}

func runRewindFiles(t *testing.T, h *harness) {
	notes := ""
	if h.Real() {
		notes = filepath.Join(h.CLI.Dir, "notes.txt")
	}
	onDisk := func(want string) {
		t.Helper()
		if !h.Real() {
			return
		}
		b, err := os.ReadFile(notes)
		switch {
		case want == "" && !errors.Is(err, os.ErrNotExist):
			t.Errorf("notes.txt: %q, %v; want no file", b, err)
		case want != "" && string(b) != want:
			t.Errorf("notes.txt: %q, %v; want %q", b, err, want)
		}
	}
	send := func(text, uuid, wantReply string) {
		t.Helper()
		m := claude.NewUserMessage(text)
		m.UUID = uuid
		if err := h.S.SendMessage(h.Ctx, m); err != nil {
			t.Fatal(err)
		}
		msgs := h.receiveTurn(t)
		if got := assistantText(msgs); got != wantReply {
			t.Fatalf("assistant text %q, want %q", got, wantReply)
		}
		var replay *claude.UserMessage
		for _, u := range find[*claude.UserMessage](msgs) {
			if u.IsReplay && u.Text() == text {
				replay = u
			}
		}
		switch {
		case replay == nil:
			t.Errorf("no replay of %q", text)
		case h.Real() && replay.UUID != uuid:
			// Transcripts renumber UUIDs: only the live run can compare.
			t.Errorf("replay of %q has uuid %s, want the host's %s", text, replay.UUID, uuid)
		}
	}
	const first, second = "6a1c2d3e-4a5b-4c6d-8e7f-90a1b2c3d4e1", "6a1c2d3e-4a5b-4c6d-8e7f-90a1b2c3d4e2"
	send("Create notes.txt saying v1", first, "wrote v1")
	onDisk("v1\n")
	send("Now change it to v2", second, "wrote v2")
	onDisk("v2\n")

	rewind := func(id string, dry bool) *claude.RewindFilesResult {
		t.Helper()
		r, err := h.S.RewindFiles(h.Ctx, &claude.RewindFilesParams{UserMessageID: id, DryRun: dry})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	// Back to before the second turn: v2 → v1.
	r := rewind(second, true)
	if !r.CanRewind || len(r.FilesChanged) != 1 || !strings.HasSuffix(r.FilesChanged[0], "/notes.txt") || r.Insertions != 1 || r.Deletions != 1 {
		t.Errorf("dry run to the second message = %s", r.Raw)
	}
	onDisk("v2\n")
	if r := rewind(second, false); !r.CanRewind || r.Error != "" {
		t.Errorf("rewind to the second message = %s", r.Raw)
	}
	onDisk("v1\n")
	// Back to before the first turn: the file did not exist.
	r = rewind(first, true)
	if !r.CanRewind || len(r.FilesChanged) != 1 || r.Deletions != 1 || r.Insertions != 0 {
		t.Errorf("dry run to the first message = %s", r.Raw)
	}
	onDisk("v1\n")
	if r := rewind(first, false); !r.CanRewind {
		t.Errorf("rewind to the first message = %s", r.Raw)
	}
	onDisk("")
	if r := rewind("00000000-0000-4000-8000-00000000dead", true); r.CanRewind || r.Error == "" {
		t.Errorf("rewind to an unknown message = %s", r.Raw)
	}
}

func runCancelAsyncMessage(t *testing.T, h *harness) {
	if err := h.S.Send(h.Ctx, "take your time"); err != nil {
		t.Fatal(err)
	}
	// The turn is running once its system/init is out; the API reply then
	// stalls mid-stream.
	for m, err := range h.S.Receive(h.Ctx) {
		if err != nil {
			t.Fatalf("waiting for the turn to start: %v", err)
		}
		if _, ok := m.(*claude.InitMessage); ok {
			break
		}
	}
	if h.Real() {
		// Only once the API call is under way is the turn surely past the
		// point where 2.1.330 may still fold a queued message in or start
		// the turn already aborted.
		if _, err := h.API.WaitMessages(h.Ctx, 1); err != nil {
			t.Fatal(err)
		}
	}
	q := claude.NewUserMessage("queued and then withdrawn")
	q.UUID = "7b1c2d3e-4a5b-4c6d-8e7f-90a1b2c3d4e5"
	if err := h.S.SendMessage(h.Ctx, q); err != nil {
		t.Fatal(err)
	}
	r, err := h.S.CancelAsyncMessage(h.Ctx, &claude.CancelAsyncMessageParams{MessageUUID: q.UUID})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Cancelled {
		t.Errorf("cancel of the queued message = %s", r.Raw)
	}
	if r.MessageUUID != "" && h.Real() && r.MessageUUID != q.UUID {
		t.Errorf("cancel names %q, want %q", r.MessageUUID, q.UUID)
	}
	if r, err := h.S.CancelAsyncMessage(h.Ctx, &claude.CancelAsyncMessageParams{MessageUUID: q.UUID}); err != nil {
		t.Fatal(err)
	} else if r.Cancelled {
		t.Errorf("second cancel = %s; want cancelled false", r.Raw)
	}
	if err := h.S.Interrupt(h.Ctx); err != nil {
		t.Fatal(err)
	}
	msgs := h.receiveTurn(t)
	if res := result(t, msgs); res.Subtype != claude.ResultErrorDuringExecution {
		t.Errorf("interrupted turn ended %s", res.Subtype)
	}
	for _, lc := range find[*claude.CommandLifecycleMessage](msgs) {
		if h.Real() && lc.CommandUUID == q.UUID && lc.State != "queued" && lc.State != "cancelled" {
			t.Errorf("the withdrawn message went %q", lc.State)
		}
	}

	// The next turn is the next message's alone.
	msgs = h.turn(t, "and now?")
	if got := assistantText(msgs); got != "after" {
		t.Errorf("assistant text %q", got)
	}
	for _, u := range find[*claude.UserMessage](msgs) {
		if strings.Contains(u.Text(), "withdrawn") {
			t.Errorf("the withdrawn message reached the turn: %s", u.RawJSON())
		}
	}
	if h.Real() {
		for _, r := range h.API.MessagesRequests() {
			if r.Params.Contains("withdrawn") {
				t.Errorf("the withdrawn message reached the API (request %d)", r.Seq)
			}
		}
	}
}

func runBackgroundStopTask(t *testing.T, h *harness) {
	if err := h.S.Send(h.Ctx, "run it"); err != nil {
		t.Fatal(err)
	}
	// A foreground Bash command becomes a task after a few seconds; the
	// CLI says so with task_started.
	var task *claude.TaskStartedMessage
	for m, err := range h.S.Receive(h.Ctx) {
		if err != nil {
			t.Fatalf("waiting for the command to become a task: %v", err)
		}
		if ts, ok := m.(*claude.TaskStartedMessage); ok && ts.ToolUseID == "toolu_tail" {
			task = ts
			break
		}
		if _, ok := m.(*claude.ResultMessage); ok {
			t.Fatal("the turn ended before the command became a task")
		}
	}
	// Should the CLI not be able to background the command at the very
	// moment it announced the task, ask again (a replay repeats the
	// recorded attempts).
	var bg *claude.BackgroundTasksResult
	for attempt := 1; ; attempt++ {
		var err error
		bg, err = h.S.BackgroundTasks(h.Ctx, &claude.BackgroundTasksParams{ToolUseID: "toolu_tail"})
		if err != nil {
			t.Fatal(err)
		}
		if bg.Backgrounded || attempt == 50 {
			break
		}
		if h.Real() {
			time.Sleep(100 * time.Millisecond)
		}
	}
	if !bg.Backgrounded {
		// The command would run, and the turn wait, forever.
		t.Fatalf("background the running command = %s", bg.Raw)
	}
	msgs := h.receiveTurn(t)
	var backgrounded bool
	for _, u := range find[*claude.UserMessage](msgs) {
		for _, tr := range u.ToolResults() {
			backgrounded = backgrounded || (tr.ToolUseID == "toolu_tail" && strings.Contains(tr.Text(), "backgrounded"))
		}
	}
	if !backgrounded || assistantText(msgs) != "left it running" {
		t.Errorf("turn after backgrounding: %v, text %q", types(msgs), assistantText(msgs))
	}

	if err := h.S.StopTask(h.Ctx, task.TaskID); err != nil {
		t.Fatal(err)
	}
	for m, err := range h.S.Receive(h.Ctx) {
		if err != nil {
			t.Fatalf("waiting for the stopped task's notification: %v", err)
		}
		if n, ok := m.(*claude.TaskNotificationMessage); ok && n.TaskID == task.TaskID {
			if n.Status != "stopped" {
				t.Errorf("task ended %q, want stopped", n.Status)
			}
			break
		}
	}
}

func runSessionFiles(t *testing.T, h *harness) {
	const prompt = "What is in the notes?"
	msgs := h.turn(t, prompt)
	res := result(t, msgs)
	if err := h.S.RenameSession(h.Ctx, "Notes chat"); err != nil {
		t.Fatal(err)
	}
	// The summary context usage is checked here, in a scenario that is not
	// recorded, because its answer is 26 KB of transcript.
	v, err := h.S.BinaryVersion(h.Ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	before := len(h.API.Requests())
	cu, err := h.S.ContextUsage(h.Ctx, &claude.ContextUsageParams{Detail: claude.ContextUsageDetailSummary})
	if err != nil {
		t.Fatal(err)
	}
	checkContextUsage(t, cu, false)
	// 2.1.197 ignores the detail and counts; later CLIs answer from what
	// they know.
	if n := len(h.API.Requests()) - before; v.Version != "2.1.197" && n != 0 {
		t.Errorf("a summary context usage made %d API requests", n)
	}

	h.S.Close() // the CLI flushes its session file as it exits

	config := filepath.Join(h.CLI.Home, ".claude")
	sessions, err := claude.ListSessions(h.Opts.Cwd, &claude.ListSessionsOptions{ConfigDir: config})
	if err != nil {
		t.Fatal(err)
	}
	if len(sessions) != 1 {
		t.Fatalf("%d sessions listed, want 1", len(sessions))
	}
	si := sessions[0]
	physical, _ := filepath.EvalSymlinks(h.Opts.Cwd)
	if si.ID != res.SessionID || si.Path != claude.SessionFilePath(config, h.Opts.Cwd, res.SessionID) ||
		si.FirstPrompt != prompt || si.LastPrompt != prompt || si.Title != "Notes chat" || si.Cwd != physical ||
		si.Size == 0 || si.ModTime.IsZero() || si.CreatedAt.IsZero() || si.Version == "" {
		t.Errorf("session info = %+v (result session %s)", si, res.SessionID)
	}
	if want := "my-project-dir-v2"; !strings.HasSuffix(filepath.Base(filepath.Dir(si.Path)), want) {
		t.Errorf("project folder %s does not end in %s", filepath.Dir(si.Path), want)
	}

	var user *claude.UserEntry
	var answer string
	for e, err := range claude.ReadSession(si.Path) {
		if err != nil {
			t.Fatal(err)
		}
		switch e := e.(type) {
		case *claude.UserEntry:
			if user == nil && e.Text() == prompt {
				user = e
			}
		case *claude.AssistantEntry:
			answer += e.Text()
			if user != nil && e.ParentUUID == "" {
				t.Errorf("assistant entry without parent: %s", e.Raw)
			}
		}
	}
	if user == nil {
		t.Errorf("no entry with the prompt %q", prompt)
	} else if user.SessionID != res.SessionID || user.Timestamp.IsZero() {
		t.Errorf("prompt entry = %s", user.Raw)
	}
	if answer != "Nothing yet." {
		t.Errorf("answer read back %q", answer)
	}
}
