package serve_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tetherhq/tether/host"
	"github.com/tetherhq/tether/serve"
)

// A session resumed in its place after its CLI ended goes on with its
// changes on a lone serve: `changes` on the new session lists what the
// conversation changed before (against its first start) beside its own
// edits, as the person saw it as one session.
func TestChangesGoOnAfterResume(t *testing.T) {
	ctx := testCtx(t)
	e := newEnv(t, nil)
	cl := e.dial(ctx)
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	notes, todo := filepath.Join(dir, "notes.md"), filepath.Join(dir, "todo.md")
	for _, p := range []string{notes, todo} {
		if err := os.WriteFile(p, []byte("before\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	id := cl.start(ctx, dir)
	cl.ok(ctx, map[string]any{"type": "subscribe", "session": id})
	n := 0
	turn(t, ctx, cl, id, "edit-file "+notes+" first", &n)
	if f := cl.do(ctx, id, map[string]any{"type": "send", "text": "exit-cli"}); f.Error != nil {
		t.Fatal(f.Error)
	}
	cl.waitFrame(ctx, &n, "the CLI gone", func(f *frame) bool {
		return isKind(id, host.EventState)(f) && (strings.Contains(string(f.Event.Data), `"disconnected"`) || strings.Contains(string(f.Event.Data), `"closed"`))
	})
	f := cl.do(ctx, id, map[string]any{"type": "resume"})
	if f.Error != nil {
		t.Fatalf("resume: %v", f.Error)
	}
	var rr serve.Result
	json.Unmarshal(f.Result, &rr)
	next := rr.Session.ID
	cl.ok(ctx, map[string]any{"type": "subscribe", "session": next})
	turn(t, ctx, cl, next, "edit-file "+todo+" second", &n)

	f = cl.do(ctx, next, map[string]any{"type": "changes"})
	if f.Error != nil {
		t.Fatal(f.Error)
	}
	var res struct {
		Changes []host.FileChange `json:"changes"`
	}
	if err := json.Unmarshal(f.Result, &res); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range res.Changes {
		got = append(got, c.Rel+" "+string(c.Kind))
	}
	if strings.Join(got, ", ") != "notes.md modified, todo.md modified" {
		t.Fatalf("the resumed session's changes: %v; want the earlier edit and its own", got)
	}
	if d := res.Changes[0].Diff; !strings.Contains(d, "-before\n+first\n") {
		t.Errorf("notes.md's diff:\n%s", d)
	}
}
