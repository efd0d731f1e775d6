package jsapi_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tetherhq/tether/internal/jsapi"
	"github.com/tetherhq/tether/internal/natstest"
)

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// TestStreamLookedUpThenCreated: the first call creates the stream and
// the bucket, the second finds them.
func TestStreamLookedUpThenCreated(t *testing.T) {
	ctx := testCtx(t)
	_, js := natstest.Start(t, nil).Connect()
	cfg := jetstream.StreamConfig{Name: "S", Subjects: []string{"s.>"}}
	for i, want := range []bool{true, false} {
		st, created, err := jsapi.Stream(ctx, js, cfg)
		if err != nil || created != want || st.CachedInfo().Config.Name != "S" {
			t.Fatalf("call %d: created %v, err %v; want created %v", i+1, created, err, want)
		}
	}
	for i := range 2 {
		kv, err := jsapi.KeyValue(ctx, js, jetstream.KeyValueConfig{Bucket: "b"})
		if err != nil || kv.Bucket() != "b" {
			t.Fatalf("bucket, call %d: %v", i+1, err)
		}
	}
	up, err := jsapi.UpdateStream(ctx, js, jetstream.StreamConfig{Name: "S", Subjects: []string{"s.>", "t.>"}})
	if err != nil || len(up.CachedInfo().Config.Subjects) != 2 {
		t.Fatalf("update: %v", err)
	}
}

// TestNoJetStreamAnswersAtOnce: a server without JetStream is an answer,
// not a request to ask again until ctx ends.
func TestNoJetStreamAnswersAtOnce(t *testing.T) {
	ctx := testCtx(t)
	_, js := natstest.Start(t, &natstest.Options{Modify: func(o *server.Options) { o.JetStream = false }}).Connect()
	_, _, err := jsapi.Stream(ctx, js, jetstream.StreamConfig{Name: "S", Subjects: []string{"s.>"}})
	if !errors.Is(err, jetstream.ErrJetStreamNotEnabled) {
		t.Fatalf("got %v, want jetstream.ErrJetStreamNotEnabled", err)
	}
	if ctx.Err() != nil {
		t.Fatal("the answer came when the ctx ended")
	}
}

// TestTransient sorts what is no answer for now from answers.
func TestTransient(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{context.DeadlineExceeded, true},
		{&jetstream.APIError{Code: 503, ErrorCode: 10008, Description: "JetStream system temporarily unavailable"}, true},
		{jetstream.ErrStreamNotFound, false},
		{errors.New("something else"), false},
	} {
		if got := jsapi.Transient(c.err); got != c.want {
			t.Errorf("Transient(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

// TestMarkRefusal: a refusal counts for the request it answers, not for
// every later one on the subject, though the connection keeps it as its
// last error.
func TestMarkRefusal(t *testing.T) {
	ctx := testCtx(t)
	srv := natstest.Start(t, &natstest.Options{Modify: func(o *server.Options) {
		o.Users = []*server.User{{Username: "u", Password: "p", Permissions: &server.Permissions{
			Publish: &server.SubjectPermission{Allow: []string{">"}, Deny: []string{jsapi.StreamCreate + ">"}},
		}}}
	}})
	nc, js := srv.Connect(nats.UserInfo("u", "p"))
	_, _, err := jsapi.Stream(ctx, js, jetstream.StreamConfig{Name: "S", Subjects: []string{"s.>"}})
	if !errors.Is(err, nats.ErrPermissionViolation) {
		t.Fatalf("a denied create: %v, want nats.ErrPermissionViolation", err)
	}
	if ctx.Err() != nil {
		t.Fatal("the refusal came when the ctx ended")
	}

	since := jsapi.MarkOf(nc)
	if r := since.Refusal(jsapi.StreamCreate + "S"); r != nil {
		t.Fatalf("the earlier refusal counted again: %v", r)
	}
	if _, err := nc.Request(jsapi.StreamCreate+"S", nil, 200*time.Millisecond); err == nil {
		t.Fatal("a denied request was answered")
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	if r := since.Refusal(jsapi.StreamCreate + "S"); !errors.Is(r, nats.ErrPermissionViolation) {
		t.Fatalf("the refusal since the mark: %v (last error %v)", r, nc.LastError())
	}
	if r := since.Refusal(jsapi.StreamCreate + "T"); r != nil {
		t.Fatalf("a refusal of another subject counted: %v", r)
	}
}
