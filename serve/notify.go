package serve

import (
	"bytes"
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"hash/fnv"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	webpush "github.com/SherClockHolmes/webpush-go"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/host"
	"github.com/tetherhq/tether/team"
)

// Notifications ("called back", docs/serve-protocol.md section 8): the
// server follows every session's events itself, whether or not a tab
// watches, and tells the people a session concerns when it needs them
// (an approval or a question waits, a turn ended, a budget is spent) —
// by Web Push to their browsers (RFC 8030/8291, VAPID), a signed
// webhook, an ntfy topic — but only while none of their tabs is visible.
// An approval's notification is replaced ("resolved", same tag) once it
// is answered anywhere, and its Allow and Deny actions answer through
// the same command layer as the socket's "do answer".

// NotifyOptions turn notifications on (Options.Notify).
type NotifyOptions struct {
	// Dir is where the VAPID keys and the people's subscriptions and
	// settings are kept (notify.json, mode 0600): the state directory.
	// The keys are made once; browsers subscribed with them, so a new
	// key would silence every one of them. Required.
	Dir string
	// Subject is the VAPID contact the push services see ("mailto:…"
	// or an https URL; "" = "mailto:tether@localhost").
	Subject string
	// BaseURL is the server's address as people open it, for the links
	// in webhook and ntfy messages ("" = none; tether serve passes
	// --public-url of --team).
	BaseURL string
	// NtfyURL is the ntfy server people's topics are on (e.g. one you
	// run); "" turns ntfy off.
	NtfyURL string
	// NtfyToken, when set, is sent to the ntfy server as a bearer.
	NtfyToken string
	// AllowHTTP accepts plain-http push endpoints and webhook URLs (a
	// LAN, tests). Otherwise only https ones are taken.
	AllowHTTP bool
	// HTTPClient sends every outbound request (nil: a client with
	// Timeout). Each request is bounded by Timeout anyway.
	HTTPClient *http.Client
	// Timeout bounds one attempt of an outbound request (0 = 10 s). A
	// request answered 429 or 5xx, or whose connection failed, is tried
	// up to three times in all; one that timed out is not tried again.
	Timeout time.Duration
	// Queue bounds the notifications waiting in each of the senders'
	// lanes (0 = 256; a person's all go through one lane, in order);
	// when a lane is full its OLDEST is dropped for the new one: a late
	// notification is worth less than a fresh one.
	Queue int
	// PollInterval is how often the session list is read for sessions
	// to follow (0 = 1 s).
	PollInterval time.Duration
}

// notifier is the server's notifications.
type notifier struct {
	s     *Server
	opts  NotifyOptions
	store *notifyStore
	hc    *http.Client
	start time.Time

	mu        sync.Mutex
	following map[string]bool   // sessions with a follower (true) or ended (false); pruned with the list
	visible   map[*client]bool  // the tabs' visibility as they report it
	titles    map[string]string // session id → title, from the last list
	budgeted  map[string]string // subject → the UTC day a budget notice went out
	lanes     [notifyLanes]notifyLane
	sent      map[string]*sentTo // approval's tag → where its open notification went
	dropped   int
}

// notifyLanes is how many senders run: a person's notifications all go
// through one (hash of the subject), in order — a "resolved" never
// overtakes the notification it replaces — and a slow endpoint holds up
// only the people on its lane.
const notifyLanes = 4

// notifyLane is one sender's queue: bounded, drop-oldest.
type notifyLane struct {
	q    []notifyJob
	wake chan struct{} // 1-buffered
}

// notifyPayload is what a notification carries: the Web Push message,
// the webhook's body (with Person and Time) and ntfy's fields.
type notifyPayload struct {
	Type     string         `json:"type"` // "notify" or "resolved"
	Tag      string         `json:"tag"`
	Event    string         `json:"event"`
	Session  string         `json:"session,omitempty"`
	Title    string         `json:"title,omitempty"`
	Body     string         `json:"body,omitempty"`
	Approval string         `json:"approval,omitempty"`
	Tool     string         `json:"tool,omitempty"`
	Actions  []notifyAction `json:"actions,omitempty"`
	Outcome  string         `json:"outcome,omitempty"` // resolved: allowed, denied, declined (a form), answered, withdrawn
	By       string         `json:"by,omitempty"`      // resolved: who answered
	URL      string         `json:"url,omitempty"`
	Person   string         `json:"person,omitempty"` // webhook only
	Time     time.Time      `json:"time,omitzero"`    // webhook only

	form bool // an approval's: an MCP server's form (its "resolved" says declined)
}

