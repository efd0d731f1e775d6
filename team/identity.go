package team

import (
	"context"
	"net/http"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Role is what a person may do on the host as a whole.
type Role string

// The roles. An admin sees every session and may use bypassPermissions
// where the server allows it; a member starts sessions and acts on those
// they own or collaborate on; a viewer only watches sessions shared with
// them.
const (
	RoleAdmin  Role = "admin"
	RoleMember Role = "member"
	RoleViewer Role = "viewer"
)

// Valid reports whether r is one of the three roles.
func (r Role) Valid() bool { return r == RoleAdmin || r == RoleMember || r == RoleViewer }

// Identity is a signed-in person, as the front end established it (an
// OpenID Connect login, a trusted proxy's header) and the configuration
// resolved it (Role). It travels with every command, across the cluster
// too, so the place a session runs checks the same person.
type Identity struct {
	// Subject is the stable, unique name of the person: their e-mail
	// address, lower-cased, when the provider gives one, else the
	// provider's subject. Ownership, shares, spend and the audit log are
	// keyed by it.
	Subject string `json:"sub"`
	// Email is the verified e-mail address, if any.
	Email string `json:"email,omitempty"`
	// Name is the display name ("" = Subject).
	Name string `json:"name,omitempty"`
	// Groups are the person's groups from the provider's groups claim
	// or the configuration.
	Groups []string `json:"groups,omitempty"`
	// Role is the person's role, resolved from the configuration.
	Role Role `json:"role"`
	// Addr is the client's address the request came from, for the audit
	// log ("" when unknown).
	Addr string `json:"addr,omitempty"`
}

// DisplayName is Name, or Subject when there is no name.
func (id *Identity) DisplayName() string {
	if id == nil {
		return ""
	}
	if id.Name != "" {
		return id.Name
	}
	return id.Subject
}

// Initials are one or two letters for an avatar: the first letters of
// the first and last words of the display name (the part before @ of an
// e-mail address), upper-cased.
func (id *Identity) Initials() string {
	n := id.DisplayName()
	if i := strings.IndexByte(n, '@'); i > 0 && id.Name == "" {
		n = n[:i]
	}
	words := strings.FieldsFunc(n, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	if len(words) == 0 {
		return "?"
	}
	first := func(w string) string {
		r, _ := utf8.DecodeRuneInString(w)
		return string(unicode.ToUpper(r))
	}
	if len(words) == 1 {
		return first(words[0])
	}
	return first(words[0]) + first(words[len(words)-1])
}

// InGroup reports whether the person is in group g.
func (id *Identity) InGroup(g string) bool {
	for _, x := range id.Groups {
		if x == g {
			return true
		}
	}
	return false
}

type ctxKey struct{}

// NewContext returns a context carrying id: the identity every check
// below the front end reads.
func NewContext(ctx context.Context, id *Identity) context.Context {
	return context.WithValue(ctx, ctxKey{}, id)
}

// FromContext returns the identity NewContext put in ctx.
func FromContext(ctx context.Context) (*Identity, bool) {
	id, ok := ctx.Value(ctxKey{}).(*Identity)
	return id, ok && id != nil
}

// Authenticator establishes who sent a request: an OpenID Connect login
// (NewOIDC) or a trusted reverse proxy's header (NewProxyAuth).
type Authenticator interface {
	// Identify returns the person r comes from, as the provider or proxy
	// says (Role is resolved afterwards by Config.Resolve), or an error
	// matching ErrUnauthenticated.
	Identify(r *http.Request) (*Identity, error)
	// Handler serves the sign-in routes under /auth/ (login, callback,
	// logout); nil when the sign-in happens elsewhere (a proxy).
	Handler() http.Handler
}
