package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tetherhq/tether/internal/jsapi"
)

// Limits are the cluster's retention limits, applied when an Agent or a
// Client creates the streams and buckets (the first one to start does;
// later ones use what exists). A nil *Limits means defaults.
type Limits struct {
	// Replicas of each stream and bucket: 3 on a 3-node NATS cluster
	// (0 = 1).
	Replicas int
	// Memory keeps the streams in memory instead of on disk: faster, lost
	// when the NATS server restarts. For tests and benchmarks.
	Memory bool
	// EventsPerSession is how many events a session's subject keeps; a
	// subscriber that reconnects after older ones were dropped resyncs
	// from a snapshot (0 = 10000).
	EventsPerSession int64
	// EventsMaxAge drops events older than this (0 = 24 h).
	EventsMaxAge time.Duration
	// TranscriptMaxAge drops transcript chunks older than this: a session
	// idle for longer cannot fail over (0 = 7 days).
	TranscriptMaxAge time.Duration
	// Heartbeat is the agents' heartbeat; an agent's registry entry
	// expires 3 heartbeats after its last one. There is one per cluster:
	// the agents bucket's TTL (3 heartbeats) holds it. 0 means the
	// cluster's, or 1 s when this process creates the bucket; another
	// value than the cluster's is refused with a *HeartbeatError.
	Heartbeat time.Duration
	// StartAckWait is how long a start request taken by an agent that
	// then dies waits before another agent gets it (0 = 30 s).
	StartAckWait time.Duration
}

func (l *Limits) withDefaults() Limits {
	var c Limits
	if l != nil {
		c = *l
	}
	if c.Replicas <= 0 {
		c.Replicas = 1
	}
	if c.EventsPerSession <= 0 {
		c.EventsPerSession = 10000
	}
	if c.EventsMaxAge <= 0 {
		c.EventsMaxAge = 24 * time.Hour
	}
	if c.TranscriptMaxAge <= 0 {
		c.TranscriptMaxAge = 7 * 24 * time.Hour
	}
	if c.Heartbeat <= 0 {
		c.Heartbeat = time.Second
	}
	if c.StartAckWait <= 0 {
		c.StartAckWait = 30 * time.Second
	}
	return c
}

// bus is what Agent and Client share: the connection and the JetStream
// handles.
type bus struct {
	nc       *nats.Conn
	ownConn  bool
	js       jetstream.JetStream
	start    jetstream.Stream
	events   jetstream.Stream
	tx       jetstream.Stream
	sessions jetstream.KeyValue
	agents   jetstream.KeyValue
	ttl      time.Duration // the agents bucket's TTL: 3 heartbeats
	limits   Limits
	// recordWorktree, when set (an agent's), says whether a session's
	// worktree may be written into its registry entry now
	// (encodeSession); nil: as the record read had it (a client's).
	recordWorktree func() bool
}

// dial connects to NATS unless a connection is given. The options pass
// auth (nats.UserInfo, nats.Nkey, nats.UserCredentials, nats.Token) and TLS
// (nats.Secure, nats.RootCAs, nats.ClientCert) through; reconnection is
// unlimited by default so that a restarted NATS server is found again.
// Connect dials NATS as an Agent or Client does (reconnecting forever,
// asynchronous errors not printed), for a program that shares the
// connection with them (AgentOptions.Conn) and with other users of the
// cluster's JetStream: a team's store and audit log.
func Connect(url, name string, opts ...nats.Option) (*nats.Conn, error) {
	nc, _, err := dial(nil, url, name, nil, nil, opts)
	return nc, err
}

// dial's connection pings its NATS server every heartbeat (the limits',
// else the default 1 s) and drops it after two pings unanswered, or a
// write not taken within two heartbeats, to reconnect to another node of
// the cluster: a server that is frozen (a stopped VM) or cut off would
// otherwise hold the process, its heartbeats and its sessions' commands,
// for the library's default of minutes, while the rest of the cluster
// judges it gone after 6 heartbeats. With
// a logger it says when the connection is lost (Warn) and back (Info):
// an operator reading an agent's log sees the outage its sessions lived
// through.
func dial(nc *nats.Conn, url, name string, limits *Limits, log *slog.Logger, opts []nats.Option) (*nats.Conn, bool, error) {
	if nc != nil {
		return nc, false, nil
	}
	if url == "" {
		url = nats.DefaultURL
	}
	hb := limits.withDefaults().Heartbeat
	all := append([]nats.Option{
		nats.Name(name),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(250 * time.Millisecond),
		nats.ReconnectJitter(100*time.Millisecond, time.Second),
		nats.PingInterval(hb),
		nats.MaxPingsOutstanding(2),
		// A write the server has not taken within two heartbeats drops
		// the connection too: while a write waits (the sockets full, the
		// server frozen or cut off) the pings above cannot be counted, and
		// the library's own limit is a minute.
		nats.FlusherTimeout(2 * hb),
		nats.ReconnectOnFlusherError(),
		// The library's default prints asynchronous errors (a consumer
		// gone while the server restarts) to stderr; they are expected
		// and handled where they matter.
		nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}),
	}, opts...)
	if log != nil {
		all = append([]nats.Option{
			nats.DisconnectErrHandler(func(c *nats.Conn, err error) {
				if !c.IsClosed() {
					log.Warn("NATS connection lost; reconnecting", "server", c.ConnectedUrlRedacted(), "err", err)
				}
			}),
			nats.ReconnectHandler(func(c *nats.Conn) {
				log.Info("NATS connection back", "server", c.ConnectedUrlRedacted())
			}),
		}, all...) // the caller's own handlers, after, win
	}
	c, err := nats.Connect(url, all...)
	if err != nil {
		return nil, false, fmt.Errorf("cluster: connecting to NATS: %w", err)
	}
	return c, true, nil
}

