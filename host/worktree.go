package host

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/internal/worktree"
)

// WorktreeOptions asks for a session in a git worktree of its own
// (Options.Worktree): Start adds a worktree of the repository the CLI's
// working directory is in, on a new branch ("tether/" + its name) made
// from the branch checked out there (the base), and runs the CLI in it,
// at the same place relative to the checkout's top. Sessions on one
// repository then never touch each other's files. The session's commands
// then merge the work back into the base (CommandWorktreeMerge), keep
// the branch (CommandWorktreeKeep) or discard it (CommandWorktreeDiscard);
// a close asks what to do with work not merged (Command.Worktree), and
// nothing is deleted silently.
//
// The host makes the worktree itself with git (`git worktree add -b`),
// not with the CLI's --worktree flag: the folder must be known, and
// checked against a team's roots and bound into a sandbox, before the
// CLI starts, and a prewarmed CLI (ManagerOptions.Spares) is already
// running when it is claimed.
type WorktreeOptions struct {
	// Name names the worktree's folder and branch ("" = a unique one).
	Name string
	// Dir is the folder worktrees go in ("" = the repository's
	// .claude/worktrees, where the CLI's own --worktree puts them, which
	// is then listed in the repository's .git/info/exclude).
	Dir string
	// Git is the git executable ("" = "git" on PATH).
	Git string
	// Existing continues in a worktree made before, by a session that
	// ended (a resume): no new one is made.
	Existing *WorktreeInfo
}

// WorktreeState says what became of a session's worktree.
type WorktreeState string

// Worktree states.
const (
	// WorktreeActive: the session works in it; nothing decided yet.
	WorktreeActive WorktreeState = "active"
	// WorktreeMerged: its work was merged into the base branch (Commit
	// is the base's commit after the merge). Work done since makes it
	// unmerged again, which a close finds out.
	WorktreeMerged WorktreeState = "merged"
	// WorktreeKept: the person chose to keep the branch (Commit is its
	// commit, the session's uncommitted changes committed onto it); a
	// close leaves the worktree and branch as they are.
	WorktreeKept WorktreeState = "kept"
	// WorktreeDiscarded: the worktree and its branch were removed, at
	// the person's word (the session ends).
	WorktreeDiscarded WorktreeState = "discarded"
	// WorktreeRemoved: the session closed with everything merged; the
	// worktree and branch, which held nothing the base lacks, were
	// removed.
	WorktreeRemoved WorktreeState = "removed"
)

// WorktreeInfo is a session's worktree (Session.Worktree, Snapshot,
// EventWorktree, CommandResult).
type WorktreeInfo struct {
	// Path is the worktree's folder; Branch its branch; Base the branch
	// it was made from, which a merge goes into; BaseCommit where Base
	// was then.
	Path       string `json:"path"`
	Branch     string `json:"branch"`
	Base       string `json:"base"`
	BaseCommit string `json:"base_commit"`
	// Repo is the repository's main checkout; GitDir its git directory,
	// which the worktree's git needs too (a sandbox binds both).
	Repo   string `json:"repo"`
	GitDir string `json:"git_dir"`
	// Prefix is where in the checkout the session was asked for ("" =
	// its top).
	Prefix string        `json:"prefix,omitempty"`
	State  WorktreeState `json:"state"`
	// Commit: for merged, the base branch's commit after the merge; for
	// kept, the branch's.
	Commit string `json:"commit,omitempty"`
	// UpToDate: the last merge found nothing to merge.
	UpToDate bool `json:"up_to_date,omitempty"`
}

// WorktreeConflictError is a merge refused because it would conflict.
// Nothing was changed: not the base branch, not its checkout, not the
// worktree. It matches ErrWorktreeConflict.
type WorktreeConflictError struct {
	Base, Branch string
	Files        []string // the files that conflict
}

