package serve

import (
	"context"
	"fmt"
	"iter"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/host"
	"github.com/tetherhq/tether/internal/proc"
	"github.com/tetherhq/tether/internal/worktree"
	"github.com/tetherhq/tether/team"
)

// LocalOptions configures NewLocalBackend. A nil *LocalOptions means
// defaults.
type LocalOptions struct {
	// Session is the template of every session started (the CLI's path,
	// environment, limits…); nil means defaults. Start sets the working
	// directory, model, permission mode, system prompt append and resume
	// from the request, turns partial messages on (the UI streams
	// text token by token) and lists MCP servers' requests for input as
	// approvals (host.Options.Elicitations: the UI shows their forms).
	// It never adds a skip-permissions flag.
	Session *host.Options
	// DefaultCwd is the working directory of a start request without
	// one ("" = such requests are refused).
	DefaultCwd string
	// AllowBypassPermissions lets clients choose the bypassPermissions
	// mode. Off by default: a browser cannot turn approvals off.
	AllowBypassPermissions bool
	// MaxEnded is how many ended sessions stay listed (0 = 50), so that
	// a client sees how they ended; the oldest go first.
	MaxEnded int
	// MaxImageBytes bounds one pasted image, decoded (0 = 5 MiB).
	MaxImageBytes int
	// MaxHistory bounds the earlier conversation a session resumed or
	// forked from disk shows (History): the last MaxHistory messages
	// (0 = 500) within MaxHistoryBytes (0 = 4 MiB); older ones are
	// counted in History.Dropped. It is read once, at Start.
	MaxHistory      int
	MaxHistoryBytes int
	// Team, when set (the server's Options.Team), makes each session the
	// starting person's: its host options come from
	// Team.Authorizer.SessionOptions (the Authorize hook every command
	// passes, the policy's denied tools, spend), and with Team.Isolation
	// its CLI runs confined to its working directory, its config folder
	// in the person's HOME; a wake checks and confines it again (all as
	// team.SessionPolicy says, as on a cluster's agents). A start without
	// an identity in its ctx is refused.
	Team *TeamOptions
}

// SpareTemplate returns the host options every Start shares: the Session
// template with partial messages and elicitations on. Give it to the host.Manager as
// ManagerOptions.Session: where the CLI can be prewarmed (2.1.330 and
// newer) its spares then serve starts in any folder, with any model,
// permission mode or appended system prompt (host.ManagerOptions.Spares).
func (o *LocalOptions) SpareTemplate() *host.Options {
	var h host.Options
	if o != nil && o.Session != nil {
		h = *o.Session
	}
	var co claude.Options
	if h.CLI != nil {
		co = *h.CLI
	}
	co.Resume, co.ForkSession, co.Continue = "", false, false
	co.IncludePartialMessages = true
	h.CLI = &co
	h.Elicitations = true
	return &h
}

// LocalBackend runs sessions in this process on a host.Manager.
type LocalBackend struct {
	m    *host.Manager
	opts LocalOptions

	mu      sync.Mutex
	entries map[string]*entry
	order   []string
}

type entry struct {
	s          *host.Session
	created    time.Time
	title      string
	lastPrompt string
	history    *History
	req        StartRequest // as started, for resume
	resuming   bool
	// owner is whose session it is (teams): a resume runs with their
	// session options and isolation, whoever asks for it.
	owner *team.Identity
}

// NewLocalBackend returns a backend that starts sessions on m. The
// caller closes m (which closes the sessions).
func NewLocalBackend(m *host.Manager, opts *LocalOptions) *LocalBackend {
	b := &LocalBackend{m: m, entries: map[string]*entry{}}
	if opts != nil {
		b.opts = *opts
	}
	b.opts.MaxEnded = cmpOr(b.opts.MaxEnded, 50)
	b.opts.MaxImageBytes = cmpOr(b.opts.MaxImageBytes, 5<<20)
	b.opts.MaxHistory = cmpOr(b.opts.MaxHistory, 500)
	b.opts.MaxHistoryBytes = cmpOr(b.opts.MaxHistoryBytes, 4<<20)
	return b
}

