package claude

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/tetherhq/tether/internal/proc"
)

// Settings, managed settings and plugins can reach the CLI in its argv
// (--settings, --managed-settings, --plugin-dir) or in the initialize
// request. In argv, every user of the machine can read them (ps,
// /proc/<pid>/cmdline), and settings hold secrets: env values,
// apiKeyHelper commands, hook headers. CLIs from 2.1.261 on read them from
// the initialize request instead when started with --await-initialize
// (which makes them read that request before anything else) and
// --initialize-fields=settings or --managed-settings-in-initialize, and
// confirm each in the answer (settings_applied, managed_settings_applied,
// plugins_applied). Older CLIs exit on those flags ("unknown option"), so
// the default picks by the version Connect probed. This is how the
// TypeScript SDK's settingsDelivery, managedSettingsDelivery and
// pluginDelivery options work.

// Delivery is how a group of options reaches the CLI.
type Delivery string

// Deliveries.
const (
	// DeliveryAuto sends the options in the initialize request when the
	// CLI's version is known (Connect probed it: not with a custom
	// Transport or SkipVersionCheck) and at least
	// InitializeDeliveryVersion, and in argv otherwise.
	DeliveryAuto Delivery = ""
	// DeliveryArgv sends them as command-line flags: any CLI version,
	// visible to every user of the machine.
	DeliveryArgv Delivery = "argv"
	// DeliveryInitialize sends them in the initialize request. A CLI
	// known to be older than InitializeDeliveryVersion makes Connect fail
	// with a *CLIFeatureError; one that does not confirm them makes it
	// fail with ErrNotApplied.
	DeliveryInitialize Delivery = "initialize"
	// DeliveryFile, for Options.MCPServersDelivery only, writes the
	// configuration to a file only this user can read (0600, in a fresh
	// 0700 directory) and names that on the command line; Connect removes
	// it once the CLI has answered initialize, or has failed to. Every CLI
	// version reads it; the secret is on disk for the seconds of the
	// start.
	DeliveryFile Delivery = "file"
)

// InitializeDeliveryVersion is the oldest CLI that reads settings,
// managed settings, plugins and MCP servers from the initialize request (the
// TypeScript SDK's documentation; 2.1.330 does, 2.1.197 exits on the
// flags).
const InitializeDeliveryVersion = "2.1.261"

// ErrNotApplied is matched by Connect's error when the CLI did not
// confirm settings or managed settings sent in the initialize request
// (a wrapper between Tether and the CLI dropping the flags, say): the
// session would run without them, so it is not started.
var ErrNotApplied = errors.New("claude: the CLI did not apply what the initialize request delivered")

// deliveryPlan is how one session delivers each group.
type deliveryPlan struct {
	settings bool // Settings (a JSON object, with Sandbox merged in) in initialize
	managed  bool // ManagedSettings in initialize
	plugins  bool // PluginDirs in initialize
}

func (p deliveryPlan) any() bool { return p.settings || p.managed || p.plugins }

// pluginConfig is one plugin in the initialize request.
type pluginConfig struct {
	Type string `json:"type"` // "local"
	Path string `json:"path"`
}

func (d Delivery) valid() bool {
	return d == DeliveryAuto || d == DeliveryArgv || d == DeliveryInitialize
}

// viaInitialize decides one group: known is whether the CLI version is
// known, recent whether it reads the initialize request at start.
func (d Delivery) viaInitialize(known, recent bool) bool {
	switch d {
	case DeliveryInitialize:
		return true
	case DeliveryArgv:
		return false
	}
	return known && recent
}

