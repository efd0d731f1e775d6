package team

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
	"github.com/tetherhq/tether/internal/proctree"
)

// launchRecorder is a claude.Transport that keeps the Launch it is given
// and starts nothing.
type launchRecorder struct{ got *claude.Launch }

var errRecorded = errors.New("recorded, not started")

func (r *launchRecorder) Connect(ctx context.Context, l *claude.Launch) (claude.Conn, error) {
	r.got = l
	return nil, errRecorded
}

// fakeInstall lays out an npm install of the CLI under root and returns
// the .bin link and the package folder.
func fakeInstall(t *testing.T, root string) (link, pkg string) {
	t.Helper()
	pkg = filepath.Join(root, "node_modules", "@anthropic-ai", "claude-code")
	bin := filepath.Join(pkg, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pkg, "package.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "claude.exe"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	link = filepath.Join(root, "node_modules", ".bin", "claude")
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../@anthropic-ai/claude-code/bin/claude.exe", link); err != nil {
		t.Fatal(err)
	}
	return link, pkg
}

// hasSeq reports whether seq appears in a as consecutive elements.
func hasSeq(a []string, seq ...string) bool {
	for i := 0; i+len(seq) <= len(a); i++ {
		if slices.Equal(a[i:i+len(seq)], seq) {
			return true
		}
	}
	return false
}

