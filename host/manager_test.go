package host_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
	"github.com/tetherhq/tether/host"
	"github.com/tetherhq/tether/internal/proctree"
)

// TestManagerManySessions runs 200 sessions at once, each a real
// subprocess (the test binary playing the echo CLI), sends each a prompt,
// and checks that closing the manager leaves no process and no goroutine
// behind (goleak checks the goroutines when the package's tests end).
func TestManagerManySessions(t *testing.T) {
	n := 200
	if testing.Short() {
		n = 20
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	m := host.NewManager(&host.ManagerOptions{Session: &host.Options{CLI: claudetest.ExecOptions("echo")}})
	defer m.Close()
	before := runtime.NumGoroutine()
	var wg sync.WaitGroup
	pids := make([]int, n)
	procs := make([]proctree.Proc, n)
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := m.Start(ctx, nil)
			if err != nil {
				errs <- err
				return
			}
			pids[i] = s.Claude().PID()
			if tree, err := proctree.Tree(pids[i]); err == nil && len(tree) > 0 && tree[0].PID == pids[i] {
				procs[i] = tree[0]
			} else {
				errs <- fmt.Errorf("session %d: CLI process %d not found in /proc: %v", i, pids[i], err)
				return
			}
			d, err := s.Send(ctx, fmt.Sprint("hello ", i))
			if err != nil {
				errs <- err
				return
			}
			r, err := d.Wait(ctx)
			if err != nil || r.Result != fmt.Sprint("echo: hello ", i) {
				errs <- fmt.Errorf("session %d: %v, %v", i, r, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if got := len(m.Sessions()); got != n {
		t.Errorf("%d sessions listed, want %d", got, n)
	}
	for _, s := range m.Sessions() {
		if m.Get(s.ID()) != s || s.State().State != host.StateIdle {
			t.Fatalf("session %s: %v", s.ID(), s.State())
		}
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if len(m.Sessions()) != 0 {
		t.Errorf("sessions after Close: %d", len(m.Sessions()))
	}
	// Close returns within its bound whatever the CLIs do; on a loaded
	// machine a CLI SIGKILLed at the end of that bound can still be
	// tearing down (200 race-instrumented test binaries at once), and
	// one whose supervisor was killed is a zombie until whoever inherits
	// it reaps it. What must hold is that none of them runs on: wait for
	// that state (through /proc: a zombie has ended, a later process
	// with a reused PID is another), then require it.
	for i, pid := range pids {
		p := procs[i]
		for p.PID != 0 && p.Alive() && ctx.Err() == nil {
			time.Sleep(10 * time.Millisecond)
		}
		if p.PID != 0 && p.Alive() {
			t.Errorf("CLI process %d outlived the manager", pid)
		}
	}
	if _, err := m.Start(ctx, nil); !errors.Is(err, host.ErrManagerClosed) {
		t.Errorf("Start after Close: %v", err)
	}
	// Every session goroutine is gone (runtime goroutines may linger a
	// moment; goleak has the last word at the end of the package).
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > before+5 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if g := runtime.NumGoroutine(); g > before+5 {
		t.Errorf("%d goroutines after Close, %d before the sessions", g, before)
	}
}

func TestManagerSparesAndForgetting(t *testing.T) {
	ctx := testCtx(t)
	fake := &claudetest.FakeCLI{Script: claudetest.Echo}
	m := host.NewManager(&host.ManagerOptions{Session: &host.Options{CLI: &claude.Options{Transport: fake}}, Spares: 2})
	defer m.Close()
	waitSpares := func(n int) {
		t.Helper()
		for m.Spares() != n {
			select {
			case <-ctx.Done():
				t.Fatalf("spares = %d, want %d", m.Spares(), n)
			case <-time.After(time.Millisecond):
			}
		}
	}
	waitSpares(2)
	before := fake.Launches()
	s, err := m.Start(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The session is one of the CLIs launched before Start (a spare), not
	// a new one; the refill launches another at once, so counting
	// launches or spares here would race with it.
	spare := false
	for _, l := range before {
		spare = spare || slices.Contains(l.Args, "--session-id="+s.SessionID()) || slices.Contains(l.Args, s.SessionID())
	}
	if !spare {
		t.Errorf("Start did not take a spare: session %s was not among the %d CLIs launched before", s.SessionID(), len(before))
	}
	if s.State().State != host.StateReady {
		t.Errorf("a spare is %v", s.State())
	}
	waitSpares(2) // refilled
	other, err := m.Start(ctx, &host.Options{CLI: &claude.Options{Transport: &claudetest.FakeCLI{Script: claudetest.Echo}, Model: "haiku"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Sessions(); len(got) != 2 || got[0] != s || got[1] != other {
		t.Errorf("Sessions() = %v", got)
	}
	s.Close()
	for m.Get(s.ID()) != nil {
		select {
		case <-ctx.Done():
			t.Fatal("a closed session is still listed")
		case <-time.After(time.Millisecond):
		}
	}
}

// TestManagerReapsIdleSessions runs in a synctest bubble: the clock only
// moves when every goroutine waits, so the reaping is exact without
// sleeping for real.
func TestManagerReapsIdleSessions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		m := host.NewManager(&host.ManagerOptions{
			Session:     &host.Options{CLI: &claude.Options{Transport: &claudetest.FakeCLI{Script: claudetest.Echo}}},
			IdleTimeout: time.Minute,
		})
		defer m.Close()
		busy, err := m.Start(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		idle, err := m.Start(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(40 * time.Second)
		d, err := busy.Send(ctx, "keep me")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := d.Wait(ctx); err != nil {
			t.Fatal(err)
		}
		time.Sleep(30 * time.Second) // idle: 70 s without a word; busy: 30 s
		synctest.Wait()
		if m.Get(idle.ID()) != nil || idle.State().State != host.StateDisconnected {
			t.Errorf("idle session not reaped: %v", idle.State())
		}
		if m.Get(busy.ID()) == nil {
			t.Errorf("busy session reaped: %v", busy.State())
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		if len(m.Sessions()) != 0 {
			t.Errorf("sessions left: %v", m.Sessions())
		}
	})
}
