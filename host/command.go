package host

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tetherhq/tether/claude"
)

// CommandType names a Command.
type CommandType string

// The commands. Every front end (tether serve's protocol, the cluster's
// bus, a program) sends these, unchanged, to Session.Do.
const (
	// CommandSend sends a prompt (Text and/or Images; UUID optional).
	CommandSend CommandType = "send"
	// CommandInterrupt interrupts the running turn. The background
	// tasks run on where the CLI allows it (Options.InterruptStopsTasks);
	// CommandStopTask stops each.
	CommandInterrupt CommandType = "interrupt"
	// CommandForceInterrupt interrupts whatever it takes (a request,
	// then SIGINT, then a kill); the result's Step says which worked.
	CommandForceInterrupt CommandType = "force_interrupt"
	// CommandAnswer answers an approval (Approval with Behavior "allow"
	// or "deny") or a question (Approval with Answers).
	CommandAnswer CommandType = "answer"
	// CommandCancel withdraws a queued prompt (UUID).
	CommandCancel CommandType = "cancel"
	// CommandSetModel changes the model ("" = the CLI's default).
	CommandSetModel CommandType = "set_model"
	// CommandSetMode changes the permission mode (Mode).
	CommandSetMode CommandType = "set_mode"
	// CommandClose ends the session. For a session in a worktree
	// (Options.Worktree), Worktree says what becomes of work not merged
	// into the base branch: "keep" or "discard" (with Confirm); without
	// a word such a close is refused (worktree_unmerged), and a worktree
	// with nothing unmerged is removed.
	CommandClose CommandType = "close"
	// CommandResume brings back a session whose CLI is gone. It is
	// served by whatever keeps the sessions (tether serve's backends),
	// not by Session.Do, which refuses it.
	CommandResume CommandType = "resume"
	// CommandChanges lists the files the session changed, with their
	// diffs (CommandResult.Changes; Session.Changes). It reads; it
	// neither wakes a sleeping session nor needs its CLI, and it works
	// on an ended session too.
	CommandChanges CommandType = "changes"
	// CommandSlashCommands lists the slash commands the session's CLI
	// takes as a prompt ("/compact", a project's commands, skills):
	// CommandResult.SlashCommands, Session.SlashCommands. Like changes it
	// reads and wakes no sleeping session: one asleep or ended answers with
	// its last CLI's list.
	CommandSlashCommands CommandType = "slash_commands"
	// CommandRevertChanges puts files the session changed back as they
	// were at its start (Paths; none: all of them; Session.RevertChanges).
	// CommandResult.Reverted lists those put back. Like changes, it
	// needs no CLI.
	CommandRevertChanges CommandType = "revert_changes"
	// CommandWake wakes a sleeping session and does nothing else: its
	// CLI starts, resumed, while the person is still typing, so the
	// prompt that follows does not wait for the start (a second or more).
	// It is a no-op for a session awake. Like any command but those that
	// only read, it keeps the session from falling asleep while it runs;
	// once woken, the session sleeps again after its quiet time.
	CommandWake CommandType = "wake"
	// CommandWorktreeMerge merges the work of the session's worktree
	// (its branch, and what is uncommitted, committed onto it) into the
	// base branch, all or nothing: a merge that would conflict is
	// refused (worktree_conflict, a *WorktreeConflictError naming the
	// files) and changes nothing. Refused (busy) while a turn runs.
	CommandWorktreeMerge CommandType = "worktree_merge"
	// CommandWorktreeKeep keeps the worktree's branch: what is
	// uncommitted is committed onto it, and a close leaves the worktree
	// and branch as they are. Refused (busy) while a turn runs.
	CommandWorktreeKeep CommandType = "worktree_keep"
	// CommandWorktreeDiscard removes the session's worktree and its
	// branch, with every change in them, and ends the session. It needs
	// Confirm.
	CommandWorktreeDiscard CommandType = "worktree_discard"
	// CommandStopTask stops one background task of the session (TaskID,
	// from Session.Tasks): an agent the model started in the background,
	// or a backgrounded shell command, which a turn's interrupt may leave
	// running. It ends as the CLI reports it (EventTasks without it).
	// Refused with no_task when no such task runs; it wakes no sleeping
	// session, which has none.
	CommandStopTask CommandType = "stop_task"
)

