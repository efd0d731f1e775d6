package host

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// FuzzChangeRecord: a change record from the bus (Options.ChangesFrom)
// never panics the session that reads it, is taken whole or not at all,
// and a record taken lists without panicking.
func FuzzChangeRecord(f *testing.F) {
	dir, err := filepath.EvalSymlinks(f.TempDir())
	if err != nil {
		f.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("now\n"), 0o644); err != nil {
		f.Fatal(err)
	}
	f.Add([]byte(`{"v":1,"cwd":"` + dir + `","files":[{"path":"` + filepath.Join(dir, "a.txt") + `","tools":["Write"],"base":{"exists":true,"data":"YmVmb3JlCg=="}}]}`))
	f.Add([]byte(`{"v":1,"cwd":"` + dir + `","files":[{"path":"` + filepath.Join(dir, "b.txt") + `","base":{}},{"path":"","base":{"too_large":true,"size":-1}}]}`))
	f.Add([]byte(`{"v":1,"cwd":"` + dir + `","dirty":{"x":null,"y":{"exists":true,"unread":true,"data":"eA=="}}}`))
	f.Add([]byte(`{"v":2}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		// As begin leaves it outside a repository (without running git
		// at every input).
		tr := changeTracker{cwd: dir, files: map[string]*touched{}, pending: map[string]pendingTool{}, dirty: map[string]*baseline{}}
		before := len(tr.order)
		if err := tr.takeRecord(data); err != nil {
			if len(tr.order) != before || tr.kept != 0 {
				t.Fatalf("a refused record changed the tracker: %v", err)
			}
			return
		}
		if tr.kept > maxChangeKept || len(tr.dirty) > maxChangeDirty {
			t.Fatalf("a record over the bounds taken: kept %d, dirty %d", tr.kept, len(tr.dirty))
		}
		if _, err := tr.list(context.Background()); err != nil && tr.root == "" {
			t.Fatalf("list after a record: %v", err)
		}
	})
}
