package control

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestPeekType(t *testing.T) {
	for _, tc := range []struct {
		line string
		typ  string
		ok   bool
	}{
		{`{"type":"stream_event","event":{}}`, "stream_event", true},
		{`{"type":"control_request","request_id":"x"}`, "control_request", true},
		{`{ "type":"user"}`, "", false},           // not the CLI's spelling: full decode
		{`{"uuid":"u","type":"user"}`, "", false}, // type not first
		{`{"type":"a\"b"}`, "", false},            // escapes need the real decoder
		{`{"type":"unterminated`, "", false},
		{``, "", false},
	} {
		typ, ok := PeekType([]byte(tc.line))
		if typ != tc.typ || ok != tc.ok {
			t.Errorf("PeekType(%q) = %q, %v; want %q, %v", tc.line, typ, ok, tc.typ, tc.ok)
		}
	}
}

func TestEncodeRoundTrip(t *testing.T) {
	req := EncodeRequest("req_1", json.RawMessage(`{"subtype":"interrupt"}`))
	var env Envelope
	if err := json.Unmarshal(req, &env); err != nil {
		t.Fatal(err)
	}
	if env.Type != "control_request" || env.RequestID != "req_1" || Subtype(env.Request) != "interrupt" {
		t.Errorf("request envelope = %+v", env)
	}

	for _, tc := range []struct {
		line []byte
		want ResponseBody
	}{
		{EncodeSuccess("a", nil), ResponseBody{Subtype: "success", RequestID: "a"}},
		{EncodeSuccess("b", json.RawMessage(`{"behavior":"allow"}`)), ResponseBody{Subtype: "success", RequestID: "b", Response: json.RawMessage(`{"behavior":"allow"}`)}},
		{EncodeError("c\"quote", "boom\nline"), ResponseBody{Subtype: "error", RequestID: "c\"quote", Error: "boom\nline"}},
	} {
		var env Envelope
		if err := json.Unmarshal(tc.line, &env); err != nil {
			t.Fatalf("%s: %v", tc.line, err)
		}
		if env.Type != "control_response" || env.Response == nil {
			t.Fatalf("%s: envelope %+v", tc.line, env)
		}
		if diff := cmp.Diff(tc.want, *env.Response); diff != "" {
			t.Errorf("%s: (-want +got)\n%s", tc.line, diff)
		}
	}
	var cancel Envelope
	if err := json.Unmarshal(EncodeCancel("z"), &cancel); err != nil || cancel.Type != "control_cancel_request" || cancel.RequestID != "z" {
		t.Errorf("cancel envelope = %+v, %v", cancel, err)
	}
}

func TestTable(t *testing.T) {
	tb := NewTable("req_")
	id1, ch1, err := tb.Add()
	if err != nil {
		t.Fatal(err)
	}
	id2, ch2, _ := tb.Add()
	if id1 == id2 {
		t.Fatalf("ids repeat: %q", id1)
	}
	if !tb.Resolve(id1, Result{Payload: json.RawMessage(`{}`)}) {
		t.Fatal("Resolve of a pending id reported false")
	}
	if tb.Resolve(id1, Result{}) {
		t.Error("a second answer to the same id was accepted")
	}
	if got := <-ch1; string(got.Payload) != `{}` {
		t.Errorf("payload = %s", got.Payload)
	}
	tb.Remove(id2)
	if tb.Resolve(id2, Result{}) {
		t.Error("an answer to a removed id was accepted")
	}
	select {
	case r := <-ch2:
		t.Errorf("removed request got %+v", r)
	default:
	}
	_, ch3, _ := tb.Add()
	boom := errors.New("cli gone")
	tb.Close(boom)
	tb.Close(errors.New("second close is ignored"))
	<-tb.Done()
	select {
	case r := <-ch3:
		t.Errorf("a closed table delivered %+v", r)
	default:
	}
	if _, _, err := tb.Add(); !errors.Is(err, boom) {
		t.Errorf("Add after Close = %v, want %v", err, boom)
	}
	if tb.Len() != 0 {
		t.Errorf("Len after Close = %d", tb.Len())
	}
}

func TestTableConcurrent(t *testing.T) {
	tb := NewTable("r")
	var wg sync.WaitGroup
	for range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id, ch, err := tb.Add()
			if err != nil {
				t.Error(err)
				return
			}
			go tb.Resolve(id, Result{Err: id, IsError: true})
			if r := <-ch; r.Err != id {
				t.Errorf("request %s got the answer for %s", id, r.Err)
			}
		}()
	}
	wg.Wait()
}

func TestInboundCancel(t *testing.T) {
	var in Inbound
	ctx, done := in.Start(context.Background(), "cli-1")
	if in.Cancel("unknown") {
		t.Error("Cancel of an unknown id reported true")
	}
	if !in.Cancel("cli-1") {
		t.Fatal("Cancel of a running handler reported false")
	}
	<-ctx.Done()
	if !errors.Is(context.Cause(ctx), ErrCancelled) {
		t.Errorf("cause = %v, want ErrCancelled", context.Cause(ctx))
	}
	done()
	in.Wait()
	if in.Len() != 0 || in.Cancel("cli-1") {
		t.Error("a finished handler is still registered")
	}
}

func TestPeekRequest(t *testing.T) {
	for _, tc := range []struct {
		line, id, req string
		ok            bool
	}{
		{`{"type":"control_request","request_id":"r1","request":{"subtype":"can_use_tool","input":{}}}`, "r1", `{"subtype":"can_use_tool","input":{}}`, true},
		{`{"type":"control_request","request_id":"r\"1","request":{"subtype":"x"}}`, "", "", false},       // escaped id
		{`{"type":"control_request","request":{"subtype":"x"},"request_id":"r1"}`, "", "", false},         // other key order
		{`{"type":"control_request","request_id":"r1","request":{"subtype":"x"}} junk}`, "", "", false},   // trailing garbage
		{`{"type":"control_request","request_id":"r1","request":{"subtype":"x"}`, "", "", false},          // cut
		{`{"type":"control_request","request_id":"r1","request":[1]}`, "", "", false},                     // not an object
		{`{"type":"control_response","response":{"subtype":"success","request_id":"r1"}}`, "", "", false}, // not a request
	} {
		id, req, ok := PeekRequest([]byte(tc.line))
		if ok != tc.ok || id != tc.id || string(req) != tc.req {
			t.Errorf("PeekRequest(%s) = %q, %s, %v; want %q, %s, %v", tc.line, id, req, ok, tc.id, tc.req, tc.ok)
		}
	}
}

// FuzzPeekRequest: whatever PeekRequest accepts, the general decode reads
// the same way.
func FuzzPeekRequest(f *testing.F) {
	f.Add([]byte(`{"type":"control_request","request_id":"r1","request":{"subtype":"can_use_tool","input":{"a":1}}}`))
	f.Add([]byte(`{"type":"control_request","request_id":"r1","request":{"subtype":"x"}}}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		id, req, ok := PeekRequest(line)
		if !ok {
			return
		}
		var env Envelope
		if err := json.Unmarshal(line, &env); err != nil {
			t.Fatalf("PeekRequest took %q, which does not decode: %v", line, err)
		}
		if env.Type != "control_request" || env.RequestID != id || !bytes.Equal(compact(t, env.Request), compact(t, req)) {
			t.Fatalf("PeekRequest(%q) = %q, %s; the decode says %q, %s", line, id, req, env.RequestID, env.Request)
		}
	})
}

func compact(t *testing.T, b []byte) []byte {
	var out bytes.Buffer
	if err := json.Compact(&out, b); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}
