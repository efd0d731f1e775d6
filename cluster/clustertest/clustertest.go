// Package clustertest runs a whole Tether cluster in a test process: an
// embedded NATS server with JetStream on a loopback port, agents on it and
// a client, torn down when the test ends. With it, a test written against
// serve.Backend runs against `tether serve --nats` by changing one line:
//
//	c := clustertest.New(t, &clustertest.Options{Session: &host.Options{CLI: cli.Options()}})
//	srv := serve.NewServer(c.Backend(nil), nil)
package clustertest

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/cluster"
	"github.com/tetherhq/tether/host"
	"github.com/tetherhq/tether/internal/testlog"
)

// Options configures New. A nil *Options means defaults.
type Options struct {
	// Agents is how many agents to run (0 = 1), each with Capacity
	// sessions (0 = 8).
	Agents   int
	Capacity int
	// Session is the agents' session template (nil = defaults). As
	// `tether serve` does, partial messages are turned on (the UI streams
	// text token by token).
	Session *host.Options
	// Limits of the streams and buckets (nil = defaults, with a 250 ms
	// heartbeat so that dead agents show quickly).
	Limits *cluster.Limits
	// SleepAfter is every agent's AgentOptions.SleepAfter (0 = sessions
	// never sleep). With it an agent also hands off a session that host
	// put to sleep another way (host.Session.Sleep), as a test may.
	SleepAfter time.Duration
}

// Cluster is a running test cluster.
type Cluster struct {
	// URL is the NATS server's client URL.
	URL    string
	Server *server.Server
	Agents []*cluster.Agent
	// Client is a client of the cluster (close it with the cluster).
	Client *cluster.Client

	t       testing.TB
	opts    server.Options
	limits  *cluster.Limits
	log     *slog.Logger // nil: none
	clients atomic.Int64 // clients made, to name each in the log
}

// New starts a NATS server, the agents and a client; they stop when t
// ends.
func New(t testing.TB, opts *Options) *Cluster {
	t.Helper()
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Agents <= 0 {
		o.Agents = 1
	}
	if o.Capacity <= 0 {
		o.Capacity = 8
	}
	if o.Limits == nil {
		o.Limits = &cluster.Limits{Heartbeat: 250 * time.Millisecond}
	}
	var tmpl host.Options
	if o.Session != nil {
		tmpl = *o.Session
	}
	var cli claude.Options
	if tmpl.CLI != nil {
		cli = *tmpl.CLI
	}
	cli.Env = maps.Clone(cli.Env)
	cli.IncludePartialMessages = true
	tmpl.CLI = &cli

	c := &Cluster{t: t, limits: o.Limits, opts: server.Options{
		ServerName: "clustertest", Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(),
		NoLog: true, NoSigs: true,
	}}
	c.start()
	c.opts.Port = c.Server.Addr().(*net.TCPAddr).Port
	t.Cleanup(c.stop)
	// The agents' and clients' logs, shown if the test fails (a benchmark
	// measures them without).
	if _, bench := t.(*testing.B); !bench {
		c.log = testlog.New(t, slog.LevelInfo)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i := range o.Agents {
		a, err := cluster.NewAgent(ctx, &cluster.AgentOptions{URL: c.URL, ID: fmt.Sprint("agent", i+1),
			Capacity: o.Capacity, Limits: o.Limits, Session: &tmpl, SleepAfter: o.SleepAfter,
			Logger: c.log}) // each agent names itself
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { a.Close() })
		c.Agents = append(c.Agents, a)
	}
	c.Client = c.NewClient()
	return c
}

// logger is the cluster's log for one of its parts (nil: none).
func (c *Cluster) logger(part string, n any) *slog.Logger {
	if c.log == nil {
		return nil
	}
	return c.log.With(part, n)
}

// NewClient returns another client of the cluster (another `serve`),
// closed when the test ends.
func (c *Cluster) NewClient() *cluster.Client {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := cluster.NewClient(ctx, &cluster.ClientOptions{URL: c.URL, Limits: c.limits, Logger: c.logger("client", c.clients.Add(1))})
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { cl.Close() })
	return cl
}

// Backend returns the cluster's client as a serve.Backend.
func (c *Cluster) Backend(opts *cluster.BackendOptions) *cluster.Backend {
	return cluster.NewBackend(c.Client, opts)
}

// Restart stops the NATS server and starts it again on the same port and
// store: what JetStream acknowledged survives, agents and clients
// reconnect.
func (c *Cluster) Restart() {
	c.t.Helper()
	c.stop()
	c.start()
}

func (c *Cluster) start() {
	c.t.Helper()
	o := c.opts
	s, err := server.NewServer(&o)
	if err != nil {
		c.t.Fatal(err)
	}
	s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		c.t.Fatal("clustertest: NATS server not ready")
	}
	c.Server, c.URL = s, s.ClientURL()
}

func (c *Cluster) stop() {
	if c.Server != nil {
		c.Server.Shutdown()
		c.Server.WaitForShutdown()
		c.Server = nil
	}
}
