package team

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tetherhq/tether/internal/jsapi"
)

// The audit log's stream and subjects. Each event is published on
// AuditSubjectPrefix + its Action, so a query for one action reads only
// that subject.
const (
	StreamAudit        = "TETHER_AUDIT"
	AuditSubjectPrefix = "tether.v1.audit."
)

// DefaultAuditRetention is how long a new audit stream keeps events when
// AuditOptions.Retention is 0: 90 days.
const DefaultAuditRetention = 90 * 24 * time.Hour

// DefaultAuditMaxBytes bounds a new audit stream's size when
// AuditOptions.MaxBytes is 0: 4 GiB, some ten million events. Past it
// the oldest events go first, as they do past the retention: a full
// disk would stop the log (and the JetStream server) altogether.
const DefaultAuditMaxBytes = 4 << 30

// Bounds of an event's fields. Record truncates a longer field (on a
// UTF-8 boundary, ending it with "…") rather than refusing the event: an
// audit log that drops the record of an action because its text was
// long would hide exactly what it is for. With every field bounded, an
// event's JSON is at most maxAuditMsg bytes, the stream's MaxMsgSize.
const (
	// MaxAuditDetail bounds Detail (a refusal's message, a prompt when
	// the configuration records content): 4 KiB.
	MaxAuditDetail = 4 << 10
	// MaxAuditField bounds every other text field (Actor, ActorName,
	// Addr, Session, Tool, InputDigest, Rule): 256 bytes.
	MaxAuditField = 256
	// maxAuditMsg is the stream's MaxMsgSize: Detail and eight other
	// fields, each escaped by JSON at worst 6 times (\u00XX), fit.
	maxAuditMsg = 64 << 10
)

// auditBatch is how many messages a query fetches at once (so holds at
// most, each at most maxAuditMsg), auditFetchWait how long one fetch
// waits for the server.
const (
	auditBatch     = 100
	auditFetchWait = 5 * time.Second
)

// auditDuplicates is the stream's dedupe window: a Record retried with
// the same message id within it is stored once.
const auditDuplicates = 2 * time.Minute

// auditActions are the valid Action values, in a stable order.
var auditActions = []string{
	ActionSignIn, ActionSignOut, ActionSignInFailed, ActionStart, ActionShare, ActionClose,
	ActionPrompt, ActionApproval, ActionInterrupt, ActionMode, ActionModel, ActionBypass, ActionRefused, ActionRevert,
}

// AuditActions returns the valid AuditEvent.Action values (the Action
// constants), for flags and forms that offer them.
func AuditActions() []string { return slices.Clone(auditActions) }

var (
	// ErrAuditInvalid: an audit event, query or options Record, Query or
	// OpenAudit refuse (an unknown action, a negative limit). The error is
	// an *AuditInputError.
	ErrAuditInvalid = errors.New("team: invalid audit input")
	// ErrAuditStream: the audit stream is missing (for a ReadOnly Audit),
	// or exists and cannot be made append-only.
	ErrAuditStream = errors.New("team: audit stream")
)

// AuditInputError says what of an event, query or options is refused.
type AuditInputError struct {
	What    string // "event", "query" or "options"
	Field   string // e.g. "action"
	Message string
}

func (e *AuditInputError) Error() string {
	return fmt.Sprintf("team: audit %s: %s: %s", e.What, e.Field, e.Message)
}

// Unwrap returns ErrAuditInvalid.
func (e *AuditInputError) Unwrap() error { return ErrAuditInvalid }

// AuditOptions configure OpenAudit. A nil *AuditOptions means defaults.
type AuditOptions struct {
	// Retention is how long events are kept (the stream's MaxAge). 0
	// means DefaultAuditRetention for a new stream and leaves an existing
	// stream's retention as it is, so that a process started without the
	// setting never shortens the log; a value > 0 is applied to an
	// existing stream too.
	Retention time.Duration
	// MaxBytes bounds the stream's size: past it the oldest events are
	// dropped. 0 means DefaultAuditMaxBytes for a new stream and leaves an
	// existing stream's bound as it is; a value > 0 is applied to an
	// existing stream too.
	MaxBytes int64
	// Replicas of the stream when this process creates it (0 = 1; 3 on a
	// 3-node NATS cluster). An existing stream keeps its replicas.
	Replicas int
	// ReadOnly opens an existing stream for queries only (tether audit):
	// nothing is created or changed, a missing stream is an error
	// matching ErrAuditStream, and Record is refused.
	ReadOnly bool
	// Logger reports skipped unreadable messages (nil: silent).
	Logger *slog.Logger
}

