package cluster_test

import (
	"cmp"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tetherhq/tether/cluster"
	"github.com/tetherhq/tether/host"
	"github.com/tetherhq/tether/serve"
	"github.com/tetherhq/tether/serve/servetest"
)

// wsClient speaks the serve protocol over a WebSocket, as a browser does:
// serve/servetest's client, its frames read as maps.
type wsClient struct {
	t *testing.T
	c *servetest.Client

	mu      sync.Mutex
	nextID  int
	from    int // the frames next has looked at
	resFrom int // the frames waitResults has looked at
	results int // result messages among them
}

// seen returns the last event's seq the socket received and how many
// events did not follow the one before, as a browser applies them.
func (w *wsClient) seen() (last uint64, gaps int) {
	for _, f := range w.c.Frames() {
		if f.Type != "event" || f.Event == nil {
			continue
		}
		if last != 0 && f.Event.Seq != last+1 {
			gaps++
		}
		last = f.Event.Seq
	}
	return last, gaps
}

// serveToken is the token of the tether servers these tests start.
const serveToken = "test-token-0123456789abcdef"

// serveOverCluster starts a tether server on the cluster through c (its
// sessions' default cwd a temp dir), with opts (Token serveToken when
// unset), and stops it when the test ends.
func serveOverCluster(t *testing.T, c *cluster.Client, opts *serve.Options) *httptest.Server {
	t.Helper()
	o := serve.Options{}
	if opts != nil {
		o = *opts
	}
	o.Token = cmp.Or(o.Token, serveToken)
	srv := serve.NewServer(cluster.NewBackend(c, &cluster.BackendOptions{DefaultCwd: t.TempDir()}), &o)
	hs := httptest.NewServer(srv)
	t.Cleanup(func() {
		srv.Close()
		hs.Close()
	})
	return hs
}

func dialServe(t *testing.T, url, token string) *wsClient {
	t.Helper()
	c, err := servetest.Dial(testCtx(t), url, &servetest.DialOptions{Token: token})
	if err != nil {
		t.Fatal(err)
	}
	w := &wsClient{t: t, c: c}
	t.Cleanup(w.close)
	return w
}

// waitResults waits until the socket has received n result events.
func (w *wsClient) waitResults(what string, n int) {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	isResult := result("")
	for w.results < n {
		if _, err := w.c.WaitFrame(ctx, &w.resFrom, func(f *servetest.Frame) bool { return f.Type == "event" && isResult(*f.Event) }); err != nil {
			w.t.Fatalf("no %s: %v", what, err)
		}
		w.results++
	}
}

func (w *wsClient) close() { w.c.Close() }

func (w *wsClient) send(req map[string]any) int {
	w.mu.Lock()
	w.nextID++
	id := w.nextID
	w.mu.Unlock()
	req["id"] = id
	req["v"] = 1
	if err := w.c.Send(testCtx(w.t), req); err != nil {
		w.t.Fatal(err)
	}
	return id
}

// next returns the next frame that satisfies ok, dropping the others.
func (w *wsClient) next(what string, ok func(map[string]json.RawMessage) bool) map[string]json.RawMessage {
	w.t.Helper()
	return w.nextAt(what, &w.from, ok)
}

// nextAt is next on the cursor from instead of the client's own: to find
// a frame among those next has already dropped.
func (w *wsClient) nextAt(what string, from *int, ok func(map[string]json.RawMessage) bool) map[string]json.RawMessage {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	f, err := w.c.WaitFrame(ctx, from, func(f *servetest.Frame) bool { return ok(asMap(f)) })
	if err != nil {
		w.t.Fatalf("no %s: %v", what, err)
	}
	return asMap(f)
}

// asMap is a frame's fields, as JSON.
func asMap(f *servetest.Frame) map[string]json.RawMessage {
	var m map[string]json.RawMessage
	_ = json.Unmarshal(f.Raw, &m)
	return m
}

func isType(typ string) func(map[string]json.RawMessage) bool {
	return func(f map[string]json.RawMessage) bool { return string(f["type"]) == `"`+typ+`"` }
}

func replyTo(id int) func(map[string]json.RawMessage) bool {
	return func(f map[string]json.RawMessage) bool {
		return string(f["type"]) == `"reply"` && string(f["id"]) == json.Number(itoa(id)).String()
	}
}

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}

func eventOf(f map[string]json.RawMessage) (host.Event, bool) {
	var ev host.Event
	if string(f["type"]) != `"event"` || json.Unmarshal(f["event"], &ev) != nil {
		return ev, false
	}
	return ev, true
}

