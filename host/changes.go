package host

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	udiff "github.com/aymanbagabas/go-udiff"

	"github.com/tetherhq/tether/claude"
)

// What a session changed in files (Session.Changes, RevertChanges).
//
// The session keeps, for each file its tools touch, the file as it was
// before: from the tool's own result (Edit's, Write's, MultiEdit's and
// NotebookEdit's originalFile, written by the CLI before it changed the
// file), else read from disk when the tool call is seen. Where the
// working directory is in a git repository, it also notes at the start
// the commit (HEAD) and the files that differed from it then (modified
// or untracked, with their content), so that git finds what else
// changed (Bash's edits, a commit made by the session) and the original
// of each file is its state at the session's start.
//
// Bounds: a file's original is kept up to 1 MiB (larger, the file is
// listed "too large to diff": it is known to have changed by its size
// and time, and git can still restore it when HEAD has it); the
// originals kept by one session total at most 32 MiB (past that, as
// too large); at most 2000 files dirty at the start are noted; a
// Changes answer lists at most 500 files and carries at most 4 MiB of
// diffs and texts (past that, files are listed as too large to show).

// FileChangeKind says what happened to a file.
type FileChangeKind string

// The kinds of FileChange.
const (
	FileCreated  FileChangeKind = "created"
	FileModified FileChangeKind = "modified"
	FileDeleted  FileChangeKind = "deleted"
)

// FileChange is a file the session changed, compared with its state at
// the session's start (Session.Changes; the "changes" command's result).
type FileChange struct {
	// Path is the file's absolute path; Rel is it relative to the
	// session's working directory, when it is below it.
	Path string         `json:"path"`
	Rel  string         `json:"rel,omitempty"`
	Kind FileChangeKind `json:"kind"`
	// Tools are the tools whose calls changed it (Edit, Write, …), in
	// order; empty for a change only git saw (a Bash command, say).
	Tools []string `json:"tools,omitempty"`
	// Diff is the unified diff from the start's content to the file's
	// now, with three lines of context.
	Diff string `json:"diff,omitempty"`
	// Old and New are the whole texts, start and now, for a viewer that
	// renders its own diff ("" for the side a created or deleted file
	// lacks).
	Old string `json:"old,omitempty"`
	New string `json:"new,omitempty"`
	// Added and Removed count the diff's lines.
	Added   int `json:"added"`
	Removed int `json:"removed"`
	// Binary: the file is not text; there is no diff. TooLarge: it is
	// over the bounds (see the package's notes); there is no diff.
	Binary   bool `json:"binary,omitempty"`
	TooLarge bool `json:"too_large,omitempty"`
}

// FilesChanged is the payload of EventFilesChanged: a hint that the
// session's changes may differ now. A client that shows them asks again
// (Session.Changes, the "changes" command).
type FilesChanged struct {
	// ToolUseID and Tool are the tool call whose result came (Tool
	// "Bash" in a git repository: Paths unknown).
	ToolUseID string `json:"tool_use_id,omitempty"`
	Tool      string `json:"tool,omitempty"`
	// Paths are the files it changed, absolute, when known.
	Paths []string `json:"paths,omitempty"`
	// Reverted is set after RevertChanges.
	Reverted bool `json:"reverted,omitempty"`
	// By is who reverted (Command.Actor).
	By string `json:"by,omitempty"`
}

// ErrNotChanged is returned by RevertChanges for a path the session did
// not change.
var ErrNotChanged = errors.New("host: file not changed by this session")

const (
	maxChangeFile    = 1 << 20
	maxChangeKept    = 32 << 20
	maxChangeDirty   = 2000
	maxChangeList    = 500
	maxChangeAnswer  = 4 << 20
	maxChangePending = 1024
	gitTimeout       = 10 * time.Second
)

// editTools are the tools whose results name the file they changed.
var editTools = []string{"Edit", "Write", "MultiEdit", "NotebookEdit"}

