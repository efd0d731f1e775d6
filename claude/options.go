package claude

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Version is this module's release version, a semantic version: the SDK
// (this package and claudetest) changes only compatibly, other packages
// change shape only in a new minor version, and CHANGELOG.md has a section
// for each release (scripts/api-check.sh holds all three in CI). It is
// reported to the CLI (and from there to the API's user agent) as
// CLAUDE_AGENT_SDK_VERSION, and printed by `tether version`.
const Version = "0.8.0"

// Options configures a Session or a Query. A nil *Options means defaults.
// The zero value of every field means "the CLI's default": the matching flag
// is not passed. Options are copied when a session starts, so changing them
// afterwards has no effect on it.
//
// Every field reaches the CLI (its argv, its environment or the initialize
// request) or configures the host side of the connection; a table test
// proves each one.
type Options struct {
	// CLIPath is the claude executable. Empty means discovery: the
	// TETHER_CLI_PATH variable, then PATH, then the usual install places.
	CLIPath string
	// SkipVersionCheck skips the `claude --version` probe that refuses CLIs
	// older than MinCLIVersion. The probe runs once per CLI file and
	// process, bounded by the start's ctx deadline (30 s when ctx has
	// none).
	SkipVersionCheck bool
	// Transport replaces the local subprocess (nil means a
	// *CommandTransport): a remote runner, a container, or a test double.
	Transport Transport

	// Cwd is the CLI's working directory ("" = the current one).
	Cwd string
	// Env is added to the host's environment for the CLI (it wins on
	// conflicts). CLAUDECODE is always removed, or the CLI would refuse to
	// start inside another Claude Code. When Connect's ctx carries an
	// OpenTelemetry span, TRACEPARENT and TRACESTATE are set to its W3C
	// trace context (the CLI's own telemetry then joins the trace),
	// unless Env sets either.
	Env map[string]string
	// EnvOnly makes Env the CLI's whole environment: nothing of the host's
	// is passed on (no credentials, proxies or provider switches it may
	// hold). Env must then supply PATH and HOME.
	EnvOnly bool
	// User runs the CLI as another OS user, as the Python SDK's `user`
	// does: a login name or a numeric UID with an entry in the user
	// database. The CLI gets that user's UID, primary group and
	// supplementary groups, and its HOME (and USER, LOGNAME) unless Env
	// sets them; the working directory must be open to that user. Only
	// root may switch users: otherwise Connect fails with a *UserError
	// matching ErrUserNotPermitted. Unix only. See osuser.go.
	User string

	Model         string // --model
	FallbackModel string // --fallback-model
	// SystemPrompt replaces Claude Code's system prompt. Empty keeps
	// Claude Code's own (the "claude_code" preset).
	SystemPrompt string
	// AppendSystemPrompt is added after the system prompt: Claude Code's
	// when SystemPrompt is empty (the preset with an append), else
	// SystemPrompt. Both go in the initialize request, not argv, so their
	// size is not bound by the kernel's 128 KiB limit on one argument.
	AppendSystemPrompt string

	PermissionMode  PermissionMode // --permission-mode
	AllowedTools    []string       // permission rules that allow without asking, e.g. "Bash(git *)"
	DisallowedTools []string       // rules that always deny
	MaxTurns        int            // --max-turns; 0 = unlimited
	// MaxBudgetUSD ends a turn with an error_max_budget_usd result once the
	// session has spent this much. 0 = no budget.
	MaxBudgetUSD      float64
	MaxThinkingTokens int // --max-thinking-tokens; 0 = the model's default

	// IncludePartialMessages turns on StreamEvent messages (token deltas)
	// and "requesting" StatusMessages.
	IncludePartialMessages bool
	// ReplayUserMessages makes the CLI echo each user message it takes from
	// stdin (IsReplay set), which is how a host learns it was accepted.
	ReplayUserMessages bool

	Resume               string // --resume: continue the session with this id
	Continue             bool   // --continue: the most recent session in Cwd
	ForkSession          bool   // with Resume or Continue: a new session id, same history
	SessionID            string // --session-id: a fixed id (a UUID) for a new session
	NoSessionPersistence bool   // don't write a session file (the session can't be resumed)

	// SessionStore mirrors the session's transcript to a store of your
	// own (sessionstore.go), and is where Resume looks first: a session
	// the store holds is loaded into a temporary config directory and
	// resumed from there, so it resumes on a machine that never ran it.
	// Continue resumes the store's most recent session of Cwd (the store
	// must be a SessionLister), or starts a new one. The CLI still writes its own file (point
	// CLAUDE_CONFIG_DIR at a temporary directory to keep no copy), and
	// the mirror never slows it: Appends run on a goroutine of the
	// session behind a bounded queue (64 MiB; past it entries are
	// dropped and reported), are retried, and a batch that still fails
	// yields a *MirrorErrorMessage while the session goes on. With a
	// store, Close waits up to 5 s more for the last Appends.
	SessionStore SessionStore
	// SessionStoreFlush is when the mirror appends: batched (the
	// default: at the end of each turn) or eager (every frame).
	SessionStoreFlush SessionStoreFlush
	// SessionStoreLoadTimeout bounds each store call made to resume from
	// the store (Load, ListSubkeys, ListSessions), so that a stuck store
	// fails Connect with a *SessionStoreError instead of hanging it. 0
	// means DefaultSessionStoreLoadTimeout (60 s).
	SessionStoreLoadTimeout time.Duration

	// SettingSources limits which settings files load. nil means the CLI's
	// default; an empty non-nil slice loads none.
	SettingSources []SettingSource
	// Settings is a path to a settings file or a JSON string (--settings).
	// A JSON string travels as SettingsDelivery says: in the initialize
	// request, where the CLI supports it, so that the secrets settings
	// may hold (env, apiKeyHelper, headers) never show in ps.
	Settings string
	// ManagedSettings are policy-tier settings (a JSON object), as an
	// embedding application derives them from its own enterprise
	// configuration: the CLI keeps only their restrictive keys (deny
	// rules, allowlists, sandbox requirements) and ranks them above the
	// user's and project's settings. They travel as SettingsDelivery
	// says (--managed-settings in argv otherwise).
	ManagedSettings json.RawMessage
	// SettingsDelivery says how Settings (with Sandbox merged in) and
	// ManagedSettings reach the CLI (delivery.go): DeliveryAuto (the
	// default) sends them in the initialize request when the CLI is
	// known to read them there (2.1.261 and newer) and in argv
	// otherwise; DeliveryInitialize insists (Connect fails with a
	// *CLIFeatureError on an older CLI); DeliveryArgv keeps the flags.
	SettingsDelivery Delivery
	// PluginDelivery says how PluginDirs reach the CLI, as
	// SettingsDelivery does for settings: in the initialize request the
	// command line does not grow with the plugin count.
	PluginDelivery Delivery
	// via is how this session delivers them, set by Connect.
	via deliveryPlan
	// AddDirs gives tools access to more directories (--add-dir).
	AddDirs []string
	// MCPConfig lists MCP configuration files or JSON strings (--mcp-config).
	MCPConfig []string

	// ExtraArgs are appended to the CLI's argv as they are, after
	// everything Tether sets: flags Tether doesn't model yet. Use the
	// --flag=value form for values that may start with "-".
	ExtraArgs []string

	// ProjectConfigRoot is the trusted checkout Cwd is a worktree of:
	// project settings, .mcp.json, the .claude trees and
	// CLAUDE_PROJECT_DIR come from there, not from Cwd
	// (--project-config-root; CLI 2.1.330, which 2.1.197 refuses).
	ProjectConfigRoot string
	// ResumeDropsTurn, with ResumeSessionAt, is the prompt UUID of the
	// turn the truncating resume discards; the CLI refuses the resume when
	// anything else would be dropped (--resume-drops-turn; 2.1.330).
	ResumeDropsTurn string
	// ToolConfig configures built-in tools (nil: the CLI's defaults).
	ToolConfig *ToolConfig
	// VerbatimPrompts sends every user message as written: no @path
	// expansion, no slash commands, no turn-start context (each message
	// gets client_composed; CLI 2.1.248 and later, older ones ignore it).
	VerbatimPrompts bool

	// CanUseTool is asked before each tool use the CLI's rules don't
	// already allow or deny. Setting it routes permission prompts to the
	// host (--permission-prompt-tool stdio); without it the CLI denies
	// what its rules don't allow.
	CanUseTool CanUseToolFunc
	// ApprovalTimeout, when positive, bounds how long a CanUseTool call
	// may take: past it, Tether denies the tool with a message saying so
	// (the model carries on), classed DecisionConfig since nobody
	// answered, and cancels the callback's ctx with ErrApprovalTimeout.
	// 0 means no bound: nothing in Tether, nor in the CLI, times out an
	// approval, which may wait for hours.
	ApprovalTimeout time.Duration

	// Stderr receives the CLI's stderr, a line at a time. The last lines
	// are kept for *ProcessError either way. With the default transport it
	// runs on a goroutine of its own behind a bounded queue (1024 lines,
	// 4 MiB): lines arriving while the queue is full are dropped for it,
	// a panic is recovered, and a slow or blocked callback delays neither
	// the session nor Close.
	Stderr func(line string)
	// Logger receives Tether's own diagnostics (malformed lines, slow
	// callbacks, shutdown steps). nil discards them.
	Logger *slog.Logger
	// MaxLineSize is the largest stdout line accepted; a longer one is
	// skipped and reported as a *LineError. 0 means 256 MiB.
	MaxLineSize int
	// CloseTimeout bounds how long Close waits for the CLI to exit on its
	// own after stdin is closed (it flushes its session file) before
	// signalling it. 0 means 5 seconds. Close returns within CloseTimeout
	// plus 1 s, whatever the CLI does.
	CloseTimeout time.Duration
	// InitializeTimeout bounds how long Connect waits for the CLI to answer
	// the initialize request, even when Connect's ctx has no deadline (the
	// earlier of the two wins). 0 means DefaultInitializeTimeout (60 s).
	InitializeTimeout time.Duration
	// MaxBufferedBytes bounds the messages read from the CLI's stdout that
	// nobody has received yet (line bytes plus a small per-message cost).
	// Past it, the session stops reading stdout until Receive catches up:
	// nothing is lost, the CLI blocks on its writes, and the control
	// requests behind those messages (permission, hook and MCP requests,
	// answers to Interrupt, SetModel, …) wait too. Receive continuously to
	// have them served. Once the CLI has exited, the bound no longer holds
	// the session back: it reads what the CLI wrote before exiting (up to
	// 2 MiB past the bound) so that Done and Wait report the exit, and
	// keeps it for Receive. 0 means DefaultMaxBufferedBytes (1 MiB).
	// While Receive keeps up, the session reads only 128 KiB ahead of it
	// (fresher lines decode faster); it reads on up to the bound when
	// Receive has made no room for 2 ms.
	MaxBufferedBytes int
	// QueryTaskTimeout bounds how long Query keeps the CLI running after a
	// result while background tasks (agents run in the background, which
	// 2.1.330 does by default) are still running, so that their reports and
	// the turn that follows them reach the caller. 0 means
	// DefaultQueryTaskTimeout (10 minutes).
	QueryTaskTimeout time.Duration

	// Hooks.

	// Hooks are Go callbacks the CLI calls at points of its agent loop:
	// before and after tool use, when a prompt is submitted, when the
	// model stops, … Each event takes a list of matchers, each with its
	// hooks. They are registered in the initialize request.
	Hooks map[HookEvent][]HookMatcher

	// MCP servers (mcp.go).

	// MCPServers are MCP servers the CLI connects to, by name; the model
	// sees their tools as mcp__<name>__<tool>. External servers
	// (*MCPStdioServer, *MCPSSEServer, *MCPHTTPServer) reach the CLI as
	// MCPServersDelivery says; in-process ones (SDKServer) are declared in
	// the initialize request and served by this process. MCPConfig works
	// alongside.
	MCPServers map[string]MCPServerConfig
	// MCPServersDelivery says how the external servers of MCPServers,
	// with their Env and Headers, reach the CLI: anyone on the machine can
	// read a command line in ps. The default (DeliveryAuto) keeps them off
	// it when Tether starts the CLI itself: in the initialize request on a
	// CLI that reads it there (InitializeDeliveryVersion and newer), else
	// in a private file (DeliveryFile). With a custom Transport, whose CLI
	// may not share this machine's files and whose version Tether does not
	// know, it is DeliveryArgv. DeliveryInitialize on a CLI known to be
	// older fails Connect with a *CLIFeatureError; a CLI that does not
	// confirm the servers, with ErrNotApplied.
	MCPServersDelivery Delivery

	// Resolved at Connect (mcp_config.go): the CLI's version from the
	// probe, how the external MCP servers go, and their file.
	cliVersion, mcpFile string
	mcpVia              Delivery

	// awaitClaim: started by Prewarm as a parked spare (prewarm.go).
	awaitClaim bool

	// osUser is Options.User resolved at Connect (osuser.go).
	osUser *OSUser

	// Agents, prompts, plugins, structured output.

	// Agents defines subagents by name, which the model starts with the
	// Agent tool (subagent_type = the name). They join the CLI's built-in
	// and settings agents, replacing any of the same name.
	Agents map[string]AgentDefinition
	// ExcludeDynamicSections moves the per-session parts of Claude Code's
	// system prompt (working directory, memory paths) into the first user
	// message, so the system prompt stays the same across sessions and
	// machines and its prompt cache can be shared. Only Claude Code's own
	// prompt has such sections: with SystemPrompt set it does nothing.
	ExcludeDynamicSections bool
	// SystemPromptSnapshot false makes the CLI render the system prompt
	// afresh for every request instead of recording it on the first and
	// sending the record as it is afterwards (nil, or true: the CLI's
	// default, until compaction). Sent in initialize; CLIs without system
	// prompt recording ignore it.
	SystemPromptSnapshot *bool
	// JSONSchema asks for structured output: the model must end the turn
	// by calling a StructuredOutput tool whose input follows this JSON
	// schema (a JSON object; JSONSchemaFor builds one from a Go type). The
	// result carries it in StructuredOutput; DecodeOutput decodes it.
	JSONSchema json.RawMessage
	// PluginDirs loads a plugin from each directory (or .zip) for this
	// session only (--plugin-dir): its commands, agents, skills and hooks.
	PluginDirs []string
	// Betas are Anthropic API beta headers to send (--betas). The CLI
	// drops, with a warning on stderr, those it doesn't allow; 2.1.197
	// and 2.1.330 allow only BetaContext1M.
	Betas []Beta
	// Effort is how much effort the model spends (--effort): the API's
	// output_config.effort. Empty means the model's default.
	Effort Effort

	// Control events (observe.go).

	// ObserveControl sees every control request the CLI sends and every
	// one it withdraws, in stdout order between the messages around it:
	// it is called on the goroutine running Receive, just before the next
	// message is yielded, so a host can tell "waiting for an approval"
	// from the messages before and after it. It only reports; the
	// requests are served as usual. It is called only while someone
	// receives, and must not block.
	ObserveControl ObserveControlFunc

	// Parity with the TypeScript SDK's options (options_flags.go,
	// docs/parity.md).

	// Tools is the base set of built-in tools (--tools): nil means the
	// CLI's default set, an empty non-nil slice no built-in tools at all.
	// AllowedTools and DisallowedTools still apply on top.
	Tools []string
	// Agent runs the main conversation as this agent (--agent): its
	// system prompt, tools and model. It must be defined in Agents or in
	// the settings.
	Agent string
	// Thinking configures extended thinking: adaptive, a fixed budget, or
	// off, and how thinking is shown. nil means the model's default. It
	// replaces MaxThinkingTokens, which must then be 0. It reaches the CLI
	// as the TypeScript SDK passes it (--thinking, --max-thinking-tokens,
	// --thinking-display); the CLI has the last word: for a model with
	// adaptive thinking it turns a budget into adaptive thinking, and
	// 2.1.330 keeps thinking on even when asked to disable it.
	Thinking *ThinkingConfig
	// TaskBudget tells the model how many tokens the whole task may use,
	// so that it paces its tool use (--task-budget; the API's
	// output_config.task_budget). 0 means none.
	TaskBudget int
	// StrictMCPConfig uses only the MCP servers in MCPServers and
	// MCPConfig, ignoring .mcp.json, user settings and plugins
	// (--strict-mcp-config).
	StrictMCPConfig bool
	// IncludeHookEvents makes the CLI write HookStartedMessage,
	// HookProgressMessage and HookResponseMessage for every hook event,
	// not only SessionStart and Setup (--include-hook-events).
	IncludeHookEvents bool
	// AllowDangerouslySkipPermissions lets the session switch to
	// PermissionModeBypassPermissions later (SetPermissionMode) without
	// starting in it (--allow-dangerously-skip-permissions).
	AllowDangerouslySkipPermissions bool
	// EnableFileCheckpointing keeps a copy of each file before the
	// session's tools change it, so that RewindFiles can restore it (it
	// sets EnvEnableFileCheckpointing).
	EnableFileCheckpointing bool
	// ResumeSessionAt resumes only up to and including the message with
	// this UUID (--resume-session-at; needs Resume): a fork from an
	// earlier point of the conversation.
	ResumeSessionAt string
	// Title is a new session's title, instead of one generated from the
	// first prompt. A resumed session keeps its own; use RenameSession.
	Title string
	// PromptSuggestions asks for a *PromptSuggestionMessage after each
	// turn (from the second on) predicting the user's next prompt. It
	// arrives after the turn's result, so Receive between turns reads it
	// (else the next ReceiveTurn yields it first); a new prompt sent before
	// it arrives cancels it. The CLI guesses only while its prompt cache is
	// warm (the last reply's uncached input and output under about 10,000
	// tokens), so a turn may end with no suggestion. Each guess is one more
	// model request on the session's bill.
	PromptSuggestions bool
	// AgentProgressSummaries makes subagents report a short summary of
	// what they are doing about every 30 seconds, in
	// TaskProgressMessage.Summary.
	AgentProgressSummaries bool
	// ForwardSubagentText forwards subagents' text and thinking as
	// messages with ParentToolUseID set, not only their tool calls.
	ForwardSubagentText bool
	// PlanModeInstructions replace the default workflow instructions the
	// CLI gives the model in plan mode.
	PlanModeInstructions string
	// ToolAliases maps tool names the model may call to the tools that
	// serve them, e.g. {"Bash": "mcp__workspace__bash"}.
	ToolAliases map[string]string
	// InitializeExtra adds keys to the initialize request, for CLI
	// features Tether does not model yet (ExtraArgs is the same for
	// argv). Each value must be JSON. Keys Tether sets itself are refused
	// by validation.
	InitializeExtra map[string]json.RawMessage
	// Skills limits the skills the model sees to these names (a SKILL.md
	// name, or plugin:skill); nil means every skill found. It filters the
	// model's listing and the Skill tool, not the files.
	Skills []string
	// PerTaskStopAffordance declares that this host stops background
	// tasks one at a time (StopTask): an interrupt then ends the turn only,
	// and agents the model started in the background run on to their end.
	// Without it an interrupt stops them with the turn (a
	// TaskNotificationMessage with Status "stopped"), which is what a host
	// whose only stop is the turn's wants. Needs CLI 2.1.330 or later.
	PerTaskStopAffordance bool

	// OnElicitation answers MCP servers that ask the user for input
	// (elicitation.go). nil declines every request, as the TypeScript SDK
	// does without its onElicitation.
	OnElicitation ElicitationFunc
	// OnUserDialog shows the dialogs tools ask the host for (kinds listed
	// in SupportedDialogKinds) and returns the user's choice.
	OnUserDialog UserDialogFunc
	// SupportedDialogKinds are the dialog kinds OnUserDialog can render,
	// declared in the initialize request; the CLI sends no others and
	// falls back to its no-dialog behaviour. It needs OnUserDialog.
	SupportedDialogKinds []string
	// Sandbox runs the CLI's Bash commands in its sandbox (sandbox.go),
	// merged into the settings Tether passes with --settings. It fails
	// closed: when the sandbox cannot start, the CLI exits instead of
	// running commands unsandboxed, unless AllowUnsandboxedFallback.
	Sandbox *SandboxSettings
}

