package cluster

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tetherhq/tether/host"
)

// The batch message's shape on the wire (revision 3): the headers every
// revision reads from headers alone keep their meaning (Tether-Seq is the
// last event's number), Tether-Batch counts the events, and the body is
// the events' JSON, one a line, each an event as revision 1 writes it. A
// change to any of it shows here, to be written in docs/cluster.md's
// Compatibility section.
func TestBatchShape(t *testing.T) {
	t0 := time.Unix(1, 0).UTC()
	var lines [][]byte
	for i := range 3 {
		data, _ := json.Marshal(host.Event{Seq: uint64(7 + i), Time: t0, Kind: host.EventMessage, Data: json.RawMessage(`{"type":"x"}`)})
		lines = append(lines, data)
	}
	m := batchMsg("s1", "a1", "n0", 7, lines)
	if m.Subject != "tether.v1.ev.s1" {
		t.Errorf("subject %q", m.Subject)
	}
	want := map[string]string{"Tether-Wire": wireValue, "Tether-Seq": "9", "Tether-Batch": "3", "Tether-Agent": "a1", "Nats-Msg-Id": "s1.7-9.n0"}
	got := map[string]string{}
	for k := range m.Header {
		got[k] = m.Header.Get(k)
	}
	if !maps.Equal(got, want) {
		t.Errorf("headers %v, want %v", got, want)
	}
	body := `{"seq":7,"time":"1970-01-01T00:00:01Z","kind":"message","data":{"type":"x"}}` + "\n" +
		`{"seq":8,"time":"1970-01-01T00:00:01Z","kind":"message","data":{"type":"x"}}` + "\n" +
		`{"seq":9,"time":"1970-01-01T00:00:01Z","kind":"message","data":{"type":"x"}}`
	if string(m.Data) != body {
		t.Errorf("body:\n%s\nwant:\n%s", m.Data, body)
	}
	evs, err := decodeBatch(m.Data, 7, 3)
	if err != nil || len(evs) != 3 || evs[2].Seq != 9 {
		t.Fatalf("decoded %v, %v", evs, err)
	}
	// Revision 1's event shape: a field added to host.Event would reach
	// readers of every revision inside a batch as in a single event.
	var fields map[string]json.RawMessage
	json.Unmarshal(lines[0], &fields)
	if k := slices.Sorted(maps.Keys(fields)); !slices.Equal(k, []string{"data", "kind", "seq", "time"}) {
		t.Errorf("event fields %v", k)
	}
}

func TestDecodeBatchRefuses(t *testing.T) {
	ev := func(n uint64) string {
		b, _ := json.Marshal(host.Event{Seq: n, Kind: host.EventState, Data: json.RawMessage(`{}`)})
		return string(b)
	}
	for _, c := range []struct {
		name  string
		body  string
		first uint64
		n     int
	}{
		{"fewer lines", ev(1) + "\n" + ev(2), 1, 3},
		{"more lines", ev(1) + "\n" + ev(2) + "\n" + ev(3), 1, 2},
		{"a number out of place", ev(1) + "\n" + ev(3), 1, 2},
		{"numbers not the header's", ev(2) + "\n" + ev(3), 1, 2},
		{"not JSON", ev(1) + "\nnope", 1, 2},
		{"an empty line", ev(1) + "\n", 1, 2},
		{"no count", "", 1, 0},
	} {
		if _, err := decodeBatch([]byte(c.body), c.first, c.n); err == nil {
			t.Errorf("%s: decoded", c.name)
		}
	}
}

// FuzzDecodeBatch: whatever a batch's body and headers, decodeBatch
// neither panics nor returns other than n events numbered first….
func FuzzDecodeBatch(f *testing.F) {
	var lines [][]byte
	for i := range 3 {
		data, _ := json.Marshal(host.Event{Seq: uint64(5 + i), Kind: host.EventMessage, Data: json.RawMessage(`{"a":"b\nc"}`)})
		lines = append(lines, data)
	}
	f.Add(encodeBatch(lines), uint64(5), 3)
	f.Add([]byte(`{"seq":1}`), uint64(1), 1)
	f.Add([]byte(`{"seq":1,"time":"1970-01-01T00:00:01Z","kind":"message","data":{"a":[1,"\u00e9"]}}`), uint64(1), 1)
	f.Add([]byte(`{"seq":01,"time":"x","kind":"a\"b","data":nul}`), uint64(1), 1)
	f.Add([]byte("{}\n{}"), uint64(0), 2)
	f.Add([]byte(strings.Repeat("\n", 10)), uint64(1<<63), 11)
	f.Fuzz(func(t *testing.T, data []byte, first uint64, n int) {
		// The fast path agrees with json.Unmarshal wherever it answers.
		var fast, slow host.Event
		if decodeEventFast(data, &fast) {
			if err := json.Unmarshal(data, &slow); err != nil {
				t.Fatalf("fast decoded what json.Unmarshal refuses (%v): %q", err, data)
			}
			if fast.Seq != slow.Seq || !fast.Time.Equal(slow.Time) || fast.Kind != slow.Kind || string(fast.Data) != string(slow.Data) {
				t.Fatalf("fast %+v, json.Unmarshal %+v: %q", fast, slow, data)
			}
		}
		evs, err := decodeBatch(data, first, n)
		if err != nil {
			return
		}
		if len(evs) != n {
			t.Fatalf("%d events, header says %d", len(evs), n)
		}
		for i, ev := range evs {
			if ev.Seq != first+uint64(i) {
				t.Fatalf("event %d numbered %d, want %d", i, ev.Seq, first+uint64(i))
			}
		}
	})
}

