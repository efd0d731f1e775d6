package claude_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
)

// recordingStore wraps a MemorySessionStore, counting Appends and
// failing or panicking on demand.
type recordingStore struct {
	claude.MemorySessionStore
	mu      sync.Mutex
	appends []int // entries per Append call
	fail    error
	panics  bool
	calls   int
}

func (r *recordingStore) Append(ctx context.Context, key claude.SessionKey, entries []claude.SessionStoreEntry) error {
	r.mu.Lock()
	r.calls++
	fail, panics := r.fail, r.panics
	r.mu.Unlock()
	if panics {
		panic("store exploded")
	}
	if fail != nil {
		return fail
	}
	r.mu.Lock()
	r.appends = append(r.appends, len(entries))
	r.mu.Unlock()
	return r.MemorySessionStore.Append(ctx, key, entries)
}

func (r *recordingStore) Calls() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls
}

const mirrorSID = "11111111-2222-4333-8444-555555555555"

// mirrorScript is a fake CLI that, for each user message, writes two
// transcript_mirror frames (for the main transcript and a subagent's)
// and then a turn.
func mirrorScript(home string) claudetest.Script {
	proj := filepath.Join(home, ".claude", "projects", "-work-app")
	return func(ctx context.Context, c *claudetest.CLI) error {
		if _, err := c.HandleInitialize(ctx); err != nil {
			return err
		}
		for n := 0; ; n++ {
			u, err := c.ReadUser(ctx)
			if err != nil {
				return nil
			}
			text := claudetest.UserText(u.Raw)
			frame := func(path string, entries ...string) json.RawMessage {
				b, _ := json.Marshal(map[string]any{"type": "transcript_mirror", "filePath": path, "entries": json.RawMessage("[" + strings.Join(entries, ",") + "]")})
				return b
			}
			main := filepath.Join(proj, mirrorSID+".jsonl")
			sub := filepath.Join(proj, mirrorSID, "subagents", "agent-a1.jsonl")
			if err := c.Write(
				frame(main, fmt.Sprintf(`{"type":"user","uuid":"u%d","sessionId":%q,"message":{"role":"user","content":%q},"timestamp":"2026-11-24T00:00:0%dZ"}`, n, mirrorSID, text, n)),
				frame(sub, fmt.Sprintf(`{"type":"user","uuid":"s%d","isSidechain":true,"message":{"role":"user","content":"sub"}}`, n)),
				frame(main, fmt.Sprintf(`{"type":"assistant","uuid":"a%d","sessionId":%q,"message":{"role":"assistant","content":[{"type":"text","text":"ok"}]}}`, n, mirrorSID)),
				c.SystemInit(), c.AssistantText("ok"), c.ResultSuccess("ok"),
			); err != nil {
				return err
			}
		}
	}
}

func mirrorOptions(t *testing.T, store claude.SessionStore) *claude.Options {
	home := t.TempDir()
	return &claude.Options{
		Transport:    &claudetest.FakeCLI{Script: mirrorScript(home)},
		Env:          map[string]string{"HOME": home, claude.EnvConfigDir: ""},
		SessionStore: store,
	}
}

func TestSessionStoreMirrorFake(t *testing.T) {
	for _, flush := range []claude.SessionStoreFlush{"", claude.SessionStoreFlushBatched, claude.SessionStoreFlushEager} {
		t.Run(string(cmpOrFlush(flush)), func(t *testing.T) {
			store := &recordingStore{}
			o := mirrorOptions(t, store)
			o.SessionStoreFlush = flush
			o.Env[claude.EnvConfigDir] = filepath.Join(o.Env["HOME"], ".claude")
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			s, err := claude.Connect(ctx, o)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			for i := range 2 {
				if err := s.Send(ctx, fmt.Sprintf("prompt %d", i)); err != nil {
					t.Fatal(err)
				}
				for m, err := range s.ReceiveTurn(ctx) {
					if err != nil {
						t.Fatal(err)
					}
					if _, ok := m.(*claude.TranscriptMirrorMessage); ok {
						t.Error("a transcript_mirror frame reached Receive")
					}
				}
				if err := s.FlushSessionStore(ctx); err != nil {
					t.Fatal(err)
				}
				main, _ := store.Load(ctx, claude.SessionKey{ProjectKey: "-work-app", SessionID: mirrorSID})
				if len(main) != 2*(i+1) {
					t.Fatalf("after turn %d the store has %d main entries, want %d", i, len(main), 2*(i+1))
				}
			}
			s.Close()
			main, _ := store.Load(ctx, claude.SessionKey{ProjectKey: "-work-app", SessionID: mirrorSID})
			var uuids []string
			for _, e := range main {
				uuids = append(uuids, e.UUID())
			}
			if want := []string{"u0", "a0", "u1", "a1"}; !slices.Equal(uuids, want) {
				t.Errorf("main transcript uuids = %v, want %v", uuids, want)
			}
			if main[0].Type() != "user" || main[0].Timestamp().IsZero() {
				t.Errorf("entry accessors: type %q, timestamp %v", main[0].Type(), main[0].Timestamp())
			}
			sub, _ := store.Load(ctx, claude.SessionKey{ProjectKey: "-work-app", SessionID: mirrorSID, Subpath: "subagents/agent-a1"})
			if len(sub) != 2 {
				t.Errorf("subagent transcript has %d entries, want 2", len(sub))
			}
			// Batched: one Append per file per turn (frames of a file
			// joined). Eager may join frames that queued behind an Append,
			// but never merges turns.
			if flush != claude.SessionStoreFlushEager && !slices.Equal(store.appends, []int{2, 1, 2, 1}) {
				t.Errorf("batched appends = %v, want [2 1 2 1]", store.appends)
			}
			if flush == claude.SessionStoreFlushEager && len(store.appends) < 4 {
				t.Errorf("eager appends = %v, want at least 4 calls", store.appends)
			}
		})
	}
}

