package serve

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/tetherhq/tether/team"
)

// teamPath says which requests are identified with teams: the API, the
// WebSocket and the metrics. The UI's files, /auth/ (where one signs
// in) and the health checks are not.
func teamPath(p string) bool {
	return p == "/ws" || p == "/metrics" || strings.HasPrefix(p, "/api/") || p == "/api"
}

// setACL remembers a session's ACL for the hub's lists.
func (s *Server) setACL(id string, acl *team.ACL) {
	s.mu.Lock()
	s.acls[id] = acl
	s.mu.Unlock()
}

// teamRoutes are the routes of teams (docs/serve-protocol.md, section 5).
func (s *Server) teamRoutes(mux *http.ServeMux) {
	t := s.opts.Team
	off := func(w http.ResponseWriter, r *http.Request) {
		s.refuse(w, r, http.StatusNotFound, CodeNotFound, "the token login is off: this server signs people in at /auth/login")
	}
	mux.HandleFunc("/auth", off)
	mux.HandleFunc("/logout", off)
	if h := t.Auth.Handler(); h != nil {
		mux.Handle("/auth/", h)
		mux.Handle("/auth/logout", s.signingOut(h))
	} else {
		mux.HandleFunc("/auth/", func(w http.ResponseWriter, r *http.Request) {
			s.refuse(w, r, http.StatusNotFound, CodeNotFound, "people sign in through the proxy in front of this server")
		})
	}
	mux.HandleFunc("/api/me", func(w http.ResponseWriter, r *http.Request) {
		if s.needMethod(w, r, http.MethodGet) && s.authorized(w, r, false) {
			writeJSON(w, http.StatusOK, meOf(identityOf(r.Context())))
		}
	})
	mux.HandleFunc("/api/sessions/{id}/share", s.serveShare)
	mux.HandleFunc("/api/people", func(w http.ResponseWriter, r *http.Request) {
		if !s.needMethod(w, r, http.MethodGet) || !s.authorized(w, r, false) {
			return
		}
		out := peopleResult{People: []personEntry{}}
		if d, ok := t.Config.(TeamDirectory); ok {
			for _, p := range d.Directory() {
				out.People = append(out.People, personEntry{Email: p.Email, Name: p.Name})
			}
		}
		writeJSON(w, http.StatusOK, out)
	})
	mux.HandleFunc("/api/spend", func(w http.ResponseWriter, r *http.Request) {
		if !s.needMethod(w, r, http.MethodGet) || !s.authorized(w, r, false) {
			return
		}
		list, err := t.Authorizer.Spend(r.Context())
		if err != nil {
			s.fail(w, r, err)
			return
		}
		if list == nil {
			list = []PersonSpend{}
		}
		writeJSON(w, http.StatusOK, list)
	})
	mux.HandleFunc("/api/audit", s.serveAudit)
}

// signingOut wraps the sign-in's logout: once it has revoked the
// login, every open socket of that person is checked again at once (by
// its recheck goroutine, so that a slow peer's close handshake holds
// nothing up), so
// that the tabs signed in with that login are closed (4401 "signed
// out") now rather than at the next periodic recheck.
func (s *Server) signingOut(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, err := s.identify(r)
		h.ServeHTTP(w, r)
		if err != nil || r.Method != http.MethodPost {
			return
		}
		s.mu.Lock()
		var mine []*client
		for c := range s.clients {
			if c.id != nil && c.id.Subject == id.Subject {
				mine = append(mine, c)
			}
		}
		s.mu.Unlock()
		for _, c := range mine {
			select {
			case c.recheckNow <- struct{}{}:
			default: // a check is due already
			}
		}
	})
}

// TeamDirectory is a TeamConfig that lists its people by name
// (*team.Config): GET /api/people answers with them, so that the share
// dialog offers names rather than bare addresses. Optional.
type TeamDirectory interface {
	// Directory returns the people (Email and Name only are read).
	Directory() []team.Person
}

type (
	peopleResult struct {
		People []personEntry `json:"people"`
	}
	personEntry struct {
		Email string `json:"email"`
		Name  string `json:"name"`
	}
)

// shareBody is the body of POST /api/sessions/{id}/share and the answer
// of both methods.
type shareBody struct {
	Session   string       `json:"session,omitempty"`
	Owner     string       `json:"owner,omitempty"`
	OwnerName string       `json:"owner_name,omitempty"`
	Grants    []team.Grant `json:"grants"`
}

