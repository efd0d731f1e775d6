package team

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/tetherhq/tether/claude"
)

// Isolation: each person's CLI runs confined by bubblewrap, so that one
// person's Bash tool can neither read another person's workspace nor see
// their processes.
//
// What the CLI sees:
//
//   - the system read-only: /usr and the /bin, /sbin, /lib* links or
//     folders, /etc (its shadow files and SSH host keys masked), and the
//     CLI's install folder (the npm package holding the binary the CLI
//     path resolves to), plus IsolationOptions.ReadOnly;
//   - its workspace read-write, at the same path;
//   - a private HOME (StateDir/home/<person>) and /tmp (StateDir/tmp/<person>),
//     read-write, kept across that person's sessions;
//   - a fresh /proc of its own PID namespace, a minimal /dev.
//
// Nothing else of the host's file system is there: not other workspaces,
// not StateDir beyond the person's own folders, not the host's HOME. The
// network is shared (the CLI must reach the API; a loopback listener of
// the host is reachable, so keep those authenticated). When the host runs
// as root the CLI keeps uid 0 inside, but with no capabilities; combine
// with claude.Options.User to run it as an unprivileged account.

var (
	// ErrIsolationUnavailable: bubblewrap is missing, or the kernel does
	// not let it create the namespaces (user namespaces disabled, a
	// container without the privilege). An *IsolationError says which.
	ErrIsolationUnavailable = errors.New("team: session isolation unavailable")
	// ErrIsolation: a session could not be confined (no identity, a
	// workspace that is missing or not a folder, a state folder that
	// cannot be created). It is not started unconfined.
	ErrIsolation = errors.New("team: cannot isolate the session")
)

// IsolationError says why isolation is unavailable or a session could not
// be confined: what bubblewrap said, or the setup step that failed.
type IsolationError struct {
	Bwrap  string // the bubblewrap executable
	Stderr string // what bubblewrap wrote (at most 4 KiB), if it ran
	Err    error  // ErrIsolationUnavailable or ErrIsolation
	Cause  error  // the underlying error; may be nil
}

func (e *IsolationError) Error() string {
	var b strings.Builder
	b.WriteString(e.Err.Error())
	if e.Cause != nil {
		b.WriteString(": ")
		b.WriteString(e.Cause.Error())
	}
	if s := strings.TrimSpace(e.Stderr); s != "" {
		b.WriteString(": bwrap says: ")
		b.WriteString(s)
	}
	return b.String()
}

func (e *IsolationError) Unwrap() []error {
	if e.Cause == nil {
		return []error{e.Err}
	}
	return []error{e.Err, e.Cause}
}

// DefaultBwrap is where Debian's bubblewrap package installs bwrap.
const DefaultBwrap = "/usr/bin/bwrap"

// IsolationOptions configure an Isolation.
type IsolationOptions struct {
	// Bwrap is the bubblewrap executable ("" = DefaultBwrap).
	Bwrap string
	// StateDir holds each person's HOME and /tmp (StateDir/home/<person>,
	// StateDir/tmp/<person>). Required, absolute; created if missing.
	StateDir string
	// ReadOnly are more host paths the CLI sees read-only at the same
	// place (a shared tool chain in /opt, say). Missing ones are skipped.
	ReadOnly []string
	// Logger receives a debug line per confined start (person and
	// workspace). nil discards.
	Logger *slog.Logger
}

// Isolation confines sessions' CLIs with bubblewrap. It is safe for
// concurrent use.
type Isolation struct {
	bwrap    string
	stateDir string
	readOnly []string
	log      *slog.Logger

	mu sync.Mutex // serialises the creation of the per-person folders
}

