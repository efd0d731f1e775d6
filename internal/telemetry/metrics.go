// Package telemetry holds the plumbing the packages share for metrics
// (this file) and traces (trace.go): the metric definitions, so that the
// names and labels agreed with the alert rules live in one place.
//
// Every metric is optional: a nil prometheus.Registerer gives nil
// collectors, and every method of a nil *Host, *Serve or *Cluster is a
// no-op, so that code without metrics pays one nil check.
//
// Label values are bounded: states, reasons and roles come from fixed
// lists, models are capped (see maxModels). Never a session id, a path or
// a person's name. Per-person cost needs an identity the server does not
// have yet (one token for everyone); when it does, it goes behind an
// explicit option, off by default.
package telemetry

import (
	"errors"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// register registers c, or returns the equal collector registered before
// (two managers, or a server and an agent, sharing one registry count
// into the same series).
func register[T prometheus.Collector](reg prometheus.Registerer, c T) T {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if old, ok := are.ExistingCollector.(T); ok {
				return old
			}
		}
		panic(err) // a programming error: inconsistent definitions
	}
	return c
}

// Exit reasons of tether_cli_exits_total.
const (
	ExitClosed  = "closed"  // the host closed it
	ExitKilled  = "killed"  // a forced interrupt killed it
	ExitExited  = "exited"  // it ended on its own with status 0
	ExitCrashed = "crashed" // it died (a signal, a non-zero status, a broken pipe)
)

// Who ended an approval's wait: tether_approval_wait_seconds{answered_by}.
const (
	ByPerson    = "person"    // a person answered (a UI, the API, a deny-and-interrupt)
	ByPolicy    = "policy"    // the session's automatic policy answered
	ByWithdrawn = "withdrawn" // the CLI stopped waiting (the turn or the CLI ended)
)

// Approval kinds of tether_pending_approvals{kind}.
const (
	KindTool     = "tool"
	KindQuestion = "question"
)

// maxModels bounds the model label: beyond it, further models count as
// "other".
const maxModels = 32

// Host is the host layer's metrics (a Manager's sessions).
type Host struct {
	starts, startFailures prometheus.Counter
	exits                 *prometheus.CounterVec
	turn                  prometheus.Histogram
	wait                  *prometheus.HistogramVec
	tokens, cost          *prometheus.CounterVec
	sessions              *sessionGauges
	src                   *sessionSource

	mu     sync.Mutex
	models map[string]struct{}
}

// Counts is what a sessions source fills at scrape time: sessions by
// state name, pending approvals by kind.
type Counts struct {
	States  map[string]int
	Pending map[string]int
}

// NewHost registers the host metrics with reg (nil: returns nil, no
// metrics). states are every state name, so that each series exists from
// the start; count is called at each scrape for the sessions by state
// and the pending approvals (several hosts on one registry add up).
// Release stops count being called.
func NewHost(reg prometheus.Registerer, states []string, count func(*Counts)) *Host {
	if reg == nil {
		return nil
	}
	h := &Host{models: map[string]struct{}{}}
	h.starts = register(reg, prometheus.NewCounter(prometheus.CounterOpts{
		Name: "tether_cli_starts_total", Help: "Claude Code CLI processes started (restarts included).",
	}))
	h.startFailures = register(reg, prometheus.NewCounter(prometheus.CounterOpts{
		Name: "tether_cli_start_failures_total", Help: "CLI starts that failed (not found, exited during start-up, timed out).",
	}))
	h.exits = register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "tether_cli_exits_total", Help: "CLI processes that ended, by reason: closed, killed, exited, crashed.",
	}, []string{"reason"}))
	for _, r := range []string{ExitClosed, ExitKilled, ExitExited, ExitCrashed} {
		h.exits.WithLabelValues(r)
	}
	h.turn = register(reg, prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "tether_turn_duration_seconds",
		Help:    "Turns from their start to their result.",
		Buckets: []float64{0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800},
	}))
	h.wait = register(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "tether_approval_wait_seconds",
		Help:    "Approvals and questions from their request to their answer, by who ended the wait: person, policy, withdrawn.",
		Buckets: []float64{0.1, 0.5, 1, 5, 15, 30, 60, 120, 300, 900, 3600},
	}, []string{"answered_by"}))
	for _, b := range []string{ByPerson, ByPolicy, ByWithdrawn} {
		h.wait.WithLabelValues(b)
	}
	h.tokens = register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "tether_tokens_total", Help: "Tokens used, by model and kind (input, output, cache_creation, cache_read), as the CLI's results report them.",
	}, []string{"model", "kind"}))
	h.cost = register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "tether_cost_usd_total", Help: "Spending in US dollars by the CLI's own reckoning, by model.",
	}, []string{"model"}))
	h.sessions = register(reg, newSessionGauges(states))
	h.src = h.sessions.add(count)
	return h
}

