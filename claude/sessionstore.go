package claude

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"strings"
	"time"
)

// Session stores: a session's transcript mirrored somewhere other than
// the CLI's session files (a database, an object store, another machine),
// and resumed from there, as the TypeScript SDK's SessionStore does.
//
// The CLI still writes its JSON Lines file; started with --session-mirror
// (which Options.SessionStore sets), it also writes every batch of lines
// it appended to the file on stdout as a transcript_mirror frame. The
// session takes those frames off the message stream and appends their
// entries to the store (sessionstore_mirror.go). Resuming with
// Options.SessionStore loads the transcript from the store into a
// temporary config directory and resumes the CLI from there, so the
// machine that resumes needs no file of the session.

// SessionKey names a transcript in a SessionStore. MirrorErrorMessage.Key
// (a MirrorKey, the same fields) converts to it: SessionKey(m.Key).
type SessionKey struct {
	// ProjectKey scopes sessions, as the CLI's project folders do: by
	// default the name of the folder the CLI keeps the working
	// directory's sessions in (ProjectKey). A multi-tenant store may
	// prefix it, as long as it gives it back unchanged.
	ProjectKey string `json:"projectKey"`
	SessionID  string `json:"sessionId"`
	// Subpath is "" for the session's main transcript and names a file
	// under the session's folder otherwise, without ".jsonl": a
	// subagent's transcript is "subagents/agent-<agent id>". Treat it as
	// an opaque suffix of the storage key.
	Subpath string `json:"subpath,omitempty"`
}

// String returns the key as "projectKey/sessionId[/subpath]", the form
// MemorySessionStore uses.
func (k SessionKey) String() string {
	s := k.ProjectKey + "/" + k.SessionID
	if k.Subpath != "" {
		s += "/" + k.Subpath
	}
	return s
}

// ProjectKey returns the default SessionKey.ProjectKey of sessions run in
// cwd: the name of the folder the CLI keeps their files in (see
// ProjectDir).
func ProjectKey(cwd string) string {
	return projectName(physicalPath(cwd))
}

// SessionStoreEntry is one line of a transcript as a store sees it: a
// JSON object the store keeps as it is. Its shape is the CLI's internal
// session-file format (see SessionEntry); a store needs only to give the
// same JSON back (key order and spacing may change). Type, UUID and
// Timestamp read the fields a store may index.
type SessionStoreEntry json.RawMessage

// MarshalJSON returns the entry itself.
func (e SessionStoreEntry) MarshalJSON() ([]byte, error) {
	if len(e) == 0 {
		return []byte("null"), nil
	}
	return e, nil
}

// UnmarshalJSON keeps a copy of data.
func (e *SessionStoreEntry) UnmarshalJSON(data []byte) error {
	*e = append((*e)[:0], data...)
	return nil
}

// entryHead is what the accessors read.
type entryHead struct {
	Type      string `json:"type"`
	UUID      string `json:"uuid"`
	Timestamp string `json:"timestamp"`
}

func (e SessionStoreEntry) head() entryHead {
	var h entryHead
	_ = unmarshal(e, &h)
	return h
}

// Type returns the entry's "type": "user", "assistant", "custom-title", …
func (e SessionStoreEntry) Type() string { return e.head().Type }

// UUID returns the entry's "uuid", "" when it has none. Stores should
// treat it as an idempotency key (an entry appended twice, by a retry or
// a repeated ImportSessionToStore, is kept once); entries without one
// (titles, tags, queue operations) are appended without deduplication.
func (e SessionStoreEntry) UUID() string { return e.head().UUID }

// Timestamp returns the entry's "timestamp", the zero time when it has
// none or it does not parse.
func (e SessionStoreEntry) Timestamp() time.Time {
	t, _ := time.Parse(time.RFC3339Nano, e.head().Timestamp)
	return t
}

// A SessionStore keeps session transcripts for Options.SessionStore,
// ImportSessionToStore and the Store* functions. Append and Load are
// required; a store adds optional capabilities by implementing
// SessionLister, SessionSummaryLister, SessionDeleter and SubkeyLister
// too (the TypeScript SDK's optional methods).
//
// Every method takes a ctx that bounds it: mirroring gives each Append
// 60 s, resuming gives each Load Options.SessionStoreLoadTimeout; honour
// it. Methods may be called from several goroutines (one per session),
// but Append for one session is never called concurrently with itself.
//
// The store never deletes anything unless asked (StoreDeleteSession);
// retention is the store's business.
type SessionStore interface {
	// Append adds entries to key's transcript, after those of earlier
	// calls. Entries arrive after the CLI wrote them to its own file, so
	// a failure loses nothing locally: a failed Append is retried (3
	// attempts with a short backoff; a timeout is not retried, since the
	// call may still land), then the batch is dropped and the session
	// yields a *MirrorErrorMessage. Treat SessionStoreEntry.UUID as an
	// idempotency key.
	Append(ctx context.Context, key SessionKey, entries []SessionStoreEntry) error
	// Load returns key's whole transcript in append order, or nil and no
	// error for a key never written. The entries must be JSON-equal to
	// what was appended.
	Load(ctx context.Context, key SessionKey) ([]SessionStoreEntry, error)
}

