package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"slices"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tetherhq/tether/cluster"
	"github.com/tetherhq/tether/serve"
	"github.com/tetherhq/tether/team"
)

// envOIDCSecret carries the OpenID Connect client secret (or
// --oidc-client-secret-file): never a flag, which ps would show.
const envOIDCSecret = "TETHER_OIDC_CLIENT_SECRET"

// teamFlags are tether serve's flags of teams (docs/teams.md). The
// audit of prompts' content is the team file's (audit.prompts), not a
// flag: what is recorded about people is the team's policy.
type teamFlags struct {
	file                                         string
	issuer, clientID, secretFile, groupsClaim    string
	publicURL, proxyHeader, proxyName, proxyGrps string
	trustUnverified                              bool
}

func addTeamFlags(fs *flag.FlagSet) *teamFlags {
	tf := &teamFlags{}
	fs.StringVar(&tf.file, "team", "", "serve a team: people sign in (OpenID Connect or a trusted proxy) and see what they may; the team file (YAML) says who and what")
	fs.StringVar(&tf.issuer, "oidc-issuer", "", "with --team: the OpenID Connect provider's issuer URL")
	fs.StringVar(&tf.clientID, "oidc-client-id", "", "with --oidc-issuer: the client id registered at the provider")
	fs.StringVar(&tf.secretFile, "oidc-client-secret-file", "", "with --oidc-issuer: a file holding the client secret (else $"+envOIDCSecret+")")
	fs.StringVar(&tf.groupsClaim, "oidc-groups-claim", "groups", "with --oidc-issuer: the ID token claim listing the person's groups")
	fs.BoolVar(&tf.trustUnverified, "oidc-trust-unverified-email", false, "with --oidc-issuer: admit people by an e-mail address the provider does not mark verified (email_verified); only for a provider that issues every address itself and omits that claim")
	fs.StringVar(&tf.publicURL, "public-url", "", "with --team: the URL people reach the server by (the OIDC redirect is its /auth/callback)")
	fs.StringVar(&tf.proxyHeader, "proxy-header", "", "with --team: take the person's e-mail from this header of a trusted proxy (--trusted-proxy), e.g. X-Forwarded-Email")
	fs.StringVar(&tf.proxyName, "proxy-name-header", "", "with --proxy-header: the header with the person's display name")
	fs.StringVar(&tf.proxyGrps, "proxy-groups-header", "", "with --proxy-header: the header with the person's groups, comma-separated")
	return tf
}

// check refuses combinations that cannot work, before anything starts.
func (tf *teamFlags) check(sf *serveFlags) error {
	if tf.file == "" {
		for name, v := range map[string]string{"--oidc-issuer": tf.issuer, "--oidc-client-id": tf.clientID, "--oidc-client-secret-file": tf.secretFile,
			"--public-url": tf.publicURL, "--proxy-header": tf.proxyHeader, "--proxy-name-header": tf.proxyName, "--proxy-groups-header": tf.proxyGrps} {
			if v != "" {
				return fmt.Errorf("%s needs --team", name)
			}
		}
		if tf.trustUnverified {
			return errors.New("--oidc-trust-unverified-email needs --team")
		}
		return nil
	}
	switch {
	case sf.spares > 0:
		return errors.New("--spares does not go with --team: spare CLIs are started before anyone asks, so they would run without a person's policy and isolation")
	case tf.issuer != "" && tf.proxyHeader != "":
		return errors.New("--oidc-issuer and --proxy-header exclude each other: people sign in one way")
	case tf.issuer == "" && tf.proxyHeader == "":
		return errors.New("--team needs a way to sign in: --oidc-issuer (with --oidc-client-id and --public-url) or --proxy-header (with --trusted-proxy)")
	case tf.proxyHeader != "" && len(sf.proxies) == 0:
		return errors.New("--proxy-header needs --trusted-proxy: the header is believed only from the proxy's address")
	case tf.proxyHeader == "" && (tf.proxyName != "" || tf.proxyGrps != ""):
		return errors.New("--proxy-name-header and --proxy-groups-header need --proxy-header")
	case tf.issuer != "" && tf.clientID == "":
		return errors.New("--oidc-issuer needs --oidc-client-id")
	case tf.issuer != "" && tf.publicURL == "":
		return errors.New("--oidc-issuer needs --public-url (the provider redirects the browser to its /auth/callback)")
	case tf.issuer == "" && (tf.clientID != "" || tf.secretFile != ""):
		return errors.New("--oidc-client-id and --oidc-client-secret-file need --oidc-issuer")
	case tf.issuer == "" && tf.trustUnverified:
		return errors.New("--oidc-trust-unverified-email needs --oidc-issuer")
	}
	if tf.publicURL != "" {
		u, err := url.Parse(tf.publicURL)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return fmt.Errorf("--public-url %q: want http(s)://host[:port]", tf.publicURL)
		}
	}
	return nil
}