// Release stops the sessions source of h being read (a closed manager).
func (h *Host) Release() {
	if h == nil {
		return
	}
	h.sessions.remove(h.src)
}

// CLIStarted counts a CLI start; err is its failure.
func (h *Host) CLIStarted(err error) {
	if h == nil {
		return
	}
	if err != nil {
		h.startFailures.Inc()
		return
	}
	h.starts.Inc()
}

// CLIExited counts a CLI's end with one of the Exit reasons.
func (h *Host) CLIExited(reason string) {
	if h == nil {
		return
	}
	h.exits.WithLabelValues(reason).Inc()
}

// TurnEnded observes a turn's duration.
func (h *Host) TurnEnded(d time.Duration) {
	if h == nil {
		return
	}
	h.turn.Observe(d.Seconds())
}

// ApprovalEnded observes an approval's wait; by is one of the By roles.
func (h *Host) ApprovalEnded(by string, d time.Duration) {
	if h == nil {
		return
	}
	h.wait.WithLabelValues(by).Observe(d.Seconds())
}

// Usage is one model's tokens and cost added by a result.
type Usage struct {
	Input, Output, CacheCreation, CacheRead int64
	USD                                     float64
}

// Used adds a model's usage.
func (h *Host) Used(model string, u Usage) {
	if h == nil {
		return
	}
	model = h.model(model)
	add := func(kind string, n int64) {
		if n > 0 {
			h.tokens.WithLabelValues(model, kind).Add(float64(n))
		}
	}
	add("input", u.Input)
	add("output", u.Output)
	add("cache_creation", u.CacheCreation)
	add("cache_read", u.CacheRead)
	if u.USD > 0 {
		h.cost.WithLabelValues(model).Add(u.USD)
	}
}

// model bounds the model label.
func (h *Host) model(m string) string {
	if m == "" {
		return "unknown"
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.models[m]; ok {
		return m
	}
	if len(h.models) >= maxModels {
		return "other"
	}
	h.models[m] = struct{}{}
	return m
}

// sessionGauges is tether_sessions{state} and
// tether_pending_approvals{kind}, read from the sources at scrape time.
type sessionGauges struct {
	states        []string
	sessions, pen *prometheus.Desc

	mu   sync.Mutex
	srcs map[*sessionSource]struct{}
}

type sessionSource struct{ count func(*Counts) }

func newSessionGauges(states []string) *sessionGauges {
	return &sessionGauges{
		states:   states,
		sessions: prometheus.NewDesc("tether_sessions", "Sessions by liveness state.", []string{"state"}, nil),
		pen:      prometheus.NewDesc("tether_pending_approvals", "Approvals waiting for an answer, by kind: tool, question.", []string{"kind"}, nil),
		srcs:     map[*sessionSource]struct{}{},
	}
}

func (g *sessionGauges) add(count func(*Counts)) *sessionSource {
	src := &sessionSource{count}
	g.mu.Lock()
	g.srcs[src] = struct{}{}
	g.mu.Unlock()
	return src
}

func (g *sessionGauges) remove(src *sessionSource) {
	g.mu.Lock()
	delete(g.srcs, src)
	g.mu.Unlock()
}

func (g *sessionGauges) Describe(ch chan<- *prometheus.Desc) {
	ch <- g.sessions
	ch <- g.pen
}

func (g *sessionGauges) Collect(ch chan<- prometheus.Metric) {
	c := Counts{States: map[string]int{}, Pending: map[string]int{}}
	g.mu.Lock()
	srcs := make([]*sessionSource, 0, len(g.srcs))
	for s := range g.srcs {
		srcs = append(srcs, s)
	}
	g.mu.Unlock()
	for _, s := range srcs {
		s.count(&c)
	}
	for _, st := range g.states {
		ch <- prometheus.MustNewConstMetric(g.sessions, prometheus.GaugeValue, float64(c.States[st]), st)
	}
	for _, k := range []string{KindTool, KindQuestion} {
		ch <- prometheus.MustNewConstMetric(g.pen, prometheus.GaugeValue, float64(c.Pending[k]), k)
	}
}

// Serve is the browser server's metrics.
type Serve struct {
	conns            prometheus.Gauge
	resyncs, dropped prometheus.Counter
}

// NewServe registers the browser server's metrics with reg (nil: nil).
func NewServe(reg prometheus.Registerer) *Serve {
	if reg == nil {
		return nil
	}
	return &Serve{
		conns: register(reg, prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "tether_browser_connections", Help: "Open WebSocket connections of browsers and API clients.",
		})),
		resyncs: register(reg, prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tether_browser_resyncs_total", Help: "Subscriptions that were sent a snapshot because the events they needed were gone.",
		})),
		dropped: register(reg, prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tether_browser_slow_drops_total", Help: "Clients disconnected for not taking frames within the write timeout.",
		})),
	}
}

// Connected adds n (1 or -1) to the open connections.
func (s *Serve) Connected(n int) {
	if s != nil {
		s.conns.Add(float64(n))
	}
}

