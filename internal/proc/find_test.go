//go:build unix

package proc

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// fakeEnv is a getenv over a map, so Find never sees the machine's
// environment.
func fakeEnv(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

// exe creates an executable at path (and its directories).
func exe(t *testing.T, path string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// fakeSystem points the install places outside $HOME at an empty
// directory, so the machine's own CLI cannot answer.
func fakeSystem(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	old := systemDirs
	systemDirs = []string{filepath.Join(dir, "usr/local/bin"), filepath.Join(dir, "opt/homebrew/bin")}
	t.Cleanup(func() { systemDirs = old })
	return dir
}

func wantNotFound(t *testing.T, err error, mention ...string) {
	t.Helper()
	if !errors.Is(err, exec.ErrNotFound) {
		t.Fatalf("error %v does not match exec.ErrNotFound", err)
	}
	for _, m := range mention {
		if !strings.Contains(err.Error(), m) {
			t.Errorf("error %q does not mention %s", err, m)
		}
	}
}

func TestFindExplicit(t *testing.T) {
	fakeSystem(t)
	dir := t.TempDir()
	cli := exe(t, filepath.Join(dir, "my-claude"))
	onPath := exe(t, filepath.Join(dir, "bin", "claude"))
	env := fakeEnv(map[string]string{"PATH": filepath.Dir(onPath), envCLIPath: onPath})

	// The explicit path wins over $TETHER_CLI_PATH and PATH.
	got, searched, err := Find(cli, env)
	if err != nil || got != cli {
		t.Errorf("Find(%s) = %q, %v", cli, got, err)
	}
	if diff := cmp.Diff([]string{cli}, searched); diff != "" {
		t.Errorf("searched (-want +got):\n%s", diff)
	}

	// A relative path comes back absolute: Start resolves relative paths
	// against Config.Dir, not the directory Find ran in.
	t.Chdir(dir)
	if got, _, err := Find("./my-claude", env); err != nil || got != cli {
		t.Errorf("Find(./my-claude) = %q, %v; want %s", got, err, cli)
	}

	// A bare name is looked up in PATH.
	if got, _, err := Find("claude", env); err != nil || got != onPath {
		t.Errorf("Find(claude) = %q, %v; want %s", got, err, onPath)
	}

	// A broken explicit choice is an error, not a reason to use another CLI.
	notExec := filepath.Join(dir, "plain")
	os.WriteFile(notExec, []byte("x"), 0o644)
	for _, tc := range []struct{ path, why string }{
		{filepath.Join(dir, "missing"), "no such file"},
		{notExec, "not executable"},
		{dir, "is a directory"},
	} {
		got, searched, err := Find(tc.path, env)
		if got != "" {
			t.Errorf("Find(%s) = %q", tc.path, got)
		}
		if diff := cmp.Diff([]string{tc.path}, searched); diff != "" {
			t.Errorf("Find(%s) searched (-want +got):\n%s", tc.path, diff)
		}
		wantNotFound(t, err, tc.path, tc.why)
	}
	_, _, err = Find("no-such-claude", env)
	wantNotFound(t, err, "no-such-claude", filepath.Join(filepath.Dir(onPath), "no-such-claude"))
}

func TestFindEnvVar(t *testing.T) {
	fakeSystem(t)
	dir := t.TempDir()
	cli := exe(t, filepath.Join(dir, "env-claude"))
	onPath := exe(t, filepath.Join(dir, "bin", "claude"))
	env := map[string]string{"PATH": filepath.Dir(onPath), envCLIPath: cli}

	got, searched, err := Find("", fakeEnv(env))
	if err != nil || got != cli {
		t.Errorf("Find with $%s = %q, %v; want %s", envCLIPath, got, err, cli)
	}
	if diff := cmp.Diff([]string{cli}, searched); diff != "" {
		t.Errorf("searched (-want +got):\n%s", diff)
	}

	env[envCLIPath] = filepath.Join(dir, "gone")
	_, searched, err = Find("", fakeEnv(env))
	wantNotFound(t, err, envCLIPath, env[envCLIPath])
	if diff := cmp.Diff([]string{env[envCLIPath]}, searched); diff != "" {
		t.Errorf("searched (-want +got):\n%s", diff)
	}
}

func TestFindPATH(t *testing.T) {
	fakeSystem(t)
	home := t.TempDir()
	exe(t, filepath.Join(home, ".local/bin/claude")) // an install place: PATH comes first
	empty, full := t.TempDir(), t.TempDir()
	cli := exe(t, filepath.Join(full, "claude"))
	path := strings.Join([]string{"", "relative/bin", empty, full}, string(os.PathListSeparator))

	got, searched, err := Find("", fakeEnv(map[string]string{"PATH": path, "HOME": home}))
	if err != nil || got != cli {
		t.Errorf("Find = %q, %v; want %s", got, err, cli)
	}
	// Relative entries (and "", the current directory) are skipped.
	want := []string{filepath.Join(empty, "claude"), cli}
	if diff := cmp.Diff(want, searched); diff != "" {
		t.Errorf("searched (-want +got):\n%s", diff)
	}
}

func TestFindInstallPlaces(t *testing.T) {
	sys := fakeSystem(t)
	for _, tc := range []struct {
		name string
		env  map[string]string // besides HOME and PATH
		put  string            // where the CLI is; $HOME and $SYS are expanded
	}{
		{name: "claude local", put: "$HOME/.claude/local/claude"},
		{name: "local bin", put: "$HOME/.local/bin/claude"},
		{name: "npm global", put: "$HOME/.npm-global/bin/claude"},
		{name: "usr local", put: "$SYS/usr/local/bin/claude"},
		{name: "homebrew", put: "$SYS/opt/homebrew/bin/claude"},
		{name: "home node_modules", put: "$HOME/node_modules/.bin/claude"},
		{name: "yarn", put: "$HOME/.yarn/bin/claude"},
		{name: "npm prefix", env: map[string]string{"npm_config_prefix": "$HOME/npm"}, put: "$HOME/npm/bin/claude"},
		{name: "PREFIX", env: map[string]string{"PREFIX": "$HOME/usr"}, put: "$HOME/usr/bin/claude"},
		{name: "cache", put: "$HOME/.cache/tether/cli/2.1.197/node_modules/.bin/claude"},
		{name: "XDG cache", env: map[string]string{"XDG_CACHE_HOME": "$HOME/xdg"}, put: "$HOME/xdg/tether/cli/2.1.197/node_modules/.bin/claude"},
		{name: "TETHER_CLI_CACHE", env: map[string]string{"TETHER_CLI_CACHE": "$HOME/c", "XDG_CACHE_HOME": "$HOME/xdg"}, put: "$HOME/c/2.1.197/node_modules/.bin/claude"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home := t.TempDir()
			expand := func(s string) string {
				return os.Expand(s, func(k string) string { return map[string]string{"HOME": home, "SYS": sys}[k] })
			}
			env := map[string]string{"HOME": home, "PATH": t.TempDir()}
			for k, v := range tc.env {
				env[k] = expand(v)
			}
			cli := exe(t, expand(tc.put))
			defer os.Remove(cli) // the system dirs are shared by the subtests
			got, searched, err := Find("", fakeEnv(env))
			if err != nil || got != cli {
				t.Fatalf("Find = %q, %v; want %s", got, err, cli)
			}
			if last := searched[len(searched)-1]; last != cli {
				t.Errorf("searched ends with %s, want %s", last, cli)
			}
		})
	}
}

// The cache is searched newest version first, and a version directory
// without a binary (an interrupted install) is passed over.
func TestFindCacheNewest(t *testing.T) {
	fakeSystem(t)
	home := t.TempDir()
	cache := filepath.Join(home, "cache")
	bin := func(v string) string { return filepath.Join(cache, v, "node_modules/.bin/claude") }
	exe(t, bin("2.1.197"))
	want := exe(t, bin("2.1.330"))
	os.MkdirAll(filepath.Dir(bin("2.10.0")), 0o755) // newest, but empty
	os.MkdirAll(filepath.Join(cache, "tmp"), 0o755) // not a version
	env := fakeEnv(map[string]string{"HOME": home, "TETHER_CLI_CACHE": cache})

	got, searched, err := Find("", env)
	if err != nil || got != want {
		t.Fatalf("Find = %q, %v; want %s", got, err, want)
	}
	if diff := cmp.Diff([]string{bin("2.10.0"), bin("2.1.330")}, searched[len(searched)-2:]); diff != "" {
		t.Errorf("cache search order (-want +got):\n%s", diff)
	}
}

// When nothing is found, the error matches exec.ErrNotFound and searched
// lists every place tried, in order, each once.
func TestFindNotFound(t *testing.T) {
	sys := fakeSystem(t)
	home := t.TempDir()
	pathDir := t.TempDir()
	cache := filepath.Join(home, ".cache/tether/cli")
	os.MkdirAll(filepath.Join(cache, "2.1.197"), 0o755)
	env := map[string]string{
		"HOME": home,
		// $HOME/.local/bin is on PATH too: tried once, as a PATH entry.
		"PATH":              pathDir + string(os.PathListSeparator) + filepath.Join(home, ".local/bin"),
		"npm_config_prefix": filepath.Join(home, "npm"),
	}
	got, searched, err := Find("", fakeEnv(env))
	if got != "" {
		t.Errorf("Find = %q", got)
	}
	want := []string{
		filepath.Join(pathDir, "claude"),
		filepath.Join(home, ".local/bin/claude"),
		filepath.Join(home, ".claude/local/claude"),
		filepath.Join(home, ".npm-global/bin/claude"),
		filepath.Join(sys, "usr/local/bin/claude"),
		filepath.Join(sys, "opt/homebrew/bin/claude"),
		filepath.Join(home, "node_modules/.bin/claude"),
		filepath.Join(home, ".yarn/bin/claude"),
		filepath.Join(home, "npm/bin/claude"),
		filepath.Join(cache, "2.1.197/node_modules/.bin/claude"),
	}
	if diff := cmp.Diff(want, searched); diff != "" {
		t.Errorf("searched (-want +got):\n%s", diff)
	}
	wantNotFound(t, err, want...)

	// With no HOME, only what does not depend on it is tried; no panic.
	_, searched, err = Find("", fakeEnv(nil))
	wantNotFound(t, err)
	if diff := cmp.Diff(want[4:6], searched); diff != "" {
		t.Errorf("searched without HOME (-want +got):\n%s", diff)
	}
}
