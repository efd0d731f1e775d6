package serve

import (
	"context"
	"errors"
	"iter"

	"github.com/tetherhq/tether/host"
	"github.com/tetherhq/tether/team"
)

// NewTeamAuthorizer adapts package team's Authorizer, with the Store it
// keeps its ACLs in, to what the server asks (TeamAuthorizer).
func NewTeamAuthorizer(a *team.Authorizer, st *team.Store) TeamAuthorizer {
	return &teamAuthz{a: a, st: st}
}

type teamAuthz struct {
	a  *team.Authorizer
	st *team.Store
}

func (t *teamAuthz) Require(ctx context.Context, sid string, need team.Access, what string) (*team.ACL, error) {
	return t.a.Require(ctx, sid, need, what)
}
func (t *teamAuthz) Visible(ctx context.Context, acl *team.ACL) bool { return t.a.Visible(ctx, acl) }
func (t *teamAuthz) Start(ctx context.Context, c *StartCheck) error {
	return t.a.Start(ctx, &team.StartCheck{Cwd: c.Cwd, Model: c.Model, Mode: c.Mode, Running: c.Running})
}
func (t *teamAuthz) Created(ctx context.Context, sid, cwd string) error {
	return t.a.Created(ctx, sid, cwd)
}
func (t *teamAuthz) Command(ctx context.Context, sid string, c *host.Command) error {
	return t.a.Command(ctx, sid, c)
}
func (t *teamAuthz) Share(ctx context.Context, sid string, g []team.Grant) error {
	return t.a.Share(ctx, sid, g)
}
func (t *teamAuthz) SessionOptions(ctx context.Context, o *host.Options) *host.Options {
	return t.a.SessionOptions(ctx, o)
}
func (t *teamAuthz) Spend(ctx context.Context) ([]PersonSpend, error) {
	l, err := t.a.Spend(ctx)
	out := make([]PersonSpend, 0, len(l))
	for _, p := range l {
		out = append(out, PersonSpend(p))
	}
	return out, err
}
func (t *teamAuthz) ACL(ctx context.Context, sid string) (*team.ACL, error) {
	acl, err := t.st.ACL(ctx, sid)
	if errors.Is(err, team.ErrNoACL) {
		return nil, nil
	}
	return acl, err
}
func (t *teamAuthz) PutACL(ctx context.Context, acl *team.ACL) error { return t.st.PutACL(ctx, acl) }

// AuditFunc adapts a query function (package team's Audit.Query, with
// the query converted) to AuditQuerier.
type AuditFunc func(ctx context.Context, q *AuditQuery) iter.Seq2[*team.AuditEvent, error]

// Query implements AuditQuerier.
func (f AuditFunc) Query(ctx context.Context, q *AuditQuery) iter.Seq2[*team.AuditEvent, error] {
	return f(ctx, q)
}

// NewTeamAudit adapts package team's audit log to AuditQuerier (GET
// /api/audit). A query the log refuses (an unknown action, until before
// since) is a bad request, not a server failure.
func NewTeamAudit(a *team.Audit) AuditQuerier {
	return AuditFunc(func(ctx context.Context, q *AuditQuery) iter.Seq2[*team.AuditEvent, error] {
		tq := &team.AuditQuery{Since: q.Since, Until: q.Until, Actor: q.Actor, Session: q.Session, Action: q.Action, Limit: q.Limit}
		return func(yield func(*team.AuditEvent, error) bool) {
			for ev, err := range a.Query(ctx, tq) {
				if errors.Is(err, team.ErrAuditInvalid) {
					err = errorf(CodeBadRequest, "%v", err)
				}
				if !yield(ev, err) {
					return
				}
			}
		}
	})
}
