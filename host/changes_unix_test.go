//go:build unix

package host_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/host"
)

// TestChangesLinksAndPipes: what a command leaves that is not a regular
// file is listed without being read: a link to a file out of the
// session's reach shows no content (the server never follows it) and
// reverting removes it; pipes (which git does not list) block neither
// the start nor the listing.
func TestChangesLinksAndPipes(t *testing.T) {
	ctx := testCtx(t)
	dir := gitRepo(t, map[string]string{"a.txt": "a\n"})
	if err := syscall.Mkfifo(filepath.Join(dir, "early.fifo"), 0o600); err != nil {
		t.Skip(err)
	}
	secret := filepath.Join(t.TempDir(), "secret.txt")
	writeFile(t, secret, "top secret\n")
	link, fifo := filepath.Join(dir, "link.txt"), filepath.Join(dir, "late.fifo")
	s, l := start(t, &host.Options{CLI: &claude.Options{Cwd: dir}}, editTurn(
		editStep{"toolu_1", "Bash", map[string]any{"command": "ln -s …; mkfifo late.fifo"},
			func() {
				if err := os.Symlink(secret, link); err != nil {
					t.Error(err)
				}
				if err := syscall.Mkfifo(fifo, 0o600); err != nil {
					t.Error(err)
				}
			},
			map[string]any{"stdout": ""}, false},
	))
	cs := turnChanges(t, ctx, s, l, "link")
	var got []string
	for _, c := range cs {
		got = append(got, c.Rel+" "+string(c.Kind))
		if !c.Binary || c.New != "" || c.Diff != "" || strings.Contains(c.New+c.Diff, "secret") {
			t.Errorf("%s: %+v", c.Rel, c)
		}
	}
	if strings.Join(got, ", ") != "link.txt created" {
		t.Errorf("changes: %v", got)
	}
	if _, err := s.RevertChanges(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(link); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the link after revert: %v", err)
	}
	if b, _ := os.ReadFile(secret); string(b) != "top secret\n" {
		t.Errorf("the link's target: %q", b)
	}
}