// sentTo is where an approval's notification went, for its "resolved".
type sentTo struct {
	subjects []string
	form     bool
}

type notifyAction struct {
	Action string `json:"action"` // "allow" or "deny"
	Title  string `json:"title"`
}

type notifyJob struct {
	subject string
	p       notifyPayload
}

func newNotifier(s *Server, o NotifyOptions) (*notifier, error) {
	st, err := openNotifyStore(o.Dir)
	if err != nil {
		return nil, err
	}
	o.Subject = cmpOr(o.Subject, "mailto:tether@localhost")
	o.Timeout = cmpOr(o.Timeout, 10*time.Second)
	o.Queue = cmpOr(o.Queue, 256)
	o.PollInterval = cmpOr(o.PollInterval, time.Second)
	hc := o.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: o.Timeout, Transport: http.DefaultTransport.(*http.Transport).Clone()}
	}
	n := &notifier{
		s: s, opts: o, store: st, hc: hc, start: time.Now(),
		following: map[string]bool{}, visible: map[*client]bool{}, titles: map[string]string{},
		budgeted: map[string]string{}, sent: map[string]*sentTo{},
	}
	for i := range n.lanes {
		n.lanes[i].wake = make(chan struct{}, 1)
	}
	return n, nil
}

// run follows the session list and sends the queue, until the server
// closes.
func (n *notifier) run() {
	defer n.s.wg.Done()
	var senders sync.WaitGroup
	for i := range n.lanes {
		senders.Go(func() { n.sender(&n.lanes[i]) })
	}
	defer n.hc.CloseIdleConnections() // no keep-alive outlives the server
	defer senders.Wait()
	t := time.NewTicker(n.opts.PollInterval)
	defer t.Stop()
	for {
		list, err := n.s.b.List(n.s.ctx)
		if err == nil {
			n.mu.Lock()
			listed := make(map[string]bool, len(list))
			for _, si := range list {
				listed[si.ID] = true
				n.titles[si.ID] = cmp.Or(si.Title, si.LastPrompt, si.ID)
				if _, seen := n.following[si.ID]; seen || si.Ended {
					continue
				}
				n.following[si.ID] = true
				after := si.Seq
				if si.Created.After(n.start) {
					after = 0 // new since we started: nothing of it is missed
				}
				n.s.wg.Add(1)
				go n.follow(si.ID, after)
			}
			for id, on := range n.following { // bounded by the list
				if !on && !listed[id] {
					delete(n.following, id)
				}
			}
			for id := range n.titles {
				if !listed[id] {
					delete(n.titles, id)
				}
			}
			n.mu.Unlock()
		}
		select {
		case <-n.s.ctx.Done():
			return
		case <-t.C:
		}
	}
}

// follow reads one session's events and turns those that need a person
// into notifications.
func (n *notifier) follow(id string, after uint64) {
	defer n.s.wg.Done()
	ended := false
	var tasks []host.TaskInfo // what runs in the background, as of the last tasks event
	defer func() {
		n.mu.Lock()
		if ended {
			n.following[id] = false // never followed again
		} else {
			delete(n.following, id) // the next round follows it again
		}
		n.mu.Unlock()
	}()
	for ev, err := range n.s.b.Events(n.s.ctx, id, after) {
		if err != nil {
			var re *host.ResyncError
			if errors.As(err, &re) {
				return // followed again from the list's seq
			}
			ended = errors.Is(err, ErrNoSession)
			return
		}
		after = ev.Seq
		switch ev.Kind {
		case host.EventApproval:
			var a host.ApprovalInfo
			if json.Unmarshal(ev.Data, &a) == nil {
				n.approval(id, &a)
			}
		case host.EventApprovalResolved:
			var r host.ApprovalResolved
			if json.Unmarshal(ev.Data, &r) == nil {
				n.resolved(id, &r)
			}
		case host.EventTasks:
			var ts []host.TaskInfo
			if json.Unmarshal(ev.Data, &ts) == nil {
				tasks = ts
			}
		case host.EventMessage:
			var m struct {
				Type string `json:"type"`
			}
			if json.Unmarshal(ev.Data, &m) != nil || m.Type != "result" {
				break
			}
			if dm, err := claude.DecodeMessage(ev.Data); err == nil {
				if r, ok := dm.(*claude.ResultMessage); ok {
					n.turn(id, r, tasks)
				}
			}
		case host.EventClosed:
			ended = true
			return
		}
	}
}

