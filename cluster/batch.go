package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/tetherhq/tether/host"
	"github.com/tetherhq/tether/internal/rawjson"
)

// Batches: several events of a session in one message (wire revision 3).
//
// A batch is a message on the session's event subject whose body is its
// events' JSON, one a line (NDJSON, numbers contiguous), with the headers
// of any event message, Tether-Seq naming its LAST event's number, and
// Tether-Batch the count of its events (2 or more). Naming the last
// number keeps what every revision reads from headers alone true of a
// batch: where a subscriber starts (the binary search for the first
// message past `after`) and what an agent numbers after (a takeover, a
// fenced publish, a marker). A message without Tether-Batch is one event
// (in parts when big), as revision 1 writes it.
//
// Readers of revisions 1 and 2 cannot read a batch (they would skip it and
// see a gap), so an agent writes batches only while no reader of an older
// revision is known (readerWire); else it writes one event a message.

// hdrBatch is the count of events in a batch message.
const hdrBatch = "Tether-Batch"

// batchRevision is the first wire revision that reads batches.
const batchRevision = 3

// errBatch: a batch's body is not its header's events.
var errBatch = errors.New("cluster: not a batch of its numbers")

// encodeBatch is a batch's body: each event's JSON on a line of its own.
func encodeBatch(evs [][]byte) []byte {
	n := len(evs)
	for _, e := range evs {
		n += len(e)
	}
	b := make([]byte, 0, n)
	for i, e := range evs {
		if i > 0 {
			b = append(b, '\n')
		}
		b = append(b, e...)
	}
	return b
}

// batchMsg is the message of a batch of session id's events numbered
// first, first+1, … (lines: their JSON), published by agent, nonce its
// attachment's (see eventMsgs).
func batchMsg(id, agent, nonce string, first uint64, lines [][]byte) *nats.Msg {
	last := first + uint64(len(lines)) - 1
	lasts := strconv.FormatUint(last, 10)
	m := stamp(nats.NewMsg(subjectEvents + id))
	m.Data = encodeBatch(lines)
	m.Header.Set(hdrSeq, lasts)
	m.Header.Set(hdrBatch, strconv.Itoa(len(lines)))
	m.Header.Set(hdrAgent, agent)
	// As an event's: the numbers, which are never stored twice, and the
	// attachment's nonce.
	m.Header.Set(hdrMsgID, id+"."+strconv.FormatUint(first, 10)+"-"+lasts+"."+nonce)
	return m
}

// decodeBatch reads a batch of n events numbered first, first+1, …: every
// line must be one event of its number, and there must be n of them.
func decodeBatch(data []byte, first uint64, n int) ([]host.Event, error) {
	if n < 1 || n > maxBatchEvents || bytes.Count(data, []byte{'\n'}) != n-1 {
		return nil, errBatch
	}
	evs := make([]host.Event, 0, n)
	for i := range n {
		line := data
		if j := bytes.IndexByte(data, '\n'); j >= 0 {
			line, data = data[:j], data[j+1:]
		}
		var ev host.Event
		if decodeEvent(line, &ev) != nil {
			return nil, errBatch
		}
		if ev.Seq != first+uint64(i) {
			return nil, errBatch
		}
		evs = append(evs, ev)
	}
	return evs, nil
}

// decodeEvent decodes one event as an agent writes it: by decodeEventFast,
// else json.Unmarshal.
func decodeEvent(line []byte, ev *host.Event) error {
	if decodeEventFast(line, ev) {
		return nil
	}
	*ev = host.Event{}
	return json.Unmarshal(line, ev)
}

// decodeEventFast decodes an event in the form json.Marshal writes
// host.Event, {"seq":N,"time":"T","kind":"K","data":D}, which is every
// line an agent writes, at a fraction of json.Unmarshal's cost (three
// subscribers each decode every event); it reports false for anything
// else, which json.Unmarshal then reads (FuzzDecodeBatch holds the two to
// the same answers). D is checked to be valid JSON and copied.
func decodeEventFast(line []byte, ev *host.Event) bool {
	rest, ok := bytes.CutPrefix(line, []byte(`{"seq":`))
	if !ok {
		return false
	}
	seq, rest, ok := cutUint(rest)
	if !ok {
		return false
	}
	if rest, ok = bytes.CutPrefix(rest, []byte(`,"time":"`)); !ok {
		return false
	}
	i := bytes.IndexByte(rest, '"')
	if i < 0 {
		return false
	}
	var t time.Time
	if t.UnmarshalText(rest[:i]) != nil {
		return false
	}
	if rest, ok = bytes.CutPrefix(rest[i+1:], []byte(`,"kind":"`)); !ok {
		return false
	}
	i = bytes.IndexByte(rest, '"')
	if i < 0 || !plainKind(rest[:i]) {
		return false
	}
	kind := eventKind(rest[:i])
	if rest, ok = bytes.CutPrefix(rest[i+1:], []byte(`,"data":`)); !ok {
		return false
	}
	if len(rest) < 2 || rest[len(rest)-1] != '}' {
		return false
	}
	data := rest[:len(rest)-1]
	if !rawjson.Verbatim(data) {
		return false // not as an agent writes it (json.Unmarshal decides)
	}
	*ev = host.Event{Seq: seq, Time: t, Kind: kind, Data: bytes.Clone(data)}
	return true
}

