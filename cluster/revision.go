package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tetherhq/tether/host"
)

// The wire contract between processes of different releases
// (docs/cluster.md, "Compatibility").
//
// Every message this release puts on the bus, and every record it stores,
// carries its wire revision in the Tether-Wire header: a header, because
// the first release (revision 1) decodes JSON bodies strictly and would
// refuse a field it does not know, but ignores headers. A message without
// the header was written by revision 1.
//
// Readers ignore fields they do not know. A writer speaks to a reader in
// the reader's revision: requests to a process that advertises revision 1
// (or nothing) and records every process reads carry only revision 1's
// fields (wireShapes); a request that needs more is refused before it
// leaves, with an *UnsupportedError naming the revision. Agents advertise
// their revision on their registry entry (the header of its KV message),
// clients on each request (the header), and an agent answers in the
// revision of the request.
const (
	// WireRevision is the revision of the bus's messages this release
	// writes.
	WireRevision = 5
	// OldestWireRevision is the oldest revision this release reads and
	// speaks: 1, the dialect of the release that wrote no revision.
	OldestWireRevision = 1

	// worktreeRevision is the first revision whose agents start sessions
	// in worktrees (startRequest.Worktree, SessionInfo.Worktree) and run
	// the worktree commands.
	worktreeRevision = 4

	hdrWire = "Tether-Wire"
)

var wireValue = strconv.Itoa(WireRevision)

// wireOf is the revision a message's headers name: 1 without the header
// (or with one that does not parse).
func wireOf(h nats.Header) int {
	if h == nil {
		return 1
	}
	n, err := strconv.Atoi(h.Get(hdrWire))
	if err != nil || n < 1 {
		return 1
	}
	return n
}

// stamp marks a message as written by this release.
func stamp(m *nats.Msg) *nats.Msg {
	if m.Header == nil {
		m.Header = nats.Header{}
	}
	m.Header.Set(hdrWire, wireValue)
	return m
}

// ErrUnsupported: a message names an operation the reader does not know,
// or lacks what the reader needs: it was written for another wire
// revision. Nothing was done.
var ErrUnsupported = errors.New("cluster: unsupported by the other side's wire revision")

// UnsupportedError is a message refused under the compatibility rule: it
// names an operation the reader does not know, or lacks something the
// reader needs (a reader receiving it), or it needs something the other
// side's revision does not have (a writer refusing to send it). It had no
// effect. Match it with errors.Is(err, ErrUnsupported).
type UnsupportedError struct {
	Subject string // where it came from, or was going to
	What    string // the operation or field
	// Revision is the other side's wire revision (1: a process that
	// writes none), 0 when unknown.
	Revision int
}

func (e *UnsupportedError) Error() string {
	rev := "an unknown wire revision"
	if e.Revision > 0 {
		rev = "wire revision " + strconv.Itoa(e.Revision)
	}
	s := fmt.Sprintf("cluster: unsupported: %s (the other side speaks %s; this release %d to %d)", e.What, rev, OldestWireRevision, WireRevision)
	if e.Subject != "" {
		s += " on " + e.Subject
	}
	return s
}

func (e *UnsupportedError) Unwrap() error { return ErrUnsupported }

// shape is the JSON fields of a message as one wire revision knows them:
// a field's value is the shape of its object (or of each element of its
// array), or nil for a value taken whole.
type shape map[string]shape

// The shapes of revision 1 (the release that wrote no revision), for the
// messages it decodes strictly. A field added since is written to such a
// reader only when it is empty (an UnsupportedError otherwise, for a
// request; dropped, for a reply or a record).
var (
	identityV1 = shape{"sub": nil, "email": nil, "name": nil, "groups": nil, "role": nil, "addr": nil}
	sessionV1  = shape{"id": nil, "agent": nil, "state": nil, "ended": nil, "closed": nil, "seq": nil, "last_event": nil,
		"cost_usd": nil, "cwd": nil, "model": nil, "title": nil, "last_prompt": nil, "cli_session": nil, "created": nil,
		"updated": nil, "orphaned": nil, "moving": nil, "person": nil, "takeovers": nil, "owners": nil}
	errorV1 = shape{"code": nil, "message": nil}

	wireShapes = map[string]shape{
		"command": {"type": nil, "text": nil, "images": {"media_type": nil, "data": nil}, "uuid": nil, "approval": nil,
			"behavior": nil, "always": nil, "message": nil, "interrupt": nil, "answers": nil, "model": nil, "mode": nil,
			"identity": identityV1},
		"command_reply": {"result": {"uuid": nil, "step": nil}, "error": errorV1},
		"start": {"id": nil, "cwd": nil, "model": nil, "permission_mode": nil, "append_system_prompt": nil, "resume": nil,
			"fork": nil, "title": nil, "failover": nil, "restore": nil, "expires": nil, "identity": identityV1},
		"start_reply": {"session": sessionV1, "error": errorV1},
		"snapshot":    {"identity": identityV1},
		"session":     sessionV1,
		"agent":       {"id": nil, "capacity": nil, "sessions": nil, "heartbeat": nil, "started": nil},
	}

	// commandsV1 are the command types revision 1 runs.
	commandsV1 = []host.CommandType{host.CommandSend, host.CommandInterrupt, host.CommandForceInterrupt, host.CommandAnswer,
		host.CommandCancel, host.CommandSetModel, host.CommandSetMode, host.CommandClose}
)