func (n *notifier) title(id string) string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return cmpOr(n.titles[id], id)
}

// approval notifies a pending approval or question.
func (n *notifier) approval(sid string, a *host.ApprovalInfo) {
	p := notifyPayload{Type: "notify", Tag: "approval:" + sid + ":" + a.ID, Session: sid, Approval: a.ID, Tool: a.ToolName}
	switch a.Kind {
	case "question":
		p.Event = NotifyQuestion
		p.Title = "Question: " + n.title(sid)
		if len(a.Questions) > 0 {
			p.Body = a.Questions[0].Question
		}
	case "elicitation":
		// A form has no answer a notification's buttons could give.
		p.Event = NotifyQuestion
		p.Title = cmpOr(a.DisplayName, a.Server) + " asks: " + n.title(sid)
		p.Body = clip(a.Message, 300)
		p.form = true
	default:
		p.Event = NotifyApproval
		p.Title = "Allow " + cmpOr(a.DisplayName, a.ToolName) + "? " + n.title(sid)
		p.Body = approvalSubject(a)
		p.Actions = []notifyAction{{Action: "allow", Title: "Allow"}, {Action: "deny", Title: "Deny"}}
	}
	n.notify(sid, p)
}

// approvalSubject is what a tool call acts on: its command, file, URL
// or pattern, else its description.
func approvalSubject(a *host.ApprovalInfo) string {
	var in map[string]any
	_ = json.Unmarshal(a.Input, &in)
	for _, k := range []string{"command", "file_path", "notebook_path", "path", "url", "pattern"} {
		if v, ok := in[k].(string); ok && v != "" {
			return clip(v, 300)
		}
	}
	return clip(cmpOr(a.Description, a.Title), 300)
}

// resolved replaces an approval's notification wherever it went. A form
// not answered was "declined", as the page says: the server's tool goes
// on without the values; it was not denied.
func (n *notifier) resolved(sid string, r *host.ApprovalResolved) {
	tag := "approval:" + sid + ":" + r.ID
	n.mu.Lock()
	to := n.sent[tag]
	delete(n.sent, tag)
	n.mu.Unlock()
	if to == nil {
		return
	}
	outcome := r.Outcome
	if to.form && outcome == "denied" {
		outcome = "declined"
	}
	for _, sub := range to.subjects {
		n.enqueue(notifyJob{subject: sub, p: notifyPayload{Type: "resolved", Tag: tag, Session: sid, Approval: r.ID, Outcome: outcome, By: r.AnsweredBy}})
	}
}

// turn notifies a turn's end, and a budget spent by it (teams). A turn
// that leaves work running in the background (tasks) says so first: the
// session is not done with it, and the turn the CLI starts for the
// task's report ends with a notification of its own, which replaces
// this one (same tag).
func (n *notifier) turn(sid string, r *claude.ResultMessage, tasks []host.TaskInfo) {
	p := notifyPayload{Type: "notify", Tag: "turn:" + sid, Session: sid, Event: NotifyTurnDone, Title: "Done: " + n.title(sid), Body: r.Result}
	if r.IsError || r.Subtype != claude.ResultSuccess {
		// Why, not the final text: a turn whose calls auto mode could
		// not check ends with both.
		p.Event, p.Title, p.Body = NotifyTurnFailed, "Failed: "+n.title(sid), cmp.Or(turnReason(r), r.Result)
	}
	if still := stillRunning(tasks); still != "" {
		p.Body = still + " " + p.Body
	}
	p.Body = clip(p.Body, 300)
	n.notify(sid, p)
	n.budget(sid)
}

