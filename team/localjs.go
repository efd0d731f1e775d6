package team

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// LocalJetStream is the JetStream server tether serve --team runs inside
// itself on one machine (no --nats): the team's shares, spend, sign-ins
// and audit log live in it, stored under the state folder, so there is
// no second database. It listens on loopback only, with a random token
// written to LocalNATSFile (mode 0600) for tether audit on the same
// machine.
type LocalJetStream struct {
	srv  *server.Server
	nc   *nats.Conn
	js   jetstream.JetStream
	dir  string
	url  string
	once sync.Once
}

// ErrLocalJetStream: the embedded JetStream server could not start.
var ErrLocalJetStream = errors.New("team: the local JetStream server did not start")

// StartLocalJetStream starts the server, storing in dir/jetstream, and
// connects to it. Close shuts both down.
func StartLocalJetStream(ctx context.Context, dir string) (*LocalJetStream, error) {
	if dir == "" {
		return nil, fmt.Errorf("%w: no state folder (state_dir)", ErrLocalJetStream)
	}
	store := filepath.Join(dir, "jetstream")
	if err := os.MkdirAll(store, 0o700); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrLocalJetStream, err)
	}
	var b [32]byte
	_, _ = rand.Read(b[:])
	token := base64.RawURLEncoding.EncodeToString(b[:])
	srv, err := server.NewServer(&server.Options{
		ServerName: "tether-team", Host: "127.0.0.1", Port: server.RANDOM_PORT, JetStream: true, StoreDir: store,
		Authorization: token, NoLog: true, NoSigs: true,
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrLocalJetStream, err)
	}
	srv.Start()
	wait := 10 * time.Second
	if d, ok := ctx.Deadline(); ok {
		wait = min(wait, time.Until(d))
	}
	if !srv.ReadyForConnections(wait) {
		srv.Shutdown()
		srv.WaitForShutdown()
		return nil, fmt.Errorf("%w: not ready within %s", ErrLocalJetStream, wait)
	}
	l := &LocalJetStream{srv: srv, dir: dir, url: srv.ClientURL()}
	l.nc, err = nats.Connect(l.url, nats.Token(token), nats.Name("tether serve --team"), nats.MaxReconnects(-1))
	if err == nil {
		l.js, err = jetstream.New(l.nc)
	}
	if err == nil {
		err = WriteLocalNATS(dir, &LocalNATS{URL: l.url, Token: token})
	}
	if err != nil {
		l.Close()
		return nil, fmt.Errorf("%w: %v", ErrLocalJetStream, err)
	}
	return l, nil
}

// JetStream is the connection's JetStream context, for OpenStore,
// OpenAudit and NewKVLoginStore.
func (l *LocalJetStream) JetStream() jetstream.JetStream { return l.js }

// Conn is the NATS connection to the server.
func (l *LocalJetStream) Conn() *nats.Conn { return l.nc }

// URL is the server's client URL (127.0.0.1, a random port).
func (l *LocalJetStream) URL() string { return l.url }

// Close closes the connection, shuts the server down and removes
// LocalNATSFile (its token is no longer valid). Safe to call twice.
func (l *LocalJetStream) Close() error {
	l.once.Do(func() {
		if l.nc != nil {
			l.nc.Close()
		}
		l.srv.Shutdown()
		l.srv.WaitForShutdown()
		_ = os.Remove(filepath.Join(l.dir, LocalNATSFile))
	})
	return nil
}
