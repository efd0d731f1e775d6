package cluster_test

// Fault tests with real OS processes: the NATS server and the agents run
// as processes of their own (this test binary run again, TestMain
// dispatching on faultRoleEnv), so that a test can freeze one (SIGSTOP),
// thaw it (SIGCONT), stop it or kill it (SIGKILL) as an operator, the
// kernel or a VM pause would, while the client under test runs here.
//
// The agents run the fake CLI (memoryCLI) in their own process rather than
// the real CLI on the fake Messages API: "stream N" scripts a reply of
// exactly N numbered ten-character deltas at a steady pace, so a test can
// freeze or kill the agent in the middle of a turn and then account for
// every character, and a frozen agent freezes its CLI with it, as a
// stopped VM would.

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
	"github.com/tetherhq/tether/cluster"
	"github.com/tetherhq/tether/host"
	"github.com/tetherhq/tether/internal/proctree"
	"github.com/tetherhq/tether/internal/syncbuf"
)

const (
	faultRoleEnv  = "TETHER_CLUSTER_FAULT_ROLE"
	faultReadyEnv = "TETHER_CLUSTER_FAULT_READY" // a file the child writes once ready
	faultPortEnv  = "TETHER_CLUSTER_FAULT_PORT"
	faultStoreEnv = "TETHER_CLUSTER_FAULT_STORE"
	faultURLEnv   = "TETHER_CLUSTER_FAULT_URL"
	faultIDEnv    = "TETHER_CLUSTER_FAULT_ID"
	faultDirEnv   = "TETHER_CLUSTER_FAULT_DIR"
	faultCapEnv   = "TETHER_CLUSTER_FAULT_CAPACITY"
	faultDrainEnv = "TETHER_CLUSTER_FAULT_DRAIN" // SIGTERM drains first
	// faultJournalEnv: the agent's sessions' journal bound (MaxEvents).
	faultJournalEnv = "TETHER_CLUSTER_FAULT_JOURNAL"
	// faultLogEnv: the file an agent writes its debug log to, whose end
	// the test prints if it fails.
	faultLogEnv = "TETHER_CLUSTER_FAULT_LOG"

	// lapse is how long an agent's registry entry outlives its last beat.
	lapse = 3 * heartbeat
)

// runFaultRole is the child's main: a NATS server or an agent, until
// SIGTERM.
func runFaultRole(role string) int {
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM, syscall.SIGINT)
	ready := func() int {
		if err := os.WriteFile(os.Getenv(faultReadyEnv), []byte("ready"), 0o600); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		<-term
		return 0
	}
	switch role {
	case "nats":
		port, _ := strconv.Atoi(os.Getenv(faultPortEnv))
		o := &server.Options{ServerName: "n1", Host: "127.0.0.1", Port: port, JetStream: true,
			StoreDir: os.Getenv(faultStoreEnv), NoLog: true, NoSigs: true}
		joinCluster(o) // one node of three, when the test asks (fault3_test.go)
		s, err := server.NewServer(o)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		s.Start()
		if !s.ReadyForConnections(30 * time.Second) {
			fmt.Fprintln(os.Stderr, "NATS server not ready")
			return 2
		}
		code := ready()
		s.Shutdown()
		s.WaitForShutdown()
		return code
	case "agent":
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		capacity, _ := strconv.Atoi(os.Getenv(faultCapEnv))
		var journal *host.JournalOptions
		if n, _ := strconv.Atoi(os.Getenv(faultJournalEnv)); n > 0 {
			journal = &host.JournalOptions{MaxEvents: n}
		}
		logger := testLogger()
		if path := os.Getenv(faultLogEnv); logger == nil && path != "" {
			f, err := os.Create(path)
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 2
			}
			defer f.Close()
			logger = slog.New(slog.NewTextHandler(f, &slog.HandlerOptions{Level: slog.LevelDebug}))
		}
		a, err := cluster.NewAgent(ctx, &cluster.AgentOptions{
			URL: os.Getenv(faultURLEnv), ID: os.Getenv(faultIDEnv), Capacity: max(capacity, 2), Limits: roleLimits(),
			MirrorInterval: 20 * time.Millisecond, Logger: logger,
			Session: &host.Options{CLI: &claude.Options{
				Transport: &claudetest.FakeCLI{Script: memoryCLI},
				Env:       map[string]string{claude.EnvConfigDir: os.Getenv(faultDirEnv)},
			}, Journal: journal},
		})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		code := ready()
		if os.Getenv(faultDrainEnv) != "" {
			dctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			if err := a.Drain(dctx); err != nil {
				fmt.Fprintln(os.Stderr, "drain:", err)
				code = 1
			}
			cancel()
		}
		a.Close()
		return code
	}
	fmt.Fprintln(os.Stderr, "unknown role", role)
	return 2
}