// stillRunning is what a turn's notification says of the background
// tasks that outlive it ("" for none): how many, and what the first
// three are. A watcher (ambient) is no work and goes unmentioned.
func stillRunning(tasks []host.TaskInfo) string {
	var names []string
	for _, t := range host.WorkingTasks(tasks) {
		names = append(names, cmp.Or(t.Description, t.ID))
	}
	count := len(names)
	switch {
	case count == 0:
		return ""
	case count == 1:
		return "Still running in the background: " + names[0] + "."
	case count > 3:
		return "Still running in the background (" + strconv.Itoa(count) + "): " + strings.Join(names[:3], ", ") +
			" and " + strconv.Itoa(count-3) + " more."
	}
	return "Still running in the background (" + strconv.Itoa(count) + "): " + strings.Join(names, ", ") + "."
}

// budget tells a session's owner, once a day, that their daily budget is
// spent.
func (n *notifier) budget(sid string) {
	t := n.s.opts.Team
	if t == nil {
		return
	}
	ctx, cancel := context.WithTimeout(n.s.ctx, n.opts.Timeout)
	defer cancel()
	acl, err := t.Authorizer.ACL(ctx, sid)
	if err != nil || acl == nil {
		return
	}
	owner := &team.Identity{Subject: acl.Owner, Name: acl.OwnerName, Role: cmpOr(acl.OwnerRole, team.RoleMember)}
	spend, err := t.Authorizer.Spend(team.NewContext(ctx, owner))
	if err != nil {
		return
	}
	day := time.Now().UTC().Format(time.DateOnly)
	for _, ps := range spend {
		if ps.Person != acl.Owner || ps.BudgetUSD <= 0 || ps.USD < ps.BudgetUSD {
			continue
		}
		n.mu.Lock()
		already := n.budgeted[acl.Owner] == day
		n.budgeted[acl.Owner] = day
		n.mu.Unlock()
		if already {
			return
		}
		p := notifyPayload{Type: "notify", Tag: "budget:" + day, Event: NotifyBudget, Session: sid, Title: "Daily budget spent",
			Body: "$" + strconv.FormatFloat(ps.USD, 'f', 2, 64) + " of $" + strconv.FormatFloat(ps.BudgetUSD, 'f', 2, 64) + " today; it resets at 00:00 UTC"}
		n.queueFor(acl.Owner, true, p)
	}
}

// recipient is a person a session's notification goes to.
type recipient struct {
	subject string
	act     bool // may answer (owner, collaborator; the token's user)
}

// recipients are the people a session concerns: the token's user; with
// teams, its owner and the people it is shared with (an admin's role
// alone does not make every session theirs to be woken for).
func (n *notifier) recipients(sid string) []recipient {
	t := n.s.opts.Team
	if t == nil {
		return []recipient{{subject: tokenPerson, act: true}}
	}
	ctx, cancel := context.WithTimeout(n.s.ctx, n.opts.Timeout)
	defer cancel()
	acl, err := t.Authorizer.ACL(ctx, sid)
	if err != nil || acl == nil {
		return nil
	}
	var out []recipient
	for _, p := range n.store.people() {
		id := p.ID
		if id.Role == team.RoleAdmin {
			id.Role = team.RoleMember
		}
		if a := acl.Access(&id); a >= team.AccessView {
			out = append(out, recipient{subject: id.Subject, act: a >= team.AccessCollaborate})
		}
	}
	return out
}

// notify queues p for everyone the session concerns who wants it and
// has no visible tab.
func (n *notifier) notify(sid string, p notifyPayload) {
	// Every person's decision is made before any is sent, so that
	// whoever receives it knows the others' were made at the same moment.
	var jobs []notifyJob
	for _, r := range n.recipients(sid) {
		q := p
		if !r.act {
			q.Actions = nil // a viewer gets no actions
		}
		if n.wanted(r.subject, false, q) {
			jobs = append(jobs, notifyJob{subject: r.subject, p: q})
		}
	}
	for _, j := range jobs {
		n.enqueue(j)
	}
}

