package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// kvCache is a client's copy of a registry bucket, kept by a KV watch:
// listing sessions and agents reads it instead of asking NATS for every
// key. Until the watch has delivered the bucket's current values (and
// whenever it must start again) it is not synced, and readers go to
// NATS directly.
type kvCache struct {
	mu      sync.Mutex
	entries map[string]cachedEntry
	synced  bool
}

type cachedEntry struct {
	value   []byte
	created time.Time
	rev     uint64
	// sess is value decoded, for the sessions bucket: set by the first
	// reader of this revision (sessionOf), as a serve lists the sessions
	// far more often than they change (its hub, every client's list).
	sess *SessionInfo
}

// memo keeps s as the decoded value of key's entry e, unless the entry
// changed meanwhile. An entry a start's reply put in (revision 0) is not
// memoized: the watch replaces it.
func (k *kvCache) memo(key string, e cachedEntry, s *SessionInfo) {
	if e.rev == 0 {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if cur, ok := k.entries[key]; ok && cur.rev == e.rev && cur.sess == nil {
		cur.sess = s
		k.entries[key] = cur
	}
}

// sessionOf is a sessions bucket entry's SessionInfo, decoded once per
// revision; each caller gets its own copy.
func (c *Client) sessionOf(key string, e cachedEntry) (SessionInfo, error) {
	if e.sess != nil {
		return e.sess.clone(), nil
	}
	var r SessionInfo
	if err := decode(BucketSessions+"."+key, e.value, MaxRecordSize, &r); err != nil {
		return r, err
	}
	m := r.clone()
	c.sessCache.memo(key, e, &m)
	return r, nil
}

// snapshot returns a copy of the entries, and false when not synced.
func (k *kvCache) snapshot() (map[string]cachedEntry, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if !k.synced {
		return nil, false
	}
	out := make(map[string]cachedEntry, len(k.entries))
	for key, e := range k.entries {
		out[key] = e
	}
	return out, true
}

// get returns one entry, and false when not synced or not there.
func (k *kvCache) get(key string) (cachedEntry, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	e, ok := k.entries[key]
	return e, ok && k.synced
}

// put records an entry unless the cache holds a newer revision.
func (k *kvCache) put(key string, e cachedEntry) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.entries == nil {
		k.entries = map[string]cachedEntry{}
	}
	if old, ok := k.entries[key]; ok && old.rev > e.rev {
		return
	}
	k.entries[key] = e
}

func (k *kvCache) remove(key string, rev uint64) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if old, ok := k.entries[key]; ok && old.rev > rev {
		return
	}
	delete(k.entries, key)
}

func (k *kvCache) setSynced(v bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.synced = v
	if !v {
		k.entries = nil
	}
}

// follow keeps cache in step with a bucket until the client closes. A
// watch that ends (its connection closed, the bucket recreated) is
// started again after a pause; the cache is unsynced in between.
func (c *Client) follow(kv jetstream.KeyValue, cache *kvCache) {
	defer c.wg.Done()
	for c.ctx.Err() == nil {
		c.watchOnce(kv, cache)
		cache.setSynced(false)
		select {
		case <-c.ctx.Done():
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func (c *Client) watchOnce(kv jetstream.KeyValue, cache *kvCache) {
	w, err := kv.WatchAll(c.ctx)
	if err != nil {
		if c.ctx.Err() == nil {
			c.log.Debug("registry watch", "bucket", kv.Bucket(), "err", err)
		}
		return
	}
	defer w.Stop()
	fresh := map[string]cachedEntry{}
	initial := true
	for {
		select {
		case <-c.ctx.Done():
			return
		case e, ok := <-w.Updates():
			if !ok {
				return
			}
			if e == nil { // the current values are all in
				initial = false
				cache.mu.Lock()
				cache.entries, cache.synced = fresh, true
				cache.mu.Unlock()
				continue
			}
			ce := cachedEntry{value: e.Value(), created: e.Created(), rev: e.Revision()}
			switch {
			case initial && e.Operation() == jetstream.KeyValuePut:
				fresh[e.Key()] = ce
			case initial:
				delete(fresh, e.Key())
			case e.Operation() == jetstream.KeyValuePut:
				cache.put(e.Key(), ce)
			default:
				cache.remove(e.Key(), e.Revision())
				if kv.Bucket() == BucketAgents {
					c.judge.forget(e.Key()) // it left the registry itself
				}
			}
		}
	}
}

// noteSession puts a session the client just learnt of (a start's reply)
// into the cache at once, so that a list right after the start has it,
// whatever the watch's delay.
func (c *Client) noteSession(r SessionInfo) {
	data, err := json.Marshal(r)
	if err != nil {
		return
	}
	c.sessCache.mu.Lock()
	defer c.sessCache.mu.Unlock()
	if !c.sessCache.synced {
		return
	}
	if _, ok := c.sessCache.entries[r.ID]; !ok {
		c.sessCache.entries[r.ID] = cachedEntry{value: data, created: time.Now()}
	}
}

// registry returns the latest value of every key of a registry bucket:
// from the client's watch when it is synced, else from NATS. With NATS
// out of reach it fails with ErrUnavailable rather than show a list that
// may be stale.
func (c *Client) registry(ctx context.Context, kv jetstream.KeyValue, cache *kvCache) (map[string]cachedEntry, error) {
	if !c.b.nc.IsConnected() {
		return nil, fmt.Errorf("%w: not connected (%s)", ErrUnavailable, c.b.nc.Status())
	}
	if es, ok := cache.snapshot(); ok {
		return es, nil
	}
	es, err := c.b.entries(ctx, kv)
	if err != nil {
		return nil, c.unavailable(err)
	}
	out := make(map[string]cachedEntry, len(es))
	for k, e := range es {
		out[k] = cachedEntry{value: e.Value(), created: e.Created(), rev: e.Revision()}
	}
	return out, nil
}
