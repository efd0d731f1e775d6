package claude_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/tetherhq/tether/claude"
)

// The session files under testdata/sessions were written by real CLIs
// running TestRealCLI-style sessions (two turns, each writing notes.txt
// with the Write tool, then rename_session), with the temporary working
// directories renamed to /home/user/demo.app_v2 (CLI 2.1.197) and
// /home/user/notes_app (CLI 2.1.330). The 2.1.330 file was trimmed of
// its api-request-shape, api-request-blob and prompt_snapshot lines,
// 100 KB of request plumbing that only ever decodes as unknown.
const (
	testConfigDir = "testdata/sessions"
	demoCwd       = "/home/user/demo.app_v2"
	demoID        = "b730704e-2b4a-4c8c-9e6e-9e0dc7398f89"
	notesCwd      = "/home/user/notes_app"
	notesID       = "2f97b067-c6a0-41e3-837f-c82348e229a9"
)

func TestProjectDir(t *testing.T) {
	for cwd, want := range map[string]string{
		// Dots, underscores and spaces become dashes too.
		"/home/user/demo.app_v2": "-home-user-demo-app-v2",
		"/a b/c-d":               "-a-b-c-d",
		// Seen from CLI 2.1.197 in a TestRealCLI run.
		"/tmp/TestRealCLIzz_explore3120562250/002": "-tmp-TestRealCLIzz-explore3120562250-002",
		// A character outside the BMP is two UTF-16 code units, so two dashes.
		"/x/é😀": "-x----",
		// Seen from CLI 2.1.197 and 2.1.330: past 200 characters the name
		// is cut and a hash of the whole path appended.
		"/tmp/tether-long/" + strings.Repeat("a_b.c", 30) + "/" + strings.Repeat("x", 20) + "/Ünïcode😀dir": "-tmp-tether-long-" +
			strings.Repeat("a-b-c", 30) + "-xxxxxxxxxxxxxxxxxxxx--n-code--di-3iukpt",
	} {
		if got := filepath.Base(claude.ProjectDir("/cfg", cwd)); got != want {
			t.Errorf("ProjectDir(%q) = %q, want %q", cwd, got, want)
		}
	}
	if got, want := claude.SessionFilePath("/cfg", demoCwd, demoID), "/cfg/projects/-home-user-demo-app-v2/"+demoID+".jsonl"; got != want {
		t.Errorf("SessionFilePath = %q, want %q", got, want)
	}
}

// TestProjectDirSymlink: the CLI sees its working directory without
// symbolic links, so a session run in a link's target is found from the
// link.
func TestProjectDirSymlink(t *testing.T) {
	real := t.TempDir()
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(real, link); err != nil {
		t.Skip(err)
	}
	realPhysical, err := filepath.EvalSymlinks(real)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := claude.ProjectDir("/cfg", link), claude.ProjectDir("/cfg", realPhysical); got != want {
		t.Errorf("through the link %q, directly %q", got, want)
	}
}

func TestConfigDir(t *testing.T) {
	t.Setenv(claude.EnvConfigDir, "/somewhere/else")
	if d, err := claude.ConfigDir(); err != nil || d != "/somewhere/else" {
		t.Errorf("ConfigDir = %q, %v", d, err)
	}
	t.Setenv(claude.EnvConfigDir, "")
	t.Setenv("HOME", "/home/u")
	if d, err := claude.ConfigDir(); err != nil || d != "/home/u/.claude" {
		t.Errorf("ConfigDir = %q, %v", d, err)
	}
}