// PermissionMode is how the CLI treats tool use that needs permission.
type PermissionMode string

// Permission modes the CLI knows. The CLI accepts unknown modes without
// complaint, so a newer mode can be used as a plain string.
const (
	PermissionModeDefault           PermissionMode = "default"
	PermissionModeAcceptEdits       PermissionMode = "acceptEdits"
	PermissionModePlan              PermissionMode = "plan"
	PermissionModeBypassPermissions PermissionMode = "bypassPermissions"
	PermissionModeDontAsk           PermissionMode = "dontAsk"
	PermissionModeAuto              PermissionMode = "auto"
)

// SettingSource names a settings file the CLI may load.
type SettingSource string

// Setting sources.
const (
	SettingSourceUser    SettingSource = "user"
	SettingSourceProject SettingSource = "project"
	SettingSourceLocal   SettingSource = "local"
)

// baseArgs are what every stream-json session needs; --verbose is required
// with -p and stream-json output, or the CLI exits at once.
var baseArgs = []string{"-p", "--output-format", "stream-json", "--input-format", "stream-json", "--verbose"}

// validate reports programmer errors early, before a process is started.
func (o *Options) validate() error {
	if o.MaxTurns < 0 {
		return fmt.Errorf("claude: Options.MaxTurns is negative (%d)", o.MaxTurns)
	}
	if o.MaxBudgetUSD < 0 {
		return fmt.Errorf("claude: Options.MaxBudgetUSD is negative (%g)", o.MaxBudgetUSD)
	}
	if o.MaxThinkingTokens < 0 {
		return fmt.Errorf("claude: Options.MaxThinkingTokens is negative (%d)", o.MaxThinkingTokens)
	}
	if o.MaxBufferedBytes < 0 {
		return fmt.Errorf("claude: Options.MaxBufferedBytes is negative (%d)", o.MaxBufferedBytes)
	}
	if o.MaxLineSize < 0 {
		return fmt.Errorf("claude: Options.MaxLineSize is negative (%d)", o.MaxLineSize)
	}
	if o.Resume != "" && o.Continue {
		return fmt.Errorf("claude: Options.Resume and Options.Continue are exclusive")
	}
	if o.ForkSession && o.Resume == "" && !o.Continue {
		return fmt.Errorf("claude: Options.ForkSession needs Resume or Continue")
	}
	if err := validateHooks(o.Hooks); err != nil {
		return err
	}
	for k := range o.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return fmt.Errorf("claude: Options.Env has an invalid name %q", k)
		}
	}
	if err := validateMCPServers("Options.MCPServers", o.MCPServers); err != nil {
		return err
	}
	if err := o.validatePrompts(); err != nil {
		return err
	}
	if err := o.validateParity(); err != nil {
		return err
	}
	if err := o.validateDelivery(); err != nil {
		return err
	}
	if err := o.validateSessionStore(); err != nil {
		return err
	}
	return o.validateExtra()
}