// TestServeOverTheCluster runs two `tether serve` servers over the
// cluster (two clients of the bus): a session started through one is
// followed from both, an approval answered on both at once is applied
// once and refused on the other with already_answered, and a browser that
// drops off one server at event N picks up on the other after N.
func TestServeOverTheCluster(t *testing.T) {
	ns := newNATS(t, nil)
	newAgent(t, ns.URL(), "a1", 2)
	var urls []string
	const token = serveToken
	for range 2 {
		urls = append(urls, serveOverCluster(t, newClient(t, ns.URL()), nil).URL)
	}
	b1, b2 := dialServe(t, urls[0], token), dialServe(t, urls[1], token)
	id := b1.send(map[string]any{"type": "start"})
	var started struct {
		Session serve.SessionInfo `json:"session"`
	}
	rep := b1.next("the start reply", replyTo(id))
	if err := json.Unmarshal(rep["result"], &started); err != nil || started.Session.ID == "" {
		t.Fatalf("start: %s %s", rep["result"], rep["error"])
	}
	sid := started.Session.ID
	if started.Session.Owner != "a1" {
		t.Errorf("owner %q", started.Session.Owner)
	}
	for _, b := range []*wsClient{b1, b2} {
		b.next("the subscribe reply", replyTo(b.send(map[string]any{"type": "subscribe", "session": sid, "after": 0})))
	}
	b1.send(map[string]any{"type": "do", "session": sid, "command": map[string]any{"type": "send", "text": "approve"}})
	var approval string
	for _, b := range []*wsClient{b1, b2} {
		f := b.next("the approval", func(f map[string]json.RawMessage) bool {
			ev, ok := eventOf(f)
			return ok && ev.Kind == host.EventApproval
		})
		ev, _ := eventOf(f)
		var ap host.ApprovalInfo
		json.Unmarshal(ev.Data, &ap)
		approval = ap.ID
	}
	ids := []int{
		b1.send(map[string]any{"type": "do", "session": sid, "command": map[string]any{"type": "answer", "approval": approval, "behavior": "allow"}}),
		b2.send(map[string]any{"type": "do", "session": sid, "command": map[string]any{"type": "answer", "approval": approval, "behavior": "deny", "message": "no"}}),
	}
	codes := map[string]int{}
	for i, b := range []*wsClient{b1, b2} {
		r := b.next("the answer's reply", replyTo(ids[i]))
		var e struct{ Code string }
		if json.Unmarshal(r["error"], &e) == nil && e.Code != "" {
			codes[e.Code]++
		} else {
			codes["ok"]++
		}
	}
	if codes["ok"] != 1 || codes[serve.CodeAlreadyAnswered]+codes[serve.CodeNoApproval] != 1 {
		t.Fatalf("answers: %v", codes)
	}
	// b1 drops off after the turn's result; its browser reconnects to the
	// other server with the last seq it applied.
	// The result may come before the answer's reply (the reply crosses
	// the bus twice, the events once), and next drops what it does not
	// match, so count results as the socket receives them.
	b1.waitResults("the turn's end", 1)
	b1.close()
	last, gaps := b1.seen()
	if gaps != 0 {
		t.Fatalf("%d gaps before the reconnect", gaps)
	}
	b2.send(map[string]any{"type": "do", "session": sid, "command": map[string]any{"type": "send", "text": "after"}})
	b3 := dialServe(t, urls[1], token)
	b3.next("the subscribe reply", replyTo(b3.send(map[string]any{"type": "subscribe", "session": sid, "after": last})))
	first := true
	b3.next("the next turn", func(f map[string]json.RawMessage) bool {
		ev, ok := eventOf(f)
		if ok && first {
			first = false
			if ev.Seq != last+1 {
				t.Fatalf("after reconnecting at %d the first event is %d", last, ev.Seq)
			}
		}
		return ok && result("echo: after")(ev)
	})
	if _, gaps := b3.seen(); gaps != 0 {
		t.Fatalf("%d gaps after the reconnect", gaps)
	}
}