// TestIsolationLaunch: the Launch the base transport receives runs bwrap
// with the namespaces, the system and the CLI's package read-only, the
// person's HOME, /tmp and workspace read-write, and nothing wholesale.
func TestIsolationLaunch(t *testing.T) {
	defer goleak.VerifyNone(t)
	root := t.TempDir()
	link, pkg := fakeInstall(t, filepath.Join(root, "cli"))
	state := filepath.Join(root, "state")
	ws := filepath.Join(root, "work", "alice")
	if err := os.MkdirAll(filepath.Join(ws, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	iso, err := NewIsolation(&IsolationOptions{Bwrap: "/opt/bwrap", StateDir: state, ReadOnly: []string{"/opt/tools"}})
	if err != nil {
		t.Fatal(err)
	}
	alice := &Identity{Subject: "alice@example.com", Role: RoleMember}
	rec := &launchRecorder{}
	l := &claude.Launch{Path: link, Args: []string{"-p", "--verbose"}, Env: []string{"HOME=/root", "TMPDIR=/var/x", "FOO=bar"}, Dir: filepath.Join(ws, "sub")}
	if _, err := iso.Transport(alice, ws, rec).Connect(context.Background(), l); !errors.Is(err, errRecorded) {
		t.Fatalf("Connect: %v", err)
	}
	got := rec.got
	home := filepath.Join(state, "home", isolationDirName(alice))
	tmp := filepath.Join(state, "tmp", isolationDirName(alice))
	if !strings.HasPrefix(filepath.Base(home), "alice-") {
		t.Errorf("the person's folder is %s, want alice-<digest>", home)
	}
	t.Logf("bwrap %s", strings.Join(got.Args, " "))
	if got.Path != "/opt/bwrap" {
		t.Errorf("Path = %s, want the bwrap", got.Path)
	}
	for _, seq := range [][]string{
		{"--unshare-pid"}, {"--die-with-parent"}, {"--new-session"}, {"--cap-drop", "ALL"},
		{"--proc", "/proc"}, {"--dev", "/dev"},
		{"--ro-bind", pkg, pkg},
		{"--ro-bind-try", "/opt/tools", "/opt/tools"},
		{"--bind", tmp, "/tmp"},
		{"--bind", home, home},
		{"--bind", ws, ws},
		{"--chdir", filepath.Join(ws, "sub")},
		{"--", filepath.Join(pkg, "bin", "claude.exe"), "-p", "--verbose"},
	} {
		if !hasSeq(got.Args, seq...) {
			t.Errorf("argv lacks %q", seq)
		}
	}
	// Binds below /tmp (this test's CLI, workspace and state are there)
	// must come after /tmp's, or it hides them.
	if at := slices.Index(got.Args, "/tmp"); at < 0 || at > slices.Index(got.Args, pkg) || at > slices.Index(got.Args, ws) || at > slices.Index(got.Args, home) {
		t.Errorf("/tmp is bound after what lies below it: %q", got.Args)
	}
	if !hasSeq(got.Args, "--ro-bind", "/usr", "/usr") && !hasSeq(got.Args, "--symlink", "usr/bin", "/bin") {
		t.Errorf("argv binds no system: %q", got.Args)
	}
	if fi, err := os.Lstat("/etc/shadow"); err == nil && fi.Mode().IsRegular() && !hasSeq(got.Args, "--ro-bind", "/dev/null", "/etc/shadow") {
		t.Error("/etc/shadow is not masked")
	}
	for i, a := range got.Args {
		if a == "--" {
			break
		}
		if a == "/" || a == state || a == filepath.Join(state, "home") || a == filepath.Join(root, "work") {
			t.Errorf("argv[%d] exposes %s: %q", i, a, got.Args)
		}
	}
	if got.Dir != filepath.Join(ws, "sub") {
		t.Errorf("Dir = %s", got.Dir)
	}
	for _, e := range []string{"HOME=" + home, "TMPDIR=/tmp", "CLAUDE_CODE_TMPDIR=/tmp", "FOO=bar"} {
		if !slices.Contains(got.Env, e) {
			t.Errorf("Env lacks %s: %q", e, got.Env)
		}
	}
	if slices.Contains(got.Env, "HOME=/root") || slices.Contains(got.Env, "TMPDIR=/var/x") {
		t.Errorf("Env keeps the host's HOME or TMPDIR: %q", got.Env)
	}
	for d, want := range map[string]os.FileMode{home: 0o700, tmp: 0o700, filepath.Dir(home): 0o711, filepath.Dir(tmp): 0o711} {
		fi, err := os.Stat(d)
		if err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: %v, mode %v, want %v", d, err, fi.Mode().Perm(), want)
		}
	}

	// Sessions that cannot be confined are refused, never started bare.
	for name, c := range map[string]struct {
		id  *Identity
		ws  string
		dir string
	}{
		"no identity":        {nil, ws, ""},
		"no subject":         {&Identity{}, ws, ""},
		"relative workspace": {alice, "work/alice", ""},
		"missing workspace":  {alice, filepath.Join(root, "nope"), ""},
		"cwd outside":        {alice, filepath.Join(ws, "sub"), ws},
	} {
		rec := &launchRecorder{}
		_, err := iso.Transport(c.id, c.ws, rec).Connect(context.Background(), &claude.Launch{Path: link, Dir: c.dir})
		var ie *IsolationError
		if !errors.Is(err, ErrIsolation) || !errors.As(err, &ie) || rec.got != nil {
			t.Errorf("%s: err = %v, started %v; want an *IsolationError matching ErrIsolation and no start", name, err, rec.got != nil)
		}
	}
	if _, err := NewIsolation(&IsolationOptions{StateDir: "state"}); !errors.Is(err, ErrIsolation) {
		t.Errorf("a relative StateDir: %v", err)
	}
}

func TestIsolationDirName(t *testing.T) {
	a := isolationDirName(&Identity{Subject: "Alice.B@a.example"})
	b := isolationDirName(&Identity{Subject: "alice.b@b.example"})
	c := isolationDirName(&Identity{Subject: "../../etc"})
	if a == b || !strings.HasPrefix(a, "alice.b-") || strings.Contains(c, "/") || strings.HasPrefix(c, ".") {
		t.Errorf("names %q %q %q", a, b, c)
	}
}

// TestIsolationCheckUnavailable: a missing bwrap, and one that cannot make
// its namespaces, are *IsolationError matching ErrIsolationUnavailable,
// with what bwrap said.
func TestIsolationCheckUnavailable(t *testing.T) {
	defer goleak.VerifyNone(t)
	ctx := context.Background()
	iso, err := NewIsolation(&IsolationOptions{Bwrap: "/nonexistent/bwrap", StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	err = iso.Check(ctx)
	var ie *IsolationError
	if !errors.Is(err, ErrIsolationUnavailable) || !errors.As(err, &ie) || !errors.Is(err, os.ErrNotExist) || ie.Bwrap != "/nonexistent/bwrap" {
		t.Fatalf("Check with no bwrap: %v", err)
	}
	t.Log(err)

	refusing := filepath.Join(t.TempDir(), "bwrap")
	if err := os.WriteFile(refusing, []byte("#!/bin/sh\necho 'bwrap: No permissions to creating new namespace, likely because the kernel does not allow non-privileged user namespaces.' >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	iso, _ = NewIsolation(&IsolationOptions{Bwrap: refusing, StateDir: t.TempDir()})
	err = iso.Check(ctx)
	if !errors.Is(err, ErrIsolationUnavailable) || !errors.As(err, &ie) || !strings.Contains(ie.Stderr, "No permissions to creating new namespace") || !strings.Contains(err.Error(), "non-privileged user namespaces") {
		t.Fatalf("Check with a refusing bwrap: %v", err)
	}
	t.Log(err)
}

// needBwrap returns an Isolation on the real bwrap, checked; it skips the
// test without bwrap, except under CI=true.
func needBwrap(t *testing.T, state string) *Isolation {
	t.Helper()
	iso, err := NewIsolation(&IsolationOptions{StateDir: state})
	if err != nil {
		t.Fatal(err)
	}
	if err := iso.Check(context.Background()); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("isolation required under CI=true: %v", err)
		}
		t.Skipf("isolation unavailable here: %v", err)
	}
	return iso
}

func TestIsolationCheck(t *testing.T) {
	defer goleak.VerifyNone(t)
	needBwrap(t, t.TempDir())
}

// TestRealCLIIsolation: B's isolated session runs Bash to read a file in
// A's workspace and to list processes while A's isolated session runs:
// the read fails, and none of A's processes is listed. Closing each
// session leaves no process of its sandbox behind.
func TestRealCLIIsolation(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) }) // last, after the servers close
	iso := needBwrap(t, t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	allow := func(context.Context, *claude.ToolPermissionRequest) (claude.PermissionResult, error) {
		return &claude.PermissionAllow{}, nil
	}

	// A: holds a secret, and runs.
	apiA := claudetest.NewMessagesServer(nil)
	t.Cleanup(apiA.Close)
	cliA := claudetest.NewRealCLI(t, apiA)
	wsA := cliA.Dir
	secret := filepath.Join(wsA, "secret.txt")
	if err := os.WriteFile(secret, []byte("the-secret-of-A\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	oA := cliA.Options()
	oA.SkipVersionCheck = true
	oA.AddDirs = []string{wsA} // A's workspace in its CLI's argv too: ps would show it
	oA.CanUseTool = allow
	oA.Transport = iso.Transport(&Identity{Subject: "a@example.com"}, wsA, nil)
	sA, err := claude.Connect(ctx, oA)
	if err != nil {
		t.Fatalf("A: %v", err)
	}
	defer sA.Close()

	// B: tries to read it and to see A.
	cmd := fmt.Sprintf("cat %s; echo '--- proc'; ls /proc; echo '--- ps'; ps ax -o pid=,args=; (setsid sleep 300 >/dev/null 2>&1 &)", secret)
	apiB := claudetest.NewMessagesServer(&claudetest.MessagesOptions{Replies: []*claudetest.Reply{
		claudetest.ToolUseReply("toolu_peek", "Bash", map[string]any{"command": cmd, "description": "look around"}),
		claudetest.TextReply("done"),
	}})
	t.Cleanup(apiB.Close)
	cliB := claudetest.NewRealCLI(t, apiB)
	oB := cliB.Options()
	oB.SkipVersionCheck = true
	oB.CanUseTool = allow
	var stderrB strings.Builder
	oB.Stderr = func(l string) { stderrB.WriteString(l + "\n") }
	oB.Transport = iso.Transport(&Identity{Subject: "b@example.com"}, cliB.Dir, nil)
	sB, err := claude.Connect(ctx, oB)
	if err != nil {
		t.Fatalf("B: %v", err)
	}
	defer sB.Close()

	treeA, err := proctree.Tree(sA.PID())
	if err != nil || len(treeA) == 0 {
		t.Fatalf("A's sandbox: %v %v", treeA, err)
	}
	if err := sB.Send(ctx, "look around"); err != nil {
		t.Fatal(err)
	}
	for _, err := range sB.ReceiveTurn(ctx) {
		if err != nil {
			t.Fatalf("B's turn: %v\nstderr: %s", err, stderrB.String())
		}
	}
	for _, p := range treeA {
		if !p.Alive() {
			t.Fatalf("A's process %d (%s) ended during B's turn: the test proves nothing", p.PID, p.Cmd)
		}
	}
	reqs := apiB.MessagesRequests()
	tr := reqs[len(reqs)-1].Params.ToolResult("toolu_peek")
	if tr == nil || len(tr.Content) == 0 {
		t.Fatalf("no tool result reached the API; stderr: %s", stderrB.String())
	}
	out := tr.Content[0].Text
	t.Logf("B's Bash:\n%s", out)
	catPart, rest, ok1 := strings.Cut(out, "--- proc")
	procPart, psPart, ok2 := strings.Cut(rest, "--- ps")
	if !ok1 || !ok2 {
		t.Fatalf("B's Bash output is not what was scripted: %q", out)
	}
	if strings.Contains(out, "the-secret-of-A") || !strings.Contains(catPart, "No such file or directory") {
		t.Errorf("B read A's secret, or failed otherwise: %q", catPart)
	}
	var pids []string
	for _, f := range strings.Fields(procPart) {
		if _, err := strconv.Atoi(f); err == nil {
			pids = append(pids, f)
		}
	}
	if len(pids) == 0 || len(pids) > 12 || !slices.Contains(pids, "1") {
		t.Errorf("B's /proc lists %d processes (%v): not a PID namespace of its own", len(pids), pids)
	}
	// A's bwrap binds its workspace, A's CLI has it in --add-dir: a ps
	// that saw either would show it (B's own Bash command names the
	// secret's path, so look for those two forms).
	if strings.Contains(psPart, "--bind "+wsA+" ") || strings.Contains(psPart, "--add-dir="+wsA) || !strings.Contains(psPart, "claude") {
		t.Errorf("B's ps shows A's processes, or not even its own CLI:\n%s", psPart)
	}

	// Closing a session ends its whole sandbox, the detached sleep too.
	treeB := waitTree(t, sB.PID(), "sleep 300")
	for _, c := range []struct {
		s    *claude.Session
		tree []proctree.Proc
	}{{sB, treeB}, {sA, treeA}} {
		c.s.Close()
		deadline := time.Now().Add(30 * time.Second)
		for _, p := range c.tree {
			for p.Alive() {
				if time.Now().After(deadline) {
					t.Errorf("process %d (%s) survived Close", p.PID, p.Cmd)
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
		}
	}
}

// waitTree waits until a process whose command line is cmd runs below
// root, and returns the tree then.
func waitTree(t *testing.T, root int, cmd string) []proctree.Proc {
	t.Helper()
	var tree []proctree.Proc
	for deadline := time.Now().Add(45 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		tree, _ = proctree.Tree(root)
		for _, p := range tree {
			if p.Cmd == cmd {
				return tree
			}
		}
	}
	t.Fatalf("no %q below %d: %v", cmd, root, tree)
	return nil
}

// TestRealCLIIsolationAsUser: isolation composes with claude.Options.User:
// as root, a session for nobody runs bubblewrap as nobody (an
// unprivileged sandbox, through a user namespace), whose HOME and /tmp
// belong to nobody, and its Bash runs as nobody inside.
func TestRealCLIIsolationAsUser(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	if os.Geteuid() != 0 {
		t.Skip("switching users needs root")
	}
	nobody, err := claude.LookupOSUser("nobody")
	if err != nil {
		t.Skipf("no nobody account: %v", err)
	}
	open := func(d string) string { // d and its parent, the test's temporary root
		t.Helper()
		for _, p := range []string{filepath.Dir(d), d} {
			if err := os.Chmod(p, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		return d
	}
	state := open(t.TempDir())
	iso := needBwrap(t, state)
	api := claudetest.NewMessagesServer(&claudetest.MessagesOptions{Replies: []*claudetest.Reply{
		claudetest.ToolUseReply("toolu_id", "Bash", map[string]any{"command": "id -u; touch ~/mine /tmp/mine && stat -c %u ~/mine /tmp/mine", "description": "who"}),
		claudetest.TextReply("done"),
	}})
	t.Cleanup(api.Close)
	cli := claudetest.NewRealCLI(t, api)
	o := cli.Options()
	// The CLI's cache is in root's HOME, closed to nobody: link the
	// binary into an open folder.
	real, err := filepath.EvalSymlinks(o.CLIPath)
	if err != nil {
		t.Fatal(err)
	}
	o.CLIPath = filepath.Join(open(t.TempDir()), "claude")
	if err := os.Link(real, o.CLIPath); err != nil {
		t.Skipf("cannot link the CLI where nobody reaches it: %v", err)
	}
	open(cli.Dir)
	if err := os.Chown(cli.Dir, int(nobody.UID), int(nobody.GID)); err != nil {
		t.Fatal(err)
	}
	o.SkipVersionCheck = true
	o.User = "nobody"
	o.CanUseTool = func(context.Context, *claude.ToolPermissionRequest) (claude.PermissionResult, error) {
		return &claude.PermissionAllow{}, nil
	}
	var stderr strings.Builder
	o.Stderr = func(l string) { stderr.WriteString(l + "\n") }
	o.Transport = iso.Transport(&Identity{Subject: "n@example.com"}, cli.Dir, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := claude.Connect(ctx, o)
	if err != nil {
		t.Fatalf("Connect: %v\nstderr: %s", err, stderr.String())
	}
	defer s.Close()
	if err := s.Send(ctx, "who are you?"); err != nil {
		t.Fatal(err)
	}
	for _, err := range s.ReceiveTurn(ctx) {
		if err != nil {
			t.Fatalf("turn: %v\nstderr: %s", err, stderr.String())
		}
	}
	reqs := api.MessagesRequests()
	tr := reqs[len(reqs)-1].Params.ToolResult("toolu_id")
	if tr == nil || len(tr.Content) == 0 {
		t.Fatalf("no tool result; stderr: %s", stderr.String())
	}
	u := strconv.Itoa(int(nobody.UID))
	if got := strings.Fields(tr.Content[0].Text); tr.IsError || !slices.Equal(got, []string{u, u, u}) {
		t.Errorf("id -u and the owner of files made in HOME and /tmp = %q, want %s thrice", tr.Content[0].Text, u)
	}
}

// TestIsolationLaunchFiles: the private --mcp-config file and a session
// store's CLAUDE_CONFIG_DIR, which the host prepares outside the sandbox,
// are bound into it; a JSON --mcp-config and paths already inside are not.
func TestIsolationLaunchFiles(t *testing.T) {
	defer goleak.VerifyNone(t)
	root := t.TempDir()
	link, _ := fakeInstall(t, filepath.Join(root, "cli"))
	ws := filepath.Join(root, "work", "alice")
	host := filepath.Join(root, "host")
	cfgDir := filepath.Join(host, "config")
	for _, d := range []string{ws, cfgDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	mcpFile := filepath.Join(host, "mcp.json")
	if err := os.WriteFile(mcpFile, []byte(`{"mcpServers":{}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	inWS := filepath.Join(ws, "mcp.json")
	if err := os.WriteFile(inWS, []byte(`{}`), 0o600); err != nil {
		t.Fatal(err)
	}
	iso, err := NewIsolation(&IsolationOptions{Bwrap: "/opt/bwrap", StateDir: filepath.Join(root, "state")})
	if err != nil {
		t.Fatal(err)
	}
	alice := &Identity{Subject: "alice@example.com", Role: RoleMember}
	rec := &launchRecorder{}
	l := &claude.Launch{Path: link, Dir: ws,
		Args: []string{"--mcp-config=" + mcpFile, "--mcp-config", `{"mcpServers":{}}`, "--mcp-config", inWS, "--mcp-config=" + filepath.Join(host, "missing.json")},
		Env:  []string{claude.EnvConfigDir + "=" + cfgDir}}
	if _, err := iso.Transport(alice, ws, rec).Connect(context.Background(), l); !errors.Is(err, errRecorded) {
		t.Fatalf("Connect: %v", err)
	}
	got := rec.got.Args
	end := slices.Index(got, "--")
	if !hasSeq(got[:end], "--ro-bind", mcpFile, mcpFile) {
		t.Errorf("the --mcp-config file is not bound read-only: %q", got)
	}
	if !hasSeq(got[:end], "--bind", cfgDir, cfgDir) {
		t.Errorf("CLAUDE_CONFIG_DIR is not bound: %q", got)
	}
	for _, p := range []string{inWS, filepath.Join(host, "missing.json"), `{"mcpServers":{}}`} {
		if slices.Contains(got[:end], p) {
			t.Errorf("%s is bound: %q", p, got)
		}
	}
}