// args maps the options onto the CLI's argv. Values go in the --flag=value
// form so that a value starting with "-" can never be read as a flag.
func (o *Options) args() []string {
	a := append([]string(nil), baseArgs...)
	str := func(flag, v string) {
		if v != "" {
			a = append(a, flag+"="+v)
		}
	}
	list := func(flag string, vs []string) {
		for _, v := range vs {
			a = append(a, flag+"="+v)
		}
	}
	str("--model", o.Model)
	str("--fallback-model", o.FallbackModel)
	str("--permission-mode", string(o.PermissionMode))
	if o.PermissionMode == PermissionModeBypassPermissions {
		// The mode needs the launch flag too, or the CLI refuses it.
		a = append(a, "--allow-dangerously-skip-permissions")
	}
	list("--allowedTools", o.AllowedTools)
	list("--disallowedTools", o.DisallowedTools)
	if o.MaxTurns > 0 {
		a = append(a, "--max-turns="+strconv.Itoa(o.MaxTurns))
	}
	if o.MaxBudgetUSD > 0 {
		a = append(a, "--max-budget-usd="+strconv.FormatFloat(o.MaxBudgetUSD, 'f', -1, 64))
	}
	if o.MaxThinkingTokens > 0 {
		a = append(a, "--max-thinking-tokens="+strconv.Itoa(o.MaxThinkingTokens))
	}
	if o.IncludePartialMessages {
		a = append(a, "--include-partial-messages")
	}
	if o.ReplayUserMessages {
		a = append(a, "--replay-user-messages")
	}
	str("--resume", o.Resume)
	if o.Continue {
		a = append(a, "--continue")
	}
	if o.ForkSession {
		a = append(a, "--fork-session")
	}
	str("--session-id", o.SessionID)
	if o.NoSessionPersistence {
		a = append(a, "--no-session-persistence")
	}
	if o.SettingSources != nil {
		ss := make([]string, len(o.SettingSources))
		for i, s := range o.SettingSources {
			ss[i] = string(s)
		}
		a = append(a, "--setting-sources="+strings.Join(ss, ","))
	}
	if !o.via.settings {
		str("--settings", o.settingsArg())
	}
	a = append(a, o.deliveryArgs()...)
	list("--add-dir", o.AddDirs)
	list("--mcp-config", o.MCPConfig)
	for _, f := range o.mcpConfigArgs() {
		if f == "--await-initialize" && slices.Contains(a, f) {
			continue // settings or plugins asked for it already
		}
		a = append(a, f)
	}
	if !o.via.plugins {
		list("--plugin-dir", o.PluginDirs)
	}
	for _, b := range o.Betas {
		// One flag per beta: the CLI takes "a,b" as one unknown name.
		a = append(a, "--betas="+string(b))
	}
	str("--effort", string(o.Effort))
	if o.CanUseTool != nil {
		a = append(a, "--permission-prompt-tool=stdio")
	}
	a = append(a, o.parityArgs()...)
	a = append(a, o.storeArgs()...)
	a = append(a, o.extraOptionArgs()...)
	return append(a, o.ExtraArgs...)
}

