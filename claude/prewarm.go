package claude

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"
)

// Warm sessions. A CLI's start (process, module load, config, tools,
// plugins, MCP handshakes, initialize) takes a second or more; most of it
// does not depend on the session it will serve. CLI 2.1.330 can do all of
// it ahead of time: started with --await-claim it parks, initialized, in a
// neutral directory, and a claim_session control request later binds it
// to its session: it moves to the session's folder as if spawned there,
// reads that folder's CLAUDE.md and settings, runs the SessionStart hooks
// and registers the session. This is the TypeScript SDK's prewarm(); here
// it is Prewarm and Spare.Claim.

// ClaimVersion is the oldest CLI that can be prewarmed and claimed
// (--await-claim and claim_session). 2.1.197 exits on the flag; Prewarm
// then returns a *CLIFeatureError.
const ClaimVersion = "2.1.330"

// ErrNotClaimable is matched by a *NotClaimableError.
var ErrNotClaimable = errors.New("claude: the session's options cannot be claimed from this spare")

// NotClaimableError says which options a spare cannot take at its claim:
// they are fixed when the CLI starts (see Prewarm), so a session that
// needs other values must be started with Connect.
type NotClaimableError struct {
	// Fields are the Options fields (Env keys as "Env[KEY]") that differ
	// from the spare's and that a claim cannot set.
	Fields []string
}

func (e *NotClaimableError) Error() string {
	return "claude: a spare cannot take these options at its claim (start the session with Connect): " + strings.Join(e.Fields, ", ")
}

// Is makes errors.Is(err, ErrNotClaimable) true.
func (e *NotClaimableError) Is(target error) bool { return target == ErrNotClaimable }

// ErrClaimRefused is matched by a *ClaimError.
var ErrClaimRefused = errors.New("claude: the spare refused the claim")

// ClaimError is returned by Spare.Claim when the CLI refused or failed
// the claim, or did not take an option sent with it (Model,
// MaxThinkingTokens). The spare is spent either way (its CLI was closed):
// start the session with Connect instead. No prompt was sent.
type ClaimError struct {
	// Reason is the CLI's reason token, e.g. "cwd_not_found",
	// "project_settings_not_claimable", "permission_mode_not_claimable",
	// "not_a_spare"; "option_not_applied" when SetModel or
	// SetMaxThinkingTokens failed after the claim.
	Reason string
	// Message is the CLI's whole message.
	Message string
	// Err is the underlying error (a *ControlError, ctx's error, …).
	Err error
}

func (e *ClaimError) Error() string {
	return "claude: claim refused: " + e.Message
}

// Is makes errors.Is(err, ErrClaimRefused) true.
func (e *ClaimError) Is(target error) bool { return target == ErrClaimRefused }

func (e *ClaimError) Unwrap() error { return e.Err }

// ErrSpareSpent is returned by Spare.Claim on a spare that was claimed
// or closed before.
var ErrSpareSpent = errors.New("claude: spare already claimed or closed")

// claimableEnv are the environment variables a claim may add: the CLI
// reads every other one while it starts, and refuses it at the claim.
var claimableEnv = []string{"CLAUDE_CODE_OAUTH_TOKEN", "CLAUDE_CODE_SESSION_ACCESS_TOKEN", "CLAUDE_CODE_HOST_SESSION_ID"}

