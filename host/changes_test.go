package host_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
	"github.com/tetherhq/tether/host"
)

// gitRepo makes a repository on branch main in a temporary directory
// with files committed, and returns its path (symlinks resolved, as git
// reports it).
func gitRepo(t *testing.T, files map[string]string) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("git is required under CI=true (apt-get install git)")
		}
		t.Skip("no git")
	}
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false"}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("init", "-q", "-b", "main")
	for name, body := range files {
		writeFile(t, filepath.Join(dir, name), body)
	}
	git("add", "-A")
	git("commit", "-qm", "start")
	return dir
}

func writeFile(t *testing.T, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return string(b)
}

// editStep is one tool call of editTurn: the call, what it does to the
// disk (between the call and its result, as the CLI does) and its
// structured result.
type editStep struct {
	id, tool string
	input    any
	do       func()
	result   any
	isError  bool
}

// editTurn plays a turn of tool calls, each run by its do, then ends.
func editTurn(steps ...editStep) claudetest.Script {
	return func(ctx context.Context, c *claudetest.CLI) error {
		if _, err := c.HandleInitialize(ctx); err != nil {
			return err
		}
		if _, err := c.ReadUser(ctx); err != nil {
			return err
		}
		c.Write(c.SystemInit())
		for _, st := range steps {
			c.Write(c.AssistantToolUse(st.id, st.tool, st.input))
			st.do()
			r := c.ToolResult(st.id, "ok", st.isError)
			r["tool_use_result"] = st.result
			c.Write(r)
		}
		c.Write(c.AssistantText("done"), c.ResultSuccess("done"))
		for {
			l, err := c.Read(ctx)
			if err != nil {
				return err
			}
			if err := c.AnswerIdle(l); err != nil {
				return err
			}
		}
	}
}

type changeRow struct {
	Rel, Kind      string
	Tools          []string
	Added, Removed int
}

func rows(cs []host.FileChange) []changeRow {
	var out []changeRow
	for _, c := range cs {
		out = append(out, changeRow{c.Rel, string(c.Kind), c.Tools, c.Added, c.Removed})
	}
	return out
}

