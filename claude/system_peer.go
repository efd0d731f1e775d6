package claude

// PeerMessageHoldMessage (system/peer_message_hold): a message from
// another session that this session's receive-side policy held instead of
// queueing, and how the hold ended. CLI 2.1.331 writes State, Lane,
// From and the reasons; 2.1.332 adds HoldID, CanDeliver, AlwaysScope,
// SessionClass, VerifiedPID and Preview, for a host that lets a person
// answer (Session.SetPeerDelivery, Session.DecideHeldPeerMessage). Not in
// the TypeScript SDK's declarations: typed from the CLI's schema, which
// marks it internal.
type PeerMessageHoldMessage struct {
	Meta
	// State is "held" (again when the cause changes), then at most one
	// of "released" (it enters the queue) or "dropped" (see Outcome).
	State string `json:"state"`
	// MessageUUID is the held command's uuid, which its later lifecycle
	// frames carry; for lane "socket" it was minted by this session.
	MessageUUID string `json:"message_uuid,omitempty"`
	// Lane is the way it came in: bridge, stdin or socket.
	Lane string `json:"lane"`
	// From and FromName are what the sender says it is: labels, not
	// proof of identity.
	From     string `json:"from"`
	FromName string `json:"from_name,omitempty"`
	// Cause says why it is held (state held): explicit-setting,
	// managed-setting, repo-setting, invalid-setting, bypass-default,
	// mode-unknown, mode-mismatch, no-mode-asserted.
	Cause string `json:"cause,omitempty"`
	// Outcome (state dropped): expired, refused, dropped, discarded,
	// denied; Reason says which check dropped it (rate-limited,
	// duplicate, hop-loop, hop-runaway, queue-full, unverified).
	Outcome string `json:"outcome,omitempty"`
	Reason  string `json:"reason,omitempty"`
	// HoldID is the handle for DecideHeldPeerMessage, the same on every
	// frame of one message (2.1.332).
	HoldID string `json:"hold_id,omitempty"`
	// CanDeliver says whether a person may deliver it now (a person may
	// always drop it); AlwaysScope is the narrowest always-choice that
	// covers the sender; SessionClass is prompting or bypass, the risk to
	// show beside Always (2.1.332).
	CanDeliver   *bool  `json:"can_deliver,omitempty"`
	AlwaysScope  string `json:"always_scope,omitempty"`
	SessionClass string `json:"session_class,omitempty"`
	// VerifiedPID is the pid the kernel reported for a socket sender.
	VerifiedPID int `json:"verified_pid,omitempty"`
	// Preview is the sender's words, for a host that set
	// ShowsHeldMessages. Untrusted: keep it from every model until the
	// message is released.
	Preview *PeerMessagePreview `json:"preview,omitempty"`
}

// PeerMessagePreview is a held message's text as a person may see it.
type PeerMessagePreview struct {
	Text string `json:"text"`
	// TotalChars counts UTF-16 code units; OtherBlocks the images and
	// documents Text leaves out. IsWhole is false where Text was cut,
	// cleaned or leaves blocks out: say so beside it.
	TotalChars  int  `json:"total_chars"`
	OtherBlocks int  `json:"other_blocks"`
	IsWhole     bool `json:"is_whole"`
}

func (*PeerMessageHoldMessage) isMessage() {}
