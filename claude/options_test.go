package claude_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
)

// launched connects through a recording fake and returns what the CLI
// would have been started with and the initialize request it received.
func launched(t *testing.T, o *claude.Options) (*claude.Launch, map[string]any) {
	t.Helper()
	initReq := make(chan json.RawMessage, 1)
	fake := &claudetest.FakeCLI{Script: func(ctx context.Context, c *claudetest.CLI) error {
		req, err := c.HandleInitialize(ctx)
		initReq <- req
		if err != nil {
			return err
		}
		_, err = c.ReadUser(ctx)
		return err
	}}
	o.Transport = fake
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := claude.Connect(ctx, o)
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	s.Close()
	var init map[string]any
	if err := json.Unmarshal(<-initReq, &init); err != nil {
		t.Fatal(err)
	}
	return fake.Launches()[0], init
}

// TestEveryOptionReachesTheCLI fails when an Options field has no effect on
// what the CLI receives (argv, environment, working directory, initialize)
// or on the host side of the connection, and when a new field has no entry
// here.
func TestEveryOptionReachesTheCLI(t *testing.T) {
	type check struct {
		set      func(*claude.Options)
		args     []string // each must appear in argv
		env      []string // each must appear in the environment
		initKeys []string // each must be set in the initialize request
		custom   func(*claude.Launch) string
	}
	checks := map[string]check{
		"CLIPath": {set: func(o *claude.Options) { o.CLIPath = "/opt/claude" },
			custom: func(l *claude.Launch) string { return ifNot(l.Path == "/opt/claude", "Launch.Path = "+l.Path) }},
		"Cwd": {set: func(o *claude.Options) { o.Cwd = "/work/x" },
			custom: func(l *claude.Launch) string { return ifNot(l.Dir == "/work/x", "Launch.Dir = "+l.Dir) }},
		"Env": {set: func(o *claude.Options) { o.Env = map[string]string{"FOO": "bar"} }, env: []string{"FOO=bar"}},
		"EnvOnly": {set: func(o *claude.Options) { o.EnvOnly = true; o.Env = map[string]string{"PATH": "/bin"} },
			custom: func(l *claude.Launch) string {
				for _, e := range l.Env {
					if !strings.HasPrefix(e, "PATH=") && !strings.HasPrefix(e, "CLAUDE_") {
						return "EnvOnly passed on the host's " + e
					}
				}
				return ""
			}},
		"Model":                  {set: func(o *claude.Options) { o.Model = "sonnet" }, args: []string{"--model=sonnet"}},
		"FallbackModel":          {set: func(o *claude.Options) { o.FallbackModel = "haiku" }, args: []string{"--fallback-model=haiku"}},
		"SystemPrompt":           {set: func(o *claude.Options) { o.SystemPrompt = "-be brief" }, initKeys: []string{"systemPrompt"}},
		"AppendSystemPrompt":     {set: func(o *claude.Options) { o.AppendSystemPrompt = "and kind" }, initKeys: []string{"appendSystemPrompt"}},
		"PermissionMode":         {set: func(o *claude.Options) { o.PermissionMode = claude.PermissionModePlan }, args: []string{"--permission-mode=plan"}},
		"AllowedTools":           {set: func(o *claude.Options) { o.AllowedTools = []string{"Read", "Bash(git *)"} }, args: []string{"--allowedTools=Read", "--allowedTools=Bash(git *)"}},
		"DisallowedTools":        {set: func(o *claude.Options) { o.DisallowedTools = []string{"Write"} }, args: []string{"--disallowedTools=Write"}},
		"MaxTurns":               {set: func(o *claude.Options) { o.MaxTurns = 3 }, args: []string{"--max-turns=3"}},
		"MaxBudgetUSD":           {set: func(o *claude.Options) { o.MaxBudgetUSD = 0.25 }, args: []string{"--max-budget-usd=0.25"}},
		"MaxThinkingTokens":      {set: func(o *claude.Options) { o.MaxThinkingTokens = 4096 }, args: []string{"--max-thinking-tokens=4096"}},
		"IncludePartialMessages": {set: func(o *claude.Options) { o.IncludePartialMessages = true }, args: []string{"--include-partial-messages"}},
		"ReplayUserMessages":     {set: func(o *claude.Options) { o.ReplayUserMessages = true }, args: []string{"--replay-user-messages"}},
		"Resume":                 {set: func(o *claude.Options) { o.Resume = "abc" }, args: []string{"--resume=abc"}},
		"Continue":               {set: func(o *claude.Options) { o.Continue = true }, args: []string{"--continue"}},
		"ForkSession":            {set: func(o *claude.Options) { o.Continue = true; o.ForkSession = true }, args: []string{"--fork-session"}},
		"SessionID":              {set: func(o *claude.Options) { o.SessionID = "11111111-2222-4333-8444-555555555555" }, args: []string{"--session-id=11111111-2222-4333-8444-555555555555"}},
		"NoSessionPersistence":   {set: func(o *claude.Options) { o.NoSessionPersistence = true }, args: []string{"--no-session-persistence"}},
		"SettingSources": {set: func(o *claude.Options) {
			o.SettingSources = []claude.SettingSource{claude.SettingSourceUser, claude.SettingSourceProject}
		}, args: []string{"--setting-sources=user,project"}},
		"Settings":  {set: func(o *claude.Options) { o.Settings = `{"model":"x"}` }, args: []string{`--settings={"model":"x"}`}},
		"AddDirs":   {set: func(o *claude.Options) { o.AddDirs = []string{"/a", "/b"} }, args: []string{"--add-dir=/a", "--add-dir=/b"}},
		"MCPConfig": {set: func(o *claude.Options) { o.MCPConfig = []string{"/m.json"} }, args: []string{"--mcp-config=/m.json"}},
		"ExtraArgs": {set: func(o *claude.Options) { o.ExtraArgs = []string{"--effort=low"} }, args: []string{"--effort=low"}},
		"CanUseTool": {set: func(o *claude.Options) {
			o.CanUseTool = func(context.Context, *claude.ToolPermissionRequest) (claude.PermissionResult, error) { return nil, nil }
		}, args: []string{"--permission-prompt-tool=stdio"}},
		"Stderr": {set: func(o *claude.Options) { o.Stderr = func(string) {} },
			custom: func(l *claude.Launch) string { return ifNot(l.Stderr != nil, "Launch.Stderr is nil") }},
		"User": {set: func(o *claude.Options) { o.User = "nobody" },
			custom: func(l *claude.Launch) string {
				return ifNot(l.User != nil && l.User.Name == "nobody" && slices.Contains(l.Env, "HOME="+l.User.Home), fmt.Sprintf("Launch.User = %+v", l.User))
			}},
		"MaxLineSize": {set: func(o *claude.Options) { o.MaxLineSize = 12345 },
			custom: func(l *claude.Launch) string { return ifNot(l.MaxLineSize == 12345, "Launch.MaxLineSize not passed") }},
		"MCPServers": {set: func(o *claude.Options) {
			o.MCPServers = map[string]claude.MCPServerConfig{
				"calc":  claude.SDKServer(mcp.NewServer(&mcp.Implementation{Name: "calc", Version: "1"}, nil)),
				"files": &claude.MCPStdioServer{Command: "mcp-files"},
			}
		}, args: []string{`--mcp-config={"mcpServers":{"files":{"type":"stdio","command":"mcp-files"}}}`}, initKeys: []string{"sdkMcpServers"}},
		"MCPServersDelivery": {set: func(o *claude.Options) {
			o.MCPServers = map[string]claude.MCPServerConfig{"files": &claude.MCPStdioServer{Command: "mcp-files", Env: map[string]string{"TOKEN": "t0k3n"}}}
			o.MCPServersDelivery = claude.DeliveryFile
		}, custom: func(l *claude.Launch) string {
			for _, a := range l.Args {
				if strings.Contains(a, "t0k3n") {
					return "the secret is in argv: " + a
				}
			}
			return ifNot(slices.ContainsFunc(l.Args, func(a string) bool { return strings.HasPrefix(a, "--mcp-config=/") && strings.HasSuffix(a, "mcp.json") }),
				"no --mcp-config naming a file")
		}},
		"CloseTimeout": {set: func(o *claude.Options) { o.CloseTimeout = 7 * time.Second },
			custom: func(l *claude.Launch) string {
				return ifNot(l.CloseTimeout == 7*time.Second, "Launch.CloseTimeout not passed")
			}},
		// Hooks (TestHooksRegistration checks the shape).
		"Hooks": {set: func(o *claude.Options) {
			o.Hooks = map[claude.HookEvent][]claude.HookMatcher{claude.HookEventStop: {{Hooks: []claude.HookFunc{noop}}}}
		}, initKeys: []string{"hooks"}},
		// Agents, prompts, plugins, structured output.
		"Agents": {set: func(o *claude.Options) {
			o.Agents = map[string]claude.AgentDefinition{"reviewer": {Description: "Reviews", Prompt: "You review."}}
		}, initKeys: []string{"agents"}},
		"ExcludeDynamicSections": {set: func(o *claude.Options) { o.ExcludeDynamicSections = true }, initKeys: []string{"excludeDynamicSections"}},
		"SystemPromptSnapshot":   {set: func(o *claude.Options) { f := false; o.SystemPromptSnapshot = &f }, initKeys: []string{"systemPromptSnapshot"}},
		"JSONSchema":             {set: func(o *claude.Options) { o.JSONSchema = json.RawMessage(`{"type":"object"}`) }, initKeys: []string{"jsonSchema"}},
		"PluginDirs":             {set: func(o *claude.Options) { o.PluginDirs = []string{"/p1", "/p2.zip"} }, args: []string{"--plugin-dir=/p1", "--plugin-dir=/p2.zip"}},
		"Betas": {set: func(o *claude.Options) { o.Betas = []claude.Beta{claude.BetaContext1M, "other-2025-01-01"} },
			args: []string{"--betas=context-1m-2025-08-07", "--betas=other-2025-01-01"}},
		"Effort": {set: func(o *claude.Options) { o.Effort = claude.EffortLow }, args: []string{"--effort=low"}},
		// Parity with the TypeScript SDK (options_flags.go).
		"Tools": {set: func(o *claude.Options) { o.Tools = []string{"Bash", "Read"} }, args: []string{"--tools=Bash,Read"}},
		"Agent": {set: func(o *claude.Options) { o.Agent = "reviewer" }, args: []string{"--agent=reviewer"}},
		"Thinking": {set: func(o *claude.Options) {
			o.Thinking = &claude.ThinkingConfig{Type: claude.ThinkingAdaptive, Display: claude.ThinkingDisplaySummarized}
		}, args: []string{"--thinking=adaptive", "--thinking-display=summarized"}},
		"TaskBudget":        {set: func(o *claude.Options) { o.TaskBudget = 50000 }, args: []string{"--task-budget=50000"}},
		"StrictMCPConfig":   {set: func(o *claude.Options) { o.StrictMCPConfig = true }, args: []string{"--strict-mcp-config"}},
		"IncludeHookEvents": {set: func(o *claude.Options) { o.IncludeHookEvents = true }, args: []string{"--include-hook-events"}},
		"AllowDangerouslySkipPermissions": {set: func(o *claude.Options) { o.AllowDangerouslySkipPermissions = true },
			args: []string{"--allow-dangerously-skip-permissions"}},
		"EnableFileCheckpointing": {set: func(o *claude.Options) { o.EnableFileCheckpointing = true },
			env: []string{claude.EnvEnableFileCheckpointing + "=1"}},
		"ResumeSessionAt": {set: func(o *claude.Options) { o.Resume = "abc"; o.ResumeSessionAt = "u-1" },
			args: []string{"--resume=abc", "--resume-session-at=u-1"}},
		"Title":                  {set: func(o *claude.Options) { o.Title = "Release notes" }, initKeys: []string{"title"}},
		"PromptSuggestions":      {set: func(o *claude.Options) { o.PromptSuggestions = true }, initKeys: []string{"promptSuggestions"}},
		"AgentProgressSummaries": {set: func(o *claude.Options) { o.AgentProgressSummaries = true }, initKeys: []string{"agentProgressSummaries"}},
		"ForwardSubagentText":    {set: func(o *claude.Options) { o.ForwardSubagentText = true }, initKeys: []string{"forwardSubagentText"}},
		"PlanModeInstructions":   {set: func(o *claude.Options) { o.PlanModeInstructions = "Plan in haiku." }, initKeys: []string{"planModeInstructions"}},
		"ToolAliases": {set: func(o *claude.Options) { o.ToolAliases = map[string]string{"Bash": "mcp__ws__bash"} },
			initKeys: []string{"toolAliases"}},
		"Skills":                {set: func(o *claude.Options) { o.Skills = []string{"pdf"} }, initKeys: []string{"skills"}},
		"PerTaskStopAffordance": {set: func(o *claude.Options) { o.PerTaskStopAffordance = true }, initKeys: []string{"perTaskStopAffordance"}},
		"SupportedDialogKinds": {set: func(o *claude.Options) {
			o.SupportedDialogKinds = []string{"refusal_fallback_prompt"}
			o.OnUserDialog = func(context.Context, *claude.UserDialogRequest) (*claude.UserDialogResult, error) { return nil, nil }
		}, initKeys: []string{"supportedDialogKinds"}},
		"Sandbox": {set: func(o *claude.Options) { o.Sandbox = &claude.SandboxSettings{Enabled: true} },
			args: []string{`--settings={"sandbox":{"allowUnsandboxedCommands":false,"autoAllowBashIfSandboxed":false,"enabled":true,"failIfUnavailable":true}}`}},
		"ManagedSettings": {set: func(o *claude.Options) {
			o.ManagedSettings = json.RawMessage(`{"permissions": {"deny": ["WebFetch"]}}`)
		},
			args: []string{`--managed-settings={"permissions":{"deny":["WebFetch"]}}`}},
		"SettingsDelivery": {set: func(o *claude.Options) {
			o.Settings = `{"env":{"K":"v"}}`
			o.SettingsDelivery = claude.DeliveryInitialize
		}, args: []string{"--await-initialize", "--initialize-fields=settings"}, initKeys: []string{"settings"}},
		"PluginDelivery": {set: func(o *claude.Options) {
			o.PluginDirs = []string{"/plugins/one"}
			o.PluginDelivery = claude.DeliveryInitialize
		}, args: []string{"--await-initialize"}, initKeys: []string{"plugins"}},
		"SessionStore": {set: func(o *claude.Options) { o.SessionStore = &claude.MemorySessionStore{} },
			args: []string{"--session-mirror"}},
		"ProjectConfigRoot": {set: func(o *claude.Options) { o.ProjectConfigRoot = "/repo" }, args: []string{"--project-config-root=/repo"}},
		"ResumeDropsTurn": {set: func(o *claude.Options) { o.Resume = "abc"; o.ResumeSessionAt = "u-1"; o.ResumeDropsTurn = "p-2" },
			args: []string{"--resume-drops-turn=p-2"}},
		"ToolConfig": {set: func(o *claude.Options) {
			o.ToolConfig = &claude.ToolConfig{AskUserQuestion: &claude.AskUserQuestionConfig{PreviewFormat: claude.PreviewHTML}}
		}, env: []string{claude.EnvQuestionPreviewFormat + "=html"}},
		"InitializeExtra": {set: func(o *claude.Options) {
			o.InitializeExtra = map[string]json.RawMessage{"futureKey": json.RawMessage(`{"on":true}`)}
		}, initKeys: []string{"futureKey"}},
	}
	// Fields that configure the host, not the CLI, each proven elsewhere.
	hostOnly := map[string]string{
		"Transport":        "it is the seam these tests use",
		"SkipVersionCheck": "TestVersionCheck",
		"Logger":           "TestLoggerReportsBadLines",
		"ObserveControl":   "TestObserveControlInStreamOrder",
		// Session I/O bounds (issue 10).
		"InitializeTimeout": "TestConnectInitializeTimeout",
		"MaxBufferedBytes":  "TestBufferBoundStopsReading",
		"QueryTaskTimeout":  "TestQueryWaitsForBackgroundTasks",
		"OnElicitation":     "TestRealCLI/elicitation, TestElicitation",
		"OnUserDialog":      "TestUserDialog",
		"ApprovalTimeout":   "TestApprovalTimeout",
		// Session stores (sessionstore*.go).
		"SessionStoreFlush":       "TestSessionStoreMirrorFake",
		"SessionStoreLoadTimeout": "TestSessionStoreLoadTimeout",
		"VerbatimPrompts":         "TestVerbatimPrompts: it marks each user message, not the launch",
	}

	base, baseInit := launched(t, &claude.Options{})
	rt := reflect.TypeFor[claude.Options]()
	for i := range rt.NumField() {
		if !rt.Field(i).IsExported() {
			continue // state Connect resolves, not an option
		}
		name := rt.Field(i).Name
		if !rt.Field(i).IsExported() {
			continue
		}
		c, ok := checks[name]
		if !ok {
			if _, ok := hostOnly[name]; !ok {
				t.Errorf("Options.%s has no check that it reaches the CLI: add one here", name)
			}
			continue
		}
		t.Run(name, func(t *testing.T) {
			o := &claude.Options{}
			c.set(o)
			l, init := launched(t, o)
			changed := !slices.Equal(l.Args, base.Args) || !slices.Equal(l.Env, base.Env) || l.Dir != base.Dir ||
				l.Path != base.Path || (l.Stderr != nil) != (base.Stderr != nil) || l.MaxLineSize != base.MaxLineSize ||
				l.CloseTimeout != base.CloseTimeout || len(init) != len(baseInit)
			if !changed {
				t.Errorf("setting Options.%s changed nothing the CLI receives", name)
			}
			for _, a := range c.args {
				if !slices.Contains(l.Args, a) {
					t.Errorf("argv lacks %q: %q", a, l.Args)
				}
			}
			for _, e := range c.env {
				if !slices.Contains(l.Env, e) {
					t.Errorf("environment lacks %q", e)
				}
			}
			for _, k := range c.initKeys {
				if _, ok := init[k]; !ok {
					t.Errorf("initialize lacks %q: %v", k, init)
				}
			}
			if c.custom != nil {
				if msg := c.custom(l); msg != "" {
					t.Error(msg)
				}
			}
		})
	}
}

