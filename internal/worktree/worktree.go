// Package worktree runs the git that gives a session a working tree of
// its own: Create adds a linked worktree on a new branch from the
// branch checked out where the session was asked for; Merge brings the
// branch (and whatever the session left uncommitted) back into that base
// branch, or refuses with a *ConflictError and changes nothing; Remove
// deletes the worktree and its branch.
//
// It is internal: what users see is host's (host.WorktreeOptions, the
// worktree commands). The mechanics may change (the CLI's own --worktree
// may take over where it serves) without a promise broken.
//
// Every function runs git (exec.CommandContext, ctx first) and returns
// a *GitError for a git that failed, with its words.
package worktree

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// Errors matched with errors.Is.
var (
	// ErrNotRepository: the folder is not in a git repository.
	ErrNotRepository = errors.New("worktree: not a git repository")
	// ErrDetached: no branch is checked out where the worktree was asked
	// for, so there is no branch to merge back into.
	ErrDetached = errors.New("worktree: no branch checked out (detached HEAD)")
	// ErrConflict: the merge would conflict (a *ConflictError says where).
	ErrConflict = errors.New("worktree: merge conflict")
	// ErrBaseCheckout: the base branch's checkout has changes the merge
	// would overwrite, so it was left as it was.
	ErrBaseCheckout = errors.New("worktree: the base branch's checkout has local changes in the way")
	// ErrUnmerged: Remove without force found work not in the base branch.
	ErrUnmerged = errors.New("worktree: unmerged work")
	// ErrBaseMoved: the base branch moved while a merge was being
	// made (another process merged first); Merge tries again a few
	// times before it returns it.
	ErrBaseMoved = errors.New("worktree: the base branch moved while merging")
)

// repoLocks serialises the merges into one repository made by this
// process (three sessions of one repository merging at once take turns
// instead of racing for the base branch): git directory → *sync.Mutex.
var repoLocks sync.Map

func lockRepo(gitDir string) func() {
	mu, _ := repoLocks.LoadOrStore(gitDir, &sync.Mutex{})
	mu.(*sync.Mutex).Lock()
	return mu.(*sync.Mutex).Unlock
}

// GitError is a git command that failed.
type GitError struct {
	Args   []string
	Stderr string
	Err    error
}

func (e *GitError) Error() string {
	msg := strings.TrimSpace(e.Stderr)
	if msg == "" {
		msg = e.Err.Error()
	}
	return fmt.Sprintf("git %s: %s", strings.Join(e.Args, " "), msg)
}

func (e *GitError) Unwrap() error { return e.Err }

// ConflictError is a merge refused because it would conflict. Nothing
// was changed: not the base branch, not its checkout, not the worktree.
type ConflictError struct {
	Base, Branch string
	Files        []string // the files that conflict
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("worktree: merging %s into %s would conflict in %s; nothing was changed", e.Branch, e.Base, strings.Join(e.Files, ", "))
}

// Is matches ErrConflict.
func (e *ConflictError) Is(target error) bool { return target == ErrConflict }

// Options configures Create. A nil *Options means defaults.
type Options struct {
	// Name names the worktree's folder and, prefixed with "tether/", its
	// branch ("" = a random one).
	Name string
	// Dir is the folder the worktree's folder goes in ("" = the
	// repository's .claude/worktrees, where the CLI's own --worktree puts
	// them; it is then added to the repository's info/exclude, so the
	// main checkout's status does not list it).
	Dir string
	// Git is the git executable ("" = "git" on PATH).
	Git string
}

// Worktree is a linked worktree made by Create.
type Worktree struct {
	Repo       string // the main checkout's top folder
	GitDir     string // the repository's git directory (common to every worktree)
	Path       string // the worktree's folder
	Branch     string // its branch (short name)
	Base       string // the branch it was made from, merged back into (short name)
	BaseCommit string // the commit Base was at
	// Prefix is where in the checkout Create was asked from ("" = its
	// top; "sub/dir/" else): the same place in the worktree is
	// filepath.Join(Path, Prefix).
	Prefix string
	Git    string // the git executable ("" = "git")
}

