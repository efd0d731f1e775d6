package proctree

import (
	"os"
	"runtime"
	"testing"
)

func TestStatusKB(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("no /proc here")
	}
	rss, peak := StatusKB(os.Getpid(), "VmRSS"), StatusKB(os.Getpid(), "VmHWM")
	if rss <= 0 || peak < rss {
		t.Errorf("VmRSS %d kB, VmHWM %d kB: want 0 < VmRSS <= VmHWM", rss, peak)
	}
	if got := StatusKB(os.Getpid(), "NoSuchField"); got != 0 {
		t.Errorf("a field that is not there: %d, want 0", got)
	}
	if got := StatusKB(-1, "VmRSS"); got != 0 {
		t.Errorf("a process that is not there: %d, want 0", got)
	}
}