// ReadOnly reports whether commands of type t only read the session
// (changes, slash_commands): a viewer may send them, and they wake no
// sleeping session.
func (t CommandType) ReadOnly() bool {
	return t == CommandChanges || t == CommandSlashCommands
}

// Command is one thing asked of a running session. It is a plain value
// that travels as JSON as it is (the "command" of tether serve's "do"
// request, the body of a cluster command), so that every path to a
// session is the same path: Session.Do.
type Command struct {
	Type CommandType `json:"type"`

	Text   string  `json:"text,omitempty"`   // send
	Images []Image `json:"images,omitempty"` // send
	// UUID is the message to withdraw (cancel); for send, the prompt's
	// uuid ("" = a new one).
	UUID string `json:"uuid,omitempty"`

	Approval  string            `json:"approval,omitempty"`  // answer: the approval's id
	Behavior  string            `json:"behavior,omitempty"`  // answer: "allow" or "deny"
	Always    bool              `json:"always,omitempty"`    // answer allow: apply the suggestions
	Message   string            `json:"message,omitempty"`   // answer deny: why, for the model
	Interrupt bool              `json:"interrupt,omitempty"` // answer deny: end the turn too
	Answers   map[string]string `json:"answers,omitempty"`   // answer a question: question → label(s)
	// Content answers an elicitation with behavior "allow" (accept): the
	// form's values, a JSON object (none for a page to visit).
	Content json.RawMessage `json:"content,omitempty"`

	Model string `json:"model,omitempty"` // set_model
	Mode  string `json:"mode,omitempty"`  // set_mode

	// Paths are the files to revert (revert_changes): absolute, or
	// relative to the session's working directory; none means all.
	Paths []string `json:"paths,omitempty"`
	// Worktree is what a close does with a worktree's unmerged work:
	// "keep" or "discard" ("" = refuse when there is any).
	Worktree string `json:"worktree,omitempty"`
	// Confirm confirms a destructive command: worktree_discard, and a
	// close with worktree "discard".
	Confirm bool `json:"confirm,omitempty"`
	// TaskID is the background task to stop (stop_task).
	TaskID string `json:"task_id,omitempty"`

	// Actor is the display name of the person the command comes from,
	// filled by the front end from the identity it established (never
	// read from a client: it is not part of the command's JSON). An
	// answer journals it as ApprovalResolved.AnsweredBy.
	Actor string `json:"-"`

	// OnQueued, when set, is called while the command waits for room to
	// run: a command that wakes a session asleep, or a resume, in a full
	// cluster, with the request's place in the queue of start requests
	// (1 = next), and again when the place changes. Never called by a
	// backend that does not queue (a lone serve wakes a session in its
	// own process). Not part of the command's JSON; a panic in it is
	// recovered and logged.
	OnQueued func(position int) `json:"-"`
}

// Image is an image pasted into a prompt.
type Image struct {
	MediaType string `json:"media_type"`
	Data      string `json:"data"` // base64
}

// CommandResult is what a command returns besides its error.
type CommandResult struct {
	// UUID is the uuid of the prompt a send queued.
	UUID string `json:"uuid,omitempty"`
	// Step is how far a force_interrupt went: "request", "sigint",
	// "kill", or "none" when no turn was running.
	Step string `json:"step,omitempty"`
	// Changes are the files the session changed (changes).
	Changes []FileChange `json:"changes,omitempty"`
	// ChangesAsOf is set when Changes were not read from the files now
	// but recorded when the session stopped running (in a cluster, a
	// session asleep or ended: no process holds its files); the files
	// may have changed since.
	ChangesAsOf time.Time `json:"changes_as_of,omitzero"`
	// Reverted are the files put back (revert_changes).
	Reverted []string `json:"reverted,omitempty"`
	// Worktree is the session's worktree after a worktree command, or
	// after the close of a session in one.
	Worktree *WorktreeInfo `json:"worktree,omitempty"`
	// SlashCommands are the commands the CLI takes as a prompt
	// (slash_commands).
	SlashCommands []claude.SlashCommand `json:"slash_commands,omitempty"`
}