func ifNot(ok bool, msg string) string {
	if ok {
		return ""
	}
	return msg
}

func TestLaunchBasics(t *testing.T) {
	t.Setenv("CLAUDECODE", "1")
	t.Setenv("TETHER_TEST_PARENT", "kept")
	l, init := launched(t, &claude.Options{Env: map[string]string{"TETHER_TEST_PARENT": "overridden"}})
	for _, a := range []string{"-p", "--output-format", "stream-json", "--input-format", "--verbose"} {
		if !slices.Contains(l.Args, a) {
			t.Errorf("argv lacks %q", a)
		}
	}
	for _, e := range l.Env {
		if strings.HasPrefix(e, "CLAUDECODE=") {
			t.Error("CLAUDECODE is passed on: the CLI refuses to start inside another Claude Code")
		}
	}
	for _, e := range []string{"CLAUDE_CODE_ENTRYPOINT=sdk-go", "CLAUDE_AGENT_SDK_VERSION=" + claude.Version, "TETHER_TEST_PARENT=overridden"} {
		if !slices.Contains(l.Env, e) {
			t.Errorf("environment lacks %q", e)
		}
	}
	if init["subtype"] != "initialize" {
		t.Errorf("initialize request = %v", init)
	}
}

func TestOptionsValidation(t *testing.T) {
	for name, o := range map[string]*claude.Options{
		"negative turns":    {MaxTurns: -1},
		"negative budget":   {MaxBudgetUSD: -1},
		"resume + continue": {Resume: "x", Continue: true},
		"fork alone":        {ForkSession: true},
		"bad env name":      {Env: map[string]string{"A=B": "c"}},
		"thinking type":     {Thinking: &claude.ThinkingConfig{Type: "sometimes"}},
		"thinking + max":    {Thinking: &claude.ThinkingConfig{Type: claude.ThinkingAdaptive}, MaxThinkingTokens: 10},
		"budget, adaptive":  {Thinking: &claude.ThinkingConfig{Type: claude.ThinkingAdaptive, BudgetTokens: 10}},
		"display, disabled": {Thinking: &claude.ThinkingConfig{Type: claude.ThinkingDisabled, Display: claude.ThinkingDisplayOmitted}},
		"negative task":     {TaskBudget: -1},
		"resume at alone":   {ResumeSessionAt: "u"},
		"drops turn alone":  {Resume: "x", ResumeDropsTurn: "p"},
		"relative config":   {ProjectConfigRoot: "repo"},
		"preview format":    {ToolConfig: &claude.ToolConfig{AskUserQuestion: &claude.AskUserQuestionConfig{PreviewFormat: "pdf"}}},
		"tool with comma":   {Tools: []string{"Bash,Read"}},
		"empty alias":       {ToolAliases: map[string]string{"Bash": ""}},
		"extra sets hooks":  {InitializeExtra: map[string]json.RawMessage{"hooks": json.RawMessage(`{}`)}},
		"extra not JSON":    {InitializeExtra: map[string]json.RawMessage{"x": json.RawMessage(`{`)}},
		"dialogs, no func":  {SupportedDialogKinds: []string{"x"}},
		"batch file":        {CLIPath: `C:\npm\claude.cmd`},
		"batch file, upper": {CLIPath: "/x/CLAUDE.BAT"},
		"sandbox + path":    {Sandbox: &claude.SandboxSettings{}, Settings: "/etc/settings.json"},
		"sandbox twice":     {Sandbox: &claude.SandboxSettings{}, Settings: `{"sandbox":{}}`},
		"sandbox extra":     {Sandbox: &claude.SandboxSettings{Extra: json.RawMessage(`[]`)}},
	} {
		o.Transport = &claudetest.FakeCLI{Script: claudetest.Echo}
		if _, err := claude.Connect(context.Background(), o); err == nil {
			t.Errorf("%s: Connect accepted invalid options", name)
		}
	}
}

func TestLoggerReportsBadLines(t *testing.T) {
	var buf strings.Builder
	logger := slog.New(slog.NewTextHandler(&syncWriter{w: &buf}, nil))
	ctx := testCtx(t)
	s := connect(t, &claude.Options{Logger: logger}, func(ctx context.Context, c *claudetest.CLI) error {
		if _, err := c.HandleInitialize(ctx); err != nil {
			return err
		}
		c.Write("garbage", c.ResultSuccess("x"))
		_, err := c.ReadUser(ctx)
		return err
	})
	for range s.ReceiveTurn(ctx) {
	}
	s.Close()
	if !strings.Contains(buf.String(), "not JSON") {
		t.Errorf("log = %q, want a warning about the non-JSON line", buf.String())
	}
}
