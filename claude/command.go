package claude

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"time"

	"github.com/tetherhq/tether/internal/proc"
	"github.com/tetherhq/tether/internal/wire"
)

// CommandTransport runs the CLI as a local subprocess: the default
// Transport. The process gets its own process group (on Linux it dies with
// the host), its stderr is read line by line, and Close shuts it down in
// order: close stdin, wait, SIGTERM the group, wait, SIGKILL the group.
type CommandTransport struct {
	// TermTimeout bounds the wait between SIGTERM and SIGKILL (0 = 400 ms).
	// The CLI has had Launch.CloseTimeout to exit on its own before SIGTERM,
	// so this only bounds how long a CLI that ignored its closed stdin may
	// take to die; Session.Close promises to return within CloseTimeout
	// plus 1 s, which a longer TermTimeout breaks.
	TermTimeout time.Duration
}

// defaultTermTimeout is CommandTransport.TermTimeout's default.
const defaultTermTimeout = 400 * time.Millisecond

// Connect starts the CLI.
func (t *CommandTransport) Connect(ctx context.Context, l *Launch) (Conn, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if l.Path == "" {
		return nil, fmt.Errorf("claude: CommandTransport: Launch.Path is empty")
	}
	p, err := proc.Start(proc.Config{
		Path:     l.Path,
		Args:     l.Args,
		Env:      l.Env,
		Dir:      l.Dir,
		Stderr:   l.Stderr,
		Grace:    l.CloseTimeout,
		TermWait: cmp.Or(t.TermTimeout, defaultTermTimeout),
		Cred:     l.User.cred(),
	})
	if err != nil {
		return nil, startError(l, err)
	}
	return &commandConn{p: p, r: wire.NewReader(p.Stdout(), l.MaxLineSize), w: wire.NewWriter(p.Stdin())}, nil
}

type commandConn struct {
	p *proc.Process
	r *wire.Reader
	w *wire.Writer
}

func (c *commandConn) PID() int { return c.p.PID() }

// Exited is closed once the CLI has been reaped (ExitNotifier).
func (c *commandConn) Exited() <-chan struct{} { return c.p.Exited() }

func (c *commandConn) Read(ctx context.Context) ([]byte, error) {
	line, err := c.r.ReadLine()
	if err == nil || errors.Is(err, wire.ErrLineTooLong) {
		return line, err
	}
	// stdout ended: the exit status says whether that was clean.
	t := time.NewTimer(10 * time.Second)
	defer t.Stop()
	select {
	case <-c.p.Done():
	case <-t.C:
		return nil, &ProcessError{ExitCode: -1, Stderr: c.p.StderrTail(), Err: fmt.Errorf("stdout closed (%v) but the process is still running", err)}
	}
	st := c.p.Exit()
	if st.Err == nil && st.Code == 0 && st.Signal == "" {
		return nil, io.EOF
	}
	return nil, &ProcessError{ExitCode: st.Code, Signal: st.Signal, Stderr: st.Stderr, Err: st.Err}
}

// Write honours ctx: the stdin pipe takes write deadlines.
func (c *commandConn) Write(ctx context.Context, line []byte) error {
	return c.w.WriteLineContext(ctx, line)
}

func (c *commandConn) writesHonourContext() bool { return c.w.HonoursContext() }

func (c *commandConn) Close() error { return c.p.Close() }

// CloseInput closes the CLI's stdin only: it finishes what it has and exits.
func (c *commandConn) CloseInput() error {
	if f, ok := c.p.Stdin().(io.Closer); ok {
		return f.Close()
	}
	return nil
}

// kill ends the CLI at once (a failed start).
func (c *commandConn) kill() { c.p.Kill() }

// stderrTail is what the CLI wrote to stderr lately.
func (c *commandConn) stderrTail() []string { return c.p.StderrTail() }

// findCLI runs discovery and the version probe.
func findCLI(ctx context.Context, o *Options) (path, version string, err error) {
	path, searched, err := proc.Find(o.CLIPath, os.Getenv)
	if be, ok := batchFileError(err); ok {
		return "", "", be
	}
	if err != nil {
		if errors.Is(err, exec.ErrNotFound) {
			return "", "", &CLINotFoundError{Searched: searched}
		}
		return "", "", fmt.Errorf("claude: finding the CLI: %w", err)
	}
	if o.SkipVersionCheck {
		return path, "", nil
	}
	v, err := proc.Version(ctx, path)
	if err != nil {
		return "", "", fmt.Errorf("claude: probing the CLI version (set Options.SkipVersionCheck to skip): %w", err)
	}
	if proc.CompareVersions(v, MinCLIVersion) < 0 {
		return "", "", &CLIVersionError{Path: path, Version: v, Minimum: MinCLIVersion}
	}
	o.cliVersion = v
	return path, v, nil
}
