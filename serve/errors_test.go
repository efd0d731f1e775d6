package serve_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/tetherhq/tether/host"
	"github.com/tetherhq/tether/serve"
	"github.com/tetherhq/tether/team"
)

// TestOneErrorVocabulary: a meaning has one error value, whichever layer
// returns it, so a program checks it once.
func TestOneErrorVocabulary(t *testing.T) {
	same := []struct {
		name      string
		got, want error
	}{
		{"serve.ErrNoSession", serve.ErrNoSession, host.ErrNoSession},
		{"serve.ErrSessionClosed", serve.ErrSessionClosed, host.ErrSessionClosed},
		{"serve.ErrForbidden", serve.ErrForbidden, host.ErrForbidden},
		{"serve.ErrBadRequest", serve.ErrBadRequest, host.ErrBadCommand},
	}
	for _, c := range same {
		if c.got != c.want {
			t.Errorf("%s is %q, not host's %q", c.name, c.got, c.want)
		}
	}
	// A team refusal is a forbidden command to every layer.
	err := fmt.Errorf("starting: %w", team.ErrPolicy)
	if !errors.Is(err, serve.ErrForbidden) || !errors.Is(err, host.ErrForbidden) {
		t.Errorf("a team policy refusal is not forbidden to serve and host alike")
	}
	if got := host.ErrorCode(fmt.Errorf("x: %w", serve.ErrNoSession)); got != serve.CodeNoSession {
		t.Errorf("code of a missing session: %q, want %q", got, serve.CodeNoSession)
	}
}
