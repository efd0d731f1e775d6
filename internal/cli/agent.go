package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/cluster"
	"github.com/tetherhq/tether/host"
	"github.com/tetherhq/tether/internal/proc"
	"github.com/tetherhq/tether/team"
)

// natsFlags are the NATS connection flags `tether agent` and
// `tether serve --nats` share. Secrets come from the environment or files,
// never from the command line (which other users can read in ps).
type natsFlags struct {
	url, creds, nkey, user, ca, cert, key string
	replicas                              int
	heartbeat                             time.Duration
}

// envNATSPassword and envNATSToken hold the secrets of --nats-user and
// token auth.
const (
	envNATSPassword = "TETHER_NATS_PASSWORD"
	envNATSToken    = "TETHER_NATS_TOKEN"
)

func addNATSFlags(fs *flag.FlagSet, nf *natsFlags) {
	fs.StringVar(&nf.creds, "nats-creds", "", "a NATS credentials file (JWT and nkey seed)")
	fs.StringVar(&nf.nkey, "nats-nkey", "", "a file with the NATS nkey seed to authenticate with")
	fs.StringVar(&nf.user, "nats-user", "", "the NATS user (its password in $"+envNATSPassword+"); token auth: $"+envNATSToken)
	fs.StringVar(&nf.ca, "nats-ca", "", "the CA certificate (PEM) to verify the NATS server with (turns TLS on)")
	fs.StringVar(&nf.cert, "nats-cert", "", "a client certificate (PEM) for NATS TLS; needs --nats-key")
	fs.StringVar(&nf.key, "nats-key", "", "the client certificate's private key (PEM)")
	fs.IntVar(&nf.replicas, "replicas", 1, "replicas of the streams and buckets when this process creates them (3 on a 3-node NATS cluster)")
	fs.DurationVar(&nf.heartbeat, "heartbeat", 0, "the agents' heartbeat: an agent unheard for 6 of them (no heartbeat stored, no answer to a ping) is judged gone and its sessions show disconnected. One per cluster: unset uses the cluster's (1s when this process creates the registry); another value than the cluster's is refused")
}

// options turns the flags into nats.Connect options.
func (nf *natsFlags) options() ([]nats.Option, error) {
	var o []nats.Option
	if nf.creds != "" {
		o = append(o, nats.UserCredentials(nf.creds))
	}
	if nf.nkey != "" {
		opt, err := nats.NkeyOptionFromSeed(nf.nkey)
		if err != nil {
			return nil, fmt.Errorf("--nats-nkey: %w", err)
		}
		o = append(o, opt)
	}
	if nf.user != "" {
		o = append(o, nats.UserInfo(nf.user, os.Getenv(envNATSPassword)))
	}
	if t := os.Getenv(envNATSToken); t != "" {
		o = append(o, nats.Token(t))
	}
	if nf.ca != "" {
		o = append(o, nats.RootCAs(nf.ca))
	}
	if (nf.cert == "") != (nf.key == "") {
		return nil, fmt.Errorf("--nats-cert and --nats-key go together")
	}
	if nf.cert != "" {
		o = append(o, nats.ClientCert(nf.cert, nf.key))
	}
	return o, nil
}

func (nf *natsFlags) limits() *cluster.Limits {
	return &cluster.Limits{Replicas: nf.replicas, Heartbeat: nf.heartbeat}
}