// Lane says how a command may be scheduled against others of the same
// session. A server runs the ordered lane one command at a time in
// arrival order, and the quick lane beside it, so that a person's Stop or
// answer never waits behind a slow send.
type Lane int

const (
	// LaneOrdered: send, cancel, set_model, set_mode, close, resume.
	LaneOrdered Lane = iota
	// LaneQuick: interrupt, force_interrupt, stop_task, answer, changes,
	// slash_commands.
	LaneQuick
)

// Lane returns the command's lane.
func (c *Command) Lane() Lane {
	switch c.Type {
	case CommandInterrupt, CommandForceInterrupt, CommandStopTask, CommandAnswer, CommandChanges, CommandSlashCommands:
		return LaneQuick
	}
	return LaneOrdered
}

// CommandPolicy is what a session accepts from commands, beyond their
// shape. A nil *CommandPolicy means defaults.
type CommandPolicy struct {
	// AllowBypassPermissions lets set_mode choose bypassPermissions. Off
	// by default: a command cannot turn approvals off.
	AllowBypassPermissions bool
	// MaxImageBytes bounds one image of a send, decoded (0 = 5 MiB).
	MaxImageBytes int
	// Authorize, when set, is asked before every command a session runs,
	// with the caller's ctx (which carries whatever identity the front
	// end attached): a non-nil error refuses the command, and Do returns
	// a *CommandError with code forbidden wrapping it. A panic in it
	// refuses the command too.
	Authorize func(ctx context.Context, s *Session, c *Command) error
}

// PermissionModes are the permission modes a command may name.
var PermissionModes = []string{"default", "acceptEdits", "plan", "dontAsk", "auto", "bypassPermissions"}

var imageTypes = []string{"image/png", "image/jpeg", "image/gif", "image/webp"}

// Command error codes: stable, machine-readable names that every front
// end passes on as they are (tether serve's protocol errors, the
// cluster's replies). ErrorCode maps any error to one.
const (
	CodeBadRequest      = "bad_request"
	CodeUnknownType     = "unknown_type"
	CodeForbidden       = "forbidden"
	CodeSessionClosed   = "session_closed"
	CodeNoApproval      = "no_approval"
	CodeAlreadyAnswered = "already_answered"
	CodeWithdrawn       = "withdrawn"
	CodeNotAQuestion    = "not_a_question"
	CodeFormInvalid     = "form_invalid"
	CodeNotQueued       = "not_queued"
	CodeNoSession       = "no_session"
	CodeUnavailable     = "unavailable"
	CodeBusy            = "busy"
	CodeTimeout         = "timeout"
	CodeInternal        = "internal"
)

// Sentinel errors of commands, matched with errors.Is (a *CommandError
// unwraps to the one of its code).
var (
	// ErrBadCommand: the command is malformed (a missing or invalid
	// field, an unknown type).
	ErrBadCommand = errors.New("host: bad command")
	// ErrForbidden: the session's CommandPolicy refused the command.
	ErrForbidden = errors.New("host: command forbidden")
	// ErrSessionClosed: the session has ended.
	ErrSessionClosed = errors.New("host: session closed")
	// ErrBusy: the command could not be taken now (a full queue).
	ErrBusy = errors.New("host: busy")
	// ErrNoSession: no session has that id (or it has ended and is no
	// longer kept). serve and cluster return this same value, so one
	// errors.Is check holds whichever front end or backend answered.
	ErrNoSession = errors.New("host: no such session")
	// ErrUnavailable: what a Backend depends on is out of reach (a
	// cluster's NATS); the request changed nothing and may be retried.
	ErrUnavailable = errors.New("host: backend unavailable")
)

