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
		`{"type":"send","text":"hi","identity":{"sub":"a@example.com","role":"member"}}`,
		`{"type":"send","text":"hi","identity":{"sub":"","role":"admin"}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var c commandMsg
		err := decode("tether.v1.cmd.x", data, MaxCommandSize, &c)
		if err != nil {
			var me *MessageError
			var ue *UnsupportedError
			if !(errors.As(err, &me) && (errors.Is(err, ErrMalformed) || errors.Is(err, ErrTooLarge))) && !errors.As(err, &ue) {
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
	f.Add([]byte(`{"id":"abc","expires":"2030-01-01T00:00:00Z","identity":{"sub":"a@example.com","role":"viewer"}}`))
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

// An identity on the bus has the shape a front end makes, or the message
// is refused as malformed before anything runs: no subject, an unknown
// role, oversized or control-character fields, too many groups. Fields
// it does not know are ignored.
func TestIdentityShapeOnTheWire(t *testing.T) {
	long := strings.Repeat("x", 1000)
	many := make([]string, 100)
	for i := range many {
		many[i] = fmt.Sprintf("g%d", i)
	}
	for _, tc := range []struct {
		name string
		id   string
		ok   bool
	}{
		{"member", `{"sub":"alice@example.com","name":"Alice","email":"alice@example.com","groups":["eng"],"role":"member","addr":"127.0.0.1"}`, true},
		{"no subject", `{"sub":"","role":"admin"}`, false},
		{"no role", `{"sub":"alice@example.com"}`, false},
		{"unknown role", `{"sub":"alice@example.com","role":"root"}`, false},
		{"long subject", `{"sub":"` + long + `","role":"member"}`, false},
		{"long name", `{"sub":"a","name":"` + long + `","role":"member"}`, false},
		{"control", `{"sub":"a\u0000b","role":"member"}`, false},
		{"empty group", `{"sub":"a","groups":[""],"role":"member"}`, false},
		{"many groups", `{"sub":"a","groups":["` + strings.Join(many, `","`) + `"],"role":"member"}`, false},
		// Ignored, as every unknown field (a later release may add one).
		{"unknown field", `{"sub":"a","role":"member","admin":true}`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, msg := range []struct {
				data []byte
				v    validator
				max  int
			}{
				{[]byte(`{"type":"interrupt","identity":` + tc.id + `}`), &commandMsg{}, MaxCommandSize},
				{[]byte(`{"id":"abc","expires":"2030-01-01T00:00:00Z","identity":` + tc.id + `}`), &startRequest{}, MaxStartSize},
				{[]byte(`{"identity":` + tc.id + `}`), &snapshotMsg{}, MaxRecordSize},
			} {
				err := decode("s", msg.data, msg.max, msg.v)
				if tc.ok && err != nil {
					t.Errorf("%T refused: %v", msg.v, err)
				}
				if !tc.ok && !errors.Is(err, ErrMalformed) {
					t.Errorf("%T accepted (err %v)", msg.v, err)
				}
				if err != nil && strings.Contains(err.Error(), long) {
					t.Errorf("the error quotes the identity: %v", err)
				}
			}
		})
	}
}

// TestNoSessionIsHosts: the cluster's "no such session" is host's value,
// as serve's is, so a program checks it once.
func TestNoSessionIsHosts(t *testing.T) {
	if ErrNoSession != host.ErrNoSession {
		t.Errorf("cluster.ErrNoSession is %q, not host's", ErrNoSession)
	}
}
