package team_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
	"github.com/tetherhq/tether/host"
	"github.com/tetherhq/tether/team"
)

var _ team.Isolator = (*team.Isolation)(nil)

// confiner is a team.Isolator noting whom and where each CLI is
// confined for; its transport is a marker that remembers the base. Its
// Home is a real Isolation's.
type confiner struct {
	iso   *team.Isolation
	mu    sync.Mutex
	calls []string
}

type confined struct {
	claude.Transport
	workspace string
}

func (c *confiner) Transport(id *team.Identity, workspace string, base claude.Transport) claude.Transport {
	c.mu.Lock()
	c.calls = append(c.calls, id.Subject+" "+workspace)
	c.mu.Unlock()
	return &confined{Transport: base, workspace: workspace}
}

func (c *confiner) Home(id *team.Identity) string { return c.iso.Home(id) }

func (c *confiner) take() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.calls
	c.calls = nil
	return out
}

// The one policy of a person's session, as serve's local backend and a
// cluster agent both apply it: at the start, the owner's options, the CLI
// confined to its working directory (not the whole workspace) with its
// config folder in the owner's confined HOME, whatever the template's
// environment said; at a failover asked for by someone else, the owner's
// again; at each wake, the owner resolved and checked again with the
// policy of now (denied tools of now, a spent budget or a removed person
// refusing it), the CLI confined again; without isolation, the transport
// and config folder untouched.
func TestSessionPolicy(t *testing.T) {
	f := newFixture(t, false)
	stateDir := t.TempDir()
	iso, err := team.NewIsolation(&team.IsolationOptions{StateDir: stateDir})
	if err != nil {
		t.Fatal(err)
	}
	rec := &confiner{iso: iso}
	p := f.az.SessionPolicy(rec)
	ws := filepath.Join(f.root, "owner")
	sub := filepath.Join(ws, "repo", "sub")
	outside := t.TempDir()
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	owner, _ := team.FromContext(f.as("owner"))
	base := &claudetest.FakeCLI{}
	var templateWakes int
	tmpl := &host.Options{
		CLI: &claude.Options{Transport: base, DisallowedTools: []string{"Bash(rm:*)"},
			Env: map[string]string{claude.EnvConfigDir: "/srv/operator/.claude", "KEEP": "1"}},
		OnWake: func(context.Context, *host.Session, *claude.Options) error { templateWakes++; return nil },
	}
	homeDir := filepath.Join(iso.Home(owner), ".claude")
	if got := p.ConfigDir(owner); got != homeDir || !strings.HasPrefix(got, stateDir) {
		t.Errorf("ConfigDir = %q, want %q", got, homeDir)
	}

	// A start in a sub-folder of the owner's workspace: confined to it,
	// not to the workspace (a root may be the team's, shared).
	o, err := p.Options(f.as("owner"), owner, sub, tmpl)
	if err != nil {
		t.Fatal(err)
	}
	if o.CLI.Cwd != sub || !reflect.DeepEqual(o.CLI.DisallowedTools, []string{"Bash(rm:*)", "WebFetch"}) {
		t.Errorf("start: cwd %q, denied %v", o.CLI.Cwd, o.CLI.DisallowedTools)
	}
	if o.Commands == nil || o.Commands.Authorize == nil || o.OnTurnCost == nil || o.OnWake == nil {
		t.Fatalf("start: the owner's checks, spend and wake not wired: %+v", o)
	}
	if c, ok := o.CLI.Transport.(*confined); !ok || c.Transport != base || c.workspace != sub {
		t.Errorf("start: transport %#v, want confined to %s through the template's", o.CLI.Transport, sub)
	}
	if got := rec.take(); !reflect.DeepEqual(got, []string{"owner@x.com " + sub}) {
		t.Errorf("start: confined %v", got)
	}
	if o.CLI.Env[claude.EnvConfigDir] != homeDir || o.CLI.Env["KEEP"] != "1" {
		t.Errorf("start: env %v, want the config folder in the owner's HOME", o.CLI.Env)
	}
	if tmpl.CLI.Env[claude.EnvConfigDir] != "/srv/operator/.claude" || tmpl.CLI.Cwd != "" || len(tmpl.CLI.DisallowedTools) != 1 {
		t.Errorf("the template changed: %+v", tmpl.CLI)
	}

	// At the workspace itself (a start without a working directory),
	// all of it; outside it, the folder asked for.
	for _, cwd := range []string{ws, outside} {
		o, err := p.Options(f.as("owner"), owner, cwd, tmpl)
		if err != nil {
			t.Fatal(err)
		}
		if c, ok := o.CLI.Transport.(*confined); !ok || c.workspace != cwd || o.CLI.Cwd != cwd {
			t.Errorf("start in %s: transport %#v, cwd %s", cwd, o.CLI.Transport, o.CLI.Cwd)
		}
	}
	rec.take()

	// A failover an admin asks for: still the owner's (from the ACL).
	f.shared("s1")
	own, err := f.az.Owner(f.as("admin"), "s1")
	if err != nil {
		t.Fatal(err)
	}
	fo, err := p.Options(f.as("admin"), own, ws, tmpl)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(fo.CLI.DisallowedTools, []string{"Bash(rm:*)", "WebFetch"}) || fo.CLI.Env[claude.EnvConfigDir] != homeDir {
		t.Errorf("failover: denied %v, config %q: want the owner's", fo.CLI.DisallowedTools, fo.CLI.Env[claude.EnvConfigDir])
	}
	if got := rec.take(); !reflect.DeepEqual(got, []string{"owner@x.com " + ws}) {
		t.Errorf("failover: confined %v", got)
	}

	// A wake a collaborator's prompt causes, with the policy changed
	// since the start: the owner's denied tools of now.
	pol := f.cfg.Policies[team.RoleMember]
	pol.DeniedTools = []string{"WebFetch", "WebSearch"}
	f.cfg.Policies[team.RoleMember] = pol
	collab := f.as("collab")
	wake := func() (*claude.Options, error) {
		cli := *o.CLI
		cli.Transport, cli.Env = nil, map[string]string{"KEEP": "1"}
		return &cli, o.OnWake(collab, nil, &cli)
	}
	cli, err := wake()
	if err != nil {
		t.Fatalf("wake: %v", err)
	}
	if !reflect.DeepEqual(cli.DisallowedTools, []string{"Bash(rm:*)", "WebFetch", "WebSearch"}) {
		t.Errorf("wake: denied %v, want the owner's of now", cli.DisallowedTools)
	}
	if c, ok := cli.Transport.(*confined); !ok || c.Transport != base || c.workspace != sub {
		t.Errorf("wake: transport %#v, want confined again", cli.Transport)
	}
	if cli.Env[claude.EnvConfigDir] != homeDir || cli.Env["KEEP"] != "1" {
		t.Errorf("wake: env %v", cli.Env)
	}
	if got := rec.take(); !reflect.DeepEqual(got, []string{"owner@x.com " + sub}) || templateWakes != 1 {
		t.Errorf("wake: confined %v, the template's OnWake ran %d times", got, templateWakes)
	}

	// The owner's budget spent: the wake is refused, as a start would be.
	if err := f.st.AddSpend(f.ctx, "owner@x.com", 5.12); err != nil {
		t.Fatal(err)
	}
	if _, err := wake(); !errors.Is(err, team.ErrBudget) {
		t.Errorf("wake over the owner's budget: %v, want ErrBudget", err)
	}
	// The owner no longer in the team: refused.
	f.cfg.People = f.cfg.People[:0:0]
	if _, err := wake(); !errors.Is(err, team.ErrUnauthenticated) {
		t.Errorf("wake of a removed owner's session: %v, want ErrUnauthenticated", err)
	}
	if got := rec.take(); len(got) != 0 {
		t.Errorf("refused wakes confined %v", got)
	}

	// No owner: refused.
	if _, err := p.Options(f.ctx, nil, sub, tmpl); !errors.Is(err, team.ErrUnauthenticated) {
		t.Errorf("Options without an owner: %v", err)
	}

	// Without isolation: the owner's options, nothing confined.
	bare, err := f.az.SessionPolicy(nil).Options(f.ctx, owner, sub, tmpl)
	if err != nil {
		t.Fatal(err)
	}
	if bare.CLI.Transport != base || bare.CLI.Env[claude.EnvConfigDir] != "/srv/operator/.claude" || bare.CLI.Cwd != sub {
		t.Errorf("unconfined: transport %#v, env %v, cwd %q", bare.CLI.Transport, bare.CLI.Env, bare.CLI.Cwd)
	}
}