// baseline is a file as it was.
type baseline struct {
	exists   bool
	data     []byte // nil when too large or special
	tooLarge bool
	special  bool      // not a regular file (a link, a pipe, …): never read, never followed
	size     int64     // tooLarge: to tell a change
	mtime    time.Time // tooLarge
}

type touched struct {
	base  baseline
	tools []string
}

// pendingTool is a followed tool call awaiting its result.
type pendingTool struct {
	name, path string
	base       *baseline // the file as read when the call was seen; nil when the session had it
}

// changeTracker is a session's record of what its tools touched. Its
// lock is taken after the session's, never before.
type changeTracker struct {
	mu      sync.Mutex
	cwd     string
	git     string // the git binary; "" without
	root    string // the repository's top directory; "" when not in one
	head    string // the commit at the start; "" for none
	dirty   map[string]*baseline
	files   map[string]*touched
	order   []string
	pending map[string]pendingTool
	kept    int
	first   string // the uuid of the first prompt's replay (rewind_files)
}

// begin notes the working directory and, in a git repository, the
// start commit and what differed from it then. It is called when the
// session starts (or a spare is claimed), before any turn.
func (t *changeTracker) begin(cwd string) {
	if cwd == "" {
		cwd, _ = os.Getwd()
	}
	if abs, err := filepath.Abs(cwd); err == nil {
		cwd = abs
	}
	if r, err := filepath.EvalSymlinks(cwd); err == nil {
		cwd = r
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.cwd = cwd
	t.files, t.pending, t.dirty = map[string]*touched{}, map[string]pendingTool{}, map[string]*baseline{}
	t.root, t.head, t.kept = "", "", 0
	git, err := exec.LookPath("git")
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), gitTimeout)
	defer cancel()
	top, err := runGit(ctx, git, cwd, "rev-parse", "--show-toplevel")
	if err != nil {
		return
	}
	t.git, t.root = git, strings.TrimSpace(string(top))
	if h, err := runGit(ctx, git, t.root, "rev-parse", "--verify", "-q", "HEAD"); err == nil {
		t.head = strings.TrimSpace(string(h))
	}
	st, err := runGit(ctx, git, t.root, "status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames")
	if err != nil {
		return
	}
	for _, e := range strings.Split(string(st), "\x00") {
		if len(e) < 4 || len(t.dirty) >= maxChangeDirty {
			continue
		}
		rel := e[3:]
		b := t.read(filepath.Join(t.root, rel))
		t.dirty[rel] = &b
	}
}

// inherit takes over what from recorded (a session whose conversation
// this one continues, in the same folder): its start commit, the files
// dirty then and those its tools touched, with their originals. The
// first prompt (rewind_files) stays this session's own: the CLI's
// checkpoints are its process's. Called after begin, before any turn.
func (t *changeTracker) inherit(from *changeTracker) {
	from.mu.Lock()
	defer from.mu.Unlock()
	t.mu.Lock()
	defer t.mu.Unlock()
	if from.files == nil || t.files == nil || from.cwd != t.cwd {
		return
	}
	t.git, t.root, t.head, t.kept = from.git, from.root, from.head, from.kept
	t.dirty = maps.Clone(from.dirty) // baselines are never changed in place
	t.order = slices.Clone(from.order)
	t.files = make(map[string]*touched, len(from.files))
	for p, f := range from.files {
		t.files[p] = &touched{base: f.base, tools: slices.Clone(f.tools)}
	}
}

// runGit runs git in dir and returns its output.
func runGit(ctx context.Context, git, dir string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, git, append([]string{"-C", dir, "-c", "core.quotepath=off"}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_OPTIONAL_LOCKS=0", "LC_ALL=C")
	var errb bytes.Buffer
	cmd.Stderr = &errb
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git %s: %w: %s", args[0], err, strings.TrimSpace(errb.String()))
	}
	return out, nil
}

