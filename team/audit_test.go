package team_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/goleak"

	"github.com/tetherhq/tether/internal/natstest"
	"github.com/tetherhq/tether/team"
)

// auditJS starts an embedded NATS server with JetStream on loopback,
// storing in a test folder, and connects to it. The leak check is
// registered first so it runs last, after the connection and server
// are gone.
func auditJS(t *testing.T) (jetstream.JetStream, *nats.Conn) {
	t.Helper()
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
	return newJetStreamConn(t)
}

func openAudit(t *testing.T, ctx context.Context, js jetstream.JetStream, o *team.AuditOptions) *team.Audit {
	t.Helper()
	a, err := team.OpenAudit(ctx, js, o)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func collect(t *testing.T, a *team.Audit, ctx context.Context, q *team.AuditQuery) []*team.AuditEvent {
	t.Helper()
	var out []*team.AuditEvent
	for ev, err := range a.Query(ctx, q) {
		if err != nil {
			t.Fatalf("query %+v: %v", q, err)
		}
		out = append(out, ev)
	}
	return out
}

func details(evs []*team.AuditEvent) string {
	var s []string
	for _, e := range evs {
		s = append(s, e.Detail)
	}
	return strings.Join(s, ",")
}

// consumersGone waits until the audit stream has no consumer left.
func consumersGone(t *testing.T, ctx context.Context, js jetstream.JetStream) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, err := js.Stream(ctx, team.StreamAudit)
		if err != nil {
			t.Fatal(err)
		}
		if st.CachedInfo().State.Consumers == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d consumers left on the audit stream", st.CachedInfo().State.Consumers)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestAuditRecordAndQueryFilters(t *testing.T) {
	js, _ := auditJS(t)
	ctx := testCtx(t)
	a := openAudit(t, ctx, js, nil)
	past := time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)
	rec := func(ev team.AuditEvent) {
		t.Helper()
		if err := a.Record(ctx, &ev); err != nil {
			t.Fatal(err)
		}
	}
	before := time.Now()
	rec(team.AuditEvent{Actor: "alice@example.com", ActorName: "Alice", Addr: "127.0.0.1:5000", Action: team.ActionSignIn, Outcome: team.OutcomeOK, Detail: "e1"})
	rec(team.AuditEvent{Actor: "alice@example.com", Action: team.ActionStart, Session: "s1", Outcome: team.OutcomeOK, Detail: "e2", Time: past})
	mid := time.Now()
	rec(team.AuditEvent{Actor: "bob@example.com", Action: team.ActionPrompt, Session: "s1", Outcome: team.OutcomeOK, Detail: "e3"})
	rec(team.AuditEvent{Actor: "alice@example.com", Action: team.ActionApproval, Session: "s2", Outcome: team.OutcomeOK, Tool: "Bash", InputDigest: strings.Repeat("ab", 32), Rule: "allow", Detail: "e4"})
	rec(team.AuditEvent{Actor: "bob@example.com", Action: team.ActionRefused, Session: "s2", Outcome: team.OutcomeRefused, Rule: "access", Detail: "e5"})

	all := collect(t, a, ctx, nil)
	if got := details(all); got != "e1,e2,e3,e4,e5" {
		t.Fatalf("all: %s", got)
	}
	for i, e := range all {
		if e.Seq != uint64(i+1) {
			t.Errorf("event %d: seq %d", i, e.Seq)
		}
	}
	if e := all[0]; e.Time.Before(before) || e.Time.After(time.Now()) || e.Time.Location() != time.UTC || e.ActorName != "Alice" || e.Addr != "127.0.0.1:5000" {
		t.Errorf("e1 stored as %+v", e)
	}
	if !all[1].Time.Equal(past) {
		t.Errorf("a given time is kept: %v", all[1].Time)
	}
	if e := all[3]; e.Tool != "Bash" || e.Rule != "allow" || e.InputDigest != strings.Repeat("ab", 32) || e.Session != "s2" {
		t.Errorf("e4 stored as %+v", e)
	}
	for _, c := range []struct {
		q    team.AuditQuery
		want string
	}{
		{team.AuditQuery{Actor: "ALICE@example.com"}, "e1,e2,e4"},
		{team.AuditQuery{Actor: "carol@example.com"}, ""},
		{team.AuditQuery{Session: "s1"}, "e2,e3"},
		{team.AuditQuery{Action: team.ActionApproval}, "e4"},
		{team.AuditQuery{Action: team.ActionShare}, ""},
		{team.AuditQuery{Since: mid}, "e3,e4,e5"},
		{team.AuditQuery{Until: mid}, "e1,e2"},
		{team.AuditQuery{Since: before, Until: mid}, "e1,e2"},
		{team.AuditQuery{Since: time.Now().Add(time.Hour)}, ""},
		{team.AuditQuery{Limit: 2}, "e1,e2"},
		{team.AuditQuery{Actor: "bob@example.com", Limit: 1}, "e3"},
		{team.AuditQuery{Actor: "alice@example.com", Since: mid}, "e4"},
		{team.AuditQuery{Session: "s2", Action: team.ActionRefused}, "e5"},
	} {
		if got := details(collect(t, a, ctx, &c.q)); got != c.want {
			t.Errorf("query %+v: %q, want %q", c.q, got, c.want)
		}
	}

	// Breaking out of the loop ends the query too.
	for range a.Query(ctx, nil) {
		break
	}

	var buf bytes.Buffer
	n, err := a.WriteJSONL(ctx, &buf, &team.AuditQuery{Session: "s2"})
	if err != nil || n != 2 {
		t.Fatalf("WriteJSONL: %d, %v", n, err)
	}
	sc := bufio.NewScanner(&buf)
	var lines []string
	for sc.Scan() {
		var ev team.AuditEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		lines = append(lines, ev.Detail)
	}
	if strings.Join(lines, ",") != "e4,e5" {
		t.Errorf("JSONL: %q", buf.String())
	}
	consumersGone(t, ctx, js)
}

