package host

import (
	"context"
	"encoding/json"
)

// History is the conversation a session had before its backend started
// it: a session resumed or forked from a conversation the CLI kept (its
// session file, or a cluster's mirror of it). The CLI does not repeat it
// on stdout, so without it a front end would show a resumed session as
// empty. tether serve sends it in each snapshot (serve.History is its
// form in the browser protocol).
type History struct {
	// Source is the CLI session id the history was read from.
	Source string `json:"source"`
	// Messages are the earlier user and assistant messages, oldest
	// first, shaped as the CLI's stream-json stdout lines ({"type":
	// "user"|"assistant", "uuid", "message", "tool_use_result"}), so a
	// front end renders them as it renders Snapshot.Transcript. Subagent
	// (sidechain) messages and messages the CLI made up for the model
	// (isMeta) are left out.
	Messages []json.RawMessage `json:"messages"`
	// Dropped counts the older messages past the backend's bound that
	// are not included.
	Dropped int `json:"dropped,omitempty"`
	// Resolved are the approvals answered in the earlier conversation,
	// oldest first, when the backend knows them (a lone serve from the
	// sessions it ran, the cluster from their events; the session file
	// does not record who answered).
	Resolved []ResolvedApproval `json:"resolved,omitempty"`
}

// Historian is a Backend that knows the earlier conversation of the
// sessions it resumed or forked. Optional: front ends show a session of
// a Backend without it from its own events only. It is declared here,
// beside Backend, so that a backend in a package that does not import
// serve (the cluster's) can offer it.
type Historian interface {
	// History returns the session's earlier conversation, nil when it
	// has none (a new session).
	History(ctx context.Context, id string) (*History, error)
}