// env builds the CLI's environment: the host's, minus CLAUDECODE, plus
// Options.Env, plus what identifies Tether to the CLI.
func (o *Options) env(base []string) []string {
	set := map[string]string{}
	var order []string
	put := func(k, v string) {
		if _, ok := set[k]; !ok {
			order = append(order, k)
		}
		set[k] = v
	}
	if o.EnvOnly {
		base = nil
	}
	for _, kv := range base {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "CLAUDECODE" {
			continue
		}
		put(k, v)
	}
	keys := make([]string, 0, len(o.Env))
	for k := range o.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		put(k, o.Env[k])
	}
	if _, ok := o.Env["CLAUDE_CODE_ENTRYPOINT"]; !ok {
		put("CLAUDE_CODE_ENTRYPOINT", "sdk-go")
	}
	if _, ok := o.Env[EnvEnableFileCheckpointing]; o.EnableFileCheckpointing && !ok {
		put(EnvEnableFileCheckpointing, "1")
	}
	o.toolConfigEnv(put)
	o.userEnv(put)
	put("CLAUDE_AGENT_SDK_VERSION", Version)
	out := make([]string, 0, len(order))
	for _, k := range order {
		if k == "CLAUDECODE" {
			continue
		}
		out = append(out, k+"="+set[k])
	}
	return out
}