// TestAuditQueryEndsAtTheEnd: a query reads what the stream held when it
// started, and ends even when events keep coming in or none match.
func TestAuditQueryEndsAtTheEnd(t *testing.T) {
	js, _ := auditJS(t)
	ctx := testCtx(t)
	a := openAudit(t, ctx, js, nil)
	if got := collect(t, a, ctx, nil); len(got) != 0 {
		t.Fatalf("empty log: %d events", len(got))
	}
	ev := &team.AuditEvent{Actor: "a", Action: team.ActionPrompt, Outcome: team.OutcomeOK, Detail: "old"}
	for range 3 {
		if err := a.Record(ctx, ev); err != nil {
			t.Fatal(err)
		}
	}
	n := 0
	for ev, err := range a.Query(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Detail != "old" {
			t.Fatalf("read an event recorded after the query started: %+v", ev)
		}
		n++
		if err := a.Record(ctx, &team.AuditEvent{Actor: "a", Action: team.ActionPrompt, Outcome: team.OutcomeOK, Detail: "new"}); err != nil {
			t.Fatal(err)
		}
	}
	if n != 3 {
		t.Errorf("read %d events, want 3", n)
	}
	// The same when the last event held is not one the query reads.
	if err := a.Record(ctx, &team.AuditEvent{Actor: "a", Action: team.ActionSignOut, Outcome: team.OutcomeOK, Detail: "other"}); err != nil {
		t.Fatal(err)
	}
	n = 0
	for ev, err := range a.Query(ctx, &team.AuditQuery{Action: team.ActionPrompt}) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Seq > 7 {
			t.Fatalf("read an event recorded after the query started: %+v", ev)
		}
		n++
		if err := a.Record(ctx, &team.AuditEvent{Actor: "a", Action: team.ActionPrompt, Outcome: team.OutcomeOK, Detail: "newer"}); err != nil {
			t.Fatal(err)
		}
	}
	if n != 6 {
		t.Errorf("read %d prompts, want 6", n)
	}
	// A filter matching nothing of a non-empty stream.
	if got := collect(t, a, ctx, &team.AuditQuery{Action: team.ActionShare}); len(got) != 0 {
		t.Errorf("session_share: %d", len(got))
	}
	consumersGone(t, ctx, js)
}

// TestAuditSizeBound: past MaxBytes the oldest events go, the newest stay.
func TestAuditSizeBound(t *testing.T) {
	js, _ := auditJS(t)
	ctx := testCtx(t)
	a := openAudit(t, ctx, js, &team.AuditOptions{MaxBytes: 4096})
	for i := range 40 {
		if err := a.Record(ctx, &team.AuditEvent{Actor: fmt.Sprintf("p%02d@example.com", i), Action: team.ActionSignIn, Outcome: team.OutcomeOK,
			Detail: strings.Repeat("x", 100)}); err != nil {
			t.Fatal(err)
		}
	}
	got := collect(t, a, ctx, &team.AuditQuery{})
	if len(got) == 0 || len(got) >= 40 {
		t.Fatalf("%d events kept of 40 in 4 KiB", len(got))
	}
	if first, last := got[0].Actor, got[len(got)-1].Actor; first == "p00@example.com" || last != "p39@example.com" {
		t.Fatalf("kept %s … %s: want the newest kept, the oldest gone", first, last)
	}
	if _, err := team.OpenAudit(ctx, js, &team.AuditOptions{MaxBytes: -1}); !errors.Is(err, team.ErrAuditInvalid) {
		t.Fatalf("negative MaxBytes: %v", err)
	}
}

