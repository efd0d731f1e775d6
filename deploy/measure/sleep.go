package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
	"github.com/tetherhq/tether/host"
)

// The -sleep mode: what sessions that sleep cost one host. It opens
// -sessions sessions on a host.Manager: -active of them on the real CLI
// (against the fake Messages API), the rest on the in-process fake CLI
// (no process: they stand for sessions that would be asleep), each with
// -turns turns of a -reply-bytes reply streamed as deltas, as serve runs
// them. It reports the memory of this process (the host: journals,
// transcripts) and of its CLIs, read from /proc: with every session
// awake, with the fake ones asleep and the real ones active, and with
// all asleep. Last, it puts a real session to sleep and wakes it with a
// prompt, -wakes times, and reports the time from the prompt to the
// resumed turn's first event and to its answer; then -wakes times more
// as the UI does when a person starts typing: the wake command, then the
// prompt.

type sleepRun struct {
	cli        string
	sessions   int
	active     int
	turns      int
	replyBytes int
	wakes      int
	memprofile string
}

func runSleep(r *sleepRun) error {
	if r.cli == "" {
		p, err := claudetest.FindCLI("")
		if err != nil {
			return err
		}
		r.cli = p
	}
	r.active = min(r.active, r.sessions)
	reply := strings.Repeat("All done here. ", r.replyBytes/15+1)[:r.replyBytes]
	api := claudetest.NewMessagesServer(&claudetest.MessagesOptions{
		Respond: func(*claudetest.Request) *claudetest.Reply { return claudetest.TextReply(reply) },
	})
	defer api.Close()
	home, env, err := offline(api)
	if err != nil {
		return err
	}
	defer os.RemoveAll(home)
	real := &host.Options{CLI: &claude.Options{
		CLIPath: r.cli, Cwd: home, Env: env, EnvOnly: true, IncludePartialMessages: true,
		PermissionMode: claude.PermissionModeBypassPermissions,
	}}
	fake := &host.Options{CLI: &claude.Options{Transport: &claudetest.FakeCLI{Script: streamingEcho(reply)}}}
	m := host.NewManager(nil)
	defer m.Close()
	ctx := context.Background()

	base := hostRSS()
	fmt.Printf("host before any session: RSS %d MiB\n", base/1024)

	// Open the sessions and run their turns, a few at a time (a 2-core
	// machine starts real CLIs one or two at once).
	var mu sync.Mutex
	var all, reals []*host.Session
	open := func(o *host.Options) error {
		s, err := m.Start(ctx, o)
		if err != nil {
			return err
		}
		for range r.turns {
			res, err := s.Do(ctx, &host.Command{Type: host.CommandSend, Text: "write it down"})
			if err != nil {
				return err
			}
			if err := waitAnswered(ctx, s, res.UUID); err != nil {
				return err
			}
		}
		mu.Lock()
		all = append(all, s)
		if o == real {
			reals = append(reals, s)
		}
		mu.Unlock()
		return nil
	}
	t0 := time.Now()
	if err := parallel(2, r.active, func(int) error { return open(real) }); err != nil {
		return fmt.Errorf("a real CLI session: %w", err)
	}
	if err := parallel(runtime.GOMAXPROCS(0)*4, r.sessions-r.active, func(int) error { return open(fake) }); err != nil {
		return fmt.Errorf("a fake CLI session: %w", err)
	}
	fmt.Printf("opened %d sessions (%d on the real CLI), %d turns each, in %v\n", len(all), len(reals), r.turns, time.Since(t0).Round(time.Millisecond))
	report("all awake", base, len(all))

	fakes := slices.DeleteFunc(slices.Clone(all), func(s *host.Session) bool { return slices.Contains(reals, s) })
	if err := sleepAll(ctx, fakes); err != nil {
		return err
	}
	report(fmt.Sprintf("%d asleep, %d real awake", len(fakes), len(reals)), base, len(all))
	if err := sleepAll(ctx, reals); err != nil {
		return err
	}
	report("all asleep", base, len(all))
	if r.memprofile != "" {
		f, err := os.Create(r.memprofile)
		if err != nil {
			return err
		}
		err = pprof.WriteHeapProfile(f)
		f.Close()
		if err != nil {
			return err
		}
	}

	// Wakes: prompt → the resumed turn's first event, and its answer. Then
	// the wake as the UI starts it, when a person begins to type: the
	// wake command alone, and a prompt sent once it is done (the person
	// typed for longer than the wake took) → its first event and answer.
	var first, answer, wake, typedFirst, typedAnswer []time.Duration
	n := min(r.wakes, r.wakes*len(reals))
	for i := range 2 * n {
		s := reals[i%len(reals)]
		if err := s.Sleep(ctx); err != nil {
			return err
		}
		typed := i >= n
		if typed {
			t := time.Now()
			if _, err := s.Do(ctx, &host.Command{Type: host.CommandWake}); err != nil {
				return fmt.Errorf("wake command %d: %w", i-n, err)
			}
			wake = append(wake, time.Since(t))
		}
		f, a, err := timePrompt(ctx, s, "and again")
		if err != nil {
			return fmt.Errorf("wake %d: %w", i, err)
		}
		if typed {
			typedFirst, typedAnswer = append(typedFirst, f), append(typedAnswer, a)
		} else {
			first, answer = append(first, f), append(answer, a)
		}
	}
	if len(first) > 0 {
		fmt.Printf("wakes (%d, %s): prompt → first event of the resumed turn p50 %v p99 %v; → answer p50 %v p99 %v\n",
			len(first), r.cli, pct(first, 50), pct(first, 99), pct(answer, 50), pct(answer, 99))
		fmt.Printf("woken as typing starts (%d): the wake command p50 %v p99 %v; a prompt after it → first event p50 %v p99 %v; → answer p50 %v p99 %v\n",
			len(wake), pct(wake, 50), pct(wake, 99), pct(typedFirst, 50), pct(typedFirst, 99), pct(typedAnswer, 50), pct(typedAnswer, 99))
	}
	return nil
}

