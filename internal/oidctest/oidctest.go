// Package oidctest runs a real OpenID Provider on loopback for tests: the
// OpenID Certified op package of github.com/zitadel/oidc/v3 over an
// in-memory storage, with configured users, one confidential client and a
// plain HTML login page a person (or headless Chromium) fills in.
//
// It supports what a Tether sign-in needs and nothing more: the
// authorization code flow with PKCE (required: an authorization request
// without a S256 code challenge is refused, so a relying party that forgets
// PKCE fails its tests), ID tokens signed with an RSA key made at start and
// carrying the user's e-mail, name and a "groups" claim, userinfo,
// discovery and the key set. There are no refresh tokens, no consent page
// and no sessions at the provider: every authorization asks for the
// password again.
package oidctest

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// User is a person the provider knows. They sign in with Email (or ID)
// and Password.
type User struct {
	ID       string // the subject ("sub"); "" = Email
	Email    string
	Name     string
	Password string
	Groups   []string // the "groups" claim
	// EmailUnverified makes the provider say email_verified=false.
	EmailUnverified bool
}

// Options configure New. The zero value (or nil) gives a client
// "tether" with a random secret, no redirect URIs and no users.
type Options struct {
	ClientID     string
	ClientSecret string
	RedirectURIs []string
	Users        []User
	// IDTokenLifetime is how long ID tokens are valid (default 5m).
	IDTokenLifetime time.Duration
	Logger          *slog.Logger // nil = silent
}

// Provider is a running OpenID Provider. Its exported fields are the
// confidential client's credentials.
type Provider struct {
	ClientID     string
	ClientSecret string

	srv *httptest.Server
	st  *storage
}

// New starts a provider on 127.0.0.1 and closes it when t ends.
func New(t testing.TB, o *Options) *Provider {
	t.Helper()
	p, err := Start(o)
	if err != nil {
		t.Fatalf("oidctest: %v", err)
	}
	t.Cleanup(p.Close)
	return p
}

