package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"
	"strings"

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
}

func addTeamFlags(fs *flag.FlagSet) *teamFlags {
	tf := &teamFlags{}
	fs.StringVar(&tf.file, "team", "", "serve a team: people sign in (OpenID Connect or a trusted proxy) and see what they may; the team file (YAML) says who and what")
	fs.StringVar(&tf.issuer, "oidc-issuer", "", "with --team: the OpenID Connect provider's issuer URL")
	fs.StringVar(&tf.clientID, "oidc-client-id", "", "with --oidc-issuer: the client id registered at the provider")
	fs.StringVar(&tf.secretFile, "oidc-client-secret-file", "", "with --oidc-issuer: a file holding the client secret (else $"+envOIDCSecret+")")
	fs.StringVar(&tf.groupsClaim, "oidc-groups-claim", "groups", "with --oidc-issuer: the ID token claim listing the person's groups")
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
		return nil
	}
	switch {
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

// teamServe is what setupTeam built: the server's and the backend's team
// options, and what to close at the end.
type teamServe struct {
	opts   *serve.TeamOptions
	closer func()
}

// setupTeam loads the team file, starts the local JetStream in its
// state folder and builds sign-in and authorization.
func setupTeam(ctx context.Context, tf *teamFlags, sf *serveFlags) (*teamServe, error) {
	cfg, err := team.LoadConfig(tf.file)
	if err != nil {
		return nil, err
	}
	if cfg.MultiUser() {
		// Isolation (bubblewrap) comes with package team's Isolation:
		// until it is wired here, refuse rather than run people's
		// sessions side by side unconfined.
		return nil, errors.New("the team file turns isolation on (isolation: auto with more than one person, or on), and this build of tether serve cannot isolate sessions yet; set isolation: off to accept that people's sessions can read each other's files")
	}
	if cfg.StateDir == "" {
		return nil, errors.New("the team file needs state_dir: the local JetStream (shares, spend, sign-ins, audit) is stored there")
	}
	ljs, err := team.StartLocalJetStream(ctx, cfg.StateDir)
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*teamServe, error) {
		ljs.Close()
		return nil, err
	}
	st, err := team.OpenStore(ctx, ljs.JetStream(), nil)
	if err != nil {
		return fail(err)
	}
	authz := team.NewAuthorizer(cfg, st, &team.AuthorizerOptions{AllowBypass: sf.allowBypass})
	var auth team.Authenticator
	if tf.issuer != "" {
		secret, err := tf.secret()
		if err != nil {
			return fail(err)
		}
		logins, err := team.NewKVLoginStore(ctx, ljs.JetStream())
		if err != nil {
			return fail(err)
		}
		o, err := team.NewOIDC(ctx, &team.OIDCOptions{Issuer: tf.issuer, ClientID: tf.clientID, ClientSecret: secret,
			RedirectURL: strings.TrimSuffix(tf.publicURL, "/") + "/auth/callback", GroupsClaim: tf.groupsClaim,
			Resolve: cfg.Resolve, Logins: logins, Secure: strings.HasPrefix(tf.publicURL, "https:")})
		if err != nil {
			return fail(err)
		}
		auth = o
	} else {
		p, err := team.NewProxyAuth(&team.ProxyOptions{Header: tf.proxyHeader, NameHeader: tf.proxyName, GroupsHeader: tf.proxyGrps,
			Trusted: sf.proxies, Resolve: cfg.Resolve})
		if err != nil {
			return fail(err)
		}
		auth = p
	}
	return &teamServe{
		opts:   &serve.TeamOptions{Auth: auth, Config: cfg, Authorizer: serve.NewTeamAuthorizer(authz, st)},
		closer: func() { ljs.Close() },
	}, nil
}