// StoredSession is a session a SessionLister knows.
type StoredSession struct {
	SessionID string
	// ModTime is when the store last wrote the session.
	ModTime time.Time
}

// A SessionLister lists a project's sessions, for StoreListSessions and
// Options.Continue with a store. Order does not matter.
type SessionLister interface {
	ListSessions(ctx context.Context, projectKey string) ([]StoredSession, error)
}

// A SessionSummaryLister returns the summaries it keeps with
// FoldSessionSummary, so that StoreListSessions needs one call instead of
// a Load per session.
type SessionSummaryLister interface {
	ListSessionSummaries(ctx context.Context, projectKey string) ([]SessionSummary, error)
}

// A SessionDeleter deletes a transcript; deleting a main transcript
// (Subpath "") deletes its subkeys too. A store without it is
// append-only, and StoreDeleteSession does nothing.
type SessionDeleter interface {
	Delete(ctx context.Context, key SessionKey) error
}

// A SubkeyLister lists the subpaths stored under a session (its
// subagents' transcripts), so that resuming materializes them too.
// key.Subpath is "".
type SubkeyLister interface {
	ListSubkeys(ctx context.Context, key SessionKey) ([]string, error)
}

// SessionStoreFlush is how eagerly a session appends to its store.
type SessionStoreFlush string

// Flush policies.
const (
	// SessionStoreFlushBatched (the default) collects frames and appends
	// them at the end of each turn (a result), when 500 entries or 1 MiB
	// are waiting, and when the session ends: few, larger Append calls.
	SessionStoreFlushBatched SessionStoreFlush = "batched"
	// SessionStoreFlushEager appends each frame as it arrives (frames
	// that queued up behind a slow Append go together): the store lags
	// the CLI's file by one Append.
	SessionStoreFlushEager SessionStoreFlush = "eager"
)

// DefaultSessionStoreLoadTimeout is Options.SessionStoreLoadTimeout's
// default, as in the TypeScript SDK.
const DefaultSessionStoreLoadTimeout = 60 * time.Second

// ErrSessionStoreUnsupported is returned (wrapped) when an operation
// needs a capability the store lacks, e.g. StoreListSessions on a store
// that is not a SessionLister.
var ErrSessionStoreUnsupported = errors.New("claude: the session store does not support this")

// ErrSessionNotFound is returned (wrapped) when no file or stored
// transcript has the session id asked for.
var ErrSessionNotFound = errors.New("claude: session not found")

// SessionStoreError is a failed call to a SessionStore method: Op names
// it ("Load", "Append", …) and Err is what it returned, its panic, or
// the ctx error of a call that timed out.
type SessionStoreError struct {
	Op  string
	Key SessionKey
	Err error
}

func (e *SessionStoreError) Error() string {
	return fmt.Sprintf("claude: SessionStore.%s(%s): %v", e.Op, e.Key, e.Err)
}

func (e *SessionStoreError) Unwrap() error { return e.Err }

// callStore runs one store call under ctx: a panic becomes an error, and
// a call that ignores ctx is abandoned (left to finish on its own) when
// ctx ends, so that a stuck store cannot hang a session's start.
func callStore[T any](ctx context.Context, op string, key SessionKey, f func(context.Context) (T, error)) (T, error) {
	type res struct {
		v   T
		err error
	}
	ch := make(chan res, 1)
	go func() {
		var r res
		defer func() {
			if p := recover(); p != nil {
				r.err = fmt.Errorf("panic: %v\n%s", p, debug.Stack())
			}
			ch <- r
		}()
		r.v, r.err = f(ctx)
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			return r.v, &SessionStoreError{Op: op, Key: key, Err: r.err}
		}
		return r.v, nil
	case <-ctx.Done():
		var zero T
		return zero, &SessionStoreError{Op: op, Key: key, Err: ctx.Err()}
	}
}

// SessionSummary is what a store keeps per session to list sessions
// without reading their transcripts: FoldSessionSummary updates it on
// every Append, and SessionSummaryLister returns it.
type SessionSummary struct {
	SessionID string
	// ModTime is when the store wrote the session: the store's clock,
	// the same as its SessionLister reports, not the entries' times.
	ModTime time.Time
	// Data is Tether's state; persist it as it is and do not read it.
	// It has the TypeScript SDK's layout, so either SDK can read a
	// summary the other folded.
	Data json.RawMessage
}

// summaryData is SessionSummary.Data. Set-once fields freeze on first
// sight; the others take the last value seen.
type summaryData struct {
	IsSidechain       *bool  `json:"isSidechain,omitempty"`
	CreatedAt         *int64 `json:"createdAt,omitempty"` // ms since the epoch
	Cwd               string `json:"cwd,omitempty"`
	FirstPrompt       string `json:"firstPrompt,omitempty"`
	FirstPromptLocked bool   `json:"firstPromptLocked,omitempty"`
	CustomTitle       string `json:"customTitle,omitempty"`
	AITitle           string `json:"aiTitle,omitempty"`
	LastPrompt        string `json:"lastPrompt,omitempty"`
	SummaryHint       string `json:"summaryHint,omitempty"`
	GitBranch         string `json:"gitBranch,omitempty"`
	Tag               string `json:"tag,omitempty"`
}

