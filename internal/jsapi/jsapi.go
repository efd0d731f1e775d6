// Package jsapi makes JetStream API requests that go on through a NATS
// node lost: cluster's streams and buckets and team's stores ask again a
// request that goes unanswered, each try bounded, instead of waiting out
// their caller's ctx.
//
// The JetStream API answers a request at most once. A request sent to a
// stream's leader, or to the meta leader (which alone answers one that
// creates or changes a stream), while that leader is lost (its node
// killed, frozen or cut off, until the other nodes elect another, seconds
// later) is never answered; jetstream waits for as long as a ctx with a
// deadline allows. Asking again after Attempt reaches the new leader.
package jsapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Attempt bounds each try of a request that is asked again when
// unanswered: a request lost on the way (its node lost, a leader being
// elected, a server too busy to answer) is asked again after it, instead
// of waiting out the caller's deadline. It is jetstream's own timeout for
// a ctx without a deadline.
const Attempt = 5 * time.Second

// Transient reports whether err is JetStream briefly unable to answer (a
// node of its cluster lost, a leader being elected: "JetStream system
// temporarily unavailable", no response from the stream, a request timed
// out, jetstream's own API timeout on a ctx without a deadline, the
// connection moving to another node) rather than an answer.
func Transient(err error) bool {
	var ae *jetstream.APIError
	if errors.As(err, &ae) {
		return ae.Code == 503
	}
	return errors.Is(err, jetstream.ErrNoStreamResponse) || errors.Is(err, nats.ErrNoResponders) ||
		errors.Is(err, nats.ErrTimeout) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, jetstream.ErrJetStreamNotEnabled) ||
		errors.Is(err, nats.ErrConnectionReconnecting) || errors.Is(err, nats.ErrDisconnected)
}

// Again calls f until it returns nil or an error again does not call no
// answer, or ctx ends, waiting longer each time up to a second; each call
// gets a ctx of its own, bounded by Attempt. again hears of each error with
// the Mark of nc taken as that call began, so that it can tell a refusal
// the server sent during the call from one it sent long before. log (nil:
// silent) hears of each try again.
func Again[T any](ctx context.Context, nc *nats.Conn, log *slog.Logger, again func(since Mark, err error) bool, f func(context.Context) (T, error)) (T, error) {
	wait := 50 * time.Millisecond
	for {
		actx, cancel := context.WithTimeout(ctx, Attempt)
		since := MarkOf(nc)
		v, err := f(actx)
		cancel()
		if err == nil || ctx.Err() != nil || !again(since, err) {
			return v, err
		}
		if log != nil {
			log.Debug("no answer from JetStream; trying again", "err", err)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return v, err
		case <-t.C:
		}
		wait = min(2*wait, time.Second)
	}
}

// A Mark is where a connection's errors stood at a moment. The server
// refuses a request the user has no right to make by an asynchronous
// error on the connection, which nats.Conn.LastError keeps until the
// next one (or a reconnect): read alone, one refusal would be taken for
// the answer to every later request on the subject, so that a request
// lost with a node, or made after an operator granted the right, would
// count as refused and not be asked again. A refusal counts only when it
// came after the Mark.
type Mark struct {
	nc   *nats.Conn
	last error
}

// MarkOf marks nc's errors now.
func MarkOf(nc *nats.Conn) Mark { return Mark{nc: nc, last: nc.LastError()} }

// Violation is the permission violation the server reported on the
// connection since m (matching nats.ErrPermissionViolation), or nil.
func (m Mark) Violation() error {
	last := m.nc.LastError()
	if !errors.Is(last, nats.ErrPermissionViolation) || same(last, m.last) {
		return nil
	}
	return last
}

// Refusal is the server's refusal, since m, of a request or subscription
// on subject (a violation naming it), or nil.
func (m Mark) Refusal(subject string) error {
	if v := m.Violation(); v != nil && strings.Contains(v.Error(), `"`+subject+`"`) {
		return v
	}
	return nil
}

// same reports whether a and b are one error value. nats.go makes a new
// value for each error it reports; a value that cannot be compared counts
// as new.
func same(a, b error) bool {
	if a == nil || b == nil {
		return a == b
	}
	t := reflect.TypeOf(a)
	return t == reflect.TypeOf(b) && t.Comparable() && a == b
}

// The API subjects of the requests that set streams up, before a
// stream's name.
const (
	StreamInfo   = "$JS.API.STREAM.INFO."
	StreamCreate = "$JS.API.STREAM.CREATE."
	StreamUpdate = "$JS.API.STREAM.UPDATE."
)

