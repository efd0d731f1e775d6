package claude

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Sessions by id, as the TypeScript SDK's forkSession, archiveSession,
// unarchiveSession and importSessionToStore find them: in the project
// folder of SessionFileOptions.Dir, or in every project folder when Dir
// is "". And the same operations on a SessionStore (the Store*
// functions), which take a ctx because a store is usually a network
// away.

// SessionFileOptions says where to look for a session's file. The zero
// value searches every project of the default config directory.
type SessionFileOptions struct {
	// Dir is the project's working directory (as for ListSessions); ""
	// searches every project folder.
	Dir string
	// ConfigDir is the CLI's configuration directory; "" means
	// ConfigDir().
	ConfigDir string
}

// FindSessionFile returns the path of the file of the session with the
// given id: in Dir's project folder, or in any project folder when Dir is
// "". An id that is not a UUID is refused (it names a file), and no file
// is an error wrapping ErrSessionNotFound.
func FindSessionFile(ctx context.Context, sessionID string, opts *SessionFileOptions) (string, error) {
	paths, err := findSessionFiles(ctx, sessionID, opts)
	if err != nil {
		return "", err
	}
	return paths[0], nil
}

// findSessionFiles returns every non-empty file of the session, most
// recently changed first.
func findSessionFiles(ctx context.Context, sessionID string, opts *SessionFileOptions) ([]string, error) {
	if !isUUID(sessionID) {
		return nil, fmt.Errorf("claude: session id %q is not a UUID", sessionID)
	}
	var o SessionFileOptions
	if opts != nil {
		o = *opts
	}
	if o.ConfigDir == "" {
		d, err := ConfigDir()
		if err != nil {
			return nil, err
		}
		o.ConfigDir = d
	}
	var folders []string
	if o.Dir != "" {
		f, err := projectFolders(o.ConfigDir, o.Dir)
		if err != nil {
			return nil, err
		}
		folders = f
	} else {
		ents, err := os.ReadDir(filepath.Join(o.ConfigDir, "projects"))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("claude: listing projects: %w", err)
		}
		for _, e := range ents {
			if e.IsDir() {
				folders = append(folders, filepath.Join(o.ConfigDir, "projects", e.Name()))
			}
		}
	}
	type found struct {
		path string
		mod  time.Time
	}
	var out []found
	for _, f := range folders {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		p := filepath.Join(f, sessionID+".jsonl")
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Size() > 0 {
			out = append(out, found{p, fi.ModTime()})
		}
	}
	if len(out) == 0 {
		where := "any project"
		if o.Dir != "" {
			where = "the project of " + o.Dir
		}
		return nil, fmt.Errorf("claude: session %s in %s: %w", sessionID, where, ErrSessionNotFound)
	}
	slices.SortStableFunc(out, func(a, b found) int { return b.mod.Compare(a.mod) })
	paths := make([]string, len(out))
	for i, f := range out {
		paths[i] = f.path
	}
	return paths, nil
}

// isUUID reports a canonical 8-4-4-4-12 hex UUID, as the CLI's session
// ids are.
func isUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i, c := range s {
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
				return false
			}
		}
	}
	return true
}

// Archiving.

// archiveRecord is <project folder>/<session id>/archived.json, where the
// CLI and the TypeScript SDK keep the mark.
type archiveRecord struct {
	Archived bool   `json:"archived"`
	At       string `json:"at"`
	By       string `json:"by,omitempty"`
}

// ArchiveSession archives a session: it stays on disk and ListSessions
// still returns it, with SessionInfo.Archived set, until a prompt is sent
// in it or UnarchiveSession. The mark is kept in a file beside the
// transcript (<id>/archived.json, as the CLI and the TypeScript SDK keep
// it); the transcript is not changed and a running CLI is not stopped. A
// SessionStore holds transcripts only, so archiving applies to session
// files only. A session with no file is an error wrapping
// ErrSessionNotFound.
func ArchiveSession(ctx context.Context, sessionID string, opts *SessionFileOptions) error {
	return setArchived(ctx, sessionID, opts, true)
}

