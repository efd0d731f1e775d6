package claude

import (
	"errors"
	"strings"
)

// ErrUnsupportedRequest matches (errors.Is) a *ControlError with which
// the CLI refused a control request it does not know: a request newer
// than the CLI found, such as ReloadOutputStyles, HooksListing,
// PermissionRules or UpdateSettings on CLI 2.1.197. Upgrade the CLI, or
// do without.
var ErrUnsupportedRequest = errors.New("claude: the CLI does not support this request")

// Is reports whether the error is the CLI's refusal of an unknown
// request (ErrUnsupportedRequest).
func (e *ControlError) Is(target error) bool {
	return target == ErrUnsupportedRequest && strings.Contains(strings.ToLower(e.Message), "unsupported control request subtype")
}
