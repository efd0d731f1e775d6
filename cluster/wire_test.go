package cluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/tetherhq/tether/host"
)

// FuzzDecodeCommand: whatever arrives on a command subject, decode either
// refuses it with a *MessageError that never quotes it, or returns a
// command that validates and survives a round trip.
func FuzzDecodeCommand(f *testing.F) {
	for _, s := range []string{
		`{"type":"send","text":"hi"}`, `{"type":"answer","approval":"r1","behavior":"allow"}`,
		`{"type":"answer","approval":"r1","answers":{"q":"a"}}`, `{"type":"force_interrupt"}`,
		`{"type":"send","images":[{"media_type":"image/png","data":"aGk="}]}`, `{"type":"cancel","uuid":"u"}`,
		`{"type":"set_model","model":"m"}`, `{"type":"close"}`, `{nope`, `{"type":"send"}{"type":"close"}`, `null`, `[]`,
		`{"type":"set_mode","mode":"plan"}`, `{"op":"send","prompt":"old shape"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var c commandMsg
		err := decode("tether.v1.cmd.x", data, MaxCommandSize, &c)
		if err != nil {
			var me *MessageError
			if !errors.As(err, &me) || !(errors.Is(err, ErrMalformed) || errors.Is(err, ErrTooLarge)) {
				t.Fatalf("untyped error %v", err)
			}
			if len(data) > 8 && strings.Contains(err.Error(), string(data)) {
				t.Fatalf("the error quotes the message: %v", err)
			}
			return
		}
		if err := c.validate(); err != nil {
			t.Fatalf("decoded an invalid command: %v", err)
		}
		again, _ := json.Marshal(&c)
		var c2 commandMsg
		if err := decode("x", again, MaxCommandSize, &c2); err != nil {
			t.Fatalf("round trip: %v", err)
		}
	})
}

// FuzzDecodeStart does the same for start requests and registry entries.
func FuzzDecodeStart(f *testing.F) {
	f.Add([]byte(`{"id":"abc","expires":"2030-01-01T00:00:00Z"}`))
	f.Add([]byte(`{"id":"a.b","expires":"2030-01-01T00:00:00Z"}`))
	f.Add([]byte(`{"id":"abc","failover":true,"resume":"x","expires":"2030-01-01T00:00:00Z"}`))
	f.Add([]byte(`{"id":"abc","agent":"a1","state":"idle","seq":3,"created":"2030-01-01T00:00:00Z"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var r startRequest
		if err := decode("s", data, MaxStartSize, &r); err == nil {
			if !validID(r.ID) || r.Expires.IsZero() {
				t.Fatalf("accepted %+v", r)
			}
		}
		var si SessionInfo
		if err := decode("k", data, MaxRecordSize, &si); err == nil && !validID(si.ID) {
			t.Fatalf("accepted a record with id %q", si.ID)
		}
	})
}

func TestCommandErrorMatchesSentinels(t *testing.T) {
	for code, want := range codeErrors {
		err := (&wireError{Code: code, Message: "m"}).err()
		if !errors.Is(err, want) {
			t.Errorf("%s does not match %v", code, want)
		}
		if w := wireErr(err); w.Code != code {
			t.Errorf("%s round-trips as %s", code, w.Code)
		}
	}
}

// A refusal of host's crosses the bus as host's code and comes back as a
// *host.CommandError matching host's sentinel.
func TestHostCodesCrossTheWire(t *testing.T) {
	for _, sentinel := range []error{host.ErrAlreadyAnswered, host.ErrNoApproval, host.ErrWithdrawn, host.ErrNotAQuestion,
		host.ErrNotQueued, host.ErrForbidden, host.ErrBusy, host.ErrSessionClosed} {
		w := wireErr(fmt.Errorf("wrapped: %w", sentinel))
		back := w.err()
		var ce *host.CommandError
		if !errors.As(back, &ce) || ce.Code != w.Code || !errors.Is(back, sentinel) {
			t.Errorf("%v crossed as %+v and came back as %#v", sentinel, w, back)
		}
	}
}