// appendEvent appends ev's JSON to dst, byte for byte what json.Marshal
// writes (FuzzAppendEvent holds it to that), at a fraction of its cost:
// json.Marshal validates and compacts the event's data, mostly a CLI line
// carried as it is, a byte at a time; appendEvent copies it once
// rawjson.Verbatim has found it needs no change, and leaves anything else
// to json.Marshal.
func appendEvent(dst []byte, ev host.Event) ([]byte, error) {
	if !plainKind(ev.Kind) || (ev.Data != nil && !rawjson.Verbatim(ev.Data)) {
		return appendMarshal(dst, ev)
	}
	start := len(dst)
	dst = append(dst, `{"seq":`...)
	dst = strconv.AppendUint(dst, ev.Seq, 10)
	dst = append(dst, `,"time":"`...)
	out, err := ev.Time.AppendText(dst)
	if err != nil { // a year json.Marshal refuses too: its error
		return appendMarshal(dst[:start], ev)
	}
	dst = out
	dst = append(dst, `","kind":"`...)
	dst = append(dst, ev.Kind...)
	dst = append(dst, `","data":`...)
	if ev.Data == nil {
		dst = append(dst, "null"...)
	} else {
		dst = append(dst, ev.Data...)
	}
	return append(dst, '}'), nil
}

func appendMarshal(dst []byte, ev host.Event) ([]byte, error) {
	b, err := json.Marshal(ev)
	if err != nil {
		return dst, err
	}
	return append(dst, b...), nil
}

// plainKind reports a kind that encoding/json writes as it is between
// quotes: printable ASCII without a quote, a backslash or what it escapes
// for HTML. An agent writes every other kind escaped; a reader leaves
// one that is not plain to json.Unmarshal.
func plainKind[K ~string | ~[]byte](k K) bool {
	for i := range len(k) {
		switch c := k[i]; {
		case c < 0x20 || c >= 0x7f, c == '"', c == '\\', c == '<', c == '>', c == '&':
			return false
		}
	}
	return true
}

// cutUint reads a JSON unsigned integer that fits in 64 bits off the
// front of b (no sign, no leading zero, no fraction) and returns the rest.
func cutUint(b []byte) (v uint64, rest []byte, ok bool) {
	n := 0
	for n < len(b) && b[n] >= '0' && b[n] <= '9' {
		n++
	}
	if n == 0 || (b[0] == '0' && n > 1) {
		return 0, b, false
	}
	v, err := strconv.ParseUint(string(b[:n]), 10, 64)
	return v, b[n:], err == nil
}

// eventKind is the kind named b, without allocating for the ones most
// events have.
func eventKind(b []byte) host.EventKind {
	switch string(b) {
	case string(host.EventMessage):
		return host.EventMessage
	case string(host.EventState):
		return host.EventState
	case string(host.EventCost):
		return host.EventCost
	}
	return host.EventKind(b)
}

// maxBatchEvents bounds the events of one batch (its bytes are bounded by
// the server's max_payload).
const maxBatchEvents = 4096

// readerPrefix names the consumers of this release's event readers:
// "tw<revision>-", which the consumers' names of earlier releases (NUIDs,
// letters and digits) never start with. Agents list the events stream's
// consumers to learn whether a reader of an earlier revision is about.
func readerPrefix() string { return "tw" + wireValue + "-" + randomID(6) }

// consumerWire is the wire revision of the reader that created the
// consumer name: 1 for a name without the prefix (a release before
// revision 3, whichever it is).
func consumerWire(name string) int {
	rest, ok := strings.CutPrefix(name, "tw")
	if !ok {
		return 1
	}
	i := strings.IndexByte(rest, '-')
	if i <= 0 {
		return 1
	}
	n, err := strconv.Atoi(rest[:i])
	if err != nil || n < 1 {
		return 1
	}
	return n
}

// readerWire is what an agent knows of the fleet's readers: whether one
// of a revision before batches was seen lately. A reader shows itself by
// its consumers on the events stream (listed every lapse) and by its
// requests (commands, snapshots, pings and start requests carry their
// writer's revision). Until the first listing, and for two lapses after
// the last sign of an older reader, the agent writes one event a message.
type readerWire struct {
	mu      sync.Mutex
	checked bool      // a listing succeeded
	old     time.Time // the last sign of an older reader
	lapse   time.Duration
}

// saw notes a sign of a reader of revision rev.
func (w *readerWire) saw(rev int) {
	if rev >= batchRevision {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.old = time.Now()
}

// batches reports whether batches may be written now.
func (w *readerWire) batches() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.checked && time.Since(w.old) > 2*w.lapse
}

// watchReaders lists the events stream's consumers every lapse (see
// readerWire).
func (a *Agent) watchReaders() {
	defer a.wg.Done()
	t := time.NewTicker(a.b.ttl)
	defer t.Stop()
	for {
		if err := a.listReaders(); err != nil {
			a.log.Debug("listing the event readers", "err", err)
		}
		select {
		case <-a.ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (a *Agent) listReaders() error {
	ctx, cancel := context.WithTimeout(a.ctx, a.b.ttl)
	defer cancel()
	names := a.b.events.ConsumerNames(ctx)
	oldest := WireRevision
	for name := range names.Name() {
		oldest = min(oldest, consumerWire(name))
	}
	if err := names.Err(); err != nil {
		return fmt.Errorf("consumer names: %w", err)
	}
	a.readers.saw(oldest)
	a.readers.mu.Lock()
	a.readers.checked = true
	a.readers.mu.Unlock()
	return nil
}
