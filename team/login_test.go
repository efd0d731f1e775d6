package team

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/tetherhq/tether/internal/natstest"
)

// fakeClock is a settable time for expiry tests.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{t: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// testLoginStore checks what every LoginStore promises.
func testLoginStore(t *testing.T, s LoginStore, clock *fakeClock) {
	ctx := context.Background()
	alice := &Identity{Subject: "alice@example.com", Name: "Alice", Groups: []string{"eng"}}
	id, err := s.Create(ctx, alice, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if len(id) < 43 || strings.ContainsAny(id, "+/=;, ") {
		t.Fatalf("login id %q: want 32 random bytes, cookie-safe base64url", id)
	}
	got, exp, err := s.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if got.Subject != alice.Subject || got.Name != "Alice" || !got.InGroup("eng") {
		t.Fatalf("Get = %+v", got)
	}
	if want := clock.Now().Add(time.Hour); exp.Sub(want).Abs() > time.Second {
		t.Fatalf("expiry %v, want %v", exp, want)
	}
	for _, bad := range []string{"", "x", id + "A", strings.ToUpper(id), id[:len(id)-1] + "!"} {
		if _, _, err := s.Get(ctx, bad); !errors.Is(err, ErrUnauthenticated) {
			t.Errorf("Get(%q) err = %v, want ErrUnauthenticated", bad, err)
		}
	}

	// Expiry.
	id2, err := s.Create(ctx, alice, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	clock.Add(2 * time.Minute)
	if _, _, err := s.Get(ctx, id2); !errors.Is(err, ErrUnauthenticated) {
		t.Fatalf("expired login: err = %v, want ErrUnauthenticated", err)
	}
	if _, _, err := s.Get(ctx, id); err != nil {
		t.Fatalf("the hour-long login expired after 2m: %v", err)
	}

	// Revocation.
	if err := s.Revoke(ctx, id); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Get(ctx, id); !errors.Is(err, ErrUnauthenticated) {
		t.Fatalf("revoked login: err = %v, want ErrUnauthenticated", err)
	}
	if err := s.Revoke(ctx, id); err != nil {
		t.Fatalf("revoking twice: %v", err)
	}
	if err := s.Revoke(ctx, "garbage"); err != nil {
		t.Fatalf("revoking garbage: %v", err)
	}
}

func TestMemoryLoginStore(t *testing.T) {
	clock := newFakeClock()
	s := newMemoryLoginStore(DefaultMaxMemoryLogins, clock.Now)
	testLoginStore(t, s, clock)

	// Only hashes are kept: no key of the store is a login id.
	id, err := s.Create(context.Background(), &Identity{Subject: "bob"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	for k := range s.logins {
		if k == id || strings.Contains(k, id) {
			t.Errorf("the store keeps the login id itself")
		}
	}
	s.mu.Unlock()
}

func TestMemoryLoginStoreBound(t *testing.T) {
	ctx := context.Background()
	clock := newFakeClock()
	s := newMemoryLoginStore(3, clock.Now)
	var ids []string
	for i := range 3 {
		id, err := s.Create(ctx, &Identity{Subject: "p"}, time.Duration(i+1)*time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	// Full: the login expiring soonest goes.
	newest, err := s.Create(ctx, &Identity{Subject: "q"}, 10*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if n := s.Len(); n != 3 {
		t.Fatalf("Len = %d, want the bound 3", n)
	}
	if _, _, err := s.Get(ctx, ids[0]); !errors.Is(err, ErrUnauthenticated) {
		t.Fatalf("the soonest-expiring login survived a full store: %v", err)
	}
	for _, id := range append(ids[1:], newest) {
		if _, _, err := s.Get(ctx, id); err != nil {
			t.Fatalf("a later login was evicted: %v", err)
		}
	}
	// Expired logins are dropped before any live one.
	clock.Add(150 * time.Minute) // ids[1] (2h) expired
	if _, err := s.Create(ctx, &Identity{Subject: "r"}, time.Hour); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Get(ctx, ids[2]); err != nil {
		t.Fatalf("a live login was evicted while an expired one was held: %v", err)
	}
}

// startJetStream runs an embedded JetStream server on loopback.
func startJetStream(t *testing.T) jetstream.JetStream { return natstest.JetStream(t) }

func TestKVLoginStore(t *testing.T) {
	ctx := context.Background()
	js := startJetStream(t)
	s, err := NewKVLoginStore(ctx, js)
	if err != nil {
		t.Fatal(err)
	}
	clock := newFakeClock()
	s.now = clock.Now
	testLoginStore(t, s, clock)

	// A second store on the same bucket (another serve, a restart) sees
	// the logins; the bucket holds only hashes.
	id, err := s.Create(ctx, &Identity{Subject: "bob"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	s2, err := NewKVLoginStore(ctx, js)
	if err != nil {
		t.Fatal(err)
	}
	s2.now = clock.Now
	if got, _, err := s2.Get(ctx, id); err != nil || got.Subject != "bob" {
		t.Fatalf("second store: %v, %v", got, err)
	}
	keys, err := s.kv.ListKeys(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for k := range keys.Keys() {
		if strings.Contains(k, id) || len(k) != 64 {
			t.Errorf("bucket key %q is not a SHA-256 of a login id", k)
		}
	}

	// The server removes a login's record once its TTL passes.
	short, err := s.Create(ctx, &Identity{Subject: "carol"}, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := s.kv.Get(ctx, loginKey(short))
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the record of a 1s login is still there after 30s: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
