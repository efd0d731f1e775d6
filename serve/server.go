package serve

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/tetherhq/tether/internal/telemetry"
	"github.com/tetherhq/tether/team"
)

// Options configures a Server. A nil *Options means defaults.
type Options struct {
	// Token is the secret a client logs in with; "" makes a random one
	// (32 bytes from crypto/rand). Read it with Server.Token.
	Token string
	// AllowedHosts are the names (a "host" matches any port, a
	// "host:port" that port only) the server answers to in the Host
	// header; anything else is refused (DNS rebinding). Empty means
	// localhost, 127.0.0.1 and [::1].
	AllowedHosts []string
	// TLS says the server is reached over HTTPS (directly or behind a
	// proxy): the cookie is Secure and origins must be https.
	TLS bool
	// TrustedProxies are the peers (a TLS-terminating proxy) whose
	// X-Forwarded-For header is believed: failed logins are then counted
	// per client address taken from it (the right-most hop that is not a
	// trusted proxy) instead of per proxy. From any other peer the header
	// is ignored. Empty: the TCP peer is the client.
	TrustedProxies []netip.Prefix
	// UI serves the web UI's files; nil means the embedded UI.
	UI fs.FS
	// Logger receives the server's log: requests refused and why,
	// connections opened and closed. Never a token, cookie or prompt.
	// nil means silent.
	Logger *slog.Logger
	// Version is reported in the hello frame ("" = "tether").
	Version string

	// MaxFrameBytes bounds one client frame (0 = 8 MiB).
	MaxFrameBytes int64
	// ClientQueue is how many frames may wait for one client's socket
	// (0 = 256); see the protocol's bounds.
	ClientQueue int
	// WriteTimeout bounds one write to a client (0 = 30 s); a client
	// that does not take a frame in time is disconnected.
	WriteTimeout time.Duration
	// Heartbeat is the ping interval (0 = 20 s).
	Heartbeat time.Duration
	// ListInterval is how often the sessions list is checked for
	// changes to push to clients (0 = 500 ms).
	ListInterval time.Duration
	// MaxSubscriptions bounds the subscriptions of one socket (0 = 64).
	MaxSubscriptions int

	// Registerer, when set, gets the server's metrics: open WebSockets,
	// resyncs, slow clients dropped (tether_browser_*). nil: none.
	Registerer prometheus.Registerer
	// Metrics, when set, is served at /metrics (e.g. promhttp.HandlerFor
	// the registry), behind the same login as /api/: a scraper sends the
	// token as a bearer. nil: no /metrics route. An unauthenticated
	// listener for internal scraping is the caller's own (tether serve
	// --metrics-addr).
	Metrics http.Handler
	// TracerProvider records a span per WebSocket start and do request,
	// the root of the trace the backend's spans join. nil means
	// otel.GetTracerProvider().
	TracerProvider trace.TracerProvider

	// Team, when set, makes the server a team's (people sign in, each
	// sees and acts on what they may): the token login is off, /auth/
	// is Team.Auth's, and every /api, /ws and /metrics request is
	// identified and authorized. nil: the single-user token mode.
	Team *TeamOptions

	// Notify, when set, turns notifications on: Web Push, webhooks and
	// ntfy for what needs a person (notify.go). nil: off.
	Notify *NotifyOptions
}

// Server is the tether serve HTTP handler: the UI, the login, the
// WebSocket and the JSON endpoints of docs/serve-protocol.md, over a
// Backend. It is safe for concurrent use; Close ends its connections.
type Server struct {
	b      Backend
	opts   Options
	token  string
	cookie string // the cookie's value: HMAC(token, …)
	log    *slog.Logger
	tr     trace.Tracer
	ui     http.Handler
	mux    *http.ServeMux

	limiter limiter
	metrics *telemetry.Serve

	ctx    context.Context // cancelled by Close
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	closed  bool
	clients map[*client]struct{}
	hubOn   bool
	kick    chan struct{} // 1-buffered: refresh the list now
	last    map[string]SessionInfo
	// told: the sessions broadcast while the hub's List was out (nil
	// when none is): that list may predate them.
	told  map[string]bool
	acls  map[string]*team.ACL // teams: the sessions' ACLs as the hub last read them
	ticks int                  // teams: hub rounds, to reread every ACL now and then

	notify *notifier // nil: notifications off
}

// cookieName is the login cookie.
const cookieName = "tether_auth"