// UnarchiveSession undoes ArchiveSession: ListSessions then reports the
// session with Archived false.
func UnarchiveSession(ctx context.Context, sessionID string, opts *SessionFileOptions) error {
	return setArchived(ctx, sessionID, opts, false)
}

func setArchived(ctx context.Context, sessionID string, opts *SessionFileOptions, archived bool) error {
	paths, err := findSessionFiles(ctx, sessionID, opts)
	if err != nil {
		return err
	}
	b, _ := json.Marshal(archiveRecord{Archived: archived, At: time.Now().UTC().Format(time.RFC3339Nano), By: "sdk"})
	var errs []error
	for _, p := range paths {
		dir := strings.TrimSuffix(p, ".jsonl")
		if err := os.MkdirAll(dir, 0o700); err != nil {
			errs = append(errs, err)
			continue
		}
		if err := writeFileAtomic(filepath.Join(dir, "archived.json"), b, 0o600); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("claude: archiving session %s: %w", sessionID, err)
	}
	return nil
}

// readArchived returns the session file's archive mark: whether it is
// archived and since when; ok is false when it never was.
func readArchived(path string) (archived bool, at time.Time, ok bool) {
	b, err := os.ReadFile(filepath.Join(strings.TrimSuffix(path, ".jsonl"), "archived.json"))
	if err != nil || len(b) > 4096 {
		return false, time.Time{}, false
	}
	var r archiveRecord
	if unmarshal(b, &r) != nil {
		return false, time.Time{}, false
	}
	at, _ = time.Parse(time.RFC3339Nano, r.At)
	return r.Archived, at, true
}

// archivedState is SessionInfo.Archived for a file whose last typed
// prompt was at lastPrompt: a prompt after the archiving unarchives.
func archivedState(path string, lastPrompt time.Time) bool {
	archived, at, ok := readArchived(path)
	if !ok || !archived {
		return false
	}
	return !lastPrompt.After(at)
}

func writeFileAtomic(path string, b []byte, perm os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(perm); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// Forking.

// ErrMessageNotFound is returned (wrapped) by ForkSession when
// UpToMessageID names no message of the session.
var ErrMessageNotFound = errors.New("claude: message not found in the session")

// ForkSessionOptions configures ForkSession.
type ForkSessionOptions struct {
	// Dir and ConfigDir find the session's file, as for FindSessionFile.
	// The fork is written next to it.
	Dir       string
	ConfigDir string
	// UpToMessageID ends the fork at the message with this UUID
	// (included): SessionEntry's EntryMeta.UUID, or a streamed message's
	// UUID. "" copies the whole conversation.
	UpToMessageID string
	// Title is the fork's title; "" means the source's title (or first
	// prompt) followed by " (fork)".
	Title string
	// SessionStore forks a session held in the store instead of a file:
	// the source is loaded from SessionKey{ProjectKey: ProjectKey(Dir),
	// SessionID: id} and the fork appended under the new id.
	SessionStore SessionStore
}

// forkDropped are fields a fork clears, as the TypeScript SDK does: they
// tie an entry to the source session's teams, agents and turns.
var forkDropped = []string{"teamName", "agentName", "sessionKind", "slug", "sourceToolAssistantUUID",
	"summarizedTurnPromptUuids", "droppedPromptUuids", "sentAsUuid", "rowsAheadOfPutBack", "turnAttributionKey"}

// ForkSession copies a session's conversation into a new session and
// returns the new session's id, which Options.Resume resumes; the source
// is not changed. Every message gets a new UUID with the parentUuid
// chain kept, and records where it came from (forkedFrom). Subagent
// transcripts and file checkpoints are not copied, so the fork has no
// undo history (RewindFiles). UpToMessageID forks from an earlier point.
//
// This is the TypeScript SDK's forkSession, for a session that is not
// running; Options.ForkSession forks while resuming instead. Unlike it,
// an UpToMessageID inside a compacted stretch of the conversation is cut
// in file order, without the SDK's special cases for compaction
// boundaries.
func ForkSession(ctx context.Context, sessionID string, opts *ForkSessionOptions) (string, error) {
	var o ForkSessionOptions
	if opts != nil {
		o = *opts
	}
	if o.SessionStore != nil {
		return forkInStore(ctx, sessionID, &o)
	}
	path, err := FindSessionFile(ctx, sessionID, &SessionFileOptions{Dir: o.Dir, ConfigDir: o.ConfigDir})
	if err != nil {
		return "", err
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("claude: session file: %w", err)
	}
	var entries []SessionStoreEntry
	for line := range bytes.Lines(b) {
		if line = bytes.TrimSpace(line); len(line) > 0 && line[0] == '{' {
			entries = append(entries, SessionStoreEntry(line))
		}
	}
	newID, out, err := forkEntries(sessionID, entries, &o)
	if err != nil {
		return "", err
	}
	dst := filepath.Join(filepath.Dir(path), newID+".jsonl")
	f, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", fmt.Errorf("claude: writing the fork: %w", err)
	}
	if _, err := f.Write(entriesToJSONL(out)); err != nil {
		f.Close()
		os.Remove(dst)
		return "", fmt.Errorf("claude: writing the fork: %w", err)
	}
	if err := f.Close(); err != nil {
		os.Remove(dst)
		return "", fmt.Errorf("claude: writing the fork: %w", err)
	}
	return newID, nil
}

