package claude

import (
	"errors"
	"fmt"

	"github.com/tetherhq/tether/internal/proc"
)

// EnvCLIPath names the environment variable that points Tether at a CLI
// binary when Options.CLIPath is empty. Discovery then tries PATH and the
// usual install places.
const EnvCLIPath = "TETHER_CLI_PATH"

// MinCLIVersion is the oldest CLI version Tether is tested against.
const MinCLIVersion = "2.1.197"

// BatchFileError is returned by Connect when the CLI it would run is a
// Windows batch file (.bat or .cmd): Options.CLIPath or $TETHER_CLI_PATH
// names one, or discovery found only npm's claude.cmd shim. Go runs a
// batch file through cmd.exe, which re-parses every argument by its own
// rules; no quoting keeps a system prompt or a JSON setting intact, so
// Tether refuses rather than pass them mangled. Point CLIPath at
// claude.exe, which npm installs under
// node_modules/@anthropic-ai/claude-code/bin.
type BatchFileError struct {
	Path string
	// Found is set when discovery found the file; otherwise it was
	// named explicitly.
	Found bool
}

func (e *BatchFileError) Error() string {
	if e.Found {
		return fmt.Sprintf("claude: discovery found no claude.exe, only the batch file %s, which Tether does not run (cmd.exe re-parses its arguments); set Options.CLIPath to claude.exe", e.Path)
	}
	return fmt.Sprintf("claude: the CLI path %q is a batch file, which Tether does not run (cmd.exe re-parses its arguments); point it at claude.exe", e.Path)
}

// batchFileError converts discovery's error, if it is about a batch file.
func batchFileError(err error) (*BatchFileError, bool) {
	var be *proc.BatchFileError
	if !errors.As(err, &be) {
		return nil, false
	}
	return &BatchFileError{Path: be.Path, Found: be.Found}, true
}