// NewServer returns a server over b.
func NewServer(b Backend, opts *Options) *Server {
	s := &Server{b: b, clients: map[*client]struct{}{}, kick: make(chan struct{}, 1), acls: map[string]*team.ACL{}}
	if opts != nil {
		s.opts = *opts
	}
	o := &s.opts
	o.MaxFrameBytes = cmpOr(o.MaxFrameBytes, 8<<20)
	o.ClientQueue = cmpOr(o.ClientQueue, 256)
	o.WriteTimeout = cmpOr(o.WriteTimeout, 30*time.Second)
	o.Heartbeat = cmpOr(o.Heartbeat, 20*time.Second)
	o.ListInterval = cmpOr(o.ListInterval, 500*time.Millisecond)
	o.MaxSubscriptions = cmpOr(o.MaxSubscriptions, 64)
	o.Version = cmpOr(o.Version, "tether")
	if o.Team != nil {
		t := *o.Team
		t.RecheckInterval = cmpOr(t.RecheckInterval, 30*time.Second)
		o.Team = &t
	}
	if len(o.AllowedHosts) == 0 {
		o.AllowedHosts = []string{"localhost", "127.0.0.1", "::1"}
	}
	s.token = o.Token
	if s.token == "" {
		s.token = NewToken()
	}
	mac := hmac.New(sha256.New, []byte(s.token))
	mac.Write([]byte("tether serve cookie v1"))
	s.cookie = hex.EncodeToString(mac.Sum(nil))
	s.tr = telemetry.Tracer(o.TracerProvider)
	s.log = o.Logger
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	ui := o.UI
	if ui == nil {
		ui = embeddedUI()
	}
	s.ui = http.FileServerFS(ui)
	s.limiter.init()
	s.metrics = telemetry.NewServe(o.Registerer)
	s.mux = s.routes()
	s.ctx, s.cancel = context.WithCancel(context.Background())
	if o.Notify != nil {
		s.startNotify(*o.Notify)
	}
	return s
}

// NewToken returns a random login token: 32 bytes from crypto/rand,
// base64url.
func NewToken() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// Token returns the login token.
func (s *Server) Token() string { return s.token }

// LoginURL returns the URL to open: base (e.g. "http://127.0.0.1:7878")
// with the token in the fragment, which browsers never send to a server.
func (s *Server) LoginURL(base string) string {
	return strings.TrimSuffix(base, "/") + "/#token=" + s.token
}

// Close disconnects every client and stops the server's goroutines. The
// sessions keep running (they belong to the Backend).
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.cancel()
	s.wg.Wait()
	return nil
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	if !s.hostAllowed(r.Host) {
		s.refuse(w, r, http.StatusForbidden, CodeForbiddenHost, "Host "+r.Host+" is not allowed")
		return
	}
	origin := r.Header.Get("Origin")
	if origin != "" && !s.originAllowed(origin, r.Host) {
		s.refuse(w, r, http.StatusForbidden, CodeForbiddenOrigin, "Origin "+origin+" is not allowed")
		return
	}
	if s.opts.Team != nil && teamPath(r.URL.Path) {
		var ok bool
		if r, ok = s.teamIdentified(w, r); !ok {
			return
		}
	}
	s.mux.ServeHTTP(w, r)
}