func TestAuditRetentionAndAppendOnly(t *testing.T) {
	js, nc := auditJS(t)
	ctx := testCtx(t)
	a := openAudit(t, ctx, js, &team.AuditOptions{Retention: time.Hour, Replicas: 1})
	if err := a.Record(ctx, &team.AuditEvent{Actor: "a", Action: team.ActionSignIn, Outcome: team.OutcomeOK}); err != nil {
		t.Fatal(err)
	}
	st, err := js.Stream(ctx, team.StreamAudit)
	if err != nil {
		t.Fatal(err)
	}
	cfg := st.CachedInfo().Config
	if cfg.MaxAge != time.Hour || cfg.MaxBytes != team.DefaultAuditMaxBytes || cfg.Discard != jetstream.DiscardOld ||
		!cfg.DenyDelete || !cfg.DenyPurge || cfg.AllowRollup || cfg.Replicas != 1 ||
		len(cfg.Subjects) != 1 || cfg.Subjects[0] != "tether.v1.audit.>" {
		t.Fatalf("stream config %+v", cfg)
	}
	if err := st.DeleteMsg(ctx, 1); err == nil {
		t.Error("a message was deleted")
	}
	if err := st.SecureDeleteMsg(ctx, 1); err == nil {
		t.Error("a message was erased")
	}
	if err := st.Purge(ctx); err == nil {
		t.Error("the stream was purged")
	}
	// A roll-up (which purges the subject) is refused too.
	m := nats.NewMsg("tether.v1.audit.sign_in")
	m.Header.Set("Nats-Rollup", "all")
	m.Data = []byte(`{}`)
	if _, err := js.PublishMsg(ctx, m); err == nil {
		t.Error("a roll-up was accepted")
	}
	// The raw API request, as any NATS client could send it.
	resp, err := nc.RequestWithContext(ctx, "$JS.API.STREAM.MSG.DELETE."+team.StreamAudit, []byte(`{"seq":1,"no_erase":true}`))
	if err != nil || !strings.Contains(string(resp.Data), `"error"`) {
		t.Errorf("raw delete request: %v %s", err, resp.Data)
	}
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != 1 || info.State.FirstSeq != 1 {
		t.Errorf("the event is gone: %+v", info.State)
	}
}

// TestAuditAdoptsExistingStream: an existing stream is made append-only,
// its retention set only when asked for, never made deletable.
func TestAuditAdoptsExistingStream(t *testing.T) {
	js, _ := auditJS(t)
	ctx := testCtx(t)
	if _, err := team.OpenAudit(ctx, js, &team.AuditOptions{ReadOnly: true}); !errors.Is(err, team.ErrAuditStream) {
		t.Fatalf("read-only on a server without the stream: %v", err)
	}
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: team.StreamAudit, Subjects: []string{"tether.v1.audit.>"},
		MaxAge: 24 * time.Hour, AllowRollup: true}); err != nil {
		t.Fatal(err)
	}
	config := func() jetstream.StreamConfig {
		st, err := js.Stream(ctx, team.StreamAudit)
		if err != nil {
			t.Fatal(err)
		}
		return st.CachedInfo().Config
	}
	openAudit(t, ctx, js, nil)
	if c := config(); c.MaxAge != 24*time.Hour || !c.DenyDelete || !c.DenyPurge || c.AllowRollup {
		t.Fatalf("after OpenAudit without retention: %+v", c)
	}
	openAudit(t, ctx, js, &team.AuditOptions{Retention: 48 * time.Hour})
	if c := config(); c.MaxAge != 48*time.Hour || !c.DenyDelete || !c.DenyPurge {
		t.Fatalf("after OpenAudit with 48h: %+v", c)
	}
	// Nobody makes it deletable again.
	c := config()
	c.DenyDelete = false
	if _, err := js.UpdateStream(ctx, c); err == nil {
		t.Error("the stream was made deletable")
	}
	ro := openAudit(t, ctx, js, &team.AuditOptions{ReadOnly: true, Retention: time.Minute})
	if c := config(); c.MaxAge != 48*time.Hour {
		t.Errorf("a read-only open changed retention: %v", c.MaxAge)
	}
	if err := ro.Record(ctx, &team.AuditEvent{Action: team.ActionSignIn, Outcome: team.OutcomeOK}); !errors.Is(err, team.ErrAuditInvalid) {
		t.Errorf("read-only Record: %v", err)
	}
}

