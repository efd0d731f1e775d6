package wire

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"testing"
	"time"
)

// A pipe nobody reads: a line larger than the pipe buffer is cut when ctx
// ends (a *PartialWriteError), and once the pipe is full the next line is
// refused whole (ctx's error, nothing written).
func TestWriteLineContextPipe(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	wr := NewWriter(w)

	// Long enough that the write has started (and filled the pipe) before
	// ctx ends, even on a loaded machine: a ctx that ends first would
	// rightly refuse the line whole.
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	big := bytes.Repeat([]byte("x"), 1<<20)
	err = wr.WriteLineContext(ctx, big)
	var pe *PartialWriteError
	if !errors.As(err, &pe) || !errors.Is(err, context.DeadlineExceeded) || pe.Written <= 0 || pe.Written >= pe.Len {
		t.Fatalf("big line into an unread pipe: %v, want a *PartialWriteError matching DeadlineExceeded", err)
	}

	// The pipe is full now: nothing of the next line goes out.
	ctx2, cancel2 := context.WithCancel(context.Background())
	go func() { time.Sleep(20 * time.Millisecond); cancel2() }()
	err = wr.WriteLineContext(ctx2, []byte(`{"small":1}`))
	if !errors.Is(err, context.Canceled) || errors.As(err, &pe) {
		t.Fatalf("line into a full pipe: %v, want context.Canceled and no partial write", err)
	}

	// The deadline was cleared: once the reader drains, writes work again.
	go io.Copy(io.Discard, r)
	if err := wr.WriteLineContext(context.Background(), []byte(`{"after":1}`)); err != nil {
		t.Fatalf("write after draining: %v", err)
	}
	ctx3, cancel3 := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel3()
	if err := wr.WriteLineContext(ctx3, big); err != nil {
		t.Fatalf("bounded write with a reader: %v", err)
	}
}

// A writer without deadlines ignores ctx but still writes.
func TestWriteLineContextPlain(t *testing.T) {
	var b bytes.Buffer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := NewWriter(&b).WriteLineContext(ctx, []byte("a")); err != nil || b.String() != "a\n" {
		t.Fatalf("got %q, %v", b.String(), err)
	}
	cancel()
	if err := NewWriter(&b).WriteLineContext(ctx, []byte("b")); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled ctx: %v", err)
	}
}