// routes are the server's endpoints (docs/serve-protocol.md, section 1).
// Paths are patterns; the method is checked by each handler, so that a
// wrong one gets the protocol's JSON error (405) like every refusal.
func (s *Server) routes() *http.ServeMux {
	mux := http.NewServeMux()
	if t := s.opts.Team; t != nil {
		s.teamRoutes(mux)
	} else {
		s.tokenRoutes(mux)
	}
	mux.HandleFunc("/ws", func(w http.ResponseWriter, r *http.Request) {
		if !s.needMethod(w, r, http.MethodGet) || !s.authorized(w, r, true) {
			return
		}
		s.serveWS(w, r)
	})
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		if s.needMethod(w, r, http.MethodGet) {
			io.WriteString(w, "ok\n")
		}
	})
	mux.HandleFunc("/readyz", s.serveReady)
	mux.HandleFunc("/api/sessions", func(w http.ResponseWriter, r *http.Request) {
		if !s.needMethod(w, r, http.MethodGet) || !s.authorized(w, r, false) {
			return
		}
		list, err := s.listFor(r.Context())
		if err != nil {
			s.fail(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, listResult{Sessions: list})
	})
	mux.HandleFunc("/api/sessions/{id}/snapshot", func(w http.ResponseWriter, r *http.Request) {
		if !s.needMethod(w, r, http.MethodGet) || !s.authorized(w, r, false) {
			return
		}
		id := r.PathValue("id")
		if err := s.need(r.Context(), id, team.AccessView, "read"); err != nil {
			s.fail(w, r, err)
			return
		}
		// ?items=true: the transcript as items, as a subscription with
		// items gets it (docs/serve-protocol.md §4), for a client that
		// renders items and reads without a socket.
		items := false
		if v := r.URL.Query().Get("items"); v != "" {
			b, err := strconv.ParseBool(v)
			if err != nil {
				s.refuse(w, r, http.StatusBadRequest, CodeBadRequest, "items must be true or false")
				return
			}
			items = b
		}
		snap, err := s.fullSnapshot(r.Context(), id)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		if items {
			snap = withItems(snap, NewItemizer())
		}
		writeJSON(w, http.StatusOK, snap)
	})
	if m := s.opts.Metrics; m != nil {
		mux.HandleFunc("/metrics", func(w http.ResponseWriter, r *http.Request) {
			if !s.needMethod(w, r, http.MethodGet) || !s.authorized(w, r, false) {
				return
			}
			if s.opts.Team != nil && identityOf(r.Context()).Role != team.RoleAdmin {
				s.refuse(w, r, http.StatusForbidden, CodeForbidden, "the metrics are for admins")
				return
			}
			m.ServeHTTP(w, r)
		})
	}
	s.notifyRoutes(mux)
	mux.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		s.refuse(w, r, http.StatusNotFound, CodeNotFound, "no such endpoint")
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			s.refuse(w, r, http.StatusMethodNotAllowed, CodeMethodNotAllowed, r.Method+" is not allowed here")
			return
		}
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'")
		h.Set("Cache-Control", "no-cache")
		s.ui.ServeHTTP(w, r)
	})
	return mux
}

// tokenRoutes are the single-user token login's.
func (s *Server) tokenRoutes(mux *http.ServeMux) {
	mux.HandleFunc("/auth", s.serveAuth)
	mux.HandleFunc("/logout", func(w http.ResponseWriter, r *http.Request) {
		if !s.needMethod(w, r, http.MethodPost) || !s.authorized(w, r, true) {
			return
		}
		http.SetCookie(w, s.newCookie("", -1))
		w.WriteHeader(http.StatusNoContent)
	})
}

// Readier is a Backend that can tell whether it is ready to serve:
// /readyz asks it (a cluster: NATS reachable, its streams there, an agent
// with room; a local backend: its CLI found). A Backend without it is
// ready while the server runs.
type Readier interface {
	Ready(ctx context.Context) error
}

// serveReady is /readyz: 200 "ready", or 503 with the reason.
func (s *Server) serveReady(w http.ResponseWriter, r *http.Request) {
	if !s.needMethod(w, r, http.MethodGet) {
		return
	}
	if rd, ok := s.b.(Readier); ok {
		ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
		err := rd.Ready(ctx)
		cancel()
		if err != nil {
			writeJSON(w, http.StatusServiceUnavailable, map[string]*Error{"error": {Code: CodeUnavailable, Message: err.Error()}})
			return
		}
	}
	io.WriteString(w, "ready\n")
}

func (s *Server) needMethod(w http.ResponseWriter, r *http.Request, m string) bool {
	if r.Method == m {
		return true
	}
	w.Header().Set("Allow", m)
	s.refuse(w, r, http.StatusMethodNotAllowed, CodeMethodNotAllowed, r.Method+" is not allowed here; use "+m)
	return false
}

// serveAuth exchanges the token for the cookie. The right token always
// works; only wrong ones are limited (per client, see limiter).
func (s *Server) serveAuth(w http.ResponseWriter, r *http.Request) {
	if !s.needMethod(w, r, http.MethodPost) {
		return
	}
	var body struct {
		Token string `json:"token"`
	}
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			s.refuse(w, r, http.StatusRequestEntityTooLarge, CodeTooLarge, "body too large")
			return
		}
		s.refuse(w, r, http.StatusBadRequest, CodeBadRequest, `body must be JSON: {"token":"…"}`)
		return
	}
	if !s.tokenOK(body.Token) {
		s.failed(w, r, "wrong token")
		return
	}
	http.SetCookie(w, s.newCookie(s.cookie, 0))
	w.WriteHeader(http.StatusNoContent)
}

