package cluster

import (
	"bytes"
	"context"
	"errors"
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
// source's mirror is gone (retention) or was never written; who answered
// the earlier approvals is not known over the cluster (Resolved is
// empty). A session started by an agent of an earlier release has no
// From, so no history. Histories are read once and kept (bounded) by
// the client: a source that ended does not change.
func (c *Client) History(ctx context.Context, id string) (*host.History, error) {
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
	c.histories.put(id, h)
	return h, nil
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