func TestAuditRefusesBadInput(t *testing.T) {
	js, _ := auditJS(t)
	ctx := testCtx(t)
	for _, o := range []*team.AuditOptions{{Retention: -time.Hour}, {Replicas: -1}, {Replicas: 7}} {
		if _, err := team.OpenAudit(ctx, js, o); !errors.Is(err, team.ErrAuditInvalid) {
			t.Errorf("options %+v: %v", o, err)
		}
	}
	a := openAudit(t, ctx, js, nil)
	for _, c := range []struct {
		ev    *team.AuditEvent
		field string
	}{
		{nil, "event"},
		{&team.AuditEvent{Action: "launch_missiles", Outcome: team.OutcomeOK}, "action"},
		{&team.AuditEvent{Action: "", Outcome: team.OutcomeOK}, "action"},
		{&team.AuditEvent{Action: team.ActionPrompt, Outcome: "maybe"}, "outcome"},
		{&team.AuditEvent{Action: team.ActionPrompt}, "outcome"},
	} {
		err := a.Record(ctx, c.ev)
		var ie *team.AuditInputError
		if !errors.As(err, &ie) || ie.Field != c.field || !errors.Is(err, team.ErrAuditInvalid) {
			t.Errorf("Record(%+v): %v", c.ev, err)
		}
	}
	for _, q := range []*team.AuditQuery{{Action: "nope"}, {Limit: -1}, {Since: time.Now(), Until: time.Now().Add(-time.Hour)}} {
		n := 0
		for _, err := range a.Query(ctx, q) {
			if !errors.Is(err, team.ErrAuditInvalid) {
				t.Errorf("query %+v: %v", q, err)
			}
			n++
		}
		if n != 1 {
			t.Errorf("query %+v: %d results", q, n)
		}
	}

	// Long fields are cut to their bounds on a character boundary.
	long := &team.AuditEvent{Action: team.ActionRefused, Outcome: team.OutcomeRefused,
		Actor: strings.Repeat("x", 1000), Tool: strings.Repeat("é", 500), Detail: strings.Repeat("ü", 10000)}
	if err := a.Record(ctx, long); err != nil {
		t.Fatal(err)
	}
	if len(long.Detail) != 20000 || long.Seq != 0 {
		t.Error("Record changed the caller's event")
	}
	got := collect(t, a, ctx, nil)
	if len(got) != 1 {
		t.Fatalf("%d events", len(got))
	}
	e := got[0]
	for name, f := range map[string]struct {
		s   string
		max int
	}{"actor": {e.Actor, team.MaxAuditField}, "tool": {e.Tool, team.MaxAuditField}, "detail": {e.Detail, team.MaxAuditDetail}} {
		if len(f.s) > f.max || len(f.s) < f.max-8 || !utf8.ValidString(f.s) || !strings.HasSuffix(f.s, "…") {
			t.Errorf("%s: %d bytes, valid %v, %q…", name, len(f.s), utf8.ValidString(f.s), f.s[len(f.s)-8:])
		}
	}
}

func TestAuditConcurrentRecord(t *testing.T) {
	js, _ := auditJS(t)
	ctx := testCtx(t)
	a := openAudit(t, ctx, js, nil)
	const writers, each = 8, 25
	var wg sync.WaitGroup
	errs := make(chan error, writers*each)
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				errs <- a.Record(ctx, &team.AuditEvent{Actor: fmt.Sprintf("w%d", w), Action: team.ActionPrompt, Outcome: team.OutcomeOK,
					Detail: fmt.Sprintf("%d/%d", w, i)})
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	got := collect(t, a, ctx, nil)
	seen := map[string]bool{}
	for i, e := range got {
		if e.Seq != uint64(i+1) {
			t.Errorf("event %d has seq %d", i, e.Seq)
		}
		seen[e.Detail] = true
	}
	if len(got) != writers*each || len(seen) != writers*each {
		t.Errorf("%d events, %d distinct, want %d", len(got), len(seen), writers*each)
	}
	if got := collect(t, a, ctx, &team.AuditQuery{Actor: "w3"}); len(got) != each {
		t.Errorf("w3: %d events", len(got))
	}
}