// read reads a file as a baseline, keeping its content when the bounds
// allow (t.mu held).
func (t *changeTracker) read(path string) baseline {
	b, ok := readBounded(path)
	if ok && !b.tooLarge && t.kept+len(b.data) > maxChangeKept {
		b.data, b.tooLarge = nil, true
	}
	t.kept += len(b.data)
	return b
}

// readBounded reads a file: ok is false when it cannot be read (it may
// not exist: b.exists says).
func readBounded(path string) (b baseline, ok bool) {
	// A link is not followed (it may lead out of the session's reach,
	// where the server could read what the CLI could not), nor a pipe
	// opened (it would block).
	li, err := os.Lstat(path)
	if err != nil {
		return baseline{exists: !errors.Is(err, fs.ErrNotExist)}, !errors.Is(err, fs.ErrNotExist)
	}
	if !li.Mode().IsRegular() {
		return baseline{exists: true, special: true, size: li.Size(), mtime: li.ModTime()}, true
	}
	f, err := os.Open(path)
	if err != nil {
		return baseline{exists: !errors.Is(err, fs.ErrNotExist)}, !errors.Is(err, fs.ErrNotExist)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return baseline{exists: true, special: true}, true
	}
	b = baseline{exists: true, size: fi.Size(), mtime: fi.ModTime()}
	data, err := io.ReadAll(io.LimitReader(f, maxChangeFile+1))
	if err != nil {
		return b, false
	}
	if len(data) > maxChangeFile {
		b.tooLarge = true
		return b, true
	}
	b.data = data
	if b.data == nil {
		b.data = []byte{}
	}
	return b, true
}

// abs makes a tool's path absolute (t.mu held).
func (t *changeTracker) abs(p string) string {
	if p == "" {
		return ""
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(t.cwd, p)
	}
	p = filepath.Clean(p)
	if dir, err := filepath.EvalSymlinks(filepath.Dir(p)); err == nil {
		p = filepath.Join(dir, filepath.Base(p))
	}
	return p
}

// toolUse notes a tool call seen in an assistant message (on the
// receive loop, the session's lock released): for an edit of a file the
// session does not have yet, the file as it is now, kept with the call
// until its result says whether the tool changed it (a file the CLI
// refused to touch is never listed).
func (t *changeTracker) toolUse(tu *claude.ToolUseBlock) {
	if !slices.Contains(editTools, tu.Name) && tu.Name != "Bash" {
		return
	}
	var in struct {
		FilePath     string `json:"file_path"`
		NotebookPath string `json:"notebook_path"`
	}
	_ = json.Unmarshal(tu.Input, &in)
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.files == nil {
		return // never begun
	}
	path := t.abs(cmpOr(in.FilePath, in.NotebookPath))
	if len(t.pending) >= maxChangePending {
		// Results lost to a broken stream: start over.
		for id := range t.pending {
			t.drop(id)
		}
	}
	p := pendingTool{name: tu.Name, path: path}
	if path != "" && t.files[path] == nil {
		b := t.read(path)
		p.base = &b
	}
	t.pending[tu.ID] = p
}

// drop forgets a pending call and the read it kept (t.mu held).
func (t *changeTracker) drop(id string) {
	if p, ok := t.pending[id]; ok && p.base != nil {
		t.kept -= len(p.base.data)
	}
	delete(t.pending, id)
}

// inRepo reports whether the session works in a git repository.
func (t *changeTracker) inRepo() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.root != ""
}