// secret reads the OIDC client secret from the file or the environment.
func (tf *teamFlags) secret() (string, error) {
	if tf.secretFile != "" {
		b, err := os.ReadFile(tf.secretFile)
		if err != nil {
			return "", fmt.Errorf("--oidc-client-secret-file: %w", err)
		}
		return strings.TrimSpace(string(b)), nil
	}
	s := os.Getenv(envOIDCSecret)
	if s == "" {
		return "", fmt.Errorf("the OIDC client secret: set $%s or --oidc-client-secret-file", envOIDCSecret)
	}
	return s, nil
}

// teamBwrap is the bubblewrap that isolates sessions ("" =
// team.DefaultBwrap); tests point it at a missing one.
var teamBwrap string

// teamServe is what setupTeam built: the server's and the backend's team
// options, and what to close at the end.
type teamServe struct {
	opts  *serve.TeamOptions
	store *team.Store
	audit *team.Audit
	// agentAuthz and isolation are the embedded agent's (serve
	// --nats-embedded --team): its Authorizer maps host sessions to the
	// cluster's ids.
	agentAuthz *team.Authorizer
	isolation  *team.Isolation
	closer     func()
}

// setupTeam loads the team file, checks isolation, starts the local
// JetStream in its state folder and builds on it the store, the audit
// log, sign-in and authorization. Every part that records (the
// Authorizer, the authenticator, the server's own refusal of an audit
// read) records into the same audit log, which GET /api/audit reads.
func setupTeam(ctx context.Context, tf *teamFlags, sf *serveFlags) (*teamServe, error) {
	cfg, err := team.LoadConfig(tf.file)
	if err != nil {
		return nil, err
	}
	if cfg.StateDir == "" {
		return nil, errors.New("the team file needs state_dir: the local JetStream (shares, spend, sign-ins, audit) and the isolated sessions' homes are kept there")
	}
	var iso *team.Isolation
	if cfg.MultiUser() { // isolation: on, or auto with more than one person
		// Before anything runs: a machine that cannot confine sessions
		// must not run people's sessions side by side unconfined.
		if iso, err = checkIsolation(ctx, cfg); err != nil {
			return nil, err
		}
	}
	ljs, err := team.StartLocalJetStream(ctx, cfg.StateDir)
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*teamServe, error) {
		ljs.Close()
		return nil, err
	}
	ts, err := buildTeam(ctx, ljs.JetStream(), cfg, tf, sf, 0)
	if err != nil {
		return fail(err)
	}
	if iso != nil {
		ts.opts.Isolation = iso // the local backend confines each session
	}
	ts.closer = func() { ljs.Close() }
	return ts, nil
}

