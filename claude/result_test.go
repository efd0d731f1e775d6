package claude_test

import (
	"errors"
	"testing"

	"github.com/tetherhq/tether/claude"
)

// TestResultErrAutoModeUnchecked: a turn that ran to its end while auto
// mode refused calls it could not check (CLI 2.1.337: is_error with the
// final text as result, the CLI's words tagged in errors; or a denial
// that says auto_mode_unchecked, as the SDK declares) gives an error
// matching ErrAutoModeUnchecked that says what did not run, never the
// final text; other failed turns do not match and read as before.
func TestResultErrAutoModeUnchecked(t *testing.T) {
	for _, tc := range []struct {
		name, line string
		unchecked  bool
		text       string // the error's text; "" for no error
	}{
		{"tagged errors (2.1.337)",
			`{"type":"result","subtype":"success","is_error":true,"result":"done","errors":["Auto mode could not check some actions Claude tried, so they did not run: Bash. To run them, use another permission mode. [auto_mode_unchecked]"],"permission_denials":[{"tool_name":"Bash","tool_use_id":"t1","tool_input":{}}]}`,
			true, "claude: Auto mode could not check some actions Claude tried, so they did not run: Bash. To run them, use another permission mode. [auto_mode_unchecked]"},
		{"a denial that says so",
			`{"type":"result","subtype":"success","is_error":true,"result":"done","permission_denials":[{"tool_name":"Bash","tool_use_id":"t1","tool_input":{},"auto_mode_unchecked":"no_verdict"}]}`,
			true, "claude: auto mode could not check some tool calls, so they did not run"},
		{"an API failure",
			`{"type":"result","subtype":"success","is_error":true,"result":"API Error: 500","api_error_status":500,"permission_denials":[]}`,
			false, "claude: turn failed: API status 500: API Error: 500"},
		{"max turns",
			`{"type":"result","subtype":"error_max_turns","is_error":true,"errors":["Reached maximum number of turns (1)"],"permission_denials":[{"tool_name":"Bash","tool_use_id":"t1","tool_input":{}}]}`,
			false, "claude: turn failed (error_max_turns): Reached maximum number of turns (1)"},
		{"a success with a denial (before 2.1.337)",
			`{"type":"result","subtype":"success","is_error":false,"result":"done","permission_denials":[{"tool_name":"Bash","tool_use_id":"t1","tool_input":{}}]}`,
			false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := claude.DecodeMessage([]byte(tc.line))
			if err != nil {
				t.Fatal(err)
			}
			r := m.(*claude.ResultMessage)
			err = r.Err()
			if got := errors.Is(err, claude.ErrAutoModeUnchecked); got != tc.unchecked {
				t.Errorf("errors.Is(Err(), ErrAutoModeUnchecked) = %v, want %v", got, tc.unchecked)
			}
			if tc.text == "" {
				if err != nil {
					t.Errorf("Err() = %v, want nil", err)
				}
				return
			}
			var rerr *claude.ResultError
			if !errors.As(err, &rerr) || err.Error() != tc.text {
				t.Fatalf("Err() = %v, want a *ResultError saying %q", err, tc.text)
			}
			if tc.unchecked && (rerr.Result != "" || r.Result != "done") {
				t.Errorf("ResultError.Result %q, ResultMessage.Result %q: the final text stays the message's", rerr.Result, r.Result)
			}
		})
	}
}