// queueFor queues p for one person if they want it (force: whatever
// their tabs).
func (n *notifier) queueFor(subject string, force bool, p notifyPayload) {
	if n.wanted(subject, force, p) {
		n.enqueue(notifyJob{subject: subject, p: p})
	}
}

// wanted says whether p goes to the person: not when they turned its
// event off or look at a tab now (force: whatever their tabs). An
// approval's is remembered, for its "resolved".
func (n *notifier) wanted(subject string, force bool, p notifyPayload) bool {
	per := n.store.person(subject)
	if per == nil || !per.Settings.wants(p.Event) {
		return false
	}
	if !force && n.s.tabVisible(subject) {
		n.s.log.Info("serve: notification withheld: a tab of theirs is visible", "person", subject, "event", p.Event, "tag", p.Tag)
		return false
	}
	if strings.HasPrefix(p.Tag, "approval:") {
		n.mu.Lock()
		if len(n.sent) >= 4096 { // bounded: forget the lot rather than grow
			clear(n.sent)
		}
		to := n.sent[p.Tag]
		if to == nil {
			to = &sentTo{form: p.form}
			n.sent[p.Tag] = to
		}
		to.subjects = append(to.subjects, subject)
		n.mu.Unlock()
	}
	return true
}

// enqueue adds a job to its person's lane, dropping the lane's oldest
// when it is full (Queue per lane).
func (n *notifier) enqueue(j notifyJob) {
	h := fnv.New32a()
	h.Write([]byte(j.subject))
	l := &n.lanes[h.Sum32()%notifyLanes]
	n.mu.Lock()
	if len(l.q) >= n.opts.Queue {
		l.q = l.q[1:]
		n.dropped++
		n.s.log.Warn("serve: notification queue full; dropped the oldest")
	}
	l.q = append(l.q, j)
	n.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

func (n *notifier) sender(l *notifyLane) {
	for {
		n.mu.Lock()
		var j notifyJob
		ok := len(l.q) > 0
		if ok {
			j = l.q[0]
			l.q = l.q[1:]
		}
		n.mu.Unlock()
		if ok {
			n.send(j)
			continue
		}
		select {
		case <-n.s.ctx.Done():
			return
		case <-l.wake:
		}
	}
}

// send delivers one job to every channel of its person.
func (n *notifier) send(j notifyJob) {
	per := n.store.person(j.subject)
	if per == nil {
		return
	}
	if n.opts.BaseURL != "" && j.p.Session != "" {
		j.p.URL = strings.TrimSuffix(n.opts.BaseURL, "/") + "/#s=" + url.QueryEscape(j.p.Session)
	}
	msg := rawJSON(j.p)
	n.s.log.Info("serve: notifying", "person", j.subject, "event", j.p.Event, "type", j.p.Type, "tag", j.p.Tag, "subscriptions", len(per.Subs))
	for _, sub := range per.Subs {
		n.webPush(sub, j.p, msg)
	}
	if w := per.Settings.Webhook; w != nil && w.URL != "" {
		n.webhook(w, j)
	}
	if per.Settings.NtfyTopic != "" && n.opts.NtfyURL != "" && j.p.Type == "notify" {
		n.ntfy(per.Settings.NtfyTopic, j.p)
	}
}

func (n *notifier) webPush(sub pushSub, p notifyPayload, msg []byte) {
	o := &webpush.Options{
		HTTPClient: n.hc, Subscriber: n.opts.Subject, TTL: 24 * 3600, Topic: pushTopic(p.Tag),
		VAPIDPublicKey: n.store.Vapid.Public, VAPIDPrivateKey: n.store.Vapid.Private,
	}
	if p.Event == NotifyApproval || p.Event == NotifyQuestion || p.Type == "resolved" {
		o.Urgency = webpush.UrgencyHigh
	}
	status := n.deliver("web push", func(ctx context.Context) (*http.Response, error) {
		return webpush.SendNotificationWithContext(ctx, msg, &webpush.Subscription{Endpoint: sub.Endpoint, Keys: sub.Keys}, o)
	})
	if status == http.StatusNotFound || status == http.StatusGone {
		n.store.dropSub(sub.Endpoint) // the browser unsubscribed
	}
}

// Retries of one outbound notification request (docs/serve-protocol.md,
// section 8): a push service, webhook or ntfy server that answers 429 or
// 5xx, or a connection that fails, is tried again, notifyAttempts times
// in all, notifyRetryPause apart and doubling, or after the Retry-After
// it gives; no pause is longer than notifyRetryMax. A request that timed
// out is not tried again: its lane (and the people on it) already waited
// Timeout for it.
const (
	notifyAttempts   = 3
	notifyRetryPause = 500 * time.Millisecond
	notifyRetryMax   = 5 * time.Second
)

// deliver sends one request through send, each attempt bounded by
// Timeout, and returns the last answer's status (0: none came).
func (n *notifier) deliver(what string, send func(ctx context.Context) (*http.Response, error)) int {
	pause := notifyRetryPause
	for attempt := 1; ; attempt++ {
		ctx, cancel := context.WithTimeout(n.s.ctx, n.opts.Timeout)
		resp, err := send(ctx)
		status, after := 0, time.Duration(0)
		if err == nil {
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
			resp.Body.Close()
			status, after = resp.StatusCode, retryAfter(resp.Header.Get("Retry-After"))
		}
		cancel()
		// An error of the request's own making (a bad URL, keys that do
		// not encrypt) is no url.Error, and is not tried again either.
		var ue *url.Error
		failedConn := errors.As(err, &ue) && !ue.Timeout()
		again := failedConn || status == http.StatusTooManyRequests || status >= 500
		if !again || attempt == notifyAttempts || n.s.ctx.Err() != nil {
			switch {
			case err != nil:
				n.s.log.Info("serve: "+what+" failed", "err", err, "attempts", attempt)
			case status >= 300 && status != http.StatusNotFound && status != http.StatusGone:
				n.s.log.Info("serve: "+what+" refused", "status", status, "attempts", attempt)
			}
			return status
		}
		wait := min(cmp.Or(after, pause), notifyRetryMax)
		n.s.log.Debug("serve: "+what+" to be tried again", "err", err, "status", status, "in", wait)
		t := time.NewTimer(wait)
		select {
		case <-n.s.ctx.Done():
			t.Stop()
			return status
		case <-t.C:
		}
		pause *= 2
	}
}

// retryAfter reads a Retry-After header's seconds (RFC 9110; an HTTP
// date is taken as none).
func retryAfter(v string) time.Duration {
	if secs, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && secs > 0 {
		return time.Duration(secs) * time.Second
	}
	return 0
}

// pushTopic is RFC 8030's Topic for a tag (at most 32 base64url
// characters): a later message with it replaces one still undelivered.
func pushTopic(tag string) string {
	h := sha256.Sum256([]byte(tag))
	return base64.RawURLEncoding.EncodeToString(h[:24])
}

// Webhook headers: the signature is hex HMAC-SHA256, keyed by the
// person's secret, of the timestamp, a dot and the body.
const (
	WebhookTimestampHeader = "X-Tether-Timestamp"
	WebhookSignatureHeader = "X-Tether-Signature"
	// WebhookDeliveryHeader names one notification, the same on each
	// attempt to deliver it: a receiver that answered an attempt the
	// server never heard back from gets it again, and drops the second.
	WebhookDeliveryHeader = "X-Tether-Delivery"
)

// WebhookSignature returns the X-Tether-Signature value for a body sent
// at ts (Unix seconds): "sha256=" and the hex HMAC-SHA256 of
// "<ts>.<body>" keyed by secret. A receiver recomputes it, compares in
// constant time, and refuses an old ts (replay).
func WebhookSignature(secret string, ts int64, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(strconv.FormatInt(ts, 10)))
	mac.Write([]byte("."))
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

func (n *notifier) webhook(w *WebhookTarget, j notifyJob) {
	p := j.p
	p.Person, p.Time = j.subject, time.Now().UTC()
	body := rawJSON(p)
	delivery := rand.Text()
	n.deliver("webhook", func(ctx context.Context) (*http.Response, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.URL, bytes.NewReader(body))
		if err != nil {
			return nil, err
		}
		ts := time.Now().Unix() // each attempt signed when it is sent
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("User-Agent", "tether-webhook/1")
		req.Header.Set(WebhookDeliveryHeader, delivery)
		req.Header.Set(WebhookTimestampHeader, strconv.FormatInt(ts, 10))
		if w.Secret != "" {
			req.Header.Set(WebhookSignatureHeader, WebhookSignature(w.Secret, ts, body))
		}
		return n.hc.Do(req)
	})
}

