package serve_test

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdh"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tetherhq/tether/host"
	"github.com/tetherhq/tether/internal/syncbuf"
	"github.com/tetherhq/tether/serve"
)

// pushMsg is what a test push endpoint received, decrypted.
type pushMsg struct {
	Type     string `json:"type"`
	Tag      string `json:"tag"`
	Event    string `json:"event"`
	Session  string `json:"session"`
	Title    string `json:"title"`
	Body     string `json:"body"`
	Approval string `json:"approval"`
	Tool     string `json:"tool"`
	Actions  []struct {
		Action string `json:"action"`
	} `json:"actions"`
	Outcome string `json:"outcome"`
	By      string `json:"by"`

	vapidKey string // the k= of the Authorization header
	topic    string
	raw      []byte // the decrypted payload
}

// pushEndpoint plays a browser's push service and the browser: it owns
// a subscription's keys (p256dh, auth) and decrypts what is posted to
// it (RFC 8291, aes128gcm) the way a browser does.
type pushEndpoint struct {
	t    *testing.T
	srv  *httptest.Server
	priv *ecdh.PrivateKey
	auth []byte
	got  chan pushMsg
	gone bool // answer 410 Gone from now on
	mu   sync.Mutex
	// fail is what the next requests are answered, one each, before
	// any is taken (a status, with Retry-After: 1 for a 429); requests
	// counts every request.
	fail     []int
	requests int
}

// dropConn, as a failNext status, closes the connection unanswered.
const dropConn = -1

// failNext makes the next requests fail with statuses, in order.
func (pe *pushEndpoint) failNext(statuses ...int) {
	pe.mu.Lock()
	defer pe.mu.Unlock()
	pe.fail = append(pe.fail, statuses...)
}

// count is how many requests came so far.
func (pe *pushEndpoint) count() int {
	pe.mu.Lock()
	defer pe.mu.Unlock()
	return pe.requests
}

func newPushEndpoint(t *testing.T) *pushEndpoint {
	priv, err := ecdh.P256().GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	pe := &pushEndpoint{t: t, priv: priv, auth: make([]byte, 16), got: make(chan pushMsg, 64)}
	rand.Read(pe.auth)
	pe.srv = httptest.NewServer(http.HandlerFunc(pe.serve))
	t.Cleanup(pe.srv.Close)
	return pe
}

// subscription is the PushSubscription.toJSON() a browser would post.
func (pe *pushEndpoint) subscription(path string) string {
	b64 := base64.RawURLEncoding.EncodeToString
	return fmt.Sprintf(`{"endpoint":%q,"keys":{"p256dh":%q,"auth":%q}}`, pe.srv.URL+path, b64(pe.priv.PublicKey().Bytes()), b64(pe.auth))
}

