package claude_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
)

func init() {
	addScenarios(scenario{
		name: "session_file_rename_resume_at",
		guards: `RenameSessionFile and TagSessionFile change a closed session's file so that ListSessions reports the title
and tag, and the real CLI still resumes it; Options.ResumeSessionAt resumes only up to the first turn's
answer, so the API never sees the second turn.`,
		api: func() *claudetest.MessagesOptions {
			return &claudetest.MessagesOptions{Replies: []*claudetest.Reply{
				claudetest.TextReply("First answer: apples."),
				claudetest.TextReply("Second answer: bananas."),
				claudetest.TextReply("Resumed."),
			}}
		},
		opts: func(o *claude.Options) { o.SessionID = "7d0c6a3e-5b1f-4c2d-9e8f-0a1b2c3d4e5f" },
		run: func(t *testing.T, h *harness) {
			const id = "7d0c6a3e-5b1f-4c2d-9e8f-0a1b2c3d4e5f"
			var firstAnswer string
			for _, m := range h.turn(t, "first question") {
				if a, ok := m.(*claude.AssistantMessage); ok && strings.Contains(a.Text(), "apples") {
					firstAnswer = a.UUID
				}
			}
			h.turn(t, "second question")
			if err := h.S.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			if firstAnswer == "" {
				t.Fatal("no uuid on the first answer")
			}

			config := filepath.Join(h.CLI.Home, ".claude")
			path := claude.SessionFilePath(config, h.Opts.Cwd, id)
			if err := claude.RenameSessionFile(path, "Fruit chat"); err != nil {
				t.Fatal(err)
			}
			if err := claude.TagSessionFile(path, "fruit"); err != nil {
				t.Fatal(err)
			}
			sessions, err := claude.ListSessions(h.Opts.Cwd, &claude.ListSessionsOptions{ConfigDir: config})
			if err != nil || len(sessions) != 1 || sessions[0].Title != "Fruit chat" || sessions[0].Tag != "fruit" {
				t.Fatalf("sessions = %+v, %v", sessions, err)
			}

			o := *h.Opts
			o.Transport = nil
			o.SessionID = ""
			o.Resume = id
			o.ResumeSessionAt = firstAnswer
			o.ForkSession = true // a truncated resume is a fork from that point
			s2, err := claude.Connect(h.Ctx, &o)
			if err != nil {
				t.Fatalf("second Connect: %v", err)
			}
			defer s2.Close()
			h2 := *h
			h2.S = s2
			h2.turn(t, "third question")
			reqs := h.API.MessagesRequests()
			p := reqs[len(reqs)-1].Params
			if !p.Contains("first question") || !p.Contains("First answer: apples.") {
				t.Errorf("the resumed request lacks the first turn: %s", reqs[len(reqs)-1].Body)
			}
			if p.Contains("second question") || p.Contains("bananas") {
				t.Errorf("the resumed request has the turn after ResumeSessionAt: %s", reqs[len(reqs)-1].Body)
			}
		},
	})
}
