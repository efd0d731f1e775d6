package serve_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
	"github.com/tetherhq/tether/host"
	"github.com/tetherhq/tether/serve"
	"github.com/tetherhq/tether/team"
)

// ownerAuthz is fakeAuthz noting whose session options each start got.
type ownerAuthz struct {
	*fakeAuthz
	mu   sync.Mutex
	opts []string
}

func (a *ownerAuthz) SessionOptions(ctx context.Context, o *host.Options) *host.Options {
	id, _ := team.FromContext(ctx)
	a.mu.Lock()
	a.opts = append(a.opts, subjectOr(id))
	a.mu.Unlock()
	return a.fakeAuthz.SessionOptions(ctx, o)
}

// recordingIsolator notes whom each session's CLI is confined for, and
// where; it confines nothing (the fake CLI runs in the test).
type recordingIsolator struct {
	mu    sync.Mutex
	calls []string
}

func (r *recordingIsolator) Transport(id *team.Identity, workspace string, base claude.Transport) claude.Transport {
	r.mu.Lock()
	r.calls = append(r.calls, subjectOr(id)+" "+workspace)
	r.mu.Unlock()
	return base
}

func (r *recordingIsolator) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.calls, ", ")
}

// quitCLI echoes prompts; "quit" makes the CLI exit, as a crash would;
// "tool <command>" asks to run the command with Bash and waits for the
// answer.
func quitCLI(ctx context.Context, c *claudetest.CLI) error {
	if _, err := c.HandleInitialize(ctx); err != nil {
		return err
	}
	for {
		u, err := c.ReadUser(ctx)
		if err != nil {
			return err
		}
		text := claudetest.UserText(u.Raw)
		c.Write(c.SystemInit(), replayOf(c, u))
		switch cmd, ok := strings.CutPrefix(text, "tool "); {
		case text == "quit":
			return nil
		case ok:
			input := map[string]string{"command": cmd}
			c.Write(c.AssistantToolUse("toolu_q", "Bash", input))
			if _, err := c.CanUseTool(ctx, "toolu_q", "Bash", input); err != nil {
				return err
			}
			c.Write(c.ToolResult("toolu_q", "ok", false), c.ResultSuccess("ran it"))
		default:
			c.Write(c.AssistantText("echo: "+text), c.ResultSuccess("echo: "+text))
		}
	}
}