// setupClusterTeam is --team with --nats or --nats-embedded: the team's
// store, sign-ins and audit log live on the cluster's JetStream (no
// second database), reached at url with nopts; they are created with
// replicas when missing. With the embedded agent (embedded) the
// sessions run in this process: the agent gets an Authorizer of its own
// on the same store and log (checking each command again where it runs,
// finding ACLs under the cluster's ids), and the isolation the team
// file asks for. With --nats the agents elsewhere do both (tether agent
// --team).
func setupClusterTeam(ctx context.Context, tf *teamFlags, sf *serveFlags, url string, nopts []nats.Option, replicas int, embedded bool) (*teamServe, error) {
	cfg, err := team.LoadConfig(tf.file)
	if err != nil {
		return nil, err
	}
	var iso *team.Isolation
	if embedded && cfg.MultiUser() {
		if cfg.StateDir == "" {
			return nil, errors.New("the team file turns session isolation on and has no state_dir: the isolated sessions' homes are kept there")
		}
		if iso, err = checkIsolation(ctx, cfg); err != nil {
			return nil, err
		}
	}
	nc, err := nats.Connect(url, append(slices.Clone(nopts), nats.Name("tether serve --team"))...)
	if err != nil {
		return nil, fmt.Errorf("the team's JetStream at %s: %w", url, err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, err
	}
	ts, err := buildTeam(ctx, js, cfg, tf, sf, replicas)
	if err != nil {
		nc.Close()
		return nil, err
	}
	if embedded {
		ts.agentAuthz = team.NewAuthorizer(cfg, ts.store, &team.AuthorizerOptions{Recorder: ts.audit, AllowBypass: sf.allowBypass,
			SessionID: cluster.HostSessionID})
		ts.isolation = iso
	}
	ts.closer = func() { nc.Close() }
	return ts, nil
}

// checkIsolation makes the isolation the team file asks for, refusing
// with its reason a machine that cannot confine sessions.
func checkIsolation(ctx context.Context, cfg *team.Config) (*team.Isolation, error) {
	iso, err := team.NewIsolation(&team.IsolationOptions{Bwrap: teamBwrap, StateDir: cfg.StateDir})
	if err == nil {
		err = iso.Check(ctx)
	}
	if err != nil {
		why := "isolation: on"
		if cfg.Isolation == "auto" {
			why = "isolation: auto, and more than one person can sign in"
		}
		return nil, fmt.Errorf("the team file turns session isolation on (%s), and this machine cannot isolate sessions: %w; "+
			"install bubblewrap and allow unprivileged user namespaces, or set isolation: off to accept that people's sessions can read each other's files", why, err)
	}
	return iso, nil
}

// buildTeam builds the store, the audit log, the logins, sign-in and
// authorization of cfg on js (the local JetStream, or the cluster's).
func buildTeam(ctx context.Context, js jetstream.JetStream, cfg *team.Config, tf *teamFlags, sf *serveFlags, replicas int) (*teamServe, error) {
	st, err := team.OpenStore(ctx, js, &team.StoreOptions{Replicas: replicas})
	if err != nil {
		return nil, err
	}
	audit, err := team.OpenAudit(ctx, js, &team.AuditOptions{Retention: cfg.Audit.Retention, MaxBytes: cfg.Audit.MaxBytes, Replicas: replicas})
	if err != nil {
		return nil, err
	}
	authz := team.NewAuthorizer(cfg, st, &team.AuthorizerOptions{AllowBypass: sf.allowBypass, Recorder: audit})
	var auth team.Authenticator
	if tf.issuer != "" {
		secret, err := tf.secret()
		if err != nil {
			return nil, err
		}
		logins, err := team.NewKVLoginStore(ctx, js)
		if err != nil {
			return nil, err
		}
		o, err := team.NewOIDC(ctx, &team.OIDCOptions{Issuer: tf.issuer, ClientID: tf.clientID, ClientSecret: secret,
			RedirectURL: strings.TrimSuffix(tf.publicURL, "/") + "/auth/callback", GroupsClaim: tf.groupsClaim,
			Resolve: cfg.Resolve, Logins: logins, Secure: strings.HasPrefix(tf.publicURL, "https:"), Recorder: audit,
			TrustUnverifiedEmail: tf.trustUnverified})
		if err != nil {
			return nil, err
		}
		auth = o
	} else {
		p, err := team.NewProxyAuth(&team.ProxyOptions{Header: tf.proxyHeader, NameHeader: tf.proxyName, GroupsHeader: tf.proxyGrps,
			Trusted: sf.proxies, Resolve: cfg.Resolve, Recorder: audit})
		if err != nil {
			return nil, err
		}
		auth = p
	}
	opts := &serve.TeamOptions{Auth: auth, Config: cfg, Authorizer: serve.NewTeamAuthorizer(authz, st),
		Audit: serve.NewTeamAudit(audit), Recorder: audit}
	return &teamServe{opts: opts, store: st, audit: audit, closer: func() {}}, nil
}

// serveClusterTeam sets up --team for serve --nats / --nats-embedded
// (sf.clusterTeam); ao is the embedded agent's options (nil with
// --nats), given the agent's Authorizer and isolation. It returns an
// exit code, 0 when it went well or there is no team.
func serveClusterTeam(ctx context.Context, sf *serveFlags, nsf *serveNATSFlags, url string, nopts []nats.Option, ao *cluster.AgentOptions, stderr io.Writer) int {
	if sf.team == nil || sf.team.file == "" {
		return 0
	}
	ts, err := setupClusterTeam(ctx, sf.team, sf, url, nopts, nsf.replicas, ao != nil)
	if err != nil {
		fmt.Fprintf(stderr, "tether serve: --team: %v\n", err)
		return 2
	}
	sf.clusterTeam = ts
	if ao != nil {
		ao.Team = ts.agentAuthz
		if ts.isolation != nil {
			ao.Isolation = ts.isolation
		}
	}
	return 0
}