// DefaultDir is where worktrees go under a repository's top folder.
const DefaultDir = ".claude/worktrees"

// TopLevel returns the top folder of the repository's main checkout and
// the git directory of dir's repository (common to all its worktrees).
func TopLevel(ctx context.Context, git, dir string) (top, gitDir string, err error) {
	out, err := run(ctx, git, dir, nil, "rev-parse", "--path-format=absolute", "--git-common-dir")
	if err != nil {
		var ge *GitError
		if errors.As(err, &ge) && strings.Contains(ge.Stderr, "not a git repository") {
			return "", "", fmt.Errorf("%w: %s", ErrNotRepository, dir)
		}
		return "", "", err
	}
	gitDir = filepath.Clean(out)
	// The main checkout is the git directory's parent for a .git
	// folder; a bare repository has none, and its worktrees go beside
	// the git directory.
	top = filepath.Dir(gitDir)
	if filepath.Base(gitDir) != ".git" {
		top = gitDir
	}
	return top, gitDir, nil
}

// Plan returns where Create would put the worktree of dir's repository
// (o.Dir, or DefaultDir under the repository's top folder) without
// creating anything, with the repository's top folder and git directory:
// what a policy checks first.
func Plan(ctx context.Context, dir string, o *Options) (parent, top, gitDir string, err error) {
	if o == nil {
		o = &Options{}
	}
	top, gitDir, err = TopLevel(ctx, o.Git, dir)
	if err != nil {
		return "", "", "", err
	}
	parent = o.Dir
	if parent == "" {
		parent = filepath.Join(top, DefaultDir)
	}
	return parent, top, gitDir, nil
}

// Create adds a worktree of dir's repository on a new branch made from
// the branch checked out in dir.
func Create(ctx context.Context, dir string, o *Options) (*Worktree, error) {
	if o == nil {
		o = &Options{}
	}
	parent, top, gitDir, err := Plan(ctx, dir, o)
	if err != nil {
		return nil, err
	}
	base, err := run(ctx, o.Git, dir, nil, "symbolic-ref", "--quiet", "--short", "HEAD")
	if err != nil {
		return nil, fmt.Errorf("%w: %s", ErrDetached, dir)
	}
	baseCommit, err := run(ctx, o.Git, dir, nil, "rev-parse", "--verify", "HEAD^{commit}")
	if err != nil {
		return nil, fmt.Errorf("worktree: %s has no commit yet to branch from: %w", dir, err)
	}
	prefix, err := run(ctx, o.Git, dir, nil, "rev-parse", "--show-prefix")
	if err != nil {
		return nil, err
	}
	name := o.Name
	if name == "" {
		var b [4]byte
		_, _ = rand.Read(b[:])
		name = time.Now().UTC().Format("20060102") + "-" + hex.EncodeToString(b[:])
	}
	if strings.ContainsAny(name, `/\ `) || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "-") {
		return nil, fmt.Errorf("worktree: bad name %q", name)
	}
	w := &Worktree{
		Repo: top, GitDir: gitDir, Path: filepath.Join(parent, name), Branch: "tether/" + name,
		Base: base, BaseCommit: baseCommit, Prefix: prefix, Git: o.Git,
	}
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return nil, fmt.Errorf("worktree: %w", err)
	}
	if o.Dir == "" {
		exclude(gitDir)
	}
	if _, err := run(ctx, o.Git, dir, nil, "worktree", "add", "--quiet", "-b", w.Branch, w.Path, baseCommit); err != nil {
		return nil, err
	}
	return w, nil
}