// serveShare: GET shows whose the session is and with whom it is shared
// (anyone who sees it); POST replaces the grants (the owner or an admin).
func (s *Server) serveShare(w http.ResponseWriter, r *http.Request) {
	t := s.opts.Team
	id := r.PathValue("id")
	switch r.Method {
	case http.MethodGet:
		if !s.authorized(w, r, false) {
			return
		}
	case http.MethodPost:
		if !s.authorized(w, r, true) {
			return
		}
		var body shareBody
		r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
		dec := json.NewDecoder(r.Body)
		dec.DisallowUnknownFields()
		if err := dec.Decode(&body); err != nil {
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				s.refuse(w, r, http.StatusRequestEntityTooLarge, CodeTooLarge, "body too large")
				return
			}
			s.refuse(w, r, http.StatusBadRequest, CodeBadRequest, `body must be JSON: {"grants":[{"person":"…","level":"viewer"}]}`)
			return
		}
		if len(body.Grants) > 256 {
			s.refuse(w, r, http.StatusBadRequest, CodeBadRequest, "at most 256 grants")
			return
		}
		for _, g := range body.Grants {
			if (g.Person == "") == (g.Group == "") || (g.Level != team.ShareViewer && g.Level != team.ShareCollaborator) {
				s.refuse(w, r, http.StatusBadRequest, CodeBadRequest, `each grant names one person or one group and a level, "viewer" or "collaborator"`)
				return
			}
		}
		if err := s.need(r.Context(), id, team.AccessView, "share"); err != nil {
			s.fail(w, r, err)
			return
		}
		if err := t.Authorizer.Share(r.Context(), id, body.Grants); err != nil {
			s.fail(w, r, err)
			return
		}
	default:
		w.Header().Set("Allow", "GET, POST")
		s.refuse(w, r, http.StatusMethodNotAllowed, CodeMethodNotAllowed, r.Method+" is not allowed here; use GET or POST")
		return
	}
	if err := s.need(r.Context(), id, team.AccessView, "read"); err != nil {
		s.fail(w, r, err)
		return
	}
	acl, err := t.Authorizer.ACL(r.Context(), id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := shareBody{Session: id, Grants: []team.Grant{}}
	if acl != nil {
		out.Owner, out.OwnerName = acl.Owner, acl.OwnerName
		if acl.Grants != nil {
			out.Grants = acl.Grants
		}
		if r.Method == http.MethodPost {
			s.setACL(id, acl)
			s.kickList() // who sees it changed
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// serveAudit is GET /api/audit (admins): a JSON array, or JSON lines
// with Accept: application/x-ndjson.
func (s *Server) serveAudit(w http.ResponseWriter, r *http.Request) {
	if !s.needMethod(w, r, http.MethodGet) || !s.authorized(w, r, false) {
		return
	}
	t := s.opts.Team
	if id := identityOf(r.Context()); id.Role != team.RoleAdmin {
		if t.Recorder != nil {
			_ = t.Recorder.Record(r.Context(), &team.AuditEvent{Time: time.Now().UTC(), Actor: id.Subject, ActorName: id.DisplayName(), Addr: id.Addr,
				Action: team.ActionRefused, Outcome: team.OutcomeRefused, Rule: "role", Detail: "audit"})
		}
		s.refuse(w, r, http.StatusForbidden, CodeForbidden, "the audit log is for admins")
		return
	}
	if t.Audit == nil {
		s.refuse(w, r, http.StatusServiceUnavailable, CodeUnavailable, "this server keeps no audit log")
		return
	}
	q, err := auditQuery(r, time.Now())
	if err != nil {
		s.refuse(w, r, http.StatusBadRequest, CodeBadRequest, err.Error())
		return
	}
	jsonl := strings.Contains(r.Header.Get("Accept"), "application/x-ndjson")
	// Read it all before answering, so that a failure is a clean error
	// rather than a torn body; Limit bounds it.
	var evs []*team.AuditEvent
	for ev, err := range t.Audit.Query(r.Context(), q) {
		if err != nil {
			s.fail(w, r, err)
			return
		}
		evs = append(evs, ev)
	}
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	if !jsonl {
		if evs == nil {
			evs = []*team.AuditEvent{}
		}
		writeJSON(w, http.StatusOK, evs)
		return
	}
	h.Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	enc := json.NewEncoder(w)
	for _, ev := range evs {
		_ = enc.Encode(ev)
	}
}

// maxAuditLimit bounds one audit read (and is the default).
const maxAuditLimit = 10000

// auditQuery reads ?since=&until=&actor=&session=&action=&limit=: since
// and until are RFC 3339 times or durations back from now ("24h");
// since defaults to 24 hours ago.
func auditQuery(r *http.Request, now time.Time) (*AuditQuery, error) {
	v := r.URL.Query()
	q := &AuditQuery{Actor: v.Get("actor"), Session: v.Get("session"), Action: v.Get("action"), Since: now.Add(-24 * time.Hour), Limit: maxAuditLimit}
	at := func(name string, dst *time.Time) error {
		s := v.Get(name)
		if s == "" {
			return nil
		}
		if d, err := time.ParseDuration(s); err == nil && d >= 0 {
			*dst = now.Add(-d)
			return nil
		}
		tm, err := time.Parse(time.RFC3339, s)
		if err != nil {
			return errors.New(name + " must be an RFC 3339 time or a duration such as 24h")
		}
		*dst = tm
		return nil
	}
	if err := at("since", &q.Since); err != nil {
		return nil, err
	}
	if err := at("until", &q.Until); err != nil {
		return nil, err
	}
	if l := v.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n <= 0 {
			return nil, errors.New("limit must be a positive number")
		}
		q.Limit = min(n, maxAuditLimit)
	}
	return q, nil
}