// planDelivery decides how the groups travel for a CLI of this version
// ("" when unknown).
func (o *Options) planDelivery(version string) deliveryPlan {
	known := version != ""
	recent := known && proc.CompareVersions(version, InitializeDeliveryVersion) >= 0
	var p deliveryPlan
	if s := strings.TrimSpace(o.settingsArg()); strings.HasPrefix(s, "{") {
		// A path stays in argv: the CLI reads the file, and a path
		// holds no secret.
		p.settings = o.SettingsDelivery.viaInitialize(known, recent)
	}
	if len(o.ManagedSettings) > 0 {
		p.managed = o.SettingsDelivery.viaInitialize(known, recent)
	}
	if len(o.PluginDirs) > 0 {
		p.plugins = o.PluginDelivery.viaInitialize(known, recent)
	}
	return p
}

// validateDelivery checks the delivery options.
func (o *Options) validateDelivery() error {
	if !o.SettingsDelivery.valid() {
		return fmt.Errorf("claude: Options.SettingsDelivery %q is not argv or initialize", o.SettingsDelivery)
	}
	if !o.PluginDelivery.valid() {
		return fmt.Errorf("claude: Options.PluginDelivery %q is not argv or initialize", o.PluginDelivery)
	}
	if d := o.MCPServersDelivery; !d.valid() && d != DeliveryFile {
		return fmt.Errorf("claude: Options.MCPServersDelivery %q is not argv, initialize or file", d)
	}
	if len(o.ManagedSettings) > 0 {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(o.ManagedSettings, &m); err != nil || m == nil {
			return fmt.Errorf("claude: Options.ManagedSettings is not a JSON object")
		}
	}
	if o.SettingsDelivery == DeliveryInitialize && o.Settings != "" && !strings.HasPrefix(strings.TrimSpace(o.Settings), "{") {
		return fmt.Errorf("claude: Options.SettingsDelivery is initialize, but Options.Settings is a path (only JSON travels in the initialize request)")
	}
	return nil
}

// deliveryArgs are the flags that tell the CLI to read the groups from the
// initialize request, or the managed settings themselves in argv.
func (o *Options) deliveryArgs() []string {
	var a []string
	if o.via.any() {
		a = append(a, "--await-initialize")
	}
	if o.via.settings {
		a = append(a, "--initialize-fields=settings")
	}
	switch {
	case o.via.managed:
		a = append(a, "--managed-settings-in-initialize")
	case len(o.ManagedSettings) > 0:
		a = append(a, "--managed-settings="+string(compactJSON(o.ManagedSettings)))
	}
	return a
}

// deliveryInitialize fills the initialize keys of the groups that travel
// there.
func (o *Options) deliveryInitialize(r *initializeRequest) error {
	if o.via.settings {
		r.Settings = json.RawMessage(o.settingsArg())
		if !json.Valid(r.Settings) {
			return fmt.Errorf("claude: Options.Settings is not valid JSON")
		}
	}
	if o.via.managed {
		r.ManagedSettings = o.ManagedSettings
	}
	if o.via.plugins {
		for _, d := range o.PluginDirs {
			r.Plugins = append(r.Plugins, pluginConfig{Type: "local", Path: d})
		}
	}
	return nil
}

// checkDelivered fails a session whose CLI did not confirm the settings or
// managed settings sent in initialize; plugins that did not load are only
// logged, as the TypeScript SDK does.
func (s *Session) checkDelivered() error {
	via, ir := s.opts.via, s.init
	var missing []string
	if via.settings && (ir.SettingsApplied == nil || !*ir.SettingsApplied) {
		missing = append(missing, "settings")
	}
	if via.managed && (ir.ManagedSettingsApplied == nil || !*ir.ManagedSettingsApplied) {
		missing = append(missing, "managed settings")
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: %s not confirmed; check that nothing between Tether and the CLI changes its flags, or set Options.SettingsDelivery to argv", ErrNotApplied, strings.Join(missing, " and "))
	}
	if via.plugins && (ir.PluginsApplied == nil || !*ir.PluginsApplied) {
		s.log.Warn("claude: the CLI did not confirm loading the plugins sent in initialize", "plugins", len(s.opts.PluginDirs))
	}
	return nil
}

func compactJSON(b json.RawMessage) []byte {
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		return b
	}
	return buf.Bytes()
}
