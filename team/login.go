package team

import (
	"container/heap"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/tetherhq/tether/internal/jsapi"
)

// LoginStore keeps the server side of sign-ins: the login id in a
// person's tether_session cookie maps to their identity until it expires
// or is revoked. Logout and an admin's revocation work because the cookie
// alone proves nothing.
//
// Ids are 32 random bytes (base64url in the cookie); stores keep only
// their SHA-256, so a dump of the store gives no usable cookies.
type LoginStore interface {
	// Create records a login for id valid for ttl and returns its id.
	Create(ctx context.Context, id *Identity, ttl time.Duration) (string, error)
	// Get returns the login's identity and expiry, or an error matching
	// ErrUnauthenticated (ErrLoginUnknown) when the id is malformed,
	// unknown, revoked or expired.
	Get(ctx context.Context, id string) (*Identity, time.Time, error)
	// Revoke ends the login; revoking an unknown id is not an error.
	Revoke(ctx context.Context, id string) error
}

// ErrLoginUnknown: a login id that is malformed, unknown, revoked or
// expired. It matches ErrUnauthenticated.
var ErrLoginUnknown = fmt.Errorf("%w: unknown or expired login", ErrUnauthenticated)

// loginIDBytes is the entropy of a login id.
const loginIDBytes = 32

func newLoginID() (string, error) {
	b := make([]byte, loginIDBytes)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// loginKey is what a store keeps for id: hex SHA-256 of its bytes, or ""
// when id is not a well-formed login id.
func loginKey(id string) string {
	if len(id) != base64.RawURLEncoding.EncodedLen(loginIDBytes) {
		return ""
	}
	b, err := base64.RawURLEncoding.DecodeString(id)
	if err != nil || len(b) != loginIDBytes {
		return ""
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func copyIdentity(id *Identity) *Identity {
	c := *id
	c.Groups = slices.Clone(id.Groups)
	return &c
}

// DefaultMaxMemoryLogins bounds NewMemoryLoginStore.
const DefaultMaxMemoryLogins = 10000

// MemoryLoginStore is a LoginStore in this process's memory: logins end
// when the process does. It holds at most Max logins. Policy when full:
// expired logins are dropped first; if none has expired, the login that
// expires soonest (the oldest, with one TTL) is evicted, so signing in
// always works and the cost of a flood of sign-ins (each needing the
// provider's password) falls on the oldest login, which signs in again.
type MemoryLoginStore struct {
	max int
	now func() time.Time

	mu     sync.Mutex
	logins map[string]*memLogin // by loginKey
	byExp  loginHeap            // the same logins, soonest expiry first
}

type memLogin struct {
	key     string
	id      *Identity
	expires time.Time
	index   int // in byExp
}

// NewMemoryLoginStore returns an empty store bounded by
// DefaultMaxMemoryLogins.
func NewMemoryLoginStore() *MemoryLoginStore {
	return newMemoryLoginStore(DefaultMaxMemoryLogins, time.Now)
}

func newMemoryLoginStore(max int, now func() time.Time) *MemoryLoginStore {
	return &MemoryLoginStore{max: max, now: now, logins: map[string]*memLogin{}}
}

// Create implements LoginStore.
func (s *MemoryLoginStore) Create(ctx context.Context, id *Identity, ttl time.Duration) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	if id == nil || ttl <= 0 {
		return "", errors.New("team: login needs an identity and a positive ttl")
	}
	lid, err := newLoginID()
	if err != nil {
		return "", err
	}
	now := s.now()
	l := &memLogin{key: loginKey(lid), id: copyIdentity(id), expires: now.Add(ttl)}
	s.mu.Lock()
	defer s.mu.Unlock()
	for len(s.byExp) > 0 && (len(s.byExp) >= s.max || !s.byExp[0].expires.After(now)) {
		old := heap.Pop(&s.byExp).(*memLogin)
		delete(s.logins, old.key)
	}
	s.logins[l.key] = l
	heap.Push(&s.byExp, l)
	return lid, nil
}

// Get implements LoginStore.
func (s *MemoryLoginStore) Get(ctx context.Context, id string) (*Identity, time.Time, error) {
	if err := ctx.Err(); err != nil {
		return nil, time.Time{}, err
	}
	k := loginKey(id)
	s.mu.Lock()
	defer s.mu.Unlock()
	l, ok := s.logins[k]
	if !ok || !l.expires.After(s.now()) {
		return nil, time.Time{}, ErrLoginUnknown
	}
	return copyIdentity(l.id), l.expires, nil
}

// Revoke implements LoginStore.
func (s *MemoryLoginStore) Revoke(ctx context.Context, id string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	k := loginKey(id)
	s.mu.Lock()
	defer s.mu.Unlock()
	if l, ok := s.logins[k]; ok {
		heap.Remove(&s.byExp, l.index)
		delete(s.logins, k)
	}
	return nil
}

// Len is the number of logins held (expired ones included until they
// are dropped).
func (s *MemoryLoginStore) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.logins)
}

