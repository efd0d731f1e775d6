package serve_test

import (
	"bytes"
	"context"
	"runtime/debug"
	"sync"
	"testing"

	"github.com/tetherhq/tether/serve"
)

// heldLists holds the hub's list reads as the test says: a read made
// before it is held ("stale"), or held before it is made ("late").
type heldLists struct {
	serve.Backend
	mu      sync.Mutex
	plan    []string // what the next hub reads do, in turn
	listing chan struct{}
	release chan struct{}
	done    chan struct{} // closed when the test ends: nothing is held
}

func (h *heldLists) hold() {
	select {
	case h.listing <- struct{}{}:
	case <-h.done:
		return
	}
	select {
	case <-h.release:
	case <-h.done:
	}
}

func (h *heldLists) List(ctx context.Context) ([]serve.SessionInfo, error) {
	if !bytes.Contains(debug.Stack(), []byte("(*Server).hub(")) {
		return h.Backend.List(ctx)
	}
	h.mu.Lock()
	step := ""
	if len(h.plan) > 0 {
		step, h.plan = h.plan[0], h.plan[1:]
	}
	h.mu.Unlock()
	switch step {
	case "stale":
		list, err := h.Backend.List(ctx)
		h.hold()
		return list, err
	case "late":
		h.hold()
	}
	return h.Backend.List(ctx)
}

// TestListNotBehindAStart: a session started while the hub reads the
// list (which then lacks it) is neither announced "removed" nor
// forgotten by the hub, so that its close is announced: seen as a close
// whose "removed" never came, on a machine with both cores busy.
func TestListNotBehindAStart(t *testing.T) {
	ctx := testCtx(t)
	h := &heldLists{listing: make(chan struct{}), release: make(chan struct{}), done: make(chan struct{})}
	e := newEnv(t, &envOptions{wrap: func(b serve.Backend) serve.Backend { h.Backend = b; return h }})
	t.Cleanup(func() { close(h.done) })
	cl := e.dial(ctx)
	n := 0
	cl.waitFrame(ctx, &n, "the sessions list", func(f *frame) bool { return f.Type == "sessions" })
	h.mu.Lock()
	h.plan = []string{"stale", "late"}
	h.mu.Unlock()
	<-h.listing // the hub has read a list without the session
	id := cl.start(ctx, e.cwd)
	h.release <- struct{}{}
	<-h.listing // that round is over; the next waits to read
	if f := cl.do(ctx, id, map[string]any{"type": "close"}); f.Error != nil {
		t.Fatalf("close: %v", f.Error)
	}
	closed := len(cl.framesFrom(0))
	isRemoved := func(f *frame) bool { return f.Type == "removed" && f.sessionID() == id }
	for _, f := range cl.framesFrom(0) {
		if isRemoved(f) {
			t.Fatal("the session was announced removed before its close")
		}
	}
	h.release <- struct{}{}
	cl.waitFrame(ctx, &closed, "removed after the close", isRemoved)
}