// TestWakeRecorded: a session asleep that a collaborator's command wakes
// is recorded as session_start "wake" by the collaborator (the owner's
// CLI starts at their word); a command to the awake session records no
// wake.
func TestWakeRecorded(t *testing.T) {
	f := newFixture(t, false)
	p := f.az.SessionPolicy(nil)
	owner, _ := team.FromContext(f.as("owner"))
	ws := filepath.Join(f.root, "owner")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	o, err := p.Options(f.as("owner"), owner, ws, &host.Options{CLI: &claude.Options{Transport: &claudetest.FakeCLI{Script: claudetest.Echo}}})
	if err != nil {
		t.Fatal(err)
	}
	m := host.NewManager(nil)
	defer m.Close()
	s, err := m.Start(f.ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	f.shared(s.ID())
	wakes := func() []string {
		var out []string
		for _, ev := range f.rec.all() {
			if ev.Action == team.ActionStart && ev.Detail == "wake" {
				out = append(out, ev.Actor+" "+ev.Session)
			}
		}
		return out
	}
	if err := s.Sleep(f.ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Do(f.as("collab"), &host.Command{Type: host.CommandWake}); err != nil {
		t.Fatalf("wake: %v", err)
	}
	if _, err := s.Do(f.as("owner"), &host.Command{Type: host.CommandWake}); err != nil {
		t.Fatalf("wake of a session awake: %v", err)
	}
	if got, want := wakes(), []string{"collab@x.com " + s.ID()}; !slices.Equal(got, want) {
		t.Errorf("wakes recorded %q, want %q", got, want)
	}
}
