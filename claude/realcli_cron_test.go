package claude_test

import (
	"regexp"
	"sync/atomic"
	"testing"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
)

// cronJobID is the id CronCreate returned in the cron scenario, for the
// CronDelete reply.
var (
	cronJobID atomic.Pointer[string]
	cronJob   = regexp.MustCompile(`\bjob ([0-9a-f]{6,})\b`)
)

func init() {
	addScenarios(scenario{
		name: "tool_results_cron_findings",
		guards: `The structured results of CronCreate, CronList, CronDelete and ReportFindings decode into their Go types
with the real CLI's values, on both pinned CLIs.`,
		api: func() *claudetest.MessagesOptions {
			var n atomic.Int32
			return &claudetest.MessagesOptions{Respond: func(r *claudetest.Request) *claudetest.Reply {
				// The job id from what the model was told ("Scheduled
				// recurring job 013eeebb …"), else from the host's copy of
				// the result.
				id := ""
				if tr := r.Params.ToolResult("toolu_cc"); tr != nil {
					if m := cronJob.FindStringSubmatch(string(tr.Raw)); m != nil {
						id = m[1]
					}
				}
				if p := cronJobID.Load(); id == "" && p != nil {
					id = *p
				}
				replies := []*claudetest.Reply{
					claudetest.ToolUseReply("toolu_cc", "CronCreate", map[string]any{"cron": "0 9 * * 1", "prompt": "weekly report", "recurring": true}),
					claudetest.ToolUseReply("toolu_cl", "CronList", map[string]any{}),
					claudetest.ToolUseReply("toolu_cd", "CronDelete", map[string]any{"id": id}),
					claudetest.ToolUseReply("toolu_rf", "ReportFindings", map[string]any{"level": "high", "findings": []map[string]any{
						{"file": "a.go", "line": 3, "summary": "nil map write", "failure_scenario": "empty config panics"}}}),
					claudetest.TextReply("done"),
				}
				i := int(n.Add(1)) - 1
				if i >= len(replies) {
					return nil
				}
				return replies[i]
			}}
		},
		opts: func(o *claude.Options) {
			o.AllowedTools = []string{"CronCreate", "CronList", "CronDelete", "ReportFindings"}
		},
		run: func(t *testing.T, h *harness) {
			results := map[string]*claude.UserMessage{}
			if err := h.S.Send(h.Ctx, "schedule it"); err != nil {
				t.Fatal(err)
			}
			for m, err := range h.S.ReceiveTurn(h.Ctx) {
				if err != nil {
					t.Fatalf("ReceiveTurn: %v", err)
				}
				u, ok := m.(*claude.UserMessage)
				if !ok {
					continue
				}
				for _, tr := range u.ToolResults() {
					results[tr.ToolUseID] = u
					if tr.ToolUseID == "toolu_cc" {
						if r, err := claude.DecodeToolUseResult[claude.CronCreateResult](u); err == nil {
							cronJobID.Store(&r.ID)
						}
					}
				}
			}
			cc, err := claude.DecodeToolUseResult[claude.CronCreateResult](results["toolu_cc"])
			if err != nil || cc.ID == "" || !cc.Recurring || cc.HumanSchedule == "" {
				t.Errorf("CronCreate result = %+v, %v", cc, err)
			}
			cl, err := claude.DecodeToolUseResult[claude.CronListResult](results["toolu_cl"])
			if err != nil || len(cl.Jobs) != 1 || cl.Jobs[0].ID != cc.ID || cl.Jobs[0].Prompt != "weekly report" || cl.Jobs[0].Cron != "0 9 * * 1" {
				t.Errorf("CronList result = %+v, %v", cl, err)
			}
			cd, err := claude.DecodeToolUseResult[claude.CronDeleteResult](results["toolu_cd"])
			if err != nil || cd.ID != cc.ID {
				t.Errorf("CronDelete result = %+v, %v", cd, err)
			}
			rf, err := claude.DecodeToolUseResult[claude.ReportFindingsResult](results["toolu_rf"])
			if err != nil || rf.Count != 1 || len(rf.Findings) != 1 || rf.Findings[0].File != "a.go" {
				t.Errorf("ReportFindings result = %+v, %v", rf, err)
			}
		},
	})
}
