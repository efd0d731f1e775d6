package claude

import (
	"encoding/json"
	"fmt"
)

// ControlEvent is a control line the CLI wrote to the host: a request
// (can_use_tool, hook_callback, mcp_message, …) or the withdrawal of one
// (control_cancel_request, sent when an interrupt aborts a pending
// permission prompt). Requests are still served by their callbacks
// (Options.CanUseTool and the like); the event only says that they
// happened, and where in the stream.
type ControlEvent struct {
	Type      ControlEventType
	RequestID string
	// Subtype is the request's subtype ("can_use_tool"); empty for a
	// cancel.
	Subtype string
	// Request is the request body as the CLI sent it; nil for a cancel.
	Request json.RawMessage
}

// ControlEventType says what a ControlEvent is.
type ControlEventType string

// Control event types, named after the lines they come from.
const (
	ControlEventRequest ControlEventType = "control_request"
	ControlEventCancel  ControlEventType = "control_cancel_request"
)

// PermissionRequest decodes the body of a can_use_tool request, as
// Options.CanUseTool receives it.
func (e *ControlEvent) PermissionRequest() (*ToolPermissionRequest, error) {
	return decodePermissionRequest(e.RequestID, e.Request)
}

// ElicitationRequest decodes the body of an elicitation request (an MCP
// server asking the user for input), as Options.OnElicitation receives
// it: a host that lists what waits for a person sees it in stream order.
func (e *ControlEvent) ElicitationRequest() (*ElicitationRequest, error) {
	req := &ElicitationRequest{}
	if err := unmarshal(e.Request, req); err != nil {
		return nil, fmt.Errorf("decoding elicitation: %w", err)
	}
	req.RequestID, req.Raw = e.RequestID, e.Request
	return req, nil
}

// ObserveControlFunc receives the control events of a session. See
// Options.ObserveControl.
type ObserveControlFunc func(ev *ControlEvent)

// observeControl queues ev for Options.ObserveControl, in stdout order
// with the messages around it. Without an observer it does nothing.
func (s *Session) observeControl(ev *ControlEvent) {
	if s.opts.ObserveControl == nil {
		return
	}
	s.enqueue(item{ctl: ev})
}

// callObserver calls Options.ObserveControl on the receiving goroutine. A
// panic in it is the user's bug, not the session's: it is logged and the
// event dropped, so that neither the receive loop nor the host process
// dies of it.
func (s *Session) callObserver(ev *ControlEvent) {
	defer func() {
		if p := recover(); p != nil {
			s.log.Error("claude: ObserveControl panicked", "panic", fmt.Sprint(p))
		}
	}()
	s.opts.ObserveControl(ev)
}