// ClaimOptions is the per-session half of Options: what Spare.Claim can
// still set on a CLI that Prewarm started. Everything else is fixed at
// Prewarm.
type ClaimOptions struct {
	// Cwd is the session's working directory; "" means this process's
	// current directory (where Connect would start the CLI). A relative
	// path is made absolute against this process's directory. The
	// directory must exist.
	Cwd string
	// AddDirs are more directories the session may use, as Options.AddDirs.
	AddDirs []string
	// Model, as Options.Model; applied with SetModel right after the
	// claim, before any prompt.
	Model string
	// PermissionMode, as Options.PermissionMode. It travels inside the
	// claim, so a mode the CLI cannot take refuses the claim rather than
	// letting the session run under another mode.
	PermissionMode PermissionMode
	// MaxThinkingTokens, as Options.MaxThinkingTokens; applied with
	// SetMaxThinkingTokens right after the claim.
	MaxThinkingTokens int
	// AppendSystemPrompt, Title and Agents, as the Options fields of the
	// same names.
	AppendSystemPrompt string
	Title              string
	Agents             map[string]AgentDefinition
	// Env adds per-session environment variables; only
	// CLAUDE_CODE_OAUTH_TOKEN, CLAUDE_CODE_SESSION_ACCESS_TOKEN and
	// CLAUDE_CODE_HOST_SESSION_ID are accepted (the CLI has read every
	// other one while it started): another key is a *NotClaimableError.
	Env map[string]string
	// Settings is a flag-tier settings overlay (a JSON object, as
	// Session.ApplyFlagSettings takes), applied as the TS SDK does: its
	// model, agent, fastMode, permissions, availableModels and
	// disableAutoMode right after the claim (which resets them for the
	// folder), the rest before it, so that enabledPlugins and the
	// .mcp.json server choices decide what the folder starts. All is in
	// force before Claim returns. A refusal closes the spare with a
	// *ClaimError whose Reason is "settings_not_applied". Keys that govern hooks (hooks,
	// disableAllHooks, allowManagedHooksOnly, allowedHttpHookUrls,
	// httpHookAllowedEnvVars) are a *NotClaimableError before anything is
	// sent: give those to Prewarm's Options.Settings.
	Settings json.RawMessage
}

// claimAfterKeys are the settings keys a claim resets for its folder, so
// an overlay's values for them are applied after claim_session, as the
// TS SDK does; the rest goes before it, so that it decides which of the
// folder's servers and plugins start.
var claimAfterKeys = []string{"model", "agent", "fastMode", "permissions", "availableModels", "disableAutoMode"}

// splitClaimSettings splits an overlay into what is applied before the
// claim and after it; a half with no keys is nil.
func splitClaimSettings(obj map[string]json.RawMessage) (before, after json.RawMessage, err error) {
	b, a := map[string]json.RawMessage{}, map[string]json.RawMessage{}
	for k, v := range obj {
		if slices.Contains(claimAfterKeys, k) {
			a[k] = v
		} else {
			b[k] = v
		}
	}
	if len(b) > 0 {
		if before, err = json.Marshal(b); err != nil {
			return nil, nil, err
		}
	}
	if len(a) > 0 {
		if after, err = json.Marshal(a); err != nil {
			return nil, nil, err
		}
	}
	return before, after, nil
}

// hookSettingsKeys are the settings keys a claim's overlay may not set:
// the parked CLI has loaded its hooks already.
var hookSettingsKeys = []string{"hooks", "disableAllHooks", "allowManagedHooksOnly", "allowedHttpHookUrls", "httpHookAllowedEnvVars"}

// A Spare is a CLI started by Prewarm, initialized and parked, that is
// not yet any session. Claim binds it to one; Close discards it. Single
// use. Its methods are safe for concurrent use.
type Spare struct {
	s    *Session
	opts Options // as given to Prewarm (without the parking details)
	park string  // the parking directory Prewarm made, removed at the end

	mu    sync.Mutex
	spent bool
}

