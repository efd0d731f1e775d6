// Package natstest runs an embedded NATS server with JetStream for tests:
// on a loopback port, storing in a test folder, ready before it returns
// and shut down (after every connection it made) when the test ends.
//
// It is the one kit the packages' tests share (team's stores and audit,
// the tether command's agent and serve tests); cluster's fault tests,
// which restart and freeze servers, and cluster/clustertest, which users
// call, build their own on top of nats-server for what they need beyond
// this.
package natstest

import (
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Options changes the server (nil = defaults).
type Options struct {
	// Token, when set, is the token clients must present (Connect
	// presents it).
	Token string
	// Name is the server's name; empty: the server chooses.
	Name string
	// Modify, when set, changes the server's options last, before it
	// starts.
	Modify func(*server.Options)
}

// Server is a running embedded server.
type Server struct {
	*server.Server
	t     testing.TB
	token string
}

// readyWithin bounds the wait for the server to listen: generous, since
// a test machine with every core busy starts it slowly.
const readyWithin = 30 * time.Second

// Start starts a server for t; it is shut down when t ends.
func Start(t testing.TB, o *Options) *Server {
	t.Helper()
	if o == nil {
		o = &Options{}
	}
	so := &server.Options{ServerName: o.Name, Host: "127.0.0.1", Port: -1, JetStream: true,
		StoreDir: t.TempDir(), Authorization: o.Token, NoLog: true, NoSigs: true}
	if o.Modify != nil {
		o.Modify(so)
	}
	ns, err := server.NewServer(so)
	if err != nil {
		t.Fatalf("natstest: %v", err)
	}
	ns.Start()
	t.Cleanup(func() {
		ns.Shutdown()
		ns.WaitForShutdown()
	})
	if !ns.ReadyForConnections(readyWithin) {
		t.Fatalf("natstest: the server is not ready after %v", readyWithin)
	}
	return &Server{Server: ns, t: t, token: o.Token}
}

// URL is the address clients connect to.
func (s *Server) URL() string { return s.ClientURL() }

// Connect connects to the server (with its token, if any) and returns
// the connection and its JetStream; the connection is closed when the
// test ends, before the server shuts down.
func (s *Server) Connect(opts ...nats.Option) (*nats.Conn, jetstream.JetStream) {
	s.t.Helper()
	if s.token != "" {
		opts = append([]nats.Option{nats.Token(s.token)}, opts...)
	}
	nc, err := nats.Connect(s.ClientURL(), opts...)
	if err != nil {
		s.t.Fatalf("natstest: connect: %v", err)
	}
	s.t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		s.t.Fatalf("natstest: %v", err)
	}
	return nc, js
}

// JetStream starts a server for t and connects to it.
func JetStream(t testing.TB) jetstream.JetStream {
	t.Helper()
	_, js := Start(t, nil).Connect()
	return js
}