// agentCmd is `tether agent`: this machine runs sessions for the cluster.
func agentCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("tether agent", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, `Usage: tether agent --nats URL [flags]

Runs Claude Code sessions on this machine for a cluster: it takes "start
session" requests from NATS JetStream while it has room, publishes every
session's events, serves their commands and mirrors their transcripts so
that another agent can resume them if this one dies. It dials out; its
one listener is /metrics, /healthz and /readyz (--http-addr, loopback by
default). Browsers reach the sessions through
"tether serve --nats URL" anywhere. See docs/cluster.md.

Flags:
`)
		fs.PrintDefaults()
	}
	var nf natsFlags
	fs.StringVar(&nf.url, "nats", nats.DefaultURL, "the NATS server(s), comma-separated")
	addNATSFlags(fs, &nf)
	id := fs.String("id", "", "the agent's name in the registry (default: the host name and a random suffix)")
	capacity := fs.Int("capacity", 8, "the most sessions this agent runs at once")
	spares := fs.Int("spares", 0, "CLIs to keep started and waiting (sessions start without the CLI's start-up second)")
	idle := fs.Duration("idle-timeout", 0, "close a session idle for this long (0: never)")
	sleepAfter := fs.Duration("sleep-after", defaultSleepAfter, "put to sleep a session that has had nothing to do this long (no turn, approval, question or background task): its CLI closes and it leaves this agent, listed asleep with its history and cost; its next prompt wakes it on any agent with room, resuming the conversation (0: never; at least 1m)")
	cwd := fs.String("cwd", "", "the working directory of sessions that do not ask for one (default: the current directory)")
	model := fs.String("model", "", "the model of sessions that do not ask for one")
	modes := slices.DeleteFunc(slices.Clone(host.PermissionModes), func(m string) bool { return m == string(claude.PermissionModeBypassPermissions) })
	mode := fs.String("permission-mode", "", "the permission mode of sessions that do not ask for one: "+strings.Join(modes, ", ")+" (not bypassPermissions: approvals stay on)")
	cliPath := fs.String("cli", "", "the Claude Code CLI (default: discovery: PATH, the usual install places)")
	suggest := fs.Bool("prompt-suggestions", false, promptSuggestionsUsage)
	verbose := fs.Bool("v", false, "log what the agent does to stderr (ids and states, never prompts or secrets)")
	drainTimeout := fs.Duration("drain-timeout", 5*time.Minute, "on SIGTERM: how long running turns may take to finish before the sessions are handed to other agents anyway")
	drainID := fs.String("drain", "", "ask the running agent with this id to drain (its sessions move to other agents, then it exits), and wait until it has left")
	allowBypass := fs.Bool("allow-bypass-permissions", false, "let commands switch a session to bypassPermissions (approvals off); tether serve must allow it too")
	teamFile := fs.String("team", "", "the team file (see docs/teams.md): the agent checks every command, start and snapshot against the identity that comes with it, the ACLs and the policy, and records to the audit log; requests without an identity are refused; with isolation (auto with several people, or on) each person's sessions run confined by bubblewrap")
	bwrap := fs.String("bwrap", team.DefaultBwrap, "with --team and isolation: the bubblewrap executable that confines each person's sessions")
	httpAddr := fs.String("http-addr", "127.0.0.1:9464", `serve /metrics (Prometheus), /healthz and /readyz here, without login ("" or "off": no listener)`)
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "tether agent: unexpected arguments %q\n", fs.Args())
		return 2
	}
	if err := checkSleepAfter(*sleepAfter); err != nil {
		fmt.Fprintf(stderr, "tether agent: %v\n", err)
		return 2
	}
	if err := checkModeFlag(*mode, modes); err != nil {
		fmt.Fprintf(stderr, "tether agent: %v\n", err)
		return 2
	}
	if claude.PermissionMode(*mode) == claude.PermissionModeBypassPermissions {
		fmt.Fprintln(stderr, "tether agent: the bypassPermissions default is refused: approvals stay on")
		return 2
	}
	var teamCfg *team.Config
	if *teamFile != "" {
		cfg, err := loadAgentTeam(*teamFile)
		if err != nil {
			fmt.Fprintf(stderr, "tether agent: --team: %v\n", err)
			return 2
		}
		teamCfg = cfg
	}
	var iso *team.Isolation
	if teamCfg != nil && *drainID == "" {
		var err error
		if iso, err = agentIsolation(ctx, teamCfg, *bwrap, nil); err != nil {
			fmt.Fprintf(stderr, "tether agent: --team: %v\n", err)
			return 1
		}
	}
	if *drainID != "" {
		nopts, err := nf.options()
		if err != nil {
			fmt.Fprintf(stderr, "tether agent: %v\n", err)
			return 2
		}
		return drainOther(ctx, nf.url, nopts, *drainID, *drainTimeout, stdout, stderr)
	}
	nopts, err := nf.options()
	if err != nil {
		fmt.Fprintf(stderr, "tether agent: %v\n", err)
		return 2
	}
	path, _, err := proc.Find(*cliPath, os.Getenv)
	if err != nil {
		fmt.Fprintf(stderr, "tether agent: %v\n", err)
		return 1
	}
	dir := *cwd
	if dir == "" {
		dir, _ = os.Getwd()
	}
	var logger *slog.Logger
	if *verbose {
		logger = slog.New(slog.NewTextHandler(stderr, nil))
	}
	tp, stopTracing, err := startTracing(ctx, "tether-agent", stderr)
	if err != nil {
		fmt.Fprintf(stderr, "tether agent: %v\n", err)
		return 2
	}
	defer stopTracing() // after the agent's Close: its last spans go too
	// Ctrl-C stops at once (the sessions show disconnected and can be
	// resumed elsewhere); SIGTERM, what a service manager sends, drains.
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt)
	defer stop()
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	defer signal.Stop(term)
	tmpl := agentTemplate(path, dir, *model, *mode)
	tmpl.CLI.PromptSuggestions = *suggest
	tmpl.Commands = &host.CommandPolicy{AllowBypassPermissions: *allowBypass}
	// The operations port is bound first: a port in use is refused
	// before the agent takes any work.
	var reg *prometheus.Registry
	var agent atomic.Pointer[cluster.Agent]
	if !opsOff(*httpAddr) {
		reg = newRegistry()
		ops, err := listenOps(*httpAddr, agentOps(reg, func(ctx context.Context) error {
			if a := agent.Load(); a != nil {
				return a.Ready(ctx)
			}
			return errors.New("the agent is starting")
		}))
		if err != nil {
			fmt.Fprintf(stderr, "tether agent: --http-addr: %v\n", err)
			return 1
		}
		defer ops.stop() // after the agent's Close below
		*httpAddr = ops.addr().String()
	}
	ao := &cluster.AgentOptions{
		URL: nf.url, NATS: nopts, ID: *id, Capacity: *capacity, Spares: *spares, IdleTimeout: *idle, SleepAfter: *sleepAfter,
		Limits: nf.limits(), Logger: logger, Session: tmpl, TracerProvider: tp,
	}
	if teamCfg != nil {
		// One connection for the agent and the team's store and audit.
		nc, err := cluster.Connect(nf.url, "tether-agent", nopts...)
		if err != nil {
			fmt.Fprintf(stderr, "tether agent: %v\n", err)
			return 1
		}
		defer nc.Close() // after the agent's Close below
		t, err := openAgentTeam(ctx, teamCfg, nc, nf.replicas, *allowBypass, logger)
		if err != nil {
			fmt.Fprintf(stderr, "tether agent: --team: %v\n", err)
			return 1
		}
		ao.Conn, ao.URL, ao.NATS, ao.Team = nc, "", nil, t.authz
		if iso != nil {
			ao.Isolation = iso
		}
	}
	if reg != nil {
		ao.Registerer = reg
	}
	a, err := cluster.NewAgent(ctx, ao)
	if err != nil {
		fmt.Fprintf(stderr, "tether agent: %v\n", err)
		return 1
	}
	agent.Store(a)
	fmt.Fprintf(stdout, "tether agent %s: taking up to %d sessions from %s (SIGTERM drains it: its sessions move to other agents; Ctrl-C stops it and its sessions)\n", a.ID(), *capacity, redactURL(nf.url))
	if reg != nil {
		fmt.Fprintf(stdout, "  metrics and health: http://%s/metrics /healthz /readyz\n", *httpAddr)
	}
	select {
	case <-ctx.Done():
	case <-term:
		drain(a, *drainTimeout, stdout, stderr)
	case <-a.DrainRequested():
		drain(a, *drainTimeout, stdout, stderr)
	}
	if err := a.Close(); err != nil {
		fmt.Fprintf(stderr, "tether agent: %v\n", err)
		return 1
	}
	return 0
}

