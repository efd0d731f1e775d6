package team

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/tetherhq/tether/internal/jsapi"
)

// The team's key-value buckets.
const (
	// BucketACL maps a session's id to its ACL (JSON).
	BucketACL = "tether_team_acl"
	// BucketSpend maps a UTC day and a person to the USD their sessions
	// spent that day.
	BucketSpend = "tether_team_spend"
)

var (
	// ErrNoACL: no ACL is stored for the session (an unknown session, or
	// one started before teams were on).
	ErrNoACL = errors.New("team: no such session")
	// ErrConflict: a read-modify-write of the store kept losing to other
	// writers (StoreOptions.MaxRetries in a row).
	ErrConflict = errors.New("team: store update conflict")
)

// StoreOptions configures a Store. A nil *StoreOptions means defaults.
type StoreOptions struct {
	// Replicas of the buckets (0 = 1). Buckets that exist keep theirs.
	Replicas int
	// Memory keeps the buckets in memory rather than on disk.
	Memory bool
	// SpendHistory is how long a day's spend is kept after its last
	// change (0 = 400 days).
	SpendHistory time.Duration
	// MaxRetries bounds the compare-and-set attempts of one update
	// (0 = 64); past it the update fails with ErrConflict.
	MaxRetries int
	// Logger is for the store's own diagnostics; nil = silent.
	Logger *slog.Logger
}

// Store keeps the team's shared state in JetStream, so every serve and
// agent of a cluster reads the same: each session's ACL, and each
// person's spend per UTC day. Every method is safe for concurrent use,
// by many processes: updates are compare-and-set, retried.
type Store struct {
	acl, spend jetstream.KeyValue
	retries    int
	log        *slog.Logger
}

// OpenStore opens the team's buckets in js, creating those missing.
func OpenStore(ctx context.Context, js jetstream.JetStream, opts *StoreOptions) (*Store, error) {
	var o StoreOptions
	if opts != nil {
		o = *opts
	}
	if o.SpendHistory <= 0 {
		o.SpendHistory = 400 * 24 * time.Hour
	}
	if o.MaxRetries <= 0 {
		o.MaxRetries = 64
	}
	if o.Replicas <= 0 {
		o.Replicas = 1
	}
	storage := jetstream.FileStorage
	if o.Memory {
		storage = jetstream.MemoryStorage
	}
	s := &Store{retries: o.MaxRetries, log: o.Logger}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	for _, b := range []struct {
		dst *jetstream.KeyValue
		cfg jetstream.KeyValueConfig
	}{
		{&s.acl, jetstream.KeyValueConfig{Bucket: BucketACL, Description: "tether: sessions' owners and shares",
			Storage: storage, Replicas: o.Replicas, MaxValueSize: 1 << 20}},
		{&s.spend, jetstream.KeyValueConfig{Bucket: BucketSpend, Description: "tether: spend per person and UTC day",
			Storage: storage, Replicas: o.Replicas, TTL: o.SpendHistory, MaxValueSize: 1 << 10}},
	} {
		kv, err := jsapi.KeyValue(ctx, js, b.cfg)
		if err != nil {
			return nil, fmt.Errorf("team: bucket %s: %w", b.cfg.Bucket, err)
		}
		*b.dst = kv
	}
	return s, nil
}

// keyOf encodes any string as a valid KV key token: ids and subjects are
// whatever a provider or a client chose (dots, "@", spaces, "*", "").
// The "k" keeps the token non-empty.
func keyOf(s string) string { return "k" + base64.RawURLEncoding.EncodeToString([]byte(s)) }

func unkey(k string) (string, bool) {
	if !strings.HasPrefix(k, "k") {
		return "", false
	}
	b, err := base64.RawURLEncoding.DecodeString(k[1:])
	return string(b), err == nil
}

// ACL returns the session's ACL, or ErrNoACL.
func (s *Store) ACL(ctx context.Context, sessionID string) (*ACL, error) {
	a, _, err := s.getACL(ctx, sessionID)
	return a, err
}

func (s *Store) getACL(ctx context.Context, sessionID string) (*ACL, uint64, error) {
	e, err := s.acl.Get(ctx, keyOf(sessionID))
	if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
		return nil, 0, ErrNoACL
	}
	if err != nil {
		return nil, 0, fmt.Errorf("team: reading the ACL of %s: %w", sessionID, err)
	}
	var a ACL
	if err := json.Unmarshal(e.Value(), &a); err != nil {
		return nil, 0, fmt.Errorf("team: the ACL of %s is corrupt: %w", sessionID, err)
	}
	return &a, e.Revision(), nil
}

// PutACL stores a's ACL under a.Session, replacing any.
func (s *Store) PutACL(ctx context.Context, a *ACL) error {
	b, err := json.Marshal(a)
	if err != nil {
		return err
	}
	if _, err := s.acl.Put(ctx, keyOf(a.Session), b); err != nil {
		return fmt.Errorf("team: storing the ACL of %s: %w", a.Session, err)
	}
	return nil
}