func TestListSessionsTestdata(t *testing.T) {
	ignore := cmpopts.IgnoreFields(claude.SessionInfo{}, "ModTime")
	for _, tc := range []struct {
		cwd  string
		want claude.SessionInfo
	}{
		{demoCwd, claude.SessionInfo{
			ID: demoID, Path: filepath.Join(testConfigDir, "projects", "-home-user-demo-app-v2", demoID+".jsonl"), Size: 15895,
			CreatedAt: time.Date(2026, 11, 22, 23, 14, 10, 555e6, time.UTC), Title: "Rewind demo",
			FirstPrompt: "Create notes.txt saying v1", LastPrompt: "Now change it to v2",
			Cwd: demoCwd, GitBranch: "HEAD", Version: "2.1.197", Entrypoint: "sdk-go",
		}},
		{notesCwd, claude.SessionInfo{
			ID: notesID, Path: filepath.Join(testConfigDir, "projects", "-home-user-notes-app", notesID+".jsonl"), Size: 41808,
			CreatedAt: time.Date(2026, 11, 22, 23, 14, 18, 91e6, time.UTC), Title: "Rewind demo",
			FirstPrompt: "Create notes.txt saying v1", LastPrompt: "Now change it to v2",
			Cwd: notesCwd, GitBranch: "HEAD", Version: "2.1.330", Entrypoint: "sdk-go",
		}},
	} {
		got, err := claude.ListSessions(tc.cwd, &claude.ListSessionsOptions{ConfigDir: testConfigDir})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 {
			t.Fatalf("%s: %d sessions, want 1", tc.cwd, len(got))
		}
		if diff := cmp.Diff(tc.want, got[0], ignore); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.cwd, diff)
		}
		if got[0].ModTime.IsZero() {
			t.Error("no ModTime")
		}
	}
}

func TestListSessionsNone(t *testing.T) {
	for _, cfg := range []string{testConfigDir, t.TempDir(), filepath.Join(t.TempDir(), "missing")} {
		got, err := claude.ListSessions("/nowhere", &claude.ListSessionsOptions{ConfigDir: cfg})
		if err != nil || got == nil || len(got) != 0 {
			t.Errorf("config %s: %v, %v; want an empty list", cfg, got, err)
		}
	}
}

// copySession copies a testdata session file to the session file path
// of cwd under cfg, with the given modification time.
func copySession(t *testing.T, cfg, cwd, src string, mtime time.Time) string {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	dst := claude.SessionFilePath(cfg, cwd, strings.TrimSuffix(filepath.Base(src), ".jsonl"))
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(dst, mtime, mtime); err != nil {
		t.Fatal(err)
	}
	return dst
}