// Start starts a provider on 127.0.0.1; Close stops it.
func Start(o *Options) (*Provider, error) {
	if o == nil {
		o = &Options{}
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	st := &storage{
		key:      key,
		keyID:    randomHex(8),
		users:    map[string]*User{},
		requests: map[string]*authRequest{},
		codes:    map[string]string{},
		tokens:   map[string]*token{},
		client: &client{
			id:       o.ClientID,
			secret:   o.ClientSecret,
			redirect: slices.Clone(o.RedirectURIs),
			lifetime: o.IDTokenLifetime,
		},
	}
	if st.client.id == "" {
		st.client.id = "tether"
	}
	if st.client.secret == "" {
		st.client.secret = randomHex(24)
	}
	if st.client.lifetime <= 0 {
		st.client.lifetime = 5 * time.Minute
	}
	for _, u := range o.Users {
		st.addUser(u)
	}

	// The issuer is the server's URL: its listener exists before it
	// serves, so the handler is built for that address, then started.
	srv := httptest.NewUnstartedServer(nil)
	issuer := "http://" + srv.Listener.Addr().String()
	var cryptoKey [32]byte
	_, _ = rand.Read(cryptoKey[:])
	logger := o.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	prov, err := op.NewProvider(&op.Config{
		CryptoKey:       cryptoKey,
		CodeMethodS256:  true,
		AuthMethodPost:  true,
		SupportedClaims: append(slices.Clone(op.DefaultSupportedClaims), "groups"),
		SupportedScopes: []string{oidc.ScopeOpenID, oidc.ScopeProfile, oidc.ScopeEmail, "groups"},
	}, st, op.StaticIssuer(issuer), op.WithAllowInsecure(), op.WithLogger(logger))
	if err != nil {
		srv.Close()
		return nil, err
	}
	mux := http.NewServeMux()
	login := &loginPage{st: st, callback: op.AuthCallbackURL(prov)}
	mux.Handle("/login", op.NewIssuerInterceptor(prov.IssuerFromRequest).Handler(login))
	mux.Handle("/", prov)
	srv.Config.Handler = mux
	srv.Start()
	return &Provider{ClientID: st.client.id, ClientSecret: st.client.secret, srv: srv, st: st}, nil
}

// Issuer is the provider's issuer URL (http://127.0.0.1:port).
func (p *Provider) Issuer() string { return p.srv.URL }

// Close stops the provider.
func (p *Provider) Close() { p.srv.Close() }

// AddUser adds (or replaces, by ID) a user.
func (p *Provider) AddUser(u User) { p.st.addUser(u) }

// AddRedirectURI registers another redirect URI of the client: a test
// usually knows its relying party's URL only after starting the provider.
func (p *Provider) AddRedirectURI(uri string) {
	p.st.mu.Lock()
	defer p.st.mu.Unlock()
	p.st.client.redirect = append(p.st.client.redirect, uri)
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// loginPage is the provider's own sign-in form: GET shows it for an
// authorization request, POST checks the password, completes the request
// and sends the browser back to the op's callback, which redirects to the
// client with a code.
type loginPage struct {
	st       *storage
	callback func(context.Context, string) string
}

var loginTmpl = template.Must(template.New("login").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Sign in to the test provider</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
body{font-family:system-ui,sans-serif;background:#f4f4f5;display:flex;justify-content:center;padding-top:10vh;margin:0}
form{background:#fff;padding:2rem;border-radius:8px;box-shadow:0 1px 4px #0002;display:flex;flex-direction:column;gap:.75rem;min-width:18rem}
h1{font-size:1.2rem;margin:0 0 .5rem}label{display:flex;flex-direction:column;gap:.25rem;font-size:.9rem}
input{padding:.5rem;font-size:1rem}button{padding:.6rem;font-size:1rem;cursor:pointer}
.error{color:#b91c1c;margin:0}
</style></head>
<body><form method="post" action="/login">
<h1>Test OpenID Provider</h1>
{{if .Error}}<p class="error" id="error">{{.Error}}</p>{{end}}
<input type="hidden" name="id" value="{{.ID}}">
<label for="username">E-mail<input id="username" name="username" autocomplete="username" value="{{.Username}}" autofocus></label>
<label for="password">Password<input id="password" name="password" type="password" autocomplete="current-password"></label>
<button id="login" type="submit">Sign in</button>
</form></body></html>
`))

func (l *loginPage) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	switch r.Method {
	case http.MethodGet:
		id := r.URL.Query().Get("id")
		if _, err := l.st.request(id); err != nil {
			http.Error(w, "unknown authorization request", http.StatusBadRequest)
			return
		}
		l.render(w, http.StatusOK, id, "", "")
	case http.MethodPost:
		if err := r.ParseForm(); err != nil {
			http.Error(w, "bad form", http.StatusBadRequest)
			return
		}
		id, username := r.PostForm.Get("id"), r.PostForm.Get("username")
		if err := l.st.complete(id, username, r.PostForm.Get("password")); err != nil {
			if errors.Is(err, errUnknownRequest) {
				http.Error(w, "unknown authorization request", http.StatusBadRequest)
				return
			}
			l.render(w, http.StatusUnauthorized, id, username, "Wrong e-mail or password.")
			return
		}
		http.Redirect(w, r, l.callback(r.Context(), id), http.StatusFound)
	default:
		w.Header().Set("Allow", "GET, POST")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	}
}

func (l *loginPage) render(w http.ResponseWriter, code int, id, username, msg string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	_ = loginTmpl.Execute(w, struct{ ID, Username, Error string }{id, username, msg})
}

var errUnknownRequest = errors.New("oidctest: unknown authorization request")

// storage is the op.Storage: everything in memory under one mutex.
type storage struct {
	key   *rsa.PrivateKey
	keyID string

	mu       sync.Mutex
	client   *client
	users    map[string]*User        // by ID and by lower-cased e-mail
	requests map[string]*authRequest // by id
	codes    map[string]string       // code → request id
	tokens   map[string]*token       // access token id → token
}

type token struct {
	subject string
	scopes  []string
	expires time.Time
}

func (s *storage) addUser(u User) {
	if u.ID == "" {
		u.ID = u.Email
	}
	u.Groups = slices.Clone(u.Groups)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.users[u.ID] = &u
	if u.Email != "" {
		s.users[strings.ToLower(u.Email)] = &u
	}
}

func (s *storage) user(id string) (*User, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	u, ok := s.users[id]
	return u, ok
}

func (s *storage) request(id string) (*authRequest, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.requests[id]
	if !ok {
		return nil, errUnknownRequest
	}
	return r, nil
}

// complete checks the password and marks request id done for the user.
func (s *storage) complete(id, username, password string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.requests[id]
	if !ok {
		return errUnknownRequest
	}
	u, ok := s.users[username]
	if !ok {
		u, ok = s.users[strings.ToLower(username)]
	}
	if !ok || subtle.ConstantTimeCompare([]byte(u.Password), []byte(password)) != 1 {
		return errors.New("oidctest: wrong username or password")
	}
	r.subject, r.done, r.authTime = u.ID, true, time.Now()
	return nil
}

// authRequest is one authorization request, from /authorize to the code
// exchange.
type authRequest struct {
	id       string
	req      oidc.AuthRequest
	subject  string
	done     bool
	authTime time.Time
}

func (a *authRequest) GetID() string          { return a.id }
func (a *authRequest) GetACR() string         { return "" }
func (a *authRequest) GetAMR() []string       { return []string{"pwd"} }
func (a *authRequest) GetAudience() []string  { return []string{a.req.ClientID} }
func (a *authRequest) GetAuthTime() time.Time { return a.authTime }
func (a *authRequest) GetClientID() string    { return a.req.ClientID }
func (a *authRequest) GetNonce() string       { return a.req.Nonce }
func (a *authRequest) GetRedirectURI() string { return a.req.RedirectURI }
func (a *authRequest) GetScopes() []string    { return a.req.Scopes }
func (a *authRequest) GetState() string       { return a.req.State }
func (a *authRequest) GetSubject() string     { return a.subject }
func (a *authRequest) Done() bool             { return a.done }
func (a *authRequest) GetResponseMode() oidc.ResponseMode {
	return a.req.ResponseMode
}
func (a *authRequest) GetResponseType() oidc.ResponseType {
	return a.req.ResponseType
}
func (a *authRequest) GetCodeChallenge() *oidc.CodeChallenge {
	return &oidc.CodeChallenge{Challenge: a.req.CodeChallenge, Method: a.req.CodeChallengeMethod}
}

func (s *storage) CreateAuthRequest(_ context.Context, req *oidc.AuthRequest, _ string) (op.AuthRequest, error) {
	if req.CodeChallenge == "" || req.CodeChallengeMethod != oidc.CodeChallengeMethodS256 {
		return nil, oidc.ErrInvalidRequest().WithDescription("PKCE with S256 is required")
	}
	a := &authRequest{id: randomHex(16), req: *req}
	a.req.Scopes = slices.Clone(req.Scopes)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests[a.id] = a
	return a, nil
}

func (s *storage) AuthRequestByID(_ context.Context, id string) (op.AuthRequest, error) {
	return s.request(id)
}

func (s *storage) AuthRequestByCode(_ context.Context, code string) (op.AuthRequest, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.requests[s.codes[code]]
	if !ok {
		return nil, errUnknownRequest
	}
	return r, nil
}

func (s *storage) SaveAuthCode(_ context.Context, id, code string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.codes[code] = id
	return nil
}

// DeleteAuthRequest runs after the code exchange: the code is then spent.
func (s *storage) DeleteAuthRequest(_ context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.requests, id)
	for c, rid := range s.codes {
		if rid == id {
			delete(s.codes, c)
		}
	}
	return nil
}

func (s *storage) CreateAccessToken(_ context.Context, req op.TokenRequest) (string, time.Time, error) {
	id := randomHex(16)
	exp := time.Now().Add(5 * time.Minute)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tokens[id] = &token{subject: req.GetSubject(), scopes: slices.Clone(req.GetScopes()), expires: exp}
	return id, exp, nil
}

var errUnsupported = errors.New("oidctest: not supported")

func (s *storage) CreateAccessAndRefreshTokens(context.Context, op.TokenRequest, string) (string, string, time.Time, error) {
	return "", "", time.Time{}, errUnsupported
}

func (s *storage) TokenRequestByRefreshToken(context.Context, string) (op.RefreshTokenRequest, error) {
	return nil, op.ErrInvalidRefreshToken
}

func (s *storage) TerminateSession(context.Context, string, string) error { return nil }

func (s *storage) RevokeToken(_ context.Context, tokenID, _, _ string) *oidc.Error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.tokens, tokenID)
	return nil
}

func (s *storage) GetRefreshTokenInfo(context.Context, string, string) (string, string, error) {
	return "", "", op.ErrInvalidRefreshToken
}

type signingKey struct {
	id  string
	key *rsa.PrivateKey
}

func (k signingKey) SignatureAlgorithm() jose.SignatureAlgorithm { return jose.RS256 }
func (k signingKey) Algorithm() jose.SignatureAlgorithm          { return jose.RS256 }
func (k signingKey) ID() string                                  { return k.id }
func (k signingKey) Use() string                                 { return "sig" }

type privateKey struct{ signingKey }

func (k privateKey) Key() any { return k.key }

type publicKey struct{ signingKey }

func (k publicKey) Key() any { return &k.key.PublicKey }

func (s *storage) SigningKey(context.Context) (op.SigningKey, error) {
	return privateKey{signingKey{s.keyID, s.key}}, nil
}

func (s *storage) SignatureAlgorithms(context.Context) ([]jose.SignatureAlgorithm, error) {
	return []jose.SignatureAlgorithm{jose.RS256}, nil
}

func (s *storage) KeySet(context.Context) ([]op.Key, error) {
	return []op.Key{publicKey{signingKey{s.keyID, s.key}}}, nil
}

func (s *storage) GetClientByClientID(_ context.Context, id string) (op.Client, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if id != s.client.id {
		return nil, fmt.Errorf("oidctest: unknown client %q", id)
	}
	c := *s.client
	c.redirect = slices.Clone(c.redirect)
	return &c, nil
}

func (s *storage) AuthorizeClientIDSecret(_ context.Context, id, secret string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if id != s.client.id || subtle.ConstantTimeCompare([]byte(secret), []byte(s.client.secret)) != 1 {
		return errors.New("oidctest: wrong client credentials")
	}
	return nil
}

// SetUserinfoFromScopes is deprecated in op; SetUserinfoFromRequest does
// the work.
func (s *storage) SetUserinfoFromScopes(context.Context, *oidc.UserInfo, string, string, []string) error {
	return nil
}

// SetUserinfoFromRequest fills the ID token's claims.
func (s *storage) SetUserinfoFromRequest(_ context.Context, info *oidc.UserInfo, req op.IDTokenRequest, scopes []string) error {
	return s.userinfo(info, req.GetSubject(), scopes)
}

// SetUserinfoFromToken answers the userinfo endpoint.
func (s *storage) SetUserinfoFromToken(_ context.Context, info *oidc.UserInfo, tokenID, subject, _ string) error {
	s.mu.Lock()
	t, ok := s.tokens[tokenID]
	s.mu.Unlock()
	if !ok || t.subject != subject || time.Now().After(t.expires) {
		return errors.New("oidctest: invalid access token")
	}
	return s.userinfo(info, subject, t.scopes)
}

func (s *storage) userinfo(info *oidc.UserInfo, subject string, scopes []string) error {
	u, ok := s.user(subject)
	if !ok {
		return fmt.Errorf("oidctest: unknown user %q", subject)
	}
	info.Subject = u.ID
	for _, sc := range scopes {
		switch sc {
		case oidc.ScopeEmail:
			info.Email, info.EmailVerified = u.Email, oidc.Bool(!u.EmailUnverified)
		case oidc.ScopeProfile:
			info.Name, info.PreferredUsername = u.Name, u.Email
		}
	}
	if len(u.Groups) > 0 {
		info.AppendClaims("groups", slices.Clone(u.Groups))
	}
	return nil
}

func (s *storage) SetIntrospectionFromToken(context.Context, *oidc.IntrospectionResponse, string, string, string) error {
	return errUnsupported
}

func (s *storage) GetPrivateClaimsFromScopes(context.Context, string, string, []string) (map[string]any, error) {
	return nil, nil
}

func (s *storage) GetKeyByIDAndClientID(context.Context, string, string) (*jose.JSONWebKey, error) {
	return nil, errUnsupported
}

func (s *storage) ValidateJWTProfileScopes(context.Context, string, []string) ([]string, error) {
	return nil, errUnsupported
}

func (s *storage) Health(context.Context) error { return nil }

// client is the one confidential web client.
type client struct {
	id, secret string
	redirect   []string
	lifetime   time.Duration
}

func (c *client) GetID() string                       { return c.id }
func (c *client) RedirectURIs() []string              { return c.redirect }
func (c *client) PostLogoutRedirectURIs() []string    { return nil }
func (c *client) ApplicationType() op.ApplicationType { return op.ApplicationTypeWeb }
func (c *client) AuthMethod() oidc.AuthMethod         { return oidc.AuthMethodBasic }
func (c *client) ResponseTypes() []oidc.ResponseType {
	return []oidc.ResponseType{oidc.ResponseTypeCode}
}
func (c *client) GrantTypes() []oidc.GrantType         { return []oidc.GrantType{oidc.GrantTypeCode} }
func (c *client) LoginURL(id string) string            { return "/login?id=" + id }
func (c *client) AccessTokenType() op.AccessTokenType  { return op.AccessTokenTypeBearer }
func (c *client) IDTokenLifetime() time.Duration       { return c.lifetime }
func (c *client) DevMode() bool                        { return false }
func (c *client) IsScopeAllowed(scope string) bool     { return scope == "groups" }
func (c *client) IDTokenUserinfoClaimsAssertion() bool { return true }
func (c *client) ClockSkew() time.Duration             { return 0 }
func (c *client) RestrictAdditionalIdTokenScopes() func([]string) []string {
	return func(s []string) []string { return s }
}
func (c *client) RestrictAdditionalAccessTokenScopes() func([]string) []string {
	return func(s []string) []string { return s }
}
