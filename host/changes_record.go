package host

import (
	"cmp"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"time"
)

// A session's record of what it changed, carried to another process:
// an agent of a cluster that takes a session over (after its agent died,
// or to wake it) or takes its place (a resume) has none of the files'
// originals the first process kept. MarshalChanges writes the record and
// Options.ChangesFrom reads it back, as Options.Continues does within
// one process.
//
// The record is JSON, and a promise between releases: its "v" names the
// form (1); a reader ignores members it does not know and a record of a
// form it does not know (the session then starts its record afresh, as
// before there were records).

// changeRecordVersion is the form MarshalChanges writes.
const changeRecordVersion = 1

type changeRecord struct {
	V     int                      `json:"v"`
	Cwd   string                   `json:"cwd"`
	Root  string                   `json:"root,omitempty"`
	Head  string                   `json:"head,omitempty"`
	Dirty map[string]*recordedBase `json:"dirty,omitempty"` // by path relative to Root, as git names it
	Files []recordedFile           `json:"files,omitempty"` // in the order the tools touched them
}

type recordedFile struct {
	Path  string       `json:"path"`
	Tools []string     `json:"tools,omitempty"`
	Base  recordedBase `json:"base"`
}

// recordedBase is a baseline: Data is the content (base64 in JSON) of a
// regular file kept whole; a file not kept whole is TooLarge (its Size
// and MTime tell a change) or Special; Unread, a file that existed but
// could not be read.
type recordedBase struct {
	Exists   bool      `json:"exists,omitempty"`
	Data     []byte    `json:"data,omitempty"`
	TooLarge bool      `json:"too_large,omitempty"`
	Special  bool      `json:"special,omitempty"`
	Unread   bool      `json:"unread,omitempty"`
	Size     int64     `json:"size,omitempty"`
	MTime    time.Time `json:"mtime,omitzero"`
}

func recordBase(b baseline) *recordedBase {
	return &recordedBase{Exists: b.exists, Data: b.data, TooLarge: b.tooLarge, Special: b.special,
		Unread: b.exists && !b.tooLarge && !b.special && b.data == nil, Size: b.size, MTime: b.mtime}
}

func (r *recordedBase) baseline() baseline {
	b := baseline{exists: r.Exists, data: r.Data, tooLarge: r.TooLarge, special: r.Special, size: r.Size, mtime: r.MTime}
	if !b.exists || b.tooLarge || b.special || r.Unread {
		b.data = nil
	} else if b.data == nil {
		b.data = []byte{} // an empty file
	}
	return b
}

// MarshalChanges returns the session's record of the files it changed
// (what Changes and RevertChanges work from: the start commit, the files
// dirty then and those its tools touched, with their originals) as JSON,
// for Options.ChangesFrom of a session that takes its conversation up in
// another process. With limit > 0 the record is at most limit bytes: the
// largest originals are left out first, each then known as too large to
// diff (its size and time still tell a change); a record that does not
// fit even so is an error. A session that keeps no record (never
// started) gives nil, nil.
func (s *Session) MarshalChanges(limit int) ([]byte, error) {
	t := &s.changes
	t.mu.Lock()
	if t.files == nil {
		t.mu.Unlock()
		return nil, nil
	}
	r := changeRecord{V: changeRecordVersion, Cwd: t.cwd, Root: t.root, Head: t.head}
	if len(t.dirty) > 0 {
		r.Dirty = make(map[string]*recordedBase, len(t.dirty))
		for rel, b := range t.dirty {
			r.Dirty[rel] = recordBase(*b)
		}
	}
	for _, p := range t.order {
		if f := t.files[p]; f != nil {
			r.Files = append(r.Files, recordedFile{Path: p, Tools: slices.Clone(f.tools), Base: *recordBase(f.base)})
		}
	}
	t.mu.Unlock() // the originals are never changed in place
	data, err := json.Marshal(&r)
	if err != nil || limit <= 0 || len(data) <= limit {
		return data, err
	}
	// Leave out the largest originals, enough of them for the rest to fit
	// (each takes its base64 length and a few bytes of members).
	var kept []*recordedBase
	for _, b := range r.Dirty {
		if len(b.Data) > 0 {
			kept = append(kept, b)
		}
	}
	for i := range r.Files {
		if b := &r.Files[i].Base; len(b.Data) > 0 {
			kept = append(kept, b)
		}
	}
	slices.SortFunc(kept, func(a, b *recordedBase) int { return cmp.Compare(len(b.Data), len(a.Data)) })
	over := len(data) - limit
	for _, b := range kept {
		if over <= 0 {
			break
		}
		over -= base64.StdEncoding.EncodedLen(len(b.Data)) - 48 // "too_large":true,"size":N instead
		b.Size = cmp.Or(b.Size, int64(len(b.Data)))
		b.Data, b.TooLarge = nil, true
	}
	if data, err = json.Marshal(&r); err == nil && len(data) > limit {
		err = fmt.Errorf("host: change record of %d bytes, over the limit of %d even without the originals that would not fit", len(data), limit)
		data = nil
	}
	return data, err
}

// takeRecord takes over a record that MarshalChanges wrote (the session
// whose conversation this one continues, in another process), as
// inherit does. It reports why it did not: a record it cannot read, of
// another form or for another working directory. Called after begin,
// before any turn.
func (t *changeTracker) takeRecord(data []byte) error {
	var r changeRecord
	if err := json.Unmarshal(data, &r); err != nil {
		return fmt.Errorf("unreadable change record: %w", err)
	}
	if r.V != changeRecordVersion {
		return fmt.Errorf("change record of form %d (this release reads %d)", r.V, changeRecordVersion)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.files == nil {
		return nil // never begun
	}
	if r.Cwd != t.cwd {
		return fmt.Errorf("change record of folder %s, not %s", r.Cwd, t.cwd)
	}
	kept := 0
	dirty := make(map[string]*baseline, len(r.Dirty))
	for rel, rb := range r.Dirty {
		if rb == nil || len(dirty) >= maxChangeDirty {
			continue
		}
		b := rb.baseline()
		dirty[rel] = &b
		kept += len(b.data)
	}
	files := make(map[string]*touched, len(r.Files))
	var order []string
	for _, f := range r.Files {
		if f.Path == "" || files[f.Path] != nil {
			continue
		}
		files[f.Path] = &touched{base: f.Base.baseline(), tools: slices.Clone(f.Tools)}
		order = append(order, f.Path)
		kept += len(files[f.Path].base.data)
	}
	if kept > maxChangeKept {
		return fmt.Errorf("change record keeps %d bytes of originals, over the bound of %d", kept, maxChangeKept)
	}
	if r.Root != t.root {
		return fmt.Errorf("change record of repository %q, and %s is in %q here", r.Root, t.cwd, t.root)
	}
	t.root, t.head, t.kept = r.Root, r.Head, kept
	t.dirty, t.files, t.order = dirty, files, order
	return nil
}

// continueChanges takes over the change record of the session this one
// continues: from's in this process, else the record from another
// (Options.Continues, Options.ChangesFrom).
func (s *Session) continueChanges(from *Session, record []byte) {
	switch {
	case from != nil && from != s:
		s.changes.inherit(&from.changes)
	case len(record) > 0:
		if err := s.changes.takeRecord(record); err != nil {
			s.log.Warn("host: the change record carried over is not used; changes count from now", "session", s.id, "err", err)
		}
	}
}
