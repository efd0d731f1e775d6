package cluster_test

// Fault tests on a 3-node NATS cluster of OS processes (the "nats" role of
// fault_test.go, each a node routed to the other two, JetStream clustered,
// Tether's streams and buckets with 3 replicas): a node lost, whichever
// stream it leads, frozen or restarted changes nothing anyone sees. And
// the whole bus stopped and started again marks a session disconnected at
// most once.

import (
	"context"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tetherhq/tether/cluster"
	"github.com/tetherhq/tether/host"
)

const (
	faultNameEnv     = "TETHER_CLUSTER_FAULT_NAME"     // the node's server name
	faultRoutePEnv   = "TETHER_CLUSTER_FAULT_ROUTE"    // the node's cluster (route) port
	faultRoutesEnv   = "TETHER_CLUSTER_FAULT_ROUTES"   // the three nodes' route ports
	faultReplicasEnv = "TETHER_CLUSTER_FAULT_REPLICAS" // the agent's Limits.Replicas
)

// joinCluster makes the "nats" role one node of a cluster when the
// environment names its routes.
func joinCluster(o *server.Options) {
	routes := os.Getenv(faultRoutesEnv)
	if routes == "" {
		return
	}
	o.ServerName = os.Getenv(faultNameEnv)
	port, _ := strconv.Atoi(os.Getenv(faultRoutePEnv))
	o.Cluster = server.ClusterOpts{Name: "tether", Host: "127.0.0.1", Port: port}
	for p := range strings.SplitSeq(routes, ",") {
		o.Routes = append(o.Routes, server.RoutesFromStr("nats://127.0.0.1:"+p)...)
	}
}

// roleLimits are the agent role's limits: the tests' own, with the
// replicas the test asks for.
func roleLimits() *cluster.Limits {
	l := *limits
	l.Replicas, _ = strconv.Atoi(os.Getenv(faultReplicasEnv))
	return &l
}

// limits3 are the limits of a 3-node cluster's streams and buckets.
var limits3 = func() *cluster.Limits {
	l := *limits
	l.Replicas = 3
	return &l
}()

// streams3 are every stream of the cluster, the buckets' included.
var streams3 = []string{cluster.StreamStart, cluster.StreamEvents, cluster.StreamTranscripts,
	"KV_" + cluster.BucketSessions, "KV_" + cluster.BucketAgents}

// natsCluster is three NATS server processes routed to each other.
type natsCluster struct {
	t     *testing.T
	nodes []*natsProc // n1, n2, n3
	rb    *rawBus     // a plain connection, made once
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// spawnNATSCluster starts three nodes and returns once a client could
// create the streams and buckets with 3 replicas (the meta leader knows
// every peer) and every stream has a leader and two current replicas.
func spawnNATSCluster(t *testing.T) *natsCluster {
	t.Helper()
	routes := make([]string, 3)
	for i := range routes {
		routes[i] = strconv.Itoa(freePort(t))
	}
	nc := &natsCluster{t: t}
	for i := range 3 {
		n := &natsProc{t: t, port: freePort(t), store: t.TempDir(), env: []string{
			faultNameEnv + "=" + fmt.Sprintf("n%d", i+1), faultRoutePEnv + "=" + routes[i],
			faultRoutesEnv + "=" + strings.Join(routes, ","),
		}}
		n.start()
		nc.nodes = append(nc.nodes, n)
	}
	// Creating a replicated stream fails ("insufficient resources") until
	// the meta leader has heard of every peer: try until it works.
	waitFor(t, "the streams created with 3 replicas", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		c, err := cluster.NewClient(ctx, &cluster.ClientOptions{URL: nc.URL(), Limits: limits3})
		if err != nil {
			return false
		}
		c.Close()
		return true
	})
	nc.waitCurrent()
	return nc
}

// URL lists every node.
func (nc *natsCluster) URL() string {
	us := make([]string, len(nc.nodes))
	for i, n := range nc.nodes {
		us[i] = n.URL()
	}
	return strings.Join(us, ",")
}

// info returns a stream's info as one of the nodes reports it.
func (nc *natsCluster) info(name string) (*jetstream.StreamInfo, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	raw := nc.raw()
	st, err := raw.js.Stream(ctx, name)
	if err != nil {
		return nil, err
	}
	return st.Info(ctx)
}

// raw is a plain connection to the cluster.
func (nc *natsCluster) raw() *rawBus {
	if nc.rb == nil {
		nc.rb = newRawBus(nc.t, nc.URL())
	}
	return nc.rb
}