// Audit is the append-only audit log in JetStream: the stream
// StreamAudit, subjects AuditSubjectPrefix + action, messages that can
// be neither deleted nor purged (DenyDelete, DenyPurge, no roll-ups),
// aged out after the retention. It implements Recorder. Its methods are
// safe for concurrent use. It owns no goroutine and no connection: the
// JetStream handle stays the caller's.
//
// What append-only holds against: nobody, through JetStream's message
// API, removes or rewrites one event. A holder of NATS credentials that
// may use the JetStream API on the account can still delete the whole
// stream; keep the audit on an account whose other users may only
// publish to and read from it.
type Audit struct {
	js       jetstream.JetStream
	stream   jetstream.Stream
	readOnly bool
	logger   *slog.Logger
	skipped  atomic.Int64
}

// OpenAudit opens the audit stream on js, creating it when missing. An
// existing stream is made append-only if it is not (DenyDelete and
// DenyPurge can only be turned on, never off), and given opts.Retention
// when that is set; if the server will not make it append-only, the
// error matches ErrAuditStream.
func OpenAudit(ctx context.Context, js jetstream.JetStream, opts *AuditOptions) (*Audit, error) {
	var o AuditOptions
	if opts != nil {
		o = *opts
	}
	if o.MaxBytes < 0 {
		return nil, &AuditInputError{What: "options", Field: "max_bytes", Message: fmt.Sprintf("%d is negative", o.MaxBytes)}
	}
	if o.Retention < 0 {
		return nil, &AuditInputError{What: "options", Field: "retention", Message: fmt.Sprintf("%v is negative", o.Retention)}
	}
	if o.Replicas < 0 || o.Replicas > 5 {
		return nil, &AuditInputError{What: "options", Field: "replicas", Message: fmt.Sprintf("%d is not between 1 and 5", o.Replicas)}
	}
	if o.Replicas == 0 {
		o.Replicas = 1
	}
	logger := o.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	a := &Audit{js: js, readOnly: o.ReadOnly, logger: logger}
	if o.ReadOnly {
		st, err := jsapi.SetUp(ctx, js, jsapi.StreamInfo+StreamAudit, func(ctx context.Context) (jetstream.Stream, error) { return js.Stream(ctx, StreamAudit) })
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			return nil, fmt.Errorf("%w %s: not found (nothing recorded on this server yet?): %w", ErrAuditStream, StreamAudit, err)
		}
		if err != nil {
			return nil, fmt.Errorf("team: audit stream %s: %w", StreamAudit, err)
		}
		a.stream = st
		return a, nil
	}
	retention := o.Retention
	if retention == 0 {
		retention = DefaultAuditRetention
	}
	maxBytes := o.MaxBytes
	if maxBytes == 0 {
		maxBytes = DefaultAuditMaxBytes
	}
	cfg := jetstream.StreamConfig{
		MaxBytes:    maxBytes,
		Discard:     jetstream.DiscardOld,
		Name:        StreamAudit,
		Description: "tether: the audit log of teams, append-only",
		Subjects:    []string{AuditSubjectPrefix + ">"},
		Storage:     jetstream.FileStorage,
		Replicas:    o.Replicas,
		MaxAge:      retention,
		MaxMsgSize:  maxAuditMsg,
		Duplicates:  auditDuplicates,
		DenyDelete:  true,
		DenyPurge:   true,
	}
	st, created, err := jsapi.Stream(ctx, js, cfg)
	if err == nil && !created {
		st, err = a.adopt(ctx, st, o.Retention, o.MaxBytes)
	}
	if err != nil {
		if errors.Is(err, ErrAuditStream) {
			return nil, err
		}
		return nil, fmt.Errorf("team: audit stream %s: %w", StreamAudit, err)
	}
	a.stream = st
	return a, nil
}