func TestListSessionsOrderAndLimit(t *testing.T) {
	cfg := t.TempDir()
	cwd := "/work/proj"
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	copySession(t, cfg, cwd, filepath.Join(testConfigDir, "projects", "-home-user-demo-app-v2", demoID+".jsonl"), t0)
	copySession(t, cfg, cwd, filepath.Join(testConfigDir, "projects", "-home-user-notes-app", notesID+".jsonl"), t0.Add(time.Hour))
	// Not session files: a folder, another extension.
	if err := os.MkdirAll(filepath.Join(claude.ProjectDir(cfg, cwd), "memory"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(claude.ProjectDir(cfg, cwd), "notes.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := claude.ListSessions(cwd, &claude.ListSessionsOptions{ConfigDir: cfg})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, s := range got {
		ids = append(ids, s.ID)
	}
	if diff := cmp.Diff([]string{notesID, demoID}, ids); diff != "" {
		t.Errorf("order, newest first (-want +got):\n%s", diff)
	}
	if !got[0].ModTime.Equal(t0.Add(time.Hour)) {
		t.Errorf("ModTime = %v", got[0].ModTime)
	}
	got, err = claude.ListSessions(cwd, &claude.ListSessionsOptions{ConfigDir: cfg, Limit: 1})
	if err != nil || len(got) != 1 || got[0].ID != notesID {
		t.Errorf("Limit 1: %+v, %v", got, err)
	}
}

// TestListSessionsTitles: a custom title wins over a generated one; CLI
// 2.1.330's sidecar title counts when the file has none; summaries are
// kept.
func TestListSessionsTitles(t *testing.T) {
	cfg := t.TempDir()
	cwd := "/p"
	dir := claude.ProjectDir(cfg, cwd)
	if err := os.MkdirAll(filepath.Join(dir, "s2"), 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"s1.jsonl": `{"type":"ai-title","aiTitle":"Generated","sessionId":"s1"}
{"type":"summary","summary":"Fixed the bug","leafUuid":"u9"}
{"type":"custom-title","customTitle":"Mine","sessionId":"s1"}
`,
		"s2.jsonl":             `{"type":"ai-title","aiTitle":"Generated","sessionId":"s2"}` + "\n",
		"s2/custom-title.json": `{"customTitle":"Sidecar"}`,
		"s3.jsonl":             `{"type":"ai-title","aiTitle":"Only generated","sessionId":"s3"}` + "\n",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := claude.ListSessions(cwd, &claude.ListSessionsOptions{ConfigDir: cfg})
	if err != nil {
		t.Fatal(err)
	}
	titles := map[string]string{}
	for _, s := range got {
		titles[s.ID] = s.Title
		if s.ID == "s1" && (s.Summary != "Fixed the bug" || s.DisplayTitle() != "Mine") {
			t.Errorf("s1 = %+v", s)
		}
	}
	if diff := cmp.Diff(map[string]string{"s1": "Mine", "s2": "Sidecar", "s3": "Only generated"}, titles); diff != "" {
		t.Errorf("titles (-want +got):\n%s", diff)
	}
}

func TestDisplayTitle(t *testing.T) {
	for _, tc := range []struct {
		si   claude.SessionInfo
		want string
	}{
		{claude.SessionInfo{Title: "t", Summary: "s", FirstPrompt: "p"}, "t"},
		{claude.SessionInfo{Summary: "s", FirstPrompt: "p"}, "s"},
		{claude.SessionInfo{FirstPrompt: "p"}, "p"},
		{claude.SessionInfo{}, ""},
	} {
		if got := tc.si.DisplayTitle(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.si, got, tc.want)
		}
	}
}

// entryKinds summarises entries as "type" or "type/detail" strings.
func entryKinds(t *testing.T, path string) []string {
	t.Helper()
	var out []string
	for e, err := range claude.ReadSession(path) {
		if err != nil {
			t.Fatalf("ReadSession: %v", err)
		}
		switch e := e.(type) {
		case *claude.UserEntry:
			if len(e.ToolResults()) > 0 {
				out = append(out, "user/tool_result")
			} else {
				out = append(out, "user/"+e.Text())
			}
		case *claude.AssistantEntry:
			if tu := e.ToolUses(); len(tu) > 0 {
				out = append(out, "assistant/tool_use "+tu[0].Name)
			} else {
				out = append(out, "assistant/"+e.Text())
			}
		case *claude.AttachmentEntry:
			out = append(out, "attachment/"+e.AttachmentType)
		case *claude.QueueOperationEntry:
			out = append(out, "queue/"+e.Operation)
		case *claude.FileHistorySnapshotEntry:
			out = append(out, "file-history-snapshot")
		case *claude.CustomTitleEntry:
			out = append(out, "custom-title/"+e.Title)
		case *claude.LastPromptEntry:
			out = append(out, "last-prompt/"+e.Prompt)
		case *claude.UnknownEntry:
			out = append(out, "unknown/"+e.Type)
		default:
			out = append(out, strings.TrimPrefix(fmt.Sprintf("%T", e), "*claude."))
		}
		if len(e.RawJSON()) == 0 {
			t.Errorf("%T has no raw line", e)
		}
	}
	return out
}

func TestReadSession197(t *testing.T) {
	path := filepath.Join(testConfigDir, "projects", "-home-user-demo-app-v2", demoID+".jsonl")
	want := []string{
		"queue/enqueue", "queue/dequeue", "user/Create notes.txt saying v1",
		"attachment/agent_listing_delta", "attachment/skill_listing", "file-history-snapshot",
		"assistant/tool_use Write", "file-history-snapshot", "user/tool_result", "assistant/wrote v1",
		"queue/enqueue", "queue/dequeue", "user/Now change it to v2", "assistant/tool_use Write",
		"file-history-snapshot", "custom-title/Rewind demo", "user/tool_result", "assistant/wrote v2",
		"last-prompt/Now change it to v2",
	}
	if diff := cmp.Diff(want, entryKinds(t, path)); diff != "" {
		t.Errorf("entries (-want +got):\n%s", diff)
	}

	var users []*claude.UserEntry
	var snaps []*claude.FileHistorySnapshotEntry
	for e, err := range claude.ReadSession(path) {
		if err != nil {
			t.Fatal(err)
		}
		switch e := e.(type) {
		case *claude.UserEntry:
			users = append(users, e)
		case *claude.FileHistorySnapshotEntry:
			snaps = append(snaps, e)
		case *claude.AssistantEntry:
			if e.Message.ID == "" || e.RequestID == "" || e.UUID == "" || e.ParentUUID == "" || e.Message.Usage == nil {
				t.Errorf("assistant entry = %+v", e)
			}
		}
	}
	// The prompt keeps the UUID the host sent it with: the id RewindFiles
	// takes.
	p := users[0]
	if p.UUID != "6f1c2d3e-4a5b-4c6d-8e7f-90a1b2c3d4e5" || p.ParentUUID != "" || p.SessionID != demoID ||
		p.Cwd != demoCwd || p.Version != "2.1.197" || p.Entrypoint != "sdk-go" || p.PromptID == "" ||
		p.PermissionMode != claude.PermissionModeAcceptEdits || p.Timestamp.IsZero() || p.IsMeta || p.IsSidechain {
		t.Errorf("prompt entry = %+v", p)
	}
	tr := users[1]
	if rs := tr.ToolResults(); len(rs) != 1 || rs[0].ToolUseID != "toolu_w1" || !strings.HasPrefix(rs[0].Text(), "File created successfully") {
		t.Errorf("tool result entry = %+v", tr)
	}
	if !strings.Contains(string(tr.ToolUseResult), `"type":"create"`) {
		t.Errorf("toolUseResult = %s", tr.ToolUseResult)
	}
	if len(snaps) != 3 || snaps[0].MessageID != p.UUID || snaps[0].IsSnapshotUpdate || !snaps[1].IsSnapshotUpdate ||
		!strings.Contains(string(snaps[1].Snapshot), "notes.txt") {
		t.Errorf("snapshots = %+v", snaps)
	}
}

func TestReadSession330(t *testing.T) {
	path := filepath.Join(testConfigDir, "projects", "-home-user-notes-app", notesID+".jsonl")
	want := []string{
		"queue/enqueue", "queue/dequeue", "user/Create notes.txt saying v1",
		"attachment/environment", "attachment/model", "attachment/deferred_tools_delta",
		"attachment/agent_listing_delta", "attachment/skill_listing", "file-history-snapshot", "unknown/atis-latch",
		"attachment/session_context", "attachment/date", "attachment/remote_session_change",
		"last-prompt/Create notes.txt saying v1", "unknown/atis-latch", "unknown/api-request", "unknown/tools-used",
		"assistant/tool_use Write", "last-prompt/Create notes.txt saying v1", "unknown/atis-latch", "unknown/file-history-delta",
		"user/tool_result", "unknown/api-request", "assistant/wrote v1", "last-prompt/Create notes.txt saying v1",
		"unknown/atis-latch", "queue/enqueue", "queue/dequeue", "user/Now change it to v2", "file-history-snapshot",
		"unknown/api-request", "assistant/tool_use Write", "user/tool_result", "unknown/api-request", "assistant/wrote v2",
		"custom-title/Rewind demo", "unknown/agent-name", "last-prompt/Now change it to v2", "unknown/cost-state",
	}
	if diff := cmp.Diff(want, entryKinds(t, path)); diff != "" {
		t.Errorf("entries (-want +got):\n%s", diff)
	}
}

// TestReadSessionDamaged: a torn line is reported with its line number
// and reading goes on; a known type with fields of unexpected types is
// kept as unknown.
func TestReadSessionDamaged(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.jsonl")
	body := `{"type":"user","message":{"role":"user","content":"hello"},"uuid":"u1","sessionId":"s"}

[1,2]
{"type":"custom-title","customTitle":42}
{"no_type":true}
{"type":"assistant","message":{"id":"m","role":"assistant","content":[{"type":"text","text":"hi"}]},"uuid":"a1","parentUuid":"u1"}
{"type":"user","message":{"ro`
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	var got []string
	for e, err := range claude.ReadSession(path) {
		var le *claude.LineError
		switch {
		case errors.As(err, &le):
			got = append(got, "error at line "+strconv.FormatInt(le.Line, 10))
		case err != nil:
			t.Fatal(err)
		default:
			switch e := e.(type) {
			case *claude.UserEntry:
				got = append(got, "user "+e.Text())
			case *claude.AssistantEntry:
				got = append(got, "assistant "+e.Text()+" after "+e.ParentUUID)
			case *claude.UnknownEntry:
				got = append(got, "unknown "+e.Type)
			}
		}
	}
	want := []string{"user hello", "error at line 3", "unknown custom-title", "unknown ", "assistant hi after u1", "error at line 7"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}

	// The summary still reads, around the damage.
	info, err := claude.ReadSessionInfo(path)
	if err != nil || info.FirstPrompt != "hello" || info.ID != "s" {
		t.Errorf("info = %+v, %v", info, err)
	}
}

func TestReadSessionMissing(t *testing.T) {
	n := 0
	for e, err := range claude.ReadSession(filepath.Join(t.TempDir(), "nope.jsonl")) {
		n++
		if e != nil || !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("got %v, %v; want fs.ErrNotExist", e, err)
		}
	}
	if n != 1 {
		t.Errorf("%d yields, want 1", n)
	}
	if _, err := claude.ReadSessionInfo("/nonexistent/x.jsonl"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadSessionInfo = %v", err)
	}
}

// TestReadSessionStop: breaking out of the loop stops reading.
func TestReadSessionStop(t *testing.T) {
	n := 0
	for range claude.ReadSession(filepath.Join(testConfigDir, "projects", "-home-user-demo-app-v2", demoID+".jsonl")) {
		n++
		if n == 2 {
			break
		}
	}
	if n != 2 {
		t.Errorf("n = %d", n)
	}
}

// TestFirstPromptSkips: tool results, CLI-made messages, slash-command
// records and interrupt markers are not prompts.
func TestFirstPromptSkips(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.jsonl")
	body := `{"type":"user","message":{"role":"user","content":"<command-name>/cost</command-name>"},"uuid":"1"}
{"type":"user","message":{"role":"user","content":"<local-command-stdout>Total cost</local-command-stdout>"},"uuid":"2"}
{"type":"user","message":{"role":"user","content":"Caveat: meta"},"isMeta":true,"uuid":"3"}
{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"x"}]},"uuid":"4"}
{"type":"user","message":{"role":"user","content":"sub prompt"},"isSidechain":true,"uuid":"5"}
{"type":"user","message":{"role":"user","content":"  the real one  "},"uuid":"6"}
{"type":"user","message":{"role":"user","content":[{"type":"text","text":"[Request interrupted by user]"}]},"uuid":"7"}
`
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	info, err := claude.ReadSessionInfo(path)
	if err != nil {
		t.Fatal(err)
	}
	if info.FirstPrompt != "the real one" || info.LastPrompt != "the real one" {
		t.Errorf("first %q, last %q", info.FirstPrompt, info.LastPrompt)
	}
}