// child is a process of the fault tests.
type child struct {
	t    testing.TB
	name string
	cmd  *exec.Cmd
	out  *syncbuf.Buffer
	done chan struct{} // closed once Wait returned
	log  string        // its debug log (spawn's children)
}

// spawn runs this test binary again in a role and waits until it is ready.
func spawn(t testing.TB, name, role string, env ...string) *child {
	t.Helper()
	dir := t.TempDir()
	readyFile, logFile := filepath.Join(dir, "ready"), filepath.Join(dir, "log")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), append(env, faultRoleEnv+"="+role, faultReadyEnv+"="+readyFile, faultLogEnv+"="+logFile)...)
	c := startChild(t, name, cmd)
	c.log = logFile
	// Runs before the child is stopped (cleanups run last first): an
	// agent's log and goroutines as they were when the test failed (Go
	// dumps them on SIGQUIT), so that a failure seen once on a busy
	// machine says where each process stood.
	t.Cleanup(func() {
		data, err := os.ReadFile(logFile)
		if err != nil || !t.Failed() {
			return
		}
		t.Logf("the last %d lines of %s's debug log:\n%s", childLogLines, name, lastLines(string(data), childLogLines))
		select {
		case <-c.done:
			return // it ended before the test did
		default:
		}
		if c.end(syscall.SIGQUIT) {
			t.Logf("%s's goroutines:\n%s", name, c.out.String())
		}
	})
	c.waitReady(func() bool {
		_, err := os.Stat(readyFile)
		return err == nil
	})
	return c
}

// startChild starts cmd as a child of the test, its output collected,
// stopped (SIGTERM) when the test ends.
func startChild(t testing.TB, name string, cmd *exec.Cmd) *child {
	t.Helper()
	out := &syncbuf.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	// The child dies with this process, whatever happens to it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &child{t: t, name: name, cmd: cmd, out: out, done: make(chan struct{})}
	go func() {
		cmd.Wait()
		close(c.done)
	}()
	t.Cleanup(c.stop)
	return c
}

// printOnFailure prints the last childLogLines lines of what the child
// wrote (a tether process's -v log) when the test fails: the fleets of
// the compatibility test are binaries of their own, whose logs no
// in-process kit sees.
func (c *child) printOnFailure() {
	c.t.Cleanup(func() {
		if c.t.Failed() {
			c.t.Logf("the last %d lines of %s's output:\n%s", childLogLines, c.name, lastLines(c.out.String(), childLogLines))
		}
	})
}

// childLogLines is how much of a child's debug log a failed test prints.
const childLogLines = 400

// lastLines is the last n lines of s, each cut at 400 bytes.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	lines = lines[max(0, len(lines)-n):]
	for i, l := range lines {
		if len(l) > 400 {
			lines[i] = l[:400] + "…"
		}
	}
	return strings.Join(lines, "\n")
}