func (pe *pushEndpoint) serve(w http.ResponseWriter, r *http.Request) {
	pe.mu.Lock()
	gone := pe.gone
	pe.requests++
	fail := 0
	if len(pe.fail) > 0 {
		fail, pe.fail = pe.fail[0], pe.fail[1:]
	}
	pe.mu.Unlock()
	if gone {
		w.WriteHeader(http.StatusGone)
		return
	}
	if fail == dropConn {
		if c, _, err := http.NewResponseController(w).Hijack(); err == nil {
			c.Close() // the client sees the connection end with no answer
		}
		return
	}
	if fail != 0 {
		if fail == http.StatusTooManyRequests {
			w.Header().Set("Retry-After", "1")
		}
		w.WriteHeader(fail)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return // the server closed mid-request (the test is ending)
	}
	if r.Header.Get("Content-Encoding") != "aes128gcm" || r.Header.Get("TTL") == "" {
		pe.t.Errorf("push headers: %v", r.Header)
	}
	plain, err := pe.decrypt(body)
	if err != nil {
		pe.t.Errorf("decrypt %s (%d bytes, rs %v): %v", r.URL.Path, len(body), body[16:21], err)
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	var m pushMsg
	if err := json.Unmarshal(plain, &m); err != nil {
		pe.t.Errorf("payload %q: %v", plain, err)
	}
	a := r.Header.Get("Authorization")
	if i := strings.Index(a, "k="); strings.HasPrefix(a, "vapid t=") && i > 0 {
		m.vapidKey = a[i+2:]
	}
	m.topic = r.Header.Get("Topic")
	m.raw = plain
	pe.got <- m
	w.WriteHeader(http.StatusCreated)
}

// decrypt undoes RFC 8291's encryption with the subscription's keys.
func (pe *pushEndpoint) decrypt(body []byte) ([]byte, error) {
	if len(body) < 21 {
		return nil, fmt.Errorf("short body")
	}
	salt, rs, idlen := body[:16], binary.BigEndian.Uint32(body[16:20]), int(body[20])
	if len(body) < 21+idlen || rs < 18 {
		return nil, fmt.Errorf("bad header")
	}
	asPub, ct := body[21:21+idlen], body[21+idlen:]
	pub, err := ecdh.P256().NewPublicKey(asPub)
	if err != nil {
		return nil, err
	}
	secret, err := pe.priv.ECDH(pub)
	if err != nil {
		return nil, err
	}
	prkKey, _ := hkdf.Extract(sha256.New, secret, pe.auth)
	info := append(append([]byte("WebPush: info\x00"), pe.priv.PublicKey().Bytes()...), asPub...)
	ikm, _ := hkdf.Expand(sha256.New, prkKey, string(info), 32)
	prk, _ := hkdf.Extract(sha256.New, ikm, salt)
	cek, _ := hkdf.Expand(sha256.New, prk, "Content-Encoding: aes128gcm\x00", 16)
	nonce, _ := hkdf.Expand(sha256.New, prk, "Content-Encoding: nonce\x00", 12)
	block, _ := aes.NewCipher(cek)
	gcm, _ := cipher.NewGCM(block)
	plain, err := gcm.Open(nil, nonce, ct, nil)
	if err != nil {
		return nil, err
	}
	plain = bytes.TrimRight(plain, "\x00")
	if len(plain) == 0 || plain[len(plain)-1] != 2 {
		return nil, fmt.Errorf("no last-record delimiter")
	}
	return plain[:len(plain)-1], nil
}

// next waits for the next message.
func (pe *pushEndpoint) next(ctx context.Context, what string) pushMsg {
	pe.t.Helper()
	select {
	case m := <-pe.got:
		return m
	case <-ctx.Done():
		pe.t.Fatalf("no push: %s (%v)", what, context.Cause(ctx))
		return pushMsg{}
	}
}

// req sends an HTTP request to a token-mode env with its cookie (and
// Origin on what changes something).
func (e *env) req(method, path, body string) (int, []byte) {
	e.t.Helper()
	r, _ := http.NewRequest(method, e.http.URL+path, strings.NewReader(body))
	r.Header.Set("Cookie", e.cookie.String())
	if method != http.MethodGet {
		r.Header.Set("Origin", e.origin)
	}
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func notifyOptions(t *testing.T) *serve.NotifyOptions {
	return &serve.NotifyOptions{Dir: t.TempDir(), AllowHTTP: true, PollInterval: 10 * time.Millisecond, Timeout: 5 * time.Second}
}

// The whole Web Push path on a token-mode server: the key is kept, a
// subscription is taken, an approval waiting while the tab is hidden is
// pushed encrypted with the tool and its command and Allow/Deny, the
// action endpoint answers it once, the notification is replaced by a
// "resolved" one with the same tag, and the turn's end is pushed (and a
// failed turn's, with why it failed; one that leaves a task running in
// the background says so). The same over the cluster (`tether serve --nats`): the server follows the
// sessions from the bus, and the action's answer crosses it to the agent.
func TestPushApprovalTokenMode(t *testing.T) {
	t.Run("Local", func(t *testing.T) { testPushApprovalTokenMode(t, false) })
	t.Run("Cluster", func(t *testing.T) { testPushApprovalTokenMode(t, true) })
}

func testPushApprovalTokenMode(t *testing.T, overCluster bool) {
	ctx := testCtx(t)
	no := notifyOptions(t)
	pe := newPushEndpoint(t) // before the server: closed after it
	e := newEnv(t, &envOptions{serve: &serve.Options{Notify: no}, cluster: overCluster})

	st, b := e.req("GET", "/api/notify", "")
	var view struct {
		VapidPublicKey string `json:"vapid_public_key"`
		Events         []string
	}
	if st != 200 || json.Unmarshal(b, &view) != nil || view.VapidPublicKey == "" {
		t.Fatalf("GET /api/notify: %d %s", st, b)
	}
	fi, err := os.Stat(filepath.Join(no.Dir, "notify.json"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the store: %v %v", fi, err)
	}
	if st, b := e.req("POST", "/api/notify/subscribe", pe.subscription("/sub/1")); st != http.StatusNoContent {
		t.Fatalf("subscribe: %d %s", st, b)
	}

	cl := e.dial(ctx)
	cl.ok(ctx, map[string]any{"type": "visibility", "visible": false}) // the tab is in the background
	id := cl.start(ctx, e.cwd)
	if f := cl.do(ctx, id, map[string]any{"type": "send", "text": "tool rm -rf build"}); f.Error != nil {
		t.Fatal(f.Error)
	}
	m := pe.next(ctx, "the approval")
	if m.Type != "notify" || m.Event != "approval" || m.Tool != "Bash" || m.Body != "rm -rf build" || m.Session != id || m.Approval == "" ||
		len(m.Actions) != 2 || m.Actions[0].Action != "allow" || m.Actions[1].Action != "deny" || !strings.HasPrefix(m.Tag, "approval:") {
		t.Fatalf("approval push: %+v", m)
	}
	if m.vapidKey != view.VapidPublicKey || len(m.topic) != 32 {
		t.Fatalf("VAPID key %q (want %q), topic %q", m.vapidKey, view.VapidPublicKey, m.topic)
	}
	act := fmt.Sprintf(`{"session":%q,"approval":%q,"action":"allow"}`, id, m.Approval)
	if st, b := e.req("POST", "/api/notify/action", act); st != 200 {
		t.Fatalf("allow: %d %s", st, b)
	}
	if st, b := e.req("POST", "/api/notify/action", act); st != http.StatusConflict {
		t.Fatalf("a second allow: %d %s", st, b)
	}
	r := pe.next(ctx, "resolved")
	if r.Type != "resolved" || r.Tag != m.Tag || r.Outcome != "allowed" {
		t.Fatalf("resolved push: %+v", r)
	}
	d := pe.next(ctx, "turn done")
	if d.Event != "turn_done" || d.Body != "tool allow" || d.Session != id {
		t.Fatalf("turn push: %+v", d)
	}
	// A turn that ran to its end while auto mode refused what it could
	// not check failed, and says why, not its final text.
	if f := cl.do(ctx, id, map[string]any{"type": "send", "text": "unchecked"}); f.Error != nil {
		t.Fatal(f.Error)
	}
	if d := pe.next(ctx, "turn failed"); d.Event != "turn_failed" || !strings.HasPrefix(d.Body, "Auto mode could not check") || !strings.HasPrefix(d.Title, "Failed: ") {
		t.Fatalf("turn push: %+v", d)
	}

	// An MCP server's form: a notification with what it asks and no
	// buttons (a form cannot be filled from one). Declined, it is
	// replaced by one that says "declined", as the page does, not
	// "denied": the server's tool was not refused.
	if f := cl.do(ctx, id, map[string]any{"type": "send", "text": "form"}); f.Error != nil {
		t.Fatal(f.Error)
	}
	fm := pe.next(ctx, "the form")
	if fm.Type != "notify" || fm.Event != "question" || !strings.HasPrefix(fm.Title, "deploy asks: ") ||
		fm.Body != "Which environment?" || len(fm.Actions) != 0 || fm.Approval == "" {
		t.Fatalf("form push: %+v", fm)
	}
	if f := cl.do(ctx, id, map[string]any{"type": "answer", "approval": fm.Approval, "behavior": "deny"}); f.Error != nil {
		t.Fatal(f.Error)
	}
	if r := pe.next(ctx, "the form resolved"); r.Type != "resolved" || r.Tag != fm.Tag || r.Outcome != "declined" {
		t.Fatalf("the form's resolved push: %+v", r)
	}
	if d := pe.next(ctx, "the form's turn"); d.Body != "form decline" {
		t.Fatalf("turn push: %+v", d)
	}

	// A turn that leaves an agent at work in the background says so
	// first: the session is not done. The sessions list counts the task.
	// The turn of the agent's report then replaces the notification.
	if f := cl.do(ctx, id, map[string]any{"type": "send", "text": "background Long review"}); f.Error != nil {
		t.Fatal(f.Error)
	}
	if d := pe.next(ctx, "the turn leaving a task"); d.Event != "turn_done" || d.Tag != "turn:"+id ||
		d.Body != "Still running in the background: Long review. started in the background" {
		t.Fatalf("turn push with a task running: %+v", d)
	}
	listed := func(want int) bool {
		var r struct{ Sessions []serve.SessionInfo }
		if json.Unmarshal(cl.ok(ctx, map[string]any{"type": "list"}), &r) != nil {
			return false
		}
		for _, si := range r.Sessions {
			if si.ID == id {
				return si.Tasks == want
			}
		}
		return false
	}
	waitFor(t, "the list counting the background task", func() bool { return listed(1) })
	if f := cl.do(ctx, id, map[string]any{"type": "send", "text": "background-done"}); f.Error != nil {
		t.Fatal(f.Error)
	}
	if d := pe.next(ctx, "the report's turn"); d.Event != "turn_done" || d.Tag != "turn:"+id || d.Body != "the review is done" {
		t.Fatalf("turn push after the task: %+v", d)
	}
	waitFor(t, "the list counting no task", func() bool { return listed(0) })
	// A watcher is no work: the turn that starts one is done, and the
	// list does not count it.
	if f := cl.do(ctx, id, map[string]any{"type": "send", "text": "watch the build"}); f.Error != nil {
		t.Fatal(f.Error)
	}
	if d := pe.next(ctx, "the watcher's turn"); d.Event != "turn_done" || d.Body != "watching" {
		t.Fatalf("turn push with a watcher running: %+v", d)
	}
	if !listed(0) {
		t.Error("the list counts a watcher as background work")
	}

	// Without Origin a cookie may not answer (a cross-site form).
	req, _ := http.NewRequest("POST", e.http.URL+"/api/notify/action", strings.NewReader(act))
	req.Header.Set("Cookie", e.cookie.String())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("action without Origin: %s", resp.Status)
	}
	// An endpoint the push service says is gone is forgotten.
	pe.mu.Lock()
	pe.gone = true
	pe.mu.Unlock()
	cl.do(ctx, id, map[string]any{"type": "send", "text": "hello"})
	for {
		_, b := e.req("GET", "/api/notify", "")
		var v struct{ Subscriptions int }
		json.Unmarshal(b, &v)
		if v.Subscriptions == 0 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("a 410 Gone subscription was kept")
		case <-time.After(10 * time.Millisecond): // polling a state, not synchronizing
		}
	}
}

// Settings: events off are not sent; a person can turn everything off;
// unknown events are refused.
func TestNotifySettings(t *testing.T) {
	ctx := testCtx(t)
	pe := newPushEndpoint(t)
	e := newEnv(t, &envOptions{serve: &serve.Options{Notify: notifyOptions(t)}})
	e.req("POST", "/api/notify/subscribe", pe.subscription("/s"))
	if st, b := e.req("PUT", "/api/notify", `{"events":["nope"]}`); st != 400 {
		t.Fatalf("unknown event: %d %s", st, b)
	}
	if st, b := e.req("PUT", "/api/notify", `{"events":["turn_done"]}`); st != 200 {
		t.Fatalf("settings: %d %s", st, b)
	}
	cl := e.dial(ctx)
	cl.ok(ctx, map[string]any{"type": "visibility", "visible": false})
	id := cl.start(ctx, e.cwd)
	cl.ok(ctx, map[string]any{"type": "subscribe", "session": id})
	cl.do(ctx, id, map[string]any{"type": "send", "text": "tool ls"})
	from := 0
	ev := cl.waitFrame(ctx, &from, "the approval", isKind(id, host.EventApproval))
	var ai host.ApprovalInfo
	json.Unmarshal(ev.Event.Data, &ai)
	cl.do(ctx, id, map[string]any{"type": "answer", "approval": ai.ID, "behavior": "deny", "message": "no"})
	if m := pe.next(ctx, "turn done"); m.Event != "turn_done" {
		t.Fatalf("the first push is %+v; approvals were off", m)
	}
}

// With teams: each person gets their own notification; a viewer's has
// no actions and their action is refused by the same authorization as
// the socket's; the owner's allow is taken once.
func TestPushTeamViewerRefused(t *testing.T) {
	ctx := testCtx(t)
	alice, vera := newPushEndpoint(t), newPushEndpoint(t)
	e, cl, id := sharedPushSession(t, ctx, alice, vera, false, "vera@example.com", "viewer")
	cl.do(ctx, id, map[string]any{"type": "send", "text": "tool make deploy"})
	am, vm := alice.next(ctx, "alice's approval"), vera.next(ctx, "vera's approval")
	if len(am.Actions) != 2 || am.Body != "make deploy" {
		t.Fatalf("alice's: %+v", am)
	}
	if len(vm.Actions) != 0 || vm.Tag != am.Tag {
		t.Fatalf("vera's (a viewer) has actions: %+v", vm)
	}
	act := fmt.Sprintf(`{"session":%q,"approval":%q,"action":"allow"}`, id, am.Approval)
	if st, code, b := e.as("vera@example.com", "POST", "/api/notify/action", act); st != http.StatusForbidden || code != serve.CodeForbidden {
		t.Fatalf("a viewer's allow: %d %s", st, b)
	}
	if st, _, b := e.as("alice@example.com", "POST", "/api/notify/action", act); st != 200 {
		t.Fatalf("the owner's allow: %d %s", st, b)
	}
	if st, code, b := e.as("alice@example.com", "POST", "/api/notify/action", act); st != http.StatusConflict || (code != serve.CodeAlreadyAnswered && code != serve.CodeNoApproval) {
		t.Fatalf("a second allow: %d %s", st, b)
	}
	for who, pe := range map[string]*pushEndpoint{"alice": alice, "vera": vera} {
		if r := pe.next(ctx, who+"'s resolved"); r.Type != "resolved" || r.Tag != am.Tag || r.By != "Alice Example" {
			t.Fatalf("%s's resolved: %+v", who, r)
		}
	}
}

// A push service that drops the connection, answers 503 or 429 (with
// Retry-After) gets the push again, in the same order as the rest of the
// person's; one that refuses it for good (400) does not, and the next
// notification goes on.
func TestPushRetried(t *testing.T) {
	ctx := testCtx(t)
	pe := newPushEndpoint(t)
	var logs syncbuf.Buffer // what `tether serve -v` shows (info)
	e := newEnv(t, &envOptions{serve: &serve.Options{Notify: notifyOptions(t), Logger: slog.New(slog.NewTextHandler(&logs, nil))}})
	if st, b := e.req("POST", "/api/notify/subscribe", pe.subscription("/sub")); st != http.StatusNoContent {
		t.Fatalf("subscribe: %d %s", st, b)
	}
	cl := e.dial(ctx)
	cl.ok(ctx, map[string]any{"type": "visibility", "visible": false})
	id := cl.start(ctx, e.cwd)
	pe.failNext(dropConn, http.StatusServiceUnavailable)
	cl.do(ctx, id, map[string]any{"type": "send", "text": "tool make"})
	m := pe.next(ctx, "the approval, on the third attempt")
	if m.Event != "approval" || pe.count() != 3 {
		t.Fatalf("after %d requests: %+v", pe.count(), m)
	}
	// "resolved" after a 429 (and its Retry-After), then the turn's end.
	pe.failNext(http.StatusTooManyRequests)
	act := fmt.Sprintf(`{"session":%q,"approval":%q,"action":"allow"}`, id, m.Approval)
	if st, b := e.req("POST", "/api/notify/action", act); st != 200 {
		t.Fatalf("allow: %d %s", st, b)
	}
	if r := pe.next(ctx, "resolved, on the second attempt"); r.Type != "resolved" || pe.count() != 5 {
		t.Fatalf("after %d requests: %+v", pe.count(), r)
	}
	if d := pe.next(ctx, "the turn's end"); d.Event != "turn_done" || pe.count() != 6 {
		t.Fatalf("after %d requests: %+v", pe.count(), d)
	}
	// A turn's end refused for good is not tried again: the next turn's
	// is the next request.
	pe.failNext(http.StatusBadRequest)
	cl.do(ctx, id, map[string]any{"type": "send", "text": "hello"})
	waitFor(t, "the refused request", func() bool { return pe.count() == 7 })
	cl.do(ctx, id, map[string]any{"type": "send", "text": "again"})
	if d := pe.next(ctx, "the third turn's end"); d.Event != "turn_done" || d.Body != "echo: again" || pe.count() != 8 {
		t.Fatalf("after %d requests: %+v", pe.count(), d)
	}
	// The operator's log says what was sent and what was refused, and
	// names no prompt.
	l := logs.String()
	for _, want := range []string{`msg="serve: notifying" person=token event=approval`, `msg="serve: web push refused" status=400 attempts=1`} {
		if !strings.Contains(l, want) {
			t.Errorf("the log lacks %q:\n%s", want, l)
		}
	}
	if strings.Contains(l, "echo: again") || strings.Contains(l, "hello") {
		t.Errorf("the log names a prompt:\n%s", l)
	}
}

// A webhook gets the notification as JSON signed with the person's
// secret; ntfy gets it in ntfy's shape (title, priority, tags headers).
// Each is tried again after a 502 or a 429.
func TestWebhookAndNtfy(t *testing.T) {
	ctx := testCtx(t)
	type hit struct {
		hdr  http.Header
		body []byte
		path string
	}
	hooks, ntfys := make(chan hit, 16), make(chan hit, 16)
	refused := make(chan string, 2) // the delivery id of each receiver's refused request
	// Each receiver refuses its first request (failFirst), as a service
	// with a moment's trouble does: the notifier tries again.
	recv := func(ch chan hit, failFirst int) *httptest.Server {
		var mu sync.Mutex
		failed := false
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			mu.Lock()
			fail := !failed
			failed = true
			mu.Unlock()
			if fail {
				refused <- r.Header.Get(serve.WebhookDeliveryHeader)
				w.WriteHeader(failFirst)
				return
			}
			ch <- hit{r.Header.Clone(), b, r.URL.Path}
		}))
		t.Cleanup(s.Close)
		return s
	}
	hs, ns := recv(hooks, http.StatusBadGateway), recv(ntfys, http.StatusTooManyRequests)
	no := notifyOptions(t)
	no.NtfyURL = ns.URL
	no.BaseURL = "https://tether.example"
	e := newEnv(t, &envOptions{serve: &serve.Options{Notify: no}})
	const secret = "s3cret"
	body := fmt.Sprintf(`{"webhook":{"url":%q,"secret":%q},"ntfy_topic":"my-phone"}`, hs.URL+"/hook", secret)
	if st, b := e.req("PUT", "/api/notify", body); st != 200 || strings.Contains(string(b), secret) {
		t.Fatalf("settings: %d %s", st, b)
	}
	cl := e.dial(ctx)
	cl.ok(ctx, map[string]any{"type": "visibility", "visible": false})
	id := cl.start(ctx, e.cwd)
	cl.do(ctx, id, map[string]any{"type": "send", "text": "tool go test"})

	var h hit
	select {
	case h = <-hooks:
	case <-ctx.Done():
		t.Fatal("no webhook")
	}
	ts, _ := strconv.ParseInt(h.hdr.Get(serve.WebhookTimestampHeader), 10, 64)
	mac := hmac.New(sha256.New, []byte(secret))
	fmt.Fprintf(mac, "%d.%s", ts, h.body)
	want := "sha256=" + fmt.Sprintf("%x", mac.Sum(nil))
	if got := h.hdr.Get(serve.WebhookSignatureHeader); !hmac.Equal([]byte(got), []byte(want)) || time.Since(time.Unix(ts, 0)) > time.Minute {
		t.Fatalf("signature %q, want %q (ts %d)", got, want, ts)
	}
	if got := serve.WebhookSignature(secret, ts, h.body); got != want {
		t.Fatalf("WebhookSignature = %q", got)
	}
	// The attempt refused and the one taken name the same delivery;
	// ntfy's requests name none.
	ids := map[string]bool{<-refused: true, <-refused: true}
	if d := h.hdr.Get(serve.WebhookDeliveryHeader); len(d) < 20 || !ids[d] || !ids[""] {
		t.Fatalf("delivery %q; refused attempts named %v", d, ids)
	}
	var wb struct{ Event, Person, Body, Session, URL string }
	if json.Unmarshal(h.body, &wb) != nil || wb.Event != "approval" || wb.Person != "token" || wb.Body != "go test" || wb.URL != "https://tether.example/#s="+id {
		t.Fatalf("webhook body %s", h.body)
	}

	var n hit
	select {
	case n = <-ntfys:
	case <-ctx.Done():
		t.Fatal("no ntfy message")
	}
	if n.path != "/my-phone" || string(n.body) != "go test" || !strings.HasPrefix(n.hdr.Get("Title"), "Allow Bash?") ||
		n.hdr.Get("Priority") != "high" || n.hdr.Get("Tags") != "approval" || n.hdr.Get("Click") != wb.URL ||
		n.hdr.Get("Actions") != "view, Open session, "+wb.URL {
		t.Fatalf("ntfy: %s %q %v", n.path, n.body, n.hdr)
	}
	// A plain-http webhook is refused unless AllowHTTP; an https one is
	// taken. (This server allows http, so only the shape is checked.)
	if st, _ := e.req("PUT", "/api/notify", `{"webhook":{"url":"not a url"}}`); st != 400 {
		t.Fatalf("a bad webhook URL: %d", st)
	}
}