// TestBackendResumeAfterCrash: through serve.Backend, an agent killed in
// the middle of a turn leaves its session disconnected; the resume
// command fails it over to another agent under the same id, with its
// conversation, its events' seq going on with no gap. A live agent's
// session is not resumed.
func TestBackendResumeAfterCrash(t *testing.T) {
	ctx := testCtx(t)
	ns := newNATS(t, nil)
	a1 := newAgent(t, ns.URL(), "a1", 2)
	var b serve.Backend = cluster.NewBackend(newClient(t, ns.URL()), nil)
	info, err := b.Start(ctx, &serve.StartRequest{}) // a1 is the only agent
	if err != nil {
		t.Fatal(err)
	}
	newAgent(t, ns.URL(), "a2", 2)
	var seq uint64
	// wait reads the events after seq until one matches, checking that
	// their seqs have no gap.
	wait := func(what string, ok func(host.Event) bool) {
		t.Helper()
		for ev, err := range b.Events(ctx, info.ID, seq) {
			if err != nil {
				t.Fatalf("waiting for %s: %v", what, err)
			}
			if ev.Seq != seq+1 {
				t.Fatalf("waiting for %s: event %d after %d", what, ev.Seq, seq)
			}
			seq = ev.Seq
			if ok(ev) {
				return
			}
		}
		t.Fatalf("events ended waiting for %s", what)
	}
	result := func(text string) func(host.Event) bool {
		return func(ev host.Event) bool {
			var m struct{ Type, Result string }
			return ev.Kind == host.EventMessage && json.Unmarshal(ev.Data, &m) == nil && m.Type == "result" && strings.Contains(m.Result, text)
		}
	}
	stateIs := func(s string) func(host.Event) bool {
		return func(ev host.Event) bool {
			return ev.Kind == host.EventState && strings.Contains(string(ev.Data), `"state":"`+s+`"`)
		}
	}
	do := func(cmd *host.Command) (*serve.Result, error) { return b.Do(ctx, info.ID, cmd) }
	if _, err := do(&host.Command{Type: "send", Text: "apples"}); err != nil {
		t.Fatal(err)
	}
	wait("the first turn", result("echo: apples"))
	_, err = do(&host.Command{Type: "resume"})
	if host.ErrorCode(err) != host.CodeBadRequest {
		t.Fatalf("resume of a live agent's session: %v, want bad_request", err)
	}
	if _, err := do(&host.Command{Type: "send", Text: "hold"}); err != nil {
		t.Fatal(err)
	}
	wait("the second turn running", stateIs("streaming"))
	waitFor(t, "the transcript mirrored", mirrored(t, ns.URL(), info.ID, "apples"))
	cluster.Crash(a1)
	wait("disconnected", stateIs("disconnected"))
	res, err := do(&host.Command{Type: "resume"})
	if err != nil {
		t.Fatal(err)
	}
	if rr := res.Session; rr == nil || rr.ID != info.ID || rr.Owner != "a2" {
		t.Fatalf("resume result %#v, want %s on a2", res, info.ID)
	}
	if _, err := do(&host.Command{Type: "send", Text: "recall"}); err != nil {
		t.Fatal(err)
	}
	wait("the recall", result("remember: apples"))
}

// TestServeSleepOverTheCluster: through `tether serve --nats` (the
// browser protocol over the cluster's Backend), a session idle for its
// agent's SleepAfter shows asleep in its events and in the list, and a
// prompt sent from the browser wakes it: waking, then the prompt's turn
// with the conversation remembered, the browser's numbers without a gap.
func TestServeSleepOverTheCluster(t *testing.T) {
	ns := newNATS(t, nil)
	newSleepyAgent(t, ns.URL(), "a1", 1, 300*time.Millisecond)
	c := newClient(t, ns.URL())
	hs := serveOverCluster(t, c, nil)
	b := dialServe(t, hs.URL, serveToken)
	rep := b.next("the start reply", replyTo(b.send(map[string]any{"type": "start"})))
	var started struct {
		Session serve.SessionInfo `json:"session"`
	}
	if err := json.Unmarshal(rep["result"], &started); err != nil || started.Session.ID == "" {
		t.Fatalf("start: %s %s", rep["result"], rep["error"])
	}
	sid := started.Session.ID
	b.next("the subscribe reply", replyTo(b.send(map[string]any{"type": "subscribe", "session": sid, "after": 0})))
	b.send(map[string]any{"type": "do", "session": sid, "command": map[string]any{"type": "send", "text": "apples"}})
	stateEvent := func(name string) func(map[string]json.RawMessage) bool {
		return func(f map[string]json.RawMessage) bool {
			ev, ok := eventOf(f)
			return ok && state(name)(ev)
		}
	}
	b.next("asleep", stateEvent("asleep"))
	waitAsleep(t, c, sid)
	rep = b.next("the list", replyTo(b.send(map[string]any{"type": "list"})))
	var list struct {
		Sessions []serve.SessionInfo `json:"sessions"`
	}
	if err := json.Unmarshal(rep["result"], &list); err != nil || len(list.Sessions) != 1 || list.Sessions[0].State != "asleep" {
		t.Fatalf("list: %s %s", rep["result"], rep["error"])
	}
	b.send(map[string]any{"type": "do", "session": sid, "command": map[string]any{"type": "send", "text": "recall"}})
	b.next("waking", stateEvent("waking"))
	b.next("the recall", func(f map[string]json.RawMessage) bool {
		ev, ok := eventOf(f)
		return ok && resultContaining("remember: apples")(ev)
	})
	if _, gaps := b.seen(); gaps != 0 {
		t.Fatalf("%d gaps in the browser's events across sleep and wake", gaps)
	}
}

