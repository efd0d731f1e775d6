package claude

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"time"
)

// CanUseToolFunc decides whether the CLI may run a tool. It runs on its
// own goroutine, so it may block (ask a person, call a service) without
// stalling the session; ctx is cancelled when the CLI withdraws the
// request (an interrupt) or the session closes. Returning an error, or
// panicking, answers the CLI with an error: the tool is not run and the
// turn goes on.
type CanUseToolFunc func(ctx context.Context, req *ToolPermissionRequest) (PermissionResult, error)

// ToolPermissionRequest is the CLI's can_use_tool request.
type ToolPermissionRequest struct {
	RequestID   string          // the CLI's id for this request
	ToolName    string          // e.g. "Bash", "mcp__calc__add"
	DisplayName string          // e.g. "Bash", "Add"
	Input       json.RawMessage // the tool's input as the model wrote it
	ToolUseID   string          // the tool_use block's id
	// Description is the model's description of the call, when it gave one.
	Description string
	// Suggestions are the rules the CLI proposes for "always allow"; send
	// one back in PermissionAllow.UpdatedPermissions to apply it.
	Suggestions []PermissionUpdate
	// BlockedPath is the path that needs permission, for file tools.
	BlockedPath          string
	DecisionReason       string
	DecisionReasonType   string // e.g. "mode" when the permission mode asked
	ClassifierApprovable bool
	Title                string
	AgentID              string // set when a subagent asks
	// MCPServer says which MCP server serves an mcp__* tool and where its
	// configuration came from (Source "sdk" for an in-process server);
	// nil for other tools and on CLIs that do not report it (2.1.197).
	MCPServer *HookMCPServer
	// SuppressAlwaysAllowRule: offer no persistent "don't ask again"
	// choice for this request (the rule would be broader than the ask,
	// or the CLI saves none).
	SuppressAlwaysAllowRule bool
	// DefaultToNo: do not pre-select approve; a single stray key must not
	// approve it.
	DefaultToNo bool
	// RequiresUserInteraction: no one-tap approve or deny, and no stored
	// grant or automatic approval, may answer it; the user has to see it.
	RequiresUserInteraction bool
	// MatchedAskRule is the user's ask rule (permissions.ask) that forced
	// the prompt, when one did: treat the request as the user asking for a
	// human decision. Its text is untrusted, as DecisionReason's.
	MatchedAskRule *MatchedAskRule

	// Raw is the request body as the CLI sent it.
	Raw json.RawMessage
}

type wirePermissionRequest struct {
	ToolName             string             `json:"tool_name"`
	DisplayName          string             `json:"display_name"`
	Input                json.RawMessage    `json:"input"`
	ToolUseID            string             `json:"tool_use_id"`
	Description          string             `json:"description"`
	Suggestions          []PermissionUpdate `json:"permission_suggestions"`
	BlockedPath          string             `json:"blocked_path"`
	DecisionReason       json.RawMessage    `json:"decision_reason"`
	DecisionReasonType   string             `json:"decision_reason_type"`
	ClassifierApprovable bool               `json:"classifier_approvable"`
	Title                string             `json:"title"`
	AgentID              string             `json:"agent_id"`
	MCPServer            *HookMCPServer     `json:"mcp_server"`
	SuppressAlwaysAllow  bool               `json:"suppress_always_allow_rule"`
	DefaultToNo          bool               `json:"default_to_no"`
	RequiresInteraction  bool               `json:"requires_user_interaction"`
	MatchedAskRule       *MatchedAskRule    `json:"matched_ask_rule"`
}

// MatchedAskRule is ToolPermissionRequest.MatchedAskRule.
type MatchedAskRule struct {
	// Source is the settings source the rule came from.
	Source      string `json:"source"`
	ToolName    string `json:"tool_name"`
	RuleContent string `json:"rule_content,omitempty"`
}

func decodePermissionRequest(id string, raw json.RawMessage) (*ToolPermissionRequest, error) {
	var w wirePermissionRequest
	if err := unmarshal(raw, &w); err != nil {
		return nil, fmt.Errorf("decoding can_use_tool: %w", err)
	}
	r := &ToolPermissionRequest{
		RequestID: id, ToolName: w.ToolName, DisplayName: w.DisplayName, Input: w.Input,
		ToolUseID: w.ToolUseID, Description: w.Description, Suggestions: w.Suggestions,
		BlockedPath: w.BlockedPath, DecisionReasonType: w.DecisionReasonType,
		ClassifierApprovable: w.ClassifierApprovable, Title: w.Title, AgentID: w.AgentID, Raw: raw,
		MCPServer: w.MCPServer, SuppressAlwaysAllowRule: w.SuppressAlwaysAllow, DefaultToNo: w.DefaultToNo,
		RequiresUserInteraction: w.RequiresInteraction, MatchedAskRule: w.MatchedAskRule,
	}
	// decision_reason is a string in the schema but may grow into an
	// object; keep text either way.
	if len(w.DecisionReason) > 0 {
		var s string
		if json.Unmarshal(w.DecisionReason, &s) == nil {
			r.DecisionReason = s
		} else {
			r.DecisionReason = string(w.DecisionReason)
		}
	}
	if len(r.Input) == 0 {
		r.Input = json.RawMessage("{}")
	}
	return r, nil
}