// toolResult notes a followed tool's result and returns its call (ok
// false for a call it does not follow). A successful edit of a file the
// session did not have adds it, as it was before the tool: from the
// result (originalFile, written by the CLI before the change), else as
// read when the call was seen. It only decodes (s.mu may be held).
func (t *changeTracker) toolResult(id string, isError bool, raw json.RawMessage) (p pendingTool, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	p, ok = t.pending[id]
	if !ok {
		return p, false
	}
	if p.path == "" || isError {
		t.drop(id)
		return p, true
	}
	delete(t.pending, id) // its read, if any, becomes the file's
	f := t.files[p.path]
	if f != nil {
		if p.base != nil {
			t.kept -= len(p.base.data) // a call seen before the file's first result
		}
		if !slices.Contains(f.tools, p.name) {
			f.tools = append(f.tools, p.name)
		}
		return p, true
	}
	f = &touched{tools: []string{p.name}}
	if p.base != nil {
		f.base = *p.base
	}
	t.files[p.path] = f
	t.order = append(t.order, p.path)
	var r struct {
		Type      string  `json:"type"`
		Original  *string `json:"originalFile"`
		Original2 *string `json:"original_file"`
		OldString *string `json:"oldString"`
	}
	if json.Unmarshal(raw, &r) != nil {
		return p, true
	}
	orig := r.Original
	if orig == nil {
		orig = r.Original2
	}
	switch {
	case p.name == "Write" && r.Type == "create":
		t.kept -= len(f.base.data)
		f.base = baseline{}
	case orig != nil && len(*orig) <= maxChangeFile:
		if *orig == "" && p.name == "Edit" && r.OldString != nil && *r.OldString == "" && !f.base.exists {
			return p, true // an Edit that created the file
		}
		t.kept -= len(f.base.data)
		if t.kept+len(*orig) > maxChangeKept {
			// Over the session's bound: known only as changed.
			f.base = baseline{exists: true, tooLarge: true, size: int64(len(*orig))}
			return p, true
		}
		f.base = baseline{exists: true, data: []byte(*orig)}
		t.kept += len(*orig)
	}
	return p, true
}

// notePrompt remembers the first prompt the CLI took (for rewind_files).
func (t *changeTracker) notePrompt(uuid string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.first == "" {
		t.first = uuid
	}
}

// change is a FileChange with what a revert needs.
type change struct {
	FileChange
	base    baseline
	fromGit bool // the original is the start commit's blob
	rel     string
}

// Changes returns the files the session created, changed or deleted
// since it started, each with its diff against the session's start
// (see FileChange), tool-touched files first in the order they were
// touched, then those only git saw, by path. It reads the files and
// runs git; ctx bounds it. A file changed and then restored is not
// listed.
func (s *Session) Changes(ctx context.Context) ([]FileChange, error) {
	cs, err := s.changes.list(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]FileChange, len(cs))
	for i, c := range cs {
		out[i] = c.FileChange
	}
	return out, nil
}

