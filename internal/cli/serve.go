package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/host"
	"github.com/tetherhq/tether/internal/proc"
	"github.com/tetherhq/tether/serve"
)

// serveCmd is `tether serve`: Claude Code sessions in the browser.
func serveCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("tether serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, `Usage: tether serve [flags]

Runs Claude Code sessions on this machine and serves a web UI for them.
It prints a URL to open once; the token in it (after #) logs the browser
in. Sessions keep running when every browser is gone.

The token is random, made at start, unless $TETHER_SERVE_TOKEN sets one
(at least 32 characters; replicas behind one address share it), which is
then never printed.

Secure by default: it listens on loopback only; another address needs
TLS (--tls-cert and --tls-key) or --allow-plain-http behind a TLS proxy.
Every request's Host and Origin are checked. Approvals stay on: the
server never skips permissions.

Flags:
`)
		fs.PrintDefaults()
	}
	sf := addServeFlags(fs)
	nsf := addServeNATSFlags(fs)
	cwd := fs.String("cwd", "", "the working directory of new sessions by default (default: the current directory)")
	model := fs.String("model", "", "the model of new sessions by default")
	mode := fs.String("permission-mode", "", "the permission mode of new sessions by default: "+strings.Join(host.PermissionModes, ", "))
	cliPath := fs.String("cli", "", "the Claude Code CLI (default: discovery: PATH, the usual install places)")
	fs.BoolVar(&sf.suggest, "prompt-suggestions", false, promptSuggestionsUsage)
	sf.team = addTeamFlags(fs)
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "tether serve: unexpected arguments %q\n", fs.Args())
		return 2
	}
	if err := checkModeFlag(*mode, host.PermissionModes); err != nil {
		fmt.Fprintf(stderr, "tether serve: %v\n", err)
		return 2
	}
	if claude.PermissionMode(*mode) == claude.PermissionModeBypassPermissions && !sf.allowBypass {
		fmt.Fprintln(stderr, "tether serve: --permission-mode bypassPermissions needs --allow-bypass-permissions")
		return 2
	}
	if err := nsf.check(fs); err != nil {
		fmt.Fprintf(stderr, "tether serve: %v\n", err)
		return 2
	}
	if err := sf.team.check(sf); err != nil {
		fmt.Fprintf(stderr, "tether serve: %v\n", err)
		return 2
	}
	if err := sf.checkSleepAfter(); err != nil { // before looking for a CLI
		fmt.Fprintf(stderr, "tether serve: %v\n", err)
		return 2
	}
	tp, stopTracing, err := startTracing(ctx, "tether-serve", stderr)
	if err != nil {
		fmt.Fprintf(stderr, "tether serve: %v\n", err)
		return 2
	}
	defer stopTracing()
	sf.tp = tp
	if nsf.enabled() {
		return serveNATS(ctx, sf, nsf, *cliPath, *cwd, *model, *mode, stdout, stderr)
	}
	path, _, err := proc.Find(*cliPath, os.Getenv)
	if err != nil {
		fmt.Fprintf(stderr, "tether serve: %v\n", err)
		return 1
	}
	dir := *cwd
	if dir == "" {
		dir, _ = os.Getwd()
	}
	o := &claude.Options{CLIPath: path, Model: *model, PermissionMode: claude.PermissionMode(*mode), PromptSuggestions: sf.suggest}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	return runServe(ctx, sf, &serve.LocalOptions{
		Session:    &host.Options{CLI: o, Restart: &host.RestartPolicy{}},
		DefaultCwd: dir,
	}, nil, stdout, stderr)
}

// envServeToken is the login token of tether serve when the operator
// sets one (replicas behind one address share it); else a random one is
// made at start and printed once.
const (
	envServeToken = "TETHER_SERVE_TOKEN"
	minServeToken = 32
)

// serveFlags are the flags tether serve and tether demo --serve share.
type serveFlags struct {
	backend         serve.Backend        // serve --nats: the cluster instead of a local manager
	tp              trace.TracerProvider // from the OTEL_ environment; nil: the global
	addr, cert, key string
	hosts           stringList
	proxies         prefixList
	plainHTTP       bool
	allowBypass     bool
	spares          int
	sleepAfter      time.Duration
	verbose         bool
	metricsAddr     string
	reg             *prometheus.Registry // made by registry()
	team            *teamFlags           // tether serve only; nil or no --team: the token login
	clusterTeam     *teamServe           // serve --nats --team: the team on the cluster's JetStream (setupClusterTeam)
	notify          bool
	suggest         bool // tether serve --prompt-suggestions (not demo: its fake CLI makes none)
	notifyDir       string
	ntfyURL         string
}

// registry is the server's metrics registry, shared by its manager, the
// server and, with --nats, the cluster client and embedded agent.
func (sf *serveFlags) registry() *prometheus.Registry {
	if sf.reg == nil {
		sf.reg = newRegistry()
	}
	return sf.reg
}

func addServeFlags(fs *flag.FlagSet) *serveFlags {
	sf := &serveFlags{}
	fs.StringVar(&sf.addr, "addr", "127.0.0.1:7878", "the address to listen on, HOST:PORT (port 0: any free port)")
	fs.StringVar(&sf.cert, "tls-cert", "", "serve HTTPS with this certificate (PEM); needs --tls-key")
	fs.StringVar(&sf.key, "tls-key", "", "the certificate's private key (PEM)")
	fs.Var(&sf.hosts, "allow-host", "a host name (or name:port) browsers may reach the server by, besides the listen address (repeatable)")
	fs.Var(&sf.proxies, "trusted-proxy", "a proxy (CIDR, or one address) whose X-Forwarded-For names the client, so failed logins are limited per client rather than per proxy (repeatable)")
	fs.BoolVar(&sf.plainHTTP, "allow-plain-http", false, "allow a non-loopback address without TLS (only behind a TLS-terminating proxy)")
	fs.BoolVar(&sf.allowBypass, "allow-bypass-permissions", false, "let clients choose the bypassPermissions mode (approvals off)")
	fs.StringVar(&sf.metricsAddr, "metrics-addr", "", "serve /metrics (Prometheus) on this separate address WITHOUT login, for loopback or internal scraping (default: /metrics on --addr, which needs the token as a bearer)")
	fs.IntVar(&sf.spares, "spares", 0, "CLIs to start ahead of sessions; with CLI 2.1.330 or newer they park and any start claims one with its own folder and model")
	fs.DurationVar(&sf.sleepAfter, "sleep-after", defaultSleepAfter, "close the CLI of a session that has had nothing to do this long (no turn, approval, question or background task); it stays listed, asleep, and its next prompt wakes it, resuming the conversation (0: never; at least 1m)")
	fs.BoolVar(&sf.notify, "notify", false, "call people back when a session needs them (an approval or question waits, a turn ends): Web Push to their browsers, a webhook, ntfy; set up in the UI's bell (with --nats: the sessions of the whole cluster, for the people who subscribed through this server)")
	fs.StringVar(&sf.notifyDir, "notify-dir", "", "where --notify keeps its VAPID keys and people's subscriptions (mode 0600; default: the user config directory's tether/serve, e.g. ~/.config/tether/serve)")
	fs.StringVar(&sf.ntfyURL, "ntfy-url", "", "the ntfy server people's --notify topics are posted to (default: none, ntfy off)")
	fs.BoolVar(&sf.verbose, "v", false, "log requests refused, connections and notifications (sent, withheld, failed) to stderr (never tokens or prompts)")
	return sf
}

// promptSuggestionsUsage is the help of serve's and agent's
// --prompt-suggestions. Off by default: each guess is one more model
// request after every turn, billed to the session.
const promptSuggestionsUsage = "after each turn (from the second on) have the CLI guess the person's next prompt, offered above the prompt box to take or ignore; each guess is one more model request, on the session's cost"

// defaultSleepAfter is --sleep-after's default. A sleeping session costs
// no process, a woken one a CLI start (one to three seconds): 15 minutes
// keeps a session a person steps away from for a coffee awake (past
// the API's five-minute prompt cache, a turn pays the cache write again
// anyway, so the wake adds little to what the next turn costs), while
// the many sessions left open overnight or across a team cost nothing.
// docs/operations.md sizes a host with it.
const defaultSleepAfter = 15 * time.Minute

// checkSleepAfter refuses a --sleep-after that would put sessions to
// sleep between one turn and the next prompt.
func (sf *serveFlags) checkSleepAfter() error { return checkSleepAfter(sf.sleepAfter) }

// checkSleepAfter is the rule of serve's and agent's --sleep-after.
func checkSleepAfter(d time.Duration) error {
	switch {
	case d < 0:
		return fmt.Errorf("--sleep-after %v: give 0 (never) or a duration of at least 1m", d)
	case d > 0 && d < time.Minute:
		return fmt.Errorf("--sleep-after %v is too short: a session would sleep between a turn and the next prompt, and each wake starts a CLI; give at least 1m, or 0 (never)", d)
	}
	return nil
}

type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }

// prefixList is a repeatable CIDR flag; a bare address is its own /32
// (or /128).
type prefixList []netip.Prefix

func (l *prefixList) String() string {
	var s []string
	for _, p := range *l {
		s = append(s, p.String())
	}
	return strings.Join(s, ",")
}

func (l *prefixList) Set(v string) error {
	p, err := netip.ParsePrefix(v)
	if err != nil {
		a, aerr := netip.ParseAddr(v)
		if aerr != nil {
			return fmt.Errorf("%q is not a CIDR or an address", v)
		}
		p = netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen())
	}
	*l = append(*l, p.Masked())
	return nil
}

// ready, when not nil, receives the login URL once the server listens
// (for tests).
type serveReady func(loginURL string)

// runServe listens, prints the login URL once and serves until ctx is
// done; then it closes the clients and the sessions.
func runServe(ctx context.Context, sf *serveFlags, lo *serve.LocalOptions, ready serveReady, stdout, stderr io.Writer) int {
	if (sf.cert == "") != (sf.key == "") {
		fmt.Fprintln(stderr, "tether serve: --tls-cert and --tls-key go together")
		return 2
	}
	if err := sf.checkSleepAfter(); err != nil {
		fmt.Fprintf(stderr, "tether serve: %v\n", err)
		return 2
	}
	tls := sf.cert != ""
	host_, _, err := net.SplitHostPort(sf.addr)
	if err != nil {
		fmt.Fprintf(stderr, "tether serve: --addr %q: %v\n", sf.addr, err)
		return 2
	}
	loopback := isLoopback(host_)
	if !loopback && !tls && !sf.plainHTTP {
		fmt.Fprintf(stderr, "tether serve: refusing to serve %s without TLS: anyone on the network could watch the token and the sessions.\n"+
			"  Give --tls-cert and --tls-key, or --allow-plain-http if a TLS proxy is in front, or listen on 127.0.0.1.\n", sf.addr)
		return 2
	}
	ln, err := net.Listen("tcp", sf.addr)
	if err != nil {
		fmt.Fprintf(stderr, "tether serve: %v\n", err)
		return 1
	}
	lo.AllowBypassPermissions = sf.allowBypass
	reg := sf.registry()
	var metrics http.Handler = metricsHandler(reg)
	if !opsOff(sf.metricsAddr) {
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", metrics)
		ops, err := listenOps(sf.metricsAddr, mux)
		if err != nil {
			ln.Close()
			fmt.Fprintf(stderr, "tether serve: --metrics-addr: %v\n", err)
			return 1
		}
		defer ops.stop()
		fmt.Fprintf(stdout, "tether serve: metrics (no login) at http://%s/metrics\n", ops.addr())
		metrics = nil // only there
	}
	mo := &host.ManagerOptions{TracerProvider: sf.tp}
	if sf.backend == nil {
		mo.Registerer = reg // with --nats the agents count the sessions
		mo.Session, mo.Spares, mo.SleepAfter = lo.SpareTemplate(), sf.spares, sf.sleepAfter
	}
	m := host.NewManager(mo)
	defer m.Close()
	var logger *slog.Logger
	if sf.verbose {
		logger = slog.New(slog.NewTextHandler(stderr, nil))
	}
	// A token of the operator's (shared by replicas behind one address,
	// kept in a secret store) or a random one made now.
	token := os.Getenv(envServeToken)
	if token != "" && len(token) < minServeToken {
		ln.Close()
		fmt.Fprintf(stderr, "tether serve: $%s is %d characters; use at least %d random ones (e.g. from: head -c 32 /dev/urandom | base64)\n", envServeToken, len(token), minServeToken)
		return 2
	}
	var teamOpts *serve.TeamOptions
	if sf.clusterTeam != nil {
		teamOpts = sf.clusterTeam.opts // the cluster's agents run the sessions: lo is unused
	} else if sf.team != nil && sf.team.file != "" {
		ts, err := setupTeam(ctx, sf.team, sf)
		if err != nil {
			ln.Close()
			fmt.Fprintf(stderr, "tether serve: --team: %v\n", err)
			return 2
		}
		defer ts.closer()
		teamOpts = ts.opts
		lo.Team = teamOpts
	}
	var backend serve.Backend = serve.NewLocalBackend(m, lo)
	if sf.backend != nil {
		backend = sf.backend
	}
	notify, err := sf.notifyOptions()
	if err != nil {
		ln.Close()
		fmt.Fprintf(stderr, "tether serve: --notify: %v\n", err)
		return 2
	}
	srv := serve.NewServer(backend, &serve.Options{
		Notify:         notify,
		Team:           teamOpts,
		Token:          token,
		AllowedHosts:   allowedHosts(host_, ln.Addr().(*net.TCPAddr), sf.hosts),
		TLS:            tls,
		TrustedProxies: sf.proxies,
		Logger:         logger,
		Version:        "tether " + claude.Version,
		Registerer:     reg,
		Metrics:        metrics,
		TracerProvider: sf.tp,
	})
	defer srv.Close()
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute, ErrorLog: nil}
	errc := make(chan error, 1)
	go func() {
		if tls {
			errc <- hs.ServeTLS(ln, sf.cert, sf.key)
		} else {
			errc <- hs.Serve(ln)
		}
	}()
	scheme := "http"
	if tls {
		scheme = "https"
	}
	shown := ln.Addr().(*net.TCPAddr)
	name := shown.IP.String()
	if shown.IP.IsUnspecified() {
		name = "127.0.0.1"
	}
	base := scheme + "://" + net.JoinHostPort(name, fmt.Sprint(shown.Port))
	url := srv.LoginURL(base)
	if teamOpts != nil {
		shown := base
		if sf.team.publicURL != "" {
			shown = sf.team.publicURL
		}
		fmt.Fprintf(stdout, "tether serve: listening on %s for the team of %s\n  open %s and sign in\n  (Ctrl-C stops the server and its sessions.)\n", ln.Addr(), sf.team.file, shown)
	} else if token != "" {
		// The operator's token stays out of the log: they have it.
		fmt.Fprintf(stdout, "tether serve: listening on %s\n  open %s/#token=<$%s>\n  (Ctrl-C stops the server and its sessions.)\n", ln.Addr(), base, envServeToken)
	} else {
		fmt.Fprintf(stdout, "tether serve: listening on %s\n  open %s\n  (the link logs you in; keep it private. Ctrl-C stops the server and its sessions.)\n", ln.Addr(), url)
	}
	if ready != nil {
		ready(url)
	}
	code := 0
	select {
	case <-ctx.Done():
	case err := <-errc:
		if !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintf(stderr, "tether serve: %v\n", err)
			code = 1
		}
	}
	srv.Close() // the WebSockets first: Shutdown does not wait for hijacked connections
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	hs.Shutdown(sctx)
	return code
}

func isLoopback(h string) bool {
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(strings.Trim(h, "[]"))
	return ip != nil && ip.IsLoopback()
}

// allowedHosts is the Host allowlist: loopback names, the listen
// address, and for a wildcard address this machine's name and
// addresses, plus --allow-host.
func allowedHosts(h string, addr *net.TCPAddr, extra []string) []string {
	out := []string{"localhost", "127.0.0.1", "::1"}
	if h != "" && !addr.IP.IsUnspecified() {
		out = append(out, h)
	}
	if addr.IP.IsUnspecified() {
		if name, err := os.Hostname(); err == nil {
			out = append(out, name)
		}
		if addrs, err := net.InterfaceAddrs(); err == nil {
			for _, a := range addrs {
				if n, ok := a.(*net.IPNet); ok {
					out = append(out, n.IP.String())
				}
			}
		}
	}
	return append(out, extra...)
}

// notifyOptions are --notify's (nil: off). A server keeps its keys and
// people's subscriptions in --notify-dir, by default the user config
// directory. With --nats it follows every session of the cluster from
// the bus and calls back the people who subscribed through it (its own
// keys and store); an Allow from a notification is answered once
// whichever server takes it (docs/cluster.md, "Notifications").
func (sf *serveFlags) notifyOptions() (*serve.NotifyOptions, error) {
	if !sf.notify {
		return nil, nil
	}
	dir := sf.notifyDir
	if dir == "" {
		cfg, err := os.UserConfigDir()
		if err != nil {
			return nil, fmt.Errorf("no --notify-dir and no user config directory: %w", err)
		}
		dir = filepath.Join(cfg, "tether", "serve")
	}
	o := &serve.NotifyOptions{Dir: dir, NtfyURL: sf.ntfyURL}
	if sf.team != nil {
		o.BaseURL = sf.team.publicURL // links in webhook and ntfy messages
	}
	return o, nil
}