// adopt takes an existing stream: append-only it must be, retention and
// size bound (if > 0) it gets. Its other settings (replicas, storage,
// limits an operator chose) stay.
func (a *Audit) adopt(ctx context.Context, st jetstream.Stream, retention time.Duration, maxBytes int64) (jetstream.Stream, error) {
	old := st.CachedInfo().Config
	cfg := old
	cfg.DenyDelete, cfg.DenyPurge, cfg.AllowRollup = true, true, false
	if retention > 0 {
		cfg.MaxAge = retention
	}
	if maxBytes > 0 {
		cfg.MaxBytes, cfg.Discard = maxBytes, jetstream.DiscardOld
	}
	if !slices.Contains(cfg.Subjects, AuditSubjectPrefix+">") {
		cfg.Subjects = append(slices.Clone(cfg.Subjects), AuditSubjectPrefix+">")
	}
	if cfg.MaxAge != old.MaxAge || cfg.MaxBytes != old.MaxBytes || !old.DenyDelete || !old.DenyPurge || old.AllowRollup || len(cfg.Subjects) != len(old.Subjects) {
		var err error
		if st, err = jsapi.UpdateStream(ctx, a.js, cfg); err != nil {
			return nil, fmt.Errorf("%w %s: cannot make it append-only with retention %v: %w", ErrAuditStream, StreamAudit, cfg.MaxAge, err)
		}
	}
	got := st.CachedInfo().Config
	if !got.DenyDelete || !got.DenyPurge || got.AllowRollup {
		return nil, fmt.Errorf("%w %s: the server keeps it deletable (deny_delete=%v deny_purge=%v allow_rollup=%v)",
			ErrAuditStream, StreamAudit, got.DenyDelete, got.DenyPurge, got.AllowRollup)
	}
	return st, nil
}

// Record appends ev to the log. It does not change ev: the stored copy
// gets Time (now, if ev.Time is zero), its fields truncated to their
// bounds (MaxAuditDetail, MaxAuditField), and Seq cleared (the log
// assigns it). An unknown Action or an Outcome other than OutcomeOK or
// OutcomeRefused is refused with an *AuditInputError. The message
// carries a random id, so a publish JetStream retries is stored once.
func (a *Audit) Record(ctx context.Context, ev *AuditEvent) error {
	if a.readOnly {
		return &AuditInputError{What: "event", Field: "log", Message: "this Audit was opened read-only"}
	}
	if ev == nil {
		return &AuditInputError{What: "event", Field: "event", Message: "nil"}
	}
	if !slices.Contains(auditActions, ev.Action) {
		return &AuditInputError{What: "event", Field: "action", Message: fmt.Sprintf("%q is not one of %s", clip(ev.Action, 64), strings.Join(auditActions, ", "))}
	}
	if ev.Outcome != OutcomeOK && ev.Outcome != OutcomeRefused {
		return &AuditInputError{What: "event", Field: "outcome", Message: fmt.Sprintf("%q is neither %q nor %q", clip(ev.Outcome, 64), OutcomeOK, OutcomeRefused)}
	}
	e := *ev
	e.Seq = 0
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	e.Time = e.Time.UTC()
	for _, f := range []*string{&e.Actor, &e.ActorName, &e.Addr, &e.Session, &e.Tool, &e.InputDigest, &e.Rule} {
		*f = clip(*f, MaxAuditField)
	}
	e.Detail = clip(e.Detail, MaxAuditDetail)
	b, err := json.Marshal(&e)
	if err != nil {
		return fmt.Errorf("team: audit event: %w", err)
	}
	var id [16]byte
	rand.Read(id[:])
	_, err = a.js.PublishMsg(ctx, &nats.Msg{Subject: AuditSubjectPrefix + e.Action, Data: b},
		jetstream.WithMsgID(hex.EncodeToString(id[:])), jetstream.WithExpectStream(StreamAudit))
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("team: recording %s: %w", e.Action, err)
	}
	return nil
}