func TestAuditCancelledContext(t *testing.T) {
	js, _ := auditJS(t)
	ctx := testCtx(t)
	a := openAudit(t, ctx, js, nil)
	if err := a.Record(ctx, &team.AuditEvent{Action: team.ActionSignIn, Outcome: team.OutcomeOK}); err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := a.Record(cctx, &team.AuditEvent{Action: team.ActionSignIn, Outcome: team.OutcomeOK}); !errors.Is(err, context.Canceled) {
		t.Errorf("Record: %v", err)
	}
	n := 0
	for ev, err := range a.Query(cctx, nil) {
		if ev != nil || !errors.Is(err, context.Canceled) {
			t.Errorf("Query: %v, %v", ev, err)
		}
		n++
	}
	if n != 1 {
		t.Errorf("Query yielded %d times", n)
	}
	if _, err := a.WriteJSONL(cctx, &bytes.Buffer{}, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("WriteJSONL: %v", err)
	}
	// Cancelled while reading: the loop ends with the context's error.
	for range 3 {
		if err := a.Record(ctx, &team.AuditEvent{Action: team.ActionPrompt, Outcome: team.OutcomeOK}); err != nil {
			t.Fatal(err)
		}
	}
	qctx, qcancel := context.WithCancel(ctx)
	var last error
	n = 0
	for ev, err := range a.Query(qctx, nil) {
		if ev != nil {
			n++
			qcancel()
		}
		last = err
	}
	qcancel()
	if n < 1 || (last != nil && !errors.Is(last, context.Canceled)) {
		t.Errorf("read %d, last error %v", n, last)
	}
	consumersGone(t, ctx, js)
}

// TestAuditSkipsJunk: messages on the audit subjects that are not events
// are skipped and counted, whether first, between or last.
func TestAuditSkipsJunk(t *testing.T) {
	js, _ := auditJS(t)
	ctx := testCtx(t)
	a := openAudit(t, ctx, js, nil)
	pub := func(subject, data string) {
		t.Helper()
		if _, err := js.Publish(ctx, subject, []byte(data)); err != nil {
			t.Fatal(err)
		}
	}
	pub("tether.v1.audit.prompt", "not json")
	if err := a.Record(ctx, &team.AuditEvent{Action: team.ActionPrompt, Outcome: team.OutcomeOK, Detail: "good1"}); err != nil {
		t.Fatal(err)
	}
	pub("tether.v1.audit.prompt", `{"action":"session_start","outcome":"ok"}`) // action and subject disagree
	pub("tether.v1.audit.nope", `{"action":"nope","outcome":"ok"}`)
	pub("tether.v1.audit.prompt", `{"action":"prompt","time":"yesterday"}`)
	if err := a.Record(ctx, &team.AuditEvent{Action: team.ActionPrompt, Outcome: team.OutcomeOK, Detail: "good2"}); err != nil {
		t.Fatal(err)
	}
	pub("tether.v1.audit.prompt", "\x00\xff")
	if got := details(collect(t, a, ctx, nil)); got != "good1,good2" {
		t.Errorf("read %q", got)
	}
	if n := a.Skipped(); n != 5 {
		t.Errorf("skipped %d, want 5", n)
	}
	if got := details(collect(t, a, ctx, &team.AuditQuery{Action: team.ActionPrompt})); got != "good1,good2" {
		t.Errorf("prompt only: %q", got)
	}
}

// TestAuditQueryServerGone: the server going away in the middle of a
// query ends it with an error within seconds, long before ctx's
// deadline: it does not wait for the server forever, nor end as if the
// log were complete.
func TestAuditQueryServerGone(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
	s := natstest.Start(t, nil)
	_, js := s.Connect(nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	ctx := testCtx(t)
	a := openAudit(t, ctx, js, nil)
	// More than the consumer fetches ahead, so the query needs the server.
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for range 150 {
				if err := a.Record(ctx, &team.AuditEvent{Actor: fmt.Sprint(w), Action: team.ActionPrompt, Outcome: team.OutcomeOK}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	qctx, cancel := context.WithTimeout(ctx, 50*time.Second)
	defer cancel()
	start := time.Now()
	n := 0
	var last error
	for ev, err := range a.Query(qctx, nil) {
		if ev != nil && n == 0 {
			s.Shutdown()
		}
		if ev != nil {
			n++
		}
		last = err
	}
	if last == nil || n >= 1200 || qctx.Err() != nil || errors.Is(last, context.DeadlineExceeded) {
		t.Errorf("read %d of 1200 with the server gone, error %v", n, last)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("the query took %v", d)
	}
	t.Logf("read %d, ended after %v with %v", n, time.Since(start), last)
}
