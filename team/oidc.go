package team

import (
	"container/list"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/zitadel/oidc/v3/pkg/client/rp"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"golang.org/x/oauth2"
)

// Cookie names of the OpenID Connect sign-in.
const (
	// SessionCookie holds a login id (LoginStore): HttpOnly, SameSite=Lax,
	// Secure when OIDCOptions.Secure.
	SessionCookie = "tether_session"
	// stateCookie binds an authorization in flight to the browser that
	// started it, so nobody can make a victim's browser finish a sign-in
	// the attacker started (login CSRF).
	stateCookie = "tether_auth_state"
)

// Defaults of OIDCOptions.
const (
	DefaultSessionTTL  = 12 * time.Hour
	DefaultGroupsClaim = "groups"
	// MaxPendingSignIns bounds the sign-ins in flight (between
	// /auth/login and /auth/callback). Policy when full: the oldest is
	// dropped (its callback then says "start again").
	MaxPendingSignIns = 10000
	// pendingTTL is how long a person has at the provider's login page.
	pendingTTL = 10 * time.Minute
	// maxGroups and maxClaimLen bound what a provider's claims put into
	// an identity (and so into every login record and audit event).
	maxGroups   = 256
	maxClaimLen = 320
)

// OIDCOptions configure NewOIDC.
type OIDCOptions struct {
	// Issuer is the provider's issuer URL; discovery runs on it.
	Issuer string
	// ClientID, ClientSecret: the confidential client registered at the
	// provider.
	ClientID, ClientSecret string
	// RedirectURL is this server's callback as the browser reaches it:
	// the public URL + "/auth/callback". Registered at the provider.
	RedirectURL string
	// Scopes asked for; default openid, email, profile.
	Scopes []string
	// GroupsClaim names the claim listing the person's groups (default
	// "groups"); read from the ID token, else from userinfo.
	GroupsClaim string
	// Resolve decides at sign-in whether the person may sign in (an error
	// refuses them: a page saying so, 403, an audit sign_in_refused) and
	// may fill the identity (Role). Typically (*Config).Resolve. nil
	// admits everyone the provider signs in.
	Resolve func(*Identity) (*Identity, error)
	// Logins keeps the server side of sign-ins; nil = NewMemoryLoginStore().
	Logins LoginStore
	// Secure marks the cookies Secure (set it when the public URL is
	// https).
	Secure bool
	// SessionTTL is how long a sign-in lasts (default DefaultSessionTTL).
	SessionTTL time.Duration
	// Recorder gets sign_in, sign_out and sign_in_refused (optional).
	Recorder Recorder
	// Logger is optional; nil is silent. Tokens, codes and cookies are
	// never logged.
	Logger *slog.Logger
	// HTTPClient talks to the provider (default: a client with a 30s
	// timeout).
	HTTPClient *http.Client
	// TrustUnverifiedEmail takes the e-mail claim as the person's
	// identity even without email_verified=true: only for providers that
	// manage every address themselves and do not send that claim.
	TrustUnverifiedEmail bool
	// Now is the clock (default time.Now); tests move it.
	Now func() time.Time
}

// OIDC signs people in with an OpenID Connect provider (authorization
// code flow with PKCE, state and nonce) and identifies them afterwards
// by the tether_session cookie. It implements Authenticator.
//
// Sign-ins in flight (state, nonce, PKCE verifier) live in this process's
// memory for up to ten minutes, so the callback must reach the process
// that sent the person to the provider; finished logins live in the
// LoginStore, which several processes may share (NewKVLoginStore).
type OIDC struct {
	o      OIDCOptions
	rp     rp.RelyingParty
	logins LoginStore
	log    *slog.Logger

	mu      sync.Mutex
	pending map[string]*list.Element // by state; values *pendingSignIn
	order   *list.List               // oldest first
}

// pendingSignIn is one authorization in flight: what the callback needs
// to finish it.
type pendingSignIn struct {
	state, nonce, verifier, next string
	expires                      time.Time
}

type nonceKey struct{}

