package claude_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
)

// TestPeerControlRequests: SetPeerDelivery leaves out what is nil, sends
// an ended session choice as null, and decodes the choices in force;
// DecideHeldPeerMessage sends the answer and decodes the outcome.
func TestPeerControlRequests(t *testing.T) {
	ctx := testCtx(t)
	always := map[string]any{"session": map[string]any{"scope": "mine", "made_in": "prompting", "session_id": "s1", "paused": true}, "account": true}
	s, bodies := controlFake(t, func(l *claudetest.Line) any {
		if l.Subtype == "decide_held_peer_message" {
			return map[string]any{"outcome": "gone", "always_deliver": always}
		}
		return map[string]any{"always_deliver": always}
	})
	yes := true
	r, err := s.SetPeerDelivery(ctx, &claude.SetPeerDeliveryParams{ShowsHeldMessages: &yes})
	if err != nil {
		t.Fatal(err)
	}
	if b := <-bodies; b != `{"subtype":"set_peer_delivery","shows_held_messages":true}` {
		t.Errorf("request = %s", b)
	}
	if ss := r.AlwaysDeliver.Session; ss == nil || ss.SessionID != "s1" || ss.Scope != claude.PeerScopeMine || !ss.Paused || !r.AlwaysDeliver.Account {
		t.Errorf("result = %+v", r.AlwaysDeliver)
	}
	if _, err := s.SetPeerDelivery(ctx, &claude.SetPeerDeliveryParams{EndSession: true, Session: &claude.PeerSessionChoice{SessionID: "x"}}); err != nil {
		t.Fatal(err)
	}
	if b := <-bodies; b != `{"subtype":"set_peer_delivery","session":null}` {
		t.Errorf("ending the session choice sent %s", b)
	}
	choice := &claude.PeerSessionChoice{PeerAlways: claude.PeerAlways{Scope: claude.PeerScopeAnyone, MadeIn: claude.PeerSessionBypass}, SessionID: "s2"}
	if _, err := s.SetPeerDelivery(ctx, &claude.SetPeerDeliveryParams{Session: choice}); err != nil {
		t.Fatal(err)
	}
	if b := <-bodies; b != `{"subtype":"set_peer_delivery","session":{"scope":"anyone","made_in":"bypass","session_id":"s2"}}` {
		t.Errorf("a session choice sent %s", b)
	}
	d, err := s.DecideHeldPeerMessage(ctx, &claude.DecideHeldPeerMessageParams{HoldID: "h1", Decision: claude.PeerDecisionDeliver,
		Always: &claude.PeerAlways{Scope: claude.PeerScopeMine, MadeIn: claude.PeerSessionPrompting}})
	if err != nil || d.Outcome != "gone" || !d.AlwaysDeliver.Account {
		t.Errorf("DecideHeldPeerMessage = %+v, %v", d, err)
	}
	if b := <-bodies; b != `{"subtype":"decide_held_peer_message","hold_id":"h1","decision":"deliver","always":{"scope":"mine","made_in":"prompting"}}` {
		t.Errorf("request = %s", b)
	}
}

// TestPeerMessageHoldDecodes: the 2.1.332 frame, as the CLI's schema
// describes it, decodes typed.
func TestPeerMessageHoldDecodes(t *testing.T) {
	line := `{"type":"system","subtype":"peer_message_hold","state":"held","message_uuid":"m1","lane":"socket","from":"uds:/tmp/x.sock","from_name":"build","cause":"mode-mismatch","hold_id":"h1","can_deliver":true,"always_scope":"mine","session_class":"prompting","verified_pid":42,"preview":{"text":"hi","total_chars":2,"other_blocks":0,"is_whole":true},"uuid":"u1","session_id":"s1"}`
	m, err := claude.DecodeMessage([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	h, ok := m.(*claude.PeerMessageHoldMessage)
	if !ok {
		t.Fatalf("decoded %T", m)
	}
	if h.State != "held" || h.Lane != "socket" || h.HoldID != "h1" || h.CanDeliver == nil || !*h.CanDeliver || h.AlwaysScope != "mine" ||
		h.SessionClass != "prompting" || h.VerifiedPID != 42 || h.Preview == nil || h.Preview.Text != "hi" || !h.Preview.IsWhole || h.SessionID != "s1" {
		t.Errorf("decoded %+v", h)
	}
}

// TestUnknownCLIRequestAnswered: a control request from the CLI that this
// version of Tether does not know is answered with an error naming its
// subtype, not ignored (a CLI waiting for it would hang), and the session
// goes on.
func TestUnknownCLIRequestAnswered(t *testing.T) {
	ctx := testCtx(t)
	answered := make(chan error, 1)
	s := connect(t, nil, func(ctx context.Context, c *claudetest.CLI) error {
		if _, err := c.HandleInitialize(ctx); err != nil {
			return err
		}
		_, err := c.Request(ctx, "future_question", map[string]any{"x": 1})
		answered <- err
		if _, err := c.Turn(ctx, "still here"); err != nil {
			return err
		}
		<-ctx.Done()
		return nil
	})
	err := <-answered
	if err == nil || !strings.Contains(err.Error(), "unsupported control request subtype: future_question") {
		t.Fatalf("the CLI's unknown request got %v, want an error answer naming it", err)
	}
	if err := s.Send(ctx, "still there?"); err != nil {
		t.Fatal(err)
	}
	for m, err := range s.ReceiveTurn(ctx) {
		var re *claude.ResultError
		if err != nil && !errors.As(err, &re) {
			t.Fatal(err)
		}
		_ = m
	}
}