func cmpOr[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

func (b *LocalBackend) checkMode(mode string) error {
	return host.CheckPermissionMode(mode, b.opts.AllowBypassPermissions)
}

// policy is the command policy of the sessions started: the template's
// (its Authorize hook), with this backend's bypass and image rules.
func (b *LocalBackend) policy(tmpl *host.CommandPolicy) *host.CommandPolicy {
	var p host.CommandPolicy
	if tmpl != nil {
		p = *tmpl
	}
	p.AllowBypassPermissions = b.opts.AllowBypassPermissions
	p.MaxImageBytes = b.opts.MaxImageBytes
	return &p
}

// Start implements Backend.
func (b *LocalBackend) Start(ctx context.Context, req *StartRequest) (SessionInfo, error) {
	return b.start(ctx, req, nil, nil)
}

// start is Start; existing, when set, is the worktree of an ended
// session a resume continues in, and from the session a resume takes
// the place of (what it changed in files goes on: host.Options.Continues).
func (b *LocalBackend) start(ctx context.Context, req *StartRequest, existing *host.WorktreeInfo, from *host.Session) (SessionInfo, error) {
	if req == nil {
		req = &StartRequest{}
	}
	cwd := cmpOr(req.Cwd, b.opts.DefaultCwd)
	if cwd == "" {
		return SessionInfo{}, errorf(CodeBadRequest, "cwd is required")
	}
	if !filepath.IsAbs(cwd) {
		return SessionInfo{}, errorf(CodeBadRequest, "cwd must be an absolute path")
	}
	if fi, err := os.Stat(cwd); err != nil || !fi.IsDir() {
		return SessionInfo{}, errorf(CodeBadRequest, "cwd is not a directory")
	}
	if err := b.checkMode(req.PermissionMode); err != nil {
		return SessionInfo{}, err
	}
	if req.Fork && req.Resume == "" {
		return SessionInfo{}, errorf(CodeBadRequest, "fork needs resume")
	}
	if req.Worktree && req.Resume != "" && existing == nil {
		// The CLI finds a conversation by the folder it ran in: a new
		// worktree is another folder.
		return SessionInfo{}, errorf(CodeBadRequest, "a conversation resumed from disk continues in the folder it ran in, not in a new worktree; start a new session in a worktree instead")
	}
	o := *b.opts.SpareTemplate() // the template with the UI's wiring
	co := *o.CLI
	co.Env = maps.Clone(co.Env)
	co.Cwd = cwd
	co.Model = cmpOr(req.Model, co.Model)
	if req.PermissionMode != "" {
		co.PermissionMode = claude.PermissionMode(req.PermissionMode)
	}
	if req.AppendSystemPrompt != "" {
		co.AppendSystemPrompt = req.AppendSystemPrompt
	}
	co.Resume, co.ForkSession, co.Continue = req.Resume, req.Fork, false
	if req.Resume != "" {
		co.SessionID = ""
	}
	o.CLI = &co
	o.Continues = from // a resume: the changes go on
	if existing != nil {
		o.Worktree = &host.WorktreeOptions{Existing: existing}
	} else if req.Worktree {
		o.Worktree = &host.WorktreeOptions{}
	}
	var owner *team.Identity
	if t := b.opts.Team; t != nil {
		id, ok := team.FromContext(ctx)
		if !ok {
			return SessionInfo{}, team.ErrUnauthenticated
		}
		owner = id
		// A worktree session's CLI needs the worktree and the
		// repository's git directory: the sandbox gets the whole
		// repository (both are in it).
		writable := ""
		if o.Worktree != nil {
			top, err := worktreeRepo(ctx, cwd, existing)
			if err != nil {
				return SessionInfo{}, err
			}
			writable = top
		}
		to, err := t.sessionPolicy().OptionsWithin(ctx, id, cwd, writable, &o)
		if err != nil {
			return SessionInfo{}, err
		}
		o = *to
	}
	o.Commands = b.policy(o.Commands)
	var title string
	convCwd := cwd // where the CLI keeps the conversation
	if e := existing; e != nil {
		convCwd = filepath.Join(e.Path, e.Prefix)
	}
	if req.Resume != "" {
		if ds, err := b.DiskSessions(ctx, convCwd); err == nil {
			for _, d := range ds {
				if d.SessionID == req.Resume {
					title = cmpOr(d.Title, cmpOr(d.Summary, d.FirstPrompt))
				}
			}
		}
	}
	var hist *History
	if req.Resume != "" {
		// Read before the CLI starts appending to the file.
		if dir := cmpOr(o.CLI.Env[claude.EnvConfigDir], b.configDir()); dir != "" || b.defaultConfigDir(&dir) {
			hist = readHistory(claude.SessionFilePath(dir, convCwd, req.Resume), req.Resume, b.opts.MaxHistory, b.opts.MaxHistoryBytes)
		}
	}
	s, err := b.m.Start(ctx, &o)
	if err != nil {
		return SessionInfo{}, err
	}
	e := &entry{s: s, created: time.Now(), title: title, history: hist, req: *req, owner: owner}
	e.req.Cwd = cwd
	b.mu.Lock()
	b.entries[s.ID()] = e
	b.order = append(b.order, s.ID())
	b.trimLocked()
	b.mu.Unlock()
	return b.info(e), nil
}

// trimLocked forgets the oldest ended sessions beyond MaxEnded.
func (b *LocalBackend) trimLocked() {
	ended := 0
	for _, id := range b.order {
		if isDone(b.entries[id].s) {
			ended++
		}
	}
	for i := 0; ended > b.opts.MaxEnded && i < len(b.order); {
		id := b.order[i]
		if isDone(b.entries[id].s) {
			delete(b.entries, id)
			b.order = slices.Delete(b.order, i, i+1)
			ended--
			continue
		}
		i++
	}
}

func isDone(s *host.Session) bool {
	select {
	case <-s.Done():
		return true
	default:
		return false
	}
}

func (b *LocalBackend) info(e *entry) SessionInfo {
	snap := e.s.Snapshot()
	si := SessionInfo{
		ID: snap.ID, SessionID: snap.SessionID, Cwd: snap.Cwd, Model: snap.Model, PermissionMode: snap.PermissionMode,
		State: snap.State.State, Tool: snap.State.Tool, LastEvent: e.s.LastEvent(), Created: e.created,
		Seq: snap.Seq, CostUSD: snap.Cost.USD, Ended: snap.Ended, Tasks: len(host.WorkingTasks(snap.Tasks)),
	}
	if snap.Worktree != nil {
		si.Worktree = *snap.Worktree
	}
	b.mu.Lock()
	si.Title, si.LastPrompt = e.title, e.lastPrompt
	b.mu.Unlock()
	return si
}

// DefaultCwd is the working directory of a start request without one
// (LocalOptions.DefaultCwd); the server tells clients in its hello frame
// (DefaultCwder).
func (b *LocalBackend) DefaultCwd() string { return b.opts.DefaultCwd }

// List implements Backend.
func (b *LocalBackend) List(ctx context.Context) ([]SessionInfo, error) {
	b.mu.Lock()
	es := make([]*entry, 0, len(b.order))
	for _, id := range b.order {
		es = append(es, b.entries[id])
	}
	b.mu.Unlock()
	out := make([]SessionInfo, 0, len(es))
	for _, e := range es {
		out = append(out, b.info(e))
	}
	return out, nil
}

// session returns the session with the given id.
func (b *LocalBackend) session(id string) (*entry, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.entries[id]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrNoSession, id)
	}
	return e, nil
}

