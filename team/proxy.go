package team

import (
	"errors"
	"log/slog"
	"net/http"
	"net/netip"
	"strings"
	"time"
)

// ProxyOptions configure NewProxyAuth.
type ProxyOptions struct {
	// Header carries the person's e-mail address (or user name), set by
	// the proxy after it signed them in: X-Forwarded-Email
	// (oauth2-proxy), Tailscale-User-Login, Cf-Access-Authenticated-User-Email,
	// X-Pomerium-Claim-Email.
	Header string
	// NameHeader, GroupsHeader (comma-separated) are optional.
	NameHeader, GroupsHeader string
	// Trusted are the proxies' addresses: the headers are believed only
	// on connections from them. Empty trusts nobody.
	Trusted []netip.Prefix
	// Resolve decides whether the person may come in, as
	// OIDCOptions.Resolve (nil admits everyone the proxy names).
	Resolve func(*Identity) (*Identity, error)
	// Recorder gets sign_in_refused for forged or refused headers.
	Recorder Recorder
	// Logger is optional; nil is silent.
	Logger *slog.Logger
}

// ProxyAuth identifies people by the header of a trusted reverse proxy
// that signed them in. It implements Authenticator; it has no sign-in
// routes (Handler is nil).
type ProxyAuth struct {
	o   ProxyOptions
	log *slog.Logger
}

// ErrUntrustedProxy: an identity header arrived from an address that is
// not a trusted proxy. It matches ErrUnauthenticated.
var ErrUntrustedProxy = errors.New("team: identity header from an untrusted address")

// NewProxyAuth checks o and returns the authenticator.
func NewProxyAuth(o *ProxyOptions) (*ProxyAuth, error) {
	if o == nil || o.Header == "" {
		return nil, errors.New("team: proxy authentication needs the header naming the person")
	}
	if len(o.Trusted) == 0 {
		return nil, errors.New("team: proxy authentication needs the trusted proxies' addresses")
	}
	p := &ProxyAuth{o: *o, log: o.Logger}
	if p.log == nil {
		p.log = slog.New(slog.DiscardHandler)
	}
	return p, nil
}

// Handler implements Authenticator: nil, the proxy signs people in.
func (p *ProxyAuth) Handler() http.Handler { return nil }

// Identify implements Authenticator.
func (p *ProxyAuth) Identify(r *http.Request) (*Identity, error) {
	user := strings.TrimSpace(r.Header.Get(p.o.Header))
	if !p.trusted(r) {
		if user != "" {
			// Someone reached us around the proxy and claims to be someone.
			p.log.WarnContext(r.Context(), "team: identity header from an untrusted address", "addr", r.RemoteAddr)
			p.refuse(r, nil, "untrusted proxy "+remoteIP(r))
			return nil, errors.Join(ErrUnauthenticated, ErrUntrustedProxy)
		}
		return nil, ErrUnauthenticated
	}
	if user == "" || len(user) > maxClaimLen || !printable(user) {
		return nil, ErrUnauthenticated
	}
	id := &Identity{Subject: user, Addr: p.clientAddr(r)}
	if strings.Contains(user, "@") {
		id.Email = strings.ToLower(user)
		id.Subject = id.Email
	}
	if p.o.NameHeader != "" {
		if n := strings.TrimSpace(r.Header.Get(p.o.NameHeader)); printable(n) {
			id.Name = truncate(n, maxClaimLen)
		}
	}
	if p.o.GroupsHeader != "" {
		for _, g := range strings.Split(r.Header.Get(p.o.GroupsHeader), ",") {
			if g = strings.TrimSpace(g); g != "" && printable(g) && len(g) <= maxClaimLen && len(id.Groups) < maxGroups {
				id.Groups = append(id.Groups, g)
			}
		}
	}
	if p.o.Resolve != nil {
		resolved, err := callResolve(p.o.Resolve, id)
		if err != nil {
			p.refuse(r, id, err.Error())
			return nil, err
		}
		resolved.Addr = id.Addr
		id = resolved
	}
	return id, nil
}

func (p *ProxyAuth) trusted(r *http.Request) bool {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return false
	}
	ip := ap.Addr().Unmap()
	for _, t := range p.o.Trusted {
		if t.Contains(ip) {
			return true
		}
	}
	return false
}

// clientAddr is the person's address: the last X-Forwarded-For entry
// (the one the trusted proxy added), else the connection's.
func (p *ProxyAuth) clientAddr(r *http.Request) string {
	if xff := r.Header.Values("X-Forwarded-For"); len(xff) > 0 {
		parts := strings.Split(xff[len(xff)-1], ",")
		if a, err := netip.ParseAddr(strings.TrimSpace(parts[len(parts)-1])); err == nil {
			return a.String()
		}
	}
	return remoteIP(r)
}

func (p *ProxyAuth) refuse(r *http.Request, id *Identity, detail string) {
	ev := &AuditEvent{Action: ActionSignInFailed, Outcome: OutcomeRefused, Detail: truncate(detail, 200), Addr: remoteIP(r)}
	if id != nil {
		ev.Actor, ev.ActorName, ev.Addr = id.Subject, id.DisplayName(), id.Addr
	}
	recordEvent(r, p.o.Recorder, p.log, ev, time.Now)
}

func printable(s string) bool {
	for _, c := range s {
		if c < 0x20 || c == 0x7f {
			return false
		}
	}
	return true
}