func (t *changeTracker) list(ctx context.Context) ([]*change, error) {
	t.mu.Lock()
	if t.files == nil {
		t.mu.Unlock()
		return nil, nil
	}
	cwd, git, root, head := t.cwd, t.git, t.root, t.head
	type tool struct {
		base  baseline
		tools []string
	}
	tools := map[string]tool{}
	paths := slices.Clone(t.order)
	for _, p := range paths {
		f := t.files[p]
		tools[p] = tool{f.base, slices.Clone(f.tools)}
	}
	dirty := make(map[string]baseline, len(t.dirty))
	for k, v := range t.dirty {
		dirty[k] = *v
	}
	t.mu.Unlock()

	if root != "" {
		var found []string
		if head != "" {
			out, err := runGit(ctx, git, root, "diff", "--name-only", "-z", "--no-renames", head, "--")
			if err != nil {
				return nil, err
			}
			found = append(found, splitZ(out)...)
		} else {
			out, err := runGit(ctx, git, root, "ls-files", "-z")
			if err != nil {
				return nil, err
			}
			found = append(found, splitZ(out)...)
		}
		out, err := runGit(ctx, git, root, "ls-files", "--others", "--exclude-standard", "-z")
		if err != nil {
			return nil, err
		}
		found = append(found, splitZ(out)...)
		for rel := range dirty {
			found = append(found, rel)
		}
		slices.Sort(found)
		for _, rel := range slices.Compact(found) {
			p := filepath.Join(root, rel)
			if _, ok := tools[p]; !ok {
				paths = append(paths, p)
			}
		}
	}
	var out []*change
	budget := maxChangeAnswer
	for _, p := range paths {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if len(out) >= maxChangeList {
			break
		}
		c := &change{FileChange: FileChange{Path: p}}
		if r, err := filepath.Rel(cwd, p); err == nil && !strings.HasPrefix(r, "..") {
			c.Rel = r
		}
		c.Tools = tools[p].tools
		rel, inRepo := "", false
		if root != "" {
			if r, err := filepath.Rel(root, p); err == nil && !strings.HasPrefix(r, "..") {
				rel, inRepo = filepath.ToSlash(r), true
			}
		}
		c.rel = rel
		// The original: the start's dirty file, else the start commit's,
		// else what the tools saw first, else nothing.
		switch b, ok := dirty[rel]; {
		case inRepo && ok:
			c.base = b
		default:
			found := false
			if inRepo && head != "" {
				if data, err := runGit(ctx, git, root, "cat-file", "-s", head+":"+rel); err == nil {
					found, c.fromGit = true, true
					c.base = baseline{exists: true}
					if n, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64); err != nil || n > maxChangeFile {
						c.base.tooLarge = true // do not read it
					} else if blob, err := runGit(ctx, git, root, "cat-file", "blob", head+":"+rel); err == nil && len(blob) <= maxChangeFile {
						c.base.data = blob
					} else {
						c.base.tooLarge = true
					}
				}
			}
			if !found {
				if tl, ok := tools[p]; ok {
					c.base = tl.base
				}
			}
		}
		cur, _ := readBounded(p)
		if !c.base.exists && !cur.exists {
			continue
		}
		switch {
		case !c.base.exists:
			c.Kind = FileCreated
		case !cur.exists:
			c.Kind = FileDeleted
		default:
			c.Kind = FileModified
		}
		if c.base.special || cur.special {
			if c.base.special && cur.special && c.base.size == cur.size && c.base.mtime.Equal(cur.mtime) {
				continue
			}
			c.Binary = true // not a regular file: no diff
			out = append(out, c)
			continue
		}
		if c.base.tooLarge || cur.tooLarge || (cur.exists && cur.data == nil) {
			if c.Kind == FileModified && c.base.tooLarge && cur.tooLarge && c.base.size == cur.size && c.base.mtime.Equal(cur.mtime) && !c.fromGit {
				continue
			}
			c.TooLarge = true
			out = append(out, c)
			continue
		}
		if c.Kind == FileModified && bytes.Equal(c.base.data, cur.data) {
			continue
		}
		if isBinary(c.base.data) || isBinary(cur.data) {
			c.Binary = true
			out = append(out, c)
			continue
		}
		label := cmpOr(c.Rel, p)
		old, neu := string(c.base.data), string(cur.data)
		c.Diff = udiff.Unified("a/"+label, "b/"+label, old, neu)
		for _, l := range strings.Split(c.Diff, "\n") {
			switch {
			case strings.HasPrefix(l, "+++"), strings.HasPrefix(l, "---"):
			case strings.HasPrefix(l, "+"):
				c.Added++
			case strings.HasPrefix(l, "-"):
				c.Removed++
			}
		}
		if n := len(c.Diff) + len(old) + len(neu); n > budget {
			c.Diff, c.TooLarge = "", true
		} else {
			budget -= n
			c.Old, c.New = old, neu
		}
		out = append(out, c)
	}
	return out, nil
}