// NewOIDC discovers the provider at o.Issuer (ctx bounds the discovery)
// and returns the authenticator.
func NewOIDC(ctx context.Context, o *OIDCOptions) (*OIDC, error) {
	if o == nil || o.Issuer == "" || o.ClientID == "" || o.RedirectURL == "" {
		return nil, errors.New("team: OIDC needs an issuer, a client id and a redirect URL")
	}
	if u, err := url.Parse(o.RedirectURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("team: OIDC redirect URL %q is not an absolute http(s) URL", o.RedirectURL)
	}
	a := &OIDC{o: *o, pending: map[string]*list.Element{}, order: list.New()}
	if len(a.o.Scopes) == 0 {
		a.o.Scopes = []string{oidc.ScopeOpenID, oidc.ScopeEmail, oidc.ScopeProfile}
	}
	if a.o.GroupsClaim == "" {
		a.o.GroupsClaim = DefaultGroupsClaim
	}
	if a.o.SessionTTL <= 0 {
		a.o.SessionTTL = DefaultSessionTTL
	}
	if a.o.Now == nil {
		a.o.Now = time.Now
	}
	if a.o.HTTPClient == nil {
		a.o.HTTPClient = &http.Client{Timeout: 30 * time.Second}
	}
	a.logins = a.o.Logins
	if a.logins == nil {
		a.logins = NewMemoryLoginStore()
	}
	a.log = a.o.Logger
	if a.log == nil {
		a.log = slog.New(slog.DiscardHandler)
	}
	r, err := rp.NewRelyingPartyOIDC(ctx, a.o.Issuer, a.o.ClientID, a.o.ClientSecret, a.o.RedirectURL, a.o.Scopes,
		rp.WithHTTPClient(a.o.HTTPClient),
		rp.WithLogger(slog.New(slog.DiscardHandler)),
		rp.WithVerifierOpts(rp.WithNonce(func(ctx context.Context) string {
			n, _ := ctx.Value(nonceKey{}).(string)
			return n
		})),
	)
	if err != nil {
		return nil, fmt.Errorf("team: OpenID provider %s: %w", a.o.Issuer, err)
	}
	a.rp = r
	return a, nil
}

// Handler serves GET /auth/login, GET /auth/callback and POST
// /auth/logout.
func (a *OIDC) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		switch r.URL.Path {
		case "/auth/login":
			if r.Method != http.MethodGet && r.Method != http.MethodHead {
				methodNotAllowed(w, "GET")
				return
			}
			a.login(w, r)
		case "/auth/callback":
			if r.Method != http.MethodGet {
				methodNotAllowed(w, "GET")
				return
			}
			a.callback(w, r)
		case "/auth/logout":
			if r.Method != http.MethodPost {
				methodNotAllowed(w, "POST")
				return
			}
			a.logout(w, r)
		default:
			http.NotFound(w, r)
		}
	})
}

// Identify implements Authenticator: the person whose login the
// tether_session cookie names.
func (a *OIDC) Identify(r *http.Request) (*Identity, error) {
	c, err := r.Cookie(SessionCookie)
	if err != nil || c.Value == "" {
		return nil, ErrUnauthenticated
	}
	id, exp, err := a.logins.Get(r.Context(), c.Value)
	if err != nil {
		return nil, err
	}
	if !exp.After(a.o.Now()) {
		return nil, ErrLoginUnknown
	}
	id.Addr = remoteIP(r)
	return id, nil
}

func (a *OIDC) login(w http.ResponseWriter, r *http.Request) {
	next, ok := localPath(r.URL.Query().Get("next"))
	if !ok {
		page(w, http.StatusBadRequest, "Sign-in refused", "The address to return to after signing in must be a path on this server.", false)
		return
	}
	p := &pendingSignIn{state: randomToken(), nonce: randomToken(), verifier: oauth2.GenerateVerifier(),
		next: next, expires: a.o.Now().Add(pendingTTL)}
	a.addPending(p)
	http.SetCookie(w, &http.Cookie{Name: stateCookie, Value: p.state, Path: "/auth/", MaxAge: int(pendingTTL / time.Second),
		HttpOnly: true, Secure: a.o.Secure, SameSite: http.SameSiteLaxMode})
	opts := []rp.AuthURLOpt{rp.WithCodeChallenge(oidc.NewSHACodeChallenge(p.verifier)), rp.AuthURLOpt(rp.WithURLParam("nonce", p.nonce))}
	if r.URL.Query().Get("prompt") == oidc.PromptSelectAccount {
		// "Sign in as someone else": the provider offers its account
		// chooser (or its login form) instead of signing the same
		// account in again.
		opts = append(opts, rp.WithPrompt(oidc.PromptSelectAccount))
	}
	u := rp.AuthURL(p.state, a.rp, opts...)
	http.Redirect(w, r, u, http.StatusFound)
}

