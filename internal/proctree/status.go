package proctree

import (
	"os"
	"strconv"
	"strings"
)

// StatusKB reads one of the kB fields of /proc/PID/status ("VmRSS",
// "VmHWM", …), for the benchmarks and tools that report memory. It is 0
// where the field cannot be read: on a system without /proc, for a
// process that has gone, or for a field that is not there. A number
// read is all these callers report, so a missing one is not an error
// worth a second return.
func StatusKB(pid int, field string) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for l := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb
		}
	}
	return 0
}