func splitZ(b []byte) []string {
	var out []string
	for _, s := range strings.Split(string(b), "\x00") {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

func isBinary(b []byte) bool {
	return bytes.IndexByte(b[:min(len(b), 8000)], 0) >= 0
}

// RevertChanges puts files the session changed back as they were at its
// start (see Changes): a created file is removed, a changed or deleted
// one rewritten. No paths means every changed file; a path (absolute, or
// relative to the working directory) the session did not change fails
// with ErrNotChanged, and nothing is reverted. When all files are
// reverted and the CLI keeps file checkpoints
// (claude.Options.EnableFileCheckpointing), the CLI's own rewind_files
// goes first; the session's record of the originals (and git) then puts
// back what it left. It returns the paths reverted; the error joins the
// failures of those it could not revert (a file over the bounds that
// git cannot give back).
func (s *Session) RevertChanges(ctx context.Context, paths ...string) ([]string, error) {
	return s.revert(ctx, "", paths)
}

func (s *Session) revert(ctx context.Context, actor string, paths []string) ([]string, error) {
	t := &s.changes
	list, err := t.list(ctx)
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	cwd, first := t.cwd, t.first
	t.mu.Unlock()
	byPath := map[string]*change{}
	for _, c := range list {
		byPath[c.Path] = c
	}
	var want []*change
	if len(paths) == 0 {
		want = list
		s.mu.Lock()
		cli := s.cs
		ck := s.base.EnableFileCheckpointing || s.base.Env[claude.EnvEnableFileCheckpointing] != ""
		s.mu.Unlock()
		if cli != nil && ck && first != "" && len(list) > 0 {
			if r, err := cli.RewindFiles(ctx, &claude.RewindFilesParams{UserMessageID: first}); err != nil || !r.CanRewind {
				s.log.Info("host: rewind_files did not apply; restoring from the originals", "session", s.id, "err", err)
			} else if list, err = t.list(ctx); err == nil {
				// What the rewind put back is no longer a change.
				left := map[string]bool{}
				for _, c := range list {
					left[c.Path] = true
				}
				var done []string
				for _, c := range want {
					if !left[c.Path] {
						done = append(done, c.Path)
					}
				}
				want = list
				reverted, err := t.restore(ctx, want)
				s.noteReverted(actor, append(done, reverted...))
				return append(done, reverted...), err
			}
		}
	} else {
		for _, p := range paths {
			ap := p
			if !filepath.IsAbs(ap) {
				ap = filepath.Join(cwd, ap)
			}
			c := byPath[filepath.Clean(ap)]
			if c == nil {
				return nil, &CommandError{Code: CodeBadRequest, Message: fmt.Sprintf("%s: not changed by this session", p), Err: ErrNotChanged}
			}
			want = append(want, c)
		}
	}
	reverted, err := t.restore(ctx, want)
	s.noteReverted(actor, reverted)
	return reverted, err
}

// noteReverted journals a revert.
func (s *Session) noteReverted(actor string, paths []string) {
	if len(paths) == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.record(EventFilesChanged, FilesChanged{Paths: paths, Reverted: true, By: actor})
}

// restore puts each file back.
func (t *changeTracker) restore(ctx context.Context, cs []*change) ([]string, error) {
	t.mu.Lock()
	git, root, head := t.git, t.root, t.head
	t.mu.Unlock()
	var done []string
	var errs []error
	for _, c := range cs {
		var err error
		switch {
		case c.Kind == FileCreated:
			err = os.Remove(c.Path)
			if errors.Is(err, fs.ErrNotExist) {
				err = nil
			}
		case c.fromGit:
			// git puts back the start commit's file as it was there (its
			// mode, a link as a link), in the working tree only.
			_, err = runGit(ctx, git, root, "restore", "--source="+head, "--worktree", "--", ":(literal)"+c.rel)
		case c.base.data != nil:
			err = writeBack(c.Path, c.base.data)
		default:
			err = fmt.Errorf("%s: the original is not kept (over %d bytes)", c.Path, maxChangeFile)
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		done = append(done, c.Path)
	}
	return done, errors.Join(errs...)
}

// writeBack writes data to path, keeping its mode when it exists; what
// is there and is not a regular file (a link the session made) is
// removed first, never written through.
func writeBack(path string, data []byte) error {
	mode := fs.FileMode(0o644)
	if fi, err := os.Lstat(path); err == nil {
		if !fi.Mode().IsRegular() {
			if err := os.Remove(path); err != nil {
				return err
			}
		} else {
			mode = fi.Mode().Perm()
		}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, data, mode)
}