func (a *OIDC) callback(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	state := q.Get("state")
	// The state cookie is spent whatever happens.
	http.SetCookie(w, &http.Cookie{Name: stateCookie, Value: "", Path: "/auth/", MaxAge: -1,
		HttpOnly: true, Secure: a.o.Secure, SameSite: http.SameSiteLaxMode})
	c, err := r.Cookie(stateCookie)
	if state == "" || err != nil || subtle.ConstantTimeCompare([]byte(c.Value), []byte(state)) != 1 {
		a.refuse(r, nil, "state mismatch")
		page(w, http.StatusBadRequest, "Sign-in failed", "This sign-in was not started from this browser, or it was started again elsewhere. Please start again.", true)
		return
	}
	p := a.takePending(state)
	if p == nil {
		a.refuse(r, nil, "unknown or expired state")
		page(w, http.StatusBadRequest, "Sign-in failed", "This sign-in took too long or was already used. Please start again.", true)
		return
	}
	if e := q.Get("error"); e != "" {
		a.refuse(r, nil, "provider: "+truncate(e, 64))
		page(w, http.StatusUnauthorized, "Sign-in failed", "The identity provider did not sign you in ("+truncate(e, 64)+").", true)
		return
	}
	code := q.Get("code")
	if code == "" {
		page(w, http.StatusBadRequest, "Sign-in failed", "The identity provider's answer carried no code. Please start again.", true)
		return
	}
	ctx := context.WithValue(r.Context(), nonceKey{}, p.nonce)
	tokens, err := rp.CodeExchange[*oidc.IDTokenClaims](ctx, code, a.rp, rp.WithCodeVerifier(p.verifier))
	if err != nil {
		a.log.WarnContext(ctx, "team: OpenID code exchange failed", "err", err)
		a.refuse(r, nil, "code exchange failed")
		page(w, http.StatusUnauthorized, "Sign-in failed", "The identity provider's answer could not be verified. Please start again.", true)
		return
	}
	id := a.identity(ctx, tokens)
	id.Addr = remoteIP(r)
	if a.o.Resolve != nil {
		resolved, err := callResolve(a.o.Resolve, id)
		if err != nil {
			a.log.InfoContext(ctx, "team: sign-in refused", "sub", id.Subject, "err", err)
			a.refuse(r, id, err.Error())
			pageSwitch(w, http.StatusForbidden, "Not allowed", "You ("+id.DisplayName()+") are not allowed to use this Tether. Ask its administrator for access, or sign in with another account.")
			return
		}
		resolved.Addr = id.Addr
		id = resolved
	}
	lid, err := a.logins.Create(ctx, id, a.o.SessionTTL)
	if err != nil {
		a.log.ErrorContext(ctx, "team: store login", "err", err)
		page(w, http.StatusServiceUnavailable, "Sign-in failed", "The server could not record your sign-in. Please try again shortly.", true)
		return
	}
	http.SetCookie(w, a.sessionCookie(lid, a.o.SessionTTL))
	a.record(r, &AuditEvent{Actor: id.Subject, ActorName: id.DisplayName(), Action: ActionSignIn, Outcome: OutcomeOK})
	a.log.InfoContext(ctx, "team: signed in", "sub", id.Subject)
	http.Redirect(w, r, p.next, http.StatusSeeOther)
}

