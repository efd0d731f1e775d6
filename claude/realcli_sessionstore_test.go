package claude_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
)

// Session stores against the real CLI (both pinned versions emit
// transcript_mirror frames with --session-mirror): mirroring, resuming
// from the store on a "machine" that never ran the session (a fresh
// HOME), forks, and a failing store.

const storeSID = "5e55e55e-0b0e-4c0c-8d0d-0e0f10111213"

// storeOf returns the scenario's store, set by its opts.
func storeOf(h *harness) *claude.MemorySessionStore {
	return h.Opts.SessionStore.(*claude.MemorySessionStore)
}

// freshHome returns options that run the same CLI against the same fake
// API in a new HOME, in the scenario's working directory: another
// machine, as far as session files go.
func freshHome(t *testing.T, h *harness) *claude.Options {
	cli := claudetest.NewRealCLI(t, h.API)
	o := cli.Options()
	o.SkipVersionCheck = true
	o.Cwd = h.Opts.Cwd
	return o
}

// jsonEqual compares two JSON texts as values (a store may reorder keys).
func storeJSONEqual(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

// checkMirror asserts the store holds exactly the session file's lines
// (and a subagent's metadata file),
// in order, except the request plumbing, which the CLI keeps for its own
// debugging and does not write alike to both: 2.1.330 writes
// api-request, api-request-shape and api-request-blob (the raw API
// requests) to its file and leaves them out of the mirror, and 2.1.337
// mirrors api-request-route without writing it to the file.
func checkMirror(t *testing.T, store *claude.MemorySessionStore, path string, key claude.SessionKey) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var lines [][]byte
	for _, l := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		if !strings.HasPrefix(claude.SessionStoreEntry(l).Type(), "api-request") {
			lines = append(lines, l)
		}
	}
	all, _ := store.Load(context.Background(), key)
	// A subagent's metadata file (agent-<id>.meta.json) is mirrored as
	// agent_metadata entries in its transcript's stream; the last one
	// is the file.
	var got []claude.SessionStoreEntry
	var meta claude.SessionStoreEntry
	for _, e := range all {
		if strings.HasPrefix(e.Type(), "api-request") {
			continue
		}
		if e.Type() == "agent_metadata" {
			meta = e
			continue
		}
		got = append(got, e)
	}
	if meta != nil {
		var m map[string]any
		json.Unmarshal(meta, &m)
		delete(m, "type")
		mb, _ := json.Marshal(m)
		fb, err := os.ReadFile(strings.TrimSuffix(path, ".jsonl") + ".meta.json")
		if err != nil || !storeJSONEqual(mb, fb) {
			t.Errorf("agent_metadata %s, meta file %s (%v)", mb, fb, err)
		}
	}
	ok := len(got) == len(lines)
	for i := 0; ok && i < len(lines); i++ {
		ok = storeJSONEqual(got[i], lines[i])
	}
	if !ok {
		var types []string
		for _, e := range got {
			types = append(types, e.Type())
		}
		var ftypes []string
		for _, l := range lines {
			ftypes = append(ftypes, claude.SessionStoreEntry(l).Type())
		}
		t.Errorf("the store's %d entries differ from the file's %d lines:\nstore %v\nfile  %v", len(got), len(lines), types, ftypes)
	}
}

