package host

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/internal/telemetry"
)

// Spans of a session (docs/cluster.md, Traces): "session start" and
// "cli start" under the caller's ctx, "turn" from a prompt's send (under
// the sender's ctx) to the result that answers it, and under the turn
// "tool" (tool_use to tool_result) and "approval" (announced to
// answered). Attributes hold ids, names and outcomes, never a prompt, a
// tool's input or output.

const (
	attrSession  = attribute.Key("tether.session.id")
	attrCLISess  = attribute.Key("claude.session_id")
	attrMessage  = attribute.Key("tether.message.uuid")
	attrTool     = attribute.Key("tether.tool.name")
	attrToolUse  = attribute.Key("tether.tool.use_id")
	attrApproval = attribute.Key("tether.approval.id")
	attrKind     = attribute.Key("tether.approval.kind")
	attrOutcome  = attribute.Key("tether.outcome")
	attrAnswerer = attribute.Key("tether.approval.answered_by")
	attrDelivery = attribute.Key("tether.delivery.status")
	attrSubtype  = attribute.Key("claude.result.subtype")
	attrNumTurns = attribute.Key("claude.result.num_turns")
	attrCost     = attribute.Key("claude.result.cost_usd")
	attrResume   = attribute.Key("tether.cli.resume")
	attrPID      = attribute.Key("tether.cli.pid")
	attrSpare    = attribute.Key("tether.session.spare")
)

// turnSpanLocked returns the span of the turn under way: that of the
// oldest prompt not yet answered (s.mu held). Without one (a turn the
// CLI began by itself) children are roots.
func (s *Session) turnContextLocked() context.Context {
	if len(s.deliveries) > 0 && s.deliveries[0].span != nil {
		return trace.ContextWithSpan(context.Background(), s.deliveries[0].span)
	}
	return context.Background()
}

// startTurn opens the span of a prompt's turn under the sender's ctx.
func (s *Session) startTurn(ctx context.Context, d *Delivery) {
	_, d.span = s.tracer.Start(ctx, "turn", trace.WithAttributes(attrSession.String(s.id), attrMessage.String(d.UUID)))
}

// endTurn closes a delivery's span with its fate (s.mu held).
func endTurn(d *Delivery) {
	if d.span == nil {
		return
	}
	d.span.SetAttributes(attrDelivery.String(d.status.String()))
	if r := d.result; r != nil {
		d.span.SetAttributes(attrSubtype.String(string(r.Subtype)), attrNumTurns.Int(r.NumTurns), attrCost.Float64(r.TotalCostUSD))
		if r.IsError {
			d.span.SetStatus(codes.Error, "the turn failed: "+string(r.Subtype))
		}
	} else if d.err != nil && d.status != DeliveryCancelled {
		telemetry.SetError(d.span, d.err, ErrorCode(d.err))
	}
	d.span.End()
}

// startTool opens a tool call's span under the turn (s.mu held).
func (s *Session) startTool(id, name string) trace.Span {
	_, span := s.tracer.Start(s.turnContextLocked(), "tool", trace.WithAttributes(
		attrSession.String(s.id), attrTool.String(name), attrToolUse.String(id)))
	return span
}

// endTool closes a tool call's span: with its result, or abandoned when
// the turn or the CLI ended first (r nil).
func endTool(t toolRun, r *claude.ToolResultBlock) {
	if t.span == nil {
		return
	}
	switch {
	case r == nil:
		t.span.SetAttributes(attrOutcome.String("abandoned"))
	case r.IsError:
		t.span.SetAttributes(attrOutcome.String("error"))
		t.span.SetStatus(codes.Error, "the tool failed")
	default:
		t.span.SetAttributes(attrOutcome.String("ok"))
	}
	t.span.End()
}

// startApproval opens an approval's span under the turn (s.mu held).
func (s *Session) startApproval(a *Approval) {
	kind := a.Kind.String()
	_, a.span = s.tracer.Start(s.turnContextLocked(), "approval", trace.WithAttributes(
		attrSession.String(s.id), attrApproval.String(a.ID()), attrKind.String(kind), attrTool.String(a.Request.ToolName)))
}

// endApproval closes an approval's span: answered (allow or deny, by
// the session's policy or a person) or withdrawn (r nil).
func endApproval(a *Approval, r claude.PermissionResult, by string) {
	if a.span == nil {
		return
	}
	outcome := "withdrawn"
	switch r.(type) {
	case *claude.PermissionAllow:
		outcome = "allow"
	case *claude.PermissionDeny:
		outcome = "deny"
	}
	a.span.SetAttributes(attrOutcome.String(outcome))
	if r != nil && by != "" {
		a.span.SetAttributes(attrAnswerer.String(by))
	}
	a.span.End()
	a.span = nil
}
