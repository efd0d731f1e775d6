package team

import "time"

// ShareLevel is what a share grants on a session.
type ShareLevel string

// The share levels. A viewer watches (list, subscribe, snapshot,
// history); a collaborator also sends prompts, answers approvals and
// questions, interrupts and changes the mode and model, as the owner
// does. Only the owner (and admins) share and close.
const (
	ShareViewer       ShareLevel = "viewer"
	ShareCollaborator ShareLevel = "collaborator"
)

// Grant shares a session with one person (by Subject) or one group.
// Exactly one of Person and Group is set.
type Grant struct {
	Person string     `json:"person,omitempty"`
	Group  string     `json:"group,omitempty"`
	Level  ShareLevel `json:"level"`
}

// ACL says whose a session is and with whom it is shared. It is stored
// beside the session (Store) from the moment it starts, so every place
// that checks access reads the same one.
type ACL struct {
	Session   string    `json:"session"`    // the session's id (serve's and the cluster's)
	Owner     string    `json:"owner"`      // the Subject of who started it
	OwnerName string    `json:"owner_name"` // for lists
	Cwd       string    `json:"cwd,omitempty"`
	Grants    []Grant   `json:"grants,omitempty"`
	Created   time.Time `json:"created"`

	// OwnerRole is the owner's role when the session started: whose
	// policy (the daily budget) a turn's cost counts against.
	OwnerRole Role `json:"owner_role,omitempty"`
}

// Access is what one person may do on one session, from least to most.
type Access int

// The access levels, ordered: a check asks for at least one of them.
const (
	AccessNone        Access = iota // the session is invisible
	AccessView                      // watch only
	AccessCollaborate               // act as the owner does, but not share or close
	AccessOwn                       // the owner, or an admin
)

func (a Access) String() string {
	switch a {
	case AccessView:
		return "viewer"
	case AccessCollaborate:
		return "collaborator"
	case AccessOwn:
		return "owner"
	}
	return "none"
}

// Access is what id may do on the session: admins own every session; the
// owner owns it; otherwise the strongest grant naming the person or one
// of their groups. A viewer's role caps them at AccessView whatever they
// were granted. A nil identity or ACL has no access.
func (a *ACL) Access(id *Identity) Access {
	if a == nil || id == nil || id.Subject == "" {
		return AccessNone
	}
	if id.Role == RoleAdmin || id.Subject == a.Owner {
		return AccessOwn
	}
	best := AccessNone
	for _, g := range a.Grants {
		if (g.Person != "" && g.Person == id.Subject) || (g.Group != "" && id.InGroup(g.Group)) {
			lvl := AccessView
			if g.Level == ShareCollaborator {
				lvl = AccessCollaborate
			}
			best = max(best, lvl)
		}
	}
	if id.Role == RoleViewer {
		best = min(best, AccessView)
	}
	return best
}
