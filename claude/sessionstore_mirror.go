package claude

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Mirroring a session to Options.SessionStore, and resuming one from it.
//
// The read loop hands transcript_mirror frames to the session's mirror
// (take) instead of queueing them for Receive, as the TypeScript SDK
// peels them off its stream. One goroutine per session appends them, in
// order, so a store never sees two Appends of one session at once.

// Mirror bounds and timings, the TypeScript SDK's where it has them.
// Variables only so that tests can shrink them.
var (
	// mirrorBatchEntries and mirrorBatchBytes make a batched mirror
	// append before the turn ends.
	mirrorBatchEntries = 500
	mirrorBatchBytes   = 1 << 20
	// mirrorMaxPending bounds the frames waiting for a slow store. Past
	// it new frames are dropped, and a *MirrorErrorMessage says so: the
	// CLI and the session go on (its file has everything), the store
	// has a gap.
	mirrorMaxPending = 64 << 20
	// mirrorAppendTimeout bounds one Append; a call that times out is
	// not retried, since it may still land.
	mirrorAppendTimeout = 60 * time.Second
	// mirrorCloseWait is how long Close waits for the last Appends
	// before cancelling them.
	mirrorCloseWait = 5 * time.Second
)

// mirrorBackoff are the waits between Append attempts: 3 attempts.
var mirrorBackoff = []time.Duration{200 * time.Millisecond, 800 * time.Millisecond}

// mirrorFrame is one transcript_mirror frame.
type mirrorFrame struct {
	FilePath string              `json:"filePath"`
	Entries  []SessionStoreEntry `json:"entries"`
	size     int
}

// storeMirror is a session's link to Options.SessionStore. A nil
// *storeMirror (no store) does nothing.
type storeMirror struct {
	s         *Session
	store     SessionStore
	eager     bool
	configDir string // the CLI's, to turn file paths into keys
	log       *slog.Logger

	ctx    context.Context // cancelled when Close gives up waiting
	cancel context.CancelFunc
	done   chan struct{} // closed when the goroutine has ended

	mu      sync.Mutex
	pending []mirrorFrame
	entries int
	bytes   int
	flushes []chan struct{} // closed once what was pending at the request is appended
	dropped int             // entries dropped since the last report
	dropKey SessionKey      // the key of the last dropped frame
	wake    chan struct{}   // 1-buffered

	tmpDir string // a resume's materialized config dir, removed at the end
}

// newStoreMirror starts the mirror of a session whose options have a
// store; it must run before the read loop starts.
func newStoreMirror(s *Session) *storeMirror {
	if s.opts.SessionStore == nil {
		return nil
	}
	m := &storeMirror{
		s:         s,
		store:     s.opts.SessionStore,
		eager:     s.opts.SessionStoreFlush == SessionStoreFlushEager,
		configDir: s.opts.cliConfigDir(),
		log:       s.log,
		done:      make(chan struct{}),
		wake:      make(chan struct{}, 1),
	}
	m.ctx, m.cancel = context.WithCancel(context.Background())
	go m.run()
	return m
}

// take is the read loop's hook: it keeps transcript_mirror frames and
// notes results (the end of a turn, when a batched mirror appends). It
// reports whether the line was consumed.
func (m *storeMirror) take(typ string, line []byte) bool {
	if m == nil {
		return false
	}
	switch typ {
	case "transcript_mirror":
		var f mirrorFrame
		if err := unmarshal(line, &f); err != nil {
			m.log.Warn("claude: transcript_mirror frame not understood", "err", err)
			return true
		}
		f.size = len(line)
		m.mu.Lock()
		if m.bytes+f.size > mirrorMaxPending {
			first := m.dropped == 0
			m.dropped += len(f.Entries)
			if k, ok := mirrorKey(m.configDir, f.FilePath); ok {
				m.dropKey = k
			}
			m.mu.Unlock()
			if first {
				// Say so now, not when the store catches up.
				m.report(m.dropKey, fmt.Sprintf("the session store is more than %d bytes behind: dropping transcript entries until it catches up", mirrorMaxPending))
			}
			return true
		}
		m.pending = append(m.pending, f)
		m.entries += len(f.Entries)
		m.bytes += f.size
		m.mu.Unlock()
		m.signal()
		return true
	case "result":
		m.mu.Lock()
		m.flushes = append(m.flushes, nil) // nil: a flush nobody waits for
		m.mu.Unlock()
		m.signal()
	}
	return false
}

