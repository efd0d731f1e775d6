package team

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/tetherhq/tether/host"
)

// ErrConfig: the team configuration is malformed or inconsistent. The
// error is a *ConfigError naming the key (and the line, when known).
var ErrConfig = errors.New("team: bad configuration")

// ConfigError says what is wrong in a team configuration and where.
type ConfigError struct {
	File    string // the file, "" for ParseConfig
	Line    int    // 1-based, 0 when unknown
	Key     string // the key at fault, e.g. "policies.member.modes"
	Message string
}

func (e *ConfigError) Error() string {
	var b strings.Builder
	b.WriteString("team: configuration")
	if e.File != "" {
		b.WriteString(" " + e.File)
	}
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	if e.Key != "" {
		b.WriteString(": " + e.Key)
	}
	b.WriteString(": " + e.Message)
	return b.String()
}

// Unwrap returns ErrConfig.
func (e *ConfigError) Unwrap() error { return ErrConfig }

// Config is a team's configuration (tether serve --team FILE): who may
// sign in with which role, what each role and person may do, whether
// sessions are isolated, where the team's state lives.
type Config struct {
	// AllowedDomains are the e-mail domains whose people may sign in
	// without being listed (they get DefaultRole). Empty = any address
	// the sign-in accepts, when DefaultRole is set.
	AllowedDomains []string `json:"allowed_domains,omitempty"`
	// DefaultRole is the role of people listed neither by e-mail nor by
	// group; "" refuses them.
	DefaultRole Role `json:"default_role,omitempty"`
	// People are listed by e-mail address: their role, and a policy that
	// overrides their role's field by field.
	People []Person `json:"people,omitempty"`
	// Groups give a role to the members of a group (the provider's
	// groups claim, a proxy's groups header, Person.Groups).
	Groups map[string]GroupConfig `json:"groups,omitempty"`
	// Policies are per role.
	Policies map[Role]Policy `json:"policies,omitempty"`
	// Isolation is "auto" (the default: on when more than one person can
	// sign in), "on" or "off".
	Isolation string `json:"isolation,omitempty"`
	// StateDir holds the team's state on one machine: homes and tmp
	// folders of isolation, the local JetStream store, LocalNATSFile.
	StateDir string `json:"state_dir,omitempty"`
	// Audit configures the audit log.
	Audit AuditConfig `json:"audit"`
}

// Person is one person of the configuration.
type Person struct {
	Email  string   `json:"email"`
	Name   string   `json:"name,omitempty"`
	Role   Role     `json:"role"`
	Groups []string `json:"groups,omitempty"` // added to the provider's
	Policy *Policy  `json:"policy,omitempty"` // overrides the role's, field by field
}

// Directory returns the people the configuration lists, by e-mail
// address and display name (Name, else the address) only, sorted by
// name: whom a person can share a session with by name.
func (c *Config) Directory() []Person {
	out := make([]Person, 0, len(c.People))
	for _, p := range c.People {
		if p.Email == "" {
			continue
		}
		out = append(out, Person{Email: strings.ToLower(p.Email), Name: cmp.Or(p.Name, p.Email)})
	}
	slices.SortFunc(out, func(a, b Person) int { return strings.Compare(strings.ToLower(a.Name), strings.ToLower(b.Name)) })
	return out
}

// GroupConfig is what a group's members get.
type GroupConfig struct {
	Role Role `json:"role"`
}

// AuditConfig configures the audit log.
type AuditConfig struct {
	// Prompts records prompts' text; off, only their length is recorded.
	Prompts bool `json:"prompts,omitempty"`
	// Retention is how long events are kept (0 = the audit log's
	// default, DefaultAuditRetention: 90 days). In YAML a
	// Go duration ("2160h") or a number of seconds.
	Retention time.Duration `json:"retention,omitempty"`
	// MaxBytes bounds the log's size; past it the oldest events go
	// (0 = DefaultAuditMaxBytes, 4 GiB).
	MaxBytes int64 `json:"max_bytes,omitempty"`
}

// UnmarshalJSON reads Retention as a duration string or seconds.
func (a *AuditConfig) UnmarshalJSON(b []byte) error {
	var w struct {
		Prompts   bool            `json:"prompts"`
		Retention json.RawMessage `json:"retention"`
		MaxBytes  int64           `json:"max_bytes"`
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(&w); err != nil {
		return err
	}
	a.Prompts, a.MaxBytes = w.Prompts, w.MaxBytes
	a.Retention = 0
	if len(w.Retention) == 0 || string(w.Retention) == "null" {
		return nil
	}
	var s string
	if json.Unmarshal(w.Retention, &s) == nil {
		r, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("audit.retention: %q is not a duration like 2160h", s)
		}
		a.Retention = r
		return nil
	}
	var secs float64
	if err := json.Unmarshal(w.Retention, &secs); err != nil {
		return fmt.Errorf("audit.retention: want a duration like 2160h")
	}
	a.Retention = time.Duration(secs * float64(time.Second))
	return nil
}