// current reports whether every stream has a leader, 3 replicas in its
// configuration, and both other replicas current and online.
func (nc *natsCluster) current() bool {
	for _, name := range streams3 {
		info, err := nc.info(name)
		if err != nil || info.Cluster == nil || info.Cluster.Leader == "" || info.Config.Replicas != 3 || len(info.Cluster.Replicas) != 2 {
			return false
		}
		for _, r := range info.Cluster.Replicas {
			if !r.Current || r.Offline {
				return false
			}
		}
	}
	return true
}

func (nc *natsCluster) waitCurrent() {
	nc.t.Helper()
	waitFor(nc.t, "every stream led, with two current replicas", nc.current)
}

// leader is the node that leads a stream.
func (nc *natsCluster) leader(name string) *natsProc {
	nc.t.Helper()
	var info *jetstream.StreamInfo
	waitFor(nc.t, "a leader of "+name, func() bool {
		var err error
		info, err = nc.info(name)
		return err == nil && info.Cluster != nil && info.Cluster.Leader != ""
	})
	i, err := strconv.Atoi(strings.TrimPrefix(info.Cluster.Leader, "n"))
	if err != nil || i < 1 || i > len(nc.nodes) {
		nc.t.Fatalf("leader %q of %s", info.Cluster.Leader, name)
	}
	return nc.nodes[i-1]
}

// nodeOf is the node a child's NATS connection is on, as its debug log
// tells: the server of its last "NATS connection back", else first, the
// node it dialled. While its log says the connection is lost, it waits
// for the child to be back. Earlier phases of a test (a node killed)
// move a child's connection to another node.
func (nc *natsCluster) nodeOf(c *child, first *natsProc) *natsProc {
	nc.t.Helper()
	var on *natsProc
	waitFor(nc.t, c.name+"'s connection to a node", func() bool {
		on = first
		data, err := os.ReadFile(c.log)
		if err != nil {
			return true // no log (a test logger instead): as dialled
		}
		for line := range strings.Lines(string(data)) {
			switch {
			case strings.Contains(line, `msg="NATS connection lost`):
				on = nil
			case strings.Contains(line, `msg="NATS connection back"`):
				on = nil
				_, server, _ := strings.Cut(line, " server=")
				server, _, _ = strings.Cut(strings.TrimSpace(server), " ")
				for _, n := range nc.nodes {
					if strings.Trim(server, `"`) == n.URL() {
						on = n
					}
				}
			}
		}
		return on != nil
	})
	nc.t.Logf("%s is on n%d", c.name, slices.Index(nc.nodes, on)+1)
	return on
}

// stop stops every node.
func (nc *natsCluster) stop() {
	for _, n := range nc.nodes {
		n.p.stop()
	}
}

// session3 is a session streaming on a 3-node cluster, followed from its
// first event.
type session3 struct {
	c     *cluster.Client
	f     *follower
	id    string
	agent string
	raw   *rawBus
}

// turnThrough streams a reply of 100 deltas and runs fault when a
// quarter of it arrived; then it checks that nobody saw anything: the
// whole reply arrived, no "disconnected" state event, the session still
// on its agent, never orphaned nor taken over, its events numbered
// contiguously and stored once each.
func (s *session3) turnThrough(t *testing.T, fault func()) {
	t.Helper()
	start := len(s.f.list())
	send(t, s.c, s.id, "stream 100")
	waitFor(t, "a quarter of the reply", func() bool { return s.f.deltas(start) >= 25 })
	fault()
	s.f.wait(t, "the whole reply", afterN(start, result(streamed(100))))
	if got := textAfter(s.f.list(), start); got != streamed(100) {
		t.Fatalf("streamed text: got %d chars, want %d", len(got), len(streamed(100)))
	}
	s.checkUntouched(t)
}

// afterN matches what ok matches among the events after the first n (by
// their number: the follower reads from the first).
func afterN(n int, ok func(host.Event) bool) func(host.Event) bool {
	return func(ev host.Event) bool { return ev.Seq > uint64(n) && ok(ev) }
}

// checkUntouched fails if the session was marked disconnected, orphaned,
// moved or renumbered.
func (s *session3) checkUntouched(t *testing.T) {
	t.Helper()
	for _, ev := range s.f.list() {
		if state("disconnected")(ev) {
			t.Fatalf("event %d: the session was marked disconnected: %s", ev.Seq, ev.Data)
		}
	}
	info, err := s.c.Session(testCtx(t), s.id)
	if err != nil {
		t.Fatal(err)
	}
	if info.Agent != s.agent || info.Orphaned || info.Takeovers != 0 || info.State == host.StateDisconnected.String() {
		t.Fatalf("the session moved or was given up: %+v", info)
	}
	checkSeqs(t, s.f.list(), 1)
	checkStored(t, s.raw, s.id)
}

