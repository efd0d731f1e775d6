package claudetest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/tetherhq/tether/claude"
)

// A RealRun is what one real-CLI test needs: a fake Messages API, the CLI
// set up against it in throw-away directories, options that run it
// through a Recorder with its stderr kept, and a way to save the
// recording as a transcript for Replay.
//
//	run := claudetest.NewRealRun(t, &claudetest.MessagesOptions{Replies: …})
//	s, err := claude.Connect(ctx, run.Options)
//	… drive s, assert on run.API.MessagesRequests() …
//	s.Close()
//	if *update { run.SaveTranscript(t, "testdata/x.txtar", "guards against …") }
type RealRun struct {
	API      *MessagesServer
	CLI      *RealCLI
	Recorder *Recorder
	// Options run the CLI through Recorder; change them before
	// connecting. The version check is skipped: FindCLI chose a pinned
	// version already.
	Options *claude.Options

	mu     sync.Mutex
	stderr strings.Builder
}

// NewRealRun starts a MessagesServer with opts (nil: every request is
// answered "ok"), closed when the test ends, and prepares the real CLI
// against it (NewRealCLI: the test is skipped without the CLI, and fails
// under CI=true). If the test fails, the CLI's stderr is logged.
func NewRealRun(t testing.TB, opts *MessagesOptions) *RealRun {
	t.Helper()
	api := NewMessagesServer(opts)
	t.Cleanup(api.Close) // registered first: runs after the test's own cleanups
	cli := NewRealCLI(t, api)
	r := &RealRun{API: api, CLI: cli}
	r.Recorder = &Recorder{Replace: map[string]string{cli.Dir: "$CWD", cli.Home: "$HOME"}}
	r.Options = cli.Options()
	r.Options.SkipVersionCheck = true
	r.Options.Transport = r.Recorder
	r.Options.Stderr = func(l string) {
		r.mu.Lock()
		fmt.Fprintln(&r.stderr, l)
		r.mu.Unlock()
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("CLI stderr:\n%s", r.Stderr())
		}
	})
	return r
}

// Stderr returns what the CLI wrote to stderr so far.
func (r *RealRun) Stderr() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stderr.String()
}

// CheckScripted fails t if the CLI made requests the fake API's script
// did not cover (see MessagesServer.Unexpected).
func (r *RealRun) CheckScripted(t testing.TB) {
	t.Helper()
	if u := r.API.Unexpected(); len(u) > 0 {
		t.Errorf("the CLI made %d request(s) the scenario did not script; first: %s %s", len(u), u[0].Method, u[0].Path)
	}
}

// SaveTranscript writes what was recorded to path, headed by comment and
// the CLI version, when the test passed and ran the default CLI version
// (transcripts come from one version, so re-recording with another does
// nothing). It reports whether it wrote the file.
func (r *RealRun) SaveTranscript(t testing.TB, path, comment string) bool {
	t.Helper()
	if t.Failed() || !RecordingVersion() {
		return false
	}
	tr := r.Recorder.Transcript(fmt.Sprintf("%s\n\nRecorded from the real CLI %s.", strings.TrimSpace(comment), DefaultCLIVersion))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := tr.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	return true
}

// RecordingVersion reports whether the tests run the default CLI version
// (no TETHER_CLI_PATH, TETHER_CLI_VERSION unset or DefaultCLIVersion), the
// one transcripts are recorded from.
func RecordingVersion() bool {
	return CLIVersion() == DefaultCLIVersion && os.Getenv(claude.EnvCLIPath) == ""
}
