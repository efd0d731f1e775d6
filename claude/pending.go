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

// Requests the CLI sends twice. A live control_request whose request_id
// repeats one the session has answered gets the very same answer again,
// byte for byte, without its callback running again: the CLI (or a relay
// in between) re-sent it because it is still waiting, and an unanswered
// request hangs it. A repeat that comes while the first is still being
// served is answered along with it, with the same line, once it is ready.
// A re-delivery listed in an initialize answer is different: it only says
// the CLI is still waiting, so one already answered or being served is
// skipped (its answer is on its way).
//
// The memory is bounded: the last answeredMax answered ids are kept, and
// with them their answer lines while those total at most answerMemoBytes
// (the oldest lines are let go first, and a line over answerLineMax is
// never kept). A repeat of an id whose line was let go is answered with
// an error saying so; a repeat of an id forgotten altogether is served as
// a new request. A request the CLI cancelled before it was answered is
// forgotten once its callback returns; a repeat that came after the
// cancel, while the callback still ran, gets an error answer.

const (
	// answeredMax bounds the answered CLI request ids remembered.
	// Repeats concern the few requests open at one time, so a small
	// bound is plenty.
	answeredMax = 256
	// answerMemoBytes bounds the answer lines kept for repeats, in total.
	answerMemoBytes = 1 << 20
	// answerLineMax is the longest answer line kept (an MCP tool's
	// result can be large; a permission answer is a few hundred bytes).
	answerLineMax = 64 << 10
)

// memoEntry is one CLI request the session serves or has answered.
type memoEntry struct {
	done      bool
	line      []byte // the answer sent; nil when not kept
	repeats   int    // repeats to answer when the first answer is ready
	cancelled bool   // the CLI cancelled it while it was being served
}

// answerMemo remembers CLI requests by request_id: those being served and
// the last answeredMax answered, with their answers (see above).
type answerMemo struct {
	mu    sync.Mutex
	m     map[string]*memoEntry
	ring  []string // answered ids, oldest first from next
	next  int
	bytes int // answer lines kept
}

// memoState is what answerMemo.arrive found for a request id.
type memoState int

const (
	memoNew      memoState = iota // unknown: serve it (it is now registered)
	memoServing                   // being served: answered along with the first
	memoAnswered                  // answered: send line again
	memoNotKept                   // answered, line let go: answer with an error
)

// arrive registers a live request id, or reports it as a repeat.
func (a *answerMemo) arrive(id string) (memoState, []byte) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if e, ok := a.m[id]; ok {
		switch {
		case !e.done:
			e.repeats++
			return memoServing, nil
		case e.line != nil:
			return memoAnswered, e.line
		default:
			return memoNotKept, nil
		}
	}
	a.start(id)
	return memoNew, nil
}

// register registers a re-delivered request id; false when the id is
// being served or was answered.
func (a *answerMemo) register(id string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.m[id]; ok {
		return false
	}
	a.start(id)
	return true
}

func (a *answerMemo) start(id string) {
	if a.m == nil {
		a.m = make(map[string]*memoEntry)
		a.ring = make([]string, answeredMax)
	}
	a.m[id] = &memoEntry{}
}

// cancel notes that the CLI withdrew request id: the repeats counted so
// far were of the withdrawn request and need no answer.
func (a *answerMemo) cancel(id string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if e, ok := a.m[id]; ok && !e.done {
		e.cancelled, e.repeats = true, 0
	}
}

// finish records line as the answer to id and returns how many repeats
// wait for it besides the first. A cancelled request is forgotten
// instead; its repeats are still returned.
func (a *answerMemo) finish(id string, line []byte) (repeats int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	e, ok := a.m[id]
	if !ok {
		return 0
	}
	repeats = e.repeats
	if e.cancelled {
		delete(a.m, id)
		return repeats
	}
	e.done, e.repeats = true, 0
	if len(line) <= answerLineMax {
		e.line = line
		a.bytes += len(line)
	}
	if old := a.ring[a.next]; old != "" {
		if oe := a.m[old]; oe != nil && oe.done {
			a.bytes -= len(oe.line)
			delete(a.m, old)
		}
	}
	a.ring[a.next] = id
	a.next = (a.next + 1) % answeredMax
	// Over the byte bound: let the oldest lines go (their ids stay).
	for i := 0; a.bytes > answerMemoBytes && i < answeredMax; i++ {
		if oe := a.m[a.ring[(a.next+i)%answeredMax]]; oe != nil && oe.done && oe.line != nil {
			a.bytes -= len(oe.line)
			oe.line = nil
		}
	}
	return repeats
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
			if !s.memo.register(env.RequestID) {
				continue // being served or answered: the answer is on its way
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