type loginHeap []*memLogin

func (h loginHeap) Len() int           { return len(h) }
func (h loginHeap) Less(i, j int) bool { return h[i].expires.Before(h[j].expires) }
func (h loginHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *loginHeap) Push(x any) {
	l := x.(*memLogin)
	l.index = len(*h)
	*h = append(*h, l)
}
func (h *loginHeap) Pop() any {
	old := *h
	l := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return l
}

// BucketLogins is the KV bucket of NewKVLoginStore.
const BucketLogins = "tether_team_logins"

// KVLoginStore is a LoginStore in a JetStream KV bucket (BucketLogins):
// logins survive a restart of serve and are shared by every serve of a
// cluster. Each key is the SHA-256 of a login id and expires with the
// login (a per-key TTL, nats-server 2.11 or newer); the expiry is also
// kept in the value and checked on Get, so a login never outlives its
// TTL even before the server removes it.
type KVLoginStore struct {
	kv  jetstream.KeyValue
	now func() time.Time
}

// kvLoginTTLMarker is how long the bucket keeps the marker of a login
// removed by its TTL (required by per-key TTLs).
const kvLoginTTLMarker = time.Minute

// NewKVLoginStore opens (creating when missing) the bucket BucketLogins.
func NewKVLoginStore(ctx context.Context, js jetstream.JetStream) (*KVLoginStore, error) {
	kv, err := jsapi.KeyValue(ctx, js, jetstream.KeyValueConfig{
		Bucket:         BucketLogins,
		Description:    "tether: sign-ins (keys are SHA-256 of login ids)",
		History:        1,
		MaxValueSize:   64 << 10,
		LimitMarkerTTL: kvLoginTTLMarker,
	})
	if err != nil {
		return nil, fmt.Errorf("team: bucket %s: %w", BucketLogins, err)
	}
	return &KVLoginStore{kv: kv, now: time.Now}, nil
}

type kvLogin struct {
	Identity *Identity `json:"identity"`
	Expires  time.Time `json:"expires"`
}

// Create implements LoginStore.
func (s *KVLoginStore) Create(ctx context.Context, id *Identity, ttl time.Duration) (string, error) {
	if id == nil || ttl <= 0 {
		return "", errors.New("team: login needs an identity and a positive ttl")
	}
	lid, err := newLoginID()
	if err != nil {
		return "", err
	}
	v, err := json.Marshal(kvLogin{Identity: id, Expires: s.now().Add(ttl).UTC()})
	if err != nil {
		return "", err
	}
	// Per-key TTLs count whole seconds: round up so the record outlives
	// the login; Get checks the exact expiry.
	keyTTL := ttl.Truncate(time.Second) + time.Second
	if _, err := s.kv.Create(ctx, loginKey(lid), v, jetstream.KeyTTL(keyTTL)); err != nil {
		return "", fmt.Errorf("team: store login: %w", err)
	}
	return lid, nil
}

// Get implements LoginStore.
func (s *KVLoginStore) Get(ctx context.Context, id string) (*Identity, time.Time, error) {
	k := loginKey(id)
	if k == "" {
		return nil, time.Time{}, ErrLoginUnknown
	}
	e, err := s.kv.Get(ctx, k)
	if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
		return nil, time.Time{}, ErrLoginUnknown
	}
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("team: read login: %w", err)
	}
	var l kvLogin
	if err := json.Unmarshal(e.Value(), &l); err != nil || l.Identity == nil {
		return nil, time.Time{}, ErrLoginUnknown
	}
	if !l.Expires.After(s.now()) {
		return nil, time.Time{}, ErrLoginUnknown
	}
	return l.Identity, l.Expires, nil
}

// Revoke implements LoginStore.
func (s *KVLoginStore) Revoke(ctx context.Context, id string) error {
	k := loginKey(id)
	if k == "" {
		return nil
	}
	if err := s.kv.Purge(ctx, k); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
		return fmt.Errorf("team: revoke login: %w", err)
	}
	return nil
}
