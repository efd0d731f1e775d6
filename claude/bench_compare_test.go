package claude_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
	"github.com/tetherhq/tether/internal/proctree"
)

// The side-by-side comparison with the official TypeScript SDK
// (scripts/bench-compare.sh) runs this test binary in two roles: as the
// fake CLI ("firehose", which answers a prompt "N" with N mixed lines),
// and, with TETHER_BENCH_HOST set, as the Tether host that runs Query over
// that stream in a fresh process and prints one line of JSON: messages,
// seconds, host CPU seconds and peak RSS. The TypeScript host runs query()
// against the same fake and prints the same line.

// envBenchHost selects the host role: "query:N" or "unread:N".
const envBenchHost = "TETHER_BENCH_HOST"

func init() {
	if v, ok := os.LookupEnv(envBenchHost); ok {
		os.Unsetenv(envBenchHost) // the fake CLI this host starts is no host
		benchHost(v)
	}
}

// hostStats is what a benchmark host reports.
type hostStats struct {
	Impl      string  `json:"impl"`
	Msgs      int     `json:"msgs"`
	Seconds   float64 `json:"seconds"`
	MsgsPerS  float64 `json:"msgs_per_s"`
	CPUS      float64 `json:"cpu_s"`
	PeakRSSMB float64 `json:"peak_rss_mb"`
	// For "unread": resident memory while N messages wait unreceived, and
	// after they were received and the burst was over.
	UnreadRSSMB float64 `json:"unread_rss_mb,omitempty"`
	AfterRSSMB  float64 `json:"after_rss_mb,omitempty"`
}

func benchHost(v string) {
	mode, arg, _ := strings.Cut(v, ":")
	n, _ := strconv.Atoi(arg)
	ctx := context.Background()
	st := hostStats{Impl: "tether"}
	start := time.Now()
	var err error
	switch mode {
	case "query":
		for m, qerr := range claude.Query(ctx, strconv.Itoa(n), claudetest.ExecOptions("firehose")) {
			if qerr != nil {
				err = qerr
				break
			}
			if _, ok := m.(*claude.ResultMessage); !ok {
				st.Msgs++
			}
		}
	case "unread":
		err = unreadBurst(ctx, n, &st)
	default:
		err = fmt.Errorf("unknown mode %q", mode)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench host:", err)
		os.Exit(1)
	}
	st.Seconds = time.Since(start).Seconds()
	st.MsgsPerS = float64(st.Msgs) / st.Seconds
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	st.CPUS = tv(ru.Utime) + tv(ru.Stime)
	st.PeakRSSMB = statusMB("VmHWM")
	json.NewEncoder(os.Stdout).Encode(st)
	os.Exit(0)
}

// unreadBurst lets n messages arrive with nobody receiving, then receives
// them all.
func unreadBurst(ctx context.Context, n int, st *hostStats) error {
	s, err := claude.Connect(ctx, claudetest.ExecOptions("firehose"))
	if err != nil {
		return err
	}
	defer s.Close()
	if err := s.Send(ctx, strconv.Itoa(n)); err != nil {
		return err
	}
	time.Sleep(time.Second) // the CLI writes until the buffer bound stops it
	st.UnreadRSSMB = statusMB("VmRSS")
	for m, err := range s.ReceiveTurn(ctx) {
		if err != nil {
			return err
		}
		if _, ok := m.(*claude.ResultMessage); !ok {
			st.Msgs++
		}
	}
	debug.FreeOSMemory()
	st.AfterRSSMB = statusMB("VmRSS")
	return nil
}

func tv(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }

// statusMB reads a kB field of this process's /proc status in MB.
func statusMB(field string) float64 {
	return float64(proctree.StatusKB(os.Getpid(), field)) / 1024
}

// runBenchHost runs this binary as a benchmark host and returns its stats.
func runBenchHost(b *testing.B, mode string) hostStats {
	exe, _ := os.Executable()
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), envBenchHost+"="+mode)
	out, err := cmd.Output()
	if err != nil {
		b.Fatalf("bench host %s: %v\n%s", mode, err, out)
	}
	var st hostStats
	if err := json.Unmarshal(out, &st); err != nil {
		b.Fatalf("bench host output %q: %v", out, err)
	}
	return st
}

// BenchmarkQueryStream100k is the Tether half of scripts/bench-compare.sh:
// a prompt reader (Query) over a 100k-message stream in a fresh process.
// Goal: peak RSS <= 16 MB.
func BenchmarkQueryStream100k(b *testing.B) {
	for b.Loop() {
		st := runBenchHost(b, "query:100000")
		if st.Msgs != 100000 {
			b.Fatalf("received %d messages", st.Msgs)
		}
		b.ReportMetric(st.MsgsPerS, "msgs/s")
		b.ReportMetric(st.CPUS, "host-cpu-s")
		b.ReportMetric(st.PeakRSSMB, "peakRSS-MB")
	}
}

// BenchmarkUnreadBurst1M lets a million messages arrive with nobody
// receiving, then drains them: resident memory stays near the buffer
// bound while they wait, and returns to the OS afterwards.
func BenchmarkUnreadBurst1M(b *testing.B) {
	for b.Loop() {
		st := runBenchHost(b, "unread:1000000")
		if st.Msgs != 1000000 {
			b.Fatalf("received %d messages", st.Msgs)
		}
		b.ReportMetric(st.UnreadRSSMB, "unreadRSS-MB")
		b.ReportMetric(st.PeakRSSMB, "peakRSS-MB")
		b.ReportMetric(st.AfterRSSMB, "afterRSS-MB")
	}
}
