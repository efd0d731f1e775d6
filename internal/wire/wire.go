// Package wire frames newline-delimited JSON: a line reader with no fixed
// cap (only a configurable maximum, past which a line is skipped and
// reported, not fatal) and a serialized line writer. It knows nothing of
// the messages it carries.
package wire

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"sync"
	"time"
)

// ErrLineTooLong reports a line longer than the reader's maximum. The
// reader has skipped the rest of that line; the next ReadLine continues.
var ErrLineTooLong = errors.New("claude: line too long")

// DefaultMaxLine is the largest line accepted when no maximum is set.
const DefaultMaxLine = 256 << 20

// TooLongError is returned for an over-long line. It matches ErrLineTooLong.
type TooLongError struct {
	Size   int    // bytes in the line, without the newline
	Max    int    // the configured maximum
	Prefix []byte // the line's first bytes (at most 256)
}

func (e *TooLongError) Error() string {
	return fmt.Sprintf("%v: %d bytes, maximum %d", ErrLineTooLong, e.Size, e.Max)
}

func (e *TooLongError) Unwrap() error { return ErrLineTooLong }

// Reader reads lines. It is not safe for concurrent use.
type Reader struct {
	br    *bufio.Reader
	small *fillReader // the source while the buffer is small; nil once grown
	max   int
	n     int64 // lines read so far
}

// A Reader's buffer starts at smallBuffer and becomes fullBuffer the
// first time a read fills it (more was waiting: a burst, or a line longer
// than the buffer), for good. Most sessions most of the time write a line
// now and then, and hundreds of them open in one process each hold 4 KiB
// instead of 64; a stream of messages reads 64 KiB a system call, as
// before.
const (
	smallBuffer = 4 << 10
	fullBuffer  = 64 << 10
)

// fillReader notes a read that filled a small buffer's free space.
type fillReader struct {
	r    io.Reader
	full bool
}

func (f *fillReader) Read(p []byte) (int, error) {
	n, err := f.r.Read(p)
	if n == len(p) && n >= smallBuffer/2 {
		f.full = true
	}
	return n, err
}

// NewReader returns a Reader with the given maximum line size (<= 0 means
// DefaultMaxLine).
func NewReader(r io.Reader, max int) *Reader {
	if max <= 0 {
		max = DefaultMaxLine
	}
	f := &fillReader{r: r}
	return &Reader{br: bufio.NewReaderSize(f, smallBuffer), small: f, max: max}
}

// grow moves to the full buffer, carrying over what the small one holds.
func (r *Reader) grow() {
	src := r.small.r
	if n := r.br.Buffered(); n > 0 {
		held, _ := r.br.Peek(n)
		src = io.MultiReader(bytes.NewReader(bytes.Clone(held)), src)
	}
	r.br = bufio.NewReaderSize(src, fullBuffer)
	r.small = nil
}

// Lines returns how many lines ReadLine has returned or skipped.
func (r *Reader) Lines() int64 { return r.n }

// ReadLine returns the next non-empty line without its newline (and without
// a trailing carriage return). The slice is freshly allocated and owned by
// the caller. At the end of input it returns io.EOF; a final line without a
// newline is returned first. An over-long line yields a *TooLongError and is
// skipped without being held in memory.
func (r *Reader) ReadLine() ([]byte, error) {
	for {
		line, err := r.readOne()
		if err != nil {
			return nil, err
		}
		if len(line) == 0 {
			continue // blank lines carry nothing
		}
		return line, nil
	}
}