// NewIsolation checks the options; it does not run bubblewrap (Check
// does). A StateDir that is empty or relative is an error matching
// ErrIsolation.
func NewIsolation(o *IsolationOptions) (*Isolation, error) {
	if o == nil {
		o = &IsolationOptions{}
	}
	bw := o.Bwrap
	if bw == "" {
		bw = DefaultBwrap
	}
	if o.StateDir == "" || !filepath.IsAbs(o.StateDir) {
		return nil, &IsolationError{Bwrap: bw, Err: ErrIsolation, Cause: fmt.Errorf("IsolationOptions.StateDir must be an absolute path, got %q", o.StateDir)}
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ro := make([]string, 0, len(o.ReadOnly))
	for _, p := range o.ReadOnly {
		if !filepath.IsAbs(p) {
			return nil, &IsolationError{Bwrap: bw, Err: ErrIsolation, Cause: fmt.Errorf("IsolationOptions.ReadOnly: %q is not absolute", p)}
		}
		ro = append(ro, filepath.Clean(p))
	}
	return &Isolation{bwrap: bw, stateDir: filepath.Clean(o.StateDir), readOnly: ro, log: log}, nil
}

// checkTimeout bounds Check's run of bubblewrap whatever ctx says.
const checkTimeout = 30 * time.Second

// maxStderr bounds what is kept of bubblewrap's stderr.
const maxStderr = 4 << 10

// Check runs bubblewrap once with the namespaces and mounts sessions get,
// running /bin/true inside. It returns nil when that works, else an
// *IsolationError matching ErrIsolationUnavailable with bubblewrap's own
// words ("No permissions to creating new namespace", "Creating new
// namespace failed: Operation not permitted" …). Run it at start-up so a
// machine that cannot isolate fails clearly instead of at the first
// session.
func (iso *Isolation) Check(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if fi, err := os.Stat(iso.bwrap); err != nil || fi.IsDir() {
		if err == nil {
			err = fmt.Errorf("%s is a folder", iso.bwrap)
		}
		return &IsolationError{Bwrap: iso.bwrap, Err: ErrIsolationUnavailable, Cause: fmt.Errorf("bubblewrap not found (install the bubblewrap package): %w", err)}
	}
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	args := append(iso.systemArgs(), "--", "/bin/true")
	cmd := exec.CommandContext(ctx, iso.bwrap, args...)
	var stderr cappedBuffer
	cmd.Stderr = &stderr
	cmd.WaitDelay = time.Second
	if err := cmd.Run(); err != nil {
		if err := parent.Err(); err != nil {
			return err // the caller gave up: that says nothing of bubblewrap
		}
		return &IsolationError{Bwrap: iso.bwrap, Stderr: stderr.String(), Err: ErrIsolationUnavailable, Cause: err}
	}
	return nil
}

// cappedBuffer keeps the first maxStderr bytes written to it.
type cappedBuffer struct{ b bytes.Buffer }

func (c *cappedBuffer) Write(p []byte) (int, error) {
	if room := maxStderr - c.b.Len(); room > 0 {
		c.b.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (c *cappedBuffer) String() string { return c.b.String() }

// systemDirs are bound read-only (or recreated as the same symbolic link,
// on a merged-/usr system) when they exist.
var systemDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc"}

// maskedFiles are hidden under /etc even when it is bound: a host running
// as root would otherwise show them to a CLI that keeps uid 0 (as the
// file's owner it needs no capability to read them).
var maskedFiles = []string{"/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-", "/etc/sudoers"}

// systemArgs are the namespace flags and the system mounts every confined
// CLI gets, and Check tries.
func (iso *Isolation) systemArgs() []string {
	a := []string{
		"--unshare-pid",     // its own PID namespace: no one else's processes
		"--unshare-ipc",     // no one else's shared memory or semaphores
		"--die-with-parent", // bwrap's parent (the supervisor, the host) gone: so is the tree
		"--new-session",     // no TIOCSTI into a terminal it might inherit
		"--cap-drop", "ALL", // a host running as root: no capabilities inside
		"--proc", "/proc",
		"--dev", "/dev",
	}
	for _, d := range systemDirs {
		fi, err := os.Lstat(d)
		switch {
		case err != nil:
		case fi.Mode()&fs.ModeSymlink != 0:
			if target, err := os.Readlink(d); err == nil {
				a = append(a, "--symlink", target, d)
			}
		case fi.IsDir():
			a = append(a, "--ro-bind", d, d)
		}
	}
	masked := append([]string(nil), maskedFiles...)
	if keys, err := filepath.Glob("/etc/ssh/ssh_host_*key"); err == nil {
		masked = append(masked, keys...)
	}
	for _, f := range masked {
		if fi, err := os.Lstat(f); err == nil && fi.Mode().IsRegular() {
			a = append(a, "--ro-bind", "/dev/null", f)
		}
	}
	return a
}

// Transport returns a claude.Transport that starts the CLI of id's
// session under bubblewrap, confined to workspace, through base (nil = a
// claude.CommandTransport). The CLI's working directory (Launch.Dir, ""
// = workspace) must lie in the workspace. Launch.User (claude.Options.User)
// is honoured: base starts bubblewrap as that user, who then owns the
// person's HOME and /tmp.
//
// Closing the session ends bubblewrap, and with it everything in the
// sandbox: bubblewrap's init in the PID namespace dies, which makes the
// kernel kill every process of the namespace.
func (iso *Isolation) Transport(id *Identity, workspace string, base claude.Transport) claude.Transport {
	if base == nil {
		base = &claude.CommandTransport{}
	}
	var who *Identity
	if id != nil {
		c := *id
		who = &c
	}
	return &isolatedTransport{iso: iso, id: who, workspace: workspace, base: base}
}

type isolatedTransport struct {
	iso       *Isolation
	id        *Identity
	workspace string
	base      claude.Transport
}

// Connect confines l and starts it through the base transport.
func (t *isolatedTransport) Connect(ctx context.Context, l *claude.Launch) (claude.Conn, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	nl, err := t.iso.launch(t.id, t.workspace, l)
	if err != nil {
		return nil, err
	}
	t.iso.log.Debug("team: starting an isolated CLI", "person", t.id.Subject, "workspace", t.workspace)
	return t.base.Connect(ctx, nl)
}

// fail builds the *IsolationError of a session that cannot be confined.
func (iso *Isolation) fail(format string, args ...any) error {
	return &IsolationError{Bwrap: iso.bwrap, Err: ErrIsolation, Cause: fmt.Errorf(format, args...)}
}

// launch rewrites l to run under bubblewrap.
func (iso *Isolation) launch(id *Identity, workspace string, l *claude.Launch) (*claude.Launch, error) {
	if id == nil || id.Subject == "" {
		return nil, iso.fail("no identity: whose session is it?")
	}
	if l == nil || l.Path == "" {
		return nil, iso.fail("Launch.Path is empty: the CLI to confine is unknown")
	}
	if !filepath.IsAbs(workspace) {
		return nil, iso.fail("the workspace %q is not an absolute path", workspace)
	}
	ws, err := realDir(workspace)
	if err != nil {
		return nil, iso.fail("the workspace: %w", err)
	}
	dir := ws
	if l.Dir != "" {
		if dir, err = realDir(l.Dir); err != nil {
			return nil, iso.fail("the working directory: %w", err)
		}
		if !within(dir, ws) {
			return nil, iso.fail("the working directory %s is outside the workspace %s", l.Dir, workspace)
		}
	}
	cli, err := filepath.EvalSymlinks(l.Path)
	if err != nil {
		return nil, iso.fail("resolving the CLI path: %w", err)
	}
	if cli, err = filepath.Abs(cli); err != nil {
		return nil, iso.fail("resolving the CLI path: %w", err)
	}
	home, tmp, err := iso.personDirs(id, l.User)
	if err != nil {
		return nil, err
	}

	// /tmp first: any bind below may lie under /tmp, and a later /tmp
	// would hide it (their mount points are made in the person's /tmp).
	args := append(iso.systemArgs(), "--bind", tmp, "/tmp")
	args = append(args, "--ro-bind", installDir(cli), installDir(cli))
	for _, p := range iso.readOnly {
		args = append(args, "--ro-bind-try", p, p)
	}
	args = append(args,
		"--bind", home, home,
		"--bind", ws, ws)
	args = append(args, launchFiles(l, home, ws)...)
	args = append(args,
		"--chdir", dir,
		"--", cli)
	args = append(args, l.Args...)

	nl := *l
	nl.Path = iso.bwrap
	nl.Args = args
	nl.Dir = dir
	nl.Env = confinedEnv(l.Env, home)
	return &nl, nil
}

// launchFiles binds what the host itself prepared for this one CLI and
// names in its launch, which would otherwise not exist inside: the
// private --mcp-config file Tether writes for older CLIs (read-only) and
// the CLAUDE_CONFIG_DIR of a session resumed from a session store
// (read-write: the CLI writes its transcript there). Only absolute paths
// that exist and lie outside the person's HOME and workspace are bound;
// a JSON --mcp-config needs nothing.
func launchFiles(l *claude.Launch, home, ws string) []string {
	outside := func(p string) bool {
		if !filepath.IsAbs(p) {
			return false
		}
		p = filepath.Clean(p)
		return !within(p, home) && !within(p, ws)
	}
	var a []string
	for i, arg := range l.Args {
		var p string
		switch {
		case strings.HasPrefix(arg, "--mcp-config="):
			p = strings.TrimPrefix(arg, "--mcp-config=")
		case arg == "--mcp-config" && i+1 < len(l.Args):
			p = l.Args[i+1]
		default:
			continue
		}
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && outside(p) {
			a = append(a, "--ro-bind", p, p)
		}
	}
	for _, kv := range l.Env {
		if p, ok := strings.CutPrefix(kv, claude.EnvConfigDir+"="); ok {
			if fi, err := os.Stat(p); err == nil && fi.IsDir() && outside(p) {
				a = append(a, "--bind", p, p)
			}
		}
	}
	return a
}

// confinedEnv points HOME and the temporary folders inside the sandbox.
func confinedEnv(env []string, home string) []string {
	over := map[string]string{"HOME": home, "TMPDIR": "/tmp", "CLAUDE_CODE_TMPDIR": "/tmp"}
	out := make([]string, 0, len(env)+len(over))
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if _, ok := over[k]; ok {
			continue
		}
		out = append(out, kv)
	}
	for _, k := range []string{"HOME", "TMPDIR", "CLAUDE_CODE_TMPDIR"} {
		out = append(out, k+"="+over[k])
	}
	return out
}

// personDirs creates (or finds) the person's HOME and /tmp, 0700, owned
// by u when the CLI runs as another user. Their parents are 0711: a
// person's folder can be entered by name, never listed.
func (iso *Isolation) personDirs(id *Identity, u *claude.OSUser) (home, tmp string, err error) {
	name := isolationDirName(id)
	home = filepath.Join(iso.stateDir, "home", name)
	tmp = filepath.Join(iso.stateDir, "tmp", name)
	iso.mu.Lock()
	defer iso.mu.Unlock()
	for _, d := range []string{home, tmp} {
		if err := os.MkdirAll(filepath.Dir(d), 0o711); err != nil {
			return "", "", iso.fail("creating %s: %w", filepath.Dir(d), err)
		}
		if err := os.Mkdir(d, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return "", "", iso.fail("creating %s: %w", d, err)
		}
		fi, err := os.Lstat(d)
		if err != nil || !fi.IsDir() {
			return "", "", iso.fail("%s is not a folder (%v)", d, err)
		}
		if err := os.Chmod(d, 0o700); err != nil {
			return "", "", iso.fail("%s: %w", d, err)
		}
		if u != nil {
			if err := os.Lchown(d, int(u.UID), int(u.GID)); err != nil {
				return "", "", iso.fail("giving %s to %s: %w", d, u.Name, err)
			}
		}
	}
	return home, tmp, nil
}

// Home is the HOME the person's confined CLIs get (StateDir/home/<person>,
// created at their first start): their CLI keeps its session files in
// Home/.claude, where a host that mirrors or restores transcripts must
// look for them.
func (iso *Isolation) Home(id *Identity) string {
	if id == nil {
		return ""
	}
	return filepath.Join(iso.stateDir, "home", isolationDirName(id))
}

// isolationDirName is the name of a person's folders under StateDir: the local
// part of their subject sanitised to [a-z0-9._-] (as {user} in cwd_roots),
// then a short digest of the whole subject, so that alice@a.example and
// alice@b.example never share a HOME.
func isolationDirName(id *Identity) string {
	local := id.Subject
	if i := strings.IndexByte(local, '@'); i >= 0 {
		local = local[:i]
	}
	var b strings.Builder
	for _, r := range strings.ToLower(local) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-' {
			b.WriteRune(r)
		}
	}
	name := strings.Trim(b.String(), ".")
	if len(name) > 32 {
		name = name[:32]
	}
	sum := sha256.Sum256([]byte(id.Subject))
	if name == "" {
		return hex.EncodeToString(sum[:6])
	}
	return name + "-" + hex.EncodeToString(sum[:4])
}

// installDir is the folder to bind for the CLI binary cli (symbolic links
// resolved): the npm package that holds it (the nearest folder up to
// three levels above with a package.json), else the binary's own folder.
func installDir(cli string) string {
	d := filepath.Dir(cli)
	for i, p := 0, d; i < 3 && p != "/" && filepath.Base(p) != "node_modules"; i, p = i+1, filepath.Dir(p) {
		if _, err := os.Stat(filepath.Join(p, "package.json")); err == nil {
			return p
		}
	}
	return d
}

// realDir resolves p's symbolic links and checks it is a folder.
func realDir(p string) (string, error) {
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		return "", err
	}
	if r, err = filepath.Abs(r); err != nil {
		return "", err
	}
	fi, err := os.Stat(r)
	if err != nil {
		return "", err
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("%s is not a folder", p)
	}
	return r, nil
}
