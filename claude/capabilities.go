package claude

import (
	"errors"
	"fmt"
	"slices"

	"github.com/tetherhq/tether/internal/proc"
)

// Options that need a newer CLI than MinCLIVersion. An older CLI does not
// say so: it exits on a flag it does not know ("unknown option"), or
// ignores an initialize key and runs without the feature. Connect checks
// the table below against the CLI's version before starting it (the
// version it probed), or, when it could not probe (a custom Transport,
// SkipVersionCheck), against the version the CLI reports in its answer to
// initialize (2.1.330 does; 2.1.197 does not, and is then not checked).

// ErrNeedsNewerCLI is matched by a *CLIFeatureError.
var ErrNeedsNewerCLI = errors.New("claude: an option needs a newer CLI")

// CLIFeatureError is returned by Connect when an option needs a newer CLI
// than the one found. It matches ErrNeedsNewerCLI.
type CLIFeatureError struct {
	// Option is the Options field, e.g. "PerTaskStopAffordance".
	Option string
	// Needs is the oldest CLI version that serves it; Capability, when
	// set, the capability the CLI must advertise instead.
	Needs      string
	Capability string
	// Found is the CLI's version; Path its executable ("" with a custom
	// Transport).
	Found string
	Path  string
}

func (e *CLIFeatureError) Error() string {
	need := "CLI " + e.Needs + " or newer"
	if e.Capability != "" {
		need = fmt.Sprintf("a CLI with capability %q", e.Capability)
	}
	where := ""
	if e.Path != "" {
		where = " at " + e.Path
	}
	return fmt.Sprintf("claude: Options.%s needs %s; the CLI%s is %s", e.Option, need, where, e.Found)
}

// Is makes errors.Is(err, ErrNeedsNewerCLI) true.
func (e *CLIFeatureError) Is(target error) bool { return target == ErrNeedsNewerCLI }

// cliRequirement is one row of the table: an option, when used, and what
// it needs.
type cliRequirement struct {
	option string
	// version is the oldest CLI that serves it; capability, when set, is
	// checked instead where the CLI lists its capabilities.
	version    string
	capability string
	used       func(o *Options) bool
}

// cliRequirements lists the options an older supported CLI cannot serve,
// each checked against both pinned versions (the table in doc.go, "CLI
// versions", must match). Versions between the pinned ones are
// not tested: where the TypeScript SDK documents the version that brought
// a feature, that version is used, else the newer pinned one.
var cliRequirements = []cliRequirement{
	{
		// 2.1.197 exits: "unknown option '--await-claim'" (prewarm.go).
		option: "Prewarm", version: ClaimVersion,
		used: func(o *Options) bool { return o.awaitClaim },
	},
	{
		// 2.1.197 ignores the initialize key: an interrupt still stops
		// background agents.
		option: "PerTaskStopAffordance", version: "2.1.330",
		used: func(o *Options) bool { return o.PerTaskStopAffordance },
	},
	{
		// 2.1.197 exits: "unknown option '--await-initialize'".
		option: "SettingsDelivery", version: InitializeDeliveryVersion,
		used: func(o *Options) bool {
			return o.SettingsDelivery == DeliveryInitialize && (o.settingsArg() != "" || len(o.ManagedSettings) > 0)
		},
	},
	{
		option: "PluginDelivery", version: InitializeDeliveryVersion,
		used: func(o *Options) bool { return o.PluginDelivery == DeliveryInitialize && len(o.PluginDirs) > 0 },
	},
}

// checkCLI reports the first option the CLI of this version cannot
// serve. version "" means unknown: nothing is checked. capabilities are
// the CLI's, when known (nil before it started).
func (o *Options) checkCLI(path, version string, capabilities []string) error {
	if version == "" {
		return nil
	}
	for _, r := range cliRequirements {
		if !r.used(o) {
			continue
		}
		if r.capability != "" && capabilities != nil {
			if !slices.Contains(capabilities, r.capability) {
				return &CLIFeatureError{Option: r.option, Needs: r.version, Capability: r.capability, Found: version, Path: path}
			}
			continue
		}
		if proc.CompareVersions(version, r.version) < 0 {
			return &CLIFeatureError{Option: r.option, Needs: r.version, Found: version, Path: path}
		}
	}
	return nil
}

// checkStarted runs the checks that need the CLI's answer to initialize:
// the option table when the version was not known before the start, and
// the delivery confirmations.
func (s *Session) checkStarted(path, version string) error {
	if version == "" && s.init != nil && s.init.CLIVersion != "" {
		if err := s.opts.checkCLI(path, s.init.CLIVersion, s.init.Capabilities); err != nil {
			return err
		}
	}
	return s.checkDelivered()
}

// HasCapability reports whether the CLI listed capability in its answer
// to initialize (2.1.330 lists some, e.g. "get_usage_detached_v1";
// 2.1.197 none).
func (s *Session) HasCapability(capability string) bool {
	return s.init != nil && slices.Contains(s.init.Capabilities, capability)
}
