package cluster

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/host"
	"github.com/tetherhq/tether/internal/jsapi"
)

// What a session no agent holds still answers: the commands that only
// read (host.CommandType.ReadOnly: changes, slash_commands), which a UI
// sends whenever it shows a session or a prompt begins with "/".
//
// On one machine host answers them for a session asleep or ended (still
// listed): its changes from the files, its slash commands from its last
// CLI. In a cluster no agent holds a session asleep (waking it to read
// would defeat the sleep) or one whose CLI ended. So the agent that puts
// a session to sleep, or sees its CLI end, writes both answers as they
// are then on subjectTranscript + id + suffixAnswers (beside the change
// record, on the agents' rights for the mirror), and a client answers
// from that record while the registry lists the session asleep or ended
// at the record's event number. A record of an earlier sleep, or none (an
// agent of an earlier release; NATS out of reach), leaves the command
// failing as before: ErrDisconnected for a session asleep, ErrNoSession
// for one ended. Such a session runs nothing, so what it changed is what
// it had changed then; the files are read again once it runs. Readers
// ignore members they do not know.
const suffixAnswers = "~answers"

// answersRecord is what a session answered as it left its agent.
type answersRecord struct {
	// Seq is the number of the session's last event then (its registry
	// entry's Seq).
	Seq uint64 `json:"seq"`
	// At is when it was written (for people reading the stream).
	At time.Time `json:"at"`
	// ChangesRead: Changes is the session's answer to "changes" (none
	// when it changed nothing); false when they could not be read.
	ChangesRead   bool                  `json:"changes_read,omitempty"`
	Changes       []host.FileChange     `json:"changes,omitempty"`
	SlashCommands []claude.SlashCommand `json:"slash_commands,omitempty"`
}

func (r *answersRecord) validate() error {
	if r.Seq == 0 {
		return errors.New("no event number")
	}
	return nil
}

// answersWait bounds reading the session's changes (files, git) for the
// record; the record is written without them past it.
const answersWait = 5 * time.Second

// recordAnswers writes the answers record of the session, its last event
// numbered seq, in at most answersWait plus two publish attempts. Changes
// that do not fit in a message lose their texts and diffs, largest
// first, and are listed too large to show (fitAnswers). A record not
// written is only logged: the commands are then refused, as before.
func (s *agentSession) recordAnswers(ctx context.Context, seq uint64) {
	rec := answersRecord{Seq: seq, At: time.Now().UTC(), SlashCommands: s.hs.SlashCommands()}
	cctx, cancel := context.WithTimeout(ctx, answersWait)
	changes, err := s.hs.Changes(cctx)
	cancel()
	if err == nil {
		rec.ChangesRead, rec.Changes = true, changes
	} else {
		s.log.Debug("answers recorded without changes", "err", err)
	}
	data, err := fitAnswers(&rec, int(s.a.b.nc.MaxPayload())-4<<10) // room for the headers
	if err != nil {
		s.log.Debug("answers not recorded", "err", err)
		return
	}
	m := stamp(nats.NewMsg(subjectTranscript + s.id + suffixAnswers))
	m.Data = data
	m.Header.Set(hdrMsgID, s.id+suffixAnswers+"."+strconv.FormatUint(seq, 10))
	pctx, cancel := context.WithTimeout(ctx, 2*jsapi.Attempt) // NATS away: the hand-off fails anyway
	defer cancel()
	if err := s.a.b.publishRetry(pctx, m); err != nil {
		s.log.Debug("answers not recorded", "err", err)
	}
}

// fitAnswers encodes r in at most limit bytes: the changed files' texts
// and diffs are left out, largest first, each file then listed too large
// to show, until it fits; slash commands go last.
func fitAnswers(r *answersRecord, limit int) ([]byte, error) {
	data, err := json.Marshal(r)
	if err != nil || len(data) <= limit {
		return data, err
	}
	cs := slices.Clone(r.Changes) // the session's own answer stays whole
	r.Changes = cs
	size := func(c *host.FileChange) int { return len(c.Diff) + len(c.Old) + len(c.New) }
	largest := make([]*host.FileChange, len(cs))
	for i := range cs {
		largest[i] = &cs[i]
	}
	slices.SortFunc(largest, func(a, b *host.FileChange) int { return cmp.Compare(size(b), size(a)) })
	over := len(data) - limit
	for _, c := range largest {
		if over <= 0 || size(c) == 0 {
			break
		}
		over -= size(c) // the escapes JSON adds only help
		c.Diff, c.Old, c.New, c.TooLarge = "", "", "", true
	}
	if data, err = json.Marshal(r); err != nil || len(data) <= limit {
		return data, err
	}
	r.SlashCommands = nil
	if data, err = json.Marshal(r); err != nil || len(data) <= limit {
		return data, err
	}
	return nil, fmt.Errorf("answers record of %d bytes, over the limit of %d", len(data), limit)
}

// recordedAnswer answers a command that only reads (typ) for session id,
// asleep or ended, from its answers record; ok is false when there is
// none for the registry's entry as it is, or it lacks the answer.
func (c *Client) recordedAnswer(ctx context.Context, id string, typ host.CommandType) (_ *host.CommandResult, ok bool) {
	r, _, err := c.record(ctx, id)
	if err != nil || !(isAsleep(&r) || r.Ended && !r.Closed) {
		return nil, false
	}
	subject := subjectTranscript + id + suffixAnswers
	m, err := c.b.tx.GetLastMsgForSubject(ctx, subject)
	if err != nil {
		if !errors.Is(err, jetstream.ErrMsgNotFound) {
			c.log.Debug("answers record not read", "session", id, "err", err)
		}
		return nil, false
	}
	var rec answersRecord
	if err := decodeFrom(subject, m.Header, m.Data, int(c.b.nc.MaxPayload()), &rec); err != nil {
		c.log.Warn("answers record skipped", "session", id, "err", err)
		return nil, false
	}
	if rec.Seq != r.Seq {
		return nil, false // of an earlier sleep or end
	}
	switch typ {
	case host.CommandChanges:
		if !rec.ChangesRead {
			return nil, false
		}
		return &host.CommandResult{Changes: rec.Changes, ChangesAsOf: rec.At}, true
	case host.CommandSlashCommands:
		return &host.CommandResult{SlashCommands: rec.SlashCommands}, true
	}
	return nil, false
}