func cmpOrFlush(f claude.SessionStoreFlush) claude.SessionStoreFlush {
	if f == "" {
		return "default"
	}
	return f
}

// TestSessionStoreMirrorError: a store that keeps failing (or panics)
// gets 3 attempts per batch, then the session yields a
// *MirrorErrorMessage naming the key, and goes on.
func TestSessionStoreMirrorError(t *testing.T) {
	for name, store := range map[string]*recordingStore{
		"error": {fail: errors.New("disk on fire")},
		"panic": {panics: true},
	} {
		t.Run(name, func(t *testing.T) {
			o := mirrorOptions(t, store)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			s, err := claude.Connect(ctx, o)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if err := s.Send(ctx, "hello"); err != nil {
				t.Fatal(err)
			}
			var errs []*claude.MirrorErrorMessage
			for m, err := range s.Receive(ctx) {
				if err != nil && !errors.As(err, new(*claude.ResultError)) {
					t.Fatal(err)
				}
				if me, ok := m.(*claude.MirrorErrorMessage); ok {
					errs = append(errs, me)
					if len(errs) == 2 { // the main transcript and the subagent's
						break
					}
				}
			}
			if store.Calls() != 6 {
				t.Errorf("Append called %d times, want 3 attempts for each of 2 batches", store.Calls())
			}
			me := errs[0]
			want := "disk on fire"
			if name == "panic" {
				want = "store exploded"
			}
			if !strings.Contains(me.Error, want) || me.Key.ProjectKey != "-work-app" || me.Key.SessionID != mirrorSID || me.SessionID != mirrorSID {
				t.Errorf("mirror error = %+v", me)
			}
			if errs[1].Key.Subpath != "subagents/agent-a1" {
				t.Errorf("second mirror error key = %+v", errs[1].Key)
			}
			// The session goes on.
			msgs := turnMsgs(ctx, t, s, "again")
			if r := find[*claude.ResultMessage](msgs); len(r) != 1 {
				t.Errorf("second turn: %d results", len(r))
			}
		})
	}
}

