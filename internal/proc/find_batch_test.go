//go:build unix

package proc

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// asWindows makes Find search as it does on Windows.
func asWindows(t *testing.T) {
	t.Helper()
	old := goos
	goos = "windows"
	t.Cleanup(func() { goos = old })
}

// A batch file named explicitly, by path, by bare name or through
// $TETHER_CLI_PATH, is a *BatchFileError, whatever its case.
func TestFindRefusesExplicitBatchFile(t *testing.T) {
	dir := t.TempDir()
	cmd := exe(t, filepath.Join(dir, "claude.cmd"))
	for name, c := range map[string]struct {
		cliPath string
		env     map[string]string
	}{
		"path":         {cliPath: cmd},
		"upper case":   {cliPath: exe(t, filepath.Join(dir, "CLAUDE.BAT"))},
		"bare name":    {cliPath: "claude.cmd", env: map[string]string{"PATH": dir}},
		"env variable": {env: map[string]string{envCLIPath: cmd}},
	} {
		_, _, err := Find(c.cliPath, fakeEnv(c.env))
		var be *BatchFileError
		if !errors.As(err, &be) || be.Found || errors.Is(err, exec.ErrNotFound) {
			t.Errorf("%s: err = %v, want an explicit *BatchFileError", name, err)
		}
	}
}

// On Windows the search takes claude.exe, never npm's claude.cmd shim:
// with both in PATH it picks the .exe, even in a later directory; with
// only the shim it says so instead of "not found".
func TestFindWindowsSkipsBatchShims(t *testing.T) {
	asWindows(t)
	fakeSystem(t)
	home := t.TempDir()
	shims, exes := t.TempDir(), t.TempDir()
	shim := exe(t, filepath.Join(shims, "claude.cmd"))
	cli := exe(t, filepath.Join(exes, "claude.exe"))
	path := strings.Join([]string{shims, exes}, string(os.PathListSeparator))

	got, searched, err := Find("", fakeEnv(map[string]string{"PATH": path, "HOME": home}))
	if err != nil || got != cli {
		t.Errorf("Find = %q, %v; want %s", got, err, cli)
	}
	for _, p := range searched {
		if isBatchFile(p) {
			t.Errorf("searched lists the batch file %s as a candidate: %q", p, searched)
		}
	}

	_, _, err = Find("", fakeEnv(map[string]string{"PATH": shims, "HOME": home}))
	var be *BatchFileError
	if !errors.As(err, &be) || !be.Found || be.Path != shim || !strings.Contains(err.Error(), "claude.exe") {
		t.Errorf("only a shim: err = %v, want a *BatchFileError found at %s", err, shim)
	}
	// Nothing at all is still "not found".
	_, _, err = Find("", fakeEnv(map[string]string{"PATH": t.TempDir(), "HOME": home}))
	wantNotFound(t, err)
}
