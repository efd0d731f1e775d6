package claude

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"
)

// MemorySessionStore is a SessionStore in memory, with every optional
// capability: for tests, development, and as a reference for writing a
// real one. Its data is gone when the process exits. The zero value is
// ready to use; it is safe for concurrent use.
//
// It lives in package claude, not claudetest, because it is a complete
// store a program may run with (a single-process server resuming
// sessions across CLI restarts), like the TypeScript SDK's
// InMemorySessionStore; it fakes nothing.
type MemorySessionStore struct {
	mu        sync.Mutex
	entries   map[SessionKey][]SessionStoreEntry
	mtimes    map[SessionKey]time.Time
	summaries map[SessionKey]SessionSummary // by main key
	last      time.Time
}

var (
	_ SessionStore         = (*MemorySessionStore)(nil)
	_ SessionLister        = (*MemorySessionStore)(nil)
	_ SessionSummaryLister = (*MemorySessionStore)(nil)
	_ SessionDeleter       = (*MemorySessionStore)(nil)
	_ SubkeyLister         = (*MemorySessionStore)(nil)
)

func (m *MemorySessionStore) init() {
	if m.entries == nil {
		m.entries = map[SessionKey][]SessionStoreEntry{}
		m.mtimes = map[SessionKey]time.Time{}
		m.summaries = map[SessionKey]SessionSummary{}
	}
}

// Append implements SessionStore. It keeps a copy of each entry and
// folds main transcripts into their summary.
func (m *MemorySessionStore) Append(ctx context.Context, key SessionKey, entries []SessionStoreEntry) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.init()
	for _, e := range entries {
		m.entries[key] = append(m.entries[key], slices.Clone(e))
	}
	if _, ok := m.entries[key]; !ok {
		m.entries[key] = []SessionStoreEntry{}
	}
	// Strictly increasing modification times, so that the most recent
	// session is well defined even within one clock tick.
	now := time.Now()
	if !now.After(m.last) {
		now = m.last.Add(time.Millisecond)
	}
	m.last = now
	m.mtimes[key] = now
	if key.Subpath == "" {
		var prev *SessionSummary
		if p, ok := m.summaries[key]; ok {
			prev = &p
		}
		m.summaries[key] = FoldSessionSummary(prev, key, entries, now)
	}
	return nil
}

// Load implements SessionStore.
func (m *MemorySessionStore) Load(ctx context.Context, key SessionKey) ([]SessionStoreEntry, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	es, ok := m.entries[key]
	if !ok {
		return nil, nil
	}
	out := make([]SessionStoreEntry, len(es))
	for i, e := range es {
		out[i] = slices.Clone(e)
	}
	return out, nil
}

// ListSessions implements SessionLister.
func (m *MemorySessionStore) ListSessions(ctx context.Context, projectKey string) ([]StoredSession, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []StoredSession
	for k := range m.entries {
		if k.ProjectKey == projectKey && k.Subpath == "" {
			out = append(out, StoredSession{SessionID: k.SessionID, ModTime: m.mtimes[k]})
		}
	}
	return out, nil
}

// ListSessionSummaries implements SessionSummaryLister.
func (m *MemorySessionStore) ListSessionSummaries(ctx context.Context, projectKey string) ([]SessionSummary, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []SessionSummary
	for k, s := range m.summaries {
		if k.ProjectKey == projectKey {
			out = append(out, s)
		}
	}
	return out, nil
}

// Delete implements SessionDeleter: a main key takes its subkeys along.
func (m *MemorySessionStore) Delete(ctx context.Context, key SessionKey) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for k := range m.entries {
		if k == key || key.Subpath == "" && k.ProjectKey == key.ProjectKey && k.SessionID == key.SessionID {
			delete(m.entries, k)
			delete(m.mtimes, k)
		}
	}
	if key.Subpath == "" {
		delete(m.summaries, key)
	}
	return nil
}

// ListSubkeys implements SubkeyLister.
func (m *MemorySessionStore) ListSubkeys(ctx context.Context, key SessionKey) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for k := range m.entries {
		if k.ProjectKey == key.ProjectKey && k.SessionID == key.SessionID && k.Subpath != "" {
			out = append(out, k.Subpath)
		}
	}
	slices.Sort(out)
	return out, nil
}

// Keys returns every key the store holds, sorted: a test helper.
func (m *MemorySessionStore) Keys() []SessionKey {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]SessionKey, 0, len(m.entries))
	for k := range m.entries {
		out = append(out, k)
	}
	slices.SortFunc(out, func(a, b SessionKey) int { return strings.Compare(a.String(), b.String()) })
	return out
}
