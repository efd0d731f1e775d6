package wire

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
)

// readAll collects lines and per-line errors until a terminal error.

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func readAll(r *Reader) (lines []string, tooLong []int, err error) {
	for {
		b, err := r.ReadLine()
		var tl *TooLongError
		switch {
		case errors.As(err, &tl):
			tooLong = append(tooLong, tl.Size)
			continue
		case err != nil:
			return lines, tooLong, err
		}
		lines = append(lines, string(b))
	}
}

func TestReaderLines(t *testing.T) {
	big := strings.Repeat("x", 200_000) // longer than the 64 KiB buffer
	var sb strings.Builder              // several 1 MiB blocks, in an order a mix-up would show
	for i := 0; sb.Len() < 3<<20+12345; i++ {
		fmt.Fprintf(&sb, "%d,", i)
	}
	blocks := sb.String()
	for _, tc := range []struct {
		name, in string
		max      int
		want     []string
		tooLong  []int
	}{
		{"simple", "a\nb\n", 0, []string{"a", "b"}, nil},
		{"no final newline", "a\nb", 0, []string{"a", "b"}, nil},
		{"crlf and blanks", "a\r\n\n\nb\n", 0, []string{"a", "b"}, nil},
		{"bigger than the buffer", big + "\nz\n", 0, []string{big, "z"}, nil},
		{"over the max, short", "12345\nok\n", 4, []string{"ok"}, []int{5}},
		{"exactly the max", "1234\n", 4, []string{"1234"}, nil},
		{"over the max, long", big + "\nok\n" + big, 100_000, []string{"ok"}, []int{200_000, 200_000}},
		{"over the max at EOF", "ok\n12345", 4, []string{"ok"}, []int{5}},
		{"several blocks", blocks + "\r\nz\n", 0, []string{blocks, "z"}, nil},
		{"several blocks at EOF", "a\n" + blocks, 0, []string{"a", blocks}, nil},
		{"over the max after two blocks", blocks + "\nok\n", 2 << 20, []string{"ok"}, []int{len(blocks)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := NewReader(strings.NewReader(tc.in), tc.max)
			lines, tooLong, err := readAll(r)
			if err != io.EOF {
				t.Errorf("terminal error = %v, want io.EOF", err)
			}
			if diff := cmp.Diff(tc.want, lines); diff != "" {
				t.Errorf("lines (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.tooLong, tooLong); diff != "" {
				t.Errorf("too-long sizes (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTooLongError(t *testing.T) {
	r := NewReader(strings.NewReader(strings.Repeat("y", 1000)+"\n"), 10)
	_, err := r.ReadLine()
	if !errors.Is(err, ErrLineTooLong) {
		t.Fatalf("err = %v, want ErrLineTooLong", err)
	}
	var tl *TooLongError
	if !errors.As(err, &tl) || tl.Size != 1000 || tl.Max != 10 || len(tl.Prefix) != 256 {
		t.Errorf("TooLongError = %+v", tl)
	}
	if r.Lines() != 1 {
		t.Errorf("Lines = %d, want 1", r.Lines())
	}
}

// The returned slices must not alias the reader's buffer: messages keep them.
func TestReaderOwnsNothing(t *testing.T) {
	r := NewReader(strings.NewReader("first\nsecond\n"), 0)
	a, _ := r.ReadLine()
	b, _ := r.ReadLine()
	if string(a) != "first" || string(b) != "second" {
		t.Errorf("got %q, %q", a, b)
	}
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

func TestReaderError(t *testing.T) {
	boom := errors.New("boom")
	_, err := NewReader(errReader{boom}, 0).ReadLine()
	if !errors.Is(err, boom) {
		t.Errorf("err = %v, want %v", err, boom)
	}
}

func TestWriterConcurrent(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	var wg sync.WaitGroup
	line := bytes.Repeat([]byte("z"), 10_000)
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := w.WriteLine(line); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	for i, l := range strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n") {
		if l != string(line) {
			t.Fatalf("line %d interleaved (%d bytes)", i, len(l))
		}
	}
	if err := w.WriteLine([]byte("a\nb")); err == nil {
		t.Error("a line with a newline was written")
	}
}

func BenchmarkReadLine(b *testing.B) {
	line := append(bytes.Repeat([]byte("a"), 300), '\n')
	data := bytes.Repeat(line, 10_000)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		r := NewReader(bytes.NewReader(data), 0)
		for {
			if _, err := r.ReadLine(); err != nil {
				break
			}
		}
	}
}