func init() {
	addScenarios(scenario{
		name: "session_store_mirror_resume",
		guards: `Options.SessionStore mirrors the transcript the CLI writes, line for line, to the store (transcript_mirror
frames never reach Receive); resuming with the store in a fresh HOME, where no file of the session exists,
loads it from the store, and the model sees the first turn; the resumed turn is mirrored to the same key.`,
		api: func() *claudetest.MessagesOptions {
			return &claudetest.MessagesOptions{Replies: []*claudetest.Reply{
				claudetest.TextReply("First answer: apples."),
				claudetest.TextReply("Resumed answer."),
			}}
		},
		opts: func(o *claude.Options) {
			o.SessionID = storeSID
			o.SessionStore = &claude.MemorySessionStore{}
		},
		run: func(t *testing.T, h *harness) {
			store := storeOf(h)
			for _, m := range h.turn(t, "first question") {
				if _, ok := m.(*claude.TranscriptMirrorMessage); ok {
					t.Error("a transcript_mirror frame reached Receive")
				}
			}
			if err := h.S.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			key := claude.SessionKey{ProjectKey: claude.ProjectKey(h.Opts.Cwd), SessionID: storeSID}
			path := claude.SessionFilePath(filepath.Join(h.CLI.Home, ".claude"), h.Opts.Cwd, storeSID)
			checkMirror(t, store, path, key)

			o := freshHome(t, h)
			o.Resume = storeSID
			o.SessionStore = store
			s2, err := claude.Connect(h.Ctx, o)
			if err != nil {
				t.Fatalf("Connect resuming from the store: %v", err)
			}
			defer s2.Close()
			h2 := *h
			h2.S = s2
			msgs := h2.turn(t, "second question")
			if r := result(t, msgs); r.SessionID != storeSID {
				t.Errorf("resumed session id %q", r.SessionID)
			}
			reqs := h.API.MessagesRequests()
			p := reqs[len(reqs)-1].Params
			if !p.Contains("first question") || !p.Contains("First answer: apples.") || !p.Contains("second question") {
				t.Errorf("the resumed request lacks the first turn: %s", reqs[len(reqs)-1].Body)
			}
			if err := s2.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			// The fresh HOME never got a file of the session: the CLI ran
			// in a temporary config directory, now removed.
			if _, err := os.Stat(claude.SessionFilePath(filepath.Join(o.Env["HOME"], ".claude"), h.Opts.Cwd, storeSID)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the fresh HOME has a session file: %v", err)
			}
			var texts []string
			for e, err := range claude.StoreReadSession(h.Ctx, store, key) {
				if err != nil {
					t.Fatal(err)
				}
				if u, ok := e.(*claude.UserEntry); ok {
					texts = append(texts, u.Text())
				}
			}
			if j := strings.Join(texts, "|"); !strings.Contains(j, "first question") || !strings.Contains(j, "second question") {
				t.Errorf("the store's prompts after the resumed turn: %q", texts)
			}
			list, err := claude.StoreListSessions(h.Ctx, store, key.ProjectKey)
			if err != nil || len(list) != 1 || list[0].FirstPrompt != "first question" || list[0].LastPrompt != "second question" {
				t.Errorf("StoreListSessions = %+v, %v", list, err)
			}
		},
	}, scenario{
		name: "session_store_fork_resume",
		guards: `ForkSession copies a closed session's file under a new id that the real CLI resumes with the whole
conversation; ForkSession in a store (after ImportSessionToStore) gives a fork that resumes from the store in a
fresh HOME.`,
		api: func() *claudetest.MessagesOptions {
			return &claudetest.MessagesOptions{Replies: []*claudetest.Reply{
				claudetest.TextReply("First answer: pears."),
				claudetest.TextReply("Fork one."),
				claudetest.TextReply("Fork two."),
			}}
		},
		opts: func(o *claude.Options) { o.SessionID = storeSID },
		run: func(t *testing.T, h *harness) {
			h.turn(t, "first question")
			if err := h.S.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			config := filepath.Join(h.CLI.Home, ".claude")
			forkID, err := claude.ForkSession(h.Ctx, storeSID, &claude.ForkSessionOptions{Dir: h.Opts.Cwd, ConfigDir: config})
			if err != nil {
				t.Fatal(err)
			}
			info, err := claude.ReadSessionInfo(claude.SessionFilePath(config, h.Opts.Cwd, forkID))
			if err != nil || !strings.HasSuffix(info.Title, " (fork)") {
				t.Errorf("fork info %+v, %v", info, err)
			}
			o := *h.Opts
			o.Transport, o.SessionID, o.Resume = nil, "", forkID
			s2, err := claude.Connect(h.Ctx, &o)
			if err != nil {
				t.Fatalf("resuming the fork: %v", err)
			}
			h2 := *h
			h2.S = s2
			if r := result(t, h2.turn(t, "fork question")); r.SessionID != forkID {
				t.Errorf("fork resumed as %q, want %q", r.SessionID, forkID)
			}
			s2.Close()
			reqs := h.API.MessagesRequests()
			if p := reqs[len(reqs)-1].Params; !p.Contains("first question") || !p.Contains("First answer: pears.") {
				t.Errorf("the fork's request lacks the first turn: %s", reqs[len(reqs)-1].Body)
			}

			store := &claude.MemorySessionStore{}
			if err := claude.ImportSessionToStore(h.Ctx, storeSID, store, &claude.ImportSessionOptions{Dir: h.Opts.Cwd, ConfigDir: config}); err != nil {
				t.Fatal(err)
			}
			storeFork, err := claude.ForkSession(h.Ctx, storeSID, &claude.ForkSessionOptions{Dir: h.Opts.Cwd, SessionStore: store, Title: "Stored fork"})
			if err != nil {
				t.Fatal(err)
			}
			o3 := freshHome(t, h)
			o3.Resume = storeFork
			o3.SessionStore = store
			s3, err := claude.Connect(h.Ctx, o3)
			if err != nil {
				t.Fatalf("resuming the stored fork: %v", err)
			}
			defer s3.Close()
			h3 := *h
			h3.S = s3
			if r := result(t, h3.turn(t, "stored fork question")); r.SessionID != storeFork {
				t.Errorf("stored fork resumed as %q, want %q", r.SessionID, storeFork)
			}
			reqs = h.API.MessagesRequests()
			if p := reqs[len(reqs)-1].Params; !p.Contains("first question") || !p.Contains("First answer: pears.") || p.Contains("Fork one.") {
				t.Errorf("the stored fork's request: %s", reqs[len(reqs)-1].Body)
			}
		},
	}, scenario{
		name: "session_store_mirror_error",
		guards: `A SessionStore whose Append keeps failing gets its attempts, then the session yields a
*MirrorErrorMessage naming the session's key, and the session goes on with the next turn.`,
		api: func() *claudetest.MessagesOptions {
			return &claudetest.MessagesOptions{Replies: []*claudetest.Reply{
				claudetest.TextReply("One."),
				claudetest.TextReply("Two."),
			}}
		},
		opts: func(o *claude.Options) {
			o.SessionID = storeSID
			o.SessionStore = &recordingStore{fail: errors.New("bucket unavailable")}
			o.SessionStoreFlush = claude.SessionStoreFlushEager
		},
		run: func(t *testing.T, h *harness) {
			var me *claude.MirrorErrorMessage
			if got := find[*claude.MirrorErrorMessage](h.turn(t, "first")); len(got) > 0 {
				me = got[0]
			}
			for me == nil {
				ctx, cancel := context.WithTimeout(h.Ctx, 30*time.Second)
				for m, err := range h.S.Receive(ctx) {
					if err != nil {
						cancel()
						t.Fatalf("waiting for a mirror error: %v", err)
					}
					if x, ok := m.(*claude.MirrorErrorMessage); ok {
						me = x
						break
					}
				}
				cancel()
			}
			if !strings.Contains(me.Error, "bucket unavailable") || me.Key.SessionID != storeSID || me.Key.ProjectKey != claude.ProjectKey(h.Opts.Cwd) {
				t.Errorf("mirror error %+v", me)
			}
			msgs := h.turn(t, "second")
			if !strings.Contains(assistantText(msgs), "Two.") {
				t.Errorf("the session did not go on: %q", assistantText(msgs))
			}
		},
	}, scenario{
		name: "session_store_subagent",
		guards: `A subagent's transcript is mirrored under its own key (Subpath "subagents/agent-<id>"), equal to the
file the CLI wrote for it, and StoreListSubagents lists it as ListSubagents does for files.`,
		api: func() *claudetest.MessagesOptions {
			return &claudetest.MessagesOptions{Respond: func(r *claudetest.Request) *claudetest.Reply {
				switch {
				case r.Subagent():
					return claudetest.TextReply("SUB: done")
				case r.Params.ToolResult("toolu_store_agent") != nil:
					return claudetest.TextReply("main: done")
				default:
					return claudetest.ToolUseReply("toolu_store_agent", "Agent", map[string]any{
						"description": "Look around", "prompt": "Say done", "subagent_type": "general-purpose", "run_in_background": false,
					})
				}
			}}
		},
		opts: func(o *claude.Options) {
			o.SessionID = storeSID
			o.SessionStore = &claude.MemorySessionStore{}
		},
		run: func(t *testing.T, h *harness) {
			store := storeOf(h)
			msgs := h.turn(t, "use a subagent")
			if r := result(t, msgs); r.Result != "main: done" {
				t.Errorf("result %q", r.Result)
			}
			if err := h.S.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			path := claude.SessionFilePath(filepath.Join(h.CLI.Home, ".claude"), h.Opts.Cwd, storeSID)
			onDisk, err := claude.ListSubagents(path)
			if err != nil || len(onDisk) != 1 {
				t.Fatalf("ListSubagents = %v, %v", onDisk, err)
			}
			key := claude.SessionKey{ProjectKey: claude.ProjectKey(h.Opts.Cwd), SessionID: storeSID}
			stored, err := claude.StoreListSubagents(h.Ctx, store, key)
			if err != nil || len(stored) != 1 || stored[0] != onDisk[0] {
				t.Fatalf("StoreListSubagents = %v, %v; on disk %v", stored, err, onDisk)
			}
			sub := key
			sub.Subpath = "subagents/agent-" + onDisk[0]
			checkMirror(t, store, claude.SubagentFilePath(path, onDisk[0]), sub)
			checkMirror(t, store, path, key)
		},
	}, scenario{
		name: "session_file_archive",
		guards: `ArchiveSession marks a closed session archived in ListSessions (the <id>/archived.json the CLI and the
TypeScript SDK keep); the real CLI still resumes it, and the prompt sent then unarchives it; UnarchiveSession clears
the mark.`,
		api: func() *claudetest.MessagesOptions {
			return &claudetest.MessagesOptions{Replies: []*claudetest.Reply{
				claudetest.TextReply("One."),
				claudetest.TextReply("Two."),
			}}
		},
		opts: func(o *claude.Options) { o.SessionID = storeSID },
		run: func(t *testing.T, h *harness) {
			h.turn(t, "first")
			if err := h.S.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			config := filepath.Join(h.CLI.Home, ".claude")
			archived := func() bool {
				t.Helper()
				l, err := claude.ListSessions(h.Opts.Cwd, &claude.ListSessionsOptions{ConfigDir: config})
				if err != nil || len(l) != 1 {
					t.Fatalf("ListSessions = %+v, %v", l, err)
				}
				return l[0].Archived
			}
			fo := &claude.SessionFileOptions{Dir: h.Opts.Cwd, ConfigDir: config}
			if err := claude.ArchiveSession(h.Ctx, storeSID, fo); err != nil {
				t.Fatal(err)
			}
			if !archived() {
				t.Fatal("not archived after ArchiveSession")
			}
			if err := claude.UnarchiveSession(h.Ctx, storeSID, fo); err != nil {
				t.Fatal(err)
			}
			if archived() {
				t.Fatal("archived after UnarchiveSession")
			}
			if err := claude.ArchiveSession(h.Ctx, storeSID, fo); err != nil {
				t.Fatal(err)
			}
			o := *h.Opts
			o.Transport, o.SessionID, o.Resume = nil, "", storeSID
			s2, err := claude.Connect(h.Ctx, &o)
			if err != nil {
				t.Fatalf("resuming an archived session: %v", err)
			}
			h2 := *h
			h2.S = s2
			h2.turn(t, "second")
			if err := s2.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			if archived() {
				t.Error("still archived after a prompt was sent in the session")
			}
		},
	})
}