// clip truncates s to at most n bytes on a UTF-8 boundary, ending it
// with "…" when it cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const mark = "…"
	cut := n - len(mark)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + mark
}

// AuditQuery selects events. Zero fields select everything.
type AuditQuery struct {
	// Since and Until bound when the log stored the events: Since <=
	// stored < Until. The stored time is the NATS server's clock, which a
	// recorder cannot set; an event's Time is the recorder's own and
	// normally within moments of it (a recorder with a fake clock may
	// record any Time, the query still finds the event by when it came).
	Since, Until time.Time
	// Actor is the acting person's Subject (an e-mail address, compared
	// case-insensitively).
	Actor string
	// Session is a session's id.
	Session string
	// Action is one of the Action constants: only the stream subject of
	// that action is read.
	Action string
	// Limit stops after this many events (0: no limit).
	Limit int
}

func (q *AuditQuery) check() error {
	if q.Action != "" && !slices.Contains(auditActions, q.Action) {
		return &AuditInputError{What: "query", Field: "action", Message: fmt.Sprintf("%q is not one of %s", clip(q.Action, 64), strings.Join(auditActions, ", "))}
	}
	if q.Limit < 0 {
		return &AuditInputError{What: "query", Field: "limit", Message: fmt.Sprintf("%d is negative", q.Limit)}
	}
	if !q.Since.IsZero() && !q.Until.IsZero() && !q.Until.After(q.Since) {
		return &AuditInputError{What: "query", Field: "until", Message: "is not after since"}
	}
	return nil
}

func (q *AuditQuery) match(ev *AuditEvent, stored time.Time) bool {
	switch {
	case !q.Since.IsZero() && stored.Before(q.Since),
		q.Actor != "" && !strings.EqualFold(q.Actor, ev.Actor),
		q.Session != "" && q.Session != ev.Session,
		q.Action != "" && q.Action != ev.Action:
		return false
	}
	return true
}

// Query reads the events q selects, oldest first, each with Seq set to
// its position in the stream. It reads what the stream holds when the
// query starts and then ends: events recorded meanwhile are left for the
// next query. Each range over the result runs the query anew, on an
// consumer of its own that is deleted when the loop ends (by break
// too). A failure is yielded as the last pair (nil, err);
// cancelling ctx yields ctx.Err(). A stored message that is not an event
// is skipped, counted (Skipped) and logged.
func (a *Audit) Query(ctx context.Context, q *AuditQuery) iter.Seq2[*AuditEvent, error] {
	var qq AuditQuery
	if q != nil {
		qq = *q
	}
	return func(yield func(*AuditEvent, error) bool) {
		if err := qq.check(); err != nil {
			yield(nil, err)
			return
		}
		if err := a.query(ctx, &qq, yield); err != nil {
			if ctx.Err() != nil {
				err = ctx.Err()
			}
			yield(nil, err)
		}
	}
}

