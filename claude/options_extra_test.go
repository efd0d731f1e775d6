package claude_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
)

// VerbatimPrompts marks every user message client_composed, as the
// TypeScript SDK does; without it no message carries the member.
func TestVerbatimPrompts(t *testing.T) {
	for _, verbatim := range []bool{true, false} {
		lines := make(chan json.RawMessage, 2)
		fake := &claudetest.FakeCLI{Script: func(ctx context.Context, c *claudetest.CLI) error {
			if _, err := c.HandleInitialize(ctx); err != nil {
				return err
			}
			for range 2 {
				l, err := c.ReadUser(ctx)
				if err != nil {
					return err
				}
				lines <- l.Raw
			}
			return nil
		}}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		s, err := claude.Connect(ctx, &claude.Options{Transport: fake, VerbatimPrompts: verbatim})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Send(ctx, "@secrets.txt /clear"); err != nil {
			t.Fatal(err)
		}
		m := claude.NewUserMessage("second")
		m.UUID = "11111111-2222-4333-8444-555555555555"
		if err := s.SendMessage(ctx, m); err != nil {
			t.Fatal(err)
		}
		for i := range 2 {
			var got struct {
				Type           string
				ClientComposed *bool `json:"client_composed"`
				UUID           string
				Message        struct{ Role string }
			}
			raw := <-lines
			if err := json.Unmarshal(raw, &got); err != nil {
				t.Fatalf("line %s: %v", raw, err)
			}
			if got.Type != "user" || got.Message.Role != "user" || (i == 1 && got.UUID != m.UUID) {
				t.Errorf("verbatim %v: line %d lost members: %s", verbatim, i, raw)
			}
			if verbatim != (got.ClientComposed != nil && *got.ClientComposed) {
				t.Errorf("verbatim %v: line %d = %s", verbatim, i, raw)
			}
		}
		s.Close()
		cancel()
	}
}