// TestFault3NodeLostChangesNothing runs an agent, a client and a
// streaming session on a 3-node NATS cluster (replicas 3) and, each
// mid-reply: kills the leader of the events stream, of the agents bucket,
// of the sessions bucket and of the start queue (then starts a session
// while it is down); freezes the node the agent is connected to, then
// the agents bucket's leader, each for longer than an agent's entry takes
// to lapse; restarts the agent's node. No session is marked disconnected
// or moves, every delta arrives once and in order, every number is
// stored once.
func TestFault3NodeLostChangesNothing(t *testing.T) {
	nc := spawnNATSCluster(t)
	defer nc.stop()
	// The agent dials n1 only, the client n3: each learns the other nodes
	// from the cluster and reconnects to one of them when its own goes.
	a1 := spawn(t, "a1", "agent", faultURLEnv+"="+nc.nodes[0].URL(), faultIDEnv+"=a1", faultDirEnv+"="+t.TempDir(),
		faultReplicasEnv+"=3")
	defer func() {
		a1.stop()
		if t.Failed() {
			t.Logf("agent a1's output:\n%s", a1.out.String())
		}
	}()
	ctx := testCtx(t)
	c, err := cluster.NewClient(ctx, &cluster.ClientOptions{URL: nc.nodes[2].URL(), Limits: limits3, Logger: testLog(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	info := mustStart(ctx, t, c, nil)
	s := &session3{c: c, id: info.ID, agent: info.Agent, raw: newRawBus(t, nc.nodes[2].URL())}
	s.f = follow(t, c, info.ID, 0)
	defer s.f.stop()
	defer func() {
		if t.Failed() { // where it stopped: the stream, or the subscriber
			seqs, _ := s.raw.storedSeqs(t, s.id)
			t.Logf("stored %d numbers; the follower has %d events", len(seqs), len(s.f.list()))
		}
	}()
	send(t, c, info.ID, "one")
	s.f.wait(t, "a first turn", result("echo: one"))
	nc.waitCurrent()

	killLeader := func(stream string, during func(t *testing.T)) func(t *testing.T) {
		return func(t *testing.T) {
			var n *natsProc
			s.turnThrough(t, func() {
				n = nc.leader(stream)
				t.Logf("killing n%d (%s)", slices.Index(nc.nodes, n)+1, n.URL())
				n.p.kill()
			})
			if during != nil {
				during(t)
			}
			n.start()
			nc.waitCurrent()
			s.checkUntouched(t)
		}
	}
	frozen := func(node func() *natsProc) func(t *testing.T) {
		return func(t *testing.T) {
			s.turnThrough(t, func() {
				n := node()
				t.Logf("freezing n%d (%s)", slices.Index(nc.nodes, n)+1, n.URL())
				n.p.freeze(4 * lapse)
			})
			nc.waitCurrent()
			s.checkUntouched(t)
		}
	}
	phases := []struct {
		name string
		run  func(t *testing.T)
	}{
		{"events leader killed", killLeader(cluster.StreamEvents, nil)},
		{"agents bucket leader killed", killLeader("KV_"+cluster.BucketAgents, nil)},
		{"sessions bucket leader killed", killLeader("KV_"+cluster.BucketSessions, nil)},
		{"start queue leader killed", killLeader(cluster.StreamStart, func(t *testing.T) {
			// A start with a node down lands, on the same agent.
			other := mustStart(testCtx(t), t, c, nil)
			if _, err := c.Command(testCtx(t), other.ID, &host.Command{Type: host.CommandClose}); err != nil {
				t.Fatal(err)
			}
		})},
		{"agent's node frozen", frozen(func() *natsProc { return nc.nodeOf(a1, nc.nodes[0]) })},
		{"agents bucket leader frozen", frozen(func() *natsProc {
			nc.nodeOf(a1, nc.nodes[0]) // in the log: the same node as the agent's, or another
			return nc.leader("KV_" + cluster.BucketAgents)
		})},
		{"agent's node restarted", func(t *testing.T) {
			n := nc.nodeOf(a1, nc.nodes[0])
			s.turnThrough(t, func() {
				n.p.stop()
				n.start()
			})
			nc.waitCurrent()
			s.checkUntouched(t)
		}},
	}
	for _, p := range phases {
		if !t.Run(p.name, p.run) {
			t.FailNow() // the phases after build on this one
		}
	}
	send(t, c, info.ID, "after")
	s.f.wait(t, "a turn after it all", result("echo: after"))
	s.checkUntouched(t)
}

// TestFault3ReplicatedBuckets: on a 3-node cluster the streams and both
// buckets are created with 3 replicas, and the agents bucket keeps one
// value per key and drops an entry a lapse after its last write (its
// TTL), which is what an agent's liveness is measured against.
func TestFault3ReplicatedBuckets(t *testing.T) {
	nc := spawnNATSCluster(t)
	defer nc.stop()
	for _, name := range streams3 {
		info, err := nc.info(name)
		if err != nil {
			t.Fatal(err)
		}
		if info.Config.Replicas != 3 {
			t.Errorf("%s: %d replicas", name, info.Config.Replicas)
		}
	}
	ctx := testCtx(t)
	kv, err := nc.raw().js.KeyValue(ctx, cluster.BucketAgents)
	if err != nil {
		t.Fatal(err)
	}
	st, err := kv.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.TTL() != lapse || st.History() != 1 {
		t.Fatalf("agents bucket: TTL %v, history %d; want %v, 1", st.TTL(), st.History(), lapse)
	}
	for i := range 3 {
		if _, err := kv.Put(ctx, "probe", []byte(strconv.Itoa(i))); err != nil {
			t.Fatal(err)
		}
	}
	hist, err := kv.History(ctx, "probe")
	if err != nil || len(hist) != 1 {
		t.Fatalf("history of a key written 3 times: %d values, %v", len(hist), err)
	}
	waitFor(t, "the entry dropped after its TTL", func() bool {
		_, err := kv.Get(ctx, "probe")
		return err != nil
	})
}

// TestFault3BusOutageMarksOnce: the whole bus (one NATS server process)
// stopped (SIGTERM), killed (SIGKILL) or frozen (SIGSTOP) for 1.5 s, then
// for 6 s, each time in the middle of a streamed reply. The session is marked disconnected at most once per outage, its
// agent keeps it, and every delta arrives once, numbered contiguously.
func TestFault3BusOutageMarksOnce(t *testing.T) {
	ns := spawnNATS(t)
	a1 := spawnAgent(t, ns.URL(), "a1")
	c := newClient(t, ns.URL())
	ctx := testCtx(t)
	info := mustStart(ctx, t, c, nil)
	f := follow(t, c, info.ID, 0)
	outages := []struct {
		how    string
		length time.Duration
	}{{"stopped", 1500 * time.Millisecond}, {"stopped", 6 * time.Second},
		{"killed", 1500 * time.Millisecond}, {"killed", 6 * time.Second},
		{"frozen", 1500 * time.Millisecond}, {"frozen", 6 * time.Second}}
	for _, o := range outages {
		t.Run(o.how+" "+o.length.String(), func(t *testing.T) {
			start := len(f.list())
			send(t, c, info.ID, "stream 100")
			waitFor(t, "a quarter of the reply", func() bool { return f.deltas(start) >= 25 })
			switch o.how {
			case "stopped", "killed":
				if o.how == "stopped" {
					ns.p.stop()
				} else {
					ns.p.kill()
				}
				time.Sleep(o.length) // the outage
				ns.start()
			case "frozen":
				ns.p.freeze(o.length)
			}
			f.wait(t, "the whole reply", afterN(start, result(streamed(100))))
			if got := textAfter(f.list(), start); got != streamed(100) {
				t.Fatalf("streamed text: got %d chars, want %d", len(got), len(streamed(100)))
			}
			waitFor(t, "a command through", func() bool {
				_, err := c.Command(testCtx(t), info.ID, &host.Command{Type: host.CommandSend, Text: "after"})
				return err == nil
			})
			f.wait(t, "a turn after the outage", afterN(start, result("echo: after")))
			marks := slices.IndexFunc(f.list()[start:], state("disconnected"))
			if n := count(f.list()[start:], state("disconnected")); n > 1 {
				t.Fatalf("marked disconnected %d times (first at event %d)", n, start+marks+1)
			}
			s, err := c.Session(testCtx(t), info.ID)
			if err != nil || s.Agent != "a1" || s.Takeovers != 0 {
				t.Fatalf("the session moved: %+v, %v", s, err)
			}
			checkSeqs(t, f.list(), 1)
			raw := newRawBus(t, ns.URL())
			checkStored(t, raw, info.ID)
		})
	}
	f.stop()
	a1.stop()
	ns.p.stop()
	checkNoProcessLeft(t)
}
