package host_test

import (
	"flag"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/tetherhq/tether/claude/claudetest"
)

var update = flag.Bool("update", false, "rewrite the real-CLI transcripts in testdata/transcripts")

func TestMain(m *testing.M) {
	claudetest.RunScriptIfChild(scripts)
	flag.Parse()
	goleak.VerifyTestMain(m)
	os.Exit(0)
}
