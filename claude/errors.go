package claude

import (
	"errors"
	"fmt"
	"os/exec"
	"strings"

	"github.com/tetherhq/tether/internal/wire"
)

// Sentinel errors. Match them with errors.Is.
var (
	// ErrClosed is returned by calls on a Session after Close, and ends
	// Receive once the session is closed by its owner.
	ErrClosed = errors.New("claude: session closed")

	// ErrCLINotFound is returned when no Claude Code CLI could be found. It
	// wraps exec.ErrNotFound; the *CLINotFoundError that carries it lists
	// every path that was tried.
	ErrCLINotFound = fmt.Errorf("claude: CLI not found: %w", exec.ErrNotFound)

	// ErrLineTooLong reports a stdout line longer than Options.MaxLineSize.
	// It is delivered in order, as a *LineError, and the stream continues
	// with the next line.
	ErrLineTooLong = wire.ErrLineTooLong
)

// CLINotFoundError says where the CLI was looked for. It matches
// ErrCLINotFound and exec.ErrNotFound.
type CLINotFoundError struct {
	Searched []string // every path tried, in order
}

func (e *CLINotFoundError) Error() string {
	return fmt.Sprintf("claude: CLI not found (install it with: npm install -g @anthropic-ai/claude-code, or set Options.CLIPath or $%s); searched: %s",
		EnvCLIPath, strings.Join(e.Searched, ", "))
}

func (e *CLINotFoundError) Unwrap() error { return ErrCLINotFound }

// CLIVersionError is returned by Connect when the CLI is older than
// MinCLIVersion. Set Options.SkipVersionCheck to run it anyway.
type CLIVersionError struct {
	Path    string
	Version string // as reported by `claude --version`
	Minimum string
}

func (e *CLIVersionError) Error() string {
	return fmt.Sprintf("claude: CLI %s at %s is older than the minimum supported %s (set Options.SkipVersionCheck to try anyway)", e.Version, e.Path, e.Minimum)
}

// ProcessError reports that the CLI process ended when the session did not
// ask it to: it crashed, was killed, or exited on a fatal input or flag error.
type ProcessError struct {
	ExitCode int      // -1 when the process was ended by a signal
	Signal   string   // the signal's name when it was, else ""
	Stderr   []string // the last lines the CLI wrote to stderr
	Err      error    // the underlying error, if any (e.g. *exec.ExitError)
}

func (e *ProcessError) Error() string {
	var b strings.Builder
	b.WriteString("claude: CLI exited")
	if e.Signal != "" {
		fmt.Fprintf(&b, " on signal %s", e.Signal)
	} else {
		fmt.Fprintf(&b, " with code %d", e.ExitCode)
	}
	if n := len(e.Stderr); n > 0 {
		fmt.Fprintf(&b, ": %s", strings.Join(e.Stderr, "\n"))
	} else if e.Err != nil {
		fmt.Fprintf(&b, ": %v", e.Err)
	}
	return b.String()
}

func (e *ProcessError) Unwrap() error { return e.Err }

// ControlError is an error answer from the CLI to a control request
// (`{"subtype":"error","error":"…"}`), such as "Unsupported control request
// subtype: x".
type ControlError struct {
	Subtype string // the request's subtype, e.g. "set_permission_mode"
	Message string // the CLI's error text
}

func (e *ControlError) Error() string {
	return fmt.Sprintf("claude: %s: %s", e.Subtype, e.Message)
}

// Is reports whether the error is the CLI's refusal of an unknown
// request (ErrUnsupportedRequest).
func (e *ControlError) Is(target error) bool {
	return target == ErrUnsupportedRequest && strings.Contains(strings.ToLower(e.Message), "unsupported control request subtype")
}

// ErrUnsupportedRequest matches (errors.Is) a *ControlError with which
// the CLI refused a control request it does not know: a request newer
// than the CLI found, such as ReloadOutputStyles, HooksListing,
// PermissionRules or UpdateSettings on CLI 2.1.197. Upgrade the CLI, or
// do without.
var ErrUnsupportedRequest = errors.New("claude: the CLI does not support this request")

// ErrInvalidArgument matches (errors.Is) an *ArgumentError: a call was
// made with arguments it cannot take, and nothing was sent to the CLI.
var ErrInvalidArgument = errors.New("claude: invalid argument")

// ArgumentError says which call refused its arguments, and why.
type ArgumentError struct {
	Call    string // the method, e.g. "SetMaxThinkingTokens"
	Message string
}

func (e *ArgumentError) Error() string { return "claude: " + e.Call + ": " + e.Message }

// Is reports whether target is ErrInvalidArgument.
func (e *ArgumentError) Is(target error) bool { return target == ErrInvalidArgument }

// LineError reports a stdout line that Tether could not turn into a
// Message: it was longer than Options.MaxLineSize (Err wraps
// ErrLineTooLong) or it was not a JSON object. It is yielded in order and
// is never fatal: the next line is read as usual.
type LineError struct {
	Line   int64  // 1-based line number on the CLI's stdout
	Prefix []byte // the line's first bytes, for diagnosis (at most 256)
	Size   int    // the line's length in bytes (for an over-long line, at least MaxLineSize+1)
	Err    error
}

func (e *LineError) Error() string {
	return fmt.Sprintf("claude: stdout line %d (%d bytes): %v", e.Line, e.Size, e.Err)
}

func (e *LineError) Unwrap() error { return e.Err }