func (m *storeMirror) signal() {
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

// run appends what take collected until the session's output ends, then
// appends the rest and returns.
func (m *storeMirror) run() {
	defer close(m.done)
	for {
		ended := false
		select {
		case <-m.wake:
		case <-m.s.readDone:
			ended = true
		case <-m.ctx.Done():
			ended = true
		}
		m.mu.Lock()
		due := ended || m.eager || len(m.flushes) > 0 || m.entries > mirrorBatchEntries || m.bytes > mirrorBatchBytes
		var (
			batch   []mirrorFrame
			flushes []chan struct{}
			dropped int
		)
		if due {
			// The queue empties: a drop episode, if any, ends here.
			batch, m.pending, m.entries, m.bytes = m.pending, nil, 0, 0
			flushes, m.flushes = m.flushes, nil
			dropped, m.dropped = m.dropped, 0
		}
		dropKey := m.dropKey
		m.mu.Unlock()
		if dropped > 0 {
			m.report(dropKey, fmt.Sprintf("the session store fell more than %d bytes behind: %d transcript entries were dropped", mirrorMaxPending, dropped))
		}
		m.append(batch)
		for _, c := range flushes {
			if c != nil {
				close(c)
			}
		}
		if ended {
			m.mu.Lock()
			rest := len(m.pending) > 0
			m.mu.Unlock()
			if !rest || m.ctx.Err() != nil {
				m.mu.Lock()
				for _, c := range m.flushes {
					if c != nil {
						close(c)
					}
				}
				m.flushes = nil
				m.mu.Unlock()
				return
			}
		}
	}
}

// append sends a batch, one Append per file in the order the files first
// appear (frames of one file are joined).
func (m *storeMirror) append(batch []mirrorFrame) {
	if len(batch) == 0 {
		return
	}
	var order []string
	byFile := map[string][]SessionStoreEntry{}
	for _, f := range batch {
		if _, ok := byFile[f.FilePath]; !ok {
			order = append(order, f.FilePath)
		}
		byFile[f.FilePath] = append(byFile[f.FilePath], f.Entries...)
	}
	for _, p := range order {
		key, ok := mirrorKey(m.configDir, p)
		if !ok {
			m.log.Warn("claude: transcript_mirror frame for a file outside the CLI's projects folder; dropped", "path", p)
			continue
		}
		if es := byFile[p]; len(es) > 0 {
			if err := m.send(key, es); err != nil {
				m.report(key, err.Error())
			}
		}
	}
}

// send appends with the retry policy: 3 attempts, a timeout not retried.
func (m *storeMirror) send(key SessionKey, entries []SessionStoreEntry) error {
	var err error
	for attempt := 0; ; attempt++ {
		ctx, cancel := context.WithTimeout(m.ctx, mirrorAppendTimeout)
		_, err = callStore(ctx, "Append", key, func(ctx context.Context) (struct{}, error) {
			return struct{}{}, m.store.Append(ctx, key, entries)
		})
		timedOut := ctx.Err() != nil
		cancel()
		if err == nil {
			return nil
		}
		if timedOut || attempt >= len(mirrorBackoff) {
			m.log.Error("claude: session store append failed", "key", key.String(), "attempts", attempt+1, "err", err)
			return err
		}
		t := time.NewTimer(mirrorBackoff[attempt])
		select {
		case <-t.C:
		case <-m.ctx.Done():
			t.Stop()
			return err
		}
	}
}

// report delivers a *MirrorErrorMessage in the session's stream.
func (m *storeMirror) report(key SessionKey, msg string) {
	line, err := json.Marshal(map[string]any{
		"type": "system", "subtype": "mirror_error", "error": msg,
		"key": key, "uuid": newUUID(), "session_id": key.SessionID,
	})
	if err != nil {
		return
	}
	m.s.enqueue(item{line: line})
}

// flush waits until everything the CLI mirrored before the call is
// appended (or failed), or ctx ends.
func (m *storeMirror) flush(ctx context.Context) error {
	if m == nil {
		return nil
	}
	c := make(chan struct{})
	m.mu.Lock()
	m.flushes = append(m.flushes, c)
	m.mu.Unlock()
	m.signal()
	select {
	case <-c:
		return nil
	case <-m.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// close waits (bounded) for the last Appends after the CLI's output
// ended, then removes a resume's temporary config directory.
func (m *storeMirror) close() {
	if m == nil {
		return
	}
	waitTimeout(func() { <-m.done }, mirrorCloseWait, func() {
		m.log.Warn("claude: the session store is still appending after Close; cancelling")
		m.cancel()
		waitTimeout(func() { <-m.done }, time.Second, func() {
			m.log.Warn("claude: a SessionStore.Append ignores its cancelled context; Close is not waiting for it")
		})
	})
	m.cancel()
	if m.tmpDir != "" {
		_ = os.RemoveAll(m.tmpDir)
	}
}

// FlushSessionStore waits until every transcript entry the CLI reported
// before the call has been appended to Options.SessionStore (or failed,
// with a *MirrorErrorMessage), or ctx ends. Without a store it returns
// nil at once. A batched store is flushed at the end of each turn anyway;
// call it to know the store holds a turn, e.g. before resuming the
// session elsewhere.
func (s *Session) FlushSessionStore(ctx context.Context) error {
	return s.store.flush(ctx)
}

// mirrorKey turns the path of a file the CLI wrote into a SessionKey:
// <configDir>/projects/<projectKey>/<sessionId>.jsonl for the main
// transcript, <…>/<sessionId>/<subpath>.jsonl for the rest. A path
// outside configDir (a CLI on another machine, a container) is read from
// its last "projects" folder instead.
func mirrorKey(configDir, path string) (SessionKey, bool) {
	rel := ""
	if configDir != "" {
		if r, err := filepath.Rel(filepath.Join(configDir, "projects"), path); err == nil && !strings.HasPrefix(r, "..") && !filepath.IsAbs(r) {
			rel = filepath.ToSlash(r)
		}
	}
	if rel == "" {
		p := filepath.ToSlash(path)
		i := strings.LastIndex(p, "/projects/")
		if i < 0 {
			return SessionKey{}, false
		}
		rel = p[i+len("/projects/"):]
		// The projects folder may itself be inside a session's folder
		// only in pathological trees; take the first split that fits.
	}
	parts := strings.Split(rel, "/")
	if len(parts) < 2 || !strings.HasSuffix(rel, ".jsonl") {
		return SessionKey{}, false
	}
	k := SessionKey{ProjectKey: parts[0], SessionID: strings.TrimSuffix(parts[1], ".jsonl")}
	switch {
	case len(parts) == 2:
		return k, true
	case len(parts) >= 4:
		k.Subpath = strings.TrimSuffix(strings.Join(parts[2:], "/"), ".jsonl")
		return k, true
	}
	return SessionKey{}, false
}

// cliEnv returns the value of k in the CLI's environment with these
// options.
func (o *Options) cliEnv(k string) string {
	v := ""
	for _, kv := range o.env(os.Environ()) {
		if name, val, _ := strings.Cut(kv, "="); name == k {
			v = val
		}
	}
	return v
}

// cliConfigDir is the config directory the CLI will use with these
// options: CLAUDE_CONFIG_DIR, else $HOME/.claude, from its environment.
func (o *Options) cliConfigDir() string {
	if d := o.cliEnv(EnvConfigDir); d != "" {
		return d
	}
	if h := o.cliEnv("HOME"); h != "" {
		return filepath.Join(h, ".claude")
	}
	return ""
}

func (o *Options) storeArgs() []string {
	if o.SessionStore == nil {
		return nil
	}
	return []string{"--session-mirror"}
}

func (o *Options) validateSessionStore() error {
	if o.SessionStore == nil {
		if o.SessionStoreFlush != "" || o.SessionStoreLoadTimeout != 0 {
			return errors.New("claude: Options.SessionStoreFlush and SessionStoreLoadTimeout need SessionStore")
		}
		return nil
	}
	switch o.SessionStoreFlush {
	case "", SessionStoreFlushBatched, SessionStoreFlushEager:
	default:
		return fmt.Errorf("claude: Options.SessionStoreFlush %q is not batched or eager", o.SessionStoreFlush)
	}
	if o.SessionStoreLoadTimeout < 0 {
		return fmt.Errorf("claude: Options.SessionStoreLoadTimeout is negative (%s)", o.SessionStoreLoadTimeout)
	}
	if o.NoSessionPersistence {
		// The CLI mirrors what it wrote to its file: no file, no mirror.
		return errors.New("claude: Options.SessionStore needs the session file; NoSessionPersistence is set (point CLAUDE_CONFIG_DIR at a temporary directory instead)")
	}
	if o.EnableFileCheckpointing {
		// Checkpoint backups are not in the transcript, so RewindFiles
		// would fail after a resume from the store.
		return errors.New("claude: Options.EnableFileCheckpointing is not supported with SessionStore")
	}
	if _, ok := o.SessionStore.(SessionLister); o.Continue && !ok {
		return fmt.Errorf("claude: Options.Continue with a SessionStore needs a SessionLister: %w", ErrSessionStoreUnsupported)
	}
	return nil
}

// restoreFromStore prepares a resume from the store (Options.Resume or
// Continue with SessionStore): it loads the transcript (and its subkeys,
// with a SubkeyLister) into a new temporary config directory, points the
// CLI at it with CLAUDE_CONFIG_DIR, and returns the directory, which the
// caller removes when the session ends. It returns "" when there is
// nothing to resume from the store: no store, no resume, or a session the
// store does not have (the CLI then resumes from its own files, or says
// it found nothing; with Continue, a new session starts).
func (o *Options) restoreFromStore(ctx context.Context) (string, error) {
	if o.SessionStore == nil || o.Resume == "" && !o.Continue {
		return "", nil
	}
	timeout := o.SessionStoreLoadTimeout
	if timeout == 0 {
		timeout = DefaultSessionStoreLoadTimeout
	}
	cwd := o.Cwd
	if cwd == "" {
		cwd, _ = os.Getwd()
	}
	pk := ProjectKey(cwd)
	id := o.Resume
	if o.Continue {
		// With a store, Continue means the store's most recent session,
		// as in the TypeScript SDK: the CLI's own --continue would pick
		// a local file instead. Nothing to continue starts afresh.
		o.Continue = false
	}
	if id == "" {
		lister := o.SessionStore.(SessionLister) // validate checked
		lctx, cancel := context.WithTimeout(ctx, timeout)
		list, err := callStore(lctx, "ListSessions", SessionKey{ProjectKey: pk}, func(ctx context.Context) ([]StoredSession, error) {
			return lister.ListSessions(ctx, pk)
		})
		cancel()
		if err != nil {
			return "", err
		}
		for _, s := range list {
			if id == "" || s.ModTime.After(latestTime(list, id)) {
				id = s.SessionID
			}
		}
		if id == "" {
			return "", nil
		}
	}
	key := SessionKey{ProjectKey: pk, SessionID: id}
	entries, err := loadWithin(ctx, timeout, o.SessionStore, key)
	if err != nil || len(entries) == 0 {
		return "", err
	}
	dir, err := os.MkdirTemp("", "claude-resume-")
	if err != nil {
		return "", fmt.Errorf("claude: resuming from the session store: %w", err)
	}
	if err := o.materialize(ctx, dir, key, entries, timeout); err != nil {
		_ = os.RemoveAll(dir)
		return "", err
	}
	env := make(map[string]string, len(o.Env)+1)
	for k, v := range o.Env {
		env[k] = v
	}
	env[EnvConfigDir] = dir
	o.Env = env
	o.Resume = id
	return dir, nil
}

func latestTime(list []StoredSession, id string) time.Time {
	for _, s := range list {
		if s.SessionID == id {
			return s.ModTime
		}
	}
	return time.Time{}
}

func loadWithin(ctx context.Context, timeout time.Duration, store SessionStore, key SessionKey) ([]SessionStoreEntry, error) {
	lctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return callStore(lctx, "Load", key, func(ctx context.Context) ([]SessionStoreEntry, error) {
		return store.Load(ctx, key)
	})
}

// materialize writes the transcript under dir as a config directory the
// CLI resumes from, with the settings and credentials of the one it
// would have used.
func (o *Options) materialize(ctx context.Context, dir string, key SessionKey, entries []SessionStoreEntry, timeout time.Duration) error {
	proj := filepath.Join(dir, "projects", key.ProjectKey)
	if err := os.MkdirAll(proj, 0o700); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(proj, key.SessionID+".jsonl"), entriesToJSONL(entries), 0o600); err != nil {
		return err
	}
	// What the CLI reads from its config dir besides transcripts: its
	// global config, settings, and credentials (without the refresh
	// token, so that the copy cannot rotate it away from the original).
	src := o.cliConfigDir()
	// The global config is in the config dir when CLAUDE_CONFIG_DIR
	// moves it, else in $HOME.
	globalConfig := filepath.Join(src, ".claude.json")
	if o.cliEnv(EnvConfigDir) == "" {
		globalConfig = filepath.Join(o.cliEnv("HOME"), ".claude.json")
	}
	copyIfExists(globalConfig, filepath.Join(dir, ".claude.json"), nil)
	copyIfExists(filepath.Join(src, ".config.json"), filepath.Join(dir, ".config.json"), nil)
	copyIfExists(filepath.Join(src, "settings.json"), filepath.Join(dir, "settings.json"), nil)
	copyIfExists(filepath.Join(src, ".credentials.json"), filepath.Join(dir, ".credentials.json"), dropRefreshToken)

	sub, ok := o.SessionStore.(SubkeyLister)
	if !ok {
		return nil
	}
	lctx, cancel := context.WithTimeout(ctx, timeout)
	subpaths, err := callStore(lctx, "ListSubkeys", key, func(ctx context.Context) ([]string, error) {
		return sub.ListSubkeys(ctx, key)
	})
	cancel()
	if err != nil {
		return err
	}
	for _, sp := range subpaths {
		if !validSubpath(sp) {
			continue // never write outside the session's folder
		}
		k := key
		k.Subpath = sp
		es, err := loadWithin(ctx, timeout, o.SessionStore, k)
		if err != nil {
			return err
		}
		// A subagent's agent_metadata entry is its .meta.json file, not
		// a transcript line.
		var lines []SessionStoreEntry
		var meta SessionStoreEntry
		for _, e := range es {
			if e.Type() == "agent_metadata" {
				meta = e
				continue
			}
			lines = append(lines, e)
		}
		p := filepath.Join(proj, key.SessionID, filepath.FromSlash(sp))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			return err
		}
		if len(lines) > 0 {
			if err := os.WriteFile(p+".jsonl", entriesToJSONL(lines), 0o600); err != nil {
				return err
			}
		}
		if meta != nil {
			var m map[string]json.RawMessage
			if unmarshal(meta, &m) == nil {
				delete(m, "type")
				if b, err := json.Marshal(m); err == nil {
					_ = os.WriteFile(p+".meta.json", b, 0o600)
				}
			}
		}
	}
	return nil
}

func copyIfExists(from, to string, edit func([]byte) []byte) {
	b, err := os.ReadFile(from)
	if err != nil {
		return
	}
	if edit != nil {
		b = edit(b)
	}
	_ = os.WriteFile(to, b, 0o600)
}

// dropRefreshToken removes OAuth refresh tokens from a credentials file.
func dropRefreshToken(b []byte) []byte {
	var c map[string]json.RawMessage
	if unmarshal(b, &c) != nil {
		return b
	}
	changed := false
	for _, k := range []string{"claudeAiOauth", "hybridOauth"} {
		var o map[string]json.RawMessage
		if raw, ok := c[k]; ok && unmarshal(raw, &o) == nil {
			if _, ok := o["refreshToken"]; ok {
				delete(o, "refreshToken")
				c[k], _ = json.Marshal(o)
				changed = true
			}
		}
	}
	if !changed {
		return b
	}
	out, err := json.Marshal(c)
	if err != nil {
		return b
	}
	return out
}