// TestChangesGit: in a repository, the changes are what the edit tools
// did (their originals from their results, even when the file was
// already written when the call was seen) and what git sees besides
// (a file a Bash command deleted); reverting one file puts back only
// it, reverting all the rest; viewers' and owners' commands go through
// Do, where Authorize sees them.
func TestChangesGit(t *testing.T) {
	ctx := testCtx(t)
	dir := gitRepo(t, map[string]string{"a.go": "package a\n\nfunc A() int { return 1 }\n", "b.txt": "bee\n", "keep.txt": "kept\n"})
	writeFile(t, filepath.Join(dir, "scratch.txt"), "untracked at start\n") // dirty at the start: not a change
	a, b, n := filepath.Join(dir, "a.go"), filepath.Join(dir, "b.txt"), filepath.Join(dir, "sub", "new.txt")
	aOld := readFile(t, a)
	aNew := strings.Replace(aOld, "return 1", "return 2", 1)
	var refused []host.CommandType
	o := &host.Options{CLI: &claude.Options{Cwd: dir}, Commands: &host.CommandPolicy{
		Authorize: func(ctx context.Context, s *host.Session, c *host.Command) error {
			if c.Type == host.CommandRevertChanges && c.Actor == "viewer" {
				refused = append(refused, c.Type)
				return errors.New("viewers do not revert")
			}
			return nil
		}}}
	s, l := start(t, o, editTurn(
		editStep{"toolu_1", "Edit", map[string]any{"file_path": a, "old_string": "return 1", "new_string": "return 2"},
			func() { writeFile(t, a, aNew) },
			map[string]any{"filePath": a, "oldString": "return 1", "newString": "return 2", "originalFile": aOld, "structuredPatch": []any{}}, false},
		editStep{"toolu_2", "Write", map[string]any{"file_path": n, "content": "new\n"},
			func() { writeFile(t, n, "new\n") },
			map[string]any{"type": "create", "filePath": n, "content": "new\n", "structuredPatch": []any{}, "originalFile": nil}, false},
		editStep{"toolu_3", "Bash", map[string]any{"command": "rm b.txt"},
			func() { os.Remove(b) },
			map[string]any{"stdout": "", "stderr": "", "interrupted": false}, false},
	))
	cs := turnChanges(t, ctx, s, l, "change things")
	want := []changeRow{
		{"a.go", "modified", []string{"Edit"}, 1, 1},
		{"sub/new.txt", "created", []string{"Write"}, 1, 0},
		{"b.txt", "deleted", nil, 0, 1},
	}
	if diff := cmp.Diff(want, rows(cs)); diff != "" {
		t.Fatalf("changes (-want +got):\n%s", diff)
	}
	if !strings.Contains(cs[0].Diff, "-func A() int { return 1 }\n+func A() int { return 2 }") || cs[0].Old != aOld || cs[0].New != aNew {
		t.Errorf("a.go's diff:\n%s", cs[0].Diff)
	}

	// The journal said files changed, for the edits and the Bash call.
	var hints []host.FilesChanged
	evctx, cancel := context.WithCancel(ctx)
	for ev, err := range s.Events(evctx, 0) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Kind == host.EventFilesChanged {
			var fc host.FilesChanged
			json.Unmarshal(ev.Data, &fc)
			hints = append(hints, fc)
		}
		if ev.Kind == host.EventState && strings.Contains(string(ev.Data), `"idle"`) {
			break
		}
	}
	cancel()
	wantHints := []host.FilesChanged{{ToolUseID: "toolu_1", Tool: "Edit", Paths: []string{a}}, {ToolUseID: "toolu_2", Tool: "Write", Paths: []string{n}}, {ToolUseID: "toolu_3", Tool: "Bash"}}
	if diff := cmp.Diff(wantHints, hints); diff != "" {
		t.Errorf("files_changed events (-want +got):\n%s", diff)
	}

	// A viewer is refused where the command runs; nothing changes.
	if _, err := s.Do(ctx, &host.Command{Type: host.CommandRevertChanges, Actor: "viewer"}); host.ErrorCode(err) != host.CodeForbidden {
		t.Fatalf("viewer's revert: %v", err)
	}
	if got := readFile(t, a); got != aNew {
		t.Fatalf("a.go after a refused revert: %q", got)
	}
	res, err := s.Do(ctx, &host.Command{Type: host.CommandChanges, Actor: "viewer"})
	if err != nil || len(res.Changes) != 3 {
		t.Fatalf("viewer's changes: %v %v", res, err)
	}

	// An unknown path: refused, nothing done.
	if _, err := s.Do(ctx, &host.Command{Type: host.CommandRevertChanges, Paths: []string{"keep.txt", "a.go"}}); !errors.Is(err, host.ErrNotChanged) || host.ErrorCode(err) != host.CodeBadRequest {
		t.Fatalf("revert of an unchanged file: %v", err)
	}
	if got := readFile(t, a); got != aNew {
		t.Fatalf("a.go after a refused revert: %q", got)
	}

	// One file, by its relative path.
	res, err = s.Do(ctx, &host.Command{Type: host.CommandRevertChanges, Paths: []string{"a.go"}})
	if err != nil || !cmp.Equal(res.Reverted, []string{a}) {
		t.Fatalf("revert a.go: %+v %v", res, err)
	}
	if got := readFile(t, a); got != aOld {
		t.Errorf("a.go reverted: %q", got)
	}
	if got := readFile(t, n); got != "new\n" {
		t.Errorf("new.txt after reverting a.go: %q", got)
	}
	cs, _ = s.Changes(ctx)
	if diff := cmp.Diff(want[1:], rows(cs)); diff != "" {
		t.Errorf("changes after reverting a.go (-want +got):\n%s", diff)
	}

	// All of them.
	if _, err := s.RevertChanges(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(n); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("created file after revert: %v", err)
	}
	if got := readFile(t, b); got != "bee\n" {
		t.Errorf("deleted file after revert: %q", got)
	}
	if got := readFile(t, filepath.Join(dir, "scratch.txt")); got != "untracked at start\n" {
		t.Errorf("a file dirty at the start: %q", got)
	}
	if cs, _ := s.Changes(ctx); len(cs) != 0 {
		t.Errorf("changes after reverting all: %+v", rows(cs))
	}
	if !cmp.Equal(refused, []host.CommandType{host.CommandRevertChanges}) {
		t.Errorf("Authorize refused %v", refused)
	}
}

