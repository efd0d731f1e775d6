package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/tetherhq/tether/cluster"
	"github.com/tetherhq/tether/host"
	"github.com/tetherhq/tether/internal/proc"
	"github.com/tetherhq/tether/serve"
)

// serveNATSFlags are tether serve's cluster flags.
type serveNATSFlags struct {
	natsFlags
	embedded bool
	listen   string
	store    string
	capacity int
}

func addServeNATSFlags(fs *flag.FlagSet) *serveNATSFlags {
	nsf := &serveNATSFlags{}
	fs.StringVar(&nsf.url, "nats", "", "serve the sessions of a cluster: the NATS server(s) its agents use (see docs/cluster.md)")
	fs.BoolVar(&nsf.embedded, "nats-embedded", false, "run a NATS server with JetStream and an agent in this process: a one-machine cluster other agents on this machine can join")
	fs.StringVar(&nsf.listen, "nats-listen", "127.0.0.1:0", "with --nats-embedded: the NATS server's address (port 0: any free port)")
	fs.StringVar(&nsf.store, "nats-store", "", "with --nats-embedded: the JetStream store folder (default: tether/nats in the user's cache folder)")
	fs.IntVar(&nsf.capacity, "capacity", 8, "with --nats-embedded: the most sessions the embedded agent runs")
	addNATSFlags(fs, &nsf.natsFlags)
	return nsf
}

func (nsf *serveNATSFlags) enabled() bool { return nsf.url != "" || nsf.embedded }

// check refuses cluster flags that would have no effect: the NATS ones
// without --nats or --nats-embedded, the embedded server's without
// --nats-embedded. A flag that does nothing must not look as if it did.
func (nsf *serveNATSFlags) check(fs *flag.FlagSet) error {
	var err error
	fs.Visit(func(f *flag.Flag) {
		if err != nil {
			return
		}
		switch f.Name {
		case "nats-listen", "nats-store", "capacity":
			if !nsf.embedded {
				err = fmt.Errorf("--%s goes with --nats-embedded", f.Name)
			}
		case "sleep-after":
			// The agents put sessions to sleep, with their own flag.
			if nsf.url != "" && !nsf.embedded {
				err = fmt.Errorf("--sleep-after has no effect with --nats: the agents put sessions to sleep (tether agent --sleep-after)")
			}
		case "prompt-suggestions":
			// The agents start the CLIs, with their own flag.
			if nsf.url != "" && !nsf.embedded {
				err = fmt.Errorf("--prompt-suggestions has no effect with --nats: the agents start the CLIs (tether agent --prompt-suggestions)")
			}
		case "nats-creds", "nats-nkey", "nats-user", "nats-ca", "nats-cert", "nats-key", "replicas", "heartbeat":
			if !nsf.enabled() {
				err = fmt.Errorf("--%s goes with --nats or --nats-embedded", f.Name)
			}
		}
	})
	return err
}