// newOwnerTeamEnv is a team server over the local backend whose fake
// CLI is quitCLI, noting whose session options and isolation each start
// (or wake) got.
func newOwnerTeamEnv(t *testing.T) (*teamEnv, *ownerAuthz, *recordingIsolator, *host.Manager) {
	t.Helper()
	cfg := &fakeConfig{root: t.TempDir()}
	for u := range testPeople {
		if err := os.MkdirAll(cfg.Workspace(&team.Identity{Subject: u}), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	authz := &ownerAuthz{fakeAuthz: newFakeAuthz()}
	iso := &recordingIsolator{}
	to := &serve.TeamOptions{Auth: fakeAuth{}, Config: cfg, Authorizer: authz, Isolation: iso}
	e := teamServer(t, to, cfg, authz.fakeAuthz, quitCLI, nil)
	return e, authz, iso, e.m
}

// wantAliceTwice fails unless the session options and the isolation
// were made twice, both times for alice (the owner) and her workspace.
func wantAliceTwice(t *testing.T, e *teamEnv, authz *ownerAuthz, iso *recordingIsolator) {
	t.Helper()
	wsA := e.cfg.Workspace(&me_alice)
	authz.mu.Lock()
	opts := fmt.Sprint(authz.opts)
	authz.mu.Unlock()
	if opts != "[alice@example.com alice@example.com]" {
		t.Errorf("session options were made for %s, want the owner's both times", opts)
	}
	if got, want := iso.String(), "alice@example.com "+wsA+", alice@example.com "+wsA; got != want {
		t.Errorf("isolation for %q, want %q", got, want)
	}
}

// sharedWithBob starts alice's session, runs a turn in it and shares it
// with bob as a collaborator; an is alice's frame cursor after the turn.
func sharedWithBob(t *testing.T, ctx context.Context, e *teamEnv) (alice, bob *wsClient, id string, an int) {
	t.Helper()
	alice, bob = e.dial(ctx, "alice@example.com"), e.dial(ctx, "bob@example.com")
	id = alice.start(ctx, "")
	alice.ok(ctx, map[string]any{"type": "subscribe", "session": id})
	turn(t, ctx, alice, id, "hello", &an)
	if st, code, _ := e.as("alice@example.com", "POST", "/api/sessions/"+id+"/share", `{"grants":[{"person":"bob@example.com","level":"collaborator"}]}`); st != 200 {
		t.Fatalf("share: %d %s", st, code)
	}
	return alice, bob, id, an
}

// A collaborator who resumes the owner's session whose CLI died gets it
// back as the owner's: the owner's session options (denied tools,
// spend) and the owner's isolation, not the collaborator's; the resumed
// session stays the owner's.
func TestTeamResumeKeepsTheOwner(t *testing.T) {
	ctx := testCtx(t)
	e, authz, iso, _ := newOwnerTeamEnv(t)

	alice, bob, id, an := sharedWithBob(t, ctx, e)
	if f := alice.do(ctx, id, map[string]any{"type": "send", "text": "quit"}); f.Error != nil {
		t.Fatal(f.Error)
	}
	alice.waitFrame(ctx, &an, "the session disconnected", func(f *frame) bool {
		return isKind(id, host.EventState)(f) && strings.Contains(string(f.Event.Data), `"disconnected"`)
	})
	f := bob.do(ctx, id, map[string]any{"type": "resume"})
	if f.Error != nil {
		t.Fatalf("bob's resume: %v", f.Error)
	}
	var rr serve.Result
	json.Unmarshal(f.Result, &rr)
	if rr.Session == nil || rr.Session.ID == "" || rr.Session.Person != "alice@example.com" {
		t.Fatalf("resumed: %s", f.Result)
	}
	wantAliceTwice(t, e, authz, iso)
	// Bob's commands into it are still his own, checked as him.
	bn := 0
	bob.ok(ctx, map[string]any{"type": "subscribe", "session": rr.Session.ID})
	turn(t, ctx, bob, rr.Session.ID, "from bob", &bn)
	e.authz.mu.Lock()
	checks := strings.Join(e.authz.hostChecks, ",")
	e.authz.mu.Unlock()
	if !strings.Contains(checks, "bob@example.com send") {
		t.Errorf("host checks %s: bob's send was not checked as bob", checks)
	}
}

// Who answered an approval survives: in the session's snapshot for
// whoever opens it later, and in the history of the session that
// continues the conversation after its CLI died (resume).
func TestAnsweredByInSnapshotAndResume(t *testing.T) {
	ctx := testCtx(t)
	root := t.TempDir()
	cfg := &fakeConfig{root: root}
	if err := os.MkdirAll(cfg.Workspace(&me_alice), 0o755); err != nil {
		t.Fatal(err)
	}
	authz := newFakeAuthz()
	to := &serve.TeamOptions{Auth: fakeAuth{}, Config: cfg, Authorizer: authz}
	e := teamServer(t, to, cfg, authz, quitCLI, nil)
	alice := e.dial(ctx, "alice@example.com")
	id := alice.start(ctx, "")
	alice.ok(ctx, map[string]any{"type": "subscribe", "session": id})
	n := 0
	alice.ok(ctx, map[string]any{"type": "do", "session": id, "command": map[string]any{"type": "send", "text": "tool ls"}})
	ap := alice.waitFrame(ctx, &n, "the approval", isKind(id, host.EventApproval))
	var ai host.ApprovalInfo
	json.Unmarshal(ap.Event.Data, &ai)
	alice.ok(ctx, map[string]any{"type": "do", "session": id, "command": map[string]any{"type": "answer", "approval": ai.ID, "behavior": "allow"}})
	alice.waitFrame(ctx, &n, "idle after the tool", isState(id, "idle"))

	want := host.ResolvedApproval{ApprovalResolved: host.ApprovalResolved{ID: ai.ID, Outcome: "allowed", AnsweredBy: "Alice Example"}, Kind: "tool", ToolName: "Bash", ToolUseID: "toolu_q"}
	check := func(what string, got []host.ResolvedApproval) {
		t.Helper()
		if len(got) != 1 || got[0].Resolved.IsZero() {
			t.Fatalf("%s: resolved %+v; want one, with its time", what, got)
		}
		got[0].Resolved = want.Resolved
		if got[0] != want {
			t.Errorf("%s: resolved %+v; want %+v", what, got[0], want)
		}
	}
	check("the snapshot", snapshotAs(t, e, "alice@example.com", id).Resolved)

	// The CLI dies; the conversation is resumed as a new session.
	if f := alice.do(ctx, id, map[string]any{"type": "send", "text": "quit"}); f.Error != nil {
		t.Fatal(f.Error)
	}
	alice.waitFrame(ctx, &n, "the session disconnected", func(f *frame) bool {
		return isKind(id, host.EventState)(f) && strings.Contains(string(f.Event.Data), `"disconnected"`)
	})
	f := alice.do(ctx, id, map[string]any{"type": "resume"})
	var rr serve.Result
	if f.Error != nil || json.Unmarshal(f.Result, &rr) != nil || rr.Session == nil || rr.Session.ID == id {
		t.Fatalf("resume: %s", f.raw)
	}
	st, code, body := e.as("alice@example.com", "GET", "/api/sessions/"+rr.Session.ID+"/snapshot", "")
	var sn struct {
		History *serve.History `json:"history"`
	}
	if st != 200 || json.Unmarshal(body, &sn) != nil || sn.History == nil {
		t.Fatalf("the resumed session's snapshot: %d %s %s", st, code, body)
	}
	check("the resumed session's history", sn.History.Resolved)
}