// Events implements Backend.
func (b *LocalBackend) Events(ctx context.Context, id string, after uint64) iter.Seq2[host.Event, error] {
	e, err := b.session(id)
	if err != nil {
		return func(yield func(host.Event, error) bool) { yield(host.Event{}, err) }
	}
	return e.s.Events(ctx, after)
}

// Snapshot implements Backend.
func (b *LocalBackend) Snapshot(ctx context.Context, id string) (*host.Snapshot, error) {
	e, err := b.session(id)
	if err != nil {
		return nil, err
	}
	return e.s.Snapshot(), nil
}

// History implements Historian.
func (b *LocalBackend) History(ctx context.Context, id string) (*History, error) {
	e, err := b.session(id)
	if err != nil {
		return nil, err
	}
	return e.history, nil
}

// defaultConfigDir sets *dir to this process's CLI config directory.
func (b *LocalBackend) defaultConfigDir(dir *string) bool {
	d, err := claude.ConfigDir()
	*dir = d
	return err == nil
}

// Do implements Backend: host.Session.Do, plus the list's bookkeeping
// (a prompt names an untitled session; a closed session leaves the
// list) and resume.
func (b *LocalBackend) Do(ctx context.Context, id string, cmd *host.Command) (*Result, error) {
	e, err := b.session(id)
	if err != nil {
		return nil, err
	}
	if cmd.Type == host.CommandResume {
		return b.resume(ctx, id, e)
	}
	res, err := e.s.Do(ctx, cmd)
	if err != nil {
		return nil, err
	}
	switch cmd.Type {
	case host.CommandSend:
		b.mu.Lock()
		if t := strings.TrimSpace(cmd.Text); t != "" {
			e.lastPrompt = clip(t, 200)
			if e.title == "" {
				e.title = clip(t, 80)
			}
		}
		b.mu.Unlock()
	case host.CommandClose, host.CommandWorktreeDiscard:
		b.mu.Lock()
		delete(b.entries, id)
		b.order = slices.DeleteFunc(b.order, func(x string) bool { return x == id })
		b.mu.Unlock()
	}
	return &Result{CommandResult: *res}, nil
}