// CreateACL stores a's ACL unless the session has one; then it returns
// the stored one and false.
func (s *Store) CreateACL(ctx context.Context, a *ACL) (*ACL, bool, error) {
	b, err := json.Marshal(a)
	if err != nil {
		return nil, false, err
	}
	for range s.retries {
		_, err := s.acl.Create(ctx, keyOf(a.Session), b)
		if err == nil {
			return a, true, nil
		}
		if !errors.Is(err, jetstream.ErrKeyExists) {
			return nil, false, fmt.Errorf("team: storing the ACL of %s: %w", a.Session, err)
		}
		old, _, err := s.getACL(ctx, a.Session)
		if errors.Is(err, ErrNoACL) {
			continue // deleted in between
		}
		return old, false, err
	}
	return nil, false, fmt.Errorf("%w: the ACL of %s", ErrConflict, a.Session)
}

// UpdateACL changes the session's ACL with f, compare-and-set: f may run
// more than once, on the latest ACL each time; its error aborts the
// update and is returned as it is. ErrNoACL when there is none.
func (s *Store) UpdateACL(ctx context.Context, sessionID string, f func(*ACL) error) (*ACL, error) {
	for range s.retries {
		a, rev, err := s.getACL(ctx, sessionID)
		if err != nil {
			return nil, err
		}
		if err := f(a); err != nil {
			return nil, err
		}
		a.Session = sessionID
		b, err := json.Marshal(a)
		if err != nil {
			return nil, err
		}
		_, err = s.acl.Update(ctx, keyOf(sessionID), b, rev)
		if err == nil {
			return a, nil
		}
		if !errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
			return nil, fmt.Errorf("team: storing the ACL of %s: %w", sessionID, err)
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
	return nil, fmt.Errorf("%w: the ACL of %s", ErrConflict, sessionID)
}

// DeleteACL forgets the session's ACL (none is fine).
func (s *Store) DeleteACL(ctx context.Context, sessionID string) error {
	if err := s.acl.Delete(ctx, keyOf(sessionID)); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
		return fmt.Errorf("team: deleting the ACL of %s: %w", sessionID, err)
	}
	return nil
}

// dayKey is the key prefix of a UTC day.
func dayKey(t time.Time) string { return t.UTC().Format("20060102") }

// AddSpend adds usd to what subject spent on today's UTC day (now).
// Concurrent adds, from any number of processes, all count.
func (s *Store) AddSpend(ctx context.Context, subject string, usd float64) error {
	return s.addSpendOn(ctx, time.Now(), subject, usd)
}

func (s *Store) addSpendOn(ctx context.Context, day time.Time, subject string, usd float64) error {
	if usd == 0 {
		return nil
	}
	if usd < 0 || math.IsNaN(usd) || math.IsInf(usd, 0) {
		return fmt.Errorf("team: spend of %v USD is not a cost", usd)
	}
	key := dayKey(day) + "." + keyOf(subject)
	for range s.retries {
		e, err := s.spend.Get(ctx, key)
		switch {
		case errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted):
			_, err = s.spend.Create(ctx, key, formatUSD(usd))
			if err == nil {
				return nil
			}
			if !errors.Is(err, jetstream.ErrKeyExists) {
				return fmt.Errorf("team: adding spend: %w", err)
			}
		case err != nil:
			return fmt.Errorf("team: adding spend: %w", err)
		default:
			old, perr := strconv.ParseFloat(string(e.Value()), 64)
			if perr != nil {
				s.log.Warn("team: corrupt spend value replaced", "key", key)
				old = 0
			}
			_, err = s.spend.Update(ctx, key, formatUSD(old+usd), e.Revision())
			if err == nil {
				return nil
			}
			if !errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
				return fmt.Errorf("team: adding spend: %w", err)
			}
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	return fmt.Errorf("%w: spend of %s", ErrConflict, subject)
}

func formatUSD(v float64) []byte { return strconv.AppendFloat(nil, v, 'g', -1, 64) }

// Spend returns what each person spent on day's UTC day, by subject.
func (s *Store) Spend(ctx context.Context, day time.Time) (map[string]float64, error) {
	prefix := dayKey(day) + "."
	w, err := s.spend.WatchFiltered(ctx, []string{prefix + "*"}, jetstream.IgnoreDeletes())
	if err != nil {
		return nil, fmt.Errorf("team: reading spend: %w", err)
	}
	defer w.Stop()
	out := map[string]float64{}
	for {
		select {
		case e := <-w.Updates():
			if e == nil { // every current value seen
				return out, nil
			}
			sub, ok := unkey(strings.TrimPrefix(e.Key(), prefix))
			if v, err := strconv.ParseFloat(string(e.Value()), 64); ok && err == nil {
				out[sub] = v
			}
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// SpendOf is what subject spent on day's UTC day.
func (s *Store) SpendOf(ctx context.Context, day time.Time, subject string) (float64, error) {
	e, err := s.spend.Get(ctx, dayKey(day)+"."+keyOf(subject))
	if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("team: reading spend: %w", err)
	}
	v, err := strconv.ParseFloat(string(e.Value()), 64)
	if err != nil {
		return 0, nil
	}
	return v, nil
}