// commandsAdded are the command types agents run since (an older agent
// refuses them as unsupported: nothing is done).
var commandsAdded = []host.CommandType{host.CommandChanges, host.CommandRevertChanges,
	host.CommandWorktreeMerge, host.CommandWorktreeKeep, host.CommandWorktreeDiscard, host.CommandSlashCommands, host.CommandWake,
	host.CommandStopTask}

// knownCommand reports whether this release's agents run commands of type
// t (resume is the client's: a failover).
func knownCommand(t host.CommandType) bool {
	for _, k := range append(commandsV1, commandsAdded...) {
		if t == k {
			return true
		}
	}
	return false
}

// encodeFor marshals v for a reader of revision rev: as it is for
// revision 2 and later, else projected onto the revision 1 shape named
// kind. dropped lists the fields removed because they held a value
// revision 1 does not know (sorted, dotted paths).
func encodeFor(rev int, kind string, v any) (data []byte, dropped []string, err error) {
	data, err = json.Marshal(v)
	if err != nil || rev >= 2 {
		return data, nil, err
	}
	sh, ok := wireShapes[kind]
	if !ok {
		return data, nil, nil
	}
	var tree any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&tree); err != nil {
		return nil, nil, err
	}
	if !project(tree, sh, "", &dropped) {
		return data, nil, nil
	}
	sort.Strings(dropped)
	data, err = json.Marshal(tree)
	return data, dropped, err
}

// project removes from v (decoded JSON) the fields sh does not have, and
// reports whether it removed any. A removed field that held a value (not
// null, false, 0, "" or an empty array or object) is added to dropped.
func project(v any, sh shape, path string, dropped *[]string) bool {
	changed := false
	switch t := v.(type) {
	case map[string]any:
		for k, fv := range t {
			sub, ok := sh[k]
			if !ok {
				delete(t, k)
				changed = true
				if !emptyJSON(fv) {
					*dropped = append(*dropped, path+k)
				}
				continue
			}
			if sub != nil && project(fv, sub, path+k+".", dropped) {
				changed = true
			}
		}
	case []any:
		for _, e := range t {
			if project(e, sh, path, dropped) {
				changed = true
			}
		}
	}
	return changed
}

func emptyJSON(v any) bool {
	switch t := v.(type) {
	case nil:
		return true
	case bool:
		return !t
	case string:
		return t == ""
	case json.Number:
		f, err := t.Float64()
		return err == nil && f == 0
	case []any:
		return len(t) == 0
	case map[string]any:
		return len(t) == 0
	}
	return false
}

// encodeRecord marshals a registry record as every reader of the fleet
// can read it: revision 1's fields only, while revision 1 is the oldest
// this release speaks (its readers refuse a record with a field they do
// not know).
func encodeRecord(kind string, v any) []byte {
	data, _, _ := encodeFor(OldestWireRevision, kind, v)
	return data
}

// kvOp is the header with which JetStream marks a KV delete or purge.
const kvOp = "KV-Operation"

// kvSubject is the subject of a key in a bucket.
func kvSubject(bucket, key string) string { return "$KV." + bucket + "." + key }

// kvWrite stores a registry record stamped with this release's revision,
// as KeyValue.Update (at revision rev), Create (create) or Put (neither)
// would, with their errors: jetstream.ErrKeyExists when the key changed
// since rev, or exists for a create.
func (b *bus) kvWrite(ctx context.Context, bucket, key string, data []byte, rev uint64, create bool) (uint64, error) {
	if !validID(key) {
		return 0, jetstream.ErrInvalidKey
	}
	m := stamp(nats.NewMsg(kvSubject(bucket, key)))
	m.Data = data
	var opts []jetstream.PublishOpt
	if rev > 0 || create {
		opts = append(opts, jetstream.WithExpectLastSequencePerSubject(rev))
	}
	ack, err := b.js.PublishMsg(ctx, m, opts...)
	if err == nil {
		return ack.Sequence, nil
	}
	if !wrongLastSeq(err) {
		return 0, err
	}
	if create {
		// A key deleted before (its delete marker is the last message)
		// may be created again, at the marker's sequence.
		if st, serr := b.kvStream(ctx, bucket); serr == nil {
			if last, gerr := st.GetLastMsgForSubject(ctx, m.Subject); gerr == nil && last.Header.Get(kvOp) != "" {
				ack, err = b.js.PublishMsg(ctx, m, jetstream.WithExpectLastSequencePerSubject(last.Sequence))
				if err == nil {
					return ack.Sequence, nil
				}
				if !wrongLastSeq(err) {
					return 0, err
				}
			}
		}
	}
	return 0, fmt.Errorf("%w: %w", jetstream.ErrKeyExists, err)
}