// exclude adds DefaultDir to the repository's info/exclude, once: the
// main checkout's status then does not show the worktrees as untracked
// files. Best effort: a repository that cannot be written to shows them.
func exclude(gitDir string) {
	const line = "/" + DefaultDir + "/"
	p := filepath.Join(gitDir, "info", "exclude")
	b, _ := os.ReadFile(p)
	for l := range strings.Lines(string(b)) {
		if strings.TrimSpace(l) == line {
			return
		}
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return
	}
	f, err := os.OpenFile(p, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	if len(b) > 0 && !bytes.HasSuffix(b, []byte("\n")) {
		fmt.Fprintln(f)
	}
	fmt.Fprintln(f, "# tether: session worktrees")
	fmt.Fprintln(f, line)
}

// Status is a worktree's work against its base branch.
type Status struct {
	// Dirty: files changed and not committed (untracked ones included,
	// ignored ones not).
	Dirty bool
	// Ahead is how many commits the branch has that the base does not.
	Ahead int
	// Merged: nothing in the worktree is missing from the base branch
	// (not dirty, no commit ahead).
	Merged bool
}

// Status returns the worktree's status. A worktree whose folder is gone
// is clean (what was in it is gone too); its commits still count.
func (w *Worktree) Status(ctx context.Context) (*Status, error) {
	st := &Status{}
	if _, err := os.Stat(w.Path); err == nil {
		out, err := run(ctx, w.Git, w.Path, nil, "status", "--porcelain", "--untracked-files=all")
		if err != nil {
			return nil, err
		}
		st.Dirty = out != ""
	}
	n, err := run(ctx, w.Git, w.Repo, nil, "rev-list", "--count", "refs/heads/"+w.Base+"..refs/heads/"+w.Branch)
	if err != nil {
		return nil, err
	}
	fmt.Sscan(n, &st.Ahead)
	st.Merged = !st.Dirty && st.Ahead == 0
	return st, nil
}

// snapshot returns a commit of the worktree as it is: its HEAD when
// clean, else a new commit on top of HEAD with every change (untracked
// files too, ignored ones not), made with a throwaway index so that
// neither the worktree's index nor its branch moves.
func (w *Worktree) snapshot(ctx context.Context, msg string) (commit, head string, err error) {
	head, err = run(ctx, w.Git, w.Path, nil, "rev-parse", "--verify", "HEAD^{commit}")
	if err != nil {
		return "", "", err
	}
	tmp, err := os.MkdirTemp("", "tether-index-*")
	if err != nil {
		return "", "", fmt.Errorf("worktree: %w", err)
	}
	defer os.RemoveAll(tmp)
	env := []string{"GIT_INDEX_FILE=" + filepath.Join(tmp, "index")}
	if _, err := run(ctx, w.Git, w.Path, env, "read-tree", head); err != nil {
		return "", "", err
	}
	if _, err := run(ctx, w.Git, w.Path, env, "add", "--all", "--", "."); err != nil {
		return "", "", err
	}
	tree, err := run(ctx, w.Git, w.Path, env, "write-tree")
	if err != nil {
		return "", "", err
	}
	headTree, err := run(ctx, w.Git, w.Path, nil, "rev-parse", head+"^{tree}")
	if err != nil {
		return "", "", err
	}
	if tree == headTree {
		return head, head, nil
	}
	commit, err = run(ctx, w.Git, w.Path, identEnv(ctx, w.Git, w.Path), "commit-tree", tree, "-p", head, "-m", msg)
	return commit, head, err
}

// Commit commits whatever the worktree has uncommitted onto its branch
// (message msg), so the branch holds all the session's work. It returns
// the branch's commit; a clean worktree commits nothing.
func (w *Worktree) Commit(ctx context.Context, msg string) (string, error) {
	if _, err := os.Stat(w.Path); err != nil {
		return run(ctx, w.Git, w.Repo, nil, "rev-parse", "refs/heads/"+w.Branch)
	}
	c, head, err := w.snapshot(ctx, msg)
	if err != nil || c == head {
		return c, err
	}
	return c, w.advance(ctx, c, head)
}

// advance moves the worktree's branch from head to c, a commit of what
// its folder holds, and its index with it.
func (w *Worktree) advance(ctx context.Context, c, head string) error {
	if _, err := run(ctx, w.Git, w.Path, nil, "update-ref", "-m", "tether: session work", "refs/heads/"+w.Branch, c, head); err != nil {
		return err
	}
	_, err := run(ctx, w.Git, w.Path, nil, "reset", "--quiet")
	return err
}

// MergeResult says what Merge did.
type MergeResult struct {
	// Commit is the base branch's commit after the merge.
	Commit string
	// FastForward: the base had not moved, it now points at the work.
	FastForward bool
	// UpToDate: there was nothing to merge.
	UpToDate bool
}

// Merge brings the worktree's branch, with its uncommitted changes
// committed onto it first (message msg), into the base branch. It is all
// or nothing: the merge is computed apart (git merge-tree) and refused
// with a *ConflictError when it would conflict; the base branch then
// moves, through its checkout when it has one (a fast-forward, which git
// refuses, changing nothing, when that checkout's local changes are in
// the way: ErrBaseCheckout); only then does the worktree's branch take
// the commit of its uncommitted changes.
func (w *Worktree) Merge(ctx context.Context, msg string) (*MergeResult, error) {
	defer lockRepo(w.GitDir)()
	for try := 1; ; try++ {
		res, err := w.merge(ctx, msg)
		if !errors.Is(err, ErrBaseMoved) || try == 3 {
			return res, err
		}
	}
}

// merge is one attempt of Merge.
func (w *Worktree) merge(ctx context.Context, msg string) (*MergeResult, error) {
	c, head, err := w.snapshot(ctx, msg)
	if err != nil {
		return nil, err
	}
	baseRef := "refs/heads/" + w.Base
	bh, err := run(ctx, w.Git, w.Repo, nil, "rev-parse", "--verify", baseRef+"^{commit}")
	if err != nil {
		return nil, err
	}
	res := &MergeResult{Commit: bh}
	if ancestor(ctx, w.Git, w.Repo, c, bh) {
		res.UpToDate = true
		if c != head {
			// Uncommitted changes the base already has: the branch
			// takes them all the same.
			return res, w.advance(ctx, c, head)
		}
		return res, nil
	}
	target := c
	if ancestor(ctx, w.Git, w.Repo, bh, c) {
		res.FastForward = true
	} else {
		out, code, err := runCode(ctx, w.Git, w.Repo, nil, "merge-tree", "--write-tree", "--name-only", "--no-messages", bh, c)
		if err != nil && code != 1 {
			return nil, err
		}
		lines := strings.Split(out, "\n")
		if code == 1 {
			var files []string
			for _, l := range lines[1:] {
				if l = strings.TrimSpace(l); l != "" && !slices.Contains(files, l) {
					files = append(files, l)
				}
			}
			return nil, &ConflictError{Base: w.Base, Branch: w.Branch, Files: files}
		}
		target, err = run(ctx, w.Git, w.Repo, identEnv(ctx, w.Git, w.Repo), "commit-tree", lines[0], "-p", bh, "-p", c,
			"-m", fmt.Sprintf("Merge branch '%s' into %s", w.Branch, w.Base))
		if err != nil {
			return nil, err
		}
	}
	checkout, err := w.checkoutOf(ctx, baseRef)
	if err != nil {
		return nil, err
	}
	if checkout != "" {
		if _, err := run(ctx, w.Git, checkout, nil, "merge", "--ff-only", "--quiet", target); err != nil {
			if w.moved(ctx, baseRef, bh) {
				return nil, fmt.Errorf("%w: %w", ErrBaseMoved, err)
			}
			return nil, fmt.Errorf("%w (%s): %w", ErrBaseCheckout, checkout, err)
		}
		now, err := run(ctx, w.Git, w.Repo, nil, "rev-parse", baseRef)
		if err != nil {
			return nil, err
		}
		if now != target && !ancestor(ctx, w.Git, w.Repo, target, now) {
			return nil, fmt.Errorf("%w: %s is at %s, which lacks the merge", ErrBaseMoved, w.Base, now)
		}
	} else if _, err := run(ctx, w.Git, w.Repo, nil, "update-ref", "-m", "tether: merge "+w.Branch, baseRef, target, bh); err != nil {
		if w.moved(ctx, baseRef, bh) {
			return nil, fmt.Errorf("%w: %w", ErrBaseMoved, err)
		}
		return nil, err
	}
	res.Commit = target
	if c != head {
		if err := w.advance(ctx, c, head); err != nil {
			return res, err
		}
	}
	return res, nil
}

// moved reports whether ref is no longer at was.
func (w *Worktree) moved(ctx context.Context, ref, was string) bool {
	now, err := run(ctx, w.Git, w.Repo, nil, "rev-parse", "--verify", ref)
	return err == nil && now != was
}

// checkoutOf returns the folder of the worktree that has ref checked out
// ("" = none).
func (w *Worktree) checkoutOf(ctx context.Context, ref string) (string, error) {
	out, err := run(ctx, w.Git, w.Repo, nil, "worktree", "list", "--porcelain")
	if err != nil {
		return "", err
	}
	var path string
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		l := sc.Text()
		switch {
		case strings.HasPrefix(l, "worktree "):
			path = strings.TrimPrefix(l, "worktree ")
		case l == "branch "+ref:
			return path, nil
		}
	}
	return "", nil
}

