package claude_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
)

// versionedCLI is a fake CLI that reports version (and capabilities) in
// its answer to initialize, as 2.1.330 does.
func versionedCLI(version string, capabilities ...string) *claudetest.FakeCLI {
	return fakeInitCLI(version, true, capabilities)
}

// fakeInitCLI is versionedCLI; confirm makes it confirm the settings,
// managed settings and plugins sent in initialize, as a CLI started to
// read them there does.
func fakeInitCLI(version string, confirm bool, capabilities []string) *claudetest.FakeCLI {
	return &claudetest.FakeCLI{Script: func(ctx context.Context, c *claudetest.CLI) error {
		l, err := c.Expect(ctx, "control_request", "initialize")
		if err != nil {
			return err
		}
		resp := claudetest.InitializeResponse().With("claude_code_version", version)
		if capabilities != nil {
			resp = resp.With("capabilities", capabilities)
		}
		var req map[string]json.RawMessage
		_ = json.Unmarshal(l.Request, &req)
		for key, applied := range map[string]string{"settings": "settings_applied", "managedSettings": "managed_settings_applied", "plugins": "plugins_applied"} {
			if _, ok := req[key]; ok && confirm {
				resp = resp.With(applied, true)
			}
		}
		if err := c.Respond(l.RequestID, resp); err != nil {
			return err
		}
		_, err = c.ReadUser(ctx)
		if errors.Is(err, io.EOF) {
			return nil
		}
		return err
	}}
}

// TestNeedsNewerCLI: an option an older CLI cannot serve fails Connect
// with a *CLIFeatureError matching ErrNeedsNewerCLI, naming the option and
// both versions; the same options connect on a CLI new enough, and when
// the version is unknown.
func TestNeedsNewerCLI(t *testing.T) {
	ctx := testCtx(t)
	for _, tc := range []struct {
		option string
		set    func(o *claude.Options)
		needs  string
	}{
		{"PerTaskStopAffordance", func(o *claude.Options) { o.PerTaskStopAffordance = true }, "2.1.330"},
		{"SettingsDelivery", func(o *claude.Options) {
			o.Settings = `{"env":{"K":"v"}}`
			o.SettingsDelivery = claude.DeliveryInitialize
		}, claude.InitializeDeliveryVersion},
		{"PluginDelivery", func(o *claude.Options) {
			o.PluginDirs = []string{t.TempDir()}
			o.PluginDelivery = claude.DeliveryInitialize
		}, claude.InitializeDeliveryVersion},
	} {
		o := &claude.Options{Transport: versionedCLI("2.1.200")}
		tc.set(o)
		s, err := claude.Connect(ctx, o)
		var fe *claude.CLIFeatureError
		if !errors.Is(err, claude.ErrNeedsNewerCLI) || !errors.As(err, &fe) {
			if s != nil {
				s.Close()
			}
			t.Errorf("%s on 2.1.200: Connect error %v, want a *CLIFeatureError", tc.option, err)
			continue
		}
		if fe.Option != tc.option || fe.Needs != tc.needs || fe.Found != "2.1.200" || !strings.Contains(err.Error(), tc.option) {
			t.Errorf("%s: error %+v (%v)", tc.option, fe, err)
		}
		for _, v := range []string{"2.1.330", ""} {
			o := &claude.Options{Transport: versionedCLI(v)}
			tc.set(o)
			s, err := claude.Connect(ctx, o)
			if err != nil {
				t.Errorf("%s on %q: %v", tc.option, v, err)
				continue
			}
			s.Close()
		}
	}

	// The version and capabilities the CLI reports are the session's.
	s, err := claude.Connect(ctx, &claude.Options{Transport: versionedCLI("2.1.330", "get_usage_detached_v1")})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if ir := s.Initialize(); ir.CLIVersion != "2.1.330" || !s.HasCapability("get_usage_detached_v1") || s.HasCapability("nope") {
		t.Errorf("version %q, capabilities %v", ir.CLIVersion, ir.Capabilities)
	}
}

// TestSettingsDeliveryAuto: with no known CLI version (a custom
// transport), settings, managed settings and plugins stay in argv; with
// DeliveryInitialize they go in the initialize request and leave argv,
// and a CLI that does not confirm them fails Connect with ErrNotApplied.
func TestSettingsDeliveryAuto(t *testing.T) {
	set := func(o *claude.Options) {
		o.Settings = `{"env":{"TETHER_SECRET":"s3cr3t"}}`
		o.ManagedSettings = json.RawMessage(`{"permissions":{"deny":["WebFetch"]}}`)
		o.PluginDirs = []string{"/p/one"}
	}
	o := &claude.Options{}
	set(o)
	l, init := launched(t, o)
	argv := strings.Join(l.Args, " ")
	if !strings.Contains(argv, "s3cr3t") || !strings.Contains(argv, "--managed-settings=") || !strings.Contains(argv, "--plugin-dir=/p/one") || strings.Contains(argv, "--await-initialize") {
		t.Errorf("auto, version unknown: argv %s", argv)
	}
	if _, ok := init["settings"]; ok {
		t.Errorf("auto, version unknown: settings in initialize too")
	}

	o = &claude.Options{SettingsDelivery: claude.DeliveryInitialize, PluginDelivery: claude.DeliveryInitialize}
	set(o)
	l, init = launched(t, o)
	argv = strings.Join(l.Args, " ")
	if strings.Contains(argv, "s3cr3t") || strings.Contains(argv, "WebFetch") || strings.Contains(argv, "/p/one") {
		t.Errorf("initialize delivery leaks into argv: %s", argv)
	}
	for _, f := range []string{"--await-initialize", "--initialize-fields=settings", "--managed-settings-in-initialize"} {
		if !slices.Contains(l.Args, f) {
			t.Errorf("argv lacks %s: %s", f, argv)
		}
	}
	b, _ := json.Marshal(init)
	if !strings.Contains(string(b), `"settings":{"env":{"TETHER_SECRET":"s3cr3t"}}`) || !strings.Contains(string(b), `"managedSettings":{"permissions":{"deny":["WebFetch"]}}`) ||
		!strings.Contains(string(b), `"plugins":[{"path":"/p/one","type":"local"}]`) {
		t.Errorf("initialize request %s", b)
	}

	// A CLI that answers without confirming.
	o = &claude.Options{SettingsDelivery: claude.DeliveryInitialize, Transport: fakeInitCLI("", false, nil)}
	set(o)
	if s, err := claude.Connect(testCtx(t), o); !errors.Is(err, claude.ErrNotApplied) {
		if s != nil {
			s.Close()
		}
		t.Errorf("unconfirmed settings: Connect error %v, want ErrNotApplied", err)
	}

	// Bad values are refused before anything starts.
	for _, o := range []*claude.Options{
		{SettingsDelivery: "stdin"},
		{PluginDelivery: "stdin"},
		{ManagedSettings: json.RawMessage(`[1]`)},
		{Settings: "/etc/settings.json", SettingsDelivery: claude.DeliveryInitialize},
	} {
		o.Transport = versionedCLI("")
		if s, err := claude.Connect(testCtx(t), o); err == nil {
			s.Close()
			t.Errorf("%+v: no error", o)
		}
	}
}

