//go:build !tetherwip

package claude

import (
	"context"
	"errors"
)

// Temporary until internal/proc lands.
type CommandTransport struct{}

func (t *CommandTransport) Connect(ctx context.Context, l *Launch) (Conn, error) {
	return nil, errors.New("not yet")
}

func findCLI(ctx context.Context, o *Options) (string, error) {
	return "", &CLINotFoundError{Searched: []string{o.CLIPath}}
}
