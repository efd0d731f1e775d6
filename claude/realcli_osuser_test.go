package claude_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
)

// Options.User: the CLI runs as another OS user, as the Python SDK's
// `user` option lets it.

// envNotRootHelper makes the test binary, re-executed as nobody, try to
// start a CLI as root and print how Connect failed.
const envNotRootHelper = "TETHER_OSUSER_HELPER"

func init() {
	if os.Getenv(envNotRootHelper) != "" {
		notRootHelper()
	}
}

func notRootHelper() {
	err := tryAsRoot()
	var ue *claude.UserError
	fmt.Printf("notPermitted=%v eperm=%v userError=%v\n%v\n",
		errors.Is(err, claude.ErrUserNotPermitted), errors.Is(err, syscall.EPERM), errors.As(err, &ue), err)
	os.Exit(0)
}

// tryAsRoot starts /bin/true as root: what a non-root host may not do.
func tryAsRoot() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := claude.Connect(ctx, &claude.Options{CLIPath: "/bin/true", SkipVersionCheck: true, User: "root"})
	if err == nil {
		s.Close()
		return errors.New("Connect succeeded")
	}
	return err
}

func TestLookupOSUser(t *testing.T) {
	want, err := user.Lookup("nobody")
	if err != nil {
		t.Skipf("no nobody account here: %v", err)
	}
	for _, name := range []string{"nobody", want.Uid} {
		u, err := claude.LookupOSUser(name)
		if err != nil {
			t.Fatalf("LookupOSUser(%q): %v", name, err)
		}
		if u.Name != "nobody" || strconv.Itoa(int(u.UID)) != want.Uid || strconv.Itoa(int(u.GID)) != want.Gid || u.Home != want.HomeDir {
			t.Errorf("LookupOSUser(%q) = %+v, want %+v", name, u, want)
		}
	}
	for _, name := range []string{"", "no-such-user-tether", "4000000000"} {
		_, err := claude.LookupOSUser(name)
		var ue *claude.UserError
		if !errors.Is(err, claude.ErrUnknownUser) || !errors.As(err, &ue) || ue.User != name {
			t.Errorf("LookupOSUser(%q): err = %v, want a *UserError matching ErrUnknownUser", name, err)
		}
	}
}

// TestUserUnknown: Connect refuses an unknown user before starting
// anything.
func TestUserUnknown(t *testing.T) {
	started := false
	tr := transportFunc(func(ctx context.Context, l *claude.Launch) (claude.Conn, error) {
		started = true
		return nil, errors.New("started")
	})
	_, err := claude.Connect(context.Background(), &claude.Options{Transport: tr, User: "no-such-user-tether"})
	var ue *claude.UserError
	if !errors.Is(err, claude.ErrUnknownUser) || !errors.As(err, &ue) || started {
		t.Fatalf("err = %v (started %v), want a *UserError matching ErrUnknownUser and no start", err, started)
	}
	if !strings.Contains(err.Error(), "no-such-user-tether") {
		t.Errorf("the error does not name the user: %v", err)
	}
}

type transportFunc func(ctx context.Context, l *claude.Launch) (claude.Conn, error)

func (f transportFunc) Connect(ctx context.Context, l *claude.Launch) (claude.Conn, error) {
	return f(ctx, l)
}

// TestUserNotPermitted: a host that is not root asking for another user
// gets a *UserError matching ErrUserNotPermitted and syscall.EPERM. Run as
// root, the test binary re-executes itself as nobody to be such a host.
func TestUserNotPermitted(t *testing.T) {
	if os.Geteuid() != 0 {
		err := tryAsRoot()
		if !errors.Is(err, claude.ErrUserNotPermitted) || !errors.Is(err, syscall.EPERM) {
			t.Fatalf("err = %v, want ErrUserNotPermitted and EPERM", err)
		}
		return
	}
	nobody := lookupNobody(t)
	dir := openDir(t)
	exe := shareFile(t, mustExecutable(t), dir)
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), envNotRootHelper+"=1", "GORACE=atexit_sleep_ms=0")
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody.UID, Gid: nobody.GID, Groups: []uint32{}}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helper: %v\n%s", err, out)
	}
	t.Logf("as nobody: %s", out)
	if !strings.HasPrefix(string(out), "notPermitted=true eperm=true userError=true\n") || !strings.Contains(string(out), "only root may switch users") {
		t.Errorf("as nobody, starting the CLI as root: %s", out)
	}
}