// agentTemplate is the session template of an agent: the local CLI, the
// UI's partial messages (text streams token by token), MCP servers'
// requests for input listed as approvals (the UI shows their forms) and
// restarts of a CLI that died.
func agentTemplate(cliPath, cwd, model, mode string) *host.Options {
	return &host.Options{
		CLI: &claude.Options{CLIPath: cliPath, Cwd: cwd, Model: model, PermissionMode: claude.PermissionMode(mode),
			IncludePartialMessages: true},
		Elicitations: true,
		Restart:      &host.RestartPolicy{},
	}
}

// redactURL drops credentials from a NATS URL before it is printed.
func redactURL(u string) string {
	parts := strings.Split(u, ",")
	for i, p := range parts {
		if scheme, rest, ok := strings.Cut(p, "://"); ok {
			if at := strings.LastIndex(rest, "@"); at >= 0 {
				parts[i] = scheme + "://***@" + rest[at+1:]
			}
		}
	}
	return strings.Join(parts, ",")
}

// drain empties the agent for a restart: its sessions finish their turns
// (within timeout) and move to other agents. A second signal stops
// waiting.
//
// The second signal's channel is registered here, once the drain has
// begun, not with the first one's: the signal package hands a signal to
// every channel registered when it arrives, one after the other, so a
// channel registered beforehand could get the very SIGTERM that started
// the drain after the drain had looked for it, and cancel the drain at
// once (seen on a busy machine: "its turn did not end: context
// canceled" 3 s into a drain of a minute, the turn lost). Registering
// waits for a signal being handed out to finish, so this channel gets
// only later ones.
func drain(a *cluster.Agent, timeout time.Duration, stdout, stderr io.Writer) {
	again := make(chan os.Signal, 1)
	signal.Notify(again, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(again)
	fmt.Fprintf(stdout, "tether agent %s: draining (up to %v for running turns; a second signal stops at once)\n", a.ID(), timeout)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	go func() {
		select {
		case <-again:
			cancel()
		case <-ctx.Done():
		}
	}()
	if err := a.Drain(ctx); err != nil {
		fmt.Fprintf(stderr, "tether agent: drain: %v\n", err)
		return
	}
	fmt.Fprintf(stdout, "tether agent %s: drained\n", a.ID())
}

// drainOther is tether agent --drain ID: it asks that agent to drain and
// waits until it has left the registry.
func drainOther(ctx context.Context, url string, nopts []nats.Option, id string, timeout time.Duration, stdout, stderr io.Writer) int {
	ctx, cancel := context.WithTimeout(ctx, timeout+time.Minute)
	defer cancel()
	c, err := cluster.NewClient(ctx, &cluster.ClientOptions{URL: url, NATS: nopts})
	if err != nil {
		fmt.Fprintf(stderr, "tether agent: %v\n", err)
		return 1
	}
	defer c.Close()
	if err := c.DrainAgent(ctx, id); err != nil {
		fmt.Fprintf(stderr, "tether agent: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "tether agent: %s is draining\n", id)
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		agents, err := c.Agents(ctx)
		if err == nil && !slices.ContainsFunc(agents, func(a cluster.AgentInfo) bool { return a.ID == id }) {
			fmt.Fprintf(stdout, "tether agent: %s has left\n", id)
			return 0
		}
		select {
		case <-t.C:
		case <-ctx.Done():
			fmt.Fprintf(stderr, "tether agent: %s still there: %v\n", id, ctx.Err())
			return 1
		}
	}
}