func turnMsgs(ctx context.Context, t *testing.T, s *claude.Session, prompt string) []claude.Message {
	t.Helper()
	if err := s.Send(ctx, prompt); err != nil {
		t.Fatal(err)
	}
	var out []claude.Message
	for m, err := range s.ReceiveTurn(ctx) {
		if err != nil && !errors.As(err, new(*claude.ResultError)) {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}

// blockingStore's Load waits for its ctx (or forever, if told to ignore
// it).
type blockingStore struct {
	claude.MemorySessionStore
	ignoreCtx bool
	release   chan struct{}
}

func (b *blockingStore) Load(ctx context.Context, key claude.SessionKey) ([]claude.SessionStoreEntry, error) {
	if b.ignoreCtx {
		<-b.release
		return nil, nil
	}
	<-ctx.Done()
	return nil, ctx.Err()
}

func TestSessionStoreLoadTimeout(t *testing.T) {
	for _, ignore := range []bool{false, true} {
		t.Run(fmt.Sprint("ignoresCtx=", ignore), func(t *testing.T) {
			store := &blockingStore{ignoreCtx: ignore, release: make(chan struct{})}
			defer close(store.release)
			fake := &claudetest.FakeCLI{Script: claudetest.Echo}
			o := &claude.Options{Transport: fake, SessionStore: store, Resume: mirrorSID, SessionStoreLoadTimeout: 50 * time.Millisecond}
			_, err := claude.Connect(context.Background(), o)
			var se *claude.SessionStoreError
			if !errors.As(err, &se) || se.Op != "Load" || !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Connect = %v, want a *SessionStoreError for Load wrapping DeadlineExceeded", err)
			}
			if n := len(fake.Launches()); n != 0 {
				t.Errorf("the CLI was started %d times", n)
			}
		})
	}
}

func TestSessionStoreValidation(t *testing.T) {
	type lonely struct{ claude.SessionStore }
	store := &claude.MemorySessionStore{}
	for name, o := range map[string]*claude.Options{
		"no persistence":      {SessionStore: store, NoSessionPersistence: true},
		"checkpointing":       {SessionStore: store, EnableFileCheckpointing: true},
		"bad flush":           {SessionStore: store, SessionStoreFlush: "sometimes"},
		"negative timeout":    {SessionStore: store, SessionStoreLoadTimeout: -time.Second},
		"flush without store": {SessionStoreFlush: claude.SessionStoreFlushEager},
		"continue no lister":  {SessionStore: lonely{store}, Continue: true},
	} {
		o.Transport = &claudetest.FakeCLI{Script: claudetest.Echo}
		if _, err := claude.Connect(context.Background(), o); err == nil {
			t.Errorf("%s: Connect accepted the options", name)
		}
	}
}

// TestSessionStoreResumeMaterializes: Resume with a store writes the
// stored transcript (and subagent transcripts, their metadata, never an
// unsafe subpath) into a temporary config directory the CLI is pointed
// at, with the settings of the one it would have used, and removes it
// when the session ends.
func TestSessionStoreResumeMaterializes(t *testing.T) {
	ctx := context.Background()
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, ".claude"), 0o700); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(home, ".claude", "settings.json"), []byte(`{"model":"x"}`), 0o600)
	os.WriteFile(filepath.Join(home, ".claude", ".credentials.json"), []byte(`{"claudeAiOauth":{"accessToken":"a","refreshToken":"r"}}`), 0o600)
	os.WriteFile(filepath.Join(home, ".claude.json"), []byte(`{"hasCompletedOnboarding":true}`), 0o600)
	cwd := t.TempDir()
	pk := claude.ProjectKey(cwd)
	store := &claude.MemorySessionStore{}
	key := claude.SessionKey{ProjectKey: pk, SessionID: mirrorSID}
	main := []claude.SessionStoreEntry{
		claude.SessionStoreEntry(`{"type":"user","uuid":"u1","message":{"role":"user","content":"hi"}}`),
		claude.SessionStoreEntry("{\n  \"type\": \"assistant\",\n  \"uuid\": \"a1\"\n}"), // a store that pretty-prints
	}
	store.Append(ctx, key, main)
	sub := key
	sub.Subpath = "subagents/agent-x"
	store.Append(ctx, sub, []claude.SessionStoreEntry{
		claude.SessionStoreEntry(`{"type":"user","uuid":"s1","isSidechain":true}`),
		claude.SessionStoreEntry(`{"type":"agent_metadata","agentType":"general-purpose"}`),
	})
	evil := key
	evil.Subpath = "../../escape"
	store.Append(ctx, evil, []claude.SessionStoreEntry{claude.SessionStoreEntry(`{"type":"user"}`)})

	var seen struct {
		dir, mainFile, subFile, meta, settings, creds, global string
	}
	fake := &claudetest.FakeCLI{Script: func(ctx context.Context, c *claudetest.CLI) error {
		return claudetest.Echo(ctx, c)
	}}
	o := &claude.Options{Transport: fake, Cwd: cwd, Env: map[string]string{"HOME": home}, EnvOnly: true, SessionStore: store, Resume: mirrorSID}
	s, err := claude.Connect(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	l := fake.Launches()[0]
	for _, kv := range l.Env {
		if v, ok := strings.CutPrefix(kv, claude.EnvConfigDir+"="); ok {
			seen.dir = v
		}
	}
	if seen.dir == "" {
		t.Fatalf("no %s in the CLI's environment", claude.EnvConfigDir)
	}
	read := func(p string) string { b, _ := os.ReadFile(filepath.Join(seen.dir, p)); return string(b) }
	seen.mainFile = read(filepath.Join("projects", pk, mirrorSID+".jsonl"))
	seen.subFile = read(filepath.Join("projects", pk, mirrorSID, "subagents", "agent-x.jsonl"))
	seen.meta = read(filepath.Join("projects", pk, mirrorSID, "subagents", "agent-x.meta.json"))
	seen.settings = read("settings.json")
	seen.creds = read(".credentials.json")
	seen.global = read(".claude.json")
	if !slices.Contains(l.Args, "--resume="+mirrorSID) || !slices.Contains(l.Args, "--session-mirror") {
		t.Errorf("argv = %q", l.Args)
	}
	s.Close()

	if want := `{"type":"user","uuid":"u1","message":{"role":"user","content":"hi"}}` + "\n" + `{"type":"assistant","uuid":"a1"}` + "\n"; seen.mainFile != want {
		t.Errorf("materialized transcript:\n%s\nwant:\n%s", seen.mainFile, want)
	}
	if seen.subFile != `{"type":"user","uuid":"s1","isSidechain":true}`+"\n" || seen.meta != `{"agentType":"general-purpose"}` {
		t.Errorf("subagent: %q, meta %q", seen.subFile, seen.meta)
	}
	if seen.settings != `{"model":"x"}` || strings.Contains(seen.creds, "refreshToken") || !strings.Contains(seen.creds, `"accessToken":"a"`) || !strings.Contains(seen.global, "hasCompletedOnboarding") {
		t.Errorf("settings %q, credentials %q, global config %q", seen.settings, seen.creds, seen.global)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(seen.dir), "escape.jsonl")); err == nil {
		t.Error("an unsafe subpath was written outside the session's folder")
	}
	if _, err := os.Stat(seen.dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the temporary config directory survived Close: %v", err)
	}

	// Continue with a store resumes its most recent session.
	other := "99999999-2222-4333-8444-555555555555"
	store.Append(ctx, claude.SessionKey{ProjectKey: pk, SessionID: other}, main)
	o2 := &claude.Options{Transport: fake, Cwd: cwd, Env: map[string]string{"HOME": home}, EnvOnly: true, SessionStore: store, Continue: true}
	s2, err := claude.Connect(ctx, o2)
	if err != nil {
		t.Fatal(err)
	}
	s2.Close()
	if a := fake.Launches()[1].Args; !slices.Contains(a, "--resume="+other) || slices.Contains(a, "--continue") {
		t.Errorf("Continue with a store: argv = %q", a)
	}

	// Continue with a store that has nothing for the project starts a
	// new session: the CLI's --continue would pick a local file.
	o4 := &claude.Options{Transport: fake, Cwd: t.TempDir(), Env: map[string]string{"HOME": home}, EnvOnly: true, SessionStore: store, Continue: true}
	s4, err := claude.Connect(ctx, o4)
	if err != nil {
		t.Fatal(err)
	}
	s4.Close()
	if a := fake.Launches()[2].Args; slices.ContainsFunc(a, func(s string) bool { return strings.HasPrefix(s, "--resume") || s == "--continue" }) {
		t.Errorf("Continue with an empty store: argv = %q", a)
	}

	// A session the store lacks is left to the CLI's own files.
	o3 := &claude.Options{Transport: fake, Cwd: cwd, Env: map[string]string{"HOME": home}, EnvOnly: true, SessionStore: store, Resume: "77777777-2222-4333-8444-555555555555"}
	s3, err := claude.Connect(ctx, o3)
	if err != nil {
		t.Fatal(err)
	}
	s3.Close()
	for _, kv := range fake.Launches()[3].Env {
		if strings.HasPrefix(kv, claude.EnvConfigDir+"=") {
			t.Errorf("resume of a session the store lacks set %s", kv)
		}
	}
}

