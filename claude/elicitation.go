package claude

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
)

// Requests the CLI sends the host beyond permissions, hooks and MCP
// messages: an MCP server asking the user for input (elicitation), and a
// tool asking the host to show a dialog (request_user_dialog). They are
// served like permission requests: each on its own goroutine, with a ctx
// cancelled when the CLI withdraws the request or the session closes.

func init() {
	inboundHandlers["elicitation"] = (*Session).serveElicitation
	inboundHandlers["request_user_dialog"] = (*Session).serveUserDialog
}

// ElicitationFunc answers an MCP server's request for user input
// (Options.OnElicitation). Returning nil, nil declines.
//
// Which servers the CLI lets ask (TestRealCLIMCPRemoteElicitation and
// the elicitation scenario, on every pinned CLI): remote servers (http,
// sse), in form mode, and from 2.1.336 on in URL mode too; not
// in-process servers in stream-json mode, whose request fails in the
// server ("client does not support elicitation") without reaching the
// callback. Stdio servers too (TestRealCLIMCPStdioElicitation), with one
// difference from 2.1.336 on: the CLI speaks MCP 2026-07-28 to them, where
// a tool may no longer send elicitation/create in the middle of its call;
// it returns the form as an input request instead, and the CLI asks this
// callback and calls the tool again with the answer (the Go MCP SDK's
// CallToolResult.InputRequests, which also asks an older CLI itself).
type ElicitationFunc func(ctx context.Context, req *ElicitationRequest) (*ElicitationResult, error)

// ElicitationRequest is an MCP server asking the user for input: a form
// (RequestedSchema, a JSON schema of flat properties) or a URL to open
// (Mode "url", for a sign-in).
type ElicitationRequest struct {
	// RequestID is the control request's id.
	RequestID string `json:"-"`
	// ServerName is the MCP server asking.
	ServerName string `json:"mcp_server_name"`
	Message    string `json:"message"`
	// Mode is "form" or "url"; "" means form.
	Mode string `json:"mode,omitempty"`
	URL  string `json:"url,omitempty"`
	// ElicitationID correlates a URL elicitation with the
	// *ElicitationCompleteMessage that ends it.
	ElicitationID   string          `json:"elicitation_id,omitempty"`
	RequestedSchema json.RawMessage `json:"requested_schema,omitempty"`
	// PropertyOrder lists RequestedSchema's properties in the server's
	// order (newer CLIs).
	PropertyOrder []string `json:"property_order,omitempty"`
	// Title, DisplayName and Description come from the server's
	// permission display metadata, when it has some.
	Title       string `json:"title,omitempty"`
	DisplayName string `json:"display_name,omitempty"`
	Description string `json:"description,omitempty"`

	Raw json.RawMessage `json:"-"`
}

// ElicitationAction is the user's answer to an elicitation.
type ElicitationAction string

// Elicitation actions.
const (
	ElicitationAccept  ElicitationAction = "accept"
	ElicitationDecline ElicitationAction = "decline"
	ElicitationCancel  ElicitationAction = "cancel"
)

// ElicitationResult is the answer to an elicitation.
type ElicitationResult struct {
	Action ElicitationAction `json:"action"`
	// Content is the form's values, a JSON object, for ElicitationAccept.
	Content json.RawMessage `json:"content,omitempty"`
}

func (s *Session) serveElicitation(ctx context.Context, id string, raw json.RawMessage) (any, error) {
	req, err := (&ControlEvent{RequestID: id, Request: raw}).ElicitationRequest()
	if err != nil {
		return nil, err
	}
	if s.opts.OnElicitation == nil {
		return &ElicitationResult{Action: ElicitationDecline}, nil
	}
	res, err := s.opts.OnElicitation(ctx, req)
	if err != nil {
		return nil, err
	}
	if res == nil {
		return &ElicitationResult{Action: ElicitationDecline}, nil
	}
	switch res.Action {
	case ElicitationAccept, ElicitationDecline, ElicitationCancel:
	default:
		return nil, fmt.Errorf("OnElicitation returned action %q", res.Action)
	}
	if res.Action == ElicitationAccept && len(res.Content) > 0 {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(res.Content, &obj); err != nil || obj == nil {
			return nil, errors.New("OnElicitation returned content that is not a JSON object")
		}
	}
	return res, nil
}

// UserDialogFunc shows a dialog a tool asked for (Options.OnUserDialog)
// and returns the user's choice.
type UserDialogFunc func(ctx context.Context, req *UserDialogRequest) (*UserDialogResult, error)

// UserDialogRequest asks the host to render a blocking dialog. The CLI
// sends only the kinds declared in Options.SupportedDialogKinds.
type UserDialogRequest struct {
	RequestID string `json:"-"`
	// DialogKind names the dialog; its Payload's shape depends on it.
	DialogKind string          `json:"dialog_kind"`
	Payload    json.RawMessage `json:"payload"`
	ToolUseID  string          `json:"tool_use_id,omitempty"`

	Raw json.RawMessage `json:"-"`
}

// UserDialogResult is the user's choice: Completed with a Result (the
// dialog kind's answer, JSON), or not (the user dismissed it).
type UserDialogResult struct {
	Completed bool
	Result    json.RawMessage
}

// MarshalJSON encodes the result as the CLI reads it.
func (r *UserDialogResult) MarshalJSON() ([]byte, error) {
	if !r.Completed {
		return []byte(`{"behavior":"cancelled"}`), nil
	}
	res := r.Result
	if len(res) == 0 {
		res = json.RawMessage("null")
	}
	return json.Marshal(struct {
		Behavior string          `json:"behavior"`
		Result   json.RawMessage `json:"result"`
	}{"completed", res})
}

func (s *Session) serveUserDialog(ctx context.Context, id string, raw json.RawMessage) (any, error) {
	req := &UserDialogRequest{}
	if err := unmarshal(raw, req); err != nil {
		return nil, fmt.Errorf("decoding request_user_dialog: %w", err)
	}
	req.RequestID, req.Raw = id, raw
	if s.opts.OnUserDialog == nil {
		// The protocol says a host that cannot render a dialog must not
		// answer it (an answer of "cancelled" would count as the user
		// dismissing it): wait until the CLI withdraws it or the session
		// ends. The CLI sends dialogs only to hosts that declared
		// SupportedDialogKinds, which needs OnUserDialog.
		<-ctx.Done()
		return nil, context.Cause(ctx)
	}
	res, err := s.opts.OnUserDialog(ctx, req)
	if err != nil {
		return nil, err
	}
	if res == nil {
		return &UserDialogResult{}, nil
	}
	if res.Completed && len(res.Result) > 0 && !json.Valid(res.Result) {
		return nil, errors.New("OnUserDialog returned a result that is not JSON")
	}
	return res, nil
}
