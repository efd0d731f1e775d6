package worktree

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tetherhq/tether/internal/gittest"
)

func write(t *testing.T, path, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// newRepo is a repository on branch main with one commit (a.txt).
func newRepo(t *testing.T) string {
	t.Helper()
	return gittest.NewRepo(t, "", map[string]string{"a.txt": "one\ntwo\nthree\n"})
}

func create(t *testing.T, repo string) *Worktree {
	t.Helper()
	w, err := Create(context.Background(), repo, &Options{Git: gittest.Path})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func TestCreateTwoWorktreesApart(t *testing.T) {
	repo := newRepo(t)
	a, b := create(t, repo), create(t, repo)
	if a.Path == b.Path || a.Branch == b.Branch {
		t.Fatalf("two worktrees share a folder or branch: %+v %+v", a, b)
	}
	if !strings.HasPrefix(a.Path, filepath.Join(repo, DefaultDir)) || a.Base != "main" || a.Repo != repo {
		t.Fatalf("worktree = %+v", a)
	}
	write(t, filepath.Join(a.Path, "from-a.txt"), "a\n")
	if _, err := os.Stat(filepath.Join(b.Path, "from-a.txt")); !os.IsNotExist(err) {
		t.Fatalf("b sees a's file: %v", err)
	}
	if _, err := os.Stat(filepath.Join(repo, "from-a.txt")); !os.IsNotExist(err) {
		t.Fatalf("the main checkout sees a's file: %v", err)
	}
	// The main checkout's status does not list the worktrees.
	if st := gittest.Run(t, repo, "status", "--porcelain"); st != "" {
		t.Fatalf("main checkout status = %q, want clean", st)
	}
	st, err := a.Status(context.Background())
	if err != nil || !st.Dirty || st.Merged {
		t.Fatalf("a's status = %+v, %v; want dirty, unmerged", st, err)
	}
}

func TestCreateRefusals(t *testing.T) {
	gittest.Need(t)
	_, err := Create(context.Background(), t.TempDir(), &Options{Git: gittest.Path})
	if !errors.Is(err, ErrNotRepository) {
		t.Fatalf("not a repository: err = %v", err)
	}
	repo := newRepo(t)
	gittest.Run(t, repo, "checkout", "-q", "--detach")
	if _, err := Create(context.Background(), repo, &Options{Git: gittest.Path}); !errors.Is(err, ErrDetached) {
		t.Fatalf("detached: err = %v", err)
	}
}

func TestMergeFastForwardWithUncommitted(t *testing.T) {
	repo := newRepo(t)
	w := create(t, repo)
	write(t, filepath.Join(w.Path, "new.txt"), "new\n")
	res, err := w.Merge(context.Background(), "session work")
	if err != nil {
		t.Fatal(err)
	}
	if !res.FastForward {
		t.Fatalf("res = %+v, want a fast-forward", res)
	}
	// The base branch and its checkout have the file; both trees clean.
	if b, err := os.ReadFile(filepath.Join(repo, "new.txt")); err != nil || string(b) != "new\n" {
		t.Fatalf("main checkout new.txt = %q, %v", b, err)
	}
	for _, d := range []string{repo, w.Path} {
		if st := gittest.Run(t, d, "status", "--porcelain"); st != "" {
			t.Fatalf("%s status = %q, want clean", d, st)
		}
	}
	if got, want := gittest.Run(t, repo, "rev-parse", "main"), gittest.Run(t, repo, "rev-parse", w.Branch); got != want {
		t.Fatalf("main %s, branch %s: want the same", got, want)
	}
	st, err := w.Status(context.Background())
	if err != nil || !st.Merged {
		t.Fatalf("status after merge = %+v, %v", st, err)
	}
	if err := w.Remove(context.Background(), false); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(w.Path); !os.IsNotExist(err) {
		t.Fatalf("worktree folder left: %v", err)
	}
	if out := gittest.Run(t, repo, "branch", "--list", w.Branch); out != "" {
		t.Fatalf("branch left: %q", out)
	}
}

func TestMergeTrueMergeBaseNotCheckedOut(t *testing.T) {
	repo := newRepo(t)
	w := create(t, repo)
	write(t, filepath.Join(w.Path, "b.txt"), "b\n")
	// main moves on, and the main checkout leaves it.
	write(t, filepath.Join(repo, "c.txt"), "c\n")
	gittest.Run(t, repo, "add", ".")
	gittest.Run(t, repo, "commit", "-q", "-m", "c")
	gittest.Run(t, repo, "checkout", "-q", "-b", "other")
	res, err := w.Merge(context.Background(), "session work")
	if err != nil {
		t.Fatal(err)
	}
	if res.FastForward || res.UpToDate {
		t.Fatalf("res = %+v, want a merge commit", res)
	}
	files := gittest.Run(t, repo, "ls-tree", "--name-only", "main")
	for _, f := range []string{"a.txt", "b.txt", "c.txt"} {
		if !slices.Contains(strings.Fields(files), f) {
			t.Fatalf("main has %q, missing %s", files, f)
		}
	}
	if parents := strings.Fields(gittest.Run(t, repo, "rev-list", "--parents", "-n1", "main")); len(parents) != 3 {
		t.Fatalf("main's head %v: want a merge commit with two parents", parents)
	}
}

func TestMergeConflictChangesNothing(t *testing.T) {
	repo := newRepo(t)
	w := create(t, repo)
	write(t, filepath.Join(w.Path, "a.txt"), "one\nTWO from the session\nthree\n")
	write(t, filepath.Join(w.Path, "extra.txt"), "x\n")
	write(t, filepath.Join(repo, "a.txt"), "one\nTWO from main\nthree\n")
	gittest.Run(t, repo, "commit", "-q", "-am", "main edits a")

	before := func() [4]string {
		return [4]string{
			gittest.Run(t, repo, "rev-parse", "main"), gittest.Run(t, repo, "rev-parse", w.Branch),
			gittest.Run(t, repo, "status", "--porcelain"), gittest.Run(t, w.Path, "status", "--porcelain"),
		}
	}
	was := before()
	_, err := w.Merge(context.Background(), "session work")
	var ce *ConflictError
	if !errors.As(err, &ce) || !errors.Is(err, ErrConflict) {
		t.Fatalf("err = %v, want a *ConflictError", err)
	}
	if !slices.Equal(ce.Files, []string{"a.txt"}) || ce.Base != "main" {
		t.Fatalf("conflict = %+v", ce)
	}
	if now := before(); now != was {
		t.Fatalf("a refused merge changed something:\nbefore %q\nafter  %q", was, now)
	}
	if b, _ := os.ReadFile(filepath.Join(w.Path, "a.txt")); string(b) != "one\nTWO from the session\nthree\n" {
		t.Fatalf("the worktree's file changed: %q", b)
	}
}

func TestMergeRefusedByDirtyBaseCheckout(t *testing.T) {
	repo := newRepo(t)
	w := create(t, repo)
	write(t, filepath.Join(w.Path, "a.txt"), "one\ntwo\nthree\nfour\n")
	write(t, filepath.Join(repo, "a.txt"), "local edit, not committed\n")
	mainWas := gittest.Run(t, repo, "rev-parse", "main")
	_, err := w.Merge(context.Background(), "session work")
	if !errors.Is(err, ErrBaseCheckout) {
		t.Fatalf("err = %v, want ErrBaseCheckout", err)
	}
	if now := gittest.Run(t, repo, "rev-parse", "main"); now != mainWas {
		t.Fatalf("main moved: %s → %s", mainWas, now)
	}
	if b, _ := os.ReadFile(filepath.Join(repo, "a.txt")); string(b) != "local edit, not committed\n" {
		t.Fatalf("the local edit was lost: %q", b)
	}
}

func TestRemoveUnmergedNeedsForce(t *testing.T) {
	repo := newRepo(t)
	w := create(t, repo)
	write(t, filepath.Join(w.Path, "x.txt"), "x\n")
	if err := w.Remove(context.Background(), false); !errors.Is(err, ErrUnmerged) {
		t.Fatalf("err = %v, want ErrUnmerged", err)
	}
	if _, err := os.Stat(filepath.Join(w.Path, "x.txt")); err != nil {
		t.Fatalf("a refused remove removed: %v", err)
	}
	c, err := w.Commit(context.Background(), "keep")
	if err != nil || c != gittest.Run(t, repo, "rev-parse", w.Branch) {
		t.Fatalf("commit = %s, %v", c, err)
	}
	if st := gittest.Run(t, w.Path, "status", "--porcelain"); st != "" {
		t.Fatalf("after Commit status = %q", st)
	}
	if err := w.Remove(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	if out := gittest.Run(t, repo, "worktree", "list"); strings.Contains(out, w.Path) {
		t.Fatalf("worktree still listed: %s", out)
	}
	if out := gittest.Run(t, repo, "branch", "--list", w.Branch); out != "" {
		t.Fatalf("branch left: %q", out)
	}
}

// Three sessions of one repository merging at once all land: the base
// takes each in turn.
func TestConcurrentMergesAllLand(t *testing.T) {
	repo := newRepo(t)
	var ws []*Worktree
	for i := range 3 {
		w := create(t, repo)
		write(t, filepath.Join(w.Path, fmt.Sprintf("f%d.txt", i)), "x\n")
		ws = append(ws, w)
	}
	errs := make(chan error, len(ws))
	for _, w := range ws {
		go func() {
			_, err := w.Merge(context.Background(), "work")
			errs <- err
		}()
	}
	for range ws {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	files := strings.Fields(gittest.Run(t, repo, "ls-tree", "--name-only", "main"))
	for i := range 3 {
		if !slices.Contains(files, fmt.Sprintf("f%d.txt", i)) {
			t.Fatalf("main has %v, missing f%d.txt", files, i)
		}
	}
	if st := gittest.Run(t, repo, "status", "--porcelain"); st != "" {
		t.Fatalf("main's checkout after the merges: %q", st)
	}
}