// TestOptionWarnings: the ways CanUseTool can be shadowed are reported,
// and logged at Connect through Options.Logger; none without CanUseTool.
func TestOptionWarnings(t *testing.T) {
	allow := func(ctx context.Context, req *claude.ToolPermissionRequest) (claude.PermissionResult, error) {
		return &claude.PermissionAllow{}, nil
	}
	settingsFile := filepath.Join(t.TempDir(), "settings.json")
	if err := os.WriteFile(settingsFile, []byte(`{"permissions":{"allow":["WebFetch","Read(./docs/**)"],"defaultMode":"acceptEdits"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		o    claude.Options
		want []string // option:tools of each warning
	}{
		{"none without CanUseTool", claude.Options{AllowedTools: []string{"Bash"}, PermissionMode: claude.PermissionModeBypassPermissions}, nil},
		{"patterns only", claude.Options{CanUseTool: allow, AllowedTools: []string{"Bash(git *)", "Read(./src/**)"}}, nil},
		{"whole tools", claude.Options{CanUseTool: allow, AllowedTools: []string{"Bash", "Read(./src/**)", "mcp__calc", "Edit(*)"}}, []string{"AllowedTools:Bash,mcp__calc,Edit"}},
		{"bypass", claude.Options{CanUseTool: allow, PermissionMode: claude.PermissionModeBypassPermissions}, []string{"PermissionMode:"}},
		{"dontAsk", claude.Options{CanUseTool: allow, PermissionMode: claude.PermissionModeDontAsk}, []string{"PermissionMode:"}},
		{"acceptEdits", claude.Options{CanUseTool: allow, PermissionMode: claude.PermissionModeAcceptEdits}, []string{"PermissionMode:Edit,Write,NotebookEdit"}},
		{"settings JSON", claude.Options{CanUseTool: allow, Settings: `{"permissions":{"allow":["Bash"],"defaultMode":"bypassPermissions"}}`}, []string{"Settings:Bash", "Settings:"}},
		{"settings file", claude.Options{CanUseTool: allow, Settings: settingsFile}, []string{"Settings:WebFetch", "Settings:Edit,Write,NotebookEdit"}},
		{"flag mode wins over the settings'", claude.Options{CanUseTool: allow, PermissionMode: claude.PermissionModeDefault, Settings: settingsFile}, []string{"Settings:WebFetch"}},
	} {
		var got []string
		for _, w := range claude.OptionWarnings(&tc.o) {
			if w.Code != claude.WarningCanUseToolShadowed || w.Message == "" {
				t.Errorf("%s: warning %+v", tc.name, w)
			}
			got = append(got, w.Option+":"+strings.Join(w.Tools, ","))
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: warnings %v, want %v", tc.name, got, tc.want)
		}
	}

	// Connect logs them, and the session returns them.
	var logged strings.Builder
	o := &claude.Options{CanUseTool: allow, AllowedTools: []string{"Bash"}, Logger: slog.New(slog.NewTextHandler(&syncWriter{w: &logged}, nil))}
	s := connect(t, o, func(ctx context.Context, c *claudetest.CLI) error {
		if _, err := c.HandleInitialize(ctx); err != nil {
			return err
		}
		_, err := c.ReadUser(ctx)
		return err
	})
	if ws := s.Warnings(); len(ws) != 1 || ws[0].Option != "AllowedTools" {
		t.Errorf("Session.Warnings = %+v", ws)
	}
	s.Close()
	if !strings.Contains(logged.String(), "CanUseTool is never asked about Bash") {
		t.Errorf("log: %s", logged.String())
	}
}

// holdCLI asks for permission once and reports the host's answer.
func holdCLI(answer chan<- string) *claudetest.FakeCLI {
	return &claudetest.FakeCLI{Script: func(ctx context.Context, c *claudetest.CLI) error {
		if _, err := c.HandleInitialize(ctx); err != nil {
			return err
		}
		raw, err := c.CanUseTool(ctx, "toolu_hold", "Bash", map[string]string{"command": "ls"})
		if err != nil {
			answer <- "error: " + err.Error()
		} else {
			answer <- string(raw)
		}
		_, err = c.ReadUser(ctx)
		if errors.Is(err, io.EOF) {
			return nil
		}
		return err
	}}
}

// TestApprovalTimeout: with Options.ApprovalTimeout, a CanUseTool that
// does not answer in time is denied with a message saying so, and its ctx
// is cancelled with ErrApprovalTimeout; without it, an approval held past
// every other bound Tether has (all set tiny here) is still answered as
// the callback says.
func TestApprovalTimeout(t *testing.T) {
	ctx := testCtx(t)
	answer := make(chan string, 1)
	cause := make(chan error, 1)
	s, err := claude.Connect(ctx, &claude.Options{
		Transport:       holdCLI(answer),
		ApprovalTimeout: 100 * time.Millisecond,
		CanUseTool: func(ctx context.Context, req *claude.ToolPermissionRequest) (claude.PermissionResult, error) {
			<-ctx.Done()
			cause <- context.Cause(ctx)
			return &claude.PermissionAllow{}, nil // too late: ignored
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := <-answer; !strings.Contains(got, `"behavior":"deny"`) || !strings.Contains(got, `"decisionClassification":"config"`) || !strings.Contains(got, "No answer to the permission request within 100ms") {
		t.Errorf("answer at the deadline: %s", got)
	}
	if c := <-cause; !errors.Is(c, claude.ErrApprovalTimeout) {
		t.Errorf("callback ctx cause %v", c)
	}
	s.Close()

	// No ApprovalTimeout: a hold of 1.5 s, longer than every Tether bound
	// set here, still gets the callback's answer.
	hold := 1500 * time.Millisecond
	s, err = claude.Connect(ctx, &claude.Options{
		Transport:         holdCLI(answer),
		InitializeTimeout: time.Second,
		CloseTimeout:      10 * time.Millisecond,
		QueryTaskTimeout:  10 * time.Millisecond,
		CanUseTool: func(ctx context.Context, req *claude.ToolPermissionRequest) (claude.PermissionResult, error) {
			select {
			case <-time.After(hold):
				return &claude.PermissionAllow{}, nil
			case <-ctx.Done():
				return nil, context.Cause(ctx)
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	start := time.Now()
	if got := <-answer; !strings.Contains(got, `"behavior":"allow"`) {
		t.Errorf("answer after a long hold: %s", got)
	}
	if d := time.Since(start); d < hold/2 {
		t.Errorf("answered after %v: not held", d)
	}
}
