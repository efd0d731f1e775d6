package claude_test

import (
	"testing"
	"time"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
)

// A Stderr callback that panics or blocks is the user's problem, not the
// host's: the session works on, Close returns, and once a blocked
// callback returns its goroutine ends (goleak in TestMain).
func TestStderrCallbackPanicsOrBlocks(t *testing.T) {
	for _, tc := range []struct {
		name string
		cb   func(release <-chan struct{}) func(string)
	}{
		{"panics", func(<-chan struct{}) func(string) { return func(string) { panic("stderr callback panics") } }},
		{"blocks", func(release <-chan struct{}) func(string) { return func(string) { <-release } }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testCtx(t)
			release := make(chan struct{})
			defer close(release)
			o := claudetest.ExecOptions("stderr-chatter")
			o.Stderr = tc.cb(release)
			s, err := claude.Connect(ctx, o)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Send(ctx, "ping"); err != nil {
				t.Fatal(err)
			}
			var text string
			for m, err := range s.ReceiveTurn(ctx) {
				if err != nil {
					t.Fatal(err)
				}
				if a, ok := m.(*claude.AssistantMessage); ok {
					text = a.Text()
				}
			}
			if text != "echo: ping" {
				t.Errorf("text = %q", text)
			}
			closed := make(chan error, 1)
			go func() { closed <- s.Close() }()
			select {
			case err := <-closed:
				if err != nil {
					t.Errorf("Close = %v", err)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("Close waits for the Stderr callback")
			}
		})
	}
}
