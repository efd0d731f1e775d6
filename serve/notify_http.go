package serve

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"time"

	webpush "github.com/SherClockHolmes/webpush-go"

	"github.com/tetherhq/tether/host"
)

// The notification endpoints (docs/serve-protocol.md, section 8): the
// VAPID key and the person's settings, their browsers' subscriptions,
// and the action a notification's button posts.

// notifyView is GET /api/notify's answer.
type notifyView struct {
	VapidPublicKey string         `json:"vapid_public_key"`
	Settings       NotifySettings `json:"settings"`
	Subscriptions  int            `json:"subscriptions"`
	Events         []string       `json:"events"`
	Ntfy           bool           `json:"ntfy"` // the server has an ntfy URL
}

func (s *Server) notifyRoutes(mux *http.ServeMux) {
	mux.HandleFunc("/api/notify", s.serveNotify)
	mux.HandleFunc("/api/notify/subscribe", func(w http.ResponseWriter, r *http.Request) { s.serveNotifySub(w, r, true) })
	mux.HandleFunc("/api/notify/unsubscribe", func(w http.ResponseWriter, r *http.Request) { s.serveNotifySub(w, r, false) })
	mux.HandleFunc("/api/notify/action", s.serveNotifyAction)
}

// notifyOn answers unavailable when notifications are off.
func (s *Server) notifyOn(w http.ResponseWriter, r *http.Request) bool {
	if s.notify == nil {
		s.refuse(w, r, http.StatusServiceUnavailable, CodeUnavailable, "notifications are off on this server")
		return false
	}
	return true
}

// readBody decodes a small JSON body into v, answering the error.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request, v any) bool {
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if err := json.NewDecoder(r.Body).Decode(v); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			s.refuse(w, r, http.StatusRequestEntityTooLarge, CodeTooLarge, "body too large")
			return false
		}
		s.refuse(w, r, http.StatusBadRequest, CodeBadRequest, "body must be JSON: "+err.Error())
		return false
	}
	return true
}

// serveNotify is GET (the key and settings) and PUT (new settings).
func (s *Server) serveNotify(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodPut {
		w.Header().Set("Allow", "GET, PUT")
		s.refuse(w, r, http.StatusMethodNotAllowed, CodeMethodNotAllowed, r.Method+" is not allowed here; use GET or PUT")
		return
	}
	if !s.authorized(w, r, r.Method != http.MethodGet) || !s.notifyOn(w, r) {
		return
	}
	n, id := s.notify, personOf(identityOf(r.Context()))
	if r.Method == http.MethodPut {
		var ns NotifySettings
		if !s.readBody(w, r, &ns) {
			return
		}
		for _, e := range ns.Events {
			if !slices.Contains(notifyEvents, e) {
				s.refuse(w, r, http.StatusBadRequest, CodeBadRequest, "unknown event "+e)
				return
			}
		}
		if ns.Webhook != nil && ns.Webhook.URL != "" && !n.urlOK(ns.Webhook.URL) {
			s.refuse(w, r, http.StatusBadRequest, CodeBadRequest, "the webhook URL must be https")
			return
		}
		if len(ns.NtfyTopic) > 64 {
			s.refuse(w, r, http.StatusBadRequest, CodeBadRequest, "the ntfy topic is too long")
			return
		}
		err := n.store.update(id, func(p *notifyPerson) {
			if old, nw := p.Settings.Webhook, ns.Webhook; old != nil && nw != nil && nw.Secret == "" && nw.URL == old.URL {
				nw.Secret = old.Secret // the secret is never read back: "" keeps it
			}
			p.Settings = ns
		})
		if err != nil {
			s.fail(w, r, err)
			return
		}
	}
	v := notifyView{VapidPublicKey: n.store.Vapid.Public, Settings: NotifySettings{}, Events: notifyEvents, Ntfy: n.opts.NtfyURL != ""}
	if p := n.store.person(id.Subject); p != nil {
		v.Settings, v.Subscriptions = p.Settings, len(p.Subs)
		if v.Settings.Webhook != nil {
			wh := *v.Settings.Webhook
			if wh.Secret != "" {
				wh.Secret = "(set)" // never read back
			}
			v.Settings.Webhook = &wh
		}
	}
	writeJSON(w, http.StatusOK, v)
}

// urlOK: an absolute http(s) URL, https unless AllowHTTP.
func (n *notifier) urlOK(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || len(raw) > 2048 {
		return false
	}
	return u.Scheme == "https" || (u.Scheme == "http" && n.opts.AllowHTTP)
}

// serveNotifySub stores (or forgets) a browser's push subscription, the
// JSON of PushSubscription.toJSON().
func (s *Server) serveNotifySub(w http.ResponseWriter, r *http.Request, add bool) {
	if !s.needMethod(w, r, http.MethodPost) || !s.authorized(w, r, true) || !s.notifyOn(w, r) {
		return
	}
	var body struct {
		Endpoint string       `json:"endpoint"`
		Keys     webpush.Keys `json:"keys"`
	}
	if !s.readBody(w, r, &body) {
		return
	}
	n, id := s.notify, personOf(identityOf(r.Context()))
	if !n.urlOK(body.Endpoint) {
		s.refuse(w, r, http.StatusBadRequest, CodeBadRequest, "endpoint must be an https URL")
		return
	}
	if add && (body.Keys.P256dh == "" || body.Keys.Auth == "" || len(body.Keys.P256dh) > 200 || len(body.Keys.Auth) > 100) {
		s.refuse(w, r, http.StatusBadRequest, CodeBadRequest, "keys.p256dh and keys.auth are required")
		return
	}
	err := n.store.update(id, func(p *notifyPerson) {
		if add {
			p.addSub(pushSub{Endpoint: body.Endpoint, Keys: body.Keys, Created: time.Now().UTC()})
			return
		}
		p.Subs = slices.DeleteFunc(p.Subs, func(o pushSub) bool { return o.Endpoint == body.Endpoint })
	})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// serveNotifyAction answers an approval from a notification's button:
// the same command as the socket's "do answer", with the person's
// identity, through the same authorization, answered once.
func (s *Server) serveNotifyAction(w http.ResponseWriter, r *http.Request) {
	if !s.needMethod(w, r, http.MethodPost) || !s.authorized(w, r, true) || !s.notifyOn(w, r) {
		return
	}
	var body struct {
		Session  string `json:"session"`
		Approval string `json:"approval"`
		Action   string `json:"action"`
	}
	if !s.readBody(w, r, &body) {
		return
	}
	if body.Session == "" || body.Approval == "" || (body.Action != "allow" && body.Action != "deny") {
		s.refuse(w, r, http.StatusBadRequest, CodeBadRequest, `needs session, approval and action "allow" or "deny"`)
		return
	}
	cmd := &host.Command{Type: host.CommandAnswer, Approval: body.Approval, Behavior: body.Action}
	if body.Action == "deny" {
		cmd.Message = "Denied from a notification"
	}
	if id := identityOf(r.Context()); id != nil {
		cmd.Actor = id.DisplayName()
	}
	res, err := s.doCommand(r.Context(), body.Session, cmd)
	if err != nil {
		pe := protoError(err)
		switch pe.Code {
		case CodeAlreadyAnswered, CodeNoApproval, CodeWithdrawn:
			s.refuse(w, r, http.StatusConflict, pe.Code, pe.Message)
		default:
			s.fail(w, r, err)
		}
		return
	}
	writeJSON(w, http.StatusOK, res)
}