// serveNATS is tether serve --nats / --nats-embedded: the browser UI over
// the cluster.
func serveNATS(ctx context.Context, sf *serveFlags, nsf *serveNATSFlags, cliPath, cwd, model, mode string, stdout, stderr io.Writer) int {
	if nsf.url != "" && nsf.embedded {
		fmt.Fprintln(stderr, "tether serve: --nats and --nats-embedded exclude each other")
		return 2
	}
	if !nsf.embedded && cliPath != "" {
		fmt.Fprintln(stderr, "tether serve: --cli has no effect with --nats: each agent runs its own CLI (tether agent --cli)")
		return 2
	}
	nopts, err := nsf.options()
	if err != nil {
		fmt.Fprintf(stderr, "tether serve: %v\n", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	url := nsf.url
	var agent *cluster.Agent
	if nsf.embedded {
		path, _, err := proc.Find(cliPath, os.Getenv)
		if err != nil {
			fmt.Fprintf(stderr, "tether serve: %v\n", err)
			return 1
		}
		ns, token, err := startEmbeddedNATS(nsf.listen, nsf.store)
		if err != nil {
			fmt.Fprintf(stderr, "tether serve: embedded NATS: %v\n", err)
			return 1
		}
		defer func() {
			ns.Shutdown()
			ns.WaitForShutdown()
		}()
		url = ns.ClientURL()
		nopts = append(nopts, nats.Token(token))
		fmt.Fprintf(stdout, "tether serve: embedded NATS at %s; agents on this machine join with\n  %s=%s tether agent --nats %s\n", url, envNATSToken, token, url)
		dir := cwd
		if dir == "" {
			dir, _ = os.Getwd()
		}
		tmpl := agentTemplate(path, dir, model, mode)
		tmpl.CLI.PromptSuggestions = sf.suggest
		tmpl.Commands = &host.CommandPolicy{AllowBypassPermissions: sf.allowBypass}
		ao := &cluster.AgentOptions{URL: url, NATS: nopts, Capacity: nsf.capacity, SleepAfter: sf.sleepAfter,
			Limits: nsf.limits(), Session: tmpl, Registerer: sf.registry(), TracerProvider: sf.tp}
		if code := serveClusterTeam(ctx, sf, nsf, url, nopts, ao, stderr); code != 0 {
			return code
		}
		if sf.clusterTeam != nil {
			defer sf.clusterTeam.closer()
		}
		agent, err = cluster.NewAgent(ctx, ao)
		if err != nil {
			fmt.Fprintf(stderr, "tether serve: %v\n", err)
			return 1
		}
		defer agent.Close()
	} else {
		if code := serveClusterTeam(ctx, sf, nsf, url, nopts, nil, stderr); code != 0 {
			return code
		}
		if sf.clusterTeam != nil {
			defer sf.clusterTeam.closer()
		}
	}
	c, err := cluster.NewClient(ctx, &cluster.ClientOptions{URL: url, NATS: nopts, Limits: nsf.limits(), Registerer: sf.registry(), TracerProvider: sf.tp})
	if err != nil {
		fmt.Fprintf(stderr, "tether serve: %v\n", err)
		return 1
	}
	defer c.Close()
	if cwd != "" {
		cwd, _ = filepath.Abs(cwd)
	}
	sf.backend = cluster.NewBackend(c, &cluster.BackendOptions{DefaultCwd: cwd, DefaultModel: model, DefaultPermissionMode: mode,
		AllowBypassPermissions: sf.allowBypass})
	return runServe(ctx, sf, &serve.LocalOptions{}, nil, stdout, stderr)
}

// startEmbeddedNATS starts a NATS server with JetStream, on loopback
// unless told otherwise, that takes a fresh random token: other users of
// the machine cannot reach the sessions through it.
func startEmbeddedNATS(listen, store string) (*server.Server, string, error) {
	if store == "" {
		dir, err := os.UserCacheDir()
		if err != nil {
			return nil, "", err
		}
		store = filepath.Join(dir, "tether", "nats")
	}
	if err := os.MkdirAll(store, 0o700); err != nil {
		return nil, "", err
	}
	host, port, err := splitHostPort(listen)
	if err != nil {
		return nil, "", fmt.Errorf("--nats-listen: %w", err)
	}
	token := serve.NewToken()
	o := &server.Options{ServerName: "tether-embedded", Host: host, Port: port, JetStream: true, StoreDir: store,
		Authorization: token, NoLog: true, NoSigs: true}
	s, err := server.NewServer(o)
	if err != nil {
		return nil, "", err
	}
	s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		s.Shutdown()
		return nil, "", fmt.Errorf("not ready within 10 s")
	}
	return s, token, nil
}

func splitHostPort(addr string) (string, int, error) {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, err
	}
	var port int
	if _, err := fmt.Sscan(p, &port); err != nil {
		return "", 0, fmt.Errorf("bad port %q", p)
	}
	if port == 0 {
		port = server.RANDOM_PORT
	}
	return host, port, nil
}