func forkInStore(ctx context.Context, sessionID string, o *ForkSessionOptions) (string, error) {
	if !isUUID(sessionID) {
		return "", fmt.Errorf("claude: session id %q is not a UUID", sessionID)
	}
	dir := o.Dir
	if dir == "" {
		dir, _ = os.Getwd()
	}
	key := SessionKey{ProjectKey: ProjectKey(dir), SessionID: sessionID}
	entries, err := callStore(ctx, "Load", key, func(ctx context.Context) ([]SessionStoreEntry, error) {
		return o.SessionStore.Load(ctx, key)
	})
	if err != nil {
		return "", err
	}
	if len(entries) == 0 {
		return "", fmt.Errorf("claude: session %s in the store: %w", sessionID, ErrSessionNotFound)
	}
	newID, out, err := forkEntries(sessionID, entries, o)
	if err != nil {
		return "", err
	}
	nk := SessionKey{ProjectKey: key.ProjectKey, SessionID: newID}
	if _, err := callStore(ctx, "Append", nk, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, o.SessionStore.Append(ctx, nk, out)
	}); err != nil {
		return "", err
	}
	return newID, nil
}

// forkEntries builds the fork of a transcript.
func forkEntries(sessionID string, entries []SessionStoreEntry, o *ForkSessionOptions) (string, []SessionStoreEntry, error) {
	type msg struct {
		m          map[string]json.RawMessage
		uuid       string
		parent     string
		typ        string
		isSide     bool
		timestamp  json.RawMessage
		logicalPar *string
	}
	var (
		msgs                []*msg
		replacements        []json.RawMessage
		customTitle, aiTitl string
		firstPrompt         string
	)
	for _, e := range entries {
		var h struct {
			Type        string          `json:"type"`
			UUID        *string         `json:"uuid"`
			ParentUUID  *string         `json:"parentUuid"`
			IsSidechain bool            `json:"isSidechain"`
			SessionID   string          `json:"sessionId"`
			CustomTitle string          `json:"customTitle"`
			AITitle     string          `json:"aiTitle"`
			Repl        json.RawMessage `json:"replacements"`
		}
		if unmarshal(e, &h) != nil {
			continue
		}
		switch h.Type {
		case "custom-title":
			if h.CustomTitle != "" {
				customTitle = h.CustomTitle
			}
			continue
		case "ai-title":
			if h.AITitle != "" {
				aiTitl = h.AITitle
			}
			continue
		case "content-replacement":
			if h.SessionID == sessionID && len(h.Repl) > 0 {
				var rs []json.RawMessage
				if unmarshal(h.Repl, &rs) == nil {
					replacements = append(replacements, rs...)
				}
			}
			continue
		case "user", "assistant", "attachment", "system", "progress":
		default:
			continue
		}
		if h.UUID == nil || h.IsSidechain {
			continue
		}
		var m map[string]json.RawMessage
		if unmarshal(e, &m) != nil {
			continue
		}
		x := &msg{m: m, uuid: *h.UUID, typ: h.Type, timestamp: m["timestamp"]}
		if h.ParentUUID != nil {
			x.parent = *h.ParentUUID
		}
		var lp *string
		if raw, ok := m["logicalParentUuid"]; ok {
			_ = unmarshal(raw, &lp)
			if lp == nil {
				empty := ""
				lp = &empty
			}
		}
		x.logicalPar = lp
		if firstPrompt == "" && h.Type == "user" {
			if ue, err := DecodeSessionEntry(e); err == nil {
				if u, ok := ue.(*UserEntry); ok {
					firstPrompt = u.prompt()
				}
			}
		}
		msgs = append(msgs, x)
	}
	if len(msgs) == 0 {
		return "", nil, fmt.Errorf("claude: session %s has no messages to fork", sessionID)
	}
	if o.UpToMessageID != "" {
		i := slices.IndexFunc(msgs, func(x *msg) bool { return x.uuid == o.UpToMessageID })
		if i < 0 {
			return "", nil, fmt.Errorf("claude: forking session %s at %s: %w", sessionID, o.UpToMessageID, ErrMessageNotFound)
		}
		msgs = msgs[:i+1]
	}
	newUUIDs := map[string]string{}
	byUUID := map[string]*msg{}
	for _, x := range msgs {
		newUUIDs[x.uuid] = newUUID()
		byUUID[x.uuid] = x
	}
	kept := slices.DeleteFunc(slices.Clone(msgs), func(x *msg) bool { return x.typ == "progress" })
	if len(kept) == 0 {
		return "", nil, fmt.Errorf("claude: session %s has no messages to fork", sessionID)
	}
	newID := newUUID()
	now := time.Now().UTC().Format(time.RFC3339Nano)
	enc := func(v any) json.RawMessage { b, _ := json.Marshal(v); return b }
	var out []SessionStoreEntry
	for i, x := range kept {
		// The parent is the nearest ancestor that is kept: progress
		// entries are left out, so the chain skips them.
		var parent any
		seen := map[string]bool{}
		for p := x.parent; p != "" && !seen[p]; {
			seen[p] = true
			a, ok := byUUID[p]
			if !ok {
				break
			}
			if a.typ != "progress" {
				parent = newUUIDs[p]
				break
			}
			p = a.parent
		}
		m := x.m
		for _, k := range forkDropped {
			delete(m, k)
		}
		m["uuid"] = enc(newUUIDs[x.uuid])
		m["parentUuid"] = enc(parent)
		m["sessionId"] = enc(newID)
		m["isSidechain"] = enc(false)
		if x.logicalPar != nil {
			var lp any
			if n, ok := newUUIDs[*x.logicalPar]; ok {
				lp = n
			}
			m["logicalParentUuid"] = enc(lp)
		}
		if i == len(kept)-1 {
			m["timestamp"] = enc(now)
		}
		if x.typ == "system" {
			var sub struct {
				Subtype string `json:"subtype"`
			}
			if raw, ok := m["subtype"]; ok && unmarshal(raw, &sub.Subtype) == nil && sub.Subtype == "model_refusal_fallback" {
				m["neutralizedByFork"] = enc(true)
			}
		}
		m["forkedFrom"] = enc(map[string]string{"sessionId": sessionID, "messageUuid": x.uuid})
		out = append(out, SessionStoreEntry(enc(m)))
	}
	if len(replacements) > 0 {
		out = append(out, SessionStoreEntry(enc(map[string]any{"type": "content-replacement", "sessionId": newID,
			"replacements": replacements, "uuid": newUUID(), "timestamp": now})))
	}
	title := strings.TrimSpace(o.Title)
	if title == "" {
		title = cmpOr(customTitle, aiTitl, firstPrompt, "Forked session") + " (fork)"
	}
	out = append(out, SessionStoreEntry(enc(map[string]any{"type": "custom-title", "sessionId": newID,
		"customTitle": title, "uuid": newUUID(), "timestamp": now})))
	return newID, out, nil
}