// Policy is what a role or a person may do. In the configuration an
// absent field inherits (a person's policy from their role's); the
// merged policy (Config.Policy) has every field as it applies.
type Policy struct {
	// CwdRoots are the folders sessions may run in (or below); "{user}"
	// stands for the person's user name (UserName). Empty = anywhere.
	CwdRoots []string `json:"cwd_roots,omitempty"`
	// Modes are the permission modes allowed at start and by set_mode
	// (host.PermissionModes). Empty = all but bypassPermissions, which
	// needs AllowBypass whatever Modes lists.
	Modes []string `json:"modes,omitempty"`
	// Models are the models allowed, as named at start or by set_model.
	// Empty = any.
	Models []string `json:"models,omitempty"`
	// DeniedTools are given to the CLI as --disallowedTools rules.
	DeniedTools []string `json:"denied_tools,omitempty"`
	// MaxSessions bounds the person's concurrent sessions (nil or 0 =
	// no bound).
	MaxSessions *int `json:"max_sessions,omitempty"`
	// DailyBudgetUSD bounds what the person's sessions spend per UTC
	// day: a prompt sent once it is spent is refused (nil or 0 = no
	// budget).
	DailyBudgetUSD *float64 `json:"daily_budget_usd,omitempty"`
	// AllowBypass lets an admin use bypassPermissions, when the server
	// allows it too (AuthorizerOptions.AllowBypass).
	AllowBypass *bool `json:"allow_bypass,omitempty"`
}

// SessionLimit is MaxSessions, 0 meaning no bound.
func (p Policy) SessionLimit() int {
	if p.MaxSessions == nil {
		return 0
	}
	return *p.MaxSessions
}

// Budget is DailyBudgetUSD, 0 meaning no budget.
func (p Policy) Budget() float64 {
	if p.DailyBudgetUSD == nil {
		return 0
	}
	return *p.DailyBudgetUSD
}

// BypassAllowed is AllowBypass, false when unset.
func (p Policy) BypassAllowed() bool { return p.AllowBypass != nil && *p.AllowBypass }

// LoadConfig reads and checks the configuration in path.
func LoadConfig(path string) (*Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, &ConfigError{File: path, Message: err.Error()}
	}
	c, err := ParseConfig(b)
	var ce *ConfigError
	if errors.As(err, &ce) {
		ce.File = path
	}
	return c, err
}

var unknownField = regexp.MustCompile(`unknown field "([^"]+)"`)

// ParseConfig parses and checks a configuration in YAML (or JSON).
// Unknown keys are errors: a misspelt policy must not silently allow.
func ParseConfig(b []byte) (*Config, error) {
	var c Config
	if err := yaml.UnmarshalStrict(b, &c); err != nil {
		ce := &ConfigError{Message: cleanYAMLError(err)}
		if m := unknownField.FindStringSubmatch(err.Error()); m != nil {
			ce.Key, ce.Message = m[1], "unknown key"
			ce.Line = lineOfKey(b, m[1])
		}
		return nil, ce
	}
	if err := c.validate(); err != nil {
		if ce, ok := err.(*ConfigError); ok && ce.Line == 0 {
			ce.Line = lineOfKey(b, lastKey(ce.Key))
		}
		return nil, err
	}
	return &c, nil
}

func cleanYAMLError(err error) string {
	s := err.Error()
	s = strings.TrimPrefix(s, "error unmarshaling JSON: ")
	s = strings.TrimPrefix(s, "while decoding JSON: ")
	return s
}

// lastKey is the last element of a dotted key, without an index.
func lastKey(k string) string {
	if i := strings.LastIndexByte(k, '.'); i >= 0 {
		k = k[i+1:]
	}
	if i := strings.IndexByte(k, '['); i >= 0 {
		k = k[:i]
	}
	return k
}

// lineOfKey finds the first line where key is written as a YAML key
// (block or flow style), 0 when not found: the YAML to JSON conversion
// loses positions, and an approximate line beats none.
func lineOfKey(b []byte, key string) int {
	if key == "" {
		return 0
	}
	re, err := regexp.Compile(`(^|[\s{,\-])"?` + regexp.QuoteMeta(key) + `"?\s*:`)
	if err != nil {
		return 0
	}
	for i, l := range strings.Split(string(b), "\n") {
		if c := strings.IndexByte(l, '#'); c >= 0 {
			l = l[:c]
		}
		if re.MatchString(l) {
			return i + 1
		}
	}
	return 0
}

func cfgErr(key, format string, args ...any) *ConfigError {
	return &ConfigError{Key: key, Message: fmt.Sprintf(format, args...)}
}

