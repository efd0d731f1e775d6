// Command benchhost is the Tether side of scripts/bench-compare.sh: a
// program that runs claude.Query over a fake CLI's stream and prints one
// line of JSON (messages, seconds, host CPU seconds in all and during
// the stream, peak RSS), as the
// TypeScript side does for the official SDK's query(). It is a program of
// its own, not the test binary, so that its resident memory is that of a
// real host using package claude and nothing else.
//
//	benchhost -cli ./claude.test -n 100000
//
// The fake CLI is package claude's test binary running its "firehose"
// script, which answers a prompt "N" with N mixed stream lines.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"syscall"
	"time"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/internal/proctree"
)

type stats struct {
	Impl          string  `json:"impl"`
	Msgs          int     `json:"msgs"`
	Seconds       float64 `json:"seconds"`
	StreamSeconds float64 `json:"stream_seconds"`
	MsgsPerS      float64 `json:"msgs_per_s"`
	CPUS          float64 `json:"cpu_s"`
	StreamCPUS    float64 `json:"stream_cpu_s"`
	WallMsgsPerS  float64 `json:"wall_msgs_per_s"`
	PeakRSSMB     float64 `json:"peak_rss_mb"`
}

func main() {
	cli := flag.String("cli", "", "the fake CLI: package claude's test binary")
	n := flag.Int("n", 100000, "messages to stream")
	buffer := flag.Int("buffer", 0, "Options.MaxBufferedBytes (0: the default)")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile here")
	procs := flag.Int("procs", 0, "GOMAXPROCS for this process only, not the fake CLI (0: the runtime's default)")
	flag.Parse()
	if *procs > 0 {
		runtime.GOMAXPROCS(*procs)
	}
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err == nil {
			pprof.StartCPUProfile(f)
			defer pprof.StopCPUProfile()
		}
	}
	if err := run(*cli, *n, *buffer); err != nil {
		fmt.Fprintln(os.Stderr, "benchhost:", err)
		pprof.StopCPUProfile()
		os.Exit(1)
	}
}

func run(cli string, n, buffer int) error {
	opts := &claude.Options{
		MaxBufferedBytes: buffer,
		CLIPath:          cli,
		SkipVersionCheck: true,
		Env:              map[string]string{"TETHER_FAKE_CLI_SCRIPT": "firehose"},
	}
	st := stats{Impl: "tether"}
	start := time.Now()
	var first time.Time
	var firstCPU float64
	for m, err := range claude.Query(context.Background(), strconv.Itoa(n), opts) {
		if err != nil {
			return err
		}
		if _, ok := m.(*claude.ResultMessage); !ok {
			if st.Msgs == 0 {
				first = time.Now()
				firstCPU = cpuSeconds()
			}
			st.Msgs++
		}
	}
	end := time.Now()
	st.Seconds = end.Sub(start).Seconds()
	st.StreamSeconds = end.Sub(first).Seconds()
	st.MsgsPerS = float64(st.Msgs) / st.StreamSeconds
	st.WallMsgsPerS = float64(st.Msgs) / st.Seconds
	st.CPUS = cpuSeconds()
	st.StreamCPUS = st.CPUS - firstCPU
	st.PeakRSSMB = statusMB("VmHWM")
	return json.NewEncoder(os.Stdout).Encode(st)
}

// cpuSeconds is the process's CPU time so far, user and system.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return tv(ru.Utime) + tv(ru.Stime)
}

func tv(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }

// statusMB reads a kB field of this process's /proc status in MB.
func statusMB(field string) float64 {
	return float64(proctree.StatusKB(os.Getpid(), field)) / 1024
}
