package claude

import (
	"context"
	"errors"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tetherhq/tether/internal/wire"
)

// A Transport starts a Claude Code CLI (or attaches to one) and returns a
// connection to its stream-json stdin and stdout.
//
// The default is a *CommandTransport, which runs the CLI as a local
// subprocess. Write your own to run the CLI over SSH, inside a container,
// or against a test double (see package claudetest).
type Transport interface {
	// Connect starts the CLI described by launch. The context bounds the
	// start only; the connection lives until Conn.Close.
	Connect(ctx context.Context, launch *Launch) (Conn, error)
}

// Launch describes the CLI invocation a Session wants. Options are mapped
// onto it by Connect; custom transports decide how to honour it (a remote
// runner might ignore Path and Dir).
type Launch struct {
	Path        string   // the CLI executable found by discovery (may be empty for custom transports)
	Args        []string // arguments, without the program name
	Env         []string // the complete environment, "KEY=value"
	Dir         string   // working directory; "" means the current one
	MaxLineSize int      // the largest stdout line to accept (Options.MaxLineSize; 0 = 256 MiB)
	// CloseTimeout is how long Close lets the CLI exit on its own after
	// stdin is closed, before signalling it (0 = the transport's default).
	CloseTimeout time.Duration

	// Stderr, when set, is called with each line the CLI writes to stderr.
	Stderr func(line string)

	// User, when set, is the OS user the CLI is to run as (Options.User,
	// resolved; Env already holds its HOME). CommandTransport starts the
	// CLI with its credentials; a transport that wraps the start (a
	// sandbox) passes it on, one that cannot honour it should fail.
	User *OSUser
}

// A Conn is one connection to a CLI: lines of JSON in both directions.
//
// Concurrency contract: a Session calls Read from a single goroutine, and
// Write from a single goroutine too (its writer). Close may be called
// concurrently with Read and Write and more than once; it must make a
// blocked Read and a blocked Write return.
//
// Write should honour its ctx where the medium allows (a pipe's *os.File
// takes write deadlines): return ctx's error if nothing of the line went
// out, or an error that also matches ctx's error if only part of it did
// (the stream is then corrupt, and the Session stops writing). A Write that
// ignores ctx is tolerated: callers still return at their ctx's deadline,
// but the Session's writer stays blocked until the Write ends, so later
// writes wait behind it (each bounded by its own ctx).
//
// Read returns one line of stdout without its newline. The returned slice
// is owned by the caller. Two kinds of errors are defined:
//   - an error wrapping ErrLineTooLong (or any *LineError) is about one line
//     only: the connection stays usable and the next Read continues;
//   - any other error is terminal: io.EOF when the CLI ended its output and
//     exited cleanly, a *ProcessError when it exited otherwise, or the
//     transport's own failure.
type Conn interface {
	Read(ctx context.Context) ([]byte, error)
	// Write sends one line; the Conn adds the newline.
	Write(ctx context.Context, line []byte) error
	// Close shuts the CLI down (for a subprocess: close stdin, wait a grace
	// period, then SIGTERM and SIGKILL) and releases everything. It returns
	// once the CLI is gone; it does not report the CLI's exit status, which
	// Read does.
	Close() error
}

// An InputCloser is a Conn that can close the CLI's stdin alone, leaving
// its stdout open: the CLI then finishes its turn and exits by itself.
// Session.CloseInput needs it.
type InputCloser interface {
	CloseInput() error
}

// An ExitNotifier is a Conn that can tell when the CLI has exited before
// its output has been read to the end. A Session stops reading the CLI's
// stdout while more than Options.MaxBufferedBytes of messages are
// unreceived; with an ExitNotifier it still learns of the exit at once,
// reads the rest of the output (the CLI writes no more), and ends: Done
// closes and Wait returns whether or not Receive keeps up. Without one,
// the exit is seen only once Receive has caught up. CommandTransport's
// connections implement it.
type ExitNotifier interface {
	// Exited is closed once the CLI has exited. What it wrote before may
	// still be unread: Read keeps returning it, then the terminal error.
	Exited() <-chan struct{}
}

// PIDer is implemented by connections to a local process.
type PIDer interface {
	PID() int
}

// IOTransport connects to a CLI that is already running, or to anything
// that speaks its protocol, over a reader (its stdout) and a writer (its
// stdin): a CLI started over SSH or in a container, or a test peer. Each
// IOTransport serves one Connect.
type IOTransport struct {
	Reader io.Reader      // the CLI's stdout
	Writer io.WriteCloser // the CLI's stdin; closed by Conn.Close

	used atomic.Bool
}

// Connect returns a Conn on the pair. The Launch is ignored: whoever
// started the CLI chose its flags. Reading ends with io.EOF when Reader
// does.
func (t *IOTransport) Connect(ctx context.Context, l *Launch) (Conn, error) {
	if t.Reader == nil || t.Writer == nil {
		return nil, errors.New("claude: IOTransport needs both Reader and Writer")
	}
	if !t.used.CompareAndSwap(false, true) {
		return nil, errors.New("claude: IOTransport already connected")
	}
	max := 0
	if l != nil {
		max = l.MaxLineSize
	}
	return &ioConn{r: wire.NewReader(t.Reader, max), w: wire.NewWriter(t.Writer), wc: t.Writer, rc: t.Reader}, nil
}

type ioConn struct {
	r    *wire.Reader
	w    *wire.Writer
	wc   io.WriteCloser
	rc   io.Reader
	once sync.Once

	inOnce sync.Once // closes wc, for CloseInput and Close
	inErr  error
}

func (c *ioConn) Read(ctx context.Context) ([]byte, error) { return c.r.ReadLine() }

func (c *ioConn) Write(ctx context.Context, line []byte) error {
	return c.w.WriteLineContext(ctx, line)
}

func (c *ioConn) writesHonourContext() bool { return c.w.HonoursContext() }

// CloseInput closes the writer only.
func (c *ioConn) CloseInput() error {
	c.inOnce.Do(func() { c.inErr = c.wc.Close() })
	return c.inErr
}

// Close closes the writer, and the reader when it is an io.Closer, so a
// blocked Read returns.
func (c *ioConn) Close() error {
	var err error
	c.once.Do(func() {
		err = c.CloseInput()
		if rc, ok := c.rc.(io.Closer); ok {
			rc.Close()
		}
	})
	return err
}