// waitReady waits until ready says so, failing the test if the child
// exits first or takes over a minute.
func (c *child) waitReady(ready func() bool) {
	c.t.Helper()
	deadline := time.After(time.Minute)
	for !ready() {
		select {
		case <-c.done:
			c.t.Fatalf("%s exited before it was ready: %s", c.name, c.out.String())
		case <-deadline:
			c.t.Fatalf("%s not ready: %s", c.name, c.out.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func (c *child) signal(sig syscall.Signal) {
	c.t.Helper()
	if err := c.cmd.Process.Signal(sig); err != nil {
		c.t.Fatalf("%s: %v", c.name, err)
	}
}

// freeze stops the process (SIGSTOP) for d, then lets it go on.
func (c *child) freeze(d time.Duration) {
	c.t.Helper()
	c.signal(syscall.SIGSTOP)
	time.Sleep(d) // the fault itself lasts this long
	c.signal(syscall.SIGCONT)
}

// kill ends the process at once (SIGKILL) and waits for it.
func (c *child) kill() {
	c.cmd.Process.Signal(syscall.SIGKILL)
	<-c.done
}

// stop ends the process as an operator would (SIGTERM; SIGKILL after a
// minute) and waits for it.
func (c *child) stop() {
	if !c.end(syscall.SIGTERM) {
		c.t.Errorf("%s did not stop on SIGTERM: %s", c.name, c.out.String())
		c.kill()
	}
}

// end sends sig to the process, after SIGCONT (a frozen one could not
// act on it), and waits up to a minute for it to exit; it reports whether
// it did (at once when it had already exited).
func (c *child) end(sig syscall.Signal) bool {
	select {
	case <-c.done:
		return true
	default:
	}
	c.cmd.Process.Signal(syscall.SIGCONT)
	c.cmd.Process.Signal(sig)
	select {
	case <-c.done:
		return true
	case <-time.After(time.Minute):
		return false
	}
}

// natsProc is a NATS server process on a port and store of its own, which
// a test can stop and start again.
type natsProc struct {
	t     testing.TB
	port  int
	store string
	env   []string // more of the role's environment (a cluster node's)
	p     *child
}

func spawnNATS(t testing.TB) *natsProc {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	n := &natsProc{t: t, port: port, store: t.TempDir()}
	n.start()
	return n
}

func (n *natsProc) start() {
	n.t.Helper()
	n.p = spawn(n.t, "nats", "nats", append([]string{faultPortEnv + "=" + strconv.Itoa(n.port), faultStoreEnv + "=" + n.store}, n.env...)...)
}

func (n *natsProc) URL() string { return fmt.Sprintf("nats://127.0.0.1:%d", n.port) }

func spawnAgent(t *testing.T, url, id string) *child {
	t.Helper()
	return spawn(t, id, "agent", faultURLEnv+"="+url, faultIDEnv+"="+id, faultDirEnv+"="+t.TempDir())
}

// checkNoProcessLeft fails if a process this test started still runs
// (checked once every child was stopped, through /proc).
func checkNoProcessLeft(t *testing.T) {
	t.Helper()
	waitFor(t, "every child process gone", func() bool {
		tree, err := proctree.Tree(os.Getpid())
		if err != nil {
			t.Fatal(err)
		}
		return len(tree) == 1 // this process only
	})
}

// streamed is the text "stream n" replies with.
func streamed(n int) string {
	var b strings.Builder
	for i := range n {
		b.WriteString(streamChunk(i))
	}
	return b.String()
}

// deltaText returns the text of a text-delta event.
func deltaText(ev host.Event) (string, bool) {
	if ev.Kind != host.EventMessage {
		return "", false
	}
	var m struct {
		Type  string `json:"type"`
		Event struct {
			Type  string `json:"type"`
			Delta struct {
				Text string `json:"text"`
			} `json:"delta"`
		} `json:"event"`
	}
	if json.Unmarshal(ev.Data, &m) != nil || m.Type != "stream_event" || m.Event.Type != "content_block_delta" {
		return "", false
	}
	return m.Event.Delta.Text, true
}

// textAfter is the streamed text of the events from index from on.
func textAfter(evs []host.Event, from int) string {
	var b strings.Builder
	for _, ev := range evs[from:] {
		if s, ok := deltaText(ev); ok {
			b.WriteString(s)
		}
	}
	return b.String()
}

// deltas counts the text deltas a follower has seen from index from on.
func (f *follower) deltas(from int) int {
	n := 0
	for _, ev := range f.list()[from:] {
		if _, ok := deltaText(ev); ok {
			n++
		}
	}
	return n
}

// checkStored fails unless the stream holds every number from 1 up
// exactly once (the agents' events and the markers).
func checkStored(t *testing.T, raw *rawBus, id string) {
	t.Helper()
	seqs, subjects := raw.storedSeqs(t, id)
	for i, n := range seqs {
		if n != uint64(i+1) {
			t.Fatalf("stored numbers %v (%v): want each once, from 1", seqs, subjects)
		}
	}
}

// faultTurn starts a session on the agent processes, streams a long reply
// and runs fault in the middle of it; the reply must arrive whole, the
// numbers contiguous and stored once each, and the session must go on.
func faultTurn(t *testing.T, ns *natsProc, fault func(owner string)) (*cluster.Client, *follower, string) {
	ctx := testCtx(t)
	c := newClient(t, ns.URL())
	info := mustStart(ctx, t, c, nil)
	f := follow(t, c, info.ID, 0)
	send(t, c, info.ID, "stream 100")
	from := len(f.list())
	waitFor(t, "a quarter of the reply", func() bool { return f.deltas(from) >= 25 })
	fault(info.Agent)
	return c, f, info.ID
}

// TestFaultAgentFrozen: an agent process stopped (SIGSTOP) for four
// times the heartbeat lapse (twice what the clients wait before judging
// an agent unheard gone) in the middle of a streamed reply is declared
// gone and its session marked disconnected; thawed, it carries on: every
// character of the reply arrives, once, the marker's number is never
// used again, and the session takes commands again.
func TestFaultAgentFrozen(t *testing.T) {
	ns := spawnNATS(t)
	a1 := spawnAgent(t, ns.URL(), "a1")
	raw := newRawBus(t, ns.URL())
	c, f, id := faultTurn(t, ns, func(string) { a1.freeze(4 * lapse) })
	f.wait(t, "the whole reply", result(streamed(100)))
	if got := textAfter(f.list(), 0); got != streamed(100) {
		t.Fatalf("streamed text: got %d chars, want %d:\n%q", len(got), len(streamed(100)), got)
	}
	checkSeqs(t, f.list(), 1)
	f.wait(t, "the disconnected marker", state("disconnected"))
	waitFor(t, "the agent back", func() bool {
		s, err := c.Session(testCtx(t), id)
		return err == nil && s.Agent == "a1" && !s.Orphaned
	})
	send(t, c, id, "after")
	f.wait(t, "a turn after the freeze", result("echo: after"))
	checkSeqs(t, f.list(), 1)
	checkStored(t, raw, id)
	f.stop()
	a1.stop()
	ns.p.stop()
	checkNoProcessLeft(t)
}

// checkOutageSurvived checks a session after a NATS outage mid-reply: the
// whole reply arrived, a command goes through again and its turn ends,
// and the numbers are contiguous and stored once each.
func checkOutageSurvived(t *testing.T, c *cluster.Client, f *follower, raw *rawBus, id string) {
	t.Helper()
	f.wait(t, "the whole reply", result(streamed(100)))
	if got := textAfter(f.list(), 0); got != streamed(100) {
		t.Fatalf("streamed text: got %d chars, want %d", len(got), len(streamed(100)))
	}
	waitFor(t, "a command through", func() bool {
		_, err := c.Command(testCtx(t), id, &host.Command{Type: host.CommandSend, Text: "after"})
		return err == nil
	})
	f.wait(t, "a turn after the outage", result("echo: after"))
	checkSeqs(t, f.list(), 1)
	checkStored(t, raw, id)
	// The agent still takes start requests: its pull came back too.
	info, err := c.Start(testCtx(t), nil)
	if err != nil {
		t.Fatalf("a start after the outage: %v", err)
	}
	if _, err := c.Command(testCtx(t), info.ID, &host.Command{Type: host.CommandClose}); err != nil {
		t.Fatalf("closing the session started after the outage: %v", err)
	}
}

// TestFaultNATSFrozen: the NATS server process stopped (SIGSTOP) for three
// times the heartbeat lapse mid-reply: nothing is lost or numbered twice.
func TestFaultNATSFrozen(t *testing.T) {
	ns := spawnNATS(t)
	a1 := spawnAgent(t, ns.URL(), "a1")
	raw := newRawBus(t, ns.URL())
	c, f, id := faultTurn(t, ns, func(string) { ns.p.freeze(3 * lapse) })
	checkOutageSurvived(t, c, f, raw, id)
	f.stop()
	a1.stop()
	ns.p.stop()
	checkNoProcessLeft(t)
}

// TestFaultNATSStopped: the NATS server process stopped (SIGTERM) and
// started again on its store after three times the heartbeat lapse,
// mid-reply: nothing acknowledged is lost, nothing numbered twice.
func TestFaultNATSStopped(t *testing.T) {
	ns := spawnNATS(t)
	a1 := spawnAgent(t, ns.URL(), "a1")
	c, f, id := faultTurn(t, ns, func(string) {
		ns.p.stop()
		time.Sleep(3 * lapse) // the outage
		ns.start()
	})
	raw := newRawBus(t, ns.URL())
	checkOutageSurvived(t, c, f, raw, id)
	// The agent's log tells the operator of the outage (the file holds
	// it unless TETHER_TEST_LOG sent it to stderr).
	if data, err := os.ReadFile(a1.log); err == nil {
		if log := string(data); !strings.Contains(log, "NATS connection lost") || !strings.Contains(log, "NATS connection back") {
			t.Errorf("the agent's log says nothing of the outage:\n%s", lastLines(log, 40))
		}
	} else if testLogger() == nil {
		t.Fatal(err)
	}
	f.stop()
	a1.stop()
	ns.p.stop()
	checkNoProcessLeft(t)
}

// TestFaultNATSFrozenWhileWriting: a connection dialled as agents and
// clients dial theirs (cluster.Connect), to a NATS server that freezes
// (SIGSTOP; a network that drops everything looks the same) while the
// process writes more than the sockets between them hold: an agent with
// many sessions streaming. The library waits a minute on a write by
// default, and while a write waits the connection's pings cannot be
// counted either: the agent would cling to its lost server for a minute,
// while the cluster judges it gone after six heartbeats. The connection
// moves to the other server while the first is still frozen, and the
// writes return.
func TestFaultNATSFrozenWhileWriting(t *testing.T) {
	n1, n2 := spawnNATS(t), spawnNATS(t)
	nc, err := cluster.Connect(n1.URL()+","+n2.URL(), "tether-test", nats.DontRandomize())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if nc.ConnectedUrl() != n1.URL() {
		t.Fatalf("connected to %s, not the first server", nc.ConnectedUrl())
	}
	n1.p.signal(syscall.SIGSTOP)
	wrote := make(chan struct{})
	go func() {
		defer close(wrote)
		payload := make([]byte, 64<<10)
		for range 256 { // 16 MiB; an error (the reconnect buffer full) is fine
			nc.Publish("tether.test.frozen", payload)
		}
	}()
	waitFor(t, "the connection on the other server", func() bool { return nc.ConnectedUrl() == n2.URL() })
	select {
	case <-wrote:
	case <-testCtx(t).Done():
		t.Fatal("the writes still wait on the frozen server")
	}
	nc.Close()
	n1.p.stop() // SIGCONT first
	n2.p.stop()
	checkNoProcessLeft(t)
}

// TestFaultAgentKilled: the agent process running a session is killed
// (SIGKILL) mid-reply; the session shows disconnected, fails over to the
// other agent process with its conversation, and its events go on with
// contiguous numbers, stored once each.
func TestFaultAgentKilled(t *testing.T) {
	ns := spawnNATS(t)
	agents := map[string]*child{"a1": spawnAgent(t, ns.URL(), "a1"), "a2": spawnAgent(t, ns.URL(), "a2")}
	raw := newRawBus(t, ns.URL())
	var owner string
	c, f, id := faultTurn(t, ns, func(o string) {
		owner = o
		agents[o].kill()
	})
	f.wait(t, "the disconnected marker", state("disconnected"))
	ctx := testCtx(t)
	info, err := c.Resume(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if info.Agent == owner || info.Agent == "" {
		t.Fatalf("resumed on %q, the killed agent was %q", info.Agent, owner)
	}
	send(t, c, id, "recall")
	f.wait(t, "the conversation carried over", result("remember: stream 100"))
	from := len(f.list())
	send(t, c, id, "stream 30")
	f.wait(t, "a whole reply after the takeover", result(streamed(30)))
	if got := textAfter(f.list(), from); got != streamed(30) {
		t.Fatalf("streamed text after the takeover: got %q", got)
	}
	checkSeqs(t, f.list(), 1)
	checkStored(t, raw, id)
	f.stop()
	var wg sync.WaitGroup
	for _, a := range agents {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a.stop()
		}()
	}
	wg.Wait()
	ns.p.stop()
	checkNoProcessLeft(t)
}

// streamPrompt parses "stream N".
func streamPrompt(prompt string) (int, bool) {
	s, ok := strings.CutPrefix(prompt, "stream ")
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	return n, err == nil && n > 0 && n <= 10000
}

// streamChunk is the i-th delta of a streamed reply: ten characters.
func streamChunk(i int) string { return fmt.Sprintf("%09d|", i) }

// streamReply streams n deltas, one every 10 ms (so that a fault lands in
// the middle of the turn), then the whole text as the message and result.
func streamReply(c *claudetest.CLI, n int) {
	c.Write(c.SystemInit(), textStart(c))
	for i := range n {
		c.Write(c.TextDelta(0, streamChunk(i)))
		time.Sleep(10 * time.Millisecond)
	}
	text := streamed(n)
	c.Write(c.AssistantText(text), c.ResultSuccess(text))
}

// floodPrompt parses "flood N".
func floodPrompt(prompt string) (int, bool) {
	s, ok := strings.CutPrefix(prompt, "flood ")
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	return n, err == nil && n > 0 && n <= 100000
}

// floodReply streams n deltas as fast as the session reads them (each a
// write of its own, so that a session that stops reading stops the
// script on its pipe), then the whole text as the message and result.
func floodReply(c *claudetest.CLI, n int) {
	c.Write(c.SystemInit(), textStart(c))
	for i := range n {
		if c.Write(c.TextDelta(0, streamChunk(i))) != nil {
			return
		}
	}
	text := streamed(n)
	c.Write(c.AssistantText(text), c.ResultSuccess(text))
}

// TestFaultNATSFrozenBackpressure: the NATS server frozen (SIGSTOP) while
// a session floods 20,000 deltas, far more than its journal holds (512
// events here: the agent's publisher holds it, so the session stops
// reading its CLI once 256 wait). The freeze, two heartbeat lapses, is
// hundreds of times what the journal holds at the flood's rate (the
// issue's 30 s would prove nothing more and cost CI half a minute): with
// events skipped when the publisher fell behind, as before batches, the
// stream would have a gap and the follower a resync. Every delta arrives,
// in order; the stored numbers are contiguous, once each, with no marker;
// and the heavy traffic went in batches.
func TestFaultNATSFrozenBackpressure(t *testing.T) {
	const n = 20000
	ns := spawnNATS(t)
	a1 := spawn(t, "a1", "agent", faultURLEnv+"="+ns.URL(), faultIDEnv+"=a1", faultDirEnv+"="+t.TempDir(), faultJournalEnv+"=512")
	raw := newRawBus(t, ns.URL())
	ctx := testCtx(t)
	c := newClient(t, ns.URL())
	info := mustStart(ctx, t, c, nil)
	f := follow(t, c, info.ID, 0)
	send(t, c, info.ID, "flood "+strconv.Itoa(n))
	from := len(f.list())
	waitFor(t, "a tenth of the flood", func() bool { return f.deltas(from) >= n/10 })
	ns.p.freeze(2 * lapse)
	f.wait(t, "the whole flood", result(streamed(n)))
	if got := textAfter(f.list(), 0); got != streamed(n) {
		t.Fatalf("streamed text: got %d chars, want %d", len(got), len(streamed(n)))
	}
	for _, ev := range f.list() {
		if state("disconnected")(ev) {
			t.Fatalf("a disconnected marker at %d: the agent was never gone", ev.Seq)
		}
	}
	checkSeqs(t, f.list(), 1)
	checkStored(t, raw, info.ID)
	if msgs, batches := raw.batches(t, info.ID); batches == 0 {
		t.Errorf("%d messages, none a batch", msgs)
	} else {
		t.Logf("%d events stored in %d messages, %d of them batches", len(f.list()), msgs, batches)
	}
	f.stop()
	a1.stop()
	ns.p.stop()
	checkNoProcessLeft(t)
}