// PermissionResult is the answer to a ToolPermissionRequest: a
// *PermissionAllow or a *PermissionDeny.
type PermissionResult interface {
	permissionResponse(req *ToolPermissionRequest) any
}

// PermissionAllow lets the tool run.
type PermissionAllow struct {
	// UpdatedInput replaces the tool's input (nil keeps the original: the
	// CLI requires the field, so Tether fills it in).
	UpdatedInput json.RawMessage
	// UpdatedPermissions are rule changes to apply, e.g. one of the
	// request's Suggestions for "always allow". Destination "session"
	// takes effect at once.
	UpdatedPermissions []PermissionUpdate
	// ToolUseID and DecisionClassification tell the CLI which call the
	// answer is for and how the user decided (see PermissionDecisionClass);
	// both optional.
	ToolUseID              string
	DecisionClassification PermissionDecisionClass
}

// PermissionDecisionClass says how a user decided a permission prompt,
// for the CLI's record of the decision.
type PermissionDecisionClass string

// Decision classes.
const (
	// DecisionUserTemporary: allowed this once.
	DecisionUserTemporary PermissionDecisionClass = "user_temporary"
	// DecisionUserPermanent: allowed with an "always allow" rule.
	DecisionUserPermanent PermissionDecisionClass = "user_permanent"
	// DecisionUserReject: the user refused.
	DecisionUserReject PermissionDecisionClass = "user_reject"
	// DecisionConfig: nobody was asked; the host decided by itself (a
	// mode, a policy, a rule no person's answer made, a deadline). CLI
	// 2.1.336 and later record that no person answered the call, so an
	// allow no longer counts as a sign that someone is present. Older
	// CLIs take it as they take an answer with no class: an allow is
	// recorded as user_temporary.
	DecisionConfig PermissionDecisionClass = "config"
)

// PermissionDeny refuses the tool. The model sees Message as the tool's
// error result and carries on, unless Interrupt ends the turn.
type PermissionDeny struct {
	Message   string
	Interrupt bool
	// ToolUseID and DecisionClassification as for PermissionAllow.
	ToolUseID              string
	DecisionClassification PermissionDecisionClass
}

// noResult reports whether r is nil, or a nil pointer of one of the
// result types (a callback's slip: return (*PermissionAllow)(nil)), which
// is answered as no result rather than a panic.
func noResult(r PermissionResult) bool {
	switch r := r.(type) {
	case *PermissionAllow:
		return r == nil
	case *PermissionDeny:
		return r == nil
	}
	return r == nil
}

func (a *PermissionAllow) permissionResponse(req *ToolPermissionRequest) any {
	in := a.UpdatedInput
	if len(in) == 0 {
		in = req.Input
		if len(a.UpdatedPermissions) == 0 && len(in) > 0 && a.ToolUseID == "" && a.DecisionClassification == "" {
			// The common answer, pre-encoded: the CLI waits for it, and
			// the input came from one line the CLI wrote, so it is
			// valid JSON with no newline.
			b := make([]byte, 0, len(in)+40)
			b = append(b, `{"behavior":"allow","updatedInput":`...)
			b = append(b, in...)
			return preEncoded(append(b, '}'))
		}
	}
	return struct {
		Behavior               string                  `json:"behavior"`
		UpdatedInput           json.RawMessage         `json:"updatedInput"`
		UpdatedPermissions     []PermissionUpdate      `json:"updatedPermissions,omitempty"`
		ToolUseID              string                  `json:"toolUseID,omitempty"`
		DecisionClassification PermissionDecisionClass `json:"decisionClassification,omitempty"`
	}{"allow", in, a.UpdatedPermissions, a.ToolUseID, a.DecisionClassification}
}

func (d *PermissionDeny) permissionResponse(*ToolPermissionRequest) any {
	msg := d.Message
	if msg == "" {
		msg = "denied by the host"
	}
	return struct {
		Behavior               string                  `json:"behavior"`
		Message                string                  `json:"message"`
		Interrupt              bool                    `json:"interrupt,omitempty"`
		ToolUseID              string                  `json:"toolUseID,omitempty"`
		DecisionClassification PermissionDecisionClass `json:"decisionClassification,omitempty"`
	}{"deny", msg, d.Interrupt, d.ToolUseID, d.DecisionClassification}
}

// PermissionUpdate is a change to the CLI's permission rules, as the CLI
// suggests them and as a host applies them.
type PermissionUpdate struct {
	Type        PermissionUpdateType        `json:"type"`
	Rules       []PermissionRule            `json:"rules,omitempty"`
	Behavior    PermissionBehavior          `json:"behavior,omitempty"`
	Destination PermissionUpdateDestination `json:"destination,omitempty"`
	Mode        PermissionMode              `json:"mode,omitempty"`
	Directories []string                    `json:"directories,omitempty"`
}