// Importing into a store.

// ImportSessionOptions configures ImportSessionToStore.
type ImportSessionOptions struct {
	// Dir and ConfigDir find the session's file, as for FindSessionFile.
	Dir       string
	ConfigDir string
	// SkipSubagents leaves the subagents' transcripts out (they are
	// imported by default, under Subpath "subagents/agent-<id>").
	SkipSubagents bool
	// BatchSize caps the entries of one Append, for stores with a
	// payload limit; 0 means 500.
	BatchSize int
}

// ImportSessionToStore copies a session's file (and its subagents'
// transcripts) into store, in Appends of at most BatchSize entries: to
// move existing sessions to a store before resuming them from it. The
// key's ProjectKey is the name of the session file's project folder
// (ProjectKey of its working directory). Stores that deduplicate by
// SessionStoreEntry.UUID can import the same session again safely.
func ImportSessionToStore(ctx context.Context, sessionID string, store SessionStore, opts *ImportSessionOptions) error {
	var o ImportSessionOptions
	if opts != nil {
		o = *opts
	}
	if store == nil {
		return errors.New("claude: ImportSessionToStore: nil store")
	}
	if o.BatchSize <= 0 {
		o.BatchSize = 500
	}
	path, err := FindSessionFile(ctx, sessionID, &SessionFileOptions{Dir: o.Dir, ConfigDir: o.ConfigDir})
	if err != nil {
		return err
	}
	key := SessionKey{ProjectKey: filepath.Base(filepath.Dir(path)), SessionID: sessionID}
	if err := importFile(ctx, store, key, path, nil, o.BatchSize); err != nil {
		return err
	}
	if o.SkipSubagents {
		return nil
	}
	root := strings.TrimSuffix(path, ".jsonl")
	var files []string
	err = filepath.WalkDir(filepath.Join(root, "subagents"), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return filepath.SkipAll
			}
			return err
		}
		if !d.IsDir() && strings.HasPrefix(d.Name(), "agent-") && strings.HasSuffix(d.Name(), ".jsonl") {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("claude: subagent transcripts: %w", err)
	}
	for _, p := range files {
		rel, err := filepath.Rel(root, p)
		if err != nil {
			continue
		}
		k := key
		k.Subpath = strings.TrimSuffix(filepath.ToSlash(rel), ".jsonl")
		// The subagent's metadata file travels as an agent_metadata
		// entry, which resuming turns back into the file.
		var meta SessionStoreEntry
		if b, err := os.ReadFile(strings.TrimSuffix(p, ".jsonl") + ".meta.json"); err == nil {
			var m map[string]json.RawMessage
			if unmarshal(b, &m) == nil {
				m["type"] = json.RawMessage(`"agent_metadata"`)
				meta, _ = json.Marshal(m)
			}
		}
		if err := importFile(ctx, store, k, p, meta, o.BatchSize); err != nil {
			return err
		}
	}
	return nil
}