func TestMemorySessionStore(t *testing.T) {
	ctx := context.Background()
	var m claude.MemorySessionStore
	k := claude.SessionKey{ProjectKey: "p", SessionID: mirrorSID}
	if es, err := m.Load(ctx, k); es != nil || err != nil {
		t.Errorf("Load of a key never written = %v, %v", es, err)
	}
	e := claude.SessionStoreEntry(`{"type":"user","uuid":"u1","message":{"role":"user","content":"first words"},"cwd":"/w","timestamp":"2026-11-24T00:00:00Z"}`)
	m.Append(ctx, k, []claude.SessionStoreEntry{e})
	e[2] = 'X' // the store kept a copy
	got, _ := m.Load(ctx, k)
	if got[0].Type() != "user" {
		t.Errorf("stored entry changed with the caller's slice: %s", got[0])
	}
	sub := k
	sub.Subpath = "subagents/agent-z"
	m.Append(ctx, sub, []claude.SessionStoreEntry{claude.SessionStoreEntry(`{"type":"user","isSidechain":true}`)})
	if subs, _ := m.ListSubkeys(ctx, k); !slices.Equal(subs, []string{"subagents/agent-z"}) {
		t.Errorf("ListSubkeys = %v", subs)
	}
	if ids, err := claude.StoreListSubagents(ctx, &m, k); err != nil || !slices.Equal(ids, []string{"z"}) {
		t.Errorf("StoreListSubagents = %v, %v", ids, err)
	}
	if err := claude.StoreRenameSession(ctx, &m, k, " Named "); err != nil {
		t.Fatal(err)
	}
	if err := claude.StoreTagSession(ctx, &m, k, "t1"); err != nil {
		t.Fatal(err)
	}
	list, err := claude.StoreListSessions(ctx, &m, "p")
	if err != nil || len(list) != 1 {
		t.Fatalf("StoreListSessions = %+v, %v", list, err)
	}
	if si := list[0]; si.ID != mirrorSID || si.Title != "Named" || si.Tag != "t1" || si.FirstPrompt != "first words" || si.Cwd != "/w" || si.ModTime.IsZero() ||
		!si.CreatedAt.Equal(time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("listed %+v", si)
	}
	info, err := claude.StoreSessionInfo(ctx, &m, k)
	if err != nil || info.Title != "Named" {
		t.Errorf("StoreSessionInfo = %+v, %v", info, err)
	}
	if err := claude.StoreDeleteSession(ctx, &m, k); err != nil {
		t.Fatal(err)
	}
	if keys := m.Keys(); len(keys) != 0 {
		t.Errorf("after Delete the store holds %v", keys)
	}
	for _, err := range claude.StoreReadSession(ctx, &m, k) {
		if !errors.Is(err, claude.ErrSessionNotFound) {
			t.Errorf("StoreReadSession of a deleted session: %v", err)
		}
	}
	type appendOnly struct{ claude.SessionStore }
	if _, err := claude.StoreListSessions(ctx, appendOnly{&m}, "p"); !errors.Is(err, claude.ErrSessionStoreUnsupported) {
		t.Errorf("StoreListSessions without a lister: %v", err)
	}
	if err := claude.StoreDeleteSession(ctx, appendOnly{&m}, k); err != nil {
		t.Errorf("StoreDeleteSession on an append-only store: %v", err)
	}
}