// Prewarm starts a CLI as a parked spare (--await-claim) with opts and
// returns once it has answered initialize, as Connect does. Claim it
// later with the session's own per-session options (ClaimOptions): the
// claim skips everything the start did, which is most of a session's
// start-up time (see the README's performance section).
//
// What Prewarm fixes, for the life of the spare: every Options field but
// those of ClaimOptions — the executable, environment, settings sources
// and settings, tools, MCP servers, hooks, plugins, callbacks
// (CanUseTool, Stderr, …), SessionID. opts.Cwd is where the spare parks
// ("" = a fresh private directory, removed when the session ends); it
// must not be a folder whose project settings set env, model or a main
// agent, or the CLI refuses every claim. Resume, Continue, ForkSession
// and ResumeSessionAt describe a session and cannot be prewarmed.
// ClaimFor tells whether a full Options can be served by a spare.
//
// Errors: those of Connect, *NotClaimableError naming Resume, Continue,
// ForkSession or ResumeSessionAt when set, and *CLIFeatureError (matching
// ErrNeedsNewerCLI, Option "Prewarm") for a CLI older than ClaimVersion,
// known from its version before it starts or from its exit on the
// unknown flag; also for a CLI whose version is unknown (a custom
// Transport whose CLI does not report it in its answer to initialize),
// which might have ignored the flag.
func Prewarm(ctx context.Context, opts *Options) (*Spare, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	var session []string
	for name, set := range map[string]bool{"Resume": o.Resume != "", "Continue": o.Continue, "ForkSession": o.ForkSession, "ResumeSessionAt": o.ResumeSessionAt != ""} {
		if set {
			session = append(session, name)
		}
	}
	if len(session) > 0 {
		slices.Sort(session)
		return nil, &NotClaimableError{Fields: session} // they describe a session; a spare has none
	}
	sp := &Spare{opts: o}
	if o.Cwd == "" {
		dir, err := os.MkdirTemp("", "tether-spare-")
		if err != nil {
			return nil, fmt.Errorf("claude: Prewarm: making the parking directory: %w", err)
		}
		sp.park, o.Cwd = dir, dir
	}
	o.ExtraArgs = append(slices.Clip(o.ExtraArgs), "--await-claim")
	o.awaitClaim = true
	s, err := Connect(ctx, &o)
	if err != nil {
		sp.removePark()
		var pe *ProcessError
		if errors.As(err, &pe) && slices.ContainsFunc(pe.Stderr, func(l string) bool { return strings.Contains(l, "--await-claim") }) {
			return nil, &CLIFeatureError{Option: "Prewarm", Needs: ClaimVersion, Found: "older", Path: o.CLIPath}
		}
		return nil, err
	}
	if s.opts.cliVersion == "" && (s.init == nil || s.init.CLIVersion == "") {
		// Neither probed nor reported (a custom transport): a CLI that
		// ignored the flag would not answer a claim.
		s.Close()
		sp.removePark()
		return nil, &CLIFeatureError{Option: "Prewarm", Needs: ClaimVersion, Found: "of unknown version", Path: o.CLIPath}
	}
	sp.s = s
	if sp.park != "" {
		go func() { <-s.Done(); sp.removePark() }()
	}
	return sp, nil
}

func (sp *Spare) removePark() {
	if sp.park != "" {
		_ = os.RemoveAll(sp.park)
	}
}

// PID returns the spare CLI's process id (0 with a custom transport that
// does not tell).
func (sp *Spare) PID() int { return sp.s.PID() }

// Done is closed when the spare's CLI has ended (a parked CLI that dies
// should be replaced), claimed or not.
func (sp *Spare) Done() <-chan struct{} { return sp.s.Done() }

// Close discards an unclaimed spare (its CLI is stopped). After a claim
// it does nothing: the Session is the caller's to close.
func (sp *Spare) Close() error {
	sp.mu.Lock()
	if sp.spent {
		sp.mu.Unlock()
		return nil
	}
	sp.spent = true
	sp.mu.Unlock()
	return sp.s.Close()
}

// claimRequest is claim_session's body.
type claimRequest struct {
	Cwd                string            `json:"cwd"`
	AddDirs            []string          `json:"additional_directories,omitempty"`
	PermissionMode     PermissionMode    `json:"permission_mode,omitempty"`
	AppendSystemPrompt string            `json:"append_system_prompt,omitempty"`
	Title              string            `json:"title,omitempty"`
	Agents             json.RawMessage   `json:"agents,omitempty"`
	Env                map[string]string `json:"env,omitempty"`
	IncludeInitialize  bool              `json:"include_initialize"`
}