// resume starts a new CLI with --resume on the conversation of a session
// whose CLI is gone, and puts it in the old one's place in the list.
func (b *LocalBackend) resume(ctx context.Context, id string, e *entry) (*Result, error) {
	if !isDone(e.s) {
		if e.s.State().State != host.StateDisconnected {
			return nil, errorf(CodeBadRequest, "the session is still running; only a disconnected session can be resumed")
		}
		// Its CLI is gone and it is ending: a client may see the
		// disconnected state before the session is done.
		select {
		case <-e.s.Done():
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	sid := e.s.SessionID()
	if sid == "" {
		return nil, errorf(CodeBadRequest, "the session has no conversation to resume")
	}
	b.mu.Lock()
	if e.resuming {
		b.mu.Unlock()
		return nil, errorf(CodeBusy, "the session is being resumed")
	}
	e.resuming = true
	b.mu.Unlock()
	req := e.req
	req.Resume, req.Fork = sid, false
	var existing *host.WorktreeInfo
	if wt := e.s.Worktree(); wt != nil && wt.State != host.WorktreeDiscarded && wt.State != host.WorktreeRemoved {
		// The conversation goes on in its worktree, not in a new one.
		existing = wt
	}
	if e.owner != nil {
		// The session stays its owner's: their denied tools, their
		// spend, their sandbox and HOME, not those of a collaborator
		// who resumes it. Each command is still checked as who sends it.
		ctx = team.NewContext(ctx, e.owner)
	}
	info, err := b.start(ctx, &req, existing, e.s)
	answered := e.s.Snapshot().Resolved
	b.mu.Lock()
	defer b.mu.Unlock()
	e.resuming = false
	if err != nil {
		return nil, err
	}
	// The new session takes the old one's title and place, and who
	// answered its approvals (the session file does not say).
	if ne := b.entries[info.ID]; ne != nil {
		ne.title, ne.lastPrompt, ne.created = cmpOr(e.title, ne.title), e.lastPrompt, e.created
		info.Title, info.LastPrompt, info.Created = ne.title, ne.lastPrompt, ne.created
		if r := resolvedOf(e.history, answered); len(r) > 0 {
			if ne.history == nil {
				ne.history = &History{Source: sid}
			}
			ne.history.Resolved = r
		}
	}
	if _, ok := b.entries[id]; ok {
		delete(b.entries, id)
		b.order = slices.DeleteFunc(b.order, func(x string) bool { return x == id })
		if i := slices.Index(b.order, info.ID); i >= 0 {
			b.order = slices.Delete(b.order, i, i+1)
		}
		b.order = append(b.order, info.ID)
	}
	return &Result{Session: &info}, nil
}

// resolvedOf is every approval answered in a conversation: those its
// history carried (from earlier resumes), then its session's (b.mu held).
func resolvedOf(h *History, answered []host.ResolvedApproval) []host.ResolvedApproval {
	var out []host.ResolvedApproval
	if h != nil {
		out = append(out, h.Resolved...)
	}
	out = append(out, answered...)
	if n := len(out) - maxHistoryResolved; n > 0 {
		out = out[n:]
	}
	return out
}

// maxHistoryResolved bounds History.Resolved: the last answers go on.
const maxHistoryResolved = 64

func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8Start(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func utf8Start(c byte) bool { return c&0xC0 != 0x80 }

// DiskSessions implements Backend.
func (b *LocalBackend) DiskSessions(ctx context.Context, cwd string) ([]DiskSession, error) {
	cwd = cmpOr(cwd, b.opts.DefaultCwd)
	if cwd == "" || !filepath.IsAbs(cwd) {
		return nil, errorf(CodeBadRequest, "cwd must be an absolute path")
	}
	list, err := claude.ListSessions(cwd, &claude.ListSessionsOptions{ConfigDir: b.configDir(), Limit: 200})
	if err != nil && len(list) == 0 {
		return nil, err
	}
	out := make([]DiskSession, 0, len(list))
	for _, si := range list {
		out = append(out, DiskSession{
			SessionID: si.ID, Title: si.Title, Summary: si.Summary, FirstPrompt: si.FirstPrompt,
			LastPrompt: si.LastPrompt, Modified: si.ModTime, Created: si.CreatedAt, Cwd: si.Cwd,
			GitBranch: si.GitBranch, Size: si.Size,
		})
	}
	return out, nil
}

// configDir is the CLI's config directory as the sessions' environment
// sets it ("" = the default).
func (b *LocalBackend) configDir() string {
	if b.opts.Session == nil || b.opts.Session.CLI == nil {
		return ""
	}
	env := b.opts.Session.CLI.Env
	if d := env[claude.EnvConfigDir]; d != "" {
		return d
	}
	if h := env["HOME"]; h != "" {
		return filepath.Join(h, ".claude")
	}
	return ""
}

// Ready implements Readier: the sessions' CLI can be found (the
// template's CLIPath, or discovery as claude.Connect does it). A template
// with a Transport of its own needs no CLI.
func (b *LocalBackend) Ready(ctx context.Context) error {
	path := ""
	if b.opts.Session != nil && b.opts.Session.CLI != nil {
		if b.opts.Session.CLI.Transport != nil {
			return nil
		}
		path = b.opts.Session.CLI.CLIPath
	}
	if _, _, err := proc.Find(path, os.Getenv); err != nil {
		return fmt.Errorf("the Claude Code CLI: %w", err)
	}
	return nil
}

// worktreeRepo is the top folder of the repository a worktree session
// starts in (or continues in: existing).
func worktreeRepo(ctx context.Context, cwd string, existing *host.WorktreeInfo) (string, error) {
	if existing != nil {
		return existing.Repo, nil
	}
	_, top, _, err := worktree.Plan(ctx, cwd, nil)
	if err != nil {
		return "", errorf(CodeBadRequest, "a session in a worktree: %v", err)
	}
	return top, nil
}