// Only while none of the person's tabs is visible: the owner looking at
// a tab gets nothing, the collaborator away from theirs is called back
// (and answers, as a collaborator may); once the owner's tab is hidden
// the owner is called back too.
func TestNotifyOnlyWhenNoTabVisible(t *testing.T) {
	ctx := testCtx(t)
	alice, bob := newPushEndpoint(t), newPushEndpoint(t)
	e, cl, id := sharedPushSession(t, ctx, alice, bob, true, "bob@example.com", "collaborator")
	cl.do(ctx, id, map[string]any{"type": "send", "text": "tool ls"})
	m := bob.next(ctx, "bob's approval")
	if len(m.Actions) != 2 {
		t.Fatalf("a collaborator's approval has no actions: %+v", m)
	}
	act := fmt.Sprintf(`{"session":%q,"approval":%q,"action":"deny"}`, id, m.Approval)
	if st, _, b := e.as("bob@example.com", "POST", "/api/notify/action", act); st != 200 {
		t.Fatalf("bob's deny: %d %s", st, b)
	}
	if r := bob.next(ctx, "bob's resolved"); r.Type != "resolved" || r.Outcome != "denied" || r.By != "Bob" {
		t.Fatalf("bob's resolved: %+v", r)
	}
	if d := bob.next(ctx, "bob's turn"); d.Event != "turn_done" || d.Body != "tool deny" {
		t.Fatalf("bob's turn: %+v", d)
	}
	// Alice's decisions for that turn were made with bob's: her tab was
	// visible, so she got nothing. Now she looks away.
	cl.ok(ctx, map[string]any{"type": "visibility", "visible": false})
	cl.do(ctx, id, map[string]any{"type": "send", "text": "hello"})
	if a := alice.next(ctx, "alice's first"); a.Event != "turn_done" || a.Body != "echo: hello" {
		t.Fatalf("alice, whose tab was visible, got %+v first", a)
	}
	if st, _, b := e.as("alice@example.com", "POST", "/api/notify/action", `{"session":"x","approval":"y","action":"maybe"}`); st != 400 {
		t.Fatalf("a bad action: %d %s", st, b)
	}
}

