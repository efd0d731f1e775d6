package cluster_test

import (
	"fmt"
	"net"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// natsServer is an embedded NATS server with JetStream on a loopback port
// of its own, storing in a test folder; restart brings it back on the same
// port and store.
type natsServer struct {
	t    testing.TB
	opts server.Options
	s    *server.Server
}

func newNATS(t testing.TB, mod func(*server.Options)) *natsServer {
	t.Helper()
	o := server.Options{
		ServerName: "n1", Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(),
		NoLog: true, NoSigs: true,
	}
	if mod != nil {
		mod(&o)
	}
	n := &natsServer{t: t, opts: o}
	n.start()
	// The port is fixed from now on, so that a restart keeps it.
	n.opts.Port = n.s.Addr().(*net.TCPAddr).Port
	t.Cleanup(n.stop)
	return n
}

func (n *natsServer) start() {
	n.t.Helper()
	o := n.opts
	s, err := server.NewServer(&o)
	if err != nil {
		n.t.Fatal(err)
	}
	s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		n.t.Fatal("NATS server not ready")
	}
	n.s = s
}

func (n *natsServer) stop() {
	if n.s != nil {
		n.s.Shutdown()
		n.s.WaitForShutdown()
		n.s = nil
	}
}

// restart stops the server and starts it again with the same port and
// store: what JetStream acknowledged is on disk.
func (n *natsServer) restart() {
	n.stop()
	n.start()
}

func (n *natsServer) URL() string { return n.s.ClientURL() }

// newNATSCluster starts three servers routed to each other, with
// JetStream clustered, and returns them with a URL list for clients.
func newNATSCluster(t testing.TB) ([]*natsServer, string) {
	t.Helper()
	var ports []int
	var routes []*url.URL
	for range 3 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		p := l.Addr().(*net.TCPAddr).Port
		l.Close()
		ports = append(ports, p)
		routes = append(routes, &url.URL{Scheme: "nats", Host: fmt.Sprintf("127.0.0.1:%d", p)})
	}
	nodes := make([]*natsServer, 3)
	var wg sync.WaitGroup
	for i := range 3 {
		o := server.Options{
			ServerName: fmt.Sprintf("n%d", i+1), Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(),
			NoLog: true, NoSigs: true,
			Cluster: server.ClusterOpts{Name: "tether", Host: "127.0.0.1", Port: ports[i]},
			Routes:  routes,
		}
		s, err := server.NewServer(&o)
		if err != nil {
			t.Fatal(err)
		}
		nodes[i] = &natsServer{t: t, opts: o, s: s}
		t.Cleanup(nodes[i].stop)
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.Start()
		}()
	}
	wg.Wait()
	deadline := time.Now().Add(time.Minute)
	for {
		ready, leader := 0, false
		for _, n := range nodes {
			if n.s.ReadyForConnections(10*time.Millisecond) && n.s.JetStreamIsClustered() && n.s.NumRoutes() >= 2 && n.s.JetStreamIsCurrent() {
				ready++
			}
			// The meta leader places a replicated stream only on peers
			// it has stats from: until all three reported, creating an
			// R3 stream fails ("insufficient resources").
			if n.s.JetStreamIsLeader() && len(n.s.JetStreamClusterPeers()) == 3 {
				leader = true
			}
		}
		if ready == 3 && leader {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("NATS cluster not formed")
		}
		time.Sleep(20 * time.Millisecond)
	}
	u := ""
	for i, n := range nodes {
		if i > 0 {
			u += ","
		}
		u += n.URL()
	}
	return nodes, u
}

// streamsLed reports whether every one of the cluster's streams (the
// buckets' included) has a leader among nodes and is current on each of
// them: a node can go away without the streams waiting on an election
// or a replica catching up.
func streamsLed(nodes []*natsServer, streams ...string) bool {
	for _, st := range streams {
		led := false
		for _, n := range nodes {
			if n.s == nil || !n.s.JetStreamIsStreamCurrent("$G", st) {
				return false
			}
			if n.s.JetStreamIsStreamLeader("$G", st) {
				led = true
			}
		}
		if !led {
			return false
		}
	}
	return true
}