// initializeRequest is the body of the initialize control request: what
// the CLI learns about the host at start (hooks, in-process MCP servers,
// agents, prompts…). Keys are camelCase on the wire; the CLI silently
// ignores unknown keys and, in 2.1.197, hangs on snake_case hooks, so
// every key here is checked against the real CLI. Each feature fills its
// fields in Session.initializeRequest.
type initializeRequest struct {
	Hooks              json.RawMessage `json:"hooks,omitempty"`
	SDKMCPServers      []string        `json:"sdkMcpServers,omitempty"`
	JSONSchema         json.RawMessage `json:"jsonSchema,omitempty"`
	SystemPrompt       json.RawMessage `json:"systemPrompt,omitempty"`
	AppendSystemPrompt string          `json:"appendSystemPrompt,omitempty"`
	Agents             json.RawMessage `json:"agents,omitempty"`
	Title              string          `json:"title,omitempty"`

	ExcludeDynamicSections bool  `json:"excludeDynamicSections,omitempty"`
	SystemPromptSnapshot   *bool `json:"systemPromptSnapshot,omitempty"`

	// Filled by Options.parityInitialize.
	PromptSuggestions      bool              `json:"promptSuggestions,omitempty"`
	AgentProgressSummaries bool              `json:"agentProgressSummaries,omitempty"`
	ForwardSubagentText    bool              `json:"forwardSubagentText,omitempty"`
	PlanModeInstructions   string            `json:"planModeInstructions,omitempty"`
	ToolAliases            map[string]string `json:"toolAliases,omitempty"`
	SupportedDialogKinds   []string          `json:"supportedDialogKinds,omitempty"`
	Skills                 *[]string         `json:"skills,omitempty"` // non-nil and empty: no skills
	PerTaskStopAffordance  bool              `json:"perTaskStopAffordance,omitempty"`

	// Filled by Options.mcpInitialize.
	MCPServers          map[string]any `json:"mcpServers,omitempty"`
	SDKMCPServerConfigs map[string]any `json:"sdkMcpServerConfigs,omitempty"`

	// Filled by Options.deliveryInitialize (delivery.go).
	Settings        json.RawMessage `json:"settings,omitempty"`
	ManagedSettings json.RawMessage `json:"managedSettings,omitempty"`
	Plugins         []pluginConfig  `json:"plugins,omitempty"`

	// extra are Options.InitializeExtra, merged in by MarshalJSON.
	extra map[string]json.RawMessage
}

