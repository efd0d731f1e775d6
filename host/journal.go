package host

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"slices"
	"sync"
	"time"

	"github.com/tetherhq/tether/claude"
)

// EventKind names what an Event records; its Data is the JSON payload
// of that kind.
type EventKind string

// Event kinds. The payload of each is documented next to it; the
// protocol document (docs/serve-protocol.md) shows an example of each.
const (
	// EventState: the liveness changed. Data: StateInfo.
	EventState EventKind = "state"
	// EventMessage: the CLI wrote a message. Data: the CLI's stdout line,
	// unchanged (a JSON object; stream events included). Replays of the
	// host's own prompts appear once.
	EventMessage EventKind = "message"
	// EventError: a non-final error: a stdout line that could not be
	// decoded, or a CLI that died and is being restarted. Data:
	// ErrorInfo.
	EventError EventKind = "error"
	// EventApproval: a permission request or a question now waits for a
	// person. Data: ApprovalInfo.
	EventApproval EventKind = "approval"
	// EventApprovalResolved: a pending approval was answered (once, by
	// whoever was first) or withdrawn by the CLI. Data: ApprovalResolved.
	EventApprovalResolved EventKind = "approval_resolved"
	// EventDelivery: a prompt's delivery changed (queued, accepted,
	// answered, cancelled, lost). Data: DeliveryInfo.
	EventDelivery EventKind = "delivery"
	// EventCost: the session's usage or cost changed. Data: Cost.
	EventCost EventKind = "cost"
	// EventFilesChanged: a tool's result may have changed files (an
	// edit tool's, or Bash's in a git repository), or RevertChanges put
	// files back: a hint to ask for Session.Changes again. Data:
	// FilesChanged.
	EventFilesChanged EventKind = "files_changed"
	// EventClosed: the session ended for good; it is the last event.
	// Data: ErrorInfo (why; "" for a clean end).
	EventClosed EventKind = "closed"
	// EventWorktree: what became of the session's worktree changed (a
	// merge, a keep). Data: WorktreeInfo.
	EventWorktree EventKind = "worktree"
	// EventTasks: the background tasks the CLI runs changed (one
	// started, ended, or was described anew). Data: the whole list,
	// []TaskInfo, oldest first; [] when none runs.
	EventTasks EventKind = "tasks"
)

// Event is one entry in a session's journal. Seq numbers a session's
// events from 1, with no gaps, stable for the session's life (across CLI
// restarts). Events are JSON-encodable as they are, so they can cross a
// WebSocket or a message bus unchanged. An Event is read-only.
type Event struct {
	Seq  uint64          `json:"seq"`
	Time time.Time       `json:"time"`
	Kind EventKind       `json:"kind"`
	Data json.RawMessage `json:"data"`
}

// StateInfo is a Liveness as data (EventState, Snapshot.State).
type StateInfo struct {
	State string    `json:"state"` // State.String(): "awaiting_approval"
	Since time.Time `json:"since"`
	// Tool, Attempt: see Liveness.
	Tool    string `json:"tool,omitempty"`
	Attempt int    `json:"attempt,omitempty"`
	// Approval is the id of the approval waited for (awaiting_approval,
	// awaiting_answer).
	Approval string `json:"approval,omitempty"`
	// Error is Liveness.Err's text (error, idle after an interrupt,
	// disconnected).
	Error string `json:"error,omitempty"`
}

// Info returns l as data.
func (l Liveness) Info() StateInfo {
	si := StateInfo{State: l.State.String(), Since: l.Since, Tool: l.Tool, Attempt: l.Attempt}
	if l.Approval != nil {
		si.Approval = l.Approval.ID()
	}
	if l.Err != nil {
		si.Error = l.Err.Error()
	}
	return si
}