// PermissionRule matches tool uses: a tool name and an optional pattern,
// e.g. {"Bash", "git log *"}.
type PermissionRule struct {
	ToolName    string `json:"toolName"`
	RuleContent string `json:"ruleContent,omitempty"`
}

// PermissionUpdateType is the kind of a PermissionUpdate.
type PermissionUpdateType string

// Permission update kinds.
const (
	PermissionAddRules          PermissionUpdateType = "addRules"
	PermissionReplaceRules      PermissionUpdateType = "replaceRules"
	PermissionRemoveRules       PermissionUpdateType = "removeRules"
	PermissionSetMode           PermissionUpdateType = "setMode"
	PermissionAddDirectories    PermissionUpdateType = "addDirectories"
	PermissionRemoveDirectories PermissionUpdateType = "removeDirectories"
)

// PermissionBehavior is what a rule does.
type PermissionBehavior string

// Rule behaviours.
const (
	PermissionBehaviorAllow PermissionBehavior = "allow"
	PermissionBehaviorDeny  PermissionBehavior = "deny"
	PermissionBehaviorAsk   PermissionBehavior = "ask"
)

// PermissionUpdateDestination is where a rule change is stored.
type PermissionUpdateDestination string

// Destinations. Session changes last as long as the CLI process; the
// settings files persist (localSettings is ignored in an untrusted
// workspace).
const (
	DestinationSession         PermissionUpdateDestination = "session"
	DestinationLocalSettings   PermissionUpdateDestination = "localSettings"
	DestinationProjectSettings PermissionUpdateDestination = "projectSettings"
	DestinationUserSettings    PermissionUpdateDestination = "userSettings"
	DestinationCLIArg          PermissionUpdateDestination = "cliArg"
)

// Question is one question of an AskUserQuestion call: the model asks the
// user to pick among Options (several when MultiSelect).
type Question struct {
	Question    string           `json:"question"` // the full question; answers are keyed by it
	Header      string           `json:"header"`   // a short label for it, e.g. "Color"
	Options     []QuestionOption `json:"options"`
	MultiSelect bool             `json:"multiSelect"`
}

// QuestionOption is one choice of a Question.
type QuestionOption struct {
	Label       string `json:"label"`
	Description string `json:"description"`
	// Preview is optional content to show when the option is focused
	// (a mockup, a code snippet).
	Preview string `json:"preview,omitempty"`
}

// Questions decodes the questions of an AskUserQuestion request. The CLI
// asks the host to answer them through CanUseTool: reply with
// AnswerQuestions.
func (r *ToolPermissionRequest) Questions() ([]Question, error) {
	if r.ToolName != "AskUserQuestion" {
		return nil, fmt.Errorf("claude: Questions: a %s request, not AskUserQuestion", r.ToolName)
	}
	var in struct {
		Questions []Question `json:"questions"`
	}
	if err := unmarshal(r.Input, &in); err != nil {
		return nil, jsonError("AskUserQuestion input", err)
	}
	return in.Questions, nil
}

// ErrApprovalTimeout is the cause of a CanUseTool ctx cancelled because
// Options.ApprovalTimeout passed.
var ErrApprovalTimeout = errors.New("claude: no answer to the permission request within Options.ApprovalTimeout")

// callCanUseTool runs Options.CanUseTool, bounded by ApprovalTimeout when
// it is set: at the deadline the request is denied whether or not the
// callback honours its cancelled ctx.
func (s *Session) callCanUseTool(ctx context.Context, req *ToolPermissionRequest) (PermissionResult, error) {
	d := s.opts.ApprovalTimeout
	if d <= 0 {
		return s.opts.CanUseTool(ctx, req)
	}
	cctx, cancel := context.WithCancelCause(ctx)
	type answer struct {
		res PermissionResult
		err error
	}
	done := make(chan answer, 1)
	go func() {
		var a answer
		defer func() {
			if p := recover(); p != nil {
				s.log.Error("claude: callback panicked", "subtype", "can_use_tool", "panic", p, "stack", string(debug.Stack()))
				a = answer{err: fmt.Errorf("can_use_tool callback panicked: %v", p)}
			}
			done <- a
		}()
		a.res, a.err = s.opts.CanUseTool(cctx, req)
	}()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case a := <-done:
		cancel(nil)
		return a.res, a.err
	case <-t.C:
		cancel(ErrApprovalTimeout)
		s.log.Warn("claude: permission request unanswered at Options.ApprovalTimeout; denied", "tool", req.ToolName, "request_id", req.RequestID, "timeout", d)
		return &PermissionDeny{Message: fmt.Sprintf("No answer to the permission request within %s: denied.", d), DecisionClassification: DecisionConfig}, nil
	case <-ctx.Done():
		// The CLI withdrew the request or the session closed; the
		// callback sees the same through cctx.
		cancel(nil)
		return nil, context.Cause(ctx)
	}
}
