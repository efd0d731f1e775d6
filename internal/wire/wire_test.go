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

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// readAll collects lines and per-line errors until a terminal error.
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

// chunks gives its chunks one a Read, as a pipe gives what was written
// (a chunk bigger than the caller's slice is given in parts).
type chunks [][]byte

func (c *chunks) Read(p []byte) (int, error) {
	if len(*c) == 0 {
		return 0, io.EOF
	}
	n := copy(p, (*c)[0])
	if (*c)[0] = (*c)[0][n:]; len((*c)[0]) == 0 {
		*c = (*c)[1:]
	}
	return n, nil
}

// The buffer stays small while lines come one a read, grows the first
// time a read fills it, and loses nothing across the change: not the
// lines buffered, not the line cut by the read that filled it.
func TestReaderBufferGrows(t *testing.T) {
	line := func(i, size int) string {
		s := fmt.Sprintf(`{"n":%d,"pad":"`, i)
		return s + strings.Repeat("x", size-len(s)-2) + `"}`
	}
	var src chunks
	var want []string
	for i := range 5 { // a line a read: stays small
		want = append(want, line(i, 300))
		src = append(src, []byte(want[i]+"\n"))
	}
	var burst []byte
	for i := 5; i < 200; i++ { // a burst, cut anywhere by the reads
		want = append(want, line(i, 100+i*7))
		burst = append(burst, want[i]+"\n"...)
	}
	src = append(src, burst)
	r := NewReader(&src, 0)
	for i := range 5 {
		got, err := r.ReadLine()
		if err != nil || string(got) != want[i] {
			t.Fatalf("line %d: %q, %v", i, got, err)
		}
		if r.small == nil {
			t.Fatalf("after line %d, read one a read: the buffer grew", i)
		}
	}
	var got []string
	for {
		l, err := r.ReadLine()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(l))
	}
	if diff := cmp.Diff(want[5:], got); diff != "" {
		t.Errorf("lines across the growth (-want +got):\n%s", diff)
	}
	if r.small != nil || r.br.Size() != fullBuffer {
		t.Errorf("after a burst the buffer is %d bytes, want %d", r.br.Size(), fullBuffer)
	}
}