// FoldSessionSummary folds a batch of entries appended to key into the
// session's summary: prev is the summary before them (nil for the first
// Append), modTime the time the store wrote them (the zero time keeps
// prev's). It is pure; a store whose Appends for one session can race
// must serialize the read-fold-write itself.
//
// Set-once fields (sidechain, creation time, working directory, first
// prompt) freeze on first sight; the others (titles, last prompt,
// summary, git branch, tag) take the last value seen.
func FoldSessionSummary(prev *SessionSummary, key SessionKey, entries []SessionStoreEntry, modTime time.Time) SessionSummary {
	out := SessionSummary{SessionID: key.SessionID}
	var d summaryData
	if prev != nil {
		out.SessionID, out.ModTime = prev.SessionID, prev.ModTime
		_ = unmarshal(prev.Data, &d)
	}
	if !modTime.IsZero() {
		out.ModTime = modTime
	}
	for _, e := range entries {
		var f struct {
			Type        string  `json:"type"`
			Timestamp   string  `json:"timestamp"`
			IsSidechain bool    `json:"isSidechain"`
			Cwd         string  `json:"cwd"`
			CustomTitle *string `json:"customTitle"`
			AITitle     *string `json:"aiTitle"`
			LastPrompt  *string `json:"lastPrompt"`
			Summary     *string `json:"summary"`
			GitBranch   *string `json:"gitBranch"`
			Tag         *string `json:"tag"`
			Relocated   string  `json:"relocatedCwd"`
		}
		if unmarshal(e, &f) != nil {
			continue
		}
		if d.IsSidechain == nil {
			d.IsSidechain = &f.IsSidechain
		}
		if t, err := time.Parse(time.RFC3339Nano, f.Timestamp); err == nil && d.CreatedAt == nil {
			ms := t.UnixMilli()
			d.CreatedAt = &ms
		}
		if d.Cwd == "" {
			d.Cwd = f.Cwd
		}
		if !d.FirstPromptLocked && f.Type == "user" {
			if ue, err := DecodeSessionEntry(e); err == nil {
				if u, ok := ue.(*UserEntry); ok {
					if p := u.prompt(); p != "" {
						d.FirstPrompt, d.FirstPromptLocked = p, true
					}
				}
			}
		}
		for _, c := range []struct {
			v   *string
			dst *string
		}{{f.CustomTitle, &d.CustomTitle}, {f.AITitle, &d.AITitle}, {f.LastPrompt, &d.LastPrompt}, {f.Summary, &d.SummaryHint}, {f.GitBranch, &d.GitBranch}} {
			if c.v != nil {
				*c.dst = *c.v
			}
		}
		if f.Type == "tag" && f.Tag != nil {
			d.Tag = *f.Tag
		}
		if f.Type == "relocated" && f.Relocated != "" {
			d.Cwd = f.Relocated
		}
	}
	out.Data, _ = json.Marshal(d)
	return out
}

// info turns a summary into the SessionInfo StoreListSessions returns;
// ok is false for a subagent's transcript or one with nothing to show.
func (s *SessionSummary) info() (SessionInfo, bool) {
	var d summaryData
	if unmarshal(s.Data, &d) != nil || d.IsSidechain != nil && *d.IsSidechain {
		return SessionInfo{}, false
	}
	si := SessionInfo{
		ID: s.SessionID, ModTime: s.ModTime, Title: cmpOr(d.CustomTitle, d.AITitle), Tag: d.Tag,
		Summary: d.SummaryHint, FirstPrompt: d.FirstPrompt, LastPrompt: d.LastPrompt, Cwd: d.Cwd, GitBranch: d.GitBranch,
	}
	if d.CreatedAt != nil {
		si.CreatedAt = time.UnixMilli(*d.CreatedAt).UTC()
	}
	return si, si.DisplayTitle() != "" || si.LastPrompt != ""
}

func cmpOr(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

// entriesToJSONL renders entries as the lines of a session file.
func entriesToJSONL(entries []SessionStoreEntry) []byte {
	var b bytes.Buffer
	for _, e := range entries {
		line := bytes.TrimSpace(e)
		if len(line) == 0 {
			continue
		}
		if bytes.ContainsAny(line, "\n\r") {
			// Pretty-printed by a store: compact it back onto one line.
			var c bytes.Buffer
			if json.Compact(&c, line) == nil {
				line = c.Bytes()
			}
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// validSubpath reports whether a subpath from a store is safe to write
// under a session's folder: relative, no "..", no empty segment.
func validSubpath(p string) bool {
	if p == "" || strings.HasPrefix(p, "/") || strings.Contains(p, "\\") || strings.ContainsRune(p, 0) {
		return false
	}
	return !slices.ContainsFunc(strings.Split(p, "/"), func(s string) bool { return s == "" || s == "." || s == ".." })
}