var codeSentinels = map[string]error{
	CodeBadRequest:      ErrBadCommand,
	CodeUnknownType:     ErrBadCommand,
	CodeForbidden:       ErrForbidden,
	CodeSessionClosed:   ErrSessionClosed,
	CodeNoSession:       ErrNoSession,
	CodeUnavailable:     ErrUnavailable,
	CodeNoApproval:      ErrNoApproval,
	CodeAlreadyAnswered: ErrAlreadyAnswered,
	CodeWithdrawn:       ErrWithdrawn,
	CodeNotAQuestion:    ErrNotAQuestion,
	CodeFormInvalid:     ErrFormInvalid,
	CodeNotQueued:       ErrNotQueued,
	CodeBusy:            ErrBusy,
	CodeNoTask:          ErrNoTask,
	CodeTimeout:         context.DeadlineExceeded,
}

// CommandError is a command refused or failed, with its stable code. It
// unwraps to Err when set (the cause, on the side where it happened) and
// else to the code's sentinel, so errors.Is(err, ErrAlreadyAnswered)
// holds for an error that crossed the wire as a code.
type CommandError struct {
	Code    string
	Message string
	Err     error
}

func (e *CommandError) Error() string {
	if e.Message == "" {
		return "host: " + e.Code
	}
	return e.Message
}

// Unwrap returns the cause, or the sentinel of the code.
func (e *CommandError) Unwrap() error {
	if e.Err != nil {
		return e.Err
	}
	return codeSentinels[e.Code]
}

// Is matches the sentinel of the code too, when Err is a cause of its own.
func (e *CommandError) Is(target error) bool {
	s, ok := codeSentinels[e.Code]
	return ok && s == target
}