// TestImportAndFoldTestdata imports sessions the real CLIs wrote: the
// store holds every line, the fold of the entries summarizes them as
// ReadSessionInfo does the file, and the listing through a store that is
// only a SessionLister agrees with the one through summaries.
func TestImportAndFoldTestdata(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct{ cwd, id string }{{demoCwd, demoID}, {notesCwd, notesID}} {
		store := &recordingStore{}
		if err := claude.ImportSessionToStore(ctx, tc.id, store, &claude.ImportSessionOptions{ConfigDir: testConfigDir, BatchSize: 7}); err != nil {
			t.Fatal(err)
		}
		path := claude.SessionFilePath(testConfigDir, tc.cwd, tc.id)
		b, _ := os.ReadFile(path)
		lines := bytes.Split(bytes.TrimSpace(b), []byte("\n"))
		key := claude.SessionKey{ProjectKey: claude.ProjectKey(tc.cwd), SessionID: tc.id}
		got, _ := store.Load(ctx, key)
		if len(got) != len(lines) {
			t.Fatalf("%s: %d entries stored, %d lines in the file", tc.id, len(got), len(lines))
		}
		for i := range lines {
			if !bytes.Equal(got[i], lines[i]) {
				t.Fatalf("%s: entry %d differs", tc.id, i)
			}
		}
		for _, n := range store.appends {
			if n > 7 {
				t.Errorf("an Append of %d entries, past BatchSize 7", n)
			}
		}
		want, _ := claude.ReadSessionInfo(path)
		sum := claude.FoldSessionSummary(nil, key, got[:len(got)/2], time.Unix(1, 0))
		sum = claude.FoldSessionSummary(&sum, key, got[len(got)/2:], time.Time{})
		if !sum.ModTime.Equal(time.Unix(1, 0)) {
			t.Errorf("a fold without a time lost the previous one: %v", sum.ModTime)
		}
		info, err := claude.StoreSessionInfo(ctx, store, key)
		if err != nil {
			t.Fatal(err)
		}
		if info.Title != want.Title || info.FirstPrompt != want.FirstPrompt || info.LastPrompt != want.LastPrompt ||
			info.Cwd != want.Cwd || info.GitBranch != want.GitBranch || !info.CreatedAt.Equal(want.CreatedAt) {
			t.Errorf("%s: from the store %+v\nfrom the file %+v", tc.id, info, want)
		}
		type listerOnly struct {
			claude.SessionStore
			claude.SessionLister
		}
		a, err1 := claude.StoreListSessions(ctx, store, key.ProjectKey)
		bb, err2 := claude.StoreListSessions(ctx, listerOnly{store, store}, key.ProjectKey)
		if err1 != nil || err2 != nil || len(a) != 1 || len(bb) != 1 || a[0].Title != bb[0].Title || a[0].FirstPrompt != bb[0].FirstPrompt {
			t.Errorf("listings differ: %+v %v / %+v %v", a, err1, bb, err2)
		}
		n := 0
		for e, err := range claude.StoreReadSession(ctx, store, key) {
			if err != nil || e.RawJSON() == nil {
				t.Fatalf("StoreReadSession: %T %v", e, err)
			}
			n++
		}
		if n != len(lines) {
			t.Errorf("StoreReadSession read %d entries", n)
		}
	}
	if err := claude.ImportSessionToStore(ctx, "00000000-0000-4000-8000-000000000000", &claude.MemorySessionStore{}, &claude.ImportSessionOptions{ConfigDir: testConfigDir}); !errors.Is(err, claude.ErrSessionNotFound) {
		t.Errorf("import of a missing session: %v", err)
	}
	if err := claude.ImportSessionToStore(ctx, "../etc/passwd", &claude.MemorySessionStore{}, &claude.ImportSessionOptions{ConfigDir: testConfigDir}); err == nil {
		t.Error("an id that is not a UUID was accepted")
	}
}

// copyConfig copies testdata's config directory, for tests that change it.
func copyConfig(t *testing.T) string {
	t.Helper()
	dst := t.TempDir()
	if err := os.CopyFS(dst, os.DirFS(testConfigDir)); err != nil {
		t.Fatal(err)
	}
	return dst
}

