package cluster

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/tetherhq/tether/host"
	"github.com/tetherhq/tether/team"
)

// Subjects, streams and buckets. Everything is versioned (v1): a later,
// incompatible wire format gets new names and can run beside this one.
const (
	subjectPrefix = "tether.v1."
	// subjectStart is the work queue of start requests (stream StreamStart).
	subjectStart = subjectPrefix + "start"
	// subjectEvents + id: a session's events (stream StreamEvents).
	subjectEvents = subjectPrefix + "ev."
	// subjectTranscript + id: a session's transcript chunks (stream
	// StreamTranscripts).
	subjectTranscript = subjectPrefix + "tx."
	// subjectCommand + id: request/reply commands, served by the owner.
	subjectCommand = subjectPrefix + "cmd."

	// StreamStart is the work-queue stream of start requests.
	StreamStart = "TETHER_V1_START"
	// StreamEvents keeps every session's events, one subject per session.
	StreamEvents = "TETHER_V1_EVENTS"
	// StreamTranscripts mirrors every session's CLI transcript.
	StreamTranscripts = "TETHER_V1_TRANSCRIPTS"
	// BucketSessions is the registry of sessions (no TTL).
	BucketSessions = "tether_v1_sessions"
	// BucketAgents is the registry of live agents: each key expires unless
	// its agent refreshes it (the bucket's TTL is 3 heartbeats).
	BucketAgents = "tether_v1_agents"

	consumerAgents = "tether-v1-agents"

	// Headers.
	hdrMsgID   = "Nats-Msg-Id"
	hdrSeq     = "Tether-Seq"
	hdrReply   = "Tether-Reply"
	hdrOffset  = "Tether-Offset"
	hdrCLISess = "Tether-CLI-Session"
	hdrPart    = "Tether-Part"
)

// Size limits of the messages this package reads. A bigger message is
// refused with ErrTooLarge and has no effect.
const (
	// MaxCommandSize bounds a command (a prompt and its images included);
	// the NATS server's max_payload (1 MiB by default) may be lower.
	MaxCommandSize = 16 << 20
	// MaxStartSize bounds a start request.
	MaxStartSize = 64 << 10
	// MaxRecordSize bounds a registry record.
	MaxRecordSize = 16 << 10
	// transcriptChunk is the size of the transcript chunks published.
	transcriptChunk = 256 << 10
)

// idPattern is what session and agent ids look like: they are subject
// tokens and KV keys, so no dots, wildcards or spaces.
var idPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

func validID(id string) bool { return idPattern.MatchString(id) }

// startRequest asks an agent with room to start a session (or to take over
// one whose agent died: Failover).
type startRequest struct {
	ID                 string `json:"id"`
	Cwd                string `json:"cwd,omitempty"`
	Model              string `json:"model,omitempty"`
	PermissionMode     string `json:"permission_mode,omitempty"`
	AppendSystemPrompt string `json:"append_system_prompt,omitempty"`
	Resume             string `json:"resume,omitempty"`
	Fork               bool   `json:"fork,omitempty"`
	Title              string `json:"title,omitempty"`
	Failover           bool   `json:"failover,omitempty"`
	// Restore names the session whose mirrored transcript is restored
	// before resuming Resume (a session of another agent, ended or gone).
	Restore string `json:"restore,omitempty"`
	// Worktree runs the session in a git worktree of its own
	// (host.StartRequest.Worktree), made by the agent in the repository
	// of Cwd. Wire revision 4: it goes only to a fleet whose live agents
	// all speak 4 (an older agent would ignore it and start in Cwd).
	Worktree bool `json:"worktree,omitempty"`
	// Continue: this session takes the place of Restore's, which ended on
	// its own (its CLI exited; not closed) and which a person asked to
	// resume. It goes on in that session's worktree, if it had one, and
	// Restore's entry is marked closed as this one starts (so it leaves
	// the list, and two resumes of it cannot both go on). Wire revision
	// 4: an older agent ignores it and resumes the conversation in Cwd,
	// leaving the old entry listed; a session with a worktree is not
	// resumed while such an agent is live.
	Continue bool      `json:"continue,omitempty"`
	Expires  time.Time `json:"expires"`
	// Identity is who asks (the caller's ctx, team.FromContext): an
	// agent with a team checks it against the policy (a new session) or
	// the session's ACL (a failover), and refuses a request without one.
	Identity *team.Identity `json:"identity,omitempty"`

	onQueued func(int) // the caller's, not sent
	// fresh: the id was made up for this start, so a registry entry
	// under it is this start's (not sent; Client.startedMeanwhile).
	fresh bool
}