// ApprovalInfo is an Approval as data (EventApproval, Snapshot.Approvals).
type ApprovalInfo struct {
	ID          string                    `json:"id"`
	Kind        string                    `json:"kind"` // "tool", "question" or "elicitation"
	ToolName    string                    `json:"tool_name"`
	DisplayName string                    `json:"display_name,omitempty"`
	Title       string                    `json:"title,omitempty"`
	Description string                    `json:"description,omitempty"`
	Input       json.RawMessage           `json:"input,omitempty"`
	ToolUseID   string                    `json:"tool_use_id,omitempty"`
	Suggestions []claude.PermissionUpdate `json:"suggestions,omitempty"`
	BlockedPath string                    `json:"blocked_path,omitempty"`
	Reason      string                    `json:"decision_reason,omitempty"`
	AgentID     string                    `json:"agent_id,omitempty"`
	Questions   []Question                `json:"questions,omitempty"`
	// An elicitation's: the MCP server asking, its message, and the form
	// (RequestedSchema, a JSON schema of flat properties, listed in
	// PropertyOrder when the CLI says) or the page to visit (Mode "url").
	Server          string          `json:"server,omitempty"`
	Message         string          `json:"message,omitempty"`
	Mode            string          `json:"mode,omitempty"`
	URL             string          `json:"url,omitempty"`
	RequestedSchema json.RawMessage `json:"requested_schema,omitempty"`
	PropertyOrder   []string        `json:"property_order,omitempty"`
	// Form is the form's fields as Approval.Form reads them from
	// RequestedSchema: what a UI renders.
	Form  []FormField `json:"form,omitempty"`
	Asked time.Time   `json:"asked"`
}

// Info returns a as data.
func (a *Approval) Info() ApprovalInfo {
	r := a.Request
	info := ApprovalInfo{
		ID: r.RequestID, Kind: a.Kind.String(), ToolName: r.ToolName, DisplayName: r.DisplayName,
		Title: r.Title, Description: r.Description, Input: r.Input, ToolUseID: r.ToolUseID,
		Suggestions: r.Suggestions, BlockedPath: r.BlockedPath, Reason: r.DecisionReason,
		AgentID: r.AgentID, Questions: a.Questions, Asked: a.Asked,
	}
	if e := a.Elicitation; e != nil {
		info.Server, info.Message, info.Mode, info.URL = e.ServerName, e.Message, cmp.Or(e.Mode, "form"), e.URL
		info.RequestedSchema, info.PropertyOrder, info.Form = e.RequestedSchema, e.PropertyOrder, a.Form()
	}
	return info
}

// String returns the kind as ApprovalInfo.Kind names it: "tool",
// "question" or "elicitation".
func (k ApprovalKind) String() string {
	switch k {
	case ApprovalQuestion:
		return "question"
	case ApprovalElicitation:
		return "elicitation"
	}
	return "tool"
}

// ApprovalResolved is the payload of EventApprovalResolved.
type ApprovalResolved struct {
	ID string `json:"id"`
	// Outcome is "allowed", "answered" (a question), "denied" or
	// "withdrawn".
	Outcome string `json:"outcome"`
	// Message is a deny's message.
	Message string `json:"message,omitempty"`
	// Interrupt is set on a deny that also ended the turn.
	Interrupt bool `json:"interrupt,omitempty"`
	// Always is set on an allow that applied permission updates.
	Always bool `json:"always,omitempty"`
	// AnsweredBy is the display name of who answered (Command.Actor, set
	// by a front end that knows its people, e.g. tether serve --team);
	// "" when unknown or when the CLI withdrew the approval.
	AnsweredBy string `json:"answered_by,omitempty"`
}

// ResolvedApproval is an answered approval as a Snapshot keeps it: how
// it ended and who answered, with the tool call it was about, so that a
// client that opens the session later can still say "allowed by Alice"
// on that call.
type ResolvedApproval struct {
	ApprovalResolved
	// Kind ("tool", "question" or "elicitation"), ToolName and
	// ToolUseID: as in the ApprovalInfo of the request.
	Kind      string `json:"kind"`
	ToolName  string `json:"tool_name"`
	ToolUseID string `json:"tool_use_id,omitempty"`
	// An elicitation's server and what it asked (ApprovalInfo's Server
	// and Message), for the record of the answer.
	Server        string    `json:"server,omitempty"`
	ServerMessage string    `json:"server_message,omitempty"`
	Resolved      time.Time `json:"resolved"`
}

// Resolved returns the entry of Snapshot.Resolved for info's approval
// answered with r at the time at: what a reader of the events rebuilds
// from an EventApproval and its EventApprovalResolved.
func (info ApprovalInfo) Resolved(r ApprovalResolved, at time.Time) ResolvedApproval {
	return ResolvedApproval{ApprovalResolved: r, Kind: info.Kind, ToolName: info.ToolName, ToolUseID: info.ToolUseID,
		Server: info.Server, ServerMessage: info.Message, Resolved: at}
}