func (e *WorktreeConflictError) Error() string {
	return fmt.Sprintf("merging %s into %s would conflict in %s; nothing was changed", e.Branch, e.Base, strings.Join(e.Files, ", "))
}

// Is matches ErrWorktreeConflict.
func (e *WorktreeConflictError) Is(target error) bool { return target == ErrWorktreeConflict }

// Errors of worktree sessions, matched with errors.Is.
var (
	// ErrWorktree: the worktree a start asked for could not be made (not
	// a git repository, no branch checked out, git refused). Code
	// bad_request.
	ErrWorktree = errors.New("host: cannot make the session's worktree")
	// ErrWorktreeConflict: a merge would conflict (a
	// *WorktreeConflictError says where). Code worktree_conflict.
	ErrWorktreeConflict = errors.New("host: worktree merge conflict")
	// ErrWorktreeBaseDirty: the base branch's checkout has local changes
	// the merge would overwrite; nothing was changed. Code
	// worktree_base_dirty.
	ErrWorktreeBaseDirty = errors.New("host: the base branch's checkout has local changes in the way")
	// ErrWorktreeUnmerged: a close without a word on the worktree found
	// work the base branch lacks. Code worktree_unmerged.
	ErrWorktreeUnmerged = errors.New("host: the session's worktree has unmerged work")
)

// Worktree command error codes.
const (
	CodeWorktreeConflict  = "worktree_conflict"
	CodeWorktreeBaseDirty = "worktree_base_dirty"
	CodeWorktreeUnmerged  = "worktree_unmerged"
)

// Close decisions for a worktree (Command.Worktree).
const (
	WorktreeKeep    = "keep"
	WorktreeDiscard = "discard"
)

func init() {
	codeSentinels[CodeWorktreeConflict] = ErrWorktreeConflict
	codeSentinels[CodeWorktreeBaseDirty] = ErrWorktreeBaseDirty
	codeSentinels[CodeWorktreeUnmerged] = ErrWorktreeUnmerged
}

// sessionWorktree is a session's worktree and what became of it.
type sessionWorktree struct {
	w *worktree.Worktree
	// info is guarded by Session.mu; git runs under Session.wtMu.
	info WorktreeInfo
}

// prepareWorktree makes the worktree opts ask for and returns the
// options to start the session with: the CLI's working directory in the
// worktree, opts.Worktree cleared and the worktree carried unexported.
// undo removes a worktree just made (nil: nothing to undo).
func prepareWorktree(ctx context.Context, opts *Options) (_ *Options, undo func(), err error) {
	if opts == nil || opts.Worktree == nil {
		return opts, nil, nil
	}
	o := *opts
	wo := *o.Worktree
	var cli claude.Options
	if o.CLI != nil {
		cli = *o.CLI
	}
	var w *worktree.Worktree
	if e := wo.Existing; e != nil {
		w = &worktree.Worktree{Repo: e.Repo, GitDir: e.GitDir, Path: e.Path, Branch: e.Branch, Base: e.Base,
			BaseCommit: e.BaseCommit, Prefix: e.Prefix, Git: wo.Git}
	} else {
		dir, err := filepath.Abs(cmpOr(cli.Cwd, "."))
		if err != nil {
			return nil, nil, fmt.Errorf("%w: %w", ErrWorktree, err)
		}
		w, err = worktree.Create(ctx, dir, &worktree.Options{Name: wo.Name, Dir: wo.Dir, Git: wo.Git})
		if err != nil {
			return nil, nil, fmt.Errorf("%w: %w", ErrWorktree, err)
		}
		undo = func() {
			_ = w.Remove(context.WithoutCancel(ctx), true)
		}
	}
	cli.Cwd = filepath.Join(w.Path, w.Prefix)
	o.CLI = &cli
	o.Worktree = nil
	st := WorktreeActive
	if e := wo.Existing; e != nil && e.State != "" {
		st = e.State
	}
	o.wt = &sessionWorktree{w: w, info: WorktreeInfo{
		Path: w.Path, Branch: w.Branch, Base: w.Base, BaseCommit: w.BaseCommit, Repo: w.Repo, GitDir: w.GitDir,
		Prefix: w.Prefix, State: st,
	}}
	if e := wo.Existing; e != nil {
		o.wt.info.Commit = e.Commit
	}
	return &o, undo, nil
}

