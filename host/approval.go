package host

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/internal/telemetry"
)

// Errors refusing an answer to an approval. They come wrapped in an
// *ApprovalError; match them with errors.Is.
var (
	// ErrNoApproval: no pending approval has that id.
	ErrNoApproval = errors.New("host: no such approval")
	// ErrAlreadyAnswered: the approval was answered before.
	ErrAlreadyAnswered = errors.New("host: approval already answered")
	// ErrWithdrawn: the CLI no longer waits for the answer (an interrupt
	// cancelled the request, the turn or the CLI ended).
	ErrWithdrawn = errors.New("host: approval withdrawn")
	// ErrNotAQuestion: the answer is of another kind than the approval:
	// Answer on a tool approval or an elicitation, Accept on anything
	// but an elicitation.
	ErrNotAQuestion = errors.New("host: approval is not a question")
	// ErrFormInvalid: an elicitation's answer does not fit its form:
	// not a JSON object, a value the form requires left out, a field the
	// form does not have, or a value not of its field's type, choices,
	// bounds or format. A *FormError names the field and says what fits.
	ErrFormInvalid = errors.New("host: the answer does not fit the form")
)

// ApprovalError is a refused answer to an approval.
type ApprovalError struct {
	ID  string // the approval's id (the CLI's request id)
	Err error  // ErrNoApproval, ErrAlreadyAnswered, ErrWithdrawn, ErrNotAQuestion or a *FormError
}

func (e *ApprovalError) Error() string { return fmt.Sprintf("%v: %s", e.Err, e.ID) }

func (e *ApprovalError) Unwrap() error { return e.Err }

// ApprovalKind tells permission requests from questions.
type ApprovalKind int

// Approval kinds.
const (
	// ApprovalTool asks whether a tool may run: Allow, AllowAlways, Deny.
	ApprovalTool ApprovalKind = iota
	// ApprovalQuestion is the model asking the user (AskUserQuestion):
	// Answer it (or Deny to refuse).
	ApprovalQuestion
	// ApprovalElicitation is an MCP server asking the user for input
	// (Options.Elicitations): a form to fill (Accept with its values) or
	// a page to visit (Mode "url": Accept once done there), or Deny to
	// decline.
	ApprovalElicitation
)

// An Approval is a request from the CLI that waits for a person: a tool
// call to allow or deny, or a question to answer. It is data: list them
// with Session.Approvals, show them anywhere, and answer from any
// goroutine (a UI thread, a web request), by id with Session.Respond or
// with the methods below. Exactly one answer is taken; the others are
// refused with an *ApprovalError.
type Approval struct {
	// Request is the CLI's request: the tool, its input, the rules it
	// suggests for "always allow". Read-only.
	Request *claude.ToolPermissionRequest
	Kind    ApprovalKind
	// Questions are the questions of an ApprovalQuestion.
	Questions []Question
	// Elicitation is the server's request of an ApprovalElicitation.
	// Request then stands in for it where a tool's name is shown: its
	// ToolName is "mcp__" and the server's name, its Title, DisplayName
	// and Description the request's (Description its message), and its
	// ToolUseID the call of the server's tool that asks, when the session
	// can tell: the CLI does not say, so it is the one call to that
	// server's tools running, on the main thread or in a subagent, when
	// the request passes in stream order (none when several are).
	Elicitation *claude.ElicitationRequest
	// Asked is when the request arrived.
	Asked time.Time

	s         *Session
	answer    chan claude.PermissionResult // 1-buffered; read by the callback
	status    approvalStatus               // under s.mu
	announced bool                         // seen in stream order: listed
	span      trace.Span                   // the wait's; ended by endApproval
}

type approvalStatus int

const (
	approvalPending approvalStatus = iota
	approvalAnswered
	approvalWithdrawn
)

// Question is one question of AskUserQuestion.
type Question struct {
	Question    string           `json:"question"`
	Header      string           `json:"header"`
	Options     []QuestionOption `json:"options"`
	MultiSelect bool             `json:"multiSelect"`
}

// QuestionOption is one answer offered.
type QuestionOption struct {
	Label       string `json:"label"`
	Description string `json:"description"`
}

// ID returns the approval's id: the CLI's request id.
func (a *Approval) ID() string { return a.Request.RequestID }

// Allow lets the tool run with its input as the model wrote it.
func (a *Approval) Allow() error { return a.allow("") }

func (a *Approval) allow(actor string) error {
	return a.s.respond(a.ID(), &claude.PermissionAllow{}, actor)
}

// AllowAlways lets the tool run and applies rule changes so that calls
// like it no longer ask: the given updates, or with none the request's
// own Suggestions.
func (a *Approval) AllowAlways(updates ...claude.PermissionUpdate) error {
	return a.allowAlways("", updates...)
}

func (a *Approval) allowAlways(actor string, updates ...claude.PermissionUpdate) error {
	if len(updates) == 0 {
		updates = a.Request.Suggestions
	}
	return a.s.respond(a.ID(), &claude.PermissionAllow{UpdatedPermissions: updates}, actor)
}

