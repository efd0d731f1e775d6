package cluster

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tetherhq/tether/internal/jsapi"
	"github.com/tetherhq/tether/internal/natstest"
)

func TestPlainAck(t *testing.T) {
	for in, want := range map[string]uint64{
		`{"stream":"TETHER_EVENTS","seq":42}`:                  42,
		`{"stream":"S","seq":7,"duplicate":true}`:              7,
		`{"stream":"S","seq":18446744073709551615}`:            18446744073709551615,
		`{"stream":"S","domain":"d","seq":7}`:                  0, // a field more: json.Unmarshal
		`{"error":{"code":400,"err_code":10071},"stream":"S"}`: 0,
		`{"stream":"S","seq":07}`:                              0,
		`{"stream":"S","seq":18446744073709551616}`:            0,
		`{"stream":"S\"","seq":1}`:                             0,
		`{"stream":"","seq":1}`:                                0,
		`{"stream":"S","seq":1} `:                              0,
		``:                                                     0,
	} {
		seq, ok := plainAck([]byte(in))
		if ok != (want != 0) || seq != want {
			t.Errorf("plainAck(%s) = %d, %v; want %d", in, seq, ok, want)
		}
	}
}

// TestPublishExpecting: the fenced publish answers as jetstream's
// PublishMsg does: the sequence stored, the fence's error (wrongLastSeq;
// a retry of a message stored meets the fence too: publishMsg then finds
// it by its id) and no stream at all.
func TestPublishExpecting(t *testing.T) {
	srv := natstest.Start(t, nil)
	nc, js := srv.Connect()
	ctx := t.Context()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "S", Subjects: []string{"s.>"}}); err != nil {
		t.Fatal(err)
	}
	b := &bus{nc: nc, js: js}
	msg := func(subj, id string) *nats.Msg {
		m := nats.NewMsg(subj)
		m.Data = []byte("x")
		m.Header.Set(hdrMsgID, id)
		return m
	}
	seq, err := b.publishExpecting(ctx, msg("s.a.1", "m1"), 0, "s.a.>")
	if err != nil || seq != 1 {
		t.Fatalf("first: %d, %v", seq, err)
	}
	seq, err = b.publishExpecting(ctx, msg("s.a.2", "m2"), 1, "s.a.>")
	if err != nil || seq != 2 {
		t.Fatalf("second: %d, %v", seq, err)
	}
	if _, err = b.publishExpecting(ctx, msg("s.a.2", "m2"), 1, "s.a.>"); !wrongLastSeq(err) {
		t.Fatalf("a retry of the second: %v", err)
	}
	if _, err = b.publishExpecting(ctx, msg("s.a.3", "m3"), 1, "s.a.>"); !wrongLastSeq(err) {
		t.Fatalf("fenced: %v", err)
	}
	var apiErr *jetstream.APIError
	if !errors.As(err, &apiErr) || apiErr.Code != 400 {
		t.Fatalf("fenced: %#v", err)
	}
	if _, err = b.publishExpecting(ctx, msg("elsewhere", "m4"), 0, "elsewhere"); !errors.Is(err, jetstream.ErrNoStreamResponse) {
		t.Fatalf("no stream: %v", err)
	}
}