func TestForkSessionTestdata(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct{ cwd, id string }{{demoCwd, demoID}, {notesCwd, notesID}} {
		cfg := copyConfig(t)
		src := claude.SessionFilePath(cfg, tc.cwd, tc.id)
		before, _ := os.ReadFile(src)
		var msgs []*claude.EntryMeta
		for e, err := range claude.ReadSession(src) {
			if err != nil {
				t.Fatal(err)
			}
			switch e := e.(type) {
			case *claude.UserEntry:
				msgs = append(msgs, &e.EntryMeta)
			case *claude.AssistantEntry:
				msgs = append(msgs, &e.EntryMeta)
			}
		}
		newID, err := claude.ForkSession(ctx, tc.id, &claude.ForkSessionOptions{Dir: tc.cwd, ConfigDir: cfg})
		if err != nil {
			t.Fatal(err)
		}
		if after, _ := os.ReadFile(src); !bytes.Equal(before, after) {
			t.Error("the source changed")
		}
		fork := claude.SessionFilePath(cfg, tc.cwd, newID)
		info, err := claude.ReadSessionInfo(fork)
		if err != nil {
			t.Fatal(err)
		}
		if info.Title != "Rewind demo (fork)" || info.FirstPrompt != "Create notes.txt saying v1" || info.LastPrompt != "Now change it to v2" {
			t.Errorf("fork info %+v", info)
		}
		uuids := map[string]bool{}
		var forked []*claude.EntryMeta
		for e, err := range claude.ReadSession(fork) {
			if err != nil {
				t.Fatal(err)
			}
			m := entryMetaOf(e)
			if m == nil {
				continue
			}
			if m.SessionID != newID {
				t.Errorf("entry with session id %s", m.SessionID)
			}
			if m.ParentUUID != "" && !uuids[m.ParentUUID] {
				t.Errorf("entry %s: parent %s is not an earlier entry of the fork", m.UUID, m.ParentUUID)
			}
			uuids[m.UUID] = true
			if _, ok := e.(*claude.UserEntry); ok {
				forked = append(forked, m)
			} else if _, ok := e.(*claude.AssistantEntry); ok {
				forked = append(forked, m)
			}
		}
		if len(forked) != len(msgs) {
			t.Errorf("fork has %d messages, source %d", len(forked), len(msgs))
		}
		for i := range min(len(forked), len(msgs)) {
			if forked[i].UUID == msgs[i].UUID {
				t.Errorf("message %d kept its uuid", i)
			}
			if !bytes.Contains(forked[i].Raw, []byte(`"forkedFrom":{"messageUuid":"`+msgs[i].UUID+`","sessionId":"`+tc.id+`"}`)) {
				t.Errorf("message %d does not say where it came from: %.300s", i, forked[i].Raw)
			}
		}

		// Up to the first answer, with a title.
		var firstAnswer string
		for _, m := range msgs {
			if bytes.Contains(m.Raw, []byte(`"type":"assistant"`)) {
				firstAnswer = m.UUID
				break
			}
		}
		id2, err := claude.ForkSession(ctx, tc.id, &claude.ForkSessionOptions{ConfigDir: cfg, UpToMessageID: firstAnswer, Title: "Branch"})
		if err != nil {
			t.Fatal(err)
		}
		info2, _ := claude.ReadSessionInfo(claude.SessionFilePath(cfg, tc.cwd, id2))
		if info2.Title != "Branch" || info2.LastPrompt != "Create notes.txt saying v1" {
			t.Errorf("partial fork info %+v", info2)
		}
		if _, err := claude.ForkSession(ctx, tc.id, &claude.ForkSessionOptions{ConfigDir: cfg, UpToMessageID: "nope"}); !errors.Is(err, claude.ErrMessageNotFound) {
			t.Errorf("unknown message: %v", err)
		}
	}
	cfg := copyConfig(t)
	if _, err := claude.ForkSession(ctx, "00000000-0000-4000-8000-000000000000", &claude.ForkSessionOptions{ConfigDir: cfg}); !errors.Is(err, claude.ErrSessionNotFound) {
		t.Errorf("missing session: %v", err)
	}
	if _, err := claude.ForkSession(ctx, demoID, &claude.ForkSessionOptions{ConfigDir: cfg, Dir: notesCwd}); !errors.Is(err, claude.ErrSessionNotFound) {
		t.Errorf("session of another project: %v", err)
	}

	// In a store.
	store := &claude.MemorySessionStore{}
	if err := claude.ImportSessionToStore(ctx, demoID, store, &claude.ImportSessionOptions{ConfigDir: cfg}); err != nil {
		t.Fatal(err)
	}
	id3, err := claude.ForkSession(ctx, demoID, &claude.ForkSessionOptions{Dir: demoCwd, SessionStore: store})
	if err != nil {
		t.Fatal(err)
	}
	info3, err := claude.StoreSessionInfo(ctx, store, claude.SessionKey{ProjectKey: claude.ProjectKey(demoCwd), SessionID: id3})
	if err != nil || info3.Title != "Rewind demo (fork)" {
		t.Errorf("fork in the store: %+v, %v", info3, err)
	}
}

func entryMetaOf(e claude.SessionEntry) *claude.EntryMeta {
	switch e := e.(type) {
	case *claude.UserEntry:
		return &e.EntryMeta
	case *claude.AssistantEntry:
		return &e.EntryMeta
	case *claude.SystemEntry:
		return &e.EntryMeta
	case *claude.AttachmentEntry:
		return &e.EntryMeta
	}
	return nil
}

