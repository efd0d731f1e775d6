package host

import (
	"errors"
	"time"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/internal/telemetry"
)

// exitReason is a CLI's end as tether_cli_exits_total's bounded reason.
func exitReason(cause error, closed bool) string {
	switch {
	case errors.Is(cause, ErrKilled):
		return telemetry.ExitKilled
	case closed || errors.Is(cause, claude.ErrClosed):
		return telemetry.ExitClosed
	case cause == nil:
		return telemetry.ExitExited
	default:
		return telemetry.ExitCrashed
	}
}

// countResult observes a result's turn time, and the tokens and cost it
// adds per model: the CLI's per-model totals for this process less those
// of the result before (s.mu held; before costs.add). An interrupted
// turn's result carries no totals: its usage shows with the next one.
func (s *Session) countResult(m claude.Message) {
	if s.metrics == nil {
		return
	}
	r, ok := m.(*claude.ResultMessage)
	if !ok {
		return
	}
	if !s.turnStart.IsZero() {
		s.metrics.TurnEnded(time.Since(s.turnStart))
		s.turnStart = time.Time{}
	}
	for k, v := range r.ModelUsage {
		p := s.costs.procMod[k]
		s.metrics.Used(modelKey(k), telemetry.Usage{
			Input:         v.InputTokens - p.InputTokens,
			Output:        v.OutputTokens - p.OutputTokens,
			CacheCreation: v.CacheCreationInputTokens - p.CacheCreationInputTokens,
			CacheRead:     v.CacheReadInputTokens - p.CacheReadInputTokens,
			USD:           v.CostUSD - p.CostUSD,
		})
	}
}

// count adds the manager's sessions by state and their pending approvals
// (tether_sessions, tether_pending_approvals), at scrape time.
func (m *Manager) count(c *telemetry.Counts) {
	for _, s := range m.Sessions() {
		s.mu.Lock()
		c.States[s.live.State.String()]++
		for _, a := range s.approvals {
			if a.Kind != ApprovalTool { // a question, or an MCP server's
				c.Pending[telemetry.KindQuestion]++
			} else {
				c.Pending[telemetry.KindTool]++
			}
		}
		s.mu.Unlock()
	}
}