func (a *Audit) query(ctx context.Context, q *AuditQuery, yield func(*AuditEvent, error) bool) (err error) {
	info, err := a.stream.Info(ctx)
	if err != nil {
		return fmt.Errorf("team: reading the audit log: %w", err)
	}
	last := info.State.LastSeq
	if info.State.Msgs == 0 {
		return nil
	}
	subject := AuditSubjectPrefix + ">"
	if q.Action != "" {
		subject = AuditSubjectPrefix + q.Action
	}
	// An ephemeral pull consumer of the query's own, read in batches: the
	// library's ordered consumer would re-create itself after a lost
	// connection in a loop no context ends; a query just fails then.
	cfg := jetstream.ConsumerConfig{
		Description:   "tether: an audit query",
		FilterSubject: subject,
		DeliverPolicy: jetstream.DeliverAllPolicy,
		AckPolicy:     jetstream.AckNonePolicy,
		MemoryStorage: true,
		Replicas:      1,
		// Deleted by the server if this process dies mid-query.
		InactiveThreshold: time.Minute,
	}
	if !q.Since.IsZero() {
		start := q.Since
		cfg.DeliverPolicy, cfg.OptStartTime = jetstream.DeliverByStartTimePolicy, &start
	}
	cons, err := a.stream.CreateConsumer(ctx, cfg)
	if err != nil {
		return fmt.Errorf("team: reading the audit log: %w", err)
	}
	defer func() {
		// Best effort: the server drops it after InactiveThreshold
		// anyway, so a failed or cancelled query does not wait long
		// for it.
		wait := 5 * time.Second
		if err != nil || ctx.Err() != nil {
			wait = time.Second
		}
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), wait)
		defer cancel()
		name := cons.CachedInfo().Name
		if err := a.stream.DeleteConsumer(dctx, name); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
			a.logger.Debug("team: audit query consumer left to expire", "consumer", name, "err", err)
		}
	}()
	if cons.CachedInfo().NumPending == 0 {
		return nil // nothing from the start position on
	}
	n := 0
	// batch reads one fetch; done: the query is over.
	batch := func() (done bool, err error) {
		// The fetch's own deadline is the server's expiry of the pull:
		// no answer at all by then means the server is gone. Returning
		// cancels it, which ends the library's goroutine of the fetch.
		fctx, cancel := context.WithTimeout(ctx, auditFetchWait)
		defer cancel()
		b, err := cons.Fetch(auditBatch, jetstream.FetchContext(fctx))
		if err != nil {
			return true, err
		}
		got := 0
		for m := range b.Messages() {
			got++
			md, err := m.Metadata()
			if err != nil { // not from JetStream: nothing to go on
				return true, err
			}
			seq := md.Sequence.Stream
			if seq > last {
				return true, nil // recorded after the query started
			}
			if !q.Until.IsZero() && !md.Timestamp.Before(q.Until) {
				return true, nil // the rest is later still
			}
			ev, err := decodeAuditEvent(m)
			if err != nil {
				a.skip(seq, "not an audit event", err)
			} else if q.match(ev, md.Timestamp) {
				ev.Seq = seq
				if !yield(ev, nil) {
					return true, nil
				}
				if n++; q.Limit > 0 && n >= q.Limit {
					return true, nil
				}
			}
			if seq >= last || md.NumPending == 0 {
				return true, nil
			}
		}
		if err := b.Error(); err != nil {
			if ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
				err = fmt.Errorf("no answer from the NATS server within %v", auditFetchWait)
			}
			return true, err
		}
		// The server ended the pull empty although the consumer had
		// more: they aged out meanwhile. The end.
		return got == 0, nil
	}
	for {
		done, err := batch()
		if err != nil {
			return fmt.Errorf("team: reading the audit log: %w", err)
		}
		if done {
			return nil
		}
	}
}

// decodeAuditEvent reads a stored message: JSON of an AuditEvent whose
// Action is a known one and matches the subject.
func decodeAuditEvent(m jetstream.Msg) (*AuditEvent, error) {
	var ev AuditEvent
	if err := json.Unmarshal(m.Data(), &ev); err != nil {
		return nil, err
	}
	if !slices.Contains(auditActions, ev.Action) || m.Subject() != AuditSubjectPrefix+ev.Action {
		return nil, fmt.Errorf("action %q on subject %q", clip(ev.Action, 64), clip(m.Subject(), 128))
	}
	return &ev, nil
}

func (a *Audit) skip(seq uint64, why string, err error) {
	a.skipped.Add(1)
	a.logger.Warn("team: skipped an unreadable audit message", "seq", seq, "why", why, "err", err)
}

// Skipped is how many stored messages queries skipped because they were
// not audit events (written to the stream's subjects by something else),
// since OpenAudit.
func (a *Audit) Skipped() int64 { return a.skipped.Load() }

// WriteJSONL writes the events q selects to w, one JSON object a line,
// and returns how many it wrote.
func (a *Audit) WriteJSONL(ctx context.Context, w io.Writer, q *AuditQuery) (int, error) {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	n := 0
	for ev, err := range a.Query(ctx, q) {
		if err != nil {
			return n, err
		}
		if err := enc.Encode(ev); err != nil {
			return n, fmt.Errorf("team: writing the audit log: %w", err)
		}
		n++
	}
	return n, nil
}