func commandErrorf(code, format string, args ...any) *CommandError {
	return &CommandError{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ErrorCode returns the stable code of err: the code of a *CommandError,
// the code of a host or claude sentinel it wraps, "timeout" for an
// expired ctx, else "internal". It is "" for nil.
func ErrorCode(err error) string {
	if err == nil {
		return ""
	}
	var ce *CommandError
	if errors.As(err, &ce) {
		return ce.Code
	}
	switch {
	case errors.Is(err, ErrNoApproval):
		return CodeNoApproval
	case errors.Is(err, ErrAlreadyAnswered):
		return CodeAlreadyAnswered
	case errors.Is(err, ErrWithdrawn):
		return CodeWithdrawn
	case errors.Is(err, ErrNotAQuestion):
		return CodeNotAQuestion
	case errors.Is(err, ErrFormInvalid):
		return CodeFormInvalid
	case errors.Is(err, ErrNotQueued):
		return CodeNotQueued
	case errors.Is(err, ErrNoTask):
		return CodeNoTask
	case errors.Is(err, ErrSessionClosed), errors.Is(err, ErrManagerClosed), errors.Is(err, claude.ErrClosed):
		return CodeSessionClosed
	case errors.Is(err, ErrBadCommand):
		return CodeBadRequest
	case errors.Is(err, ErrForbidden):
		return CodeForbidden
	case errors.Is(err, ErrBusy):
		return CodeBusy
	case errors.Is(err, ErrNoSession):
		return CodeNoSession
	case errors.Is(err, ErrUnavailable):
		return CodeUnavailable
	case errors.Is(err, ErrWorktree):
		return CodeBadRequest
	case errors.Is(err, ErrWorktreeConflict):
		return CodeWorktreeConflict
	case errors.Is(err, ErrWorktreeBaseDirty):
		return CodeWorktreeBaseDirty
	case errors.Is(err, ErrWorktreeUnmerged):
		return CodeWorktreeUnmerged
	case errors.Is(err, context.DeadlineExceeded):
		return CodeTimeout
	}
	return CodeInternal
}

// Validate checks the command's shape and the policy's rules (p may be
// nil), without running it. Front ends call it to refuse early; Do calls
// it again, so a command that skipped a front end is checked all the
// same.
func (c *Command) Validate(p *CommandPolicy) error {
	if p == nil {
		p = &CommandPolicy{}
	}
	switch c.Type {
	case CommandSend:
		if strings.TrimSpace(c.Text) == "" && len(c.Images) == 0 {
			return commandErrorf(CodeBadRequest, "send needs text or images")
		}
		maxImage := cmpOr(p.MaxImageBytes, 5<<20)
		for i, im := range c.Images {
			if !slices.Contains(imageTypes, im.MediaType) {
				return commandErrorf(CodeBadRequest, "image %d: media_type must be one of %s", i, strings.Join(imageTypes, ", "))
			}
			if base64.StdEncoding.DecodedLen(len(im.Data)) > maxImage+3 {
				return commandErrorf(CodeBadRequest, "image %d: larger than %d bytes", i, maxImage)
			}
			if _, err := base64.StdEncoding.DecodeString(im.Data); err != nil {
				return commandErrorf(CodeBadRequest, "image %d: data is not base64", i)
			}
		}
	case CommandInterrupt, CommandForceInterrupt, CommandResume, CommandChanges, CommandSlashCommands, CommandWake:
	case CommandRevertChanges:
		for _, p := range c.Paths {
			if strings.TrimSpace(p) == "" {
				return commandErrorf(CodeBadRequest, "revert_changes: empty path")
			}
		}
	case CommandClose:
		switch c.Worktree {
		case "", WorktreeKeep:
		case WorktreeDiscard:
			if !c.Confirm {
				return commandErrorf(CodeBadRequest, "closing with worktree \"discard\" deletes the worktree's files and its branch: it needs confirm")
			}
		default:
			return commandErrorf(CodeBadRequest, "close: worktree must be \"keep\" or \"discard\", not %q", c.Worktree)
		}
	case CommandWorktreeMerge, CommandWorktreeKeep:
	case CommandWorktreeDiscard:
		if !c.Confirm {
			return commandErrorf(CodeBadRequest, "worktree_discard deletes the worktree's files and its branch: it needs confirm")
		}
	case CommandAnswer:
		if c.Approval == "" {
			return commandErrorf(CodeBadRequest, "answer needs approval")
		}
		if c.Answers == nil && c.Behavior != "allow" && c.Behavior != "deny" {
			return commandErrorf(CodeBadRequest, `answer needs behavior "allow" or "deny", or answers`)
		}
		if c.Content != nil && c.Behavior != "allow" {
			return commandErrorf(CodeBadRequest, `answer: content goes with behavior "allow"`)
		}
	case CommandStopTask:
		if c.TaskID == "" {
			return commandErrorf(CodeBadRequest, "stop_task needs task_id")
		}
	case CommandCancel:
		if c.UUID == "" {
			return commandErrorf(CodeBadRequest, "cancel needs uuid")
		}
	case CommandSetModel:
	case CommandSetMode:
		if c.Mode == "" {
			return commandErrorf(CodeBadRequest, "set_mode needs mode")
		}
		if err := CheckPermissionMode(c.Mode, p.AllowBypassPermissions); err != nil {
			return err
		}
	case "":
		return commandErrorf(CodeBadRequest, "command.type is required")
	default:
		return commandErrorf(CodeUnknownType, "unknown command %q", c.Type)
	}
	return nil
}

// CheckPermissionMode refuses a permission mode that is not one of
// PermissionModes (bad_request), and bypassPermissions unless allowed
// (forbidden). "" is allowed: the default.
func CheckPermissionMode(mode string, allowBypass bool) error {
	if mode == "" {
		return nil
	}
	if !slices.Contains(PermissionModes, mode) {
		return commandErrorf(CodeBadRequest, "unknown permission mode %q", mode)
	}
	if mode == string(claude.PermissionModeBypassPermissions) && !allowBypass {
		return commandErrorf(CodeForbidden, "bypassPermissions is not allowed by this server (approvals stay on)")
	}
	return nil
}

// Do runs a command on the session: the one entry point every front end
// uses, so that the checks (shape, CommandPolicy, Authorize) apply to
// every command whatever path it took. It returns a *CommandError for a
// refusal (its code says which); other errors are the session's own
// (ErrorCode maps them to codes).
func (s *Session) Do(ctx context.Context, c *Command) (*CommandResult, error) {
	if c == nil {
		return nil, commandErrorf(CodeBadRequest, "no command")
	}
	p := s.opts.Commands
	if err := c.Validate(p); err != nil {
		return nil, err
	}
	if c.Type == CommandResume {
		return nil, commandErrorf(CodeBadRequest, "resume is served by the session's keeper, not by the session")
	}
	if p != nil && p.Authorize != nil {
		if err := authorize(ctx, p.Authorize, s, c); err != nil {
			return nil, &CommandError{Code: CodeForbidden, Message: err.Error(), Err: err}
		}
	}
	switch c.Type {
	case CommandChanges:
		// Files, not the CLI: an ended or sleeping session answers too.
		list, err := s.Changes(ctx)
		if err != nil {
			return nil, err
		}
		return &CommandResult{Changes: list}, nil
	case CommandSlashCommands:
		// The last CLI's answer: an ended or sleeping session answers too.
		return &CommandResult{SlashCommands: s.SlashCommands()}, nil
	case CommandRevertChanges:
		done, err := s.revert(ctx, c.Actor, c.Paths)
		if err != nil && ErrorCode(err) == CodeInternal {
			err = &CommandError{Code: CodeInternal, Message: fmt.Sprintf("reverted %d files; %v", len(done), err), Err: err}
		}
		if err != nil {
			return nil, err
		}
		return &CommandResult{Reverted: done}, nil
	}
	if isClosed(s) && c.Type != CommandClose && !(c.isWorktree() && s.Worktree() != nil) {
		// A session whose CLI is gone keeps its worktree's commands: the
		// work is still there to merge, keep or discard.
		return nil, &CommandError{Code: CodeSessionClosed, Message: "the session has ended", Err: ErrSessionClosed}
	}
	if c.Type == CommandStopTask {
		// A session asleep runs no task: nothing to wake for.
		if err := s.stopTask(ctx, c.TaskID); err != nil {
			return nil, err
		}
		return &CommandResult{}, nil
	}
	if c.Type != CommandClose && !c.isWorktree() {
		// Every command but close wakes a sleeping session first (and
		// keeps it from falling asleep while it runs).
		wctx, done, err := s.awake(ctx, c)
		if err != nil {
			if isClosed(s) {
				return nil, &CommandError{Code: CodeSessionClosed, Message: "the session has ended", Err: ErrSessionClosed}
			}
			return nil, err
		}
		defer done()
		ctx = wctx
	}
	res, err := s.do(ctx, c)
	if err != nil && isClosed(s) && ErrorCode(err) == CodeInternal {
		err = &CommandError{Code: CodeSessionClosed, Message: "the session has ended: " + err.Error(), Err: err}
	}
	return res, err
}

func isClosed(s *Session) bool {
	select {
	case <-s.Done():
		return true
	default:
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// authorize calls the policy's Authorize, a panic refusing the command.
func authorize(ctx context.Context, f func(context.Context, *Session, *Command) error, s *Session, c *Command) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("host: Authorize panicked: %v", p)
		}
	}()
	return f(ctx, s, c)
}

func (s *Session) do(ctx context.Context, c *Command) (*CommandResult, error) {
	switch c.Type {
	case CommandSend:
		var blocks []claude.ContentBlock
		for _, im := range c.Images {
			data, _ := base64.StdEncoding.DecodeString(im.Data) // Validate checked it
			blocks = append(blocks, claude.NewImageBlock(im.MediaType, data))
		}
		m := claude.NewUserMessage(c.Text, blocks...)
		if c.UUID != "" {
			m.UUID = c.UUID
		}
		d, err := s.SendMessage(ctx, m)
		if err != nil {
			return nil, err
		}
		return &CommandResult{UUID: d.UUID}, nil
	case CommandInterrupt:
		return &CommandResult{}, s.Interrupt(ctx)
	case CommandForceInterrupt:
		step, err := s.ForceInterrupt(ctx)
		if err != nil {
			return nil, err
		}
		name := strings.ToLower(step.String())
		if step == InterruptNotNeeded {
			name = "none"
		}
		return &CommandResult{Step: name}, nil
	case CommandAnswer:
		return &CommandResult{}, s.answer(c)
	case CommandCancel:
		return &CommandResult{}, s.CancelMessage(ctx, c.UUID)
	case CommandSetModel, CommandSetMode:
		cs := s.Claude()
		if cs == nil {
			return nil, &CommandError{Code: CodeSessionClosed, Message: "no CLI running", Err: ErrSessionClosed}
		}
		if c.Type == CommandSetModel {
			if err := cs.SetModel(ctx, c.Model); err != nil {
				return nil, err
			}
			s.mu.Lock()
			s.info.model = c.Model
			s.base.Model = c.Model // a restart or a wake starts with it
			s.mu.Unlock()
			return &CommandResult{}, nil
		}
		// The CLI (2.1.331 and later) answers with the mode now in
		// effect, which need not be the one asked for: record that. A
		// change of mode may also settle pending approvals the new mode
		// allows; the CLI withdraws them (control_cancel_request), which
		// shows them withdrawn, as any withdrawal does.
		r, err := cs.SetPermissionModeWith(ctx, &claude.SetPermissionModeParams{Mode: claude.PermissionMode(c.Mode)})
		if err != nil {
			return nil, err
		}
		s.mu.Lock()
		s.info.mode = cmpOr(string(r.Mode), c.Mode)
		s.base.PermissionMode = claude.PermissionMode(s.info.mode)
		s.mu.Unlock()
		return &CommandResult{}, nil
	case CommandClose:
		return s.closeWith(ctx, c)
	case CommandWake:
		return &CommandResult{}, nil // Do woke it
	case CommandWorktreeMerge, CommandWorktreeKeep, CommandWorktreeDiscard:
		return s.doWorktree(ctx, c)
	}
	return nil, commandErrorf(CodeUnknownType, "unknown command %q", c.Type)
}

// answer answers an approval or a question.
func (s *Session) answer(c *Command) error {
	switch {
	case c.Answers != nil:
		a, err := s.Approval(c.Approval)
		if err != nil {
			return err
		}
		return a.answerAs(c.Actor, c.Answers)
	case c.Behavior == "allow":
		a, err := s.Approval(c.Approval)
		if err != nil {
			return err
		}
		if a.Kind == ApprovalElicitation || c.Content != nil {
			return formRefusal(a.acceptAs(c.Actor, c.Content))
		}
		if c.Always {
			return a.allowAlways(c.Actor, AlwaysUpdates(a.Request.Suggestions)...)
		}
		return a.allow(c.Actor)
	default:
		return s.respond(c.Approval, &claude.PermissionDeny{Message: c.Message, Interrupt: c.Interrupt}, c.Actor)
	}
}

// formRefusal gives an answer refused for not fitting its form
// (*FormError) a message for the person who filled it, with the field's
// title ("When must be a date and time, as …"): the browser shows a
// command's message as it is, and across the bus only the code and the
// message travel. Other errors pass as they are.
func formRefusal(err error) error {
	var fe *FormError
	if !errors.As(err, &fe) {
		return err
	}
	what := "The answer"
	if fe.Field != "" {
		what = cmp.Or(fe.Title, strconv.Quote(fe.Field))
	}
	return &CommandError{Code: CodeFormInvalid, Message: what + " " + fe.Reason, Err: err}
}

// AlwaysUpdates is what "allow always" applies: the CLI's suggestions as
// it made them (a settings file: they last), and each again for this
// session, because the CLI ignores settings-file rules in a workspace it
// does not trust, and a person who said "always" must not be asked again.
func AlwaysUpdates(sugg []claude.PermissionUpdate) []claude.PermissionUpdate {
	out := slices.Clone(sugg)
	for _, u := range sugg {
		if u.Destination != claude.DestinationSession {
			u.Destination = claude.DestinationSession
			out = append(out, u)
		}
	}
	return out
}