// Remove deletes the worktree's folder and its branch. Without force it
// refuses (ErrUnmerged) when the worktree has work the base branch does
// not.
func (w *Worktree) Remove(ctx context.Context, force bool) error {
	if !force {
		st, err := w.Status(ctx)
		if err != nil {
			return err
		}
		if !st.Merged {
			return fmt.Errorf("%w: %s has %d commits and uncommitted changes=%v not in %s", ErrUnmerged, w.Branch, st.Ahead, st.Dirty, w.Base)
		}
	}
	if _, err := os.Stat(w.Path); err == nil {
		if _, err := run(ctx, w.Git, w.Repo, nil, "worktree", "remove", "--force", "--force", w.Path); err != nil {
			return err
		}
	} else if _, err := run(ctx, w.Git, w.Repo, nil, "worktree", "prune"); err != nil {
		return err
	}
	if _, _, err := runCode(ctx, w.Git, w.Repo, nil, "show-ref", "--verify", "--quiet", "refs/heads/"+w.Branch); err == nil {
		if _, err := run(ctx, w.Git, w.Repo, nil, "branch", "-D", "--quiet", w.Branch); err != nil {
			return err
		}
	}
	return nil
}

// ancestor reports whether a is an ancestor of b (or b itself).
func ancestor(ctx context.Context, git, dir, a, b string) bool {
	_, _, err := runCode(ctx, git, dir, nil, "merge-base", "--is-ancestor", a, b)
	return err == nil
}

