package claude_test

import (
	"testing"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
)

// TestRealCLIPromptSuggestion: with Options.PromptSuggestions the CLI
// guesses the user's next prompt after a turn, from a fork of the
// conversation, and writes the guess after the turn's result; Receive
// delivers it as a *PromptSuggestionMessage. The CLI asks only once the
// conversation has two replies, and only when the last reply's usage reads
// as a warm prompt cache: the fake API's estimated usage (a long system
// prompt, uncached) never does, so these replies report cache reads.
func TestRealCLIPromptSuggestion(t *testing.T) {
	t.Parallel()
	const guess = "now run the tests"
	r := newRealSession(t, &claudetest.MessagesOptions{
		Replies: []*claudetest.Reply{claudetest.CachedTextReply("one"), claudetest.CachedTextReply("two")},
		RespondSide: func(q *claudetest.Request) *claudetest.Reply {
			if claudetest.IsPromptSuggestion(q) {
				return claudetest.CachedTextReply(guess)
			}
			return nil
		},
	}, func(o *claude.Options) { o.PromptSuggestions = true })

	for _, prompt := range []string{"first prompt", "second prompt"} {
		msgs := turnOf(t, r.Ctx, r.S, prompt)
		if res := result(t, msgs); res.IsError {
			t.Fatalf("turn %q: %+v", prompt, res)
		}
		if ps := find[*claude.PromptSuggestionMessage](msgs); len(ps) != 0 {
			t.Errorf("turn %q carried a suggestion %q; want none inside a turn", prompt, ps[0].Suggestion)
		}
	}

	// The guess comes after the second result, between turns.
	var got *claude.PromptSuggestionMessage
	for m, err := range r.S.Receive(r.Ctx) {
		if err != nil {
			t.Fatalf("Receive: %v", err)
		}
		if ps, ok := m.(*claude.PromptSuggestionMessage); ok {
			got = ps
			break
		}
	}
	if got.Suggestion != guess || got.SessionID == "" || got.UUID == "" {
		t.Errorf("suggestion = %+v, want %q with its session and uuid", got, guess)
	}

	var asked []*claudetest.Request
	for _, q := range r.API.SideRequests() {
		if claudetest.IsPromptSuggestion(q) {
			asked = append(asked, q)
		}
	}
	if len(asked) == 0 {
		t.Fatal("no suggestion request reached the API")
	}
	if p := asked[0].Params; !p.Contains("first prompt") || !p.Contains("second prompt") || !p.Contains("two") {
		t.Errorf("the suggestion was asked without the conversation: %s", asked[0].Body)
	}
	if u := r.API.Unexpected(); len(u) != 0 {
		t.Errorf("%d unscripted main-loop requests; the suggestion took a turn's reply", len(u))
	}
}