// claimResponse is its answer.
type claimResponse struct {
	Cwd        string          `json:"cwd"`
	SessionID  string          `json:"session_id"`
	ParkedMS   int64           `json:"parked_ms"`
	Initialize json.RawMessage `json:"initialize"`
}

// Claim binds the spare to its session and returns the Session, ready
// for Send: the CLI has moved to c.Cwd (its CLAUDE.md, settings, agents
// and commands are that folder's; Session.Initialize describes the
// claimed session), runs under c.PermissionMode, and has taken c.Model
// and c.MaxThinkingTokens. A nil c claims with the defaults (this
// process's directory). ctx bounds the claim.
//
// Errors: *NotClaimableError for an Env key a claim cannot set (nothing
// was sent; the spare can still be claimed); ErrSpareSpent for a second
// claim or a closed spare; *ClaimError when the CLI refused or failed the
// claim or an option after it — the spare is then closed, no prompt
// was sent, and the caller should start the session with Connect.
func (sp *Spare) Claim(ctx context.Context, c *ClaimOptions) (*Session, error) {
	var co ClaimOptions
	if c != nil {
		co = *c
	}
	for k := range co.Env {
		if !slices.Contains(claimableEnv, k) {
			return nil, &NotClaimableError{Fields: []string{"Env[" + k + "]"}}
		}
	}
	var before, after json.RawMessage // the overlay's two halves
	if len(co.Settings) > 0 {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(co.Settings, &obj); err != nil || obj == nil {
			return nil, fmt.Errorf("claude: Claim: ClaimOptions.Settings must be a JSON object")
		}
		var refused []string
		for _, k := range hookSettingsKeys {
			if _, ok := obj[k]; ok {
				refused = append(refused, "Settings."+k)
			}
		}
		if len(refused) > 0 {
			return nil, &NotClaimableError{Fields: refused}
		}
		var err error
		if before, after, err = splitClaimSettings(obj); err != nil {
			return nil, fmt.Errorf("claude: Claim: encoding ClaimOptions.Settings: %w", err)
		}
	}
	cwd := co.Cwd
	if cwd == "" || !filepath.IsAbs(cwd) {
		abs, err := filepath.Abs(cmpOrString(cwd, "."))
		if err != nil {
			return nil, fmt.Errorf("claude: Claim: %w", err)
		}
		cwd = abs
	}
	req := claimRequest{Cwd: cwd, AddDirs: co.AddDirs, PermissionMode: co.PermissionMode,
		AppendSystemPrompt: co.AppendSystemPrompt, Title: co.Title, Env: co.Env, IncludeInitialize: true}
	if len(co.Agents) > 0 {
		b, err := json.Marshal(co.Agents)
		if err != nil {
			return nil, fmt.Errorf("claude: encoding ClaimOptions.Agents: %w", err)
		}
		req.Agents = b
	}
	sp.mu.Lock()
	if sp.spent {
		sp.mu.Unlock()
		return nil, ErrSpareSpent
	}
	sp.spent = true
	sp.mu.Unlock()
	s := sp.s
	fail := func(reason, msg string, err error) (*Session, error) {
		s.Close()
		return nil, &ClaimError{Reason: reason, Message: msg, Err: err}
	}
	if before != nil {
		if err := s.ApplyFlagSettings(ctx, before); err != nil {
			return fail("settings_not_applied", "settings_not_applied: "+err.Error(), err)
		}
	}
	raw, err := s.request(ctx, "claim_session", req)
	if err != nil {
		var ce *ControlError
		if errors.As(err, &ce) {
			reason, _, _ := strings.Cut(ce.Message, ":")
			return fail(reason, ce.Message, err)
		}
		return fail("claim_failed", err.Error(), err)
	}
	var resp claimResponse
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &resp); err != nil {
			s.log.Warn("claude: claim_session response not understood", "err", err)
		}
	}
	if len(resp.Initialize) > 0 {
		var ir InitializeResponse
		if err := json.Unmarshal(resp.Initialize, &ir); err == nil {
			ir.Raw = resp.Initialize
			if ir.CLIVersion == "" && s.init != nil {
				ir.CLIVersion, ir.Capabilities = s.init.CLIVersion, s.init.Capabilities
			}
			s.init = &ir // nobody else holds s yet
		}
	}
	if co.Model != "" {
		if err := s.SetModel(ctx, co.Model); err != nil {
			return fail("option_not_applied", "option_not_applied: model: "+err.Error(), err)
		}
	}
	if co.MaxThinkingTokens > 0 {
		if err := s.SetMaxThinkingTokens(ctx, co.MaxThinkingTokens, ""); err != nil {
			return fail("option_not_applied", "option_not_applied: max thinking tokens: "+err.Error(), err)
		}
	}
	if after != nil {
		if err := s.ApplyFlagSettings(ctx, after); err != nil {
			return fail("settings_not_applied", "settings_not_applied: "+err.Error(), err)
		}
	}
	if resp.ParkedMS > 0 {
		s.log.Debug("claude: spare claimed", "parked", time.Duration(resp.ParkedMS)*time.Millisecond)
	}
	return s, nil
}

