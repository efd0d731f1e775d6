package claude

import (
	"context"
	"encoding/json"
)

// Messages from other sessions ("peers"): CLI 2.1.332 can hold a
// cross-session message instead of queueing it (a *PeerMessageHoldMessage
// says so), and a host that lets a person answer says so with
// SetPeerDelivery and passes the person's answer with
// DecideHeldPeerMessage. Neither request is in the TypeScript SDK's
// declarations: they are typed from the CLI's own schema, which marks them
// internal, and an older CLI refuses both (ErrUnsupportedRequest).

// Peer delivery scopes and session classes.
const (
	// PeerScopeMine covers messages from the person's own sessions;
	// PeerScopeAnyone, from anyone.
	PeerScopeMine   = "mine"
	PeerScopeAnyone = "anyone"
	// PeerSessionPrompting is a session that asks before acting;
	// PeerSessionBypass, one that bypasses permissions.
	PeerSessionPrompting = "prompting"
	PeerSessionBypass    = "bypass"
)

// PeerAlways is a person's choice to always deliver such messages.
type PeerAlways struct {
	Scope string `json:"scope"` // PeerScopeMine or PeerScopeAnyone
	// MadeIn is the kind of session whose risk the person was shown: the
	// held message's SessionClass.
	MadeIn string `json:"made_in"`
}

// PeerSessionChoice is an always-deliver choice for one conversation.
type PeerSessionChoice struct {
	PeerAlways
	SessionID string `json:"session_id"`
}

// SetPeerDeliveryParams say what the host knows about delivering
// messages from other sessions. A field left nil stays as it is.
type SetPeerDeliveryParams struct {
	// ShowsHeldMessages true: the host lets a person answer held
	// messages; held messages then carry a preview, and a hold on
	// mismatched permission modes lasts until answered.
	ShowsHeldMessages *bool `json:"shows_held_messages,omitempty"`
	// Session is the person's choice to always deliver in the
	// conversation its SessionID names; EndSession ends such a choice
	// (sent as null) and wins over Session.
	Session    *PeerSessionChoice `json:"-"`
	EndSession bool               `json:"-"`
	// Account is the choice to always deliver messages from the person's
	// own sessions, in every conversation; send false when the signed-in
	// account changes.
	Account *bool `json:"account,omitempty"`
}

// MarshalJSON writes Session as the CLI wants it: absent, null or the
// choice.
func (p SetPeerDeliveryParams) MarshalJSON() ([]byte, error) {
	type plain SetPeerDeliveryParams
	w := struct {
		plain
		Session any `json:"session,omitempty"`
	}{plain: plain(p)}
	switch {
	case p.EndSession:
		w.Session = json.RawMessage("null")
	case p.Session != nil:
		w.Session = p.Session
	}
	return json.Marshal(w)
}

// PeerAlwaysDeliver is what the session now always delivers.
type PeerAlwaysDeliver struct {
	// Session is the conversation's choice, nil when there is none.
	Session *PeerSessionAlways `json:"session"`
	Account bool               `json:"account"`
}

// PeerSessionAlways is a conversation's always-deliver choice in force.
type PeerSessionAlways struct {
	PeerSessionChoice
	// Paused is true while a choice made in a prompting session meets a
	// session that bypasses permissions.
	Paused bool `json:"paused"`
}

// SetPeerDeliveryResult answers SetPeerDelivery.
type SetPeerDeliveryResult struct {
	AlwaysDeliver PeerAlwaysDeliver `json:"always_deliver"`
	Raw           json.RawMessage   `json:"-"`
}

// SetPeerDelivery tells the CLI what the host knows about delivering
// messages from other sessions (set_peer_delivery, CLI 2.1.332). Both
// choices lift only holds on mismatched permission modes. The CLI accepts
// it from the host that started it only.
func (s *Session) SetPeerDelivery(ctx context.Context, params *SetPeerDeliveryParams) (*SetPeerDeliveryResult, error) {
	if params == nil {
		params = &SetPeerDeliveryParams{}
	}
	r := &SetPeerDeliveryResult{}
	if err := s.requestInto(ctx, "set_peer_delivery", params, r, &r.Raw); err != nil {
		return nil, err
	}
	return r, nil
}

// Decisions on a held peer message.
const (
	PeerDecisionDeliver = "deliver"
	PeerDecisionDrop    = "drop"
)

// DecideHeldPeerMessageParams are a person's answer to a held message.
type DecideHeldPeerMessageParams struct {
	// HoldID is the PeerMessageHoldMessage.HoldID the person answered.
	HoldID   string `json:"hold_id"`
	Decision string `json:"decision"` // PeerDecisionDeliver or PeerDecisionDrop
	// Always, only with deliver, also delivers such messages for the
	// rest of the conversation.
	Always *PeerAlways `json:"always,omitempty"`
}

// DecideHeldPeerMessageResult answers DecideHeldPeerMessage.
type DecideHeldPeerMessageResult struct {
	// Outcome: delivered; waiting (delivered when the queue has room);
	// denied, refused, dropped (as on the hold message); not-decidable (a
	// setting holds it, and it stays held); gone (already released or
	// dropped, or never held).
	Outcome       string            `json:"outcome"`
	AlwaysDeliver PeerAlwaysDeliver `json:"always_deliver"`
	Raw           json.RawMessage   `json:"-"`
}

// DecideHeldPeerMessage passes a person's answer to a held message from
// another session (decide_held_peer_message, CLI 2.1.332). Send it only
// for a person's own press.
func (s *Session) DecideHeldPeerMessage(ctx context.Context, params *DecideHeldPeerMessageParams) (*DecideHeldPeerMessageResult, error) {
	if params == nil {
		params = &DecideHeldPeerMessageParams{}
	}
	r := &DecideHeldPeerMessageResult{}
	if err := s.requestInto(ctx, "decide_held_peer_message", params, r, &r.Raw); err != nil {
		return nil, err
	}
	return r, nil
}
