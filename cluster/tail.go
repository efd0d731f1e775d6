package cluster

import (
	"context"
	"iter"
	"sync"

	"github.com/tetherhq/tether/host"
)

// A client's subscribers of one session share one reader of the stream
// (a tail): tether serve's viewers of a session, through one client,
// cost the NATS server one consumer and the client one decoding of each
// event, not one per viewer. The tail keeps the events its subscribers
// have yet to take, and the last tailKeep before them for a subscriber
// that joins a little behind (a viewer subscribing after its snapshot),
// within maxTailEvents and maxTailBytes; a subscriber takes what is
// there at its own pace, and one that falls behind the oldest kept, or
// asks for events older than them, reads the stream with a reader of its
// own from where it is: nothing is skipped, nobody waits for the
// slowest. The tail stops when its last subscriber leaves.
var maxTailEvents = 4096 // a variable for tests (SetTailBound)

const (
	maxTailBytes = 4 << 20
	tailKeep     = 64
)

// tail is one session's shared reader and the events it read lately.
type tail struct {
	id string

	mu    sync.Mutex           // after Client.mu when both are held
	subs  map[*uint64]struct{} // each subscriber's next seq
	ring  []host.Event         // seq-contiguous, oldest first
	first uint64               // seq of ring[0] (or of the next event, ring empty)
	bytes int
	wake  chan struct{} // closed when the ring grows or the tail ends
	done  bool
	err   error // why it ended (nil: the session ended, or it stopped)
	stop  context.CancelFunc
}

// next is the seq the tail reads next.
func (t *tail) next() uint64 { return t.first + uint64(len(t.ring)) }

// sharedEvents is Events through the session's tail: joined when the
// subscriber's next event is in or after its ring, else (or once it
// falls behind) a reader of its own.
func (c *Client) sharedEvents(ctx context.Context, id string, after uint64) iter.Seq2[host.Event, error] {
	return func(yield func(host.Event, error) bool) {
		if !validID(id) {
			yield(host.Event{}, &CommandError{Code: codeNoSession, Message: "bad session id"})
			return
		}
		// alone reads on with a reader of its own, after from.
		alone := func(from uint64) {
			for ev, err := range c.events(ctx, id, from, true) {
				if !yield(ev, err) {
					return
				}
			}
		}
		pos := after + 1 // the next event this subscriber takes (under t.mu while joined)
		t := c.joinTail(id, &pos)
		if t == nil {
			alone(after)
			return
		}
		left := false
		leave := func() {
			if !left {
				left = true
				c.leaveTail(t, &pos)
			}
		}
		defer leave()
		var batch []host.Event
		for {
			t.mu.Lock()
			switch {
			case pos < t.first:
				// Behind what is kept: on its own from here.
				from := pos - 1
				t.mu.Unlock()
				leave()
				alone(from)
				return
			case pos < t.next():
				batch = append(batch[:0], t.ring[pos-t.first:]...)
				pos = t.next() // taken: the tail need not keep them for it
				t.mu.Unlock()
				for _, ev := range batch {
					if !yield(ev, nil) || ev.Kind == host.EventClosed {
						return
					}
				}
				clear(batch) // do not pin payloads
				continue
			case t.done:
				err, next, from := t.err, t.next(), pos-1
				t.mu.Unlock()
				if err != nil && from < next {
					yield(host.Event{}, err) // where it failed: this reader's failure too
				} else if ctx.Err() == nil && c.ctx.Err() == nil {
					// It failed before this reader's events (a resync
					// for older ones), or ended without EventClosed:
					// read on alone.
					leave()
					alone(from)
				}
				return
			}
			w := t.wake
			t.mu.Unlock()
			select {
			case <-w:
			case <-ctx.Done():
				return
			}
		}
	}
}

// joinTail returns the session's tail with the subscriber (its next
// seq, *pos) counted in, a new one reading from *pos when there is none;
// nil when the subscriber's next event is older than the tail keeps.
func (c *Client) joinTail(id string, pos *uint64) *tail {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	if t := c.tails[id]; t != nil {
		t.mu.Lock()
		defer t.mu.Unlock()
		if !t.done {
			if *pos < t.first {
				return nil
			}
			t.subs[pos] = struct{}{}
			return t
		}
	}
	ctx, stop := context.WithCancel(c.ctx)
	t := &tail{id: id, subs: map[*uint64]struct{}{pos: {}}, first: *pos, wake: make(chan struct{}), stop: stop}
	if c.tails == nil {
		c.tails = map[string]*tail{}
	}
	c.tails[id] = t
	c.wg.Add(1)
	go c.readTail(ctx, t, *pos-1)
	return t
}

// leaveTail counts a subscriber out, stopping the tail after the last.
func (c *Client) leaveTail(t *tail, pos *uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t.mu.Lock()
	delete(t.subs, pos)
	last := len(t.subs) == 0
	t.mu.Unlock()
	if !last {
		return
	}
	t.stop()
	if c.tails[t.id] == t {
		delete(c.tails, t.id) // a new subscriber starts a new tail
	}
}

// readTail reads the session's events into t's ring until the session
// ends, the reader fails, or the tail is stopped.
func (c *Client) readTail(ctx context.Context, t *tail, after uint64) {
	defer c.wg.Done()
	var end error
	for ev, err := range c.events(ctx, t.id, after, true) {
		if err != nil {
			end = err
			break
		}
		t.mu.Lock()
		t.ring = append(t.ring, ev)
		t.bytes += len(ev.Data)
		// Keep what a subscriber has yet to take, and tailKeep before.
		need := t.next()
		for p := range t.subs {
			need = min(need, *p)
		}
		n := 0
		if need > t.first+tailKeep {
			n = int(need - tailKeep - t.first)
		}
		for i := range n {
			t.bytes -= len(t.ring[i].Data)
		}
		for len(t.ring)-n > maxTailEvents || (t.bytes > maxTailBytes && len(t.ring)-n > 1) {
			t.bytes -= len(t.ring[n].Data)
			n++
		}
		if n > 0 {
			clear(t.ring[:n])
			t.ring = t.ring[n:]
			t.first += uint64(n)
		}
		close(t.wake)
		t.wake = make(chan struct{})
		t.mu.Unlock()
	}
	t.mu.Lock()
	t.done, t.err = true, end
	close(t.wake)
	t.mu.Unlock()
	c.mu.Lock()
	if c.tails[t.id] == t {
		delete(c.tails, t.id)
	}
	c.mu.Unlock()
}