// Worktree returns the session's worktree, or nil for a session without
// one (Options.Worktree).
func (s *Session) Worktree() *WorktreeInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.wt == nil {
		return nil
	}
	i := s.wt.info
	return &i
}

// isWorktree reports whether c is a worktree command.
func (c *Command) isWorktree() bool {
	switch c.Type {
	case CommandWorktreeMerge, CommandWorktreeKeep, CommandWorktreeDiscard:
		return true
	}
	return false
}

// setWorktree records what became of the worktree (s.mu held).
func (s *Session) setWorktree(st WorktreeState, commit string, upToDate bool) WorktreeInfo {
	s.wt.info.State, s.wt.info.Commit, s.wt.info.UpToDate = st, commit, upToDate
	if !s.ended { // closed is the journal's last event
		s.record(EventWorktree, s.wt.info)
	}
	return s.wt.info
}

// doWorktree runs a worktree command.
func (s *Session) doWorktree(ctx context.Context, c *Command) (*CommandResult, error) {
	s.mu.Lock()
	wt, turn := s.wt, s.turn
	s.mu.Unlock()
	if wt == nil {
		return nil, commandErrorf(CodeBadRequest, "the session has no worktree")
	}
	if c.Type == CommandWorktreeDiscard {
		return s.closeWith(ctx, c)
	}
	if turn {
		return nil, &CommandError{Code: CodeBusy, Message: "a turn is running in the worktree: wait for it to end, or stop it, first", Err: ErrBusy}
	}
	s.wtMu.Lock()
	defer s.wtMu.Unlock()
	s.mu.Lock()
	gone := wt.info.State == WorktreeDiscarded || wt.info.State == WorktreeRemoved
	s.mu.Unlock()
	if gone {
		return nil, commandErrorf(CodeBadRequest, "the session's worktree was removed")
	}
	msg := "tether: work of session " + s.id
	switch c.Type {
	case CommandWorktreeMerge:
		res, err := wt.w.Merge(ctx, msg)
		if err != nil {
			return nil, worktreeError(err)
		}
		s.mu.Lock()
		info := s.setWorktree(WorktreeMerged, res.Commit, res.UpToDate)
		s.mu.Unlock()
		return &CommandResult{Worktree: &info}, nil
	default: // keep
		commit, err := wt.w.Commit(ctx, msg)
		if err != nil {
			return nil, worktreeError(err)
		}
		s.mu.Lock()
		info := s.setWorktree(WorktreeKept, commit, false)
		s.mu.Unlock()
		return &CommandResult{Worktree: &info}, nil
	}
}

// worktreeError maps the git package's errors to command errors.
func worktreeError(err error) error {
	var ce *worktree.ConflictError
	switch {
	case errors.As(err, &ce):
		we := &WorktreeConflictError{Base: ce.Base, Branch: ce.Branch, Files: ce.Files}
		return &CommandError{Code: CodeWorktreeConflict, Message: we.Error(), Err: we}
	case errors.Is(err, worktree.ErrBaseCheckout):
		return &CommandError{Code: CodeWorktreeBaseDirty, Message: err.Error(), Err: fmt.Errorf("%w: %w", ErrWorktreeBaseDirty, err)}
	case errors.Is(err, worktree.ErrBaseMoved):
		// Another process kept merging into the base: try again.
		return &CommandError{Code: CodeBusy, Message: err.Error() + "; merge again", Err: fmt.Errorf("%w: %w", ErrBusy, err)}
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return err
	}
	return &CommandError{Code: CodeInternal, Message: err.Error(), Err: err}
}

// closeWith closes the session (CommandClose, CommandWorktreeDiscard),
// deciding first what becomes of its worktree: discard (confirmed)
// removes it and its branch once the CLI is gone; keep commits what is
// uncommitted onto the branch and leaves both; no word removes them only
// when the base branch has all their work, and else refuses the close
// (worktree_unmerged), changing nothing.
func (s *Session) closeWith(ctx context.Context, c *Command) (*CommandResult, error) {
	s.mu.Lock()
	wt := s.wt
	s.mu.Unlock()
	if wt == nil {
		s.Close()
		return &CommandResult{}, nil
	}
	s.wtMu.Lock()
	defer s.wtMu.Unlock()
	s.mu.Lock()
	state := wt.info.State
	s.mu.Unlock()
	decision := c.Worktree
	if c.Type == CommandWorktreeDiscard {
		decision = WorktreeDiscard
	}
	if state == WorktreeDiscarded || state == WorktreeRemoved {
		decision = "gone"
	} else if decision == "" && state == WorktreeKept {
		decision = WorktreeKeep
	}
	if decision == "" {
		st, err := wt.w.Status(ctx)
		if err != nil {
			return nil, worktreeError(err)
		}
		if !st.Merged {
			var what []string
			if st.Ahead > 0 {
				what = append(what, fmt.Sprintf("%d commit(s)", st.Ahead))
			}
			if st.Dirty {
				what = append(what, "uncommitted changes")
			}
			return nil, &CommandError{Code: CodeWorktreeUnmerged, Err: ErrWorktreeUnmerged, Message: fmt.Sprintf(
				"the session's worktree (branch %s) has %s not merged into %s: merge it first, or close saying worktree %q or %q",
				wt.info.Branch, strings.Join(what, " and "), wt.info.Base, WorktreeKeep, WorktreeDiscard)}
		}
	}
	// The CLI goes first: nothing writes into the folder while it is
	// removed or committed.
	s.Close()
	ctx = context.WithoutCancel(ctx)
	var err error
	var info WorktreeInfo
	switch decision {
	case WorktreeDiscard:
		if err = wt.w.Remove(ctx, true); err == nil {
			s.mu.Lock()
			info = s.setWorktreeQuiet(WorktreeDiscarded, "")
			s.mu.Unlock()
		}
	case WorktreeKeep:
		var commit string
		if commit, err = wt.w.Commit(ctx, "tether: work of session "+s.id); err == nil {
			s.mu.Lock()
			info = s.setWorktreeQuiet(WorktreeKept, commit)
			s.mu.Unlock()
		}
	case "":
		// Merged when asked; the CLI may have written since, which
		// Remove (without force) finds and refuses: then it stays.
		if err = wt.w.Remove(ctx, false); err == nil {
			s.mu.Lock()
			info = s.setWorktreeQuiet(WorktreeRemoved, "")
			s.mu.Unlock()
		} else if errors.Is(err, worktree.ErrUnmerged) {
			s.log.Warn("host: the worktree changed while the session closed; it is kept", "path", wt.info.Path, "err", err)
			s.mu.Lock()
			info = s.setWorktreeQuiet(WorktreeKept, "")
			s.mu.Unlock()
			err = nil
		}
	default:
		info = *s.Worktree()
	}
	if err != nil {
		return nil, &CommandError{Code: CodeInternal, Message: "the session closed, but its worktree: " + err.Error(), Err: err}
	}
	return &CommandResult{Worktree: &info}, nil
}

// setWorktreeQuiet is setWorktree for a session that has ended: its
// journal is closed, so no event (s.mu held).
func (s *Session) setWorktreeQuiet(st WorktreeState, commit string) WorktreeInfo {
	s.wt.info.State, s.wt.info.Commit, s.wt.info.UpToDate = st, commit, false
	return s.wt.info
}
