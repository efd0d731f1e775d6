package serve_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
	"github.com/tetherhq/tether/host"
	"github.com/tetherhq/tether/serve"
	"github.com/tetherhq/tether/team"
)

// TestRealCLITeamIsolation goes through serve's start path with the
// real CLI under bubblewrap: Alice's session runs in her workspace,
// which holds a secret; Bob's session, started the same way, runs Bash
// to read it, and the server's own CLI config folder (named in the
// sessions' environment), and finds neither; put to sleep and woken by his next
// prompt, his CLI is confined again and resumes the conversation.
func TestRealCLITeamIsolation(t *testing.T) {
	ctx := testCtx(t)
	iso := newIsolation(t, ctx)
	cfg := &fakeConfig{root: t.TempDir()}
	wsA, wsB := cfg.Workspace(&me_alice), cfg.Workspace(&team.Identity{Subject: "bob@example.com"})
	for _, d := range []string{wsA, wsB} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	secret := filepath.Join(wsA, "secret.txt")
	if err := os.WriteFile(secret, []byte("the-secret-of-alice\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The server's own CLI config folder, named in the sessions'
	// environment (an operator's CLAUDE_CONFIG_DIR): a confined CLI keeps
	// its config in its owner's HOME instead, and never sees this one.
	hostConfig := t.TempDir()
	creds := filepath.Join(hostConfig, ".credentials.json")
	if err := os.WriteFile(creds, []byte("the-host-credentials\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	peekCmd := "cat " + secret + "; cat " + creds
	api := claudetest.NewMessagesServer(&claudetest.MessagesOptions{Replies: []*claudetest.Reply{
		claudetest.ToolUseReply("toolu_peek", "Bash", map[string]any{"command": peekCmd, "description": "peek"}),
		claudetest.TextReply("done"),
		claudetest.ToolUseReply("toolu_peek2", "Bash", map[string]any{"command": peekCmd, "description": "peek"}),
		claudetest.TextReply("done again"),
	}})
	t.Cleanup(api.Close)
	cli := claudetest.NewRealCLI(t, api)
	cli.Env[claude.EnvConfigDir] = hostConfig
	to := &serve.TeamOptions{Auth: fakeAuth{}, Config: cfg, Authorizer: newFakeAuthz(), Isolation: iso}
	m := host.NewManager(nil)
	srv := serve.NewServer(serve.NewLocalBackend(m, &serve.LocalOptions{Session: &host.Options{CLI: cli.Options()}, Team: to}), &serve.Options{Team: to})
	hs := httptest.NewServer(srv)
	t.Cleanup(func() { hs.Close(); srv.Close(); m.Close() })
	e := &teamEnv{t: t, http: hs, cfg: cfg}

	alice, bob := e.dial(ctx, "alice@example.com"), e.dial(ctx, "bob@example.com")
	alice.start(ctx, "") // her workspace, her secret, her CLI running
	id := bob.start(ctx, "")
	bob.ok(ctx, map[string]any{"type": "subscribe", "session": id})
	n := 0
	peek := func(toolUseID string) {
		t.Helper()
		if f := bob.do(ctx, id, map[string]any{"type": "send", "text": "peek"}); f.Error != nil {
			t.Fatal(f.Error)
		}
		ev := bob.waitFrame(ctx, &n, "the approval", isKind(id, host.EventApproval))
		var ai host.ApprovalInfo
		json.Unmarshal(ev.Event.Data, &ai)
		if f := bob.do(ctx, id, map[string]any{"type": "answer", "approval": ai.ID, "behavior": "allow"}); f.Error != nil {
			t.Fatal(f.Error)
		}
		bob.waitFrame(ctx, &n, "idle", isState(id, "idle"))
		reqs := api.MessagesRequests()
		if len(reqs) == 0 {
			t.Fatal("no request reached the API")
		}
		tr := reqs[len(reqs)-1].Params.ToolResult(toolUseID)
		if tr == nil || len(tr.Content) == 0 {
			t.Fatal("the Bash result did not reach the API")
		}
		out := tr.Content[0].Text
		if strings.Contains(out, "the-secret-of-alice") || strings.Contains(out, "the-host-credentials") || strings.Count(out, "No such file or directory") != 2 {
			t.Fatalf("Bob's Bash on Alice's file and the host's config folder: %q", out)
		}
	}
	peek("toolu_peek")
	// Asleep and woken by his next prompt, his CLI is confined again.
	if err := m.Get(id).Sleep(ctx); err != nil {
		t.Fatal(err)
	}
	peek("toolu_peek2")
	reqs := api.MessagesRequests()
	if b, _ := json.Marshal(reqs[len(reqs)-1].Params.Messages); !strings.Contains(string(b), `"toolu_peek"`) {
		t.Errorf("the woken, confined CLI did not resume the conversation: %.300s", b)
	}
}

// newIsolation is bubblewrap isolation with its state in a test folder,
// checked: required under CI=true, else the test is skipped without it.
func newIsolation(t *testing.T, ctx context.Context) *team.Isolation {
	t.Helper()
	iso, err := team.NewIsolation(&team.IsolationOptions{StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if err := iso.Check(ctx); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("isolation required under CI=true: %v", err)
		}
		t.Skipf("isolation unavailable here: %v", err)
	}
	return iso
}
