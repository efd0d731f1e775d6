package claude

import (
	"encoding/json"
	"sync"

	"github.com/tetherhq/tether/internal/control"
)

// Requests the CLI re-delivers. The CLI's answer to initialize lists the
// permission, dialog and elicitation requests it has sent and is still
// waiting on (pending_permission_requests, pending_user_dialog_requests,
// pending_elicitation_requests; 2.1.197 lists the first two on a repeated
// initialize, 2.1.330 all three on every one), so that a host that joins
// late, or lost a line, can still answer them. The session serves each
// listed request exactly as if it had arrived live: the same callback
// (CanUseTool, OnUserDialog, OnElicitation), the same answer. A request
// the session is already serving, or has answered, is not served twice;
// the same request arriving live after its listing is not served twice
// either.

// pendingKinds maps each list of an initialize answer to the one request
// subtype it may hold; anything else in it is ignored, as the TypeScript
// SDK does.
var pendingKinds = []struct {
	subtype string
	list    func(*control.ResponseBody) []json.RawMessage
}{
	{"can_use_tool", func(b *control.ResponseBody) []json.RawMessage { return b.PendingPermission }},
	{"request_user_dialog", func(b *control.ResponseBody) []json.RawMessage { return b.PendingUserDialog }},
	{"elicitation", func(b *control.ResponseBody) []json.RawMessage { return b.PendingElicitation }},
}

// answeredMax bounds the ids of answered CLI requests the session
// remembers to refuse a second delivery; the oldest are forgotten first.
// Re-deliveries concern the few requests open at one time, so a small
// bound is plenty.
const answeredMax = 256

// answeredSet remembers the ids of the last answeredMax CLI requests the
// session answered.
type answeredSet struct {
	mu   sync.Mutex
	ids  map[string]struct{}
	ring []string
	next int
}

func (a *answeredSet) add(id string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.ids == nil {
		a.ids = make(map[string]struct{}, answeredMax)
		a.ring = make([]string, answeredMax)
	}
	if _, ok := a.ids[id]; ok {
		return
	}
	if old := a.ring[a.next]; old != "" {
		delete(a.ids, old)
	}
	a.ring[a.next] = id
	a.next = (a.next + 1) % answeredMax
	a.ids[id] = struct{}{}
}

func (a *answeredSet) has(id string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	_, ok := a.ids[id]
	return ok
}

// seen reports whether the CLI request id is being served or was
// answered: a second delivery of it must not reach the callbacks again.
func (s *Session) seen(id string) bool {
	return s.in.Running(id) || s.answered.has(id)
}

// redeliver serves the pending requests listed in an answer to
// initialize. It runs on the read loop, like the dispatch of live
// requests, so the two never race for the same id.
func (s *Session) redeliver(body *control.ResponseBody) {
	for _, k := range pendingKinds {
		for _, raw := range k.list(body) {
			var env control.Envelope
			if err := unmarshal(raw, &env); err != nil || env.RequestID == "" || len(env.Request) == 0 {
				s.log.Warn("claude: a pending request in the initialize answer is not understood", "kind", k.subtype)
				continue
			}
			if sub := control.Subtype(env.Request); sub != k.subtype {
				s.log.Warn("claude: a pending request of the wrong kind in the initialize answer", "list", k.subtype, "subtype", sub)
				continue
			}
			if s.seen(env.RequestID) {
				continue
			}
			s.log.Debug("claude: serving a request the CLI re-delivered", "subtype", k.subtype, "request_id", env.RequestID)
			s.observeControl(&ControlEvent{Type: ControlEventRequest, RequestID: env.RequestID, Subtype: k.subtype, Request: env.Request})
			go s.serve(env.RequestID, env.Request)() // registered here, answered on its own goroutine
		}
	}
}

// hasPending reports whether a control response lists pending requests.
func hasPending(b *control.ResponseBody) bool {
	return len(b.PendingPermission)+len(b.PendingUserDialog)+len(b.PendingElicitation) > 0
}
