package claude

import (
	"bytes"
	"fmt"
	"testing"
)

// TestAnswerMemoBounds: the memory of answers for repeated request ids
// keeps the last answeredMax ids, lines up to answerMemoBytes in total
// (oldest let go first) and none over answerLineMax; a cancelled request
// is forgotten, and only repeats after the cancel are counted.
func TestAnswerMemoBounds(t *testing.T) {
	var a answerMemo
	line := func(i, size int) []byte {
		return append([]byte(fmt.Sprintf("%d:", i)), bytes.Repeat([]byte("x"), size)...)
	}
	for i := range answeredMax + 10 {
		id := fmt.Sprint("r", i)
		if st, _ := a.arrive(id); st != memoNew {
			t.Fatalf("%s: state %d, want new", id, st)
		}
		a.finish(id, line(i, 10))
	}
	if st, _ := a.arrive("r0"); st != memoNew {
		t.Errorf("r0, past answeredMax: state %d, want forgotten (new)", st)
	}
	a.finish("r0", line(0, 10))
	if st, l := a.arrive("r20"); st != memoAnswered || !bytes.Equal(l, line(20, 10)) {
		t.Errorf("r20: state %d line %q, want its answer", st, l)
	}

	var b answerMemo
	b.arrive("big")
	b.finish("big", line(0, answerLineMax+1))
	if st, _ := b.arrive("big"); st != memoNotKept {
		t.Errorf("an answer over answerLineMax: state %d, want not kept", st)
	}
	n := answerMemoBytes/answerLineMax + 4
	for i := range n {
		id := fmt.Sprint("l", i)
		b.arrive(id)
		b.finish(id, line(i, answerLineMax-10))
	}
	if b.bytes > answerMemoBytes {
		t.Errorf("%d bytes kept, over answerMemoBytes", b.bytes)
	}
	if st, _ := b.arrive("l0"); st != memoNotKept {
		t.Errorf("the oldest line past answerMemoBytes: state %d, want let go", st)
	}
	if st, _ := b.arrive(fmt.Sprint("l", n-1)); st != memoAnswered {
		t.Errorf("the newest line: state %d, want kept", st)
	}

	var c answerMemo
	c.arrive("c")
	c.arrive("c") // before the cancel: withdrawn with it
	c.cancel("c")
	if st, _ := c.arrive("c"); st != memoServing {
		t.Errorf("a repeat of a cancelled request still running: state %d, want serving", st)
	}
	if got := c.finish("c", nil); got != 1 {
		t.Errorf("finish of a cancelled request = %d repeats, want the 1 after the cancel", got)
	}
	if st, _ := c.arrive("c"); st != memoNew {
		t.Errorf("a cancelled request after its callback returned: state %d, want forgotten (new)", st)
	}
}