func (r *startRequest) validate() error {
	switch {
	case r.ID == "":
		return &UnsupportedError{What: "a start request without a session id"}
	case !validID(r.ID):
		return fmt.Errorf("bad session id")
	case r.Expires.IsZero():
		return &UnsupportedError{What: "a start request without an expiry"}
	case r.Failover && (r.Resume != "" || r.Fork):
		return fmt.Errorf("failover with resume or fork")
	case r.Restore != "" && (r.Resume == "" || !validID(r.Restore)):
		return fmt.Errorf("bad restore")
	case r.Continue && (r.Restore == "" || r.Failover || r.Worktree):
		return fmt.Errorf("continue without restore, or with failover or worktree")
	case r.Worktree && (r.Failover || r.Resume != ""):
		// A failover continues in the session's own worktree (its
		// record's); a conversation continues in the folder it ran in.
		return fmt.Errorf("worktree with failover or resume")
	}
	return checkIdentity(r.Identity)
}

// startReply answers a start request on its reply subject.
type startReply struct {
	Session *SessionInfo `json:"session,omitempty"`
	Error   *wireError   `json:"error,omitempty"`
}

type wireError struct {
	Code    string `json:"code"`
	Message string `json:"message,omitempty"`
}

// commandMsg is a command on the bus: a host.Command, unchanged, and who
// sent it. The agent checks its shape here and runs it with
// host.Session.Do, which applies the session's policy (with a team: the
// person's access to the session, from the identity).
type commandMsg struct {
	host.Command
	// Identity is the person the front end signed in (the caller's ctx,
	// team.FromContext); nil without teams. An agent with a team refuses
	// a command without one.
	Identity *team.Identity `json:"identity,omitempty"`
}

func (c *commandMsg) validate() error {
	if !knownCommand(c.Type) {
		return &UnsupportedError{What: fmt.Sprintf("command type %q", clip(string(c.Type), 40))}
	}
	if err := c.Validate(&host.CommandPolicy{AllowBypassPermissions: true, MaxImageBytes: MaxCommandSize}); err != nil {
		return err
	}
	return checkIdentity(c.Identity)
}

// snapshotMsg is the body of a snapshot request (hdrOp opSnapshot): who
// asks. An empty body asks for nobody (no teams).
type snapshotMsg struct {
	Identity *team.Identity `json:"identity,omitempty"`
}

func (m *snapshotMsg) validate() error { return checkIdentity(m.Identity) }

// hdrOp marks a request on a session's command subject that is not a
// command: "snapshot".
const (
	hdrOp      = "Tether-Op"
	opSnapshot = "snapshot"
)

func (r *startReply) validate() error {
	if r.Session != nil {
		return r.Session.validate()
	}
	return nil
}

func (r *commandReply) validate() error { return nil }

// commandReply answers a command: host.Session.Do's result or error
// (its stable code).
type commandReply struct {
	Result *host.CommandResult `json:"result,omitempty"`
	Error  *wireError          `json:"error,omitempty"`
}

// agentRecord is an agent's entry in BucketAgents, refreshed every
// heartbeat.
type agentRecord struct {
	ID        string    `json:"id"`
	Capacity  int       `json:"capacity"`
	Sessions  int       `json:"sessions"`
	Heartbeat time.Time `json:"heartbeat"`
	Started   time.Time `json:"started"`
}

func (r *agentRecord) validate() error {
	if !validID(r.ID) {
		return fmt.Errorf("bad agent id")
	}
	return nil
}

