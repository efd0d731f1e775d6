package host_test

import "github.com/tetherhq/tether/claude/claudetest"

// scripts are the fake CLIs the subprocess tests run.
var scripts = map[string]claudetest.Script{
	"echo": claudetest.Echo,
}