// Deny refuses the tool call; the model sees message and carries on.
func (a *Approval) Deny(message string) error {
	return a.s.Respond(a.ID(), &claude.PermissionDeny{Message: message})
}

// Answer answers a question: answers maps each question's text to the
// chosen option's label (labels joined by ", " for multiple choice, or
// free text).
func (a *Approval) Answer(answers map[string]string) error { return a.answerAs("", answers) }

func (a *Approval) answerAs(actor string, answers map[string]string) error {
	if a.Kind != ApprovalQuestion {
		return &ApprovalError{ID: a.ID(), Err: ErrNotAQuestion}
	}
	var in map[string]json.RawMessage
	if err := json.Unmarshal(a.Request.Input, &in); err != nil || in == nil {
		in = map[string]json.RawMessage{}
	}
	b, err := json.Marshal(answers)
	if err != nil {
		return err
	}
	in["answers"] = b
	input, err := json.Marshal(in)
	if err != nil {
		return err
	}
	return a.s.respond(a.ID(), &claude.PermissionAllow{UpdatedInput: input}, actor)
}

// Accept answers an elicitation: content is the form's values, a JSON
// object of the requested schema's properties (nil for a page to visit,
// once the person is done there). Content that does not fit the form
// (Form: its fields, their types, choices, bounds and formats; the
// required ones) is refused with an *ApprovalError holding a *FormError,
// which says what would fit (errors.Is ErrFormInvalid), and the approval
// stays pending. Allow is Accept(nil); Deny declines.
func (a *Approval) Accept(content json.RawMessage) error { return a.acceptAs("", content) }

func (a *Approval) acceptAs(actor string, content json.RawMessage) error {
	if a.Kind != ApprovalElicitation {
		return &ApprovalError{ID: a.ID(), Err: ErrNotAQuestion}
	}
	return a.s.respond(a.ID(), &claude.PermissionAllow{UpdatedInput: content}, actor)
}

// Approvals returns the pending approvals, oldest first.
func (s *Session) Approvals() []*Approval {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*Approval(nil), s.approvals...)
}

// Approval returns the pending approval with the given id.
func (s *Session) Approval(id string) (*Approval, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.byID[id]
	if !ok || !a.announced {
		return nil, &ApprovalError{ID: id, Err: ErrNoApproval}
	}
	if err := a.refusal(); err != nil {
		return nil, err
	}
	return a, nil
}

// Respond answers the approval with the given id: a *claude.PermissionAllow
// or a *claude.PermissionDeny (with Interrupt set, the turn ends too). A
// second answer, or one after the CLI withdrew the request, is refused
// with an *ApprovalError.
func (s *Session) Respond(id string, r claude.PermissionResult) error { return s.respond(id, r, "") }