func (a *OIDC) logout(w http.ResponseWriter, r *http.Request) {
	if !sameOrigin(r, a.o.RedirectURL) {
		http.Error(w, "cross-origin logout refused", http.StatusForbidden)
		return
	}
	if c, err := r.Cookie(SessionCookie); err == nil && c.Value != "" {
		id, _, _ := a.logins.Get(r.Context(), c.Value)
		if err := a.logins.Revoke(r.Context(), c.Value); err != nil {
			a.log.ErrorContext(r.Context(), "team: revoke login", "err", err)
			http.Error(w, "logout failed; try again", http.StatusServiceUnavailable)
			return
		}
		if id != nil {
			a.record(r, &AuditEvent{Actor: id.Subject, ActorName: id.DisplayName(), Action: ActionSignOut, Outcome: OutcomeOK})
		}
	}
	http.SetCookie(w, a.sessionCookie("", -1))
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

func (a *OIDC) sessionCookie(value string, ttl time.Duration) *http.Cookie {
	c := &http.Cookie{Name: SessionCookie, Value: value, Path: "/", HttpOnly: true, Secure: a.o.Secure, SameSite: http.SameSiteLaxMode}
	if ttl < 0 {
		c.MaxAge = -1
	} else {
		c.MaxAge = int(ttl / time.Second)
		c.Expires = a.o.Now().Add(ttl)
	}
	return c
}

// identity builds the person from the verified ID token, filling what it
// lacks (e-mail, name, groups) from userinfo.
func (a *OIDC) identity(ctx context.Context, tokens *oidc.Tokens[*oidc.IDTokenClaims]) *Identity {
	cl := tokens.IDTokenClaims
	email, verified := cl.Email, a.emailVerified(bool(cl.EmailVerified))
	name := cl.Name
	groups, haveGroups := claimStrings(cl.Claims[a.o.GroupsClaim])
	if (email == "" || name == "" || !haveGroups) && tokens.AccessToken != "" && a.rp.UserinfoEndpoint() != "" {
		info, err := rp.Userinfo[*oidc.UserInfo](ctx, tokens.AccessToken, tokens.TokenType, cl.Subject, a.rp)
		if err != nil {
			a.log.WarnContext(ctx, "team: userinfo", "err", err)
		} else {
			if email == "" {
				email, verified = info.Email, a.emailVerified(bool(info.EmailVerified))
			}
			if name == "" {
				name = info.Name
			}
			if !haveGroups {
				groups, _ = claimStrings(info.Claims[a.o.GroupsClaim])
			}
		}
	}
	id := &Identity{Subject: cl.Subject, Name: truncate(name, maxClaimLen), Groups: groups}
	if email != "" && verified && len(email) <= maxClaimLen {
		id.Email = strings.ToLower(email)
		id.Subject = id.Email
	}
	return id
}

// emailVerified: only an address the provider says is verified becomes
// the person's identity (else anyone who can type an address into their
// profile at the provider could be anyone); TrustUnverifiedEmail lifts
// this for providers that never send email_verified (Entra ID).
func (a *OIDC) emailVerified(v bool) bool { return v || a.o.TrustUnverifiedEmail }

// claimStrings reads a groups-like claim: a list of strings or one
// string. Bounded by maxGroups and maxClaimLen.
func claimStrings(v any) ([]string, bool) {
	var out []string
	add := func(s string) {
		if s != "" && len(s) <= maxClaimLen && len(out) < maxGroups {
			out = append(out, s)
		}
	}
	switch v := v.(type) {
	case string:
		add(v)
	case []any:
		for _, x := range v {
			if s, ok := x.(string); ok {
				add(s)
			}
		}
	case []string:
		for _, s := range v {
			add(s)
		}
	default:
		return nil, false
	}
	return out, true
}

func (a *OIDC) addPending(p *pendingSignIn) {
	a.mu.Lock()
	defer a.mu.Unlock()
	now := a.o.Now()
	for e := a.order.Front(); e != nil; e = a.order.Front() {
		old := e.Value.(*pendingSignIn)
		if a.order.Len() < MaxPendingSignIns && old.expires.After(now) {
			break
		}
		a.order.Remove(e)
		delete(a.pending, old.state)
	}
	a.pending[p.state] = a.order.PushBack(p)
}

// takePending removes and returns the sign-in in flight for state, nil
// when unknown or expired.
func (a *OIDC) takePending(state string) *pendingSignIn {
	a.mu.Lock()
	defer a.mu.Unlock()
	e, ok := a.pending[state]
	if !ok {
		return nil
	}
	a.order.Remove(e)
	delete(a.pending, state)
	p := e.Value.(*pendingSignIn)
	if !p.expires.After(a.o.Now()) {
		return nil
	}
	return p
}

func (a *OIDC) refuse(r *http.Request, id *Identity, detail string) {
	ev := &AuditEvent{Action: ActionSignInFailed, Outcome: OutcomeRefused, Detail: truncate(detail, 200)}
	if id != nil {
		ev.Actor, ev.ActorName = id.Subject, id.DisplayName()
	}
	a.record(r, ev)
}

func (a *OIDC) record(r *http.Request, ev *AuditEvent) {
	recordEvent(r, a.o.Recorder, a.log, ev, a.o.Now)
}

// recordEvent hands ev to rec (if any) with the request's address and a
// bounded wait; a failing or panicking Recorder is logged, never shown.
func recordEvent(r *http.Request, rec Recorder, log *slog.Logger, ev *AuditEvent, now func() time.Time) {
	if rec == nil {
		return
	}
	if ev.Time.IsZero() {
		ev.Time = now().UTC()
	}
	if ev.Addr == "" {
		ev.Addr = remoteIP(r)
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), 5*time.Second)
	defer cancel()
	err := func() (err error) {
		defer func() {
			if p := recover(); p != nil {
				err = fmt.Errorf("recorder panicked: %v", p)
			}
		}()
		return rec.Record(ctx, ev)
	}()
	if err != nil {
		log.ErrorContext(ctx, "team: audit record", "action", ev.Action, "err", err)
	}
}