// SessionInfo is a session as the registry knows it.
type SessionInfo struct {
	ID string `json:"id"`
	// Agent is the agent that runs (or last ran) the session.
	Agent string `json:"agent"`
	// State is the session's liveness state ("idle", "thinking", …), or
	// "disconnected" when its agent is gone.
	State string `json:"state"`
	// Ended: the session's CLI ended for good on a live agent (Closed: by
	// a close command); it can still be resumed from its mirrored
	// transcript as a new session (StartOptions.Resume).
	Ended  bool `json:"ended,omitempty"`
	Closed bool `json:"closed,omitempty"`
	// Seq is the sequence number of the last event the agent published.
	Seq        uint64    `json:"seq"`
	LastEvent  time.Time `json:"last_event"`
	CostUSD    float64   `json:"cost_usd"`
	Cwd        string    `json:"cwd,omitempty"`
	Model      string    `json:"model,omitempty"`
	Title      string    `json:"title,omitempty"`
	LastPrompt string    `json:"last_prompt,omitempty"`
	CLISession string    `json:"cli_session,omitempty"`
	Created    time.Time `json:"created"`
	Updated    time.Time `json:"updated"`
	// Orphaned: its agent is gone and a client has marked it so (with a
	// "disconnected" event); a takeover clears it.
	Orphaned bool `json:"orphaned,omitempty"`
	// Moving: its agent drained and handed it over; an agent with room
	// takes it over from the work queue (a takeover clears it).
	Moving bool `json:"moving,omitempty"`
	// Person is the Subject of who started the session, when the agent
	// serves a team (its running sessions count against max_sessions);
	// the ACL in the team's store is what access is checked against.
	Person string `json:"person,omitempty"`
	// Takeovers counts failovers of the session.
	Takeovers int `json:"takeovers,omitempty"`
	// Owners are the agents that ran the session before Agent (the
	// latest maxOwners): event readers accept the session's earlier
	// events from them.
	Owners []string `json:"owners,omitempty"`
	// Worktree is the session's own git worktree (a start with
	// Worktree): where it is, its branch and base, what became of it. A
	// failover continues in it. Wire revision 4, beyond revision 1's
	// shape: written into the registry only while the agent knows of no
	// reader of an earlier revision than 3 (recordWorktree), always in a
	// start reply to a client of revision 2 or later.
	Worktree *host.WorktreeInfo `json:"worktree,omitempty"`
	// From is the session whose conversation this one continues: the
	// ended session it was resumed in place of, or the cluster session
	// whose conversation a start with Resume took up. Its mirrored
	// transcript is this session's history (Client.History). An agent of
	// an earlier release leaves it out; readers of one ignore it.
	From string `json:"from,omitempty"`
	// Tasks is how many background tasks the session's CLI runs, watchers
	// left out (host.SessionInfo.Tasks), in its record as the worktree is; an
	// agent of an earlier release leaves it out.
	Tasks int `json:"tasks,omitempty"`
}

// clone is a copy of r that shares nothing with it.
func (r *SessionInfo) clone() SessionInfo {
	c := *r
	c.Owners = slices.Clone(r.Owners)
	if r.Worktree != nil {
		w := *r.Worktree
		c.Worktree = &w
	}
	return c
}

// maxOwners bounds SessionInfo.Owners; events of agents older than that
// are skipped by readers.
const maxOwners = 16

func (r *SessionInfo) validate() error {
	if !validID(r.ID) || (r.Agent != "" && !validID(r.Agent)) || (r.From != "" && !validID(r.From)) {
		return fmt.Errorf("bad id")
	}
	return nil
}

type validator interface{ validate() error }

// decode reads one message of the bus by the compatibility rule
// (docs/cluster.md, "Compatibility"): within max bytes, one JSON value of
// the right shape, valid by v's rules. Fields it does not know are
// ignored: a later revision may add them. A message that names an
// operation this release does not know, or lacks what it needs, is an
// *UnsupportedError (v's validate says so); anything else wrong is a
// *MessageError (ErrMalformed, ErrTooLarge). Neither quotes the payload.
func decode(subject string, data []byte, max int, v validator) error {
	if len(data) > max {
		return &MessageError{Subject: subject, Reason: fmt.Sprintf("%d bytes, limit %d", len(data), max), Err: ErrTooLarge}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(v); err != nil {
		return &MessageError{Subject: subject, Reason: jsonReason(err), Err: ErrMalformed}
	}
	if dec.More() {
		return &MessageError{Subject: subject, Reason: "trailing data", Err: ErrMalformed}
	}
	if err := v.validate(); err != nil {
		var ue *UnsupportedError
		if errors.As(err, &ue) {
			if ue.Subject == "" {
				ue.Subject = subject
			}
			return ue
		}
		return &MessageError{Subject: subject, Reason: err.Error(), Err: ErrMalformed}
	}
	return nil
}

// decodeFrom is decode for a message whose headers name the writer's wire
// revision: an *UnsupportedError names it.
func decodeFrom(subject string, h nats.Header, data []byte, max int, v validator) error {
	err := decode(subject, data, max, v)
	var ue *UnsupportedError
	if errors.As(err, &ue) {
		ue.Revision = wireOf(h)
	}
	return err
}

// jsonReason describes a decoding error without quoting the input.
func jsonReason(err error) string {
	switch e := err.(type) {
	case *json.SyntaxError:
		return fmt.Sprintf("invalid JSON at offset %d", e.Offset)
	case *json.UnmarshalTypeError:
		return fmt.Sprintf("field %q: want %s", e.Field, e.Type)
	}
	if s := err.Error(); len(s) < 120 {
		return s // "unexpected EOF"
	}
	return "invalid JSON"
}