// A turn that spends the owner's daily budget tells them once, even with
// a tab on screen (the next prompt will be refused: they should know).
func TestNotifyBudget(t *testing.T) {
	ctx := testCtx(t)
	alice := newPushEndpoint(t)
	e := newTeamEnvWith(t, &serve.Options{Notify: notifyOptions(t)})
	if st, _, b := e.as("alice@example.com", "POST", "/api/notify/subscribe", alice.subscription("/a")); st != http.StatusNoContent {
		t.Fatalf("subscribe: %d %s", st, b)
	}
	cl := e.dial(ctx, "alice@example.com")
	cl.ok(ctx, map[string]any{"type": "visibility", "visible": true})
	id := cl.start(ctx, "")
	cl.ok(ctx, map[string]any{"type": "subscribe", "session": id})
	cl.do(ctx, id, map[string]any{"type": "send", "text": "tool ls"})
	from := 0
	ev := cl.waitFrame(ctx, &from, "the approval", isKind(id, host.EventApproval))
	var ai host.ApprovalInfo
	json.Unmarshal(ev.Event.Data, &ai)
	e.authz.mu.Lock()
	e.authz.spent["alice@example.com"] = true // this turn spends it
	e.authz.mu.Unlock()
	if f := cl.do(ctx, id, map[string]any{"type": "answer", "approval": ai.ID, "behavior": "allow"}); f.Error != nil {
		t.Fatal(f.Error)
	}
	m := alice.next(ctx, "the budget notice")
	if m.Event != "budget" || !strings.HasPrefix(m.Tag, "budget:") || m.Body != "$5.12 of $5.00 today; it resets at 00:00 UTC" {
		t.Fatalf("first push (the tab is visible: only the budget may come): %+v", m)
	}
}

// sharedPushSession is a team server with notifications on, where alice
// and another person (who) have subscribed their push endpoints, alice's
// tab reports visible or not, and alice's new session is shared with who
// at level.
func sharedPushSession(t *testing.T, ctx context.Context, alice, other *pushEndpoint, visible bool, who, level string) (*teamEnv, *wsClient, string) {
	t.Helper()
	e := newTeamEnvWith(t, &serve.Options{Notify: notifyOptions(t)})
	for person, pe := range map[string]*pushEndpoint{"alice@example.com": alice, who: other} {
		if st, _, b := e.as(person, "POST", "/api/notify/subscribe", pe.subscription("/"+person)); st != http.StatusNoContent {
			t.Fatalf("subscribe %s: %d %s", person, st, b)
		}
	}
	cl := e.dial(ctx, "alice@example.com")
	cl.ok(ctx, map[string]any{"type": "visibility", "visible": visible})
	id := cl.start(ctx, "")
	grants := fmt.Sprintf(`{"grants":[{"person":%q,"level":%q}]}`, who, level)
	if st, _, b := e.as("alice@example.com", "POST", "/api/sessions/"+id+"/share", grants); st != 200 {
		t.Fatalf("share: %d %s", st, b)
	}
	return e, cl, id
}
