package team_test

import (
	"context"
	"errors"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tetherhq/tether/internal/natstest"
	"github.com/tetherhq/tether/team"
)

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// newJetStream starts an embedded NATS server with JetStream on a
// loopback port, storing in a test folder, and connects to it.
func newJetStream(t *testing.T) jetstream.JetStream {
	js, _ := newJetStreamConn(t)
	return js
}

// newJetStreamConn is newJetStream with the connection too.
func newJetStreamConn(t *testing.T) (jetstream.JetStream, *nats.Conn) {
	t.Helper()
	nc, js := natstest.Start(t, &natstest.Options{Name: "t"}).Connect()
	return js, nc
}

func newStore(t *testing.T) (*team.Store, jetstream.JetStream) {
	t.Helper()
	js := newJetStream(t)
	st, err := team.OpenStore(testCtx(t), js, nil)
	if err != nil {
		t.Fatal(err)
	}
	return st, js
}

// Session ids and subjects are whatever clients and providers chose:
// none may break a key or reach another's.
var awkward = []string{"a.b", "*", ">", "a b", "ü@x.com", "", "..", "x/y", "alice@example.com"}

func TestStoreACL(t *testing.T) {
	ctx := testCtx(t)
	st, js := newStore(t)
	if _, err := st.ACL(ctx, "nope"); !errors.Is(err, team.ErrNoACL) {
		t.Fatalf("ACL of an unknown session: %v, want ErrNoACL", err)
	}
	for _, id := range awkward {
		if err := st.PutACL(ctx, &team.ACL{Session: id, Owner: "o" + id}); err != nil {
			t.Fatalf("PutACL(%q): %v", id, err)
		}
	}
	for _, id := range awkward {
		a, err := st.ACL(ctx, id)
		if err != nil || a.Owner != "o"+id {
			t.Fatalf("ACL(%q) = %+v, %v", id, a, err)
		}
	}
	// Created never takes a session over.
	got, created, err := st.CreateACL(ctx, &team.ACL{Session: "a.b", Owner: "mallory"})
	if err != nil || created || got.Owner != "oa.b" {
		t.Fatalf("CreateACL over an existing one = %+v, %v, %v", got, created, err)
	}
	a, err := st.UpdateACL(ctx, "a.b", func(a *team.ACL) error {
		a.Grants = []team.Grant{{Person: "bob", Level: team.ShareViewer}}
		return nil
	})
	if err != nil || len(a.Grants) != 1 {
		t.Fatalf("UpdateACL = %+v, %v", a, err)
	}
	boom := errors.New("boom")
	if _, err := st.UpdateACL(ctx, "a.b", func(*team.ACL) error { return boom }); !errors.Is(err, boom) {
		t.Fatalf("UpdateACL's own error: %v", err)
	}
	if _, err := st.UpdateACL(ctx, "nope", func(*team.ACL) error { return nil }); !errors.Is(err, team.ErrNoACL) {
		t.Fatalf("UpdateACL of none: %v", err)
	}
	if err := st.DeleteACL(ctx, "a.b"); err != nil {
		t.Fatal(err)
	}
	if _, err := st.ACL(ctx, "a.b"); !errors.Is(err, team.ErrNoACL) {
		t.Fatalf("deleted ACL: %v", err)
	}
	if _, created, _ := st.CreateACL(ctx, &team.ACL{Session: "a.b", Owner: "new"}); !created {
		t.Fatal("CreateACL after a delete did not create")
	}
	// A second Store on the same JetStream reads the same.
	st2, err := team.OpenStore(ctx, js, nil)
	if err != nil {
		t.Fatal(err)
	}
	if a, err := st2.ACL(ctx, "x/y"); err != nil || a.Owner != "ox/y" {
		t.Fatalf("second store: %+v, %v", a, err)
	}
}

// Many writers adding at once, from two Stores, all count.
func TestStoreSpendConcurrent(t *testing.T) {
	ctx := testCtx(t)
	st, js := newStore(t)
	st2, err := team.OpenStore(ctx, js, nil)
	if err != nil {
		t.Fatal(err)
	}
	const writers, each = 8, 10
	var wg sync.WaitGroup
	errs := make(chan error, writers*each)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := st
			if w%2 == 1 {
				s = st2
			}
			for range each {
				if err := s.AddSpend(ctx, "alice@example.com", 0.25); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	m, err := st.Spend(ctx, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if got := m["alice@example.com"]; math.Abs(got-writers*each*0.25) > 1e-9 {
		t.Fatalf("spend %v after %d adds of 0.25, want %v", got, writers*each, writers*each*0.25)
	}
}

func TestStoreSpendKeysAndDays(t *testing.T) {
	ctx := testCtx(t)
	st, _ := newStore(t)
	for i, sub := range awkward {
		if err := st.AddSpend(ctx, sub, float64(i+1)); err != nil {
			t.Fatalf("AddSpend(%q): %v", sub, err)
		}
	}
	for _, bad := range []float64{-1, math.NaN(), math.Inf(1)} {
		if err := st.AddSpend(ctx, "x", bad); err == nil {
			t.Errorf("AddSpend(%v) accepted", bad)
		}
	}
	m, err := st.Spend(ctx, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if len(m) != len(awkward) {
		t.Fatalf("Spend = %v, want %d people", m, len(awkward))
	}
	for i, sub := range awkward {
		if m[sub] != float64(i+1) {
			t.Errorf("spend of %q = %v, want %v", sub, m[sub], i+1)
		}
	}
	yesterday, err := st.Spend(ctx, time.Now().Add(-24*time.Hour))
	if err != nil || len(yesterday) != 0 {
		t.Fatalf("yesterday's spend = %v, %v; want none", yesterday, err)
	}
	if v, err := st.SpendOf(ctx, time.Now(), "*"); err != nil || v != 2 {
		t.Fatalf("SpendOf(*) = %v, %v", v, err)
	}
}

// A cancelled ctx ends an update and a read: nothing blocks past it.
func TestStoreHonoursCtx(t *testing.T) {
	st, _ := newStore(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := st.AddSpend(ctx, "a", 1); err == nil {
		t.Error("AddSpend with a cancelled ctx succeeded")
	}
	if _, err := st.Spend(ctx, time.Now()); err == nil {
		t.Error("Spend with a cancelled ctx succeeded")
	}
	if _, err := st.ACL(ctx, "a"); err == nil || errors.Is(err, team.ErrNoACL) {
		t.Errorf("ACL with a cancelled ctx: %v", err)
	}
}
