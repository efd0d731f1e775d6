package claude_test

import (
	"context"
	"testing"
	"time"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
	"github.com/tetherhq/tether/internal/proc"
)

// What CLI 2.1.335 added to the protocol, against the real CLI.

// TestRealCLIInterruptHook2_1_335: a hook for the Interrupt event (CLI
// 2.1.335 and later) is called once when Interrupt ends a turn, with the
// typed input saying who stopped it (the user, as a client that does not
// say who sent the request), why (stop) and how (a client's request).
// Older CLIs take the hook's registration and never call it, and the
// turn ends as it always did.
func TestRealCLIInterruptHook2_1_335(t *testing.T) {
	run := claudetest.NewRealRun(t, &claudetest.MessagesOptions{Replies: []*claudetest.Reply{
		{Content: []claudetest.ContentBlock{claudetest.TextBlock("thinking it over")}, StallAfterEvents: 3},
		claudetest.TextReply("after"),
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	log := newEventLog()
	log.register(run.Options, nil, claude.HookEventInterrupt)
	s, err := claude.Connect(ctx, run.Options)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Send(ctx, "take your time"); err != nil {
		t.Fatal(err)
	}
	// Interrupt once the API call is under way: the turn is surely
	// running then.
	if _, err := run.API.WaitMessages(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if err := s.Interrupt(ctx); err != nil {
		t.Fatal(err)
	}
	var msgs []claude.Message
	for m, err := range s.ReceiveTurn(ctx) {
		if err != nil && m == nil {
			t.Fatal(err)
		}
		msgs = append(msgs, m)
	}
	if res := result(t, msgs); res.Subtype != claude.ResultErrorDuringExecution {
		t.Errorf("interrupted turn ended %s", res.Subtype)
	}
	v := claudetest.CLIVersion()
	if proc.CompareVersions(v, "2.1.335") < 0 {
		if got := log.get(claude.HookEventInterrupt); len(got) != 0 {
			t.Errorf("CLI %s called the Interrupt hook %d times; it predates the event", v, len(got))
		}
		return
	}
	waitFired(t, ctx, log, claude.HookEventInterrupt)
	in := one[*claude.InterruptHookInput](t, log, claude.HookEventInterrupt)
	if in.Source != "user" || in.Reason != "stop" || in.Via != "client" {
		t.Errorf("Interrupt hook input = %+v, want source user, reason stop, via client", in)
	}
	// The session goes on.
	if err := s.Send(ctx, "and now?"); err != nil {
		t.Fatal(err)
	}
	msgs = msgs[:0]
	for m, err := range s.ReceiveTurn(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, m)
	}
	if got := assistantText(msgs); got != "after" {
		t.Errorf("after the interrupt: assistant text %q", got)
	}
}