// TestRealCLIAsUser: as root, Options.User = "nobody" runs the real CLI
// with nobody's uid and groups: the process's credentials say so, and so
// does `id` run by its Bash tool.
func TestRealCLIAsUser(t *testing.T) {
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("switching users needs root; CI runs the tests as root")
		}
		t.Skip("switching users needs root")
	}
	for _, mode := range []string{"supervised", "direct"} {
		t.Run(mode, func(t *testing.T) {
			if mode == "direct" {
				t.Setenv("TETHER_NO_SUPERVISOR", "1") // proc starts the CLI itself
			}
			realCLIAsUser(t)
		})
	}
}

func realCLIAsUser(t *testing.T) {
	nobody := lookupNobody(t)
	run := claudetest.NewRealRun(t, &claudetest.MessagesOptions{Replies: []*claudetest.Reply{
		claudetest.ToolUseReply("toolu_id", "Bash", map[string]any{"command": "id -u; id -g; id -G", "description": "who am I"}),
		claudetest.TextReply("done"),
	}})
	// nobody must reach the CLI and its directories: the CLI's cache is
	// in root's HOME, so a link to the binary goes in an open folder.
	o := run.Options
	o.CLIPath = shareFile(t, realPath(t, o.CLIPath), openDir(t))
	for _, d := range []string{run.CLI.Dir, run.CLI.Home, o.Env["TMPDIR"]} {
		openPath(t, d)
		// Everything in them is nobody's: the HOME comes with a
		// ~/.claude already (claudetest.NewRealCLI).
		err := filepath.WalkDir(d, func(p string, _ fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			return os.Lchown(p, int(nobody.UID), int(nobody.GID))
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	o.User = "nobody"
	o.CanUseTool = func(context.Context, *claude.ToolPermissionRequest) (claude.PermissionResult, error) {
		return &claude.PermissionAllow{}, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := claude.Connect(ctx, o)
	if err != nil {
		t.Fatalf("Connect: %v\nstderr: %s", err, run.Stderr())
	}
	defer s.Close()
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.PID()))
	if err != nil {
		t.Fatal(err)
	}
	ids := fmt.Sprint(nobody.UID)
	for _, l := range strings.Split(string(status), "\n") {
		if f := strings.Fields(l); len(f) > 1 && (f[0] == "Uid:" || f[0] == "Gid:") {
			want := ids
			if f[0] == "Gid:" {
				want = fmt.Sprint(nobody.GID)
			}
			if f[1] != want || f[2] != want {
				t.Errorf("the CLI's %s", l)
			}
		}
		if strings.HasPrefix(l, "Groups:") && strings.Contains(" "+l+" ", " 0 ") {
			t.Errorf("the CLI kept root's groups: %s", l)
		}
	}
	if err := turn(ctx, s, "who are you?"); err != nil {
		t.Fatalf("turn: %v\nstderr: %s", err, run.Stderr())
	}
	reqs := run.API.MessagesRequests()
	tr := reqs[len(reqs)-1].Params.ToolResult("toolu_id")
	if tr == nil || len(tr.Content) == 0 {
		t.Fatalf("no tool result for id -u")
	}
	got := strings.Fields(tr.Content[0].Text)
	if tr.IsError || len(got) < 2 || got[0] != ids || got[1] != fmt.Sprint(nobody.GID) {
		t.Errorf("id -u; id -g in the CLI's Bash = %q (error %v), want %d, %d", tr.Content[0].Text, tr.IsError, nobody.UID, nobody.GID)
	}
}

// turn sends prompt and reads the turn to its result.
func turn(ctx context.Context, s *claude.Session, prompt string) error {
	if err := s.Send(ctx, prompt); err != nil {
		return err
	}
	for _, err := range s.ReceiveTurn(ctx) {
		if err != nil {
			return err
		}
	}
	return nil
}

func lookupNobody(t *testing.T) *claude.OSUser {
	t.Helper()
	u, err := claude.LookupOSUser("nobody")
	if err != nil {
		t.Skipf("no nobody account: %v", err)
	}
	return u
}

func mustExecutable(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

func realPath(t *testing.T, p string) string {
	t.Helper()
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// openDir returns a fresh directory every user may enter.
func openDir(t *testing.T) string {
	t.Helper()
	d := t.TempDir()
	openPath(t, d)
	return d
}

// openPath opens d and its parent (the test's temporary root) to every
// user for search and reading.
func openPath(t *testing.T, d string) {
	t.Helper()
	for _, p := range []string{filepath.Dir(d), d} {
		if err := os.Chmod(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

// shareFile links (or, across file systems, copies) the executable src
// into dir and returns the new path.
func shareFile(t *testing.T, src, dir string) string {
	t.Helper()
	dst := filepath.Join(dir, filepath.Base(src))
	if err := os.Link(src, dst); err == nil {
		return dst
	}
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	return dst
}