// launch builds the Launch a Transport receives.
func (o *Options) launch(path string) *Launch {
	l := &Launch{
		Path:         path,
		Args:         o.args(),
		Env:          o.env(os.Environ()),
		Dir:          o.Cwd,
		MaxLineSize:  o.MaxLineSize,
		CloseTimeout: o.CloseTimeout,
		Stderr:       o.Stderr,
		User:         o.osUser,
	}
	return l
}

// marshalControl encodes a control request body with its subtype.
func marshalControl(subtype string, req any) (json.RawMessage, error) {
	if req == nil {
		return json.Marshal(map[string]string{"subtype": subtype})
	}
	b, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("claude: %s: encoding request: %w", subtype, err)
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(b, &members); err != nil || b[0] != '{' {
		return nil, fmt.Errorf("claude: %s: request must encode as a JSON object, got %.40s", subtype, b)
	}
	if _, ok := members["subtype"]; ok {
		// A second "subtype" would make the line ambiguous.
		return nil, fmt.Errorf("claude: %s: request sets \"subtype\" itself", subtype)
	}
	sub, _ := json.Marshal(subtype)
	out := make([]byte, 0, len(b)+len(sub)+12)
	out = append(out, `{"subtype":`...)
	out = append(out, sub...)
	if len(b) > 2 {
		out = append(out, ',')
		out = append(out, b[1:]...)
	} else {
		out = append(out, '}')
	}
	return out, nil
}