func TestArchiveSession(t *testing.T) {
	ctx := context.Background()
	cfg := copyConfig(t)
	list := func() claude.SessionInfo {
		l, err := claude.ListSessions(demoCwd, &claude.ListSessionsOptions{ConfigDir: cfg})
		if err != nil || len(l) != 1 {
			t.Fatalf("ListSessions = %v, %v", l, err)
		}
		return l[0]
	}
	if list().Archived {
		t.Fatal("archived before ArchiveSession")
	}
	if err := claude.ArchiveSession(ctx, demoID, &claude.SessionFileOptions{ConfigDir: cfg}); err != nil {
		t.Fatal(err)
	}
	if !list().Archived {
		t.Error("not archived after ArchiveSession")
	}
	b, _ := os.ReadFile(filepath.Join(filepath.Dir(claude.SessionFilePath(cfg, demoCwd, demoID)), demoID, "archived.json"))
	if !bytes.Contains(b, []byte(`"archived":true`)) || !bytes.Contains(b, []byte(`"by":"sdk"`)) {
		t.Errorf("archived.json = %s", b)
	}
	if err := claude.UnarchiveSession(ctx, demoID, &claude.SessionFileOptions{ConfigDir: cfg, Dir: demoCwd}); err != nil {
		t.Fatal(err)
	}
	if list().Archived {
		t.Error("archived after UnarchiveSession")
	}
	// A prompt sent after archiving unarchives.
	claude.ArchiveSession(ctx, demoID, &claude.SessionFileOptions{ConfigDir: cfg})
	path := claude.SessionFilePath(cfg, demoCwd, demoID)
	later := time.Now().Add(time.Minute).UTC().Format(time.RFC3339Nano)
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	fmt.Fprintf(f, `{"type":"user","uuid":"late","sessionId":%q,"message":{"role":"user","content":"back again"},"timestamp":%q}`+"\n", demoID, later)
	f.Close()
	if si := list(); si.Archived || si.LastPrompt != "back again" {
		t.Errorf("after a later prompt: archived %v, last prompt %q", si.Archived, si.LastPrompt)
	}
	if err := claude.ArchiveSession(ctx, "00000000-0000-4000-8000-000000000000", &claude.SessionFileOptions{ConfigDir: cfg}); !errors.Is(err, claude.ErrSessionNotFound) {
		t.Errorf("archiving a missing session: %v", err)
	}
}

// stuckStore's Append blocks until release is closed; with honour it
// also returns when its ctx ends.
type stuckStore struct {
	claude.MemorySessionStore
	honour  bool
	release chan struct{}
	entered chan struct{} // receives once per Append that blocks
}

func (s *stuckStore) Append(ctx context.Context, key claude.SessionKey, entries []claude.SessionStoreEntry) error {
	select {
	case s.entered <- struct{}{}:
	default:
	}
	if s.honour {
		select {
		case <-s.release:
		case <-ctx.Done():
			return ctx.Err()
		}
	} else {
		<-s.release
	}
	return s.MemorySessionStore.Append(ctx, key, entries)
}

// floodScript writes, for each user message, n frames of about size
// bytes each, then a turn.
//
// With held set, it writes the first frame, then waits for a receive on
// held (the store has taken that frame) before the rest: the flood then
// meets a store that is already stuck, however the goroutines are
// scheduled.
func floodScript(home string, n, size int, held <-chan struct{}) claudetest.Script {
	path := filepath.Join(home, ".claude", "projects", "-work-app", mirrorSID+".jsonl")
	return func(ctx context.Context, c *claudetest.CLI) error {
		if _, err := c.HandleInitialize(ctx); err != nil {
			return err
		}
		for {
			if _, err := c.ReadUser(ctx); err != nil {
				return nil
			}
			for i := range n {
				e := fmt.Sprintf(`{"type":"user","uuid":"f%d","pad":%q}`, i, strings.Repeat("x", size))
				if err := c.Write(fmt.Sprintf(`{"type":"transcript_mirror","filePath":%q,"entries":[%s]}`, path, e)); err != nil {
					return err
				}
				if i == 0 && held != nil {
					select {
					case <-held:
					case <-ctx.Done():
						return ctx.Err()
					}
				}
			}
			if err := c.Write(c.SystemInit(), c.AssistantText("ok"), c.ResultSuccess("ok")); err != nil {
				return err
			}
		}
	}
}