// ntfy publishes to the person's topic: the body is the message, the
// title, priority, tags and a link in ntfy's headers.
func (n *notifier) ntfy(topic string, p notifyPayload) {
	u := strings.TrimSuffix(n.opts.NtfyURL, "/") + "/" + url.PathEscape(topic)
	n.deliver("ntfy", func(ctx context.Context) (*http.Response, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, strings.NewReader(cmpOr(p.Body, p.Title)))
		if err != nil {
			return nil, err
		}
		h := req.Header
		h.Set("Title", p.Title)
		h.Set("Tags", p.Event)
		switch p.Event {
		case NotifyApproval, NotifyQuestion:
			h.Set("Priority", "high")
		case NotifyTurnFailed, NotifyBudget:
			h.Set("Priority", "default")
		default:
			h.Set("Priority", "low")
		}
		if p.URL != "" {
			h.Set("Click", p.URL)
			h.Set("Actions", "view, Open session, "+p.URL)
		}
		if n.opts.NtfyToken != "" {
			h.Set("Authorization", "Bearer "+n.opts.NtfyToken)
		}
		return n.hc.Do(req)
	})
}

// personOf is who a request or a socket is: the team identity, or the
// token's one user.
func personOf(id *team.Identity) *team.Identity {
	if id != nil {
		return id
	}
	return &team.Identity{Subject: tokenPerson, Role: team.RoleMember}
}