// maxResolved bounds Snapshot.Resolved: the most recent answers are kept.
const maxResolved = 64

// DeliveryInfo is a Delivery as data (EventDelivery, Snapshot.Deliveries).
type DeliveryInfo struct {
	UUID   string    `json:"uuid"`
	Status string    `json:"status"` // DeliveryStatus.String()
	Text   string    `json:"text,omitempty"`
	Sent   time.Time `json:"sent"`
	Error  string    `json:"error,omitempty"`
}

// ErrorInfo is the payload of EventError and EventClosed.
type ErrorInfo struct {
	Error string `json:"error,omitempty"`
}

// Snapshot is everything a client needs to render a session from
// scratch, consistent with the journal: applying the events with Seq >
// Snapshot.Seq to it gives the live view.
type Snapshot struct {
	// Seq is the last event the snapshot includes (0: none yet).
	Seq uint64 `json:"seq"`
	// ID is the host's id for the session, SessionID the CLI's.
	ID        string `json:"id"`
	SessionID string `json:"session_id,omitempty"`
	// Cwd, Model and PermissionMode are as the CLI last reported them
	// (system/init), else as the session was started with.
	Cwd            string `json:"cwd,omitempty"`
	Model          string `json:"model,omitempty"`
	PermissionMode string `json:"permission_mode,omitempty"`

	State StateInfo `json:"state"`
	// Transcript is the session's messages so far, as the CLI's stdout
	// lines (EventMessage payloads), oldest first. Stream events are kept
	// for the running turn only (they rebuild the message being written);
	// those of ended turns are dropped, their assistant messages kept.
	// Bounded (JournalOptions.MaxTranscript, MaxTranscriptBytes): past
	// the bound the running turn's stream events go first (for the rest
	// of the turn), then the oldest lines, counted in Dropped.
	Transcript []json.RawMessage `json:"transcript"`
	Dropped    int               `json:"dropped,omitempty"`
	// Approvals pending, oldest first; Deliveries not yet resolved, in
	// send order.
	Approvals  []ApprovalInfo `json:"approvals"`
	Deliveries []DeliveryInfo `json:"deliveries"`
	// Resolved are the approvals answered by a person (not those the CLI
	// withdrew), oldest first: the last 64 of the session.
	Resolved []ResolvedApproval `json:"resolved,omitempty"`
	Cost     Cost               `json:"cost"`
	// Ended is set once the session has ended for good (EventClosed);
	// Error says why.
	Ended bool   `json:"ended,omitempty"`
	Error string `json:"error,omitempty"`
	// Worktree is the session's worktree (Options.Worktree); nil: none.
	Worktree *WorktreeInfo `json:"worktree,omitempty"`
	// Tasks are the background tasks the CLI runs (Session.Tasks).
	Tasks []TaskInfo `json:"tasks,omitempty"`
}

// ErrResync is matched (errors.Is) by the *ResyncError that Events and
// Messages yield to a subscriber that missed events: it should take a
// Snapshot and subscribe again after the snapshot's Seq.
var ErrResync = errors.New("host: events missed, resync")

// ResyncError says which events a subscriber cannot get.
type ResyncError struct {
	// After is where the subscriber stood: the last seq it had.
	After uint64
	// Oldest is the oldest seq the journal still holds (0 when empty)
	// and Latest the newest.
	Oldest, Latest uint64
	// Missed counts the messages a Messages subscriber lost (0 for
	// Events).
	Missed int
}

func (e *ResyncError) Error() string {
	if e.Missed > 0 {
		return fmt.Sprintf("host: subscriber fell behind: %d messages missed; resync", e.Missed)
	}
	return fmt.Sprintf("host: events after %d are no longer kept (journal holds %d..%d); resync", e.After, e.Oldest, e.Latest)
}

// Is makes errors.Is(err, ErrResync) true.
func (e *ResyncError) Is(target error) bool { return target == ErrResync }

// JournalOptions bounds a session's journal (Options.Journal). Zero
// fields take the defaults.
type JournalOptions struct {
	// MaxEvents is the most events kept (0 = 4096).
	MaxEvents int
	// MaxBytes bounds the kept events' payload bytes (0 = 8 MiB). The
	// newest event is always kept, however big.
	MaxBytes int
	// MaxTranscript is the most transcript lines a Snapshot holds
	// (0 = 2000), and MaxTranscriptBytes their bytes (0 = 16 MiB).
	MaxTranscript      int
	MaxTranscriptBytes int
}

// eventOverhead is what an event costs beyond its payload, for the
// byte bound.
const eventOverhead = 64

// journal is a session's event log: a ring of the newest events, read
// by any number of subscribers at their own pace. Appends happen with
// the session's lock held and never block; subscribers read with the
// journal's own lock, so a slow reader never holds the session up. A
// reader that falls behind the ring gets a *ResyncError.
type journal struct {
	opts JournalOptions

	mu     sync.Mutex
	ring   []Event // ring[(head+i)%len] for i < n; grows up to MaxEvents
	head   int
	n      int
	bytes  int
	seq    uint64        // the last seq given
	wake   chan struct{} // closed on the next append or end; nil when nobody waits
	closed bool          // the session ended: no more events

	// Readers that must lose no event (Hold): the events they have not
	// taken are never evicted, and the session stops reading its CLI
	// while they fill half the bound (waitRoom).
	holds map[*Hold]struct{}
	room  chan struct{} // closed when a hold moves or goes; nil when nobody waits

	// The transcript for snapshots (s.mu held, not j.mu).
	lines     []line
	lineBytes int
	dropped   int
	streams   int  // stream events in lines
	streamOff bool // this turn's stream events are no longer kept
	cost      Cost // as last published
}

type line struct {
	raw    json.RawMessage
	stream bool
}

// dropStream removes the stream events from the transcript (s.mu held).
func (j *journal) dropStream() {
	if j.streams == 0 {
		return
	}
	kept := j.lines[:0]
	for _, l := range j.lines {
		if l.stream {
			j.lineBytes -= len(l.raw)
		} else {
			kept = append(kept, l)
		}
	}
	clear(j.lines[len(kept):])
	j.lines = kept
	j.streams = 0
}

func (j *journal) init(o *JournalOptions) {
	if o != nil {
		j.opts = *o
	}
	j.opts.MaxEvents = cmpOr(j.opts.MaxEvents, 4096)
	j.opts.MaxBytes = cmpOr(j.opts.MaxBytes, 8<<20)
	j.opts.MaxTranscript = cmpOr(j.opts.MaxTranscript, 2000)
	j.opts.MaxTranscriptBytes = cmpOr(j.opts.MaxTranscriptBytes, 16<<20)
}

// append adds an event (the session's lock held).
func (j *journal) append(kind EventKind, data json.RawMessage) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		return
	}
	j.seq++
	e := Event{Seq: j.seq, Time: time.Now(), Kind: kind, Data: data}
	size := len(data) + eventOverhead
	floor := j.floorLocked()
	for j.n > 0 && (j.n >= j.opts.MaxEvents || j.bytes+size > j.opts.MaxBytes) && j.ring[j.head].Seq <= floor {
		old := &j.ring[j.head]
		j.bytes -= len(old.Data) + eventOverhead
		*old = Event{} // let the payload go
		j.head = (j.head + 1) % len(j.ring)
		j.n--
	}
	if j.n == len(j.ring) {
		// Grow (up to MaxEvents), unrolling the ring.
		size := min(max(2*len(j.ring), 16), j.opts.MaxEvents)
		if size <= j.n {
			size = 2 * j.n // past the bound: events a hold has not taken
		}
		nr := make([]Event, size)
		for i := range j.n {
			nr[i] = j.ring[(j.head+i)%len(j.ring)]
		}
		j.ring, j.head = nr, 0
	} else if j.n == 0 && len(j.ring) > 64 {
		// Empty after a burst of big events: give the memory back.
		j.ring, j.head = make([]Event, 16), 0
	}
	j.ring[(j.head+j.n)%len(j.ring)] = e
	j.n++
	j.bytes += size
	if j.wake != nil {
		close(j.wake)
		j.wake = nil
	}
}

// compact keeps only the newest keep events and gives the rest of the
// ring's memory back (a sleeping session: Sleep). A subscriber that
// needs an older one resyncs from a snapshot, as after any bound.
func (j *journal) compact(keep int) {
	j.mu.Lock()
	defer j.mu.Unlock()
	for j.n > keep {
		old := &j.ring[j.head]
		j.bytes -= len(old.Data) + eventOverhead
		*old = Event{}
		j.head = (j.head + 1) % len(j.ring)
		j.n--
	}
	nr := make([]Event, max(j.n, 16))
	for i := range j.n {
		nr[i] = j.ring[(j.head+i)%len(j.ring)]
	}
	j.ring, j.head = nr, 0
}

// end marks the journal complete: subscribers finish what is kept and
// stop.
func (j *journal) end() {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.closed = true
	j.roomLocked()
	if j.wake != nil {
		close(j.wake)
		j.wake = nil
	}
}

// Hold is a reader of a session's events that must lose none: a
// publisher copying the journal to a bus, say. While it holds, the events
// after the last one it took (Advance) stay in the journal whatever its
// bound, and once they fill half of it (JournalOptions: half of MaxEvents
// or of MaxBytes) the session stops reading its CLI's output until the
// reader takes some: the CLI then waits on its pipe (back pressure: see
// claude.Options.MaxBufferedBytes), and nothing is dropped. The journal's
// memory stays bounded by the bound plus the events of one CLI message.
//
// A session being closed (its CLI closing or ended) reads on, held or
// not, so that Close and Sleep never wait for a reader. Release a hold
// that is no longer read. Its methods are safe for concurrent use.
type Hold struct {
	j        *journal
	seq      uint64 // the last event taken (j.mu)
	released bool
}

// Hold holds the session's events after after for one reader: see Hold.
// A hold taken after the session ended holds nothing.
func (s *Session) Hold(after uint64) *Hold {
	j := &s.journal
	h := &Hold{j: j, seq: after}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.holds == nil {
		j.holds = map[*Hold]struct{}{}
	}
	j.holds[h] = struct{}{}
	return h
}

// Advance says the reader has taken the events up to seq.
func (h *Hold) Advance(seq uint64) {
	j := h.j
	j.mu.Lock()
	defer j.mu.Unlock()
	if seq <= h.seq || h.released {
		return
	}
	h.seq = seq
	j.roomLocked()
}

// Release ends the hold; it may be called more than once.
func (h *Hold) Release() {
	j := h.j
	j.mu.Lock()
	defer j.mu.Unlock()
	h.released = true
	delete(j.holds, h)
	j.roomLocked()
}

// roomLocked wakes a session waiting for room (j.mu held).
func (j *journal) roomLocked() {
	if j.room != nil {
		close(j.room)
		j.room = nil
	}
}

// floorLocked is the last event every hold has taken: events after it
// are not evicted (j.mu held).
func (j *journal) floorLocked() uint64 {
	floor := ^uint64(0)
	for h := range j.holds {
		floor = min(floor, h.seq)
	}
	return floor
}

// full reports, when the events no hold has taken fill half the bound, a
// channel closed when that may have changed (j.mu held).
func (j *journal) fullLocked() <-chan struct{} {
	if len(j.holds) == 0 || j.closed {
		return nil
	}
	floor := j.floorLocked()
	if floor >= j.seq {
		return nil
	}
	full := j.seq-floor >= uint64(max(j.opts.MaxEvents/2, 1))
	if !full && j.bytes >= j.opts.MaxBytes/2 {
		held := 0
		for i := j.n - 1; i >= 0; i-- {
			e := &j.ring[(j.head+i)%len(j.ring)]
			if e.Seq <= floor {
				break
			}
			held += len(e.Data) + eventOverhead
		}
		full = held >= j.opts.MaxBytes/2
	}
	if !full {
		return nil
	}
	if j.room == nil {
		j.room = make(chan struct{})
	}
	return j.room
}

// waitRoom blocks the session's receive loop while holds are full (see
// Hold), until they take events or stop, or closing is closed (the CLI
// session's output ended: reading on cannot wait).
func (j *journal) waitRoom(closing <-chan struct{}) {
	for {
		j.mu.Lock()
		room := j.fullLocked()
		j.mu.Unlock()
		if room == nil {
			return
		}
		select {
		case <-room:
		case <-closing:
			return
		}
	}
}

// oldestLocked returns the oldest seq kept (0 when none).
func (j *journal) oldestLocked() uint64 {
	if j.n == 0 {
		return 0
	}
	return j.ring[j.head].Seq
}