// failed answers a wrong credential: 401 and one more failure counted
// for the client, or 429 with Retry-After once it has failed too often
// (then the attempt is not judged at all).
func (s *Server) failed(w http.ResponseWriter, r *http.Request, msg string) {
	ip := s.clientIP(r)
	if wait := s.limiter.blocked(ip); wait > 0 {
		w.Header().Set("Retry-After", itoa(int(wait/time.Second)+1))
		s.refuse(w, r, http.StatusTooManyRequests, CodeRateLimited, "too many failed logins; try again later")
		return
	}
	s.limiter.fail(ip)
	s.refuse(w, r, http.StatusUnauthorized, CodeUnauthorized, msg)
}

func (s *Server) tokenOK(t string) bool {
	return t != "" && subtle.ConstantTimeCompare([]byte(t), []byte(s.token)) == 1
}

func (s *Server) newCookie(v string, maxAge int) *http.Cookie {
	return &http.Cookie{Name: cookieName, Value: v, Path: "/", HttpOnly: true, Secure: s.opts.TLS, SameSite: http.SameSiteStrictMode, MaxAge: maxAge}
}

// authorized checks the cookie or the bearer token. A cookie is only
// taken with an Origin header (checked already) on state-changing
// requests and upgrades: browsers always send one there.
func (s *Server) authorized(w http.ResponseWriter, r *http.Request, changes bool) bool {
	if s.opts.Team != nil {
		// ServeHTTP identified the request already; a browser's
		// state-changing request must still show where it comes from.
		if identityOf(r.Context()) == nil {
			s.refuse(w, r, http.StatusUnauthorized, CodeUnauthenticated, "sign in first")
			return false
		}
		if changes && r.Header.Get("Origin") == "" {
			s.refuse(w, r, http.StatusForbidden, CodeForbiddenOrigin, "a signed-in request that changes something must carry Origin")
			return false
		}
		return true
	}
	if a := r.Header.Get("Authorization"); a != "" {
		t, ok := strings.CutPrefix(a, "Bearer ")
		if ok && s.tokenOK(t) {
			return true
		}
		s.failed(w, r, "wrong bearer token")
		return false
	}
	c, err := r.Cookie(cookieName)
	if err != nil || c.Value == "" {
		s.refuse(w, r, http.StatusUnauthorized, CodeUnauthorized, "log in first: open the URL the server printed")
		return false
	}
	if subtle.ConstantTimeCompare([]byte(c.Value), []byte(s.cookie)) != 1 {
		s.failed(w, r, "the login cookie is no longer valid: open the URL the server printed")
		return false
	}
	if changes && r.Header.Get("Origin") == "" {
		s.refuse(w, r, http.StatusForbidden, CodeForbiddenOrigin, "a cookie-authenticated request must carry Origin")
		return false
	}
	return true
}

// hostAllowed checks a Host header against the allowlist.
func (s *Server) hostAllowed(hostport string) bool {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		host, port = hostport, ""
	}
	host = strings.ToLower(strings.Trim(host, "[]"))
	if host == "" {
		return false
	}
	for _, a := range s.opts.AllowedHosts {
		ah, ap, err := net.SplitHostPort(a)
		if err != nil {
			ah, ap = a, ""
		}
		ah = strings.ToLower(strings.Trim(ah, "[]"))
		if ah == host && (ap == "" || ap == port) {
			return true
		}
	}
	return false
}

// originAllowed checks an Origin header: the server's own origin only.
func (s *Server) originAllowed(origin, host string) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" || u.Path != "" && u.Path != "/" {
		return false
	}
	want := "http"
	if s.opts.TLS {
		want = "https"
	}
	return u.Scheme == want && strings.EqualFold(u.Host, host) && s.hostAllowed(u.Host)
}

// refuse answers an HTTP error with the protocol's JSON body and logs
// it (path only: never a query, a token or a cookie).
func (s *Server) refuse(w http.ResponseWriter, r *http.Request, status int, code, msg string) {
	s.log.Info("serve: refused", "method", r.Method, "path", r.URL.Path, "status", status, "code", code, "remote", s.clientIP(r))
	writeJSON(w, status, map[string]any{"error": &Error{Code: code, Message: msg}})
}

func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	pe := protoError(err)
	status := http.StatusInternalServerError
	switch pe.Code {
	case CodeNoSession:
		status = http.StatusNotFound
	case CodeBadRequest:
		status = http.StatusBadRequest
	case CodeForbidden:
		status = http.StatusForbidden
	case CodeUnauthenticated:
		status = http.StatusUnauthorized
	case CodeUnavailable, CodeTimeout:
		status = http.StatusServiceUnavailable
	}
	s.refuse(w, r, status, pe.Code, pe.Message)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func remoteIP(r *http.Request) string {
	h, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return h
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}
