// Command measure runs one real Claude Code CLI session offline (against
// claudetest's fake Messages API) and prints its memory and CPU: after the
// start, idle, and over turns that each run one Bash tool call. The figures
// in docs/operations.md come from it; rerun it on your own hardware with
//
//	go run ./deploy/measure -cli "$(scripts/install-cli.sh 2.1.197)"
//
// With -sleep it measures sessions that sleep instead (sleep.go): many
// sessions on one host.Manager, a few of them on the real CLI, awake and
// asleep, and the time a wake takes:
//
//	TETHER_CLI_VERSION=2.1.337 go run ./deploy/measure -sleep -sessions 1000 -active 20
//
// It reads /proc, so it runs on Linux only.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
	"github.com/tetherhq/tether/internal/proctree"
)

func main() {
	cli := flag.String("cli", "", "the Claude Code CLI (default: $TETHER_CLI_VERSION from the cache, or the oldest supported)")
	turns := flag.Int("turns", 10, "turns to run, each with one Bash tool call")
	idle := flag.Duration("idle", 30*time.Second, "how long to watch the idle session")
	reply := flag.Int("reply-bytes", 4096, "the size of each turn's final text reply")
	sleep := flag.Bool("sleep", false, "measure sessions that sleep: -sessions on one host, -active of them on the real CLI")
	sessions := flag.Int("sessions", 100, "with -sleep: the sessions to open")
	active := flag.Int("active", 2, "with -sleep: how many of them run the real CLI")
	wakes := flag.Int("wakes", 10, "with -sleep: the wakes to time")
	memprofile := flag.String("memprofile", "", "with -sleep: write a heap profile here once every session is asleep")
	flag.Parse()
	var err error
	if *sleep {
		err = runSleep(&sleepRun{cli: *cli, sessions: *sessions, active: *active, turns: *turns, replyBytes: *reply, wakes: *wakes, memprofile: *memprofile})
	} else {
		err = run(*cli, *turns, *idle, *reply)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "measure:", err)
		os.Exit(1)
	}
}

func run(cli string, turns int, idle time.Duration, replyBytes int) error {
	if cli == "" {
		p, err := claudetest.FindCLI("") // $TETHER_CLI_VERSION, or the oldest supported
		if err != nil {
			return err
		}
		cli = p
	}
	fmt.Printf("CLI: %s\n", cli)
	n := 0
	api := claudetest.NewMessagesServer(&claudetest.MessagesOptions{
		Respond: func(r *claudetest.Request) *claudetest.Reply {
			n++
			if n%2 == 1 {
				return claudetest.ToolUseReply(fmt.Sprintf("toolu_%d", n), "Bash",
					map[string]string{"command": "ls -la / | wc -l", "description": "count"})
			}
			return claudetest.TextReply(strings.Repeat("All done here. ", replyBytes/15+1)[:replyBytes])
		},
	})
	defer api.Close()
	home, env, err := offline(api)
	if err != nil {
		return err
	}
	defer os.RemoveAll(home)
	ctx := context.Background()
	t0 := time.Now()
	s, err := claude.Connect(ctx, &claude.Options{
		CLIPath: cli, Cwd: home, Env: env, EnvOnly: true,
		PermissionMode: claude.PermissionModeBypassPermissions,
	})
	if err != nil {
		return err
	}
	defer s.Close()
	if len(tree()) < 2 {
		return fmt.Errorf("no CLI process found below this one")
	}
	fmt.Printf("start: %v, CPU %.2fs, RSS %d MiB\n", time.Since(t0).Round(time.Millisecond), cpu(), rss("VmRSS")/1024)
	c0 := cpu()
	time.Sleep(idle)
	fmt.Printf("idle %v: CPU %.3fs (%.2f%% of a core), RSS %d MiB\n", idle, cpu()-c0,
		100*(cpu()-c0)/idle.Seconds(), rss("VmRSS")/1024)
	c0 = cpu()
	t1 := time.Now()
	for i := 0; i < turns; i++ {
		if err := s.Send(ctx, "count the files in /"); err != nil {
			return err
		}
		for _, err := range s.ReceiveTurn(ctx) {
			if err != nil {
				return err
			}
		}
	}
	wall := time.Since(t1)
	fmt.Printf("%d turns (1 Bash call and a %d-byte reply each) in %v: CPU %.3fs per turn, RSS %d MiB, peak RSS %d MiB\n",
		turns, replyBytes, wall.Round(time.Millisecond), (cpu()-c0)/float64(turns), rss("VmRSS")/1024, rss("VmHWM")/1024)
	return nil
}

// offline makes a home folder for CLIs that talk to api only, and their
// environment; the caller removes the folder.
func offline(api *claudetest.MessagesServer) (home string, env map[string]string, err error) {
	home, err = os.MkdirTemp("", "tether-measure-home-")
	if err != nil {
		return "", nil, err
	}
	env = api.CLIEnv(home)
	env["PATH"] = os.Getenv("PATH")
	return home, env, nil
}

// tree lists the processes below this one: the supervisor, the CLI under
// it, and whatever the CLI runs at the time.
func tree() []int {
	parent := map[int]int{}
	dirs, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, d := range dirs {
		b, err := os.ReadFile(d)
		if err != nil {
			continue
		}
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
		pid, _ := strconv.Atoi(strings.Split(d, "/")[2])
		ppid, _ := strconv.Atoi(f[1])
		parent[pid] = ppid
	}
	var out []int
	for pid := range parent {
		for p := parent[pid]; p != 0; p = parent[p] {
			if p == os.Getpid() {
				out = append(out, pid)
				break
			}
		}
	}
	return out
}

// cpu sums cpuOf over the tree.
func cpu() float64 {
	var sum float64
	for _, pid := range tree() {
		sum += cpuOf(pid)
	}
	return sum
}

// rss sums rssOf over the tree (for VmHWM: the sum of each one's peak).
func rss(field string) int {
	sum := 0
	for _, pid := range tree() {
		sum += rssOf(pid, field)
	}
	return sum
}

// cpuOf is the process's user+system CPU time in seconds (children it waited
// for included: the tool calls' shells).
func cpuOf(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	var ticks float64
	for _, i := range []int{11, 12, 13, 14} { // utime stime cutime cstime
		v, _ := strconv.ParseFloat(f[i], 64)
		ticks += v
	}
	return ticks / 100 // USER_HZ
}

// rssOf reads a field (kB) of /proc/PID/status.
func rssOf(pid int, field string) int { return int(proctree.StatusKB(pid, field)) }