// read returns up to max events with Seq > after, a channel closed on the
// next change when there are none, and whether the journal has ended.
func (j *journal) read(after uint64, buf []Event) ([]Event, <-chan struct{}, bool, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if after > j.seq {
		return nil, nil, false, &ResyncError{After: after, Oldest: j.oldestLocked(), Latest: j.seq}
	}
	if after == j.seq {
		if j.closed {
			return nil, nil, true, nil
		}
		if j.wake == nil {
			j.wake = make(chan struct{})
		}
		return nil, j.wake, false, nil
	}
	oldest := j.oldestLocked()
	if j.n == 0 || after+1 < oldest {
		return nil, nil, false, &ResyncError{After: after, Oldest: oldest, Latest: j.seq}
	}
	for i := int(after + 1 - oldest); i < j.n && len(buf) < cap(buf); i++ {
		buf = append(buf, j.ring[(j.head+i)%len(j.ring)])
	}
	return buf, nil, false, nil
}

// Events yields every event of the session with Seq > after, in order,
// then each new one as it happens, until the session has ended (after
// its EventClosed) or ctx is done (then it yields ctx's error). after 0
// means from the first event.
//
// Buffering: the journal keeps the newest events (JournalOptions: 4096
// events and 8 MiB by default) and every subscriber reads them at its
// own pace, so that a slow subscriber holds no memory of its own and
// never slows the session or other subscribers. When the events it
// needs are no longer kept (after is too old, or it fell that far
// behind), or after is newer than the journal's latest, it yields a
// *ResyncError (errors.Is ErrResync) and ends: take a Snapshot and call
// Events again with its Seq. The iterator is single-use.
func (s *Session) Events(ctx context.Context, after uint64) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		buf := make([]Event, 0, 64)
		for {
			evs, wake, done, err := s.journal.read(after, buf[:0])
			if err != nil {
				yield(Event{}, err)
				return
			}
			if done {
				return
			}
			for _, e := range evs {
				if !yield(e, nil) {
					return
				}
				after = e.Seq
			}
			clear(evs) // do not pin payloads the ring has let go
			if wake == nil {
				if ctx.Err() != nil {
					yield(Event{}, ctx.Err())
					return
				}
				continue
			}
			select {
			case <-wake:
			case <-ctx.Done():
				yield(Event{}, ctx.Err())
				return
			}
		}
	}
}

// Snapshot returns the session as of its latest event: see Snapshot.
func (s *Session) Snapshot() *Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	j := &s.journal
	j.mu.Lock()
	seq := j.seq
	j.mu.Unlock()
	snap := &Snapshot{
		Seq:            seq,
		ID:             s.id,
		SessionID:      s.sid,
		Cwd:            s.info.cwd,
		Model:          s.info.model,
		PermissionMode: s.info.mode,
		State:          s.live.Info(),
		Transcript:     make([]json.RawMessage, 0, len(j.lines)),
		Dropped:        j.dropped,
		Approvals:      []ApprovalInfo{},
		Deliveries:     []DeliveryInfo{},
		Cost:           s.costs.snapshot(),
		Ended:          s.ended,
	}
	if s.wt != nil {
		i := s.wt.info
		snap.Worktree = &i
	}
	for _, l := range j.lines {
		snap.Transcript = append(snap.Transcript, l.raw)
	}
	for _, a := range s.approvals {
		snap.Approvals = append(snap.Approvals, a.Info())
	}
	for _, d := range s.deliveries {
		snap.Deliveries = append(snap.Deliveries, d.info())
	}
	if len(s.resolved) > 0 {
		snap.Resolved = slices.Clone(s.resolved)
	}
	snap.Tasks = slices.Clone(s.tasks)
	if s.ended && s.cause != nil && !errors.Is(s.cause, claude.ErrClosed) {
		snap.Error = s.cause.Error()
	}
	return snap
}

// sessionInfo is what the session knows of its CLI's settings.
type sessionInfo struct {
	cwd, model, mode string
}

// record appends an event with data marshalled (s.mu held).
func (s *Session) record(kind EventKind, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		s.log.Warn("host: journal: unencodable event", "kind", string(kind), "err", err)
		return
	}
	s.journal.append(kind, b)
}