// timePrompt sends text to s and returns the time to the first event
// after it and to its answer.
func timePrompt(ctx context.Context, s *host.Session, text string) (first, answer time.Duration, err error) {
	after := s.Snapshot().Seq
	t := time.Now()
	res, err := s.Do(ctx, &host.Command{Type: host.CommandSend, Text: text})
	if err != nil {
		return 0, 0, err
	}
	for e, err := range s.Events(ctx, after) {
		if err != nil {
			return 0, 0, err
		}
		if e.Kind == host.EventMessage && first == 0 {
			first = time.Since(t)
		}
		if e.Kind == host.EventDelivery && strings.Contains(string(e.Data), res.UUID) && strings.Contains(string(e.Data), `"answered"`) {
			return first, time.Since(t), nil
		}
	}
	return first, 0, cmp.Or(ctx.Err(), errors.New("the events ended before the answer"))
}

// streamingEcho is a fake CLI that answers each prompt with reply,
// streamed as text deltas of about 40 bytes, then the whole message and
// the result, as a CLI with partial messages on does.
func streamingEcho(reply string) claudetest.Script {
	return func(ctx context.Context, c *claudetest.CLI) error {
		if _, err := c.HandleInitialize(ctx); err != nil {
			return err
		}
		for {
			if _, err := c.ReadUser(ctx); err != nil {
				return nil // stdin closed: asleep, or closed
			}
			msgs := []any{c.SystemInit(), claudetest.Msg{"type": "stream_event", "session_id": c.SessionID(), "parent_tool_use_id": nil, "uuid": "s",
				"event": map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "text", "text": ""}}}}
			for i := 0; i < len(reply); i += 40 {
				msgs = append(msgs, c.TextDelta(0, reply[i:min(i+40, len(reply))]))
			}
			msgs = append(msgs, c.AssistantText(reply), c.ResultSuccess(reply))
			if err := c.Write(msgs...); err != nil {
				return err
			}
		}
	}
}

// waitAnswered waits until the prompt uuid is answered.
func waitAnswered(ctx context.Context, s *host.Session, uuid string) error {
	for _, d := range s.Deliveries() {
		if d.UUID == uuid {
			_, err := d.Wait(ctx)
			return err
		}
	}
	return nil // answered already
}

func sleepAll(ctx context.Context, ss []*host.Session) error {
	return parallel(runtime.GOMAXPROCS(0)*4, len(ss), func(i int) error { return ss[i].Sleep(ctx) })
}

// parallel runs f(0..n-1), at most width at once, and returns the first
// error.
func parallel(width, n int, f func(int) error) error {
	var wg sync.WaitGroup
	sem := make(chan struct{}, max(width, 1))
	errc := make(chan error, n)
	for i := range n {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := f(i); err != nil {
				errc <- err
			}
		}()
	}
	wg.Wait()
	close(errc)
	return <-errc
}

// report prints the host's and its CLIs' memory; base is the host's
// RSS before any session, n the sessions open.
func report(what string, base, n int) {
	h := hostRSS()
	clis := rss("VmRSS")
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	fmt.Printf("%-28s host RSS %5d MiB (%3d KiB a session; Go heap in use %4d MiB, %d goroutines), CLIs: %3d processes, RSS %5d MiB; in all %5d MiB\n",
		what+":", h/1024, (h-base)/max(n, 1), ms.HeapInuse>>20, runtime.NumGoroutine(), len(tree()), clis/1024, (h+clis)/1024)
}

// hostRSS is this process's RSS in KiB, after a collection has given
// back what it could.
func hostRSS() int {
	runtime.GC()
	debug.FreeOSMemory()
	return rssOf(os.Getpid(), "VmRSS")
}

func pct(ds []time.Duration, p int) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	i := min(len(s)-1, (len(s)*p+99)/100-1)
	return s[max(i, 0)].Round(time.Millisecond)
}
