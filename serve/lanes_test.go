package serve_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/tetherhq/tether/host"
	"github.com/tetherhq/tether/serve"
)

// heldDo holds the ordered commands of one session, as a full cluster
// holds a prompt that wakes a session asleep: each reports its place in
// the queue (host.Command.OnQueued) and waits for the test's gate.
type heldDo struct {
	serve.Backend
	mu    sync.Mutex
	held  string
	begun chan string // the texts of held commands, as each begins
	gate  chan struct{}
}

func (h *heldDo) hold(id string) {
	h.mu.Lock()
	h.held = id
	h.mu.Unlock()
}

func (h *heldDo) Do(ctx context.Context, id string, cmd *host.Command) (*serve.Result, error) {
	h.mu.Lock()
	held := id == h.held && cmd.Lane() == host.LaneOrdered
	h.mu.Unlock()
	if held {
		h.begun <- cmd.Text
		if cmd.OnQueued != nil {
			cmd.OnQueued(1)
		}
		select {
		case <-h.gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return h.Backend.Do(ctx, id, cmd)
}

// TestOrderedLanePerSession: a session's ordered commands run one at a
// time in arrival order, and one that waits long (a prompt waking a
// session in a full cluster) holds up that session's commands alone: a
// prompt to another session on the same socket is answered meanwhile.
// The waiting command's client hears its place in the queue, and so do
// the commands behind it.
func TestOrderedLanePerSession(t *testing.T) {
	ctx := testCtx(t)
	h := &heldDo{begun: make(chan string, 8), gate: make(chan struct{})}
	e := newEnv(t, &envOptions{wrap: func(b serve.Backend) serve.Backend { h.Backend = b; return h }})
	cl := e.dial(ctx)
	a, b := cl.start(ctx, e.cwd), cl.start(ctx, e.cwd)
	h.hold(a)
	cl.send(ctx, map[string]any{"type": "do", "id": 101, "session": a, "command": map[string]any{"type": "send", "text": "first"}})
	if got := <-h.begun; got != "first" {
		t.Fatalf("began %q", got)
	}
	from := 0
	q := cl.waitFrame(ctx, &from, "the held prompt's place", func(f *frame) bool { return f.Type == "queued" && string(f.ID) == "101" })
	var place struct{ Position int }
	if err := json.Unmarshal(q.raw, &place); err != nil || place.Position != 1 {
		t.Errorf("queued frame %s", q.raw)
	}
	cl.send(ctx, map[string]any{"type": "do", "id": 102, "session": a, "command": map[string]any{"type": "send", "text": "second"}})
	// Behind a command waiting for room, it waits for room too.
	q = cl.waitFrame(ctx, &from, "the place of the prompt behind it", func(f *frame) bool { return f.Type == "queued" && string(f.ID) == "102" })
	if err := json.Unmarshal(q.raw, &place); err != nil || place.Position != 1 {
		t.Errorf("queued frame %s", q.raw)
	}
	if r := cl.do(ctx, b, map[string]any{"type": "send", "text": "elsewhere"}); r.Error != nil {
		t.Fatalf("a prompt to another session while one waits: %s", r.raw)
	}
	select {
	case got := <-h.begun:
		t.Fatalf("%q began while the session's earlier prompt waited", got)
	default:
	}
	close(h.gate)
	from = 0
	first := cl.waitFrame(ctx, &from, "the first prompt's reply", func(f *frame) bool { return f.Type == "reply" && string(f.ID) == "101" })
	if got := <-h.begun; got != "second" {
		t.Fatalf("began %q after the first", got)
	}
	second := cl.waitFrame(ctx, &from, "the second prompt's reply, after the first's", func(f *frame) bool { return f.Type == "reply" && string(f.ID) == "102" })
	if first.Error != nil || second.Error != nil {
		t.Fatalf("replies %s, %s", first.raw, second.raw)
	}
}

// TestOrderedBound: a socket has at most 16 ordered requests queued or
// running, whichever sessions they are for; the 17th is refused with
// busy at once, and the others still run.
func TestOrderedBound(t *testing.T) {
	ctx := testCtx(t)
	h := &heldDo{begun: make(chan string, 32), gate: make(chan struct{})}
	e := newEnv(t, &envOptions{wrap: func(b serve.Backend) serve.Backend { h.Backend = b; return h }})
	cl := e.dial(ctx)
	a := cl.start(ctx, e.cwd)
	h.hold(a)
	for i := 1; i <= 16; i++ {
		cl.send(ctx, map[string]any{"type": "do", "id": 200 + i, "session": a, "command": map[string]any{"type": "send", "text": "p" + itoa(i)}})
	}
	<-h.begun
	r := cl.call(ctx, map[string]any{"type": "do", "session": a, "command": map[string]any{"type": "send", "text": "over"}})
	if r.Error == nil || r.Error.Code != serve.CodeBusy {
		t.Fatalf("the 17th: %s; want busy", r.raw)
	}
	close(h.gate)
	from := 0
	for i := 1; i <= 16; i++ {
		if f := cl.waitFrame(ctx, &from, "the replies in order", func(f *frame) bool { return f.Type == "reply" && string(f.ID) == itoa(200+i) }); f.Error != nil {
			t.Fatalf("prompt %d: %s", i, f.raw)
		}
	}
}
