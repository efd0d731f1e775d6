package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/tetherhq/tether/team"
)

// Commands are requests on core NATS, which delivers at most once: a
// request or its reply can be lost when a connection drops (a reconnect,
// a server that closed a connection it could not write to in time). So
// that a lost reply does not leave the caller waiting for its whole ctx,
// a client of revision 5 or later names each command (Tether-Request, an
// id of 128 random bits) and sends it again, under the same name, when no
// reply came within resendAfter; an agent of revision 5 or later runs a
// command once per name and answers every copy with the one reply. A
// client sends again only to an agent that advertises revision 5: an
// older one ignores the header and would run the command twice.
const (
	hdrRequest = "Tether-Request"
	// requestRevision is the first revision whose agents answer a named
	// command's copies with its one reply.
	requestRevision = 5
	// resendAfter is how long a client waits for a command's reply before
	// it sends the command again (to an agent of requestRevision).
	resendAfter = 5 * time.Second
	// maxRequests and maxRequestBytes bound what an agent remembers: the
	// names, and the replies kept (a changes reply can carry diffs); past
	// either the oldest is forgotten (a copy of it sent later would run
	// it again). At one command a second that is over a quarter of an
	// hour of them, and a client sends its copies within its own ctx.
	maxRequests     = 1024
	maxRequestBytes = 16 << 20
)

// requestName is what an agent remembers a command by: its client's
// name for it, within the identity that sent it, so that a copy under
// another identity never gets its reply. "" (not remembered) for a
// command without a name, or with one longer than a client makes.
func requestName(id string, who *team.Identity) string {
	if id == "" || len(id) > 64 {
		return ""
	}
	if who == nil {
		return id
	}
	return who.Subject + "\x00" + id
}

// newRequestID names one command for its copies.
func newRequestID() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// requestLog is what an agent remembers of the named commands it took:
// their replies once given, and while one runs, the last copy of it that
// arrived, answered with the same reply. Bounded by maxRequests, the
// oldest forgotten first.
type requestLog struct {
	mu    sync.Mutex
	m     map[string]*request
	order []string // names, oldest first
	bytes int      // of the replies kept
}

type request struct {
	reply *nats.Msg // the answer, once given
	again *nats.Msg // the latest copy that came while the command ran
}

// begin reports whether the command named id is new; for a copy of one
// already answered it answers msg with the reply given, and for a copy of
// one still running it keeps msg to answer it when the command ends (only
// the latest copy: its sender stopped waiting on the earlier ones).
// Commands without a name are always new.
func (l *requestLog) begin(id string, msg *nats.Msg) bool {
	if id == "" {
		return true
	}
	l.mu.Lock()
	r, ok := l.m[id]
	if !ok {
		if l.m == nil {
			l.m = map[string]*request{}
		}
		l.m[id] = &request{}
		l.order = append(l.order, id)
		l.trim()
		l.mu.Unlock()
		return true
	}
	reply := r.reply
	if reply == nil {
		r.again = msg
	}
	l.mu.Unlock()
	if reply != nil {
		answerWith(msg, reply)
	}
	return false
}

// finish keeps the reply to the command named id, and answers the copy
// that waits for it, if any.
func (l *requestLog) finish(id string, reply *nats.Msg) {
	if id == "" {
		return
	}
	l.mu.Lock()
	r, ok := l.m[id]
	var again *nats.Msg
	if ok && r.reply == nil {
		r.reply, again, r.again = reply, r.again, nil
		l.bytes += len(reply.Data)
		l.trim()
	}
	l.mu.Unlock()
	if again != nil {
		answerWith(again, reply)
	}
}

// trim forgets the oldest names past the bounds (l.mu held).
func (l *requestLog) trim() {
	for len(l.order) > 1 && (len(l.order) > maxRequests || l.bytes > maxRequestBytes) {
		if r := l.m[l.order[0]]; r != nil && r.reply != nil {
			l.bytes -= len(r.reply.Data)
		}
		delete(l.m, l.order[0])
		l.order = l.order[1:]
	}
}

// answerWith answers msg with a copy of reply.
func answerWith(msg *nats.Msg, reply *nats.Msg) {
	if msg.Reply == "" {
		return
	}
	m := nats.NewMsg(msg.Reply)
	maps.Copy(m.Header, reply.Header)
	m.Data = reply.Data
	msg.RespondMsg(m)
}

// ask sends a command and waits for its reply until ctx ends. Every
// resendAfter without one, it sends the command again, under the same
// name and to the same inbox, if the session's agent answers copies
// (requestRevision); to an older agent it sends nothing more and waits.
// A session that nobody serves gives nats.ErrNoResponders, as a request
// does (the subscription reports the server's status message so).
func (c *Client) ask(ctx context.Context, id string, msg *nats.Msg) (*nats.Msg, error) {
	inbox := c.b.nc.NewInbox()
	// A channel of its own size: SubscribeSync's is the connection's
	// SubChanLen (64k slots, 512 KiB allocated and cleared for every
	// command: a sixth of the CPU of BenchmarkCluster). Replies to
	// copies of one command are few; more are dropped.
	replies := make(chan *nats.Msg, 16)
	sub, err := c.b.nc.ChanSubscribe(inbox, replies)
	if err != nil {
		return nil, err
	}
	defer sub.Unsubscribe()
	msg.Reply = inbox
	if err := c.b.nc.PublishMsg(msg); err != nil {
		return nil, err
	}
	for {
		t := time.NewTimer(resendAfter)
		select {
		case r := <-replies:
			t.Stop()
			if len(r.Data) == 0 && r.Header.Get("Status") == "503" {
				return nil, nats.ErrNoResponders
			}
			return r, nil
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-c.ctx.Done(): // Close
			t.Stop()
			return nil, nats.ErrConnectionClosed
		case <-t.C:
		}
		if !sub.IsValid() || c.b.nc.IsClosed() {
			return nil, nats.ErrConnectionClosed
		}
		if c.answersCopies(ctx, id) {
			c.log.Debug("command: no reply yet; sending it again", "session", id)
			if err := c.b.nc.PublishMsg(msg); err != nil && ctx.Err() == nil {
				c.log.Debug("command: sending it again", "session", id, "err", err)
			}
		}
	}
}

// answersCopies reports whether the session's agent runs a command sent
// again under its name once (requestRevision): false when that cannot be
// read now.
func (c *Client) answersCopies(ctx context.Context, id string) bool {
	rctx, cancel := context.WithTimeout(ctx, resendAfter)
	defer cancel()
	r, _, err := c.record(rctx, id)
	if err != nil || r.Agent == "" {
		return false
	}
	agents, err := c.liveAgents(rctx)
	if err != nil {
		return false
	}
	a, ok := agents[r.Agent]
	return ok && c.agentWire(rctx, a) >= requestRevision
}

// loseOne takes one from n while it is above zero, and reports whether
// it did: a reply to lose or an append to fail, as a reconnect or a bus
// that cannot store would (tests only: export_test.go's LoseReplies,
// LoseStartReplies, FailMarkerAppends).
func loseOne(n *atomic.Int32) bool {
	for {
		v := n.Load()
		if v <= 0 {
			return false
		}
		if n.CompareAndSwap(v, v-1) {
			return true
		}
	}
}
