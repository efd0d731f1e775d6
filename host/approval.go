package host

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"time"
	"unicode/utf8"

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
	// form does not have, or a value not of its field's type, choices or
	// bounds (the error names the field).
	ErrFormInvalid = errors.New("host: the answer does not fit the form")
)

// ApprovalError is a refused answer to an approval.
type ApprovalError struct {
	ID  string // the approval's id (the CLI's request id)
	Err error  // ErrNoApproval, ErrAlreadyAnswered, ErrWithdrawn, ErrNotAQuestion or ErrFormInvalid
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
	// server's tools running when the request passes in stream order
	// (none when several are).
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
// (Form: its fields, their types, choices and bounds; the required ones)
// is refused with ErrFormInvalid, and the approval stays pending. Allow is Accept(nil);
// Deny declines.
func (a *Approval) Accept(content json.RawMessage) error { return a.acceptAs("", content) }

func (a *Approval) acceptAs(actor string, content json.RawMessage) error {
	if a.Kind != ApprovalElicitation {
		return &ApprovalError{ID: a.ID(), Err: ErrNotAQuestion}
	}
	return a.s.respond(a.ID(), &claude.PermissionAllow{UpdatedInput: content}, actor)
}

// checkForm refuses content that does not fit req's form, as Form reads
// it: not a JSON object, a required field left out (or null), a field
// the form does not have, or a value not of its field's type, choices or
// bounds. A page to visit takes no content. The server has the last
// word; this refuses what it would have to, while the person can still
// put it right.
func checkForm(req *claude.ElicitationRequest, content json.RawMessage) error {
	if req.Mode == "url" {
		return nil
	}
	var obj map[string]json.RawMessage
	if len(content) > 0 {
		if err := json.Unmarshal(content, &obj); err != nil || obj == nil {
			return fmt.Errorf("%w: not a JSON object", ErrFormInvalid)
		}
	}
	fields := formFields(req)
	for _, f := range fields {
		raw, ok := obj[f.Name]
		if !ok || string(raw) == "null" {
			if f.Required {
				return fmt.Errorf("%w: %q is required", ErrFormInvalid, f.Name)
			}
			continue
		}
		if err := f.check(raw); err != nil {
			return fmt.Errorf("%w: %q %v", ErrFormInvalid, f.Name, err)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		if !slices.ContainsFunc(fields, func(f FormField) bool { return f.Name == k }) {
			return fmt.Errorf("%w: %q is not a field of the form", ErrFormInvalid, k)
		}
	}
	return nil
}

// check refuses a value (JSON, not null) that is not of f's type, one of
// its choices, within its bounds.
func (f FormField) check(raw json.RawMessage) error {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return errors.New("is not JSON")
	}
	if len(f.Choices) > 0 {
		if !slices.ContainsFunc(f.Choices, func(c FormChoice) bool { return reflect.DeepEqual(c.Value, v) }) {
			return errors.New("is not one of its choices")
		}
		return nil
	}
	switch f.Type {
	case "boolean":
		if _, ok := v.(bool); !ok {
			return errors.New("is not true or false")
		}
	case "number", "integer":
		n, ok := v.(float64)
		if !ok {
			return errors.New("is not a number")
		}
		if f.Type == "integer" && n != math.Trunc(n) {
			return errors.New("is not a whole number")
		}
		if f.Minimum != nil && n < *f.Minimum || f.Maximum != nil && n > *f.Maximum {
			return errors.New("is out of its bounds")
		}
	default:
		t, ok := v.(string)
		if !ok {
			return errors.New("is not text")
		}
		if n := utf8.RuneCountInString(t); f.MinLength != nil && n < *f.MinLength || f.MaxLength != nil && n > *f.MaxLength {
			return errors.New("is too short or too long")
		}
	}
	return nil
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

// A FormField is one property of an elicitation's form (Approval.Form),
// as a UI asks for it. It crosses process boundaries in ApprovalInfo.Form,
// so a browser or a program renders the form from these fields rather
// than reading the server's schema a second way.
type FormField struct {
	// Name is the property's name: its value's key in Accept's content.
	Name string `json:"name"`
	// Title is what to call it: the schema's title, else Name.
	Title       string `json:"title"`
	Description string `json:"description,omitempty"`
	// Type is the value's JSON type: "string", "number", "integer" or
	// "boolean" (the flat types MCP allows in a form).
	Type string `json:"type"`
	// Format is a string's: "email", "uri", "date", "date-time" or "".
	Format   string `json:"format,omitempty"`
	Required bool   `json:"required,omitempty"`
	// Choices are the values to pick from (the schema's enum, or oneOf
	// consts with their titles); none means any value of Type.
	Choices []FormChoice `json:"choices,omitempty"`
	// Default is the schema's default value; nil: none.
	Default any `json:"default,omitempty"`
	// Minimum and Maximum bound a number's value, MinLength and MaxLength
	// a string's length in characters; nil: no bound. A UI asks within
	// them; the server has the last word.
	Minimum   *float64 `json:"minimum,omitempty"`
	Maximum   *float64 `json:"maximum,omitempty"`
	MinLength *int     `json:"min_length,omitempty"`
	MaxLength *int     `json:"max_length,omitempty"`
}

// FormChoice is a value offered by a FormField.
type FormChoice struct {
	Value any    `json:"value"`
	Label string `json:"label"`
}

// Form returns the fields of an elicitation's form, in the server's order
// (PropertyOrder, then the properties it leaves out, by name); nil for a
// page to visit or an approval of another kind. The schema is the
// server's: a property it describes in a way a form cannot ask (a nested
// object, a malformed enum) comes as a field of its type, or a string,
// to be answered as text.
func (a *Approval) Form() []FormField {
	if a.Kind != ApprovalElicitation || a.Elicitation == nil {
		return nil
	}
	return formFields(a.Elicitation)
}

// formFields reads e's form (Form); nil for a page to visit.
func formFields(e *claude.ElicitationRequest) []FormField {
	if e.Mode == "url" {
		return nil
	}
	var schema struct {
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
	}
	// A member of the wrong type is skipped, the rest read (encoding/json
	// goes on past it).
	_ = json.Unmarshal(e.RequestedSchema, &schema)
	var names []string
	for _, n := range slices.Concat(e.PropertyOrder, slices.Sorted(maps.Keys(schema.Properties))) {
		if _, ok := schema.Properties[n]; ok && !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	fields := make([]FormField, 0, len(names))
	for _, n := range names {
		fields = append(fields, formField(n, schema.Properties[n], slices.Contains(schema.Required, n)))
	}
	return fields
}

// formField reads one property of a form's schema.
func formField(name string, raw json.RawMessage, required bool) FormField {
	f := FormField{Name: name, Title: name, Type: "string", Required: required}
	var p struct {
		Type        any      `json:"type"`
		Title       string   `json:"title"`
		Description string   `json:"description"`
		Format      string   `json:"format"`
		Enum        []any    `json:"enum"`
		EnumNames   []string `json:"enumNames"`
		OneOf       []struct {
			Const *any   `json:"const"`
			Title string `json:"title"`
		} `json:"oneOf"`
		Default   any      `json:"default"`
		Minimum   *float64 `json:"minimum"`
		Maximum   *float64 `json:"maximum"`
		MinLength *int     `json:"minLength"`
		MaxLength *int     `json:"maxLength"`
	}
	_ = json.Unmarshal(raw, &p) // as much as is of the expected types
	if t, ok := p.Type.(string); ok && t != "" {
		f.Type = t
	}
	f.Title, f.Description, f.Format, f.Default = cmp.Or(p.Title, name), p.Description, p.Format, p.Default
	switch f.Type {
	case "number", "integer":
		f.Minimum, f.Maximum = p.Minimum, p.Maximum
	case "string":
		f.MinLength, f.MaxLength = p.MinLength, p.MaxLength
	}
	for i, v := range p.Enum {
		label := fmt.Sprint(v)
		if i < len(p.EnumNames) && p.EnumNames[i] != "" {
			label = p.EnumNames[i]
		}
		f.Choices = append(f.Choices, FormChoice{Value: v, Label: label})
	}
	if len(p.Enum) == 0 {
		for _, o := range p.OneOf {
			if o.Const == nil {
				f.Choices = nil
				break
			}
			f.Choices = append(f.Choices, FormChoice{Value: *o.Const, Label: cmp.Or(o.Title, fmt.Sprint(*o.Const))})
		}
	}
	return f
}
