package cluster

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/host"
)

// TestFitAnswers: an answers record over the limit loses the texts and
// diffs of its largest files first, each then listed too large to show,
// and keeps the rest whole; one that cannot fit even so is refused.
func TestFitAnswers(t *testing.T) {
	big, small := strings.Repeat("x", 3000), "a\n"
	r := &answersRecord{Seq: 7, ChangesRead: true, SlashCommands: []claude.SlashCommand{{Name: "cost"}},
		Changes: []host.FileChange{
			{Path: "/w/big", Kind: host.FileModified, Old: big, New: big + "y", Diff: "-" + big + "\n+" + big + "y\n"},
			{Path: "/w/small", Kind: host.FileModified, Old: small, New: "b\n", Diff: "-a\n+b\n"},
		}}
	orig := r.Changes
	data, err := fitAnswers(r, 2000)
	if err != nil || len(data) > 2000 {
		t.Fatalf("%d bytes, %v", len(data), err)
	}
	var got answersRecord
	if err := decode("x", data, 2000, &got); err != nil {
		t.Fatal(err)
	}
	if c := got.Changes[0]; !c.TooLarge || c.Old != "" || c.Diff != "" || c.Path != "/w/big" {
		t.Errorf("the big file: %+v", c)
	}
	if c := got.Changes[1]; c.TooLarge || c.New != "b\n" || c.Diff != "-a\n+b\n" {
		t.Errorf("the small file: %+v", c)
	}
	if len(got.SlashCommands) != 1 || got.Seq != 7 || !got.ChangesRead {
		t.Errorf("record: %+v", got)
	}
	if orig[0].Old != big {
		t.Error("the session's own answer was changed")
	}
	if _, err := fitAnswers(r, 20); err == nil {
		t.Error("a record that cannot fit was encoded")
	}
}

// FuzzAnswersRecord: any bytes on the answers record's subject decode to
// a valid record or a typed error, never a panic.
func FuzzAnswersRecord(f *testing.F) {
	for _, s := range []string{`{"seq":3,"changes_read":true,"changes":[{"path":"/a","kind":"modified","added":1}]}`,
		`{"seq":1,"slash_commands":[{"name":"cost","description":"d"}]}`, `{"seq":0}`, `{"seq":"x"}`, `[`, `null`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var r answersRecord
		err := decode("tether.v1.tx.x~answers", data, 1<<20, &r)
		if err != nil {
			var me *MessageError
			if !errors.As(err, &me) || !(errors.Is(err, ErrMalformed) || errors.Is(err, ErrTooLarge)) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		if r.Seq == 0 {
			t.Fatal("decoded a record without an event number")
		}
		if _, err := json.Marshal(&r); err != nil {
			t.Fatal(err)
		}
	})
}
