package cluster

import (
	"context"
	"errors"
	"fmt"
	"unicode"
	"unicode/utf8"

	"github.com/tetherhq/tether/host"
	"github.com/tetherhq/tether/team"
)

// Bounds of an identity on the bus. The front end resolved it; the agent
// only refuses shapes no front end makes, so that a hand-made message
// cannot smuggle a huge or odd identity into the audit log or the ACL
// checks.
const (
	maxIdentityField = 320 // Subject, Email (an e-mail address is at most 320 bytes)
	maxIdentityName  = 256
	maxIdentityAddr  = 128
	maxGroups        = 64
	maxGroupName     = 128
)

// checkIdentity reports what is wrong with an identity that came over the
// bus (nil means nothing; a nil identity is checked by the caller).
func checkIdentity(id *team.Identity) error {
	if id == nil {
		return nil
	}
	field := func(name, v string, max int, required bool) error {
		switch {
		case v == "" && required:
			return fmt.Errorf("identity: no %s", name)
		case len(v) > max:
			return fmt.Errorf("identity: %s over %d bytes", name, max)
		case !printable(v):
			return fmt.Errorf("identity: %s is not printable UTF-8", name)
		}
		return nil
	}
	if err := field("subject", id.Subject, maxIdentityField, true); err != nil {
		return err
	}
	if err := field("email", id.Email, maxIdentityField, false); err != nil {
		return err
	}
	if err := field("name", id.Name, maxIdentityName, false); err != nil {
		return err
	}
	if err := field("addr", id.Addr, maxIdentityAddr, false); err != nil {
		return err
	}
	if len(id.Groups) > maxGroups {
		return fmt.Errorf("identity: over %d groups", maxGroups)
	}
	for _, g := range id.Groups {
		if err := field("group", g, maxGroupName, true); err != nil {
			return err
		}
	}
	if !id.Role.Valid() {
		return fmt.Errorf("identity: role %q is not admin, member or viewer", clipRole(string(id.Role)))
	}
	return nil
}

func clipRole(s string) string {
	if len(s) > 16 || !printable(s) {
		return "?"
	}
	return s
}

// printable: valid UTF-8 without control characters.
func printable(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return false
		}
	}
	return true
}

// ctxIdentity is the identity a caller's ctx carries (team.NewContext), or
// nil: it travels with the command, start or snapshot request.
func ctxIdentity(ctx context.Context) *team.Identity {
	id, _ := team.FromContext(ctx)
	return id
}

// errNoIdentity refuses, at an agent with a team, a request that names
// nobody: the agent does not run anonymous commands.
var errNoIdentity = &host.CommandError{Code: host.CodeForbidden, Err: errors.Join(team.ErrUnauthenticated, host.ErrForbidden),
	Message: "this agent serves a team: the request carries no identity"}
