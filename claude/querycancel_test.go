package claude_test

import (
	"context"
	"errors"
	"os"
	"strconv"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
	"github.com/tetherhq/tether/internal/proctree"
)

func init() {
	// A CLI that starts a turn, says its PID, then ignores everything:
	// its stdin (the interrupt, the end of input) and SIGTERM, which
	// RunScriptIfChild catches. Only SIGKILL ends it.
	scripts["ignore-term"] = func(ctx context.Context, c *claudetest.CLI) error {
		if _, err := c.HandleInitialize(ctx); err != nil {
			return err
		}
		if _, err := c.ReadUser(ctx); err != nil {
			return err
		}
		if err := c.Write(c.SystemInit(), c.AssistantText(strconv.Itoa(os.Getpid()))); err != nil {
			return err
		}
		for {
			time.Sleep(time.Hour)
		}
	}
}

// TestQueryCancelReturnsBeforeTeardown: cancelling Query's ctx mid-turn
// ends the iterator at once even though the CLI ignores its closed stdin
// and SIGTERM; the shutdown (grace, SIGTERM, SIGKILL, reaping) finishes in
// the background, and afterwards no process and no goroutine is left.
// Before, the iterator returned only after the whole shutdown (5.8 s with
// the default CloseTimeout). The test checks the mechanism rather than a
// duration: the iterator has returned while the CLI still runs, which the
// shutdown cannot allow before CloseTimeout (5 s) has passed.
func TestQueryCancelReturnsBeforeTeardown(t *testing.T) {
	leaks := goleak.IgnoreCurrent()
	ctx, cancel := context.WithCancel(testCtx(t))
	defer cancel()
	var (
		cli      *proctree.Proc
		tree     []proctree.Proc
		errs     []error
		cancelAt time.Time
	)
	for m, err := range claude.Query(ctx, "go", claudetest.ExecOptions("ignore-term")) {
		if err != nil {
			errs = append(errs, err)
			continue
		}
		a, ok := m.(*claude.AssistantMessage)
		if !ok || cli != nil {
			continue
		}
		pid, err := strconv.Atoi(a.Text())
		if err != nil {
			t.Fatalf("assistant text %q is not the fake's PID", a.Text())
		}
		all, err := proctree.Tree(os.Getpid())
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range all[1:] { // [0] is this test process
			tree = append(tree, p)
			if p.PID == pid {
				cli = &p
			}
		}
		if cli == nil {
			t.Fatalf("the fake CLI (PID %d) is not among this process's descendants %v", pid, all)
		}
		cancelAt = time.Now()
		cancel()
	}
	returnedIn := time.Since(cancelAt)
	if cli == nil {
		t.Fatalf("Query ended before the fake said its PID: errors %v", errs)
	}
	if !cli.Alive() {
		t.Errorf("Query returned %v after the cancel, with the CLI already gone: it waited for the whole shutdown", returnedIn)
	}
	t.Logf("Query returned %v after the cancel", returnedIn)
	if len(errs) != 1 || !errors.Is(errs[0], context.Canceled) {
		t.Errorf("errors = %v, want context.Canceled", errs)
	}

	// The shutdown goes on: every process the session started goes.
	deadline := time.Now().Add(30 * time.Second)
	for _, p := range tree {
		for p.Alive() {
			if time.Now().After(deadline) {
				t.Fatalf("%d (%s) still runs 30 s after the cancel", p.PID, p.Cmd)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	goleak.VerifyNone(t, leaks)
}