// TestChangesNoGit: outside a repository the edit tools' results are
// all there is: a Write over an existing file and an Edit after it show
// as one change against the file before the first; a Bash edit is not
// seen, nor a file an edit failed on (the CLI refused it: it is never
// shown, even when it changed meanwhile); after the session ends its
// changes can still be listed and reverted.
func TestChangesNoGit(t *testing.T) {
	ctx := testCtx(t)
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	f := filepath.Join(dir, "notes.md")
	writeFile(t, f, "# Notes\n\none\n")
	secret := filepath.Join(t.TempDir(), "secret.txt")
	writeFile(t, secret, "s1\n")
	s, l := start(t, &host.Options{CLI: &claude.Options{Cwd: dir}}, editTurn(
		editStep{"toolu_0", "Edit", map[string]any{"file_path": secret, "old_string": "s1", "new_string": "x"},
			func() { writeFile(t, secret, "s2\n") },
			"Permission denied", true},
		editStep{"toolu_1", "Write", map[string]any{"file_path": f, "content": "# Notes\n\ntwo\n"},
			func() { writeFile(t, f, "# Notes\n\ntwo\n") },
			map[string]any{"type": "update", "filePath": f, "content": "# Notes\n\ntwo\n", "structuredPatch": []any{}, "originalFile": "# Notes\n\none\n"}, false},
		editStep{"toolu_2", "Edit", map[string]any{"file_path": f, "old_string": "two", "new_string": "three"},
			func() { writeFile(t, f, "# Notes\n\nthree\n") },
			map[string]any{"filePath": f, "oldString": "two", "newString": "three", "originalFile": "# Notes\n\ntwo\n", "structuredPatch": []any{}}, false},
		editStep{"toolu_3", "Bash", map[string]any{"command": "touch other"},
			func() { writeFile(t, filepath.Join(dir, "other"), "x") },
			map[string]any{"stdout": ""}, false},
	))
	d, err := s.Send(ctx, "edit")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	l.waitState(t, ctx, host.StateIdle)
	s.Close()
	cs, err := s.Changes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []changeRow{{"notes.md", "modified", []string{"Write", "Edit"}, 1, 1}}
	if diff := cmp.Diff(want, rows(cs)); diff != "" {
		t.Fatalf("changes (-want +got):\n%s", diff)
	}
	if !strings.Contains(cs[0].Diff, "-one\n+three\n") {
		t.Errorf("diff:\n%s", cs[0].Diff)
	}
	res, err := s.Do(ctx, &host.Command{Type: host.CommandRevertChanges})
	if err != nil || len(res.Reverted) != 1 {
		t.Fatalf("revert after the end: %+v %v", res, err)
	}
	if got := readFile(t, f); got != "# Notes\n\none\n" {
		t.Errorf("reverted: %q", got)
	}
}

// TestChangesNotebookAndMultiEdit: NotebookEdit's result names its
// original as original_file, MultiEdit's as Edit's does; both count.
func TestChangesNotebookAndMultiEdit(t *testing.T) {
	ctx := testCtx(t)
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	nb, md := filepath.Join(dir, "a.ipynb"), filepath.Join(dir, "b.md")
	nbOld, nbNew := `{"cells":[{"source":"1"}]}`+"\n", `{"cells":[{"source":"2"}]}`+"\n"
	writeFile(t, nb, nbOld)
	writeFile(t, md, "x\ny\n")
	s, l := start(t, &host.Options{CLI: &claude.Options{Cwd: dir}}, editTurn(
		editStep{"toolu_1", "NotebookEdit", map[string]any{"notebook_path": nb, "new_source": "2"},
			func() { writeFile(t, nb, nbNew) },
			map[string]any{"notebook_path": nb, "new_source": "2", "original_file": nbOld, "updated_file": nbNew}, false},
		editStep{"toolu_2", "MultiEdit", map[string]any{"file_path": md, "edits": []any{}},
			func() { writeFile(t, md, "X\nY\n") },
			map[string]any{"filePath": md, "originalFile": "x\ny\n", "structuredPatch": []any{}}, false},
	))
	cs := turnChanges(t, ctx, s, l, "edit")
	want := []changeRow{{"a.ipynb", "modified", []string{"NotebookEdit"}, 1, 1}, {"b.md", "modified", []string{"MultiEdit"}, 2, 2}}
	if diff := cmp.Diff(want, rows(cs)); diff != "" {
		t.Errorf("changes (-want +got):\n%s", diff)
	}
}

// turnChanges sends prompt, waits for the turn's end and the session
// idle (l is its state log), and returns what the session changed.
func turnChanges(t *testing.T, ctx context.Context, s *host.Session, l *stateLog, prompt string) []host.FileChange {
	t.Helper()
	d, err := s.Send(ctx, prompt)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	l.waitState(t, ctx, host.StateIdle)
	cs, err := s.Changes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// TestChangesContinue: a session that takes up another's conversation in
// its place (Options.Continues) goes on with its changes: the earlier
// session's edits are listed against the conversation's first start,
// beside its own, and a revert puts both back.
func TestChangesContinue(t *testing.T) {
	ctx := testCtx(t)
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	f, g := filepath.Join(dir, "notes.md"), filepath.Join(dir, "todo.md")
	writeFile(t, f, "one\n")
	writeFile(t, g, "a\n")
	s1, l1 := start(t, &host.Options{CLI: &claude.Options{Cwd: dir}}, editTurn(
		editStep{"toolu_1", "Write", map[string]any{"file_path": f, "content": "two\n"},
			func() { writeFile(t, f, "two\n") },
			map[string]any{"type": "update", "filePath": f, "content": "two\n", "structuredPatch": []any{}, "originalFile": "one\n"}, false},
	))
	turnChanges(t, ctx, s1, l1, "edit")
	s1.Close()

	s2, l2 := start(t, &host.Options{CLI: &claude.Options{Cwd: dir}, Continues: s1}, editTurn(
		editStep{"toolu_2", "Edit", map[string]any{"file_path": f, "old_string": "two", "new_string": "three"},
			func() { writeFile(t, f, "three\n") },
			map[string]any{"filePath": f, "oldString": "two", "newString": "three", "originalFile": "two\n", "structuredPatch": []any{}}, false},
		editStep{"toolu_3", "Write", map[string]any{"file_path": g, "content": "b\n"},
			func() { writeFile(t, g, "b\n") },
			map[string]any{"type": "update", "filePath": g, "content": "b\n", "structuredPatch": []any{}, "originalFile": "a\n"}, false},
	))
	if cs, err := s2.Changes(ctx); err != nil || len(cs) != 1 || cs[0].Rel != "notes.md" {
		t.Fatalf("before its first turn, the continuing session's changes: %+v, %v; want the earlier edit", rows(cs), err)
	}
	cs := turnChanges(t, ctx, s2, l2, "more")
	want := []changeRow{{"notes.md", "modified", []string{"Write", "Edit"}, 1, 1}, {"todo.md", "modified", []string{"Write"}, 1, 1}}
	if diff := cmp.Diff(want, rows(cs)); diff != "" {
		t.Fatalf("changes (-want +got):\n%s", diff)
	}
	if !strings.Contains(cs[0].Diff, "-one\n+three\n") {
		t.Errorf("notes.md's diff is not against the first start:\n%s", cs[0].Diff)
	}
	res, err := s2.Do(ctx, &host.Command{Type: host.CommandRevertChanges})
	if err != nil || len(res.Reverted) != 2 {
		t.Fatalf("revert: %+v %v", res, err)
	}
	if a, b := readFile(t, f), readFile(t, g); a != "one\n" || b != "a\n" {
		t.Errorf("reverted: %q, %q; want both as at the first start", a, b)
	}
}

// TestChangesFromRecord: a session that takes up another's conversation
// in another process (a cluster's agent after a failover or a wake)
// reads the earlier session's record (Session.MarshalChanges,
// Options.ChangesFrom): in a git repository the start commit and what was
// dirty then carry over, so the earlier edits and a Bash deletion stay
// changes against the first start rather than becoming the new start.
func TestChangesFromRecord(t *testing.T) {
	ctx := testCtx(t)
	dir := gitRepo(t, map[string]string{"notes.md": "one\n", "gone.txt": "bye\n"})
	writeFile(t, filepath.Join(dir, "scratch.txt"), "dirty at the first start\n")
	f, gone := filepath.Join(dir, "notes.md"), filepath.Join(dir, "gone.txt")
	s1, l1 := start(t, &host.Options{CLI: &claude.Options{Cwd: dir}}, editTurn(
		editStep{"toolu_1", "Write", map[string]any{"file_path": f, "content": "two\n"},
			func() { writeFile(t, f, "two\n") },
			map[string]any{"type": "update", "filePath": f, "content": "two\n", "structuredPatch": []any{}, "originalFile": "one\n"}, false},
		editStep{"toolu_2", "Bash", map[string]any{"command": "rm gone.txt"},
			func() { os.Remove(gone) },
			map[string]any{"stdout": "", "stderr": "", "interrupted": false}, false},
	))
	turnChanges(t, ctx, s1, l1, "edit")
	record, err := s1.MarshalChanges(0)
	if err != nil || len(record) == 0 {
		t.Fatalf("MarshalChanges: %d bytes, %v", len(record), err)
	}
	s1.Close()
	writeFile(t, filepath.Join(dir, "scratch.txt"), "changed after the record\n") // by someone else meanwhile

	want := []changeRow{{"notes.md", "modified", []string{"Write"}, 1, 1}, {"gone.txt", "deleted", nil, 0, 1},
		{"scratch.txt", "modified", nil, 1, 1}}
	s2, _ := start(t, &host.Options{CLI: &claude.Options{Cwd: dir}, ChangesFrom: record}, editTurn())
	cs, err := s2.Changes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, rows(cs)); diff != "" {
		t.Fatalf("the continuing session's changes (-want +got):\n%s", diff)
	}
	if !strings.Contains(cs[0].Diff, "-one\n+two\n") {
		t.Errorf("notes.md's diff is not against the first start:\n%s", cs[0].Diff)
	}
	res, err := s2.Do(ctx, &host.Command{Type: host.CommandRevertChanges, Paths: []string{f}})
	if err != nil || len(res.Reverted) != 1 || readFile(t, f) != "one\n" {
		t.Fatalf("revert from the record: %+v %v; notes.md %q", res, err, readFile(t, f))
	}

	// Over a limit, the largest originals are left out: the file is
	// still listed, as too large to diff.
	writeFile(t, filepath.Join(dir, "big.txt"), strings.Repeat("x", 64<<10))
	s3, l3 := start(t, &host.Options{CLI: &claude.Options{Cwd: dir}}, editTurn(
		editStep{"toolu_3", "Write", map[string]any{"file_path": filepath.Join(dir, "big.txt"), "content": "y\n"},
			func() { writeFile(t, filepath.Join(dir, "big.txt"), "y\n") },
			map[string]any{"type": "update", "filePath": filepath.Join(dir, "big.txt"), "content": "y\n", "structuredPatch": []any{}, "originalFile": strings.Repeat("x", 64<<10)}, false},
	))
	turnChanges(t, ctx, s3, l3, "big")
	small, err := s3.MarshalChanges(8 << 10)
	if err != nil || len(small) > 8<<10 {
		t.Fatalf("MarshalChanges(8 KiB): %d bytes, %v", len(small), err)
	}
	if _, err := s3.MarshalChanges(10); err == nil {
		t.Error("MarshalChanges(10): no error for a record that cannot fit")
	}
	s3.Close()
	s4, _ := start(t, &host.Options{CLI: &claude.Options{Cwd: dir}, ChangesFrom: small}, editTurn())
	cs, err = s4.Changes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(cs, func(c host.FileChange) bool { return c.Rel == "big.txt" })
	if i < 0 || !cs[i].TooLarge || cs[i].Kind != host.FileModified {
		t.Errorf("big.txt from a record without its original: %+v", rows(cs))
	}

	// A record that cannot be used is ignored: the session starts, its
	// changes counting from now.
	for name, bad := range map[string][]byte{
		"garbage":            []byte("{not json"),
		"unknown form":       []byte(`{"v":99,"cwd":"` + dir + `"}`),
		"other folder":       []byte(`{"v":1,"cwd":"/elsewhere","files":[{"path":"/elsewhere/x","base":{"exists":true,"data":"eA=="}}]}`),
		"another repository": []byte(`{"v":1,"cwd":"` + dir + `","root":"/no/such/repo"}`),
	} {
		t.Run(name, func(t *testing.T) {
			s, _ := start(t, &host.Options{CLI: &claude.Options{Cwd: dir}, ChangesFrom: bad}, editTurn())
			cs, err := s.Changes(ctx)
			if err != nil || len(cs) != 0 {
				t.Errorf("changes after an unusable record: %+v, %v; want none", rows(cs), err)
			}
		})
	}
}
