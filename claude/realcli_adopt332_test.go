package claude_test

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
	"github.com/tetherhq/tether/internal/proc"
)

// What CLI 2.1.331 and 2.1.332 added to the protocol, against the real
// CLI: the typed sandbox_enabled, set_permission_mode's answer, the peer
// control requests, and a mode change that releases a pending ask.

// TestRealCLISessionFields2_1_332: sandbox_enabled is typed in the
// initialize answer and system/init (2.1.331 and later; nil before);
// SetPermissionModeWith returns the mode in effect (every pinned CLI
// names it); SetPeerDelivery and DecideHeldPeerMessage are answered
// on 2.1.332 (an unknown hold is "gone") and refused as unsupported
// before.
func TestRealCLISessionFields2_1_332(t *testing.T) {
	run := claudetest.NewRealRun(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := claude.Connect(ctx, run.Options)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	v := claudetest.CLIVersion()
	since331 := proc.CompareVersions(v, "2.1.331") >= 0
	if got := s.Initialize().SandboxEnabled; since331 != (got != nil) || (got != nil && *got) {
		t.Errorf("initialize sandbox_enabled = %v on %s, want false from 2.1.331, absent before", got, v)
	}
	var msgs []claude.Message
	if err := s.Send(ctx, "hi"); err != nil {
		t.Fatal(err)
	}
	for m, err := range s.ReceiveTurn(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, m)
	}
	inits := find[*claude.InitMessage](msgs)
	if len(inits) == 0 {
		t.Fatalf("no system/init in %v", types(msgs))
	}
	if got := inits[0].SandboxEnabled; since331 != (got != nil) || (got != nil && *got) {
		t.Errorf("system/init sandbox_enabled = %v on %s, want false from 2.1.331, absent before", got, v)
	}

	// Every pinned CLI names the mode in effect (2.1.197 too).
	r, err := s.SetPermissionModeWith(ctx, &claude.SetPermissionModeParams{Mode: claude.PermissionModeAcceptEdits})
	if err != nil || r.Mode != claude.PermissionModeAcceptEdits {
		t.Errorf("SetPermissionModeWith = %+v, %v; want the mode in effect", r, err)
	}

	pd, perr := s.SetPeerDelivery(ctx, &claude.SetPeerDeliveryParams{})
	dd, derr := s.DecideHeldPeerMessage(ctx, &claude.DecideHeldPeerMessageParams{HoldID: "no-such-hold", Decision: claude.PeerDecisionDrop})
	if proc.CompareVersions(v, "2.1.332") < 0 {
		unsupported(t, "SetPeerDelivery", perr)
		unsupported(t, "DecideHeldPeerMessage", derr)
		return
	}
	if perr != nil || pd.AlwaysDeliver.Session != nil || pd.AlwaysDeliver.Account {
		t.Errorf("SetPeerDelivery = %+v, %v; want nothing always delivered", pd, perr)
	}
	if derr != nil || dd.Outcome != "gone" {
		t.Errorf("DecideHeldPeerMessage(unknown hold) = %+v, %v; want outcome gone", dd, derr)
	}
}

// TestRealCLIPermissionModeChangeKeepsAsk: a Write waits for the host's
// answer (CanUseTool) in default mode, and the host switches to
// acceptEdits, which allows it. The upgrade notes of 2.1.332 say a mode
// change releases the asks the new mode allows; offline, with the host's
// CanUseTool asking, 2.1.332 does not: it answers with the mode, writes
// the status line for it, and the ask stays pending (no
// control_cancel_request) until the host answers, which then runs the
// tool. (bypassPermissions was tried too: the same.) Should a later CLI
// withdraw it, this test fails and says so, and Tether already shows the
// approval withdrawn (ctx cancelled; host.ErrWithdrawn, tested with the
// fake CLI in host's TestApprovalReleasedByModeChange).
func TestRealCLIPermissionModeChangeKeepsAsk(t *testing.T) {
	if proc.CompareVersions(claudetest.CLIVersion(), "2.1.332") < 0 {
		t.Skipf("CLI %s predates the release said to change this (2.1.332)", claudetest.CLIVersion())
	}
	var file string
	run := claudetest.NewRealRun(t, &claudetest.MessagesOptions{Respond: func(r *claudetest.Request) *claudetest.Reply {
		if r.Params.ToolResult("toolu_write") != nil {
			return claudetest.TextReply("written")
		}
		return claudetest.ToolUseReply("toolu_write", "Write", map[string]string{"file_path": file, "content": "released\n"})
	}})
	o := run.Options
	file = filepath.Join(o.Cwd, "out.txt")
	asked := make(chan struct{})
	release := make(chan struct{})
	var once sync.Once
	withdrawn := make(chan error, 1)
	o.CanUseTool = func(ctx context.Context, r *claude.ToolPermissionRequest) (claude.PermissionResult, error) {
		once.Do(func() { close(asked) })
		select {
		case <-ctx.Done():
			withdrawn <- context.Cause(ctx)
			return nil, ctx.Err()
		case <-release:
			return &claude.PermissionAllow{}, nil
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := claude.Connect(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Send(ctx, "write the file"); err != nil {
		t.Fatal(err)
	}
	modeShown := make(chan struct{})
	done := make(chan []claude.Message, 1)
	go func() {
		var msgs []claude.Message
		shown := false
		for m, err := range s.ReceiveTurn(ctx) {
			if err != nil {
				t.Error(err)
				break
			}
			if st, ok := m.(*claude.StatusMessage); ok && st.PermissionMode == claude.PermissionModeAcceptEdits && !shown {
				shown = true
				close(modeShown)
			}
			msgs = append(msgs, m)
		}
		done <- msgs
	}()
	select {
	case <-asked:
	case <-ctx.Done():
		t.Fatal("the CLI never asked for the Write")
	}
	r, err := s.SetPermissionModeWith(ctx, &claude.SetPermissionModeParams{Mode: claude.PermissionModeAcceptEdits})
	if err != nil || r.Mode != claude.PermissionModeAcceptEdits {
		t.Fatalf("SetPermissionModeWith = %+v, %v", r, err)
	}
	select {
	case <-modeShown:
	case <-ctx.Done():
		t.Fatal("no system/status line for the new mode")
	}
	select {
	case cause := <-withdrawn:
		t.Errorf("the CLI withdrew the ask after the mode change (%v): a change of behaviour; update this test and docs/cli-versions.md", cause)
	default:
		close(release)
	}
	msgs := <-done
	if res := result(t, msgs); res.IsError {
		t.Errorf("turn failed: %+v", res)
	}
	if b, err := os.ReadFile(file); err != nil || string(b) != "released\n" {
		t.Errorf("the file = %q, %v; want it written", b, err)
	}
}