// identEnv supplies a committer for a repository whose configuration
// names none (git refuses to commit without one).
func identEnv(ctx context.Context, git, dir string) []string {
	if _, err := run(ctx, git, dir, nil, "var", "GIT_COMMITTER_IDENT"); err == nil {
		return nil
	}
	return []string{
		"GIT_AUTHOR_NAME=Tether", "GIT_AUTHOR_EMAIL=tether@localhost",
		"GIT_COMMITTER_NAME=Tether", "GIT_COMMITTER_EMAIL=tether@localhost",
	}
}

func run(ctx context.Context, git, dir string, env []string, args ...string) (string, error) {
	out, _, err := runCode(ctx, git, dir, env, args...)
	return out, err
}

// maxOutput bounds what is kept of a git command's output.
const maxOutput = 1 << 20

// runCode runs git in dir and returns its trimmed stdout and exit code.
func runCode(ctx context.Context, git, dir string, env []string, args ...string) (string, int, error) {
	if git == "" {
		git = "git"
	}
	cmd := exec.CommandContext(ctx, git, append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "LC_ALL=C")
	cmd.Env = append(cmd.Env, env...)
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	}
	out := stdout.Bytes()
	if len(out) > maxOutput {
		out = out[:maxOutput]
	}
	if err != nil {
		if ctx.Err() != nil {
			return "", code, ctx.Err()
		}
		se := stderr.String()
		if len(se) > 4096 {
			se = se[:4096]
		}
		return strings.TrimSpace(string(out)), code, &GitError{Args: args, Stderr: se, Err: err}
	}
	return strings.TrimSpace(string(out)), code, nil
}
