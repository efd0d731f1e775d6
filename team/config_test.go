package team_test

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tetherhq/tether/team"
)

const sampleConfig = `
allowed_domains: [Example.com]
default_role: member
people:
  - {email: Alice@Example.com, name: Alice, role: admin, policy: {daily_budget_usd: 20}}
  - email: carol@example.com
    role: member
    groups: [auditors]
    policy:
      cwd_roots: ["/home/{user}/src"]
      models: []
      max_sessions: 0
groups:
  eng: {role: member}
  auditors: {role: viewer}
  ops: {role: admin}
policies:
  admin:  {allow_bypass: true}
  member: {cwd_roots: ["/srv/work/{user}", "/srv/shared"], modes: [default, acceptEdits, plan], models: [sonnet], denied_tools: [WebFetch], max_sessions: 3, daily_budget_usd: 5}
  viewer: {}
isolation: auto
state_dir: /var/lib/tether/team
audit: {prompts: false, retention: 2160h}
`

func mustConfig(t *testing.T, y string) *team.Config {
	t.Helper()
	c, err := team.ParseConfig([]byte(y))
	if err != nil {
		t.Fatalf("ParseConfig: %v", err)
	}
	return c
}

func TestParseConfigSample(t *testing.T) {
	c := mustConfig(t, sampleConfig)
	if c.Audit.Retention != 2160*time.Hour || c.Isolation != "auto" || c.StateDir != "/var/lib/tether/team" {
		t.Errorf("parsed %+v", c)
	}
	if c.People[0].Email != "alice@example.com" || c.AllowedDomains[0] != "example.com" {
		t.Errorf("addresses and domains are not lower-cased: %v %v", c.People[0].Email, c.AllowedDomains)
	}
	if !c.MultiUser() {
		t.Error("MultiUser false with two people, groups and a default role")
	}
}

func TestParseConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		name, yaml, key string
		line            int
	}{
		{"unknown top key", "default_role: member\nalowed_domains: [x.com]\n", "alowed_domains", 2},
		{"unknown policy key", "policies:\n  member:\n    daily_budget: 5\n", "daily_budget", 3},
		{"unknown person key", "people:\n  - {email: a@x.com, role: admin, rol: member}\n", "rol", 2},
		{"unknown audit key", "audit: {prompt: true}\n", "prompt", 1},
		{"bad default role", "default_role: boss\n", "default_role", 1},
		{"bad person role", "people:\n  - {email: a@x.com, role: root}\n", "people[0].role", 2},
		{"person without email", "people:\n  - {name: A, role: admin}\n", "people[0].email", 0},
		{"person twice", "people:\n  - {email: a@x.com, role: admin}\n  - {email: A@x.com, role: member}\n", "people[1].email", 0},
		{"bad group role", "groups:\n  eng: {role: owner}\n", "groups.eng.role", 2},
		{"bad policy role", "policies:\n  owner: {}\n", "policies.owner", 0},
		{"bad mode", "policies:\n  member: {modes: [yolo]}\n", "policies.member.modes[0]", 2},
		{"negative budget", "policies:\n  member: {daily_budget_usd: -1}\n", "policies.member.daily_budget_usd", 2},
		{"negative sessions", "people:\n  - {email: a@x.com, role: admin, policy: {max_sessions: -2}}\n", "people[0].policy.max_sessions", 2},
		{"relative root", "policies:\n  member: {cwd_roots: [\"work/{user}\"]}\n", "policies.member.cwd_roots[0]", 2},
		{"unknown placeholder", "policies:\n  member: {cwd_roots: [\"/w/{name}\"]}\n", "policies.member.cwd_roots[0]", 2},
		{"bad isolation", "isolation: maybe\n", "isolation", 1},
		{"relative state", "state_dir: state\n", "state_dir", 1},
		{"bad retention", "audit: {retention: forever}\n", "", 0},
		{"bad domain", "allowed_domains: [bob@x.com]\n", "allowed_domains[0]", 0},
		{"not yaml", "people: [\n", "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := team.ParseConfig([]byte(tc.yaml))
			if !errors.Is(err, team.ErrConfig) {
				t.Fatalf("err %v, want ErrConfig", err)
			}
			var ce *team.ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("err %T, want *ConfigError", err)
			}
			if ce.Key != tc.key {
				t.Errorf("Key %q, want %q (%v)", ce.Key, tc.key, err)
			}
			if tc.line != 0 && ce.Line != tc.line {
				t.Errorf("Line %d, want %d (%v)", ce.Line, tc.line, err)
			}
		})
	}
}

func TestLoadConfigNamesTheFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "team.yaml")
	if err := os.WriteFile(p, []byte("default_role: member\nbogus: 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := team.LoadConfig(p)
	if err == nil || !strings.Contains(err.Error(), p+":2: bogus: unknown key") {
		t.Fatalf("err %v, want the file, line and key", err)
	}
	if _, err := team.LoadConfig(filepath.Join(t.TempDir(), "none.yaml")); !errors.Is(err, team.ErrConfig) {
		t.Fatalf("missing file: %v", err)
	}
}

func TestResolve(t *testing.T) {
	c := mustConfig(t, sampleConfig)
	noDefault := mustConfig(t, "groups: {eng: {role: member}}\npeople: [{email: a@x.com, role: viewer}]\n")
	anyDomain := mustConfig(t, "default_role: viewer\n")
	for _, tc := range []struct {
		name   string
		cfg    *team.Config
		in     team.Identity
		role   team.Role // "" = refused
		person string    // Name after Resolve
	}{
		{"listed person, role claimed ignored", c, team.Identity{Subject: "alice@example.com", Email: "ALICE@example.com", Role: team.RoleViewer}, team.RoleAdmin, "Alice"},
		{"listed by subject only", c, team.Identity{Subject: "alice@example.com"}, team.RoleAdmin, "Alice"},
		{"person entry beats groups", c, team.Identity{Subject: "carol@example.com", Groups: []string{"ops"}}, team.RoleMember, ""},
		{"highest group", c, team.Identity{Subject: "dan@other.org", Groups: []string{"auditors", "eng"}}, team.RoleMember, ""},
		{"admin group", c, team.Identity{Subject: "erin@other.org", Groups: []string{"ops", "auditors"}}, team.RoleAdmin, ""},
		{"default role in allowed domain", c, team.Identity{Subject: "frank@example.com", Email: "frank@EXAMPLE.com"}, team.RoleMember, ""},
		{"outside allowed domains", c, team.Identity{Subject: "mallory@evil.com", Email: "mallory@evil.com"}, "", ""},
		{"lookalike domain", c, team.Identity{Subject: "m@example.com.evil", Email: "m@example.com.evil"}, "", ""},
		{"no email, no default match", c, team.Identity{Subject: "12345"}, "", ""},
		{"unknown group ignored", noDefault, team.Identity{Subject: "g@x.com", Groups: []string{"sales"}}, "", ""},
		{"group without default role", noDefault, team.Identity{Subject: "g@x.com", Groups: []string{"eng"}}, team.RoleMember, ""},
		{"no default role refuses", noDefault, team.Identity{Subject: "h@x.com"}, "", ""},
		{"default role, any domain", anyDomain, team.Identity{Subject: "anyone"}, team.RoleViewer, ""},
		{"no subject", c, team.Identity{Email: "alice@example.com"}, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.in
			got, err := tc.cfg.Resolve(&in)
			if tc.role == "" {
				if !errors.Is(err, team.ErrUnauthenticated) {
					t.Fatalf("Resolve = %+v, %v; want ErrUnauthenticated", got, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Role != tc.role || got.Name != tc.person {
				t.Errorf("role %q name %q, want %q %q", got.Role, got.Name, tc.role, tc.person)
			}
			if !reflect.DeepEqual(in, tc.in) {
				t.Errorf("Resolve changed its argument: %+v", in)
			}
		})
	}
	got, _ := c.Resolve(&team.Identity{Subject: "carol@example.com", Groups: []string{"eng"}})
	if !reflect.DeepEqual(got.Groups, []string{"eng", "auditors"}) {
		t.Errorf("groups %v, want the provider's and the entry's", got.Groups)
	}
}

func TestPolicyMerge(t *testing.T) {
	c := mustConfig(t, sampleConfig)
	resolve := func(id team.Identity) *team.Identity {
		r, err := c.Resolve(&id)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	for _, tc := range []struct {
		name        string
		id          *team.Identity
		roots       []string
		modes       []string
		models      []string
		denied      []string
		maxSessions int
		budget      float64
		bypass      bool
	}{
		{"member by role", resolve(team.Identity{Subject: "frank@example.com", Email: "Frank.O'Neil@example.com"}),
			[]string{"/srv/work/frank.o_neil", "/srv/shared"}, []string{"default", "acceptEdits", "plan"}, []string{"sonnet"}, []string{"WebFetch"}, 3, 5, false},
		{"person overrides some fields", resolve(team.Identity{Subject: "carol@example.com"}),
			[]string{"/home/carol/src"}, []string{"default", "acceptEdits", "plan"}, []string{}, []string{"WebFetch"}, 0, 5, false},
		{"admin with own budget", resolve(team.Identity{Subject: "alice@example.com"}),
			nil, nil, nil, nil, 0, 20, true},
		{"viewer by group", resolve(team.Identity{Subject: "v@other.org", Groups: []string{"auditors"}}),
			nil, nil, nil, nil, 0, 0, false},
		{"nil identity", nil, nil, nil, nil, nil, 0, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := c.Policy(tc.id)
			if !reflect.DeepEqual(p.CwdRoots, tc.roots) || !reflect.DeepEqual(p.Modes, tc.modes) || !reflect.DeepEqual(p.DeniedTools, tc.denied) {
				t.Errorf("roots %q modes %q denied %q, want %q %q %q", p.CwdRoots, p.Modes, p.DeniedTools, tc.roots, tc.modes, tc.denied)
			}
			if len(p.Models) != len(tc.models) || (len(tc.models) > 0 && p.Models[0] != tc.models[0]) {
				t.Errorf("models %q, want %q", p.Models, tc.models)
			}
			if p.SessionLimit() != tc.maxSessions || p.Budget() != tc.budget || p.BypassAllowed() != tc.bypass {
				t.Errorf("max %d budget %v bypass %v, want %d %v %v", p.SessionLimit(), p.Budget(), p.BypassAllowed(), tc.maxSessions, tc.budget, tc.bypass)
			}
			if ws := c.Workspace(tc.id); (len(tc.roots) == 0 && ws != "") || (len(tc.roots) > 0 && ws != tc.roots[0]) {
				t.Errorf("Workspace %q, want the first root", ws)
			}
		})
	}
	// The merged policy is the caller's: changing it changes nothing.
	id := resolve(team.Identity{Subject: "frank@example.com"})
	p := c.Policy(id)
	p.Modes[0], p.DeniedTools[0] = "bypassPermissions", "none"
	if q := c.Policy(id); q.Modes[0] != "default" || q.DeniedTools[0] != "WebFetch" {
		t.Errorf("Policy shares its slices with the configuration: %+v", q)
	}
}

func TestUserName(t *testing.T) {
	for _, tc := range []struct {
		in   team.Identity
		want string
	}{
		{team.Identity{Subject: "x", Email: "Alice.Smith@example.com"}, "alice.smith"},
		{team.Identity{Subject: "bob@example.com"}, "bob"},
		{team.Identity{Subject: "../../etc"}, ".._.._etc"},
		{team.Identity{Subject: "..@x.com"}, "__"},
		{team.Identity{Subject: "."}, "_"},
		{team.Identity{Subject: "@x.com"}, "_x.com"},
		{team.Identity{Subject: "名前@x.com"}, "__"},
		{team.Identity{Subject: "a/b c@x.com"}, "a_b_c"},
	} {
		if got := team.UserName(&tc.in); got != tc.want {
			t.Errorf("UserName(%+v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestMultiUser(t *testing.T) {
	for y, want := range map[string]bool{
		"people: [{email: a@x.com, role: admin}]\n":                                 false,
		"people: [{email: a@x.com, role: admin}, {email: b@x.com, role: viewer}]\n": true,
		"people: [{email: a@x.com, role: admin}]\ngroups: {g: {role: viewer}}\n":    true,
		"default_role: viewer\n":                                   true,
		"people: [{email: a@x.com, role: admin}]\nisolation: on\n": true,
		"default_role: viewer\nisolation: off\n":                   false,
	} {
		if got := mustConfig(t, y).MultiUser(); got != want {
			t.Errorf("MultiUser of %q = %v, want %v", y, got, want)
		}
	}
}