// TestUnanswered: what a reader's consumer is tried again after (no
// answer, no leader yet) and what it is not (a refusal).
func TestUnanswered(t *testing.T) {
	nc, _ := natstest.Start(t, nil).Connect()
	for _, c := range []struct {
		err  error
		want bool
	}{
		{context.DeadlineExceeded, true},
		{fmt.Errorf("consumer: %w", nats.ErrTimeout), true},
		{nats.ErrNoResponders, true},
		{jetstream.ErrJetStreamNotEnabled, true},
		{&jetstream.APIError{Code: 503, ErrorCode: 10008, Description: "JetStream system temporarily unavailable"}, true},
		{&jetstream.APIError{Code: 400, ErrorCode: 10148, Description: "consumer name already in use"}, false},
		{jetstream.ErrStreamNotFound, false},
		{nats.ErrConnectionClosed, false},
		{errors.New("something else"), false},
	} {
		if got := unanswered(jsapi.MarkOf(nc), c.err); got != c.want {
			t.Errorf("unanswered(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

// TestUnansweredRefused: a request the user may not make goes unanswered
// too, but the server says so on the connection: that is a refusal, not
// a reason to try again.
func TestUnansweredRefused(t *testing.T) {
	srv := natstest.Start(t, &natstest.Options{Modify: func(o *server.Options) {
		o.Users = []*server.User{{Username: "u", Password: "p", Permissions: &server.Permissions{
			Publish: &server.SubjectPermission{Allow: []string{">"}, Deny: []string{"$JS.API.CONSUMER.>"}},
		}}}
	}})
	nc, _ := srv.Connect(nats.UserInfo("u", "p"))
	since := jsapi.MarkOf(nc)
	if !unanswered(since, nats.ErrTimeout) {
		t.Fatal("a timeout, nothing refused yet: not tried again")
	}
	_, err := nc.Request("$JS.API.CONSUMER.CREATE.S", nil, 200*time.Millisecond)
	if err == nil {
		t.Fatal("a denied request was answered")
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	if unanswered(since, err) {
		t.Fatalf("tried again after the server refused it (%v; last error %v)", err, nc.LastError())
	}
	// The connection keeps that refusal as its last error. A later
	// request that times out (its node lost) is no refusal: tried again.
	if !unanswered(jsapi.MarkOf(nc), nats.ErrTimeout) {
		t.Fatalf("a later timeout taken for the earlier refusal (last error %v)", nc.LastError())
	}
}

// noAnswerFirst is the events stream, but its first ordered consumer is
// made and then taken for unanswered, as one placed on a node that was
// just lost; it records every attempt's consumer name and how long its
// ctx gave it.
type noAnswerFirst struct {
	jetstream.Stream
	names []string
	times []time.Duration
}

func (s *noAnswerFirst) OrderedConsumer(ctx context.Context, cfg jetstream.OrderedConsumerConfig) (jetstream.Consumer, error) {
	s.names = append(s.names, cfg.NamePrefix)
	if dl, ok := ctx.Deadline(); ok {
		s.times = append(s.times, time.Until(dl))
	} else {
		s.times = append(s.times, -1)
	}
	cons, err := s.Stream.OrderedConsumer(ctx, cfg)
	if len(s.names) == 1 && err == nil {
		return nil, fmt.Errorf("create consumer: %w", context.DeadlineExceeded)
	}
	return cons, err
}

// TestConsumerRetryNamesAnew: a reader's consumer asked for again after
// no answer has a name of its own, not the unanswered one's (which would
// only update that consumer, on the node that did not answer). And each
// try is bounded by jsapi.Attempt, not by the caller's deadline (a lost
// request would otherwise hold the reader for all of it).
func TestConsumerRetryNamesAnew(t *testing.T) {
	srv := natstest.Start(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := NewClient(ctx, &ClientOptions{URL: srv.URL()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s := &noAnswerFirst{Stream: c.b.events}
	c.b.events = s
	cons, err := c.consumer(ctx, "s1", jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{sessionFilter("s1")}, InactiveThreshold: time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.b.deleteConsumer(cons)
	if len(s.names) != 2 || s.names[0] == s.names[1] || consumerWire(s.names[1]+"_1") != WireRevision {
		t.Fatalf("attempts' consumer names: %q", s.names)
	}
	for i, d := range s.times {
		if d <= 0 || d > jsapi.Attempt {
			t.Errorf("attempt %d had %v, want at most jsapi.Attempt (%v)", i+1, d, jsapi.Attempt)
		}
	}
	names := map[string]bool{}
	lister := s.Stream.ListConsumers(ctx)
	for info := range lister.Info() {
		names[info.Name] = true
	}
	if !names[s.names[1]+"_1"] {
		t.Fatalf("the second attempt's consumer %s_1 is not on the server: %v", s.names[1], names)
	}
}