func (c *Config) validate() error {
	if c.DefaultRole != "" && !c.DefaultRole.Valid() {
		return cfgErr("default_role", "%q is not a role (admin, member, viewer, or empty to refuse unlisted people)", c.DefaultRole)
	}
	for i, d := range c.AllowedDomains {
		d = strings.ToLower(strings.TrimSpace(d))
		if d == "" || strings.ContainsAny(d, "@ /") {
			return cfgErr(fmt.Sprintf("allowed_domains[%d]", i), "%q is not an e-mail domain", c.AllowedDomains[i])
		}
		c.AllowedDomains[i] = d
	}
	seen := map[string]bool{}
	for i := range c.People {
		p := &c.People[i]
		key := fmt.Sprintf("people[%d]", i)
		p.Email = strings.ToLower(strings.TrimSpace(p.Email))
		if p.Email == "" {
			return cfgErr(key+".email", "missing: people are listed by e-mail address")
		}
		if seen[p.Email] {
			return cfgErr(key+".email", "%s is listed twice", p.Email)
		}
		seen[p.Email] = true
		if !p.Role.Valid() {
			return cfgErr(key+".role", "%q is not a role (admin, member, viewer)", p.Role)
		}
		if p.Policy != nil {
			if err := p.Policy.validate(key + ".policy"); err != nil {
				return err
			}
		}
	}
	for name, g := range c.Groups {
		if name == "" {
			return cfgErr("groups", "a group has no name")
		}
		if !g.Role.Valid() {
			return cfgErr("groups."+name+".role", "%q is not a role (admin, member, viewer)", g.Role)
		}
	}
	for r, p := range c.Policies {
		if !r.Valid() {
			return cfgErr("policies."+string(r), "%q is not a role (admin, member, viewer)", r)
		}
		if err := p.validate("policies." + string(r)); err != nil {
			return err
		}
	}
	switch c.Isolation {
	case "":
		c.Isolation = "auto"
	case "true": // YAML 1.1 reads an unquoted on as true
		c.Isolation = "on"
	case "false":
		c.Isolation = "off"
	case "auto", "on", "off":
	default:
		return cfgErr("isolation", "%q is not auto, on or off", c.Isolation)
	}
	if c.StateDir != "" && !filepath.IsAbs(c.StateDir) {
		return cfgErr("state_dir", "%q is not an absolute path", c.StateDir)
	}
	if c.Audit.MaxBytes < 0 {
		return cfgErr("audit.max_bytes", "is negative")
	}
	if c.Audit.Retention < 0 {
		return cfgErr("audit.retention", "is negative")
	}
	return nil
}

func (p *Policy) validate(key string) error {
	for i, r := range p.CwdRoots {
		if !filepath.IsAbs(r) {
			return cfgErr(fmt.Sprintf("%s.cwd_roots[%d]", key, i), "%q is not an absolute path", r)
		}
		if strings.Count(r, "{") != strings.Count(r, "{user}") || strings.Contains(strings.ReplaceAll(r, "{user}", ""), "}") {
			return cfgErr(fmt.Sprintf("%s.cwd_roots[%d]", key, i), "%q: only {user} may be expanded", r)
		}
	}
	for i, m := range p.Modes {
		if !slices.Contains(host.PermissionModes, m) {
			return cfgErr(fmt.Sprintf("%s.modes[%d]", key, i), "%q is not a permission mode (%s)", m, strings.Join(host.PermissionModes, ", "))
		}
	}
	for i, m := range p.Models {
		if strings.TrimSpace(m) == "" {
			return cfgErr(fmt.Sprintf("%s.models[%d]", key, i), "is empty")
		}
	}
	for i, t := range p.DeniedTools {
		if strings.TrimSpace(t) == "" {
			return cfgErr(fmt.Sprintf("%s.denied_tools[%d]", key, i), "is empty")
		}
	}
	if p.MaxSessions != nil && *p.MaxSessions < 0 {
		return cfgErr(key+".max_sessions", "is negative")
	}
	if b := p.DailyBudgetUSD; b != nil && (*b < 0 || math.IsNaN(*b) || math.IsInf(*b, 0)) {
		return cfgErr(key+".daily_budget_usd", "must be a number of dollars >= 0")
	}
	return nil
}

// person is the entry listing id, by e-mail or subject; nil if none.
func (c *Config) person(id *Identity) *Person {
	if id == nil {
		return nil
	}
	email, sub := strings.ToLower(id.Email), strings.ToLower(id.Subject)
	for i := range c.People {
		if e := c.People[i].Email; (email != "" && e == email) || e == sub {
			return &c.People[i]
		}
	}
	return nil
}

var roleRank = map[Role]int{RoleViewer: 1, RoleMember: 2, RoleAdmin: 3}

