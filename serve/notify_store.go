package serve

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	webpush "github.com/SherClockHolmes/webpush-go"

	"github.com/tetherhq/tether/team"
)

// The notification events a person can turn on or off
// (docs/serve-protocol.md, section 8).
const (
	NotifyApproval   = "approval"    // a tool call waits to be allowed or denied
	NotifyQuestion   = "question"    // the model asked a question
	NotifyTurnDone   = "turn_done"   // a turn finished
	NotifyTurnFailed = "turn_failed" // a turn ended in an error
	NotifyBudget     = "budget"      // the person's daily budget is spent (teams)
)

// notifyEvents are all of them, the default of a person's settings.
var notifyEvents = []string{NotifyApproval, NotifyQuestion, NotifyTurnDone, NotifyTurnFailed, NotifyBudget}

// Bounds of the store: a person keeps at most maxPushSubs browsers (the
// oldest is dropped for a new one); the store at most maxNotifyPeople
// people (a new person past it is refused).
const (
	maxPushSubs     = 8
	maxNotifyPeople = 4096
)

// tokenPerson is the one person of a token-mode server.
const tokenPerson = "token"

// NotifySettings are one person's notification settings.
type NotifySettings struct {
	// Off silences everything.
	Off bool `json:"off"`
	// Events are the events wanted (NotifyApproval…); nil means all.
	Events []string `json:"events"`
	// Webhook, when set, gets every notification as signed JSON.
	Webhook *WebhookTarget `json:"webhook,omitempty"`
	// NtfyTopic, when set (and the server has an ntfy URL), gets every
	// notification as an ntfy message.
	NtfyTopic string `json:"ntfy_topic,omitempty"`
}

// WebhookTarget is where a person's webhook posts, and the secret its
// HMAC-SHA256 signature is made with.
type WebhookTarget struct {
	URL    string `json:"url"`
	Secret string `json:"secret,omitempty"`
}

func (ns *NotifySettings) wants(event string) bool {
	if ns.Off {
		return false
	}
	return ns.Events == nil || slices.Contains(ns.Events, event)
}

// pushSub is one browser's push subscription.
type pushSub struct {
	Endpoint string       `json:"endpoint"`
	Keys     webpush.Keys `json:"keys"`
	Created  time.Time    `json:"created"`
}

// notifyPerson is what the store keeps of one person.
type notifyPerson struct {
	// The identity last seen (teams), to decide their access to a
	// session when they are not connected.
	ID       team.Identity  `json:"id"`
	Settings NotifySettings `json:"settings"`
	Subs     []pushSub      `json:"subs,omitempty"`
}

// notifyStore keeps the VAPID keys and the people's subscriptions and
// settings in one JSON file, written whole (temp file and rename, 0600).
type notifyStore struct {
	path string

	mu     sync.Mutex
	Vapid  vapidKeys                `json:"vapid"`
	People map[string]*notifyPerson `json:"people"`
}

type vapidKeys struct {
	Public  string `json:"public"`
	Private string `json:"private"`
}

// openNotifyStore reads dir/notify.json, making the VAPID keys (once, for
// the store's life: browsers subscribed with them) when it has none.
func openNotifyStore(dir string) (*notifyStore, error) {
	if dir == "" {
		return nil, errors.New("serve: NotifyOptions.Dir is required")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	st := &notifyStore{path: filepath.Join(dir, "notify.json"), People: map[string]*notifyPerson{}}
	b, err := os.ReadFile(st.path)
	switch {
	case err == nil:
		if err := json.Unmarshal(b, st); err != nil {
			return nil, fmt.Errorf("serve: reading %s: %w", st.path, err)
		}
		if st.People == nil {
			st.People = map[string]*notifyPerson{}
		}
	case !errors.Is(err, os.ErrNotExist):
		return nil, err
	}
	if st.Vapid.Private == "" {
		priv, pub, err := webpush.GenerateVAPIDKeys()
		if err != nil {
			return nil, err
		}
		st.Vapid = vapidKeys{Public: pub, Private: priv}
		st.mu.Lock()
		err = st.saveLocked()
		st.mu.Unlock()
		if err != nil {
			return nil, err
		}
	}
	return st, nil
}

func (st *notifyStore) saveLocked() error {
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	tmp := st.path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, st.path)
}

// update runs f on the person's record (made if new, with id) and saves.
func (st *notifyStore) update(id *team.Identity, f func(p *notifyPerson)) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	p := st.People[id.Subject]
	if p == nil {
		if len(st.People) >= maxNotifyPeople {
			return errorf(CodeBusy, "the server keeps notification settings for %d people at most", maxNotifyPeople)
		}
		p = &notifyPerson{}
		st.People[id.Subject] = p
	}
	p.ID = *id
	p.ID.Addr = ""
	f(p)
	return st.saveLocked()
}

// person returns a copy of the person's record (nil: none).
func (st *notifyStore) person(subject string) *notifyPerson {
	st.mu.Lock()
	defer st.mu.Unlock()
	p := st.People[subject]
	if p == nil {
		return nil
	}
	cp := *p
	cp.Subs = slices.Clone(p.Subs)
	return &cp
}

// people returns copies of every record.
func (st *notifyStore) people() []*notifyPerson {
	st.mu.Lock()
	defer st.mu.Unlock()
	out := make([]*notifyPerson, 0, len(st.People))
	for _, p := range st.People {
		cp := *p
		cp.Subs = slices.Clone(p.Subs)
		out = append(out, &cp)
	}
	return out
}

// addSub adds (or refreshes) a browser's subscription, dropping the
// person's oldest past maxPushSubs.
func (p *notifyPerson) addSub(sub pushSub) {
	p.Subs = slices.DeleteFunc(p.Subs, func(o pushSub) bool { return o.Endpoint == sub.Endpoint })
	p.Subs = append(p.Subs, sub)
	if n := len(p.Subs) - maxPushSubs; n > 0 {
		p.Subs = p.Subs[n:]
	}
}

// dropSub forgets a subscription wherever it is (the push service said
// it is gone: 404 or 410).
func (st *notifyStore) dropSub(endpoint string) {
	st.mu.Lock()
	defer st.mu.Unlock()
	changed := false
	for _, p := range st.People {
		n := len(p.Subs)
		p.Subs = slices.DeleteFunc(p.Subs, func(o pushSub) bool { return o.Endpoint == endpoint })
		changed = changed || len(p.Subs) != n
	}
	if changed {
		_ = st.saveLocked()
	}
}