// connect is what an Agent and a Client start with: dial (or take conn),
// then open. A connection it dialed itself is closed again when open fails.
func connect(ctx context.Context, conn *nats.Conn, url, name string, limits *Limits, log *slog.Logger, opts []nats.Option) (*bus, error) {
	nc, own, err := dial(conn, url, name, limits, log, opts)
	if err != nil {
		return nil, err
	}
	b, err := open(ctx, nc, own, limits)
	if err != nil && own {
		nc.Close()
	}
	return b, err
}

// open sets up the streams and buckets (creating the missing ones) on nc.
func open(ctx context.Context, nc *nats.Conn, own bool, limits *Limits) (*bus, error) {
	l := limits.withDefaults()
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	b := &bus{nc: nc, ownConn: own, js: js, limits: l}
	storage := jetstream.FileStorage
	if l.Memory {
		storage = jetstream.MemoryStorage
	}
	maxMsg := int32(nc.MaxPayload())
	streams := []struct {
		dst *jetstream.Stream
		cfg jetstream.StreamConfig
	}{
		{&b.start, jetstream.StreamConfig{
			Name: StreamStart, Subjects: []string{subjectStart}, Retention: jetstream.WorkQueuePolicy,
			Storage: storage, Replicas: l.Replicas, MaxAge: time.Hour, MaxMsgSize: MaxStartSize,
			Description: "tether: start requests, taken by agents with room",
		}},
		{&b.events, jetstream.StreamConfig{
			Name: StreamEvents, Subjects: []string{subjectEvents + ">", subjectGone + ">"}, Storage: storage, Replicas: l.Replicas,
			MaxMsgsPerSubject: l.EventsPerSession, MaxAge: l.EventsMaxAge, MaxMsgSize: maxMsg,
			Duplicates: 2 * time.Minute, RePublish: livePublish(),
			Description: "tether: session events, one subject per session",
		}},
		{&b.tx, jetstream.StreamConfig{
			Name: StreamTranscripts, Subjects: []string{subjectTranscript + ">"}, Storage: storage, Replicas: l.Replicas,
			MaxAge: l.TranscriptMaxAge, MaxMsgSize: maxMsg, Duplicates: 2 * time.Minute,
			Description: "tether: CLI transcripts mirrored for failover",
		}},
	}
	for _, s := range streams {
		st, _, err := jsapi.Stream(ctx, js, s.cfg)
		update := func(cfg jetstream.StreamConfig) (jetstream.Stream, error) { return jsapi.UpdateStream(ctx, js, cfg) }
		if err == nil {
			st, err = addSubjects(st, s.cfg.Subjects, update)
		}
		if err == nil && s.cfg.RePublish != nil {
			st = addRePublish(st, s.cfg.RePublish, update)
		}
		if err != nil {
			return nil, fmt.Errorf("cluster: stream %s: %w", s.cfg.Name, err)
		}
		*s.dst = st
	}
	kvs := []struct {
		dst *jetstream.KeyValue
		cfg jetstream.KeyValueConfig
	}{
		{&b.sessions, jetstream.KeyValueConfig{Bucket: BucketSessions, Storage: storage, Replicas: l.Replicas,
			MaxValueSize: MaxRecordSize, TTL: l.TranscriptMaxAge, Description: "tether: sessions"}},
		{&b.agents, jetstream.KeyValueConfig{Bucket: BucketAgents, Storage: storage, Replicas: l.Replicas,
			MaxValueSize: MaxRecordSize, TTL: 3 * l.Heartbeat, Description: "tether: live agents"}},
	}
	for _, k := range kvs {
		kv, err := jsapi.KeyValue(ctx, js, k.cfg)
		if err != nil {
			return nil, fmt.Errorf("cluster: bucket %s: %w", k.cfg.Bucket, err)
		}
		*k.dst = kv
	}
	st, err := jsapi.SetUp(ctx, js, jsapi.StreamInfo+"KV_"+BucketAgents, b.agents.Status)
	if err != nil {
		return nil, fmt.Errorf("cluster: bucket %s: %w", BucketAgents, err)
	}
	b.ttl = st.TTL()
	if b.ttl <= 0 {
		b.ttl = 3 * l.Heartbeat
	}
	if limits != nil && limits.Heartbeat > 0 && 3*limits.Heartbeat != b.ttl {
		return nil, &HeartbeatError{Asked: limits.Heartbeat, Cluster: b.ttl / 3}
	}
	return b, nil
}

