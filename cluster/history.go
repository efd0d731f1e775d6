package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/host"
	"github.com/tetherhq/tether/internal/history"
)

// The bounds of a history, as a lone tether serve's defaults
// (serve.LocalOptions.MaxHistory, MaxHistoryBytes).
const (
	historyMessages = 500
	historyBytes    = 4 << 20
)

// History returns the earlier conversation of a session that continues
// another (SessionInfo.From: a resume of an ended session, a start with
// StartOptions.Resume of a cluster session's conversation): the user and
// assistant messages of the other session's mirrored transcript, the last
// 500 within 4 MiB. It is nil for a session that continues none, or whose
// source's mirror is gone (retention) or was never written. Resolved
// says who answered the earlier approvals, read from the source's
// events (and its own history's, up to maxHistoryChain sessions back),
// the last maxResolved of them, as a lone serve carries them. A session
// started by an agent of an earlier release has no From, so no history.
// Histories are read once and kept (bounded) by the client: a source
// that ended does not change.
func (c *Client) History(ctx context.Context, id string) (*host.History, error) {
	return c.history(ctx, id, maxHistoryChain)
}

// history is History, looking at most depth sessions back for the
// answered approvals.
func (c *Client) history(ctx context.Context, id string, depth int) (*host.History, error) {
	if h, ok := c.histories.get(id); ok {
		return h, nil // read before: no registry read either
	}
	rec, _, err := c.record(ctx, id)
	if err != nil {
		return nil, err
	}
	if rec.From == "" {
		return nil, nil
	}
	src, _, err := c.record(ctx, rec.From)
	if errors.Is(err, ErrNoSession) {
		return nil, nil // its source left the registry
	}
	if err != nil {
		return nil, err
	}
	if src.CLISession == "" {
		return nil, nil
	}
	data, err := c.b.readMirror(ctx, rec.From, src.CLISession)
	if errors.Is(err, ErrNoTranscript) {
		c.log.Debug("no history", "session", id, "from", rec.From, "err", err)
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	h := history.Read(claude.ReadSessionFrom(bytes.NewReader(data)), src.CLISession, historyMessages, historyBytes)
	// Who answered: the source's earlier conversation's, then its own.
	var ans answers
	if depth > 1 {
		if before, err := c.history(ctx, rec.From, depth-1); err == nil && before != nil {
			for _, r := range before.Resolved {
				ans.keep(r)
			}
		}
	}
	if last, _, err := c.b.lastSeq(ctx, rec.From); err == nil && last > 0 {
		c.eachKept(ctx, rec.From, last, ans.add)
	}
	h.Resolved = ans.out
	c.histories.put(id, h)
	return h, nil
}

// maxHistoryChain bounds how many sessions back History looks for who
// answered approvals (a conversation resumed again and again).
const maxHistoryChain = 8

// maxResolved bounds the answered approvals a snapshot or a history
// carries, as host's journal keeps them (host.Snapshot.Resolved).
const maxResolved = 64

// answers rebuilds host.Snapshot.Resolved from a session's events: each
// approval a person answered (not those the CLI withdrew), with the tool
// call it asked about, the last maxResolved, oldest first.
type answers struct {
	asked map[string]host.ApprovalInfo // announced, not yet answered
	out   []host.ResolvedApproval
}

func (a *answers) add(ev host.Event) {
	switch ev.Kind {
	case host.EventApproval:
		var ai host.ApprovalInfo
		if json.Unmarshal(ev.Data, &ai) != nil || ai.ID == "" {
			return
		}
		if a.asked == nil || len(a.asked) >= 4*maxResolved {
			a.asked = map[string]host.ApprovalInfo{} // never answered (a crash): forget
		}
		// What the record of its answer needs, not the whole request.
		a.asked[ai.ID] = host.ApprovalInfo{Kind: ai.Kind, ToolName: ai.ToolName, ToolUseID: ai.ToolUseID, Server: ai.Server, Message: ai.Message}
	case host.EventApprovalResolved:
		var r host.ApprovalResolved
		if json.Unmarshal(ev.Data, &r) != nil || r.ID == "" {
			return
		}
		ai, ok := a.asked[r.ID]
		delete(a.asked, r.ID)
		if !ok || r.Outcome == "withdrawn" {
			return
		}
		a.keep(ai.Resolved(r, ev.Time))
	}
}

func (a *answers) keep(r host.ResolvedApproval) {
	if len(a.out) >= maxResolved {
		a.out = slices.Delete(a.out, 0, len(a.out)-maxResolved+1)
	}
	a.out = append(a.out, r)
}

// History implements host.Historian (Client.History), so that tether
// serve shows a resumed session's earlier conversation.
func (b *Backend) History(ctx context.Context, id string) (*host.History, error) {
	h, err := b.c.History(ctx, id)
	return h, serveErr(err)
}

// historyCache keeps the histories read, at most maxHistoryCache bytes
// of messages, the oldest read leaving first.
type historyCache struct {
	mu    sync.Mutex
	m     map[string]*host.History
	order []string
	size  int
}

// maxHistoryCache bounds the bytes a client keeps of histories.
const maxHistoryCache = 32 << 20

func (hc *historyCache) get(id string) (*host.History, bool) {
	hc.mu.Lock()
	defer hc.mu.Unlock()
	h, ok := hc.m[id]
	return h, ok
}

func (hc *historyCache) put(id string, h *host.History) {
	n := historySize(h)
	if n > maxHistoryCache {
		return
	}
	hc.mu.Lock()
	defer hc.mu.Unlock()
	if _, ok := hc.m[id]; ok {
		return
	}
	if hc.m == nil {
		hc.m = map[string]*host.History{}
	}
	for hc.size+n > maxHistoryCache && len(hc.order) > 0 {
		old := hc.order[0]
		hc.order = hc.order[1:]
		hc.size -= historySize(hc.m[old])
		delete(hc.m, old)
	}
	hc.m[id] = h
	hc.order = append(hc.order, id)
	hc.size += n
}

// historySize is what a history costs the cache: its messages' bytes
// and a little for the entry.
func historySize(h *host.History) int {
	n := 64
	if h != nil {
		for _, m := range h.Messages {
			n += len(m)
		}
	}
	return n
}