// SetUp makes a request that sets a stream up (looks it up, creates or
// updates it), sent on subject on js's connection, asking it again while
// it goes unanswered. Asking again is safe: creating what exists, with the
// same configuration, changes nothing, and an update sets what it sets.
//
// Unlike a reader's request, no responders at all, or JetStream not
// enabled, is an answer here: a NATS server without JetStream, which an
// operator starting a process should hear of at once. A request the user
// has no right to make goes unanswered too; the server says so on the
// connection, and that refusal (matching nats.ErrPermissionViolation) is
// the error. No responders matches jetstream.ErrJetStreamNotEnabled too,
// which says more to an operator.
func SetUp[T any](ctx context.Context, js jetstream.JetStream, subject string, f func(context.Context) (T, error)) (T, error) {
	nc := js.Conn()
	var refusal error
	v, err := Again(ctx, nc, nil, func(since Mark, err error) bool {
		refusal = since.Refusal(subject)
		if errors.Is(err, jetstream.ErrJetStreamNotEnabled) || errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount) ||
			errors.Is(err, nats.ErrNoResponders) || refusal != nil {
			return false
		}
		return Transient(err)
	}, f)
	switch {
	case err == nil || ctx.Err() != nil:
	case errors.Is(err, nats.ErrNoResponders) && !errors.Is(err, jetstream.ErrJetStreamNotEnabled):
		err = fmt.Errorf("%w: nobody answers %s (%w)", jetstream.ErrJetStreamNotEnabled, subject, err)
	case refusal != nil:
		err = fmt.Errorf("%w (no answer: %w)", refusal, err)
	}
	return v, err
}

// Stream looks the stream cfg names up and creates it when missing (as
// cfg says), asking each request again while it goes unanswered (SetUp).
// created says which. Looking up first lets a user denied STREAM.CREATE
// start on streams an operator made, and while the meta leader is lost
// the stream's own leader still answers.
func Stream(ctx context.Context, js jetstream.JetStream, cfg jetstream.StreamConfig) (st jetstream.Stream, created bool, err error) {
	return lookUpOrCreate(ctx, js, cfg.Name,
		func(ctx context.Context) (jetstream.Stream, error) { return js.Stream(ctx, cfg.Name) },
		func(ctx context.Context) (jetstream.Stream, error) { return js.CreateStream(ctx, cfg) },
		jetstream.ErrStreamNotFound, jetstream.ErrStreamNameAlreadyInUse)
}

// UpdateStream updates a stream's configuration, asking again while the
// request goes unanswered (SetUp).
func UpdateStream(ctx context.Context, js jetstream.JetStream, cfg jetstream.StreamConfig) (jetstream.Stream, error) {
	return SetUp(ctx, js, StreamUpdate+cfg.Name, func(ctx context.Context) (jetstream.Stream, error) { return js.UpdateStream(ctx, cfg) })
}

// KeyValue is Stream for a bucket: it looks the bucket up and creates it
// when missing.
func KeyValue(ctx context.Context, js jetstream.JetStream, cfg jetstream.KeyValueConfig) (jetstream.KeyValue, error) {
	kv, _, err := lookUpOrCreate(ctx, js, "KV_"+cfg.Bucket,
		func(ctx context.Context) (jetstream.KeyValue, error) { return js.KeyValue(ctx, cfg.Bucket) },
		func(ctx context.Context) (jetstream.KeyValue, error) { return js.CreateKeyValue(ctx, cfg) },
		jetstream.ErrBucketNotFound, jetstream.ErrBucketExists)
	return kv, err
}

// lookUpOrCreate is Stream and KeyValue: lookUp the stream named stream;
// when that fails with missing, create it; when another process created
// it first (taken), lookUp again.
func lookUpOrCreate[T any](ctx context.Context, js jetstream.JetStream, stream string, lookUp, create func(context.Context) (T, error), missing, taken error) (v T, created bool, err error) {
	v, err = SetUp(ctx, js, StreamInfo+stream, lookUp)
	if !errors.Is(err, missing) {
		return v, false, err
	}
	v, err = SetUp(ctx, js, StreamCreate+stream, create)
	if errors.Is(err, taken) {
		v, err = SetUp(ctx, js, StreamInfo+stream, lookUp)
		return v, false, err
	}
	return v, err == nil, err
}