func importFile(ctx context.Context, store SessionStore, key SessionKey, path string, extra SessionStoreEntry, batch int) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("claude: session file: %w", err)
	}
	var entries []SessionStoreEntry
	for line := range bytes.Lines(b) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 || !json.Valid(line) {
			continue // a torn line: the CLI skips it too
		}
		entries = append(entries, SessionStoreEntry(slices.Clone(line)))
	}
	if extra != nil {
		entries = append(entries, extra)
	}
	for len(entries) > 0 {
		n := min(batch, len(entries))
		part := entries[:n]
		entries = entries[n:]
		if _, err := callStore(ctx, "Append", key, func(ctx context.Context) (struct{}, error) {
			return struct{}{}, store.Append(ctx, key, part)
		}); err != nil {
			return err
		}
	}
	return nil
}

// Reading and changing sessions in a store.

// StoreListSessions lists the sessions a store holds for a project
// (ProjectKey of its working directory), most recently written first, as
// ListSessions does for files. It needs a SessionSummaryLister (one call)
// or a SessionLister (then every session is loaded to summarize it);
// otherwise it fails with ErrSessionStoreUnsupported. Subagent
// transcripts and sessions with nothing to show are left out.
func StoreListSessions(ctx context.Context, store SessionStore, projectKey string) ([]SessionInfo, error) {
	pk := SessionKey{ProjectKey: projectKey}
	var sums []SessionSummary
	switch st := store.(type) {
	case SessionSummaryLister:
		s, err := callStore(ctx, "ListSessionSummaries", pk, func(ctx context.Context) ([]SessionSummary, error) {
			return st.ListSessionSummaries(ctx, projectKey)
		})
		if err != nil {
			return nil, err
		}
		sums = s
	case SessionLister:
		list, err := callStore(ctx, "ListSessions", pk, func(ctx context.Context) ([]StoredSession, error) {
			return st.ListSessions(ctx, projectKey)
		})
		if err != nil {
			return nil, err
		}
		for _, ss := range list {
			key := SessionKey{ProjectKey: projectKey, SessionID: ss.SessionID}
			es, err := callStore(ctx, "Load", key, func(ctx context.Context) ([]SessionStoreEntry, error) {
				return store.Load(ctx, key)
			})
			if err != nil {
				return nil, err
			}
			sums = append(sums, FoldSessionSummary(nil, key, es, ss.ModTime))
		}
	default:
		return nil, fmt.Errorf("claude: StoreListSessions: the store is neither a SessionLister nor a SessionSummaryLister: %w", ErrSessionStoreUnsupported)
	}
	out := []SessionInfo{}
	for i := range sums {
		if si, ok := sums[i].info(); ok {
			out = append(out, si)
		}
	}
	slices.SortStableFunc(out, func(a, b SessionInfo) int {
		if c := b.ModTime.Compare(a.ModTime); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out, nil
}

// StoreSessionInfo summarizes one stored session (key.Subpath is
// ignored); a session the store lacks is an error wrapping
// ErrSessionNotFound. ModTime is left zero: Load does not report it.
func StoreSessionInfo(ctx context.Context, store SessionStore, key SessionKey) (*SessionInfo, error) {
	key.Subpath = ""
	es, err := callStore(ctx, "Load", key, func(ctx context.Context) ([]SessionStoreEntry, error) {
		return store.Load(ctx, key)
	})
	if err != nil {
		return nil, err
	}
	if len(es) == 0 {
		return nil, fmt.Errorf("claude: %s in the store: %w", key, ErrSessionNotFound)
	}
	sum := FoldSessionSummary(nil, key, es, time.Time{})
	si, _ := sum.info()
	return &si, nil
}

// StoreReadSession reads a stored transcript's entries (key.Subpath
// selects a subagent's), decoded as ReadSession decodes a file's lines.
// The iterator is single-use. A transcript the store lacks yields an
// error wrapping ErrSessionNotFound; an entry that is not a JSON object
// yields a *LineError (Line is its index plus one) and reading goes on.
func StoreReadSession(ctx context.Context, store SessionStore, key SessionKey) iter.Seq2[SessionEntry, error] {
	return func(yield func(SessionEntry, error) bool) {
		es, err := callStore(ctx, "Load", key, func(ctx context.Context) ([]SessionStoreEntry, error) {
			return store.Load(ctx, key)
		})
		if err != nil {
			yield(nil, err)
			return
		}
		if es == nil {
			yield(nil, fmt.Errorf("claude: %s in the store: %w", key, ErrSessionNotFound))
			return
		}
		for i, e := range es {
			line := bytes.TrimSpace(e)
			se, err := DecodeSessionEntry(line)
			if err != nil {
				err = lineError(int64(i+1), line, fmt.Errorf("not a JSON object: %w", err))
			}
			if !yield(se, err) {
				return
			}
		}
	}
}

// StoreDeleteSession deletes a stored session with its subkeys, when the
// store is a SessionDeleter; an append-only store is left as it is (no
// error), as the TypeScript SDK's deleteSession does.
func StoreDeleteSession(ctx context.Context, store SessionStore, key SessionKey) error {
	d, ok := store.(SessionDeleter)
	if !ok {
		return nil
	}
	_, err := callStore(ctx, "Delete", key, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, d.Delete(ctx, key)
	})
	return err
}

// StoreListSubagents lists the ids of the subagents whose transcripts a
// store holds for a session (Subpath "subagents/agent-<id>"), sorted,
// as ListSubagents does for files. It needs a SubkeyLister.
func StoreListSubagents(ctx context.Context, store SessionStore, key SessionKey) ([]string, error) {
	sl, ok := store.(SubkeyLister)
	if !ok {
		return nil, fmt.Errorf("claude: StoreListSubagents: the store is not a SubkeyLister: %w", ErrSessionStoreUnsupported)
	}
	key.Subpath = ""
	subs, err := callStore(ctx, "ListSubkeys", key, func(ctx context.Context) ([]string, error) {
		return sl.ListSubkeys(ctx, key)
	})
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, s := range subs {
		base := s[strings.LastIndex(s, "/")+1:]
		if strings.HasPrefix(s, "subagents/") && strings.HasPrefix(base, "agent-") {
			ids = append(ids, strings.TrimPrefix(base, "agent-"))
		}
	}
	slices.Sort(ids)
	return ids, nil
}

// StoreRenameSession sets a stored session's title by appending a
// custom-title entry, as RenameSessionFile does to a file.
func StoreRenameSession(ctx context.Context, store SessionStore, key SessionKey, title string) error {
	title = strings.TrimSpace(title)
	if title == "" {
		return errors.New("claude: StoreRenameSession: empty title")
	}
	return storeAppendEntry(ctx, store, key, map[string]any{"type": "custom-title", "customTitle": title})
}

// StoreTagSession tags a stored session ("" clears the tag) by appending
// a tag entry, as TagSessionFile does to a file.
func StoreTagSession(ctx context.Context, store SessionStore, key SessionKey, tag string) error {
	return storeAppendEntry(ctx, store, key, map[string]any{"type": "tag", "tag": strings.TrimSpace(tag)})
}

func storeAppendEntry(ctx context.Context, store SessionStore, key SessionKey, e map[string]any) error {
	key.Subpath = ""
	if !isUUID(key.SessionID) {
		return fmt.Errorf("claude: session id %q is not a UUID", key.SessionID)
	}
	e["sessionId"] = key.SessionID
	e["uuid"] = newUUID()
	e["timestamp"] = time.Now().UTC().Format(time.RFC3339Nano)
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	_, err = callStore(ctx, "Append", key, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, store.Append(ctx, key, []SessionStoreEntry{b})
	})
	return err
}
