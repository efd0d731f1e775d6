package serve_test

import (
	"strings"
	"testing"

	"github.com/tetherhq/tether/serve"
)

// A sleeping team session woken by a collaborator's prompt wakes as its
// owner's (the owner's session options and isolation, the start check
// as the owner); when the owner's policy now refuses it (the budget is
// spent), the prompt fails forbidden and the session stays asleep.
func TestTeamWakeAsTheOwner(t *testing.T) {
	ctx := testCtx(t)
	e, authz, iso, m := newOwnerTeamEnv(t)
	_, bob, id, _ := sharedWithBob(t, ctx, e)
	hs := m.Get(id)
	if err := hs.Sleep(ctx); err != nil {
		t.Fatal(err)
	}
	bn := 0
	bob.ok(ctx, map[string]any{"type": "subscribe", "session": id})
	turn(t, ctx, bob, id, "from bob", &bn)
	bob.waitFrame(ctx, new(int), "the session waking", isState(id, "waking"))
	wantAliceTwice(t, e, authz, iso) // at the start and at the wake

	// The owner's budget is spent: the wake is refused.
	if err := hs.Sleep(ctx); err != nil {
		t.Fatal(err)
	}
	authz.mu.Lock()
	authz.spent["alice@example.com"] = true
	authz.mu.Unlock()
	f := bob.do(ctx, id, map[string]any{"type": "send", "text": "more"})
	if f.Error == nil || f.Error.Code != serve.CodeForbidden || !strings.Contains(f.Error.Message, "budget") {
		t.Fatalf("send into a session whose owner's budget is spent: %+v", f.Error)
	}
	if !hs.Asleep() {
		t.Errorf("after a refused wake: %v", hs.State())
	}
}