func cmpOrString(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// claimFields are the Options fields a claim sets (ClaimOptions); Env is
// handled key by key.
var claimFields = []string{"Cwd", "AddDirs", "Model", "PermissionMode", "MaxThinkingTokens", "AppendSystemPrompt", "Title", "Agents"}

// ClaimFor reports whether a spare prewarmed with spare can serve a
// session that wants want, and with which ClaimOptions: every other
// exported field must be equal (reflect.DeepEqual; a func field counts
// as equal when both are nil or both point at the same function code —
// Go cannot compare closures, so two closures of one func literal count
// as equal whatever they captured: give a request the template's own
// callbacks, as a copy of the template does), and Env may differ
// only in the claimable keys. Otherwise it returns a *NotClaimableError
// naming the fields that differ. A nil *Options is the zero Options.
func ClaimFor(spare, want *Options) (*ClaimOptions, error) {
	var a, b Options
	if spare != nil {
		a = *spare
	}
	if want != nil {
		b = *want
	}
	var diff []string
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	t := va.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() || f.Name == "Env" || slices.Contains(claimFields, f.Name) {
			continue
		}
		if !sameValue(va.Field(i), vb.Field(i)) {
			diff = append(diff, f.Name)
		}
	}
	env := map[string]string{}
	keys := slices.Sorted(maps.Keys(a.Env))
	for k := range b.Env {
		if _, ok := a.Env[k]; !ok {
			keys = append(keys, k)
		}
	}
	for _, k := range keys {
		av, aok := a.Env[k]
		bv, bok := b.Env[k]
		if aok == bok && av == bv {
			continue
		}
		if bok && slices.Contains(claimableEnv, k) {
			env[k] = bv
			continue
		}
		diff = append(diff, "Env["+k+"]")
	}
	if len(diff) > 0 {
		return nil, &NotClaimableError{Fields: diff}
	}
	c := &ClaimOptions{Cwd: b.Cwd, AddDirs: b.AddDirs, Model: b.Model, PermissionMode: b.PermissionMode,
		MaxThinkingTokens: b.MaxThinkingTokens, AppendSystemPrompt: b.AppendSystemPrompt, Title: b.Title, Agents: b.Agents}
	if len(env) > 0 {
		c.Env = env
	}
	return c, nil
}

// sameValue is reflect.DeepEqual, except that func values are equal
// when both are nil or they are the same func value.
func sameValue(a, b reflect.Value) bool {
	if a.Kind() == reflect.Func {
		return a.IsNil() == b.IsNil() && (a.IsNil() || a.Pointer() == b.Pointer())
	}
	return reflect.DeepEqual(a.Interface(), b.Interface())
}
