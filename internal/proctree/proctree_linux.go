// Package proctree reads a process tree through /proc, for the tests that
// prove nothing a CLI started outlives it: they list the tree, end the
// CLI (or its host) one way or another, and check every process listed is
// gone.
package proctree

import (
	"os"
	"strconv"
	"strings"
)

// Proc is one process, told apart from a later one with the same PID by
// its start time.
type Proc struct {
	PID   int
	Start string // starttime in /proc/PID/stat, in clock ticks since boot
	Cmd   string // its command line, arguments joined by spaces
}

// Tree lists root and every live process below it (zombies left out).
func Tree(root int) ([]Proc, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	kids := make(map[int][]int)
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if f := stat(pid); len(f) > 1 {
			ppid, _ := strconv.Atoi(f[1])
			kids[ppid] = append(kids[ppid], pid)
		}
	}
	var out []Proc
	for queue := []int{root}; len(queue) > 0; queue = queue[1:] {
		pid := queue[0]
		if f := stat(pid); live(f) {
			cmd, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
			out = append(out, Proc{pid, f[19], strings.TrimSpace(strings.ReplaceAll(string(cmd), "\x00", " "))})
		}
		queue = append(queue, kids[pid]...)
	}
	return out, nil
}

// Alive reports whether this very process still runs.
func (p Proc) Alive() bool {
	f := stat(p.PID)
	return live(f) && f[19] == p.Start
}

func live(f []string) bool { return len(f) > 19 && f[0] != "Z" && f[0] != "X" }

// stat returns the fields of /proc/pid/stat after the command name: state
// is [0], ppid [1], starttime [19]; nil when the process is gone.
func stat(pid int) []string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return nil
	}
	return strings.Fields(s[i+1:])
}
