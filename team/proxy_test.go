package team

import (
	"context"
	"errors"
	"net/http/httptest"
	"net/netip"
	"sync"
	"testing"
)

// recorder collects audit events.
type recorder struct {
	mu  sync.Mutex
	evs []AuditEvent
}

func (r *recorder) Record(_ context.Context, ev *AuditEvent) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.evs = append(r.evs, *ev)
	return nil
}

func (r *recorder) actions() []AuditEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]AuditEvent(nil), r.evs...)
}

func TestProxyAuth(t *testing.T) {
	rec := &recorder{}
	p, err := NewProxyAuth(&ProxyOptions{
		Header: "X-Forwarded-Email", NameHeader: "X-Forwarded-User", GroupsHeader: "X-Forwarded-Groups",
		Trusted:  []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("::1/128")},
		Recorder: rec,
		Resolve: func(id *Identity) (*Identity, error) {
			if id.Subject == "mallory@example.com" {
				return nil, errors.New("not listed")
			}
			id.Role = RoleMember
			return id, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if p.Handler() != nil {
		t.Fatal("proxy auth serves sign-in routes")
	}
	t.Run("trusted peer", func(t *testing.T) {
		r := httptest.NewRequest("GET", "/api/sessions", nil)
		r.RemoteAddr = "10.1.2.3:5555"
		r.Header.Set("X-Forwarded-Email", "Alice@Example.com")
		r.Header.Set("X-Forwarded-User", "Alice Smith")
		r.Header.Set("X-Forwarded-Groups", "eng, ops")
		r.Header.Set("X-Forwarded-For", "192.0.2.7")
		id, err := p.Identify(r)
		if err != nil {
			t.Fatal(err)
		}
		if id.Subject != "alice@example.com" || id.Email != "alice@example.com" || id.Name != "Alice Smith" ||
			!id.InGroup("eng") || !id.InGroup("ops") || id.Role != RoleMember || id.Addr != "192.0.2.7" {
			t.Fatalf("identity = %+v", id)
		}
		// An IPv4-mapped IPv6 peer is the same address; IPv6 loopback is trusted.
		r.RemoteAddr = "[::ffff:10.9.9.9]:1"
		if _, err := p.Identify(r); err != nil {
			t.Fatalf("mapped address: %v", err)
		}
		r.RemoteAddr = "[::1]:1"
		if _, err := p.Identify(r); err != nil {
			t.Fatalf("::1: %v", err)
		}
	})

	t.Run("untrusted peer forges the header", func(t *testing.T) {
		before := len(rec.actions())
		for _, remote := range []string{"127.0.0.1:4444", "11.0.0.1:80", "[::2]:1", "garbage"} {
			r := httptest.NewRequest("GET", "/api/sessions", nil)
			r.RemoteAddr = remote
			r.Header.Set("X-Forwarded-Email", "admin@example.com")
			id, err := p.Identify(r)
			if !errors.Is(err, ErrUnauthenticated) || !errors.Is(err, ErrUntrustedProxy) || id != nil {
				t.Fatalf("%s: Identify = %+v, %v; want ErrUnauthenticated/ErrUntrustedProxy", remote, id, err)
			}
		}
		evs := rec.actions()[before:]
		if len(evs) != 4 {
			t.Fatalf("audit events = %+v, want 4 sign_in_refused", evs)
		}
		for _, ev := range evs {
			if ev.Action != ActionSignInFailed || ev.Outcome != OutcomeRefused || ev.Actor != "" {
				t.Fatalf("audit event = %+v", ev)
			}
		}
		if evs[0].Addr != "127.0.0.1" {
			t.Fatalf("audit addr = %q, want the forger's", evs[0].Addr)
		}
	})

	t.Run("missing header", func(t *testing.T) {
		for _, remote := range []string{"10.0.0.1:1", "127.0.0.1:1"} {
			r := httptest.NewRequest("GET", "/", nil)
			r.RemoteAddr = remote
			if id, err := p.Identify(r); !errors.Is(err, ErrUnauthenticated) || id != nil {
				t.Fatalf("%s without header: %+v, %v", remote, id, err)
			}
		}
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = "10.0.0.1:1"
		r.Header.Set("X-Forwarded-Email", "a\x01b@example.com")
		if _, err := p.Identify(r); !errors.Is(err, ErrUnauthenticated) {
			t.Fatalf("control characters accepted: %v", err)
		}
	})

	t.Run("resolve refuses", func(t *testing.T) {
		before := len(rec.actions())
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = "10.0.0.1:1"
		r.Header.Set("X-Forwarded-Email", "mallory@example.com")
		if _, err := p.Identify(r); !errors.Is(err, ErrUnauthenticated) {
			t.Fatalf("refused person: %v", err)
		}
		evs := rec.actions()[before:]
		if len(evs) != 1 || evs[0].Actor != "mallory@example.com" || evs[0].Action != ActionSignInFailed {
			t.Fatalf("audit = %+v", evs)
		}
	})

	t.Run("options", func(t *testing.T) {
		if _, err := NewProxyAuth(&ProxyOptions{Header: "X"}); err == nil {
			t.Fatal("no trusted proxies accepted")
		}
		if _, err := NewProxyAuth(&ProxyOptions{Trusted: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}}); err == nil {
			t.Fatal("no header accepted")
		}
	})
}