// Resynced counts a subscription resent a snapshot.
func (s *Serve) Resynced() {
	if s != nil {
		s.resyncs.Inc()
	}
}

// SlowDropped counts a client disconnected for being slow.
func (s *Serve) SlowDropped() {
	if s != nil {
		s.dropped.Inc()
	}
}

// Cluster is an agent's (and a cluster client's) metrics.
type Cluster struct {
	published, retries prometheus.Counter
	lag                prometheus.Histogram
	gauges             []*funcGauge
	srcs               []*gaugeSource
}

// NewClusterClient registers tether_nats_connected for a cluster client
// (tether serve --nats); connected is read at scrape time.
func NewClusterClient(reg prometheus.Registerer, connected func() bool) *Cluster {
	if reg == nil {
		return nil
	}
	c := &Cluster{}
	c.natsGauge(reg, connected)
	return c
}

// NewAgent registers an agent's metrics: events published, retries and
// lag, and the gauges read at scrape time (NATS connected, capacity,
// slots used).
func NewAgent(reg prometheus.Registerer, connected func() bool, capacity int, used func() int) *Cluster {
	if reg == nil {
		return nil
	}
	c := &Cluster{
		published: register(reg, prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tether_events_published_total", Help: "Session events the agents stored in the events stream.",
		})),
		retries: register(reg, prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tether_event_publish_retries_total", Help: "Event publishes tried again (NATS away, a lost ack, a fence read).",
		})),
		lag: register(reg, prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "tether_event_publish_lag_seconds",
			Help:    "From an event in the host journal to its ack by the events stream.",
			Buckets: []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30},
		})),
	}
	c.natsGauge(reg, connected)
	c.gauge(reg, "tether_agent_capacity", "The most sessions the agents run at once.", sum,
		func() float64 { return float64(capacity) })
	c.gauge(reg, "tether_agent_slots_used", "Sessions the agents run or are starting.", sum,
		func() float64 { return float64(used()) })
	return c
}

func (c *Cluster) natsGauge(reg prometheus.Registerer, connected func() bool) {
	// With several connections on one registry, 1 only when all are up.
	c.gauge(reg, "tether_nats_connected", "1 while the NATS connection is up, else 0.", minimum, func() float64 {
		if connected() {
			return 1
		}
		return 0
	})
}

func (c *Cluster) gauge(reg prometheus.Registerer, name, help string, agg func(a, b float64) float64, f func() float64) {
	g := register(reg, newFuncGauge(name, help, agg))
	c.gauges = append(c.gauges, g)
	c.srcs = append(c.srcs, g.add(f))
}

// Release stops c's gauges being read (a closed agent or client).
func (c *Cluster) Release() {
	if c == nil {
		return
	}
	for i, g := range c.gauges {
		g.remove(c.srcs[i])
	}
}

// Published observes an event stored, lag after it entered the journal.
func (c *Cluster) Published(lag time.Duration) {
	if c == nil || c.published == nil {
		return
	}
	c.published.Inc()
	c.lag.Observe(lag.Seconds())
}

// Retried counts a publish tried again.
func (c *Cluster) Retried() {
	if c == nil || c.retries == nil {
		return
	}
	c.retries.Inc()
}

func sum(a, b float64) float64     { return a + b }
func minimum(a, b float64) float64 { return min(a, b) }

// funcGauge is a gauge read at scrape time from its sources, combined
// with agg; with no source it is not reported.
type funcGauge struct {
	desc *prometheus.Desc
	agg  func(a, b float64) float64

	mu   sync.Mutex
	srcs map[*gaugeSource]struct{}
}

type gaugeSource struct{ f func() float64 }

func newFuncGauge(name, help string, agg func(a, b float64) float64) *funcGauge {
	return &funcGauge{desc: prometheus.NewDesc(name, help, nil, nil), agg: agg, srcs: map[*gaugeSource]struct{}{}}
}

func (g *funcGauge) add(f func() float64) *gaugeSource {
	s := &gaugeSource{f}
	g.mu.Lock()
	g.srcs[s] = struct{}{}
	g.mu.Unlock()
	return s
}

func (g *funcGauge) remove(s *gaugeSource) {
	g.mu.Lock()
	delete(g.srcs, s)
	g.mu.Unlock()
}

func (g *funcGauge) Describe(ch chan<- *prometheus.Desc) { ch <- g.desc }

func (g *funcGauge) Collect(ch chan<- prometheus.Metric) {
	g.mu.Lock()
	srcs := make([]*gaugeSource, 0, len(g.srcs))
	for s := range g.srcs {
		srcs = append(srcs, s)
	}
	g.mu.Unlock()
	if len(srcs) == 0 {
		return
	}
	v := srcs[0].f()
	for _, s := range srcs[1:] {
		v = g.agg(v, s.f())
	}
	ch <- prometheus.MustNewConstMetric(g.desc, prometheus.GaugeValue, v)
}