// recordMessage journals a CLI message and keeps it in the transcript
// (s.mu held).
func (s *Session) recordMessage(m claude.Message) {
	raw := m.RawJSON()
	if raw == nil {
		b, err := json.Marshal(m)
		if err != nil {
			return
		}
		raw = b
	}
	s.journal.append(EventMessage, raw)
	j := &s.journal
	_, stream := m.(*claude.StreamEvent)
	if _, ok := m.(*claude.ResultMessage); ok {
		// The turn ended: its stream events are superseded by its
		// assistant messages.
		j.dropStream()
		j.streamOff = false
	}
	if !stream || !j.streamOff {
		j.lines = append(j.lines, line{raw: raw, stream: stream})
		j.lineBytes += len(raw)
		if stream {
			j.streams++
		}
	}
	over := func() bool {
		return len(j.lines) > j.opts.MaxTranscript || j.lineBytes > j.opts.MaxTranscriptBytes
	}
	if over() && j.streams > 0 {
		// A long turn: give up its stream events (a snapshot then shows
		// the turn's messages as they complete) before any history.
		j.dropStream()
		j.streamOff = true
	}
	drop := 0
	for bytes := j.lineBytes; drop < len(j.lines)-1 && (len(j.lines)-drop > j.opts.MaxTranscript || bytes > j.opts.MaxTranscriptBytes); drop++ {
		bytes -= len(j.lines[drop].raw)
	}
	if drop > 0 {
		for _, l := range j.lines[:drop] {
			j.lineBytes -= len(l.raw)
		}
		j.dropped += drop
		n := copy(j.lines, j.lines[drop:])
		clear(j.lines[n:])
		j.lines = j.lines[:n]
	}
	if cap(j.lines) > 2*j.opts.MaxTranscript && len(j.lines) < j.opts.MaxTranscript/2 {
		j.lines = append([]line(nil), j.lines...) // give the memory back
	}
	if init, ok := m.(*claude.InitMessage); ok {
		s.info.cwd = cmpOr(init.Cwd, s.info.cwd)
		s.info.model = cmpOr(init.Model, s.info.model)
		s.info.mode = cmpOr(string(init.PermissionMode), s.info.mode)
	}
}

// repeated reports whether m is a repeated echo of a host prompt, which
// handle drops (s.mu held).
func (s *Session) repeated(m claude.Message) bool {
	u, ok := m.(*claude.UserMessage)
	if !ok || !u.IsReplay || u.UUID == "" {
		return false
	}
	_, dup := s.replayed[u.UUID]
	return dup
}

// recordCost journals the cost when m changed it (s.mu held).
func (s *Session) recordCost(m claude.Message) {
	switch m := m.(type) {
	case *claude.ResultMessage, *claude.AssistantMessage:
	case *claude.StreamEvent:
		// Only these carry usage; a text delta changes nothing.
		switch m.Event.(type) {
		case *claude.MessageStartEvent, *claude.MessageDeltaEvent:
		default:
			return
		}
	default:
		return
	}
	c := s.costs.snapshot()
	p := s.journal.cost
	if c.USD == p.USD && c.Tokens == p.Tokens && c.Turns == p.Turns && c.Turn.Messages == p.Turn.Messages {
		return
	}
	s.journal.cost = c
	s.record(EventCost, c)
}

// recordResolved journals the end of an announced approval (s.mu held).
func (s *Session) recordResolved(a *Approval, r claude.PermissionResult, actor string) {
	if !a.announced {
		return
	}
	ev := ApprovalResolved{ID: a.ID(), Outcome: "withdrawn"}
	if r != nil {
		ev.AnsweredBy = actor
	}
	switch r := r.(type) {
	case *claude.PermissionAllow:
		ev.Outcome, ev.Always = "allowed", len(r.UpdatedPermissions) > 0
		if a.Kind != ApprovalTool {
			ev.Outcome = "answered"
		}
	case *claude.PermissionDeny:
		ev.Outcome, ev.Message, ev.Interrupt = "denied", r.Message, r.Interrupt
	}
	s.record(EventApprovalResolved, ev)
	if r != nil {
		info := a.Info()
		if len(s.resolved) >= maxResolved {
			s.resolved = slices.Delete(s.resolved, 0, len(s.resolved)-maxResolved+1)
		}
		s.resolved = append(s.resolved, info.Resolved(ev, time.Now()))
	}
}

// info returns d as data (s.mu held).
func (d *Delivery) info() DeliveryInfo {
	di := DeliveryInfo{UUID: d.UUID, Status: d.status.String(), Sent: d.Sent}
	if d.Message != nil {
		di.Text = d.Message.Text()
	}
	if d.err != nil && d.status != DeliveryCancelled {
		di.Error = d.err.Error()
	}
	return di
}

// recordDelivery journals d's status (s.mu held).
func (s *Session) recordDelivery(d *Delivery) { s.record(EventDelivery, d.info()) }
