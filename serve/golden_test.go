package serve_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/tetherhq/tether/host"
)

// TestProtocolGolden records a whole exchange (start, subscribe, a
// prompt with a Bash approval allowed, close) as the client sees it,
// with times and random ids replaced, and compares it with
// testdata/protocol.golden (rewrite with -update). The requests and
// their replies come first, then the session's event stream, which is
// the order the journal gives (a reply and the events its command
// causes travel on different paths).
func TestProtocolGolden(t *testing.T) {
	ctx := testCtx(t)
	e := newEnv(t, nil)
	cl := e.dial(ctx)
	var log bytes.Buffer
	n := 0
	for range 2 { // hello, sessions
		f := cl.waitFrame(ctx, &n, "the greeting", func(*frame) bool { return true })
		fmt.Fprintf(&log, "← %s\n", f.raw)
	}
	call := func(req map[string]any) *frame {
		f := cl.call(ctx, req)
		b, _ := json.Marshal(req)
		fmt.Fprintf(&log, "→ %s\n← %s\n", b, f.raw)
		return f
	}
	var started struct{ Session struct{ ID string } }
	json.Unmarshal(call(map[string]any{"type": "start", "cwd": e.cwd}).Result, &started)
	id := started.Session.ID
	call(map[string]any{"type": "subscribe", "session": id, "after": 0})
	call(map[string]any{"type": "do", "session": id, "command": map[string]any{"type": "send", "text": "tool touch hello.txt"}})
	ev := cl.waitFrame(ctx, &n, "the approval", isKind(id, host.EventApproval))
	var a host.ApprovalInfo
	json.Unmarshal(ev.Event.Data, &a)
	call(map[string]any{"type": "do", "session": id, "command": map[string]any{"type": "answer", "approval": a.ID, "behavior": "allow"}})
	cl.waitFrame(ctx, &n, "idle", isState(id, "idle"))
	call(map[string]any{"type": "do", "session": id, "command": map[string]any{"type": "close"}})
	cl.waitFrame(ctx, &n, "closed", isKind(id, host.EventClosed))
	fmt.Fprintf(&log, "\n# the session's events, in journal order\n")
	for _, f := range cl.eventsOf(id) {
		fmt.Fprintf(&log, "← %s\n", f.raw)
	}
	got := normalize(log.String(), e.cwd)
	path := filepath.Join("testdata", "protocol.golden")
	if *update {
		os.MkdirAll("testdata", 0o755)
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (record it: go test ./serve -run TestProtocolGolden -update)", err)
	}
	if got != string(want) {
		t.Errorf("the protocol changed; if that is intended, run go test ./serve -run TestProtocolGolden -update and review the diff.\ngot:\n%s", got)
	}
}

var (
	reTime = regexp.MustCompile(`"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)"`)
	reUUID = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	reReq  = regexp.MustCompile(`"(req_|msg_|toolu_fake)[A-Za-z0-9_]+"`)
	reDur  = regexp.MustCompile(`"(duration_ms|duration_api_ms)":\d+`)
)

// normalize replaces what changes from run to run: times, UUIDs (each
// by its first-seen number, so equal ids stay equal), request ids, the
// temporary directory.
func normalize(s, cwd string) string {
	s = strings.ReplaceAll(s, cwd, "<cwd>")
	s = reTime.ReplaceAllString(s, `"<time>"`)
	seen := map[string]string{}
	s = reUUID.ReplaceAllStringFunc(s, func(u string) string {
		if v, ok := seen[u]; ok {
			return v
		}
		v := fmt.Sprintf("<uuid-%d>", len(seen)+1)
		seen[u] = v
		return v
	})
	reqs := map[string]string{}
	s = reReq.ReplaceAllStringFunc(s, func(r string) string {
		if v, ok := reqs[r]; ok {
			return v
		}
		v := fmt.Sprintf(`"<id-%d>"`, len(reqs)+1)
		reqs[r] = v
		return v
	})
	return reDur.ReplaceAllString(s, `"$1":0`)
}