// TestNotifyOverTheCluster: `tether serve` over the cluster calls people
// back as a lone serve does (serve's notifier follows the sessions the
// cluster lists, from the events the bus carries): an approval waiting on
// an agent is sent (here by webhook) with its Allow action, which answers
// it through the one command layer, over the bus, exactly once (two
// presses at once: one taken, the other refused with 409); the turn's end
// follows.
func TestNotifyOverTheCluster(t *testing.T) {
	ns := newNATS(t, nil)
	newAgent(t, ns.URL(), "a1", 2)
	const token = serveToken
	hooks := make(chan []byte, 16)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		hooks <- b
	}))
	t.Cleanup(hook.Close)
	c := newClient(t, ns.URL())
	hs := serveOverCluster(t, c, &serve.Options{Token: token,
		Notify: &serve.NotifyOptions{Dir: t.TempDir(), AllowHTTP: true, PollInterval: 10 * time.Millisecond, Timeout: 5 * time.Second}})
	call := func(method, path, body string) (int, []byte) {
		t.Helper()
		r, _ := http.NewRequest(method, hs.URL+path, strings.NewReader(body))
		r.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	if st, b := call("PUT", "/api/notify", `{"webhook":{"url":"`+hook.URL+`/hook","secret":"s3cret"}}`); st != 200 {
		t.Fatalf("settings: %d %s", st, b)
	}
	type hookBody struct{ Type, Event, Session, Approval, Body, Person string }
	next := func(what, event string) hookBody {
		t.Helper()
		for {
			select {
			case b := <-hooks:
				var h hookBody
				if err := json.Unmarshal(b, &h); err != nil {
					t.Fatalf("webhook body %s: %v", b, err)
				}
				if h.Event == event {
					return h
				}
			case <-testCtx(t).Done():
				t.Fatalf("no webhook: %s", what)
			}
		}
	}

	b := dialServe(t, hs.URL, token)
	b.next("the visibility reply", replyTo(b.send(map[string]any{"type": "visibility", "visible": false}))) // the tab is in the background
	id := b.send(map[string]any{"type": "start"})
	var started struct {
		Session serve.SessionInfo `json:"session"`
	}
	if err := json.Unmarshal(b.next("the start reply", replyTo(id))["result"], &started); err != nil || started.Session.ID == "" {
		t.Fatalf("start: %v", err)
	}
	sid := started.Session.ID
	b.send(map[string]any{"type": "do", "session": sid, "command": map[string]any{"type": "send", "text": "approve"}})
	h := next("the approval", "approval")
	if h.Type != "notify" || h.Session != sid || h.Approval == "" || h.Body != "ls" || h.Person != "token" {
		t.Fatalf("approval webhook: %+v", h)
	}

	// Allow pressed twice at once (two devices): answered once.
	act := `{"session":"` + sid + `","approval":"` + h.Approval + `","action":"allow"}`
	codes := make(chan int, 2)
	for range 2 {
		go func() {
			st, _ := call("POST", "/api/notify/action", act)
			codes <- st
		}()
	}
	got := map[int]int{}
	for range 2 {
		got[<-codes]++
	}
	if got[200] != 1 || got[http.StatusConflict] != 1 {
		t.Fatalf("two allows: %v, want one 200 and one 409", got)
	}
	if d := next("the turn's end", "turn_done"); d.Session != sid || d.Body != "tool allow" {
		t.Fatalf("turn webhook: %+v", d)
	}
	// The session's history holds one answer.
	f := follow(t, c, sid, 0)
	f.wait(t, "the turn's result", result("tool allow"))
	if n := count(f.list(), func(ev host.Event) bool { return ev.Kind == host.EventApprovalResolved }); n != 1 {
		t.Fatalf("%d approval_resolved events, want 1", n)
	}
}
