package cluster

import (
	"strconv"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/tetherhq/tether/team"
)

// The names an agent remembers, and the replies it keeps for their
// copies, stay within their bounds, the oldest forgotten first.
func TestRequestLogBounded(t *testing.T) {
	var l requestLog
	for i := range maxRequests + 10 {
		if !l.begin("n"+strconv.Itoa(i), nil) {
			t.Fatalf("name %d taken for a copy", i)
		}
	}
	if len(l.m) != maxRequests || len(l.order) != maxRequests {
		t.Fatalf("%d names kept (%d in order), want %d", len(l.m), len(l.order), maxRequests)
	}
	if _, ok := l.m["n0"]; ok {
		t.Fatal("the oldest name was kept")
	}
	big := &nats.Msg{Data: make([]byte, maxRequestBytes/4)}
	for i := range 8 {
		id := "big" + strconv.Itoa(i)
		l.begin(id, nil)
		l.finish(id, big)
	}
	if l.bytes > maxRequestBytes {
		t.Fatalf("%d bytes of replies kept, bound %d", l.bytes, maxRequestBytes)
	}
	if _, ok := l.m["big7"]; !ok {
		t.Fatal("the newest reply was forgotten")
	}
	// A name too long to be ours is not remembered.
	if n := requestName(string(make([]byte, 65)), nil); n != "" || !l.begin(n, nil) || !l.begin(n, nil) {
		t.Fatal("a name over 64 bytes was taken as a copy")
	}
	// One name under two identities names two commands.
	if requestName("n1", &team.Identity{Subject: "ann"}) == requestName("n1", &team.Identity{Subject: "bob"}) {
		t.Fatal("a copy under another identity would get the first one's reply")
	}
}