// respond is Respond by actor: the display name the front end took from
// the person's identity (Command.Actor), journaled as answered_by.
func (s *Session) respond(id string, r claude.PermissionResult, actor string) error {
	if r == nil {
		return errors.New("host: Respond: nil result")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.byID[id]
	if !ok || !a.announced {
		return &ApprovalError{ID: id, Err: ErrNoApproval}
	}
	return s.answerLocked(a, r, telemetry.ByPerson, actor)
}

func (s *Session) answerLocked(a *Approval, r claude.PermissionResult, by, actor string) error {
	if err := a.refusal(); err != nil {
		return err
	}
	if al, ok := r.(*claude.PermissionAllow); ok && a.Kind == ApprovalElicitation {
		if err := checkForm(a.Elicitation, al.UpdatedInput); err != nil {
			return &ApprovalError{ID: a.ID(), Err: err}
		}
	}
	a.status = approvalAnswered
	s.metrics.ApprovalEnded(by, time.Since(a.Asked))
	endApproval(a, r, by)
	a.answer <- r
	s.recordResolved(a, r, actor)
	s.forget(a)
	if d, ok := r.(*claude.PermissionDeny); ok && d.Interrupt && s.turn && a.Kind != ApprovalElicitation {
		s.interrupting = true
	}
	s.transition()
	return nil
}

// classed returns the policy's answer r with class as its
// DecisionClassification when it names none, as a copy: r is the
// caller's. A nil pointer of either result type is no answer, as nil is
// (it returns nil): it must never reach answerLocked, which runs under
// s.mu, where a panic would leave the lock held.
func classed(r claude.PermissionResult, class claude.PermissionDecisionClass) claude.PermissionResult {
	switch v := r.(type) {
	case *claude.PermissionAllow:
		if v == nil {
			return nil
		}
		c := *v
		c.DecisionClassification = cmp.Or(c.DecisionClassification, class)
		return &c
	case *claude.PermissionDeny:
		if v == nil {
			return nil
		}
		c := *v
		c.DecisionClassification = cmp.Or(c.DecisionClassification, class)
		return &c
	}
	return r
}

func (a *Approval) refusal() error {
	switch a.status {
	case approvalAnswered:
		return &ApprovalError{ID: a.ID(), Err: ErrAlreadyAnswered}
	case approvalWithdrawn:
		return &ApprovalError{ID: a.ID(), Err: ErrWithdrawn}
	}
	return nil
}

// forget removes a from the pending list (s.mu held). The id stays
// known (see withdrawAll), so late answers get the right error.
func (s *Session) forget(a *Approval) {
	for i, p := range s.approvals {
		if p == a {
			s.approvals = append(s.approvals[:i], s.approvals[i+1:]...)
			break
		}
	}
}

// withdrawAll withdraws every pending approval at the end of a turn or
// of the CLI (s.mu held). Answered and withdrawn approvals stay known, so
// that a late answer is told which it was, up to a bound.
func (s *Session) withdrawAll() {
	for _, a := range s.byID {
		a.withdrawLocked()
	}
	s.approvals = nil
	if len(s.byID) > 256 {
		clear(s.byID)
	}
}

func (a *Approval) withdrawLocked() {
	if a.status == approvalPending {
		a.status = approvalWithdrawn
		a.s.metrics.ApprovalEnded(telemetry.ByWithdrawn, time.Since(a.Asked))
		endApproval(a, nil, "")
		a.s.recordResolved(a, nil, "")
	}
}

// approvalLocked returns the approval for req, making it if it is new
// (the callback and the stream-order event each may come first).
func (s *Session) approvalLocked(req *claude.ToolPermissionRequest) *Approval {
	if a, ok := s.byID[req.RequestID]; ok {
		return a
	}
	a := &Approval{Request: req, Asked: time.Now(), s: s, answer: make(chan claude.PermissionResult, 1)}
	if req.ToolName == "AskUserQuestion" {
		a.Kind = ApprovalQuestion
		var in struct {
			Questions []Question `json:"questions"`
		}
		_ = json.Unmarshal(req.Input, &in)
		a.Questions = in.Questions
	}
	s.byID[req.RequestID] = a
	s.startApproval(a)
	return a
}

// elicitationLocked returns the approval for an elicitation, making it
// if it is new (the callback and the stream-order event each may come
// first).
func (s *Session) elicitationLocked(req *claude.ElicitationRequest) *Approval {
	if a, ok := s.byID[req.RequestID]; ok {
		return a
	}
	stand := &claude.ToolPermissionRequest{
		RequestID: req.RequestID, ToolName: "mcp__" + req.ServerName,
		DisplayName: cmp.Or(req.DisplayName, req.ServerName),
		Title:       cmp.Or(req.Title, req.ServerName+" asks for input"),
		Description: req.Message,
	}
	a := &Approval{Request: stand, Kind: ApprovalElicitation, Elicitation: req, Asked: time.Now(), s: s, answer: make(chan claude.PermissionResult, 1)}
	s.byID[req.RequestID] = a
	s.startApproval(a)
	return a
}

// onElicitation is the CLI session's OnElicitation (Options.Elicitations):
// it makes the request an Approval and waits for its answer.
func (s *Session) onElicitation(ctx context.Context, req *claude.ElicitationRequest) (*claude.ElicitationResult, error) {
	s.mu.Lock()
	a := s.elicitationLocked(req)
	s.mu.Unlock()
	defer s.settle(a)
	select {
	case r := <-a.answer:
		switch r := r.(type) {
		case *claude.PermissionAllow:
			content := r.UpdatedInput
			if len(content) == 0 && req.Mode != "url" {
				content = json.RawMessage("{}")
			}
			return &claude.ElicitationResult{Action: claude.ElicitationAccept, Content: content}, nil
		case *claude.PermissionDeny:
			if r.Interrupt {
				return &claude.ElicitationResult{Action: claude.ElicitationCancel}, nil
			}
		}
		return &claude.ElicitationResult{Action: claude.ElicitationDecline}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// settle ends the wait of a callback for a: withdrawn unless answered,
// and no longer listed.
func (s *Session) settle(a *Approval) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a.withdrawLocked()
	s.forget(a)
	s.transition()
}

// canUseTool is the CLI session's CanUseTool: it makes the request an
// Approval and waits for its answer.
func (s *Session) canUseTool(ctx context.Context, req *claude.ToolPermissionRequest) (claude.PermissionResult, error) {
	s.mu.Lock()
	a := s.approvalLocked(req)
	s.mu.Unlock()
	defer s.settle(a)
	if s.policy != nil {
		r, err := s.policy(ctx, req)
		if err != nil {
			return nil, err
		}
		if r = classed(r, claude.DecisionConfig); r != nil {
			s.mu.Lock()
			err := s.answerLocked(a, r, telemetry.ByPolicy, "")
			s.mu.Unlock()
			if err == nil {
				return <-a.answer, nil
			}
			// A person was quicker: their answer stands.
		}
	}
	select {
	case r := <-a.answer:
		return r, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