// ErrHeartbeatMismatch: Limits.Heartbeat differs from the cluster's.
var ErrHeartbeatMismatch = errors.New("cluster: heartbeat differs from the cluster's")

// HeartbeatError is a heartbeat asked for (Limits.Heartbeat, tether's
// --heartbeat) that is not the cluster's: the agents' liveness bound is
// one for the whole cluster (the agents bucket's TTL, 3 heartbeats), so
// an agent or client that assumed another would declare agents dead
// too early or too late.
type HeartbeatError struct {
	Asked, Cluster time.Duration
}

func (e *HeartbeatError) Error() string {
	return fmt.Sprintf("cluster: heartbeat %v asked, but the cluster's is %v (bucket %s's TTL is 3 heartbeats): leave it unset to use the cluster's, or recreate the bucket to change it for every agent",
		e.Asked, e.Cluster, BucketAgents)
}

func (e *HeartbeatError) Unwrap() error { return ErrHeartbeatMismatch }

// addSubjects adds the subjects a stream created by an earlier version
// lacks (the events stream's marker subject), keeping its other settings.
func addSubjects(st jetstream.Stream, want []string, update func(jetstream.StreamConfig) (jetstream.Stream, error)) (jetstream.Stream, error) {
	cfg := st.CachedInfo().Config
	missing := false
	for _, w := range want {
		if !slices.Contains(cfg.Subjects, w) {
			cfg.Subjects = append(cfg.Subjects, w)
			missing = true
		}
	}
	if !missing {
		return st, nil
	}
	return update(cfg)
}

// addRePublish has a stream created by an earlier version republish its
// messages (live.go). It is best effort: a user without the right to
// update streams (serve's, in the documented permissions) leaves it to
// the next agent, and readers follow the stream by consumers meanwhile.
func addRePublish(st jetstream.Stream, want *jetstream.RePublish, update func(jetstream.StreamConfig) (jetstream.Stream, error)) jetstream.Stream {
	cfg := st.CachedInfo().Config
	if cfg.RePublish != nil {
		return st // ours, or the operator's own: left as it is
	}
	cfg.RePublish = want
	if up, err := update(cfg); err == nil {
		return up
	}
	return st
}

func (b *bus) close() {
	if b.ownConn {
		b.nc.Close()
	}
}

// agentAlive reports whether the agent's registry entry is there and
// younger than the bucket's TTL (the server drops it then; the age check
// makes the bound exact whatever the server's expiry timer granularity).
func (b *bus) agentAlive(ctx context.Context, id string) (bool, error) {
	e, err := b.agents.Get(ctx, id)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return time.Since(e.Created()) < b.ttl, nil
}

func hostname() string {
	h, err := os.Hostname()
	if err != nil {
		return "agent"
	}
	return h
}

// entries returns the latest value of every key of a bucket. It reads the
// bucket's stream directly (its subjects, then the last message of each)
// rather than with a KV watcher, whose "initial values done" marker can
// come early while keys are being written.
func (b *bus) entries(ctx context.Context, kv jetstream.KeyValue) (map[string]jetstream.KeyValueEntry, error) {
	st, err := b.js.Stream(ctx, "KV_"+kv.Bucket())
	if err != nil {
		return nil, err
	}
	prefix := "$KV." + kv.Bucket() + "."
	info, err := st.Info(ctx, jetstream.WithSubjectFilter(prefix+">"))
	if err != nil {
		return nil, err
	}
	out := make(map[string]jetstream.KeyValueEntry, len(info.State.Subjects))
	for subj := range info.State.Subjects {
		key := strings.TrimPrefix(subj, prefix)
		e, err := kv.Get(ctx, key)
		if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out[key] = e
	}
	return out, nil
}

// record reads a session's registry entry and its revision.
func (b *bus) record(ctx context.Context, id string) (SessionInfo, uint64, error) {
	var r SessionInfo
	if !validID(id) {
		return r, 0, &CommandError{Code: codeNoSession, Message: "bad session id"}
	}
	// The bucket's node lost or its leader being elected: a read the
	// next node answers in a moment is not an error to show.
	e, err := untilAnswered(ctx, b, nil, func(ctx context.Context) (jetstream.KeyValueEntry, error) { return b.sessions.Get(ctx, id) })
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return r, 0, &CommandError{Code: codeNoSession, Message: id}
	}
	if err != nil {
		return r, 0, err
	}
	if err := decode(BucketSessions+"."+id, e.Value(), MaxRecordSize, &r); err != nil {
		return r, 0, err
	}
	return r, e.Revision(), nil
}

// untilAnswered calls f until it returns something other than no answer
// (unanswered: a result, a refusal, a permission the user lacks), or ctx
// ends, waiting longer each time up to a second; each call gets a ctx of
// its own, bounded by jsapi.Attempt. log (nil: silent) hears of each try
// again.
func untilAnswered[T any](ctx context.Context, b *bus, log *slog.Logger, f func(context.Context) (T, error)) (T, error) {
	return jsapi.Again(ctx, b.nc, log, unanswered, f)
}
