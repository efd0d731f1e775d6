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
	alice, bob := e.dial(ctx, "alice@example.com"), e.dial(ctx, "bob@example.com")
	id := alice.start(ctx, "")
	alice.ok(ctx, map[string]any{"type": "subscribe", "session": id})
	an := 0
	turn(t, ctx, alice, id, "hello", &an)
	if st, code, _ := e.as("alice@example.com", "POST", "/api/sessions/"+id+"/share", `{"grants":[{"person":"bob@example.com","level":"collaborator"}]}`); st != 200 {
		t.Fatalf("share: %d %s", st, code)
	}
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