func (r *Reader) readOne() ([]byte, error) {
	if r.small != nil && r.small.full {
		r.grow()
	}
	// Fast path: the whole line is in the buffer.
	frag, err := r.br.ReadSlice('\n')
	if err == nil {
		r.n++
		if len(frag)-1 > r.max {
			return nil, &TooLongError{Size: len(frag) - 1, Max: r.max, Prefix: prefix(frag)}
		}
		return bytes.Clone(trim(frag)), nil
	}
	if err != bufio.ErrBufferFull {
		if len(frag) == 0 {
			return nil, err // io.EOF or a read error, between lines
		}
		r.n++
		if len(frag) > r.max {
			return nil, &TooLongError{Size: len(frag), Max: r.max, Prefix: prefix(frag)}
		}
		return bytes.Clone(trim(frag)), nil // last line without newline
	}
	// Slow path: a line longer than the buffer. Copy it into fixed-size
	// blocks until the newline, then into one slice of the exact size: a
	// slice grown by append would leave a trail of ever larger copies for
	// the collector, several times the line, which is what matters for
	// the rare line of hundreds of megabytes. Past the maximum, count and
	// drop.
	size := len(frag)
	var head []byte
	var blocks blockList
	if size > r.max {
		head = prefix(frag)
	} else {
		blocks.write(frag)
	}
	for {
		frag, err = r.br.ReadSlice('\n')
		size += len(frag)
		content := size
		if err == nil {
			content-- // the newline
		}
		if head == nil {
			if content > r.max {
				head = prefix(blocks.first())
				blocks = blockList{} // drop what we held: the line is lost anyway
			} else {
				blocks.write(frag)
			}
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil && err != io.EOF {
			return nil, err
		}
		r.n++
		if head != nil {
			return nil, &TooLongError{Size: content, Max: r.max, Prefix: head}
		}
		line := blocks.join(size)
		if size >= hugeLine {
			// Hand the blocks back to the OS now: the caller's next step
			// (decoding) allocates about the line's size again, and
			// without this the blocks would still count then, for a
			// peak of three times the line instead of two.
			blocks = blockList{}
			debug.FreeOSMemory()
		}
		return trim(line), nil
	}
}

// hugeLine is the size from which a line's scratch blocks are returned to
// the OS as soon as it is read.
const hugeLine = 64 << 20

// blockSize is the size of the blocks a long line is gathered in.
const blockSize = 1 << 20

// blockList gathers a long line in blocks of blockSize.
type blockList struct {
	blocks [][]byte
}

func (l *blockList) write(p []byte) {
	for len(p) > 0 {
		n := len(l.blocks)
		if n == 0 || len(l.blocks[n-1]) == cap(l.blocks[n-1]) {
			l.blocks = append(l.blocks, make([]byte, 0, blockSize))
			n++
		}
		b := l.blocks[n-1]
		k := min(len(p), cap(b)-len(b))
		l.blocks[n-1] = append(b, p[:k]...)
		p = p[k:]
	}
}

func (l *blockList) first() []byte {
	if len(l.blocks) == 0 {
		return nil
	}
	return l.blocks[0]
}

// join returns the blocks as one slice of size bytes.
func (l *blockList) join(size int) []byte {
	out := make([]byte, 0, size)
	for i, b := range l.blocks {
		out = append(out, b...)
		l.blocks[i] = nil // let each block go as soon as it is copied
	}
	return out
}

// trim cuts a line's newline and carriage return (by hand: the general
// TrimSuffix took 5% of a host's time reading token deltas).
func trim(b []byte) []byte {
	if n := len(b); n > 0 && b[n-1] == '\n' {
		b = b[:n-1]
	}
	if n := len(b); n > 0 && b[n-1] == '\r' {
		b = b[:n-1]
	}
	return b
}

func prefix(b []byte) []byte {
	if len(b) > 256 {
		b = b[:256]
	}
	return bytes.Clone(b)
}

// Writer writes lines, one at a time, from any goroutine.
type Writer struct {
	mu  sync.Mutex
	w   io.Writer
	buf []byte
}

// NewWriter returns a Writer on w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// HonoursContext reports whether WriteLineContext returns when its ctx
// ends even if the reader never reads: the underlying writer takes write
// deadlines (an *os.File pipe in the runtime's poller, a net.Conn). On
// other writers (an io.Pipe) a write blocks until it is read.
func (w *Writer) HonoursContext() bool {
	d, ok := w.w.(deadliner)
	return ok && d.SetWriteDeadline(time.Time{}) == nil
}

// WriteLine writes line followed by a newline in a single Write call, so
// concurrent lines never interleave. line must not contain a newline.
func (w *Writer) WriteLine(line []byte) error {
	return w.WriteLineContext(context.Background(), line)
}

// A deadliner is a writer whose blocked Write can be ended from outside:
// an *os.File on a pipe or socket, a net.Conn.
type deadliner interface {
	SetWriteDeadline(t time.Time) error
}

// PartialWriteError reports a line cut short because the context ended in
// the middle of its Write: part of the line went out and cannot be taken
// back, so the stream is corrupt from here on. It matches the context's
// error.
type PartialWriteError struct {
	Written int   // bytes of the line (with its newline) that went out
	Len     int   // the line's length, with its newline
	Err     error // the context's error
}

func (e *PartialWriteError) Error() string {
	return fmt.Sprintf("wire: line cut after %d of %d bytes: %v", e.Written, e.Len, e.Err)
}

func (e *PartialWriteError) Unwrap() error { return e.Err }

// aLongTimeAgo is a deadline in the past: it ends a blocked Write at once.
var aLongTimeAgo = time.Unix(1, 0)

// WriteLineContext is WriteLine bounded by ctx, where the underlying writer
// lets a blocked Write be ended (it has SetWriteDeadline, as a pipe's
// *os.File does). When ctx ends before any byte went out it returns ctx's
// error and the stream is intact; when it ends mid-line it returns a
// *PartialWriteError. Other writers ignore ctx: the Write blocks until it
// is done or the writer is closed.
func (w *Writer) WriteLineContext(ctx context.Context, line []byte) error {
	if bytes.IndexByte(line, '\n') >= 0 {
		return errors.New("wire: line contains a newline")
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return err
	}
	w.buf = append(append(w.buf[:0], line...), '\n')
	var n int
	var err error
	if d, ok := w.w.(deadliner); ok && ctx.Done() != nil {
		n, err = writeBounded(ctx, d, w.w, w.buf)
	} else {
		n, err = w.w.Write(w.buf)
	}
	size := len(w.buf)
	if cap(w.buf) > 1<<20 {
		w.buf = nil // don't pin a huge buffer after a large message
	}
	if err != nil && errors.Is(err, os.ErrDeadlineExceeded) {
		cerr := ctx.Err()
		if cerr == nil {
			// The fd's deadline (ctx's own) fired a hair before ctx's timer.
			cerr = context.DeadlineExceeded
		}
		if n == 0 {
			return cerr
		}
		return &PartialWriteError{Written: n, Len: size, Err: cerr}
	}
	return err
}

// writeBounded writes b to w, ending the Write when ctx ends.
func writeBounded(ctx context.Context, d deadliner, w io.Writer, b []byte) (int, error) {
	dl, _ := ctx.Deadline()
	if err := d.SetWriteDeadline(dl); err != nil {
		return w.Write(b) // no deadlines on this one after all
	}
	var mu sync.Mutex
	ended := false
	stop := context.AfterFunc(ctx, func() {
		mu.Lock()
		defer mu.Unlock()
		if !ended {
			d.SetWriteDeadline(aLongTimeAgo)
		}
	})
	n, err := w.Write(b)
	mu.Lock()
	ended = true
	mu.Unlock()
	stop()
	d.SetWriteDeadline(time.Time{})
	return n, err
}

// PeekString returns the string value that immediately follows prefix at
// the start of b, when b is written the way the CLI writes its lines (no
// spaces, the key first, no escapes in the value): PeekString(line,
// `{"type":"`) is a line's type without parsing it. ok is false when the
// caller must fall back to a full decode.
func PeekString(b []byte, prefix string) (string, bool) {
	if !bytes.HasPrefix(b, []byte(prefix)) {
		return "", false
	}
	rest := b[len(prefix):]
	end := bytes.IndexByte(rest, '"')
	if end < 0 || bytes.IndexByte(rest[:end], '\\') >= 0 {
		return "", false
	}
	return string(rest[:end]), true
}