// errResolve wraps a Resolve that panicked.
var errResolve = errors.New("team: resolve failed")

func callResolve(f func(*Identity) (*Identity, error), id *Identity) (out *Identity, err error) {
	defer func() {
		if p := recover(); p != nil {
			out, err = nil, fmt.Errorf("%w: panic: %v", errResolve, p)
		}
	}()
	out, err = f(copyIdentity(id))
	if err == nil && out == nil {
		err = fmt.Errorf("%w: no identity", errResolve)
	}
	if err != nil && !errors.Is(err, ErrUnauthenticated) {
		err = fmt.Errorf("%w: %w", ErrUnauthenticated, err)
	}
	return out, err
}

// localPath accepts "" (meaning "/") and absolute paths on this server;
// anything that a browser could take to another host ("//evil",
// "/\evil", "https://evil", control characters) is refused.
func localPath(s string) (string, bool) {
	if s == "" {
		return "/", true
	}
	if !strings.HasPrefix(s, "/") || strings.HasPrefix(s, "//") || strings.ContainsAny(s, "\\") || len(s) > 2048 {
		return "", false
	}
	for _, c := range s {
		if c < 0x20 || c == 0x7f {
			return "", false
		}
	}
	u, err := url.Parse(s)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil {
		return "", false
	}
	return s, true
}

// sameOrigin guards POST /auth/logout against cross-site requests: a
// browser's Origin (sent on every POST by current browsers) must be this
// server's, as the request's Host or the public URL names it, and
// Sec-Fetch-Site must not say cross-site. A request with neither header
// is not from a browser page of another site.
func sameOrigin(r *http.Request, public string) bool {
	if s := r.Header.Get("Sec-Fetch-Site"); s == "cross-site" || s == "same-site" {
		return false
	}
	o := r.Header.Get("Origin")
	if o == "" {
		return true
	}
	u, err := url.Parse(o)
	if err != nil || u.Host == "" {
		return false
	}
	if p, err := url.Parse(public); err == nil && strings.EqualFold(p.Scheme, u.Scheme) && strings.EqualFold(p.Host, u.Host) {
		return true
	}
	return strings.EqualFold(u.Host, r.Host)
}

func remoteIP(r *http.Request) string {
	if h, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		return h
	}
	return r.RemoteAddr
}

func randomToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

func methodNotAllowed(w http.ResponseWriter, allow string) {
	w.Header().Set("Allow", allow)
	http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
}

var pageTmpl = template.Must(template.New("page").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{.Title}} · Tether</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>body{font-family:system-ui,sans-serif;max-width:32rem;margin:15vh auto;padding:0 1rem;line-height:1.5}
@media (prefers-color-scheme:dark){body{background:#18181b;color:#e4e4e7}a{color:#93c5fd}}</style></head>
<body><main><h1 id="title">{{.Title}}</h1><p id="message">{{.Message}}</p>
{{if .Retry}}<p><a id="retry" href="/auth/login">Sign in again</a></p>{{end}}
{{if .Switch}}<p><a id="switch" href="/auth/login?prompt=select_account">Sign in as someone else</a></p>{{end}}</main></body></html>
`))

// page answers with a small HTML page; the text is escaped.
func page(w http.ResponseWriter, code int, title, msg string, retry bool) {
	writePage(w, code, pageData{Title: title, Message: msg, Retry: retry})
}

// pageSwitch is page with a way to sign in with another account (the
// provider's account chooser): for a person who is signed in at the
// provider as someone this server does not admit.
func pageSwitch(w http.ResponseWriter, code int, title, msg string) {
	writePage(w, code, pageData{Title: title, Message: msg, Switch: true})
}

type pageData struct {
	Title, Message string
	Retry, Switch  bool
}

func writePage(w http.ResponseWriter, code int, d pageData) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_ = pageTmpl.Execute(w, d)
}
