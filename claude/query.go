package claude

import (
	"context"
	"iter"
)

// Query runs one prompt in a new CLI and yields the turn's messages, ending
// with its *ResultMessage (yielded together with a *ResultError when the
// turn failed). The CLI is closed when the loop ends, however it ends.
//
// The CLI's stdin stays open until the result, so permission, hook and MCP
// requests can be answered throughout the turn. The iterator is
// single-use. Cancelling ctx interrupts the turn and closes the CLI.
func Query(ctx context.Context, prompt string, opts *Options) iter.Seq2[Message, error] {
	return QueryMessage(ctx, NewUserMessage(prompt), opts)
}

// QueryMessage is Query with a full user message (images, documents).
func QueryMessage(ctx context.Context, m *UserMessage, opts *Options) iter.Seq2[Message, error] {
	return func(yield func(Message, error) bool) {
		s, err := Connect(ctx, opts)
		if err != nil {
			yield(nil, err)
			return
		}
		defer s.Close()
		if err := s.SendMessage(ctx, m); err != nil {
			yield(nil, err)
			return
		}
		for msg, err := range s.ReceiveTurn(ctx) {
			if !yield(msg, err) {
				return
			}
		}
		// Close (deferred) interrupts a turn still running, whether ctx
		// was cancelled or the caller stopped early, before the CLI goes.
	}
}
