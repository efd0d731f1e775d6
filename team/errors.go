package team

import (
	"errors"
	"fmt"

	"github.com/tetherhq/tether/host"
)

var (
	// ErrUnauthenticated: the request carries no valid sign-in (no
	// cookie, an expired or revoked one, a proxy header from an
	// untrusted address).
	ErrUnauthenticated = errors.New("team: not signed in")
	// ErrForbidden: the person may not do this. It matches
	// host.ErrForbidden too, so front ends map it to the forbidden code.
	ErrForbidden = fmt.Errorf("team: %w", host.ErrForbidden)
	// ErrPolicy: the policy of the person's role refuses it (a working
	// directory outside their roots, a mode, model or tool not allowed,
	// too many sessions). It matches ErrForbidden.
	ErrPolicy = fmt.Errorf("%w: policy", ErrForbidden)
	// ErrBudget: the person's daily budget is spent. It matches
	// ErrPolicy.
	ErrBudget = fmt.Errorf("%w: budget", ErrPolicy)
)

// PolicyError says which rule refused what: the audit log records Rule,
// the person reads Message.
type PolicyError struct {
	Subject string // who
	Rule    string // e.g. "cwd_roots", "modes", "models", "denied_tools", "max_sessions", "daily_budget_usd", "access"
	Message string // for the person: what was refused and why
	Err     error  // ErrForbidden, ErrPolicy or ErrBudget
}

func (e *PolicyError) Error() string { return "team: " + e.Message }
func (e *PolicyError) Unwrap() error { return e.Err }