// Resolve returns a copy of id with its Role set from the configuration,
// whatever id.Role said: the person's entry, else the highest role of
// their groups, else DefaultRole for an address in AllowedDomains (any
// address when none are listed). The entry's groups are added, and its
// name fills an empty Name. Someone the configuration does not let in
// gets an error matching ErrUnauthenticated: the sign-in is refused.
func (c *Config) Resolve(id *Identity) (*Identity, error) {
	if id == nil || id.Subject == "" {
		return nil, fmt.Errorf("%w: no subject", ErrUnauthenticated)
	}
	out := *id
	out.Groups = slices.Clone(id.Groups)
	out.Role = ""
	if p := c.person(id); p != nil {
		out.Role = p.Role
		if out.Name == "" {
			out.Name = p.Name
		}
		for _, g := range p.Groups {
			if !slices.Contains(out.Groups, g) {
				out.Groups = append(out.Groups, g)
			}
		}
		return &out, nil
	}
	for _, g := range out.Groups {
		if gc, ok := c.Groups[g]; ok && roleRank[gc.Role] > roleRank[out.Role] {
			out.Role = gc.Role
		}
	}
	if out.Role != "" {
		return &out, nil
	}
	if c.DefaultRole == "" {
		return nil, fmt.Errorf("%w: %s is not a member of this team", ErrUnauthenticated, id.Subject)
	}
	if len(c.AllowedDomains) > 0 {
		addr := id.Email
		if addr == "" {
			addr = id.Subject
		}
		at := strings.LastIndexByte(addr, '@')
		if at < 0 || !slices.Contains(c.AllowedDomains, strings.ToLower(addr[at+1:])) {
			return nil, fmt.Errorf("%w: %s is not in an allowed domain", ErrUnauthenticated, id.Subject)
		}
	}
	out.Role = c.DefaultRole
	return &out, nil
}

// Policy is the policy that applies to id (whose Role is resolved): its
// role's, overridden field by field by its person entry's, with {user}
// expanded in CwdRoots. The slices are id's own copies.
func (c *Config) Policy(id *Identity) Policy {
	if id == nil {
		return Policy{}
	}
	p := c.Policies[id.Role]
	if e := c.person(id); e != nil && e.Policy != nil {
		o := e.Policy
		if o.CwdRoots != nil {
			p.CwdRoots = o.CwdRoots
		}
		if o.Modes != nil {
			p.Modes = o.Modes
		}
		if o.Models != nil {
			p.Models = o.Models
		}
		if o.DeniedTools != nil {
			p.DeniedTools = o.DeniedTools
		}
		if o.MaxSessions != nil {
			p.MaxSessions = o.MaxSessions
		}
		if o.DailyBudgetUSD != nil {
			p.DailyBudgetUSD = o.DailyBudgetUSD
		}
		if o.AllowBypass != nil {
			p.AllowBypass = o.AllowBypass
		}
	}
	user := UserName(id)
	roots := make([]string, 0, len(p.CwdRoots))
	for _, r := range p.CwdRoots {
		roots = append(roots, filepath.Clean(strings.ReplaceAll(r, "{user}", user)))
	}
	if len(roots) == 0 {
		roots = nil
	}
	p.CwdRoots = roots
	p.Modes = slices.Clone(p.Modes)
	p.Models = slices.Clone(p.Models)
	p.DeniedTools = slices.Clone(p.DeniedTools)
	return p
}

// Workspace is id's default working directory: the first of its
// policy's cwd roots, expanded ("" when the policy has none).
func (c *Config) Workspace(id *Identity) string {
	if r := c.Policy(id).CwdRoots; len(r) > 0 {
		return r[0]
	}
	return ""
}

// MultiUser reports whether sessions are isolated from each other:
// Isolation "on", or "auto" when more than one person can sign in (more
// than one listed, or any group or default role).
func (c *Config) MultiUser() bool {
	switch c.Isolation {
	case "on":
		return true
	case "off":
		return false
	}
	return len(c.People) > 1 || len(c.Groups) > 0 || c.DefaultRole != ""
}

// UserName is id's user name in paths ({user} of cwd roots, homes of
// isolation): the local part of its e-mail address (else its subject),
// lower-cased, every character outside [a-z0-9._-] made "_", and never
// "", "." or "..": it names a folder, so it must not climb out of one.
func UserName(id *Identity) string {
	if id == nil {
		return "_"
	}
	n := id.Email
	if n == "" {
		n = id.Subject
	}
	if i := strings.LastIndexByte(n, '@'); i > 0 {
		n = n[:i]
	}
	n = strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '.', r == '_', r == '-':
			return r
		case r >= 'A' && r <= 'Z':
			return r + ('a' - 'A')
		}
		return '_'
	}, n)
	if strings.Trim(n, ".") == "" {
		n = strings.Repeat("_", max(len(n), 1))
	}
	return n
}
