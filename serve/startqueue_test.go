package serve_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/tetherhq/tether/serve"
)

// gatedStarts holds every Start until the test lets one through, and
// says when one has begun.
type gatedStarts struct {
	serve.Backend
	begun chan struct{}
	gate  chan struct{}
}

func (g *gatedStarts) Start(ctx context.Context, req *serve.StartRequest) (serve.SessionInfo, error) {
	g.begun <- struct{}{}
	select {
	case <-g.gate:
	case <-ctx.Done():
		return serve.SessionInfo{}, ctx.Err()
	}
	return g.Backend.Start(ctx, req)
}

// TestStartsQueuedPerSocket: a socket runs four starts at once; the
// fifth and later wait in order, told their place with queued frames,
// and run as earlier ones end; past the queue's bound (16 waiting) a
// start is refused with busy at once, changing nothing.
func TestStartsQueuedPerSocket(t *testing.T) {
	ctx := testCtx(t)
	g := &gatedStarts{begun: make(chan struct{}, 64), gate: make(chan struct{})}
	e := newEnv(t, &envOptions{wrap: func(b serve.Backend) serve.Backend { g.Backend = b; return g }})
	cl := e.dial(ctx)
	const running, waiting = 4, 16
	for i := 1; i <= running+waiting+1; i++ {
		cl.send(ctx, map[string]any{"type": "start", "id": i, "cwd": e.cwd})
	}
	for range running {
		<-g.begun
	}
	// The one past the bound is refused at once.
	from := 0
	over := cl.waitFrame(ctx, &from, "the refusal past the bound", func(f *frame) bool { return f.Type == "reply" && string(f.ID) == "21" })
	if over.Error == nil || over.Error.Code != serve.CodeBusy || !strings.Contains(over.Error.Message, "16 waiting") {
		t.Fatalf("the 21st start: %s; want busy naming the bound", over.raw)
	}
	// Each waiting start was told its place: 1 for the 5th … 16 for the 20th.
	queued := func(id int) int {
		t.Helper()
		from := 0
		var pos int
		for {
			f := cl.waitFrame(ctx, &from, "a queued frame", func(f *frame) bool { return f.Type == "queued" && string(f.ID) == itoa(id) })
			var q struct{ Position int }
			_ = json.Unmarshal(f.raw, &q)
			pos = q.Position
			more := false
			for _, g := range cl.framesFrom(from) {
				more = more || (g.Type == "queued" && string(g.ID) == itoa(id))
			}
			if !more {
				return pos
			}
		}
	}
	for i := running + 1; i <= running+waiting; i++ {
		if p := queued(i); p != i-running {
			t.Errorf("start %d: place %d; want %d", i, p, i-running)
		}
	}
	select {
	case <-g.begun:
		t.Fatal("a fifth start ran while four were in flight")
	default:
	}
	// One start ends: the 5th runs, and the others move up one place.
	g.gate <- struct{}{}
	<-g.begun
	from = 0
	cl.waitFrame(ctx, &from, "a running start's reply", func(f *frame) bool {
		return f.Type == "reply" && f.Error == nil && strings.Contains("1 2 3 4", string(f.ID))
	})
	from = 0
	cl.waitFrame(ctx, &from, "the 20th start moved up to 15", func(f *frame) bool {
		return f.Type == "queued" && string(f.ID) == "20" && strings.Contains(string(f.raw), `"position":15`)
	})
	// Let every one through: all twenty start, in order.
	for range running + waiting - 1 {
		g.gate <- struct{}{}
	}
	ids := map[string]bool{}
	for i := 1; i <= running+waiting; i++ {
		from := 0
		f := cl.waitFrame(ctx, &from, "start reply "+itoa(i), func(f *frame) bool { return f.Type == "reply" && string(f.ID) == itoa(i) })
		var r struct{ Session serve.SessionInfo }
		if f.Error != nil || json.Unmarshal(f.Result, &r) != nil || r.Session.ID == "" {
			t.Fatalf("start %d: %s", i, f.raw)
		}
		ids[r.Session.ID] = true
	}
	if len(ids) != running+waiting {
		t.Errorf("%d distinct sessions; want %d", len(ids), running+waiting)
	}
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }
