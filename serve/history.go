package serve

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/host"
	"github.com/tetherhq/tether/internal/history"
)

// History is the conversation a session had before this server started
// it: a session resumed or forked from the CLI's session file. The CLI
// does not repeat it on stdout, so without it a client would show a
// resumed session as empty.
type History struct {
	// Source is the CLI session id the history was read from.
	Source string `json:"source"`
	// Messages are the earlier user and assistant messages, oldest
	// first, shaped as the CLI's stream-json stdout lines ({"type":
	// "user"|"assistant", "uuid", "message", "tool_use_result"}), so a
	// client renders them as it renders Snapshot.Transcript. Subagent
	// (sidechain) messages and messages the CLI made up for the model
	// (isMeta) are left out. In file order.
	Messages []json.RawMessage `json:"messages"`
	// Dropped counts the older messages past the bound (see
	// LocalOptions.MaxHistory) that are not included.
	Dropped int `json:"dropped,omitempty"`
	// Resolved are the approvals answered in the earlier conversation,
	// as its session's snapshot had them (host.Snapshot.Resolved), when
	// this server ran it: a session brought back with the resume command
	// still says who allowed its earlier calls. The CLI's session file
	// does not record it, so a conversation resumed from disk has none.
	Resolved []host.ResolvedApproval `json:"resolved,omitempty"`
	// Items are Messages as transcript items, for a client that
	// subscribed with items (Messages is then left out).
	Items []Item `json:"items,omitempty"`
}

// Historian is a Backend that knows the earlier conversation of the
// sessions it resumed or forked from disk. The server adds it to each
// snapshot it sends (the snapshot's "history" field). Optional: a
// Backend without it sends snapshots without history. A Backend may
// implement host.Historian instead (the cluster's, which does not import
// this package); this one is asked first.
type Historian interface {
	// History returns the session's earlier conversation, nil when it
	// has none (a new session).
	History(ctx context.Context, id string) (*History, error)
}

// snapshotJSON is a snapshot as the protocol sends it: host.Snapshot's
// fields and the history, when there is one.
type snapshotJSON struct {
	*host.Snapshot
	History *History `json:"history,omitempty"`
	// Items are the transcript's items, for a client that subscribed
	// with items (Transcript is then empty).
	Items []Item `json:"items,omitempty"`
}

// withItems returns sn as a client that asked for items gets it: its
// history and transcript derived into items by z (which goes on from
// there), the CLI's lines left out. sn is not changed (its history may
// be shared).
func withItems(sn *snapshotJSON, z *Itemizer) *snapshotJSON {
	cp := *sn.Snapshot
	out := &snapshotJSON{Snapshot: &cp}
	if sn.History != nil {
		h := *sn.History
		var l itemList
		for _, m := range h.Messages {
			l.put(z.Add(m))
		}
		h.Messages, h.Items = nil, l.items
		out.History = &h
	}
	var l itemList
	for _, m := range sn.Transcript {
		l.put(z.Add(m))
	}
	cp.Transcript = []json.RawMessage{}
	out.Items = l.items
	return out
}

// itemsAt returns an Itemizer in the state it has after the session's
// event after (the client had that far), and false when it cannot be
// had (the events before are gone, after is past the session's last
// event): the client then gets a snapshot. The Itemizer needs the
// running turn's events before after, which a snapshot has when nothing
// happened since; else it replays the journal from its start.
func (s *Server) itemsAt(ctx context.Context, id string, after uint64) (*Itemizer, bool, error) {
	sn, err := s.fullSnapshot(ctx, id)
	if err != nil {
		return nil, false, err
	}
	z := NewItemizer()
	switch {
	case sn.Seq < after:
		return nil, false, nil
	case sn.Seq == after:
		withItems(sn, z)
		return z, true, nil
	}
	if sn.History != nil {
		for _, m := range sn.History.Messages {
			z.Add(m)
		}
	}
	if after == 0 {
		return z, true, nil
	}
	for e, err := range s.b.Events(ctx, id, 0) {
		if err != nil {
			if errors.Is(err, host.ErrResync) {
				return nil, false, nil
			}
			return nil, false, err
		}
		if e.Kind == host.EventMessage {
			z.Add(e.Data)
		}
		if e.Seq >= after {
			return z, e.Seq == after, nil
		}
	}
	return nil, false, ctx.Err()
}

// fullSnapshot returns the session's snapshot with its history.
func (s *Server) fullSnapshot(ctx context.Context, id string) (*snapshotJSON, error) {
	sn, err := s.b.Snapshot(ctx, id)
	if err != nil {
		return nil, err
	}
	out := &snapshotJSON{Snapshot: sn}
	switch h := s.b.(type) {
	case Historian:
		hist, err := h.History(ctx, id)
		if err != nil {
			return nil, err
		}
		out.History = hist
	case host.Historian: // a backend of another package (the cluster's)
		hist, err := h.History(ctx, id)
		if err != nil {
			return nil, err
		}
		out.History = fromHost(hist)
	}
	return out, nil
}

// readHistory reads the user and assistant messages of a session file,
// keeping the last maxMsgs of them and at most maxBytes. A torn or
// unknown line is skipped; a file that cannot be read gives what was
// read before the failure (nil when nothing).
func readHistory(path, source string, maxMsgs, maxBytes int) *History {
	return fromHost(history.Read(claude.ReadSession(path), source, maxMsgs, maxBytes))
}

// fromHost is h in the protocol's form.
func fromHost(h *host.History) *History {
	if h == nil {
		return nil
	}
	return &History{Source: h.Source, Messages: h.Messages, Dropped: h.Dropped, Resolved: h.Resolved}
}