func TestConsumerWire(t *testing.T) {
	for name, want := range map[string]int{
		readerPrefix() + "_1":      WireRevision,
		"tw3-ab_2":                 3,
		"tw12-x_1":                 12,
		"QkHnGhHT5pOMM8qXPPcYbc_1": 1, // a NUID: a reader before revision 3
		"tw-x_1":                   1,
		"twx-y_1":                  1,
		"tw0-y_1":                  1,
		"":                         1,
	} {
		if got := consumerWire(name); got != want {
			t.Errorf("consumerWire(%q) = %d, want %d", name, got, want)
		}
	}
}

// FuzzAppendEvent holds appendEvent to json.Marshal: the same bytes, or
// an error where it errs; and what it writes the readers' fast path
// takes back whole.
func FuzzAppendEvent(f *testing.F) {
	f.Add(uint64(7), int64(1764806400), int64(123456789), 0, "message", []byte(`{"type":"stream_event","event":{"type":"content_block_delta"}}`), false)
	f.Add(uint64(1), int64(-62135596800), int64(0), 3600, "state", []byte(`{"state":"idle","since":"0001-01-01T00:00:00Z"}`), false)
	f.Add(uint64(1<<63), int64(253402300800), int64(1), -1800, "files_changed", []byte(`{"a": 1}`), false)
	f.Add(uint64(0), int64(0), int64(0), 59, "a<b", []byte(`"<b>"`), false)
	f.Add(uint64(3), int64(253402300800), int64(0), 0, "message", []byte(`{}`), false) // year 10000: refused
	f.Add(uint64(2), int64(5), int64(0), 0, "closed", []byte(nil), true)
	f.Add(uint64(2), int64(5), int64(0), 0, "k\"", []byte{}, false)
	f.Fuzz(func(t *testing.T, seq uint64, sec, nsec int64, off int, kind string, data []byte, nilData bool) {
		if nilData {
			data = nil
		} else if data == nil {
			data = []byte{}
		}
		ev := host.Event{Seq: seq, Time: time.Unix(sec, nsec).In(time.FixedZone("", off%(100*3600))), Kind: host.EventKind(kind), Data: data}
		want, werr := json.Marshal(ev)
		got, gerr := appendEvent([]byte("x"), ev)
		if (werr != nil) != (gerr != nil) {
			t.Fatalf("json.Marshal err %v, appendEvent err %v", werr, gerr)
		}
		if werr != nil {
			return
		}
		if string(got) != "x"+string(want) {
			t.Fatalf("appendEvent %q\njson.Marshal %q", got[1:], want)
		}
		var back host.Event
		if !decodeEventFast(got[1:], &back) {
			if !plainKind(ev.Kind) {
				return // escaped: json.Unmarshal reads it
			}
			t.Fatalf("the readers' fast path refuses an agent's line %q", got[1:])
		}
		wantData := []byte("null")
		if data != nil {
			wantData, _ = json.Marshal(json.RawMessage(data))
		}
		var slow host.Event // RFC 3339 keeps no seconds of a zone's offset
		if err := json.Unmarshal(want, &slow); err != nil {
			t.Fatal(err)
		}
		if back.Seq != ev.Seq || !back.Time.Equal(slow.Time) || back.Kind != ev.Kind || string(back.Data) != string(wantData) {
			t.Fatalf("read back %+v from %q", back, got[1:])
		}
	})
}

// The publisher's queue: a batch is everything queued since the last
// take; the reader waits at maxBatch until the publisher takes; the queue
// starts empty (no maxBatch slots for an idle session) and keeps only a
// small slice between batches; the end comes after what was queued.
func TestEventQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		q := newEventQueue()
		if cap(q.evs) != 0 {
			t.Fatalf("a new queue holds %d slots", cap(q.evs))
		}
		put := func(from, to int) {
			for i := from; i < to; i++ {
				if !q.put(ctx, host.Event{Seq: uint64(i)}) {
					t.Errorf("put %d refused", i)
				}
			}
		}
		done := make(chan struct{})
		go func() { put(1, maxBatch+11); close(done) }()
		synctest.Wait()
		select {
		case <-done:
			t.Fatal("the reader queued more than maxBatch events")
		default:
		}
		batch, ok := q.take(ctx, nil)
		if !ok || len(batch) != maxBatch || batch[0].Seq != 1 || batch[maxBatch-1].Seq != maxBatch {
			t.Fatalf("first batch: ok %v, %d events", ok, len(batch))
		}
		<-done // room made: the other ten went in
		big := batch
		batch, ok = q.take(ctx, batch)
		if !ok || len(batch) != 10 || batch[0].Seq != maxBatch+1 {
			t.Fatalf("second batch: ok %v, %d events", ok, len(batch))
		}
		if big[0].Seq != 0 || big[maxBatch-1].Seq != 0 {
			t.Error("a published batch still pins its events")
		}
		if cap(q.evs) != 0 {
			t.Errorf("the queue kept a burst's slice (%d slots)", cap(q.evs))
		}
		small := batch
		put(1, 3)
		q.close()
		batch, ok = q.take(ctx, batch)
		if !ok || len(batch) != 2 || &batch[0] == &small[0] {
			t.Fatalf("after close: ok %v, %d events", ok, len(batch))
		}
		if cap(q.evs) == 0 {
			t.Error("the queue did not keep the small spare slice")
		}
		if _, ok := q.take(ctx, batch); ok {
			t.Error("a closed, empty queue gave a batch")
		}
	})
}