// TestSessionStoreQueueBound: frames past the bound while the store is
// stuck are dropped, the session says so at once with a
// *MirrorErrorMessage, the turn is not held up, and once the store
// catches up it has the frames queued before the bound.
func TestSessionStoreQueueBound(t *testing.T) {
	defer claude.SetMirrorBounds(4000, time.Second)()
	store := &stuckStore{honour: true, release: make(chan struct{}), entered: make(chan struct{}, 1)}
	home := t.TempDir()
	o := &claude.Options{
		Transport:         &claudetest.FakeCLI{Script: floodScript(home, 20, 900, store.entered)},
		Env:               map[string]string{"HOME": home, claude.EnvConfigDir: filepath.Join(home, ".claude")},
		SessionStore:      store,
		SessionStoreFlush: claude.SessionStoreFlushEager,
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err := claude.Connect(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	msgs := turnMsgs(ctx, t, s, "flood")
	errs := find[*claude.MirrorErrorMessage](msgs)
	if len(errs) != 1 || !strings.Contains(errs[0].Error, "dropping") || errs[0].Key.SessionID != mirrorSID {
		var texts []string
		for _, e := range errs {
			texts = append(texts, fmt.Sprintf("%q (session %s)", e.Error, e.Key.SessionID))
		}
		t.Fatalf("mirror errors during the turn: %d: %s", len(errs), strings.Join(texts, "; "))
	}
	close(store.release)
	if err := s.FlushSessionStore(ctx); err != nil {
		t.Fatal(err)
	}
	got, _ := store.Load(ctx, claude.SessionKey{ProjectKey: "-work-app", SessionID: mirrorSID})
	if len(got) == 0 || len(got) >= 20 || got[0].UUID() != "f0" {
		t.Errorf("the store has %d entries (first %q); want the first few, not all 20", len(got), got[0].UUID())
	}
	// The episode's count follows once the store caught up.
	for m, err := range s.Receive(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		if me, ok := m.(*claude.MirrorErrorMessage); ok {
			if !strings.Contains(me.Error, fmt.Sprintf("%d transcript entries were dropped", 20-len(got))) {
				t.Errorf("final report %q", me.Error)
			}
			break
		}
	}
}

// TestSessionStoreCloseStuck: Close returns even when the store's Append
// never returns and ignores its ctx.
func TestSessionStoreCloseStuck(t *testing.T) {
	defer claude.SetMirrorBounds(64<<20, 50*time.Millisecond)()
	store := &stuckStore{release: make(chan struct{}), entered: make(chan struct{}, 1)}
	defer close(store.release) // lets the abandoned Append end, for goleak
	home := t.TempDir()
	o := &claude.Options{
		Transport:         &claudetest.FakeCLI{Script: floodScript(home, 1, 10, nil)},
		Env:               map[string]string{"HOME": home, claude.EnvConfigDir: filepath.Join(home, ".claude")},
		SessionStore:      store,
		SessionStoreFlush: claude.SessionStoreFlushEager,
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err := claude.Connect(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	turnMsgs(ctx, t, s, "one")
	<-store.entered
	done := make(chan struct{})
	go func() { s.Close(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatal("Close hung on a stuck store")
	}
}

func TestMirrorKey(t *testing.T) {
	for _, tc := range []struct {
		cfg, path string
		want      claude.SessionKey
		ok        bool
	}{
		{"/h/.claude", "/h/.claude/projects/-w/abc.jsonl", claude.SessionKey{ProjectKey: "-w", SessionID: "abc"}, true},
		{"/h/.claude", "/h/.claude/projects/-w/abc/subagents/agent-x.jsonl", claude.SessionKey{ProjectKey: "-w", SessionID: "abc", Subpath: "subagents/agent-x"}, true},
		// Elsewhere (a CLI in a container): read from the projects folder.
		{"/h/.claude", "/other/.claude/projects/-w/abc.jsonl", claude.SessionKey{ProjectKey: "-w", SessionID: "abc"}, true},
		{"/h/.claude", "/h/.claude/projects/-w/abc/x.jsonl", claude.SessionKey{}, false},
		{"/h/.claude", "/h/.claude/projects/abc.jsonl", claude.SessionKey{}, false},
		{"/h/.claude", "/h/.claude/history.jsonl", claude.SessionKey{}, false},
		{"", "relative/projects/-w/abc.txt", claude.SessionKey{}, false},
	} {
		got, ok := claude.MirrorKeyOf(tc.cfg, tc.path)
		if got != tc.want || ok != tc.ok {
			t.Errorf("mirrorKey(%q, %q) = %+v, %v; want %+v, %v", tc.cfg, tc.path, got, ok, tc.want, tc.ok)
		}
	}
}

func FuzzFoldSessionSummary(f *testing.F) {
	f.Add([]byte(`{"type":"user","message":{"role":"user","content":"hi"},"timestamp":"2026-11-24T00:00:00Z","cwd":"/w"}`))
	f.Add([]byte(`{"type":"tag","tag":null}`))
	f.Add([]byte(`{"type":"custom-title","customTitle":5}`))
	f.Add([]byte(`[1,2]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		key := claude.SessionKey{ProjectKey: "p", SessionID: "s"}
		s := claude.FoldSessionSummary(nil, key, []claude.SessionStoreEntry{b, b}, time.Unix(1, 0))
		s2 := claude.FoldSessionSummary(&s, key, []claude.SessionStoreEntry{b}, time.Time{})
		if !json.Valid(s2.Data) || s2.SessionID != "s" {
			t.Fatalf("summary %+v", s2)
		}
		e := claude.SessionStoreEntry(b)
		_, _, _ = e.Type(), e.UUID(), e.Timestamp()
	})
}

// A MirrorErrorMessage's key names the transcript in the store.
var _ = claude.SessionKey(claude.MirrorKey{})