// wrongLastSeq reports whether a publish was refused by its expected last
// sequence: code 10071, or 10164 from a replicated (R>1) stream.
func wrongLastSeq(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && (apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
		apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant)
}

// kvStream is the stream behind a bucket.
func (b *bus) kvStream(ctx context.Context, bucket string) (jetstream.Stream, error) {
	return b.js.Stream(ctx, "KV_"+bucket)
}

// putSession stores a session's registry entry at revision rev (0 and
// create: a new one).
func (b *bus) putSession(ctx context.Context, r *SessionInfo, rev uint64, create bool) (uint64, error) {
	return b.kvWrite(ctx, BucketSessions, r.ID, b.encodeSession(r), rev, create)
}

// encodeSession is a session's registry entry as it is stored: revision
// 1's fields (encodeRecord), and its worktree (revision 4), the session
// it continues (From) and its count of background tasks besides when
// b.recordWorktree allows it. Every process reads the registry, and one
// of revision 1 refuses a record with a field it does not know: these
// are written, as batches are (batch.go), only while the agent knows of
// no reader of a revision before 3 (a revision 2 reader ignores the
// fields, but cannot be told from a revision 1 one by its consumers).
// Without the worktree a failover still resumes in the worktree's folder
// (the record's cwd), without the worktree's commands; without From a
// resumed session shows no history; without Tasks the list shows no
// background work (the session's own events still do). A client that
// rewrites a record (marking it orphaned) keeps what the agent wrote.
func (b *bus) encodeSession(r *SessionInfo) []byte {
	if (r.Worktree != nil || r.From != "" || r.Tasks > 0) && (b.recordWorktree == nil || b.recordWorktree()) {
		if data, err := json.Marshal(r); err == nil {
			return data
		}
	}
	return encodeRecord("session", r)
}

// revisions remembers the wire revision each agent advertises, by agent
// and start time (an agent restarted under the same id may be of another
// release).
type revisions struct {
	mu sync.Mutex
	m  map[string]agentRevision
}

type agentRevision struct {
	started time.Time
	rev     int
}

// agentWire is the wire revision a live agent advertises on its registry
// entry: 1 when it advertises none (or when it cannot be read).
func (c *Client) agentWire(ctx context.Context, rec agentRecord) int {
	c.revs.mu.Lock()
	if r, ok := c.revs.m[rec.ID]; ok && r.started.Equal(rec.Started) {
		c.revs.mu.Unlock()
		return r.rev
	}
	c.revs.mu.Unlock()
	st, err := c.b.kvStream(ctx, BucketAgents)
	if err != nil {
		return 1
	}
	m, err := st.GetLastMsgForSubject(ctx, kvSubject(BucketAgents, rec.ID))
	if err != nil {
		return 1
	}
	if m.Header.Get(kvOp) != "" {
		// The agent deleted its entry: it left, handing its sessions
		// over. A client without the registry's watch (NATS permissions
		// without consumers on the registry) learns it here; the agent
		// holds back no one for the lapses it would still count as live.
		c.judge.forget(rec.ID)
		return WireRevision
	}
	rev := wireOf(m.Header)
	c.revs.mu.Lock()
	defer c.revs.mu.Unlock()
	if c.revs.m == nil || len(c.revs.m) > 4096 {
		c.revs.m = map[string]agentRevision{}
	}
	c.revs.m[rec.ID] = agentRevision{started: rec.Started, rev: rev}
	return rev
}

// oldestAgentWire is the lowest revision among the live agents (any of
// them may take a start request from the queue); WireRevision with none.
func (c *Client) oldestAgentWire(ctx context.Context) int {
	agents, err := c.liveAgents(ctx)
	if err != nil {
		return OldestWireRevision
	}
	rev := WireRevision
	for _, a := range agents {
		rev = min(rev, c.agentWire(ctx, a))
	}
	return rev
}