// setVisible records a tab's "visibility" frame.
func (s *Server) setVisible(c *client, data []byte) {
	var f struct {
		ID      json.RawMessage `json:"id"`
		Visible *bool           `json:"visible"`
	}
	if err := json.Unmarshal(data, &f); err != nil || f.Visible == nil {
		c.fail(validID(f.ID), errorf(CodeBadRequest, `visibility needs "visible": true or false`))
		return
	}
	if n := s.notify; n != nil {
		n.mu.Lock()
		n.visible[c] = *f.Visible
		n.mu.Unlock()
		s.log.Debug("serve: a tab reports its visibility", "person", personOf(c.id).Subject, "visible", *f.Visible)
	}
	reply(c, validID(f.ID), noResult{}, nil)
}

// tabVisible reports whether one of the person's sockets says its tab is
// visible. A tab that never said is taken as visible: an old UI that
// does not report keeps its person from being paged while it is open.
func (s *Server) tabVisible(subject string) bool {
	n := s.notify
	s.mu.Lock()
	defer s.mu.Unlock()
	n.mu.Lock()
	defer n.mu.Unlock()
	for c := range n.visible {
		if _, ok := s.clients[c]; !ok {
			delete(n.visible, c) // gone
		}
	}
	for c := range s.clients {
		if personOf(c.id).Subject != subject {
			continue
		}
		if v, said := n.visible[c]; !said || v {
			return true
		}
	}
	return false
}

// startNotify opens the store and starts following sessions; a store
// that cannot be opened leaves notifications off, logged.
func (s *Server) startNotify(o NotifyOptions) {
	n, err := newNotifier(s, o)
	if err != nil {
		s.log.Error("serve: notifications are off", "err", err)
		return
	}
	s.notify = n
	s.wg.Add(1)
	go n.run()
}
