// Package proc runs the Claude Code CLI as a local subprocess: it finds the
// executable, probes its version, starts it in a process group of its own,
// reads its stderr a line at a time, and shuts it down in order.
//
// It knows nothing of the stream-json protocol; package claude layers that
// on Process.Stdin and Process.Stdout.
//
// # Process lifetime
//
// A Process owns its process group. Whenever the CLI exits, on its own or
// because Close ended it, everything left in its group (tool subprocesses,
// MCP servers it spawned) is killed with SIGKILL before the CLI is reaped:
// a stray child of a finished session must not outlive it. Close never
// waits on a pipe unboundedly.
//
// What else each platform gets:
//
//   - Linux: the CLI runs under a supervisor process (the host's own
//     executable, re-executed; see supervise_linux.go) that is a child
//     subreaper and holds a pipe to the host. Every descendant of the CLI,
//     including those that left its process group or session (the CLI
//     starts its Bash tool with setsid), is killed when the CLI exits for
//     any reason (on its own, SIGKILL, Close escalating to SIGKILL) and
//     when the host dies in any way (Close not called, os.Exit, a panic,
//     SIGKILL), since the kernel closes the host's end of the pipe then.
//     No OS thread is held per process: exits are awaited through pidfds
//     in the runtime's poller. The cost is one small extra process per
//     CLI. Where the supervisor cannot run (TETHER_NO_SUPERVISOR set in the
//     environment, a c-shared or c-archive host, no /proc) the CLI is
//     started directly, as before: its process group is killed, and the
//     CLI itself (not what left its group) gets SIGKILL if the host dies
//     (Pdeathsig, from one thread shared by all such CLIs).
//   - Other Unix systems: the process group only. Processes that leave it
//     (setsid, setpgid) survive the CLI, and nothing reaches the CLI when
//     the host dies without Close.
//   - Windows: the CLI process itself only.
package proc

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"sync"
	"time"
	"unicode/utf8"
)

// envNoSupervisor, set to any non-empty value in the host's environment,
// turns the Linux supervisor off: processes are started directly, as on
// other platforms. An escape hatch for hosts where re-executing their own
// binary is impossible or unwanted.
const envNoSupervisor = "TETHER_NO_SUPERVISOR"

// Defaults for the zero Config.
const (
	DefaultGrace      = 5 * time.Second
	DefaultTermWait   = 5 * time.Second
	DefaultStderrTail = 50
)

const (
	// killWait bounds the wait for the CLI to be reaped after SIGKILL. Only
	// a process stuck in the kernel (uninterruptible I/O) takes longer, and
	// then Close gives up rather than hang its caller.
	killWait = 5 * time.Second

	// drainWait bounds how long stderr may stay open after the CLI has been
	// reaped. Only a process that escaped the group can still hold it; the
	// same role as exec.Cmd.WaitDelay.
	drainWait = 2 * time.Second

	// maxStderrLine is the longest stderr line passed to Config.Stderr; the
	// rest of a longer line is dropped so a runaway writer with no newlines
	// cannot exhaust memory.
	maxStderrLine = 1 << 20

	// maxTailLine is the longest line kept in the tail: the tail ends up
	// in error messages, where a few KiB of a line says enough.
	maxTailLine = 4 << 10

	// stderrQueueLines and stderrQueueBytes bound the stderr lines read
	// but not yet taken by Config.Stderr; see Config.Stderr for the
	// policy.
	stderrQueueLines = 1024
	stderrQueueBytes = 4 << 20
)

// Config describes a process to start.
type Config struct {
	// Path is the executable. It should be absolute (Find returns one): a
	// relative path is resolved against Dir by os/exec.
	Path string
	// Args are the arguments, without the program name.
	Args []string
	// Env is the complete environment, "KEY=value". nil inherits the
	// host's environment, as with exec.Cmd.
	Env []string
	// Dir is the working directory; "" means the host's.
	Dir string

	// Stderr, when set, is called with each stderr line (without its line
	// ending, at most 1 MiB of it), in order, from a single goroutine of
	// its own. Lines wait for it in a queue of at most 1024 lines and
	// 4 MiB; when the queue is full (the callback is slow or blocked) new
	// lines are dropped for it, and counted in ExitStatus.StderrDropped
	// (the stderr tail keeps them all the same). A panic in the callback is
	// recovered and logged; the next line is delivered as usual. Neither
	// Done nor Close waits for the callback: the goroutine ends once it
	// has delivered what was queued when stderr ended.
	Stderr func(line string)

	// Logger receives diagnostics at debug level (no supervisor, a
	// recovered Stderr panic). nil discards them.
	Logger *slog.Logger

	// Grace is how long Close lets the process exit on its own after
	// closing its stdin, before signalling it. 0 (or less) means 5 s.
	Grace time.Duration
	// TermWait is how long Close waits after SIGTERM before SIGKILL.
	// 0 (or less) means 5 s.
	TermWait time.Duration
	// StderrTail is how many stderr lines are kept for ExitStatus. 0 (or
	// less) means 50.
	StderrTail int

	// Cred, when set, runs the process as another user: its UID, primary
	// GID and supplementary groups. Only root (or a holder of CAP_SETUID
	// and CAP_SETGID) may; otherwise Start fails with an error matching
	// syscall.EPERM. Unix only: elsewhere Start refuses it.
	Cred *Cred
}

// Cred is the identity a process is started with (Config.Cred).
type Cred struct {
	UID    uint32   `json:"uid"`
	GID    uint32   `json:"gid"`
	Groups []uint32 `json:"groups,omitempty"`
}

// ExitStatus says how a process ended.
type ExitStatus struct {
	// Code is the exit code, or -1 if the process was ended by a signal.
	Code int
	// Signal names the signal that ended the process ("SIGKILL"), or the
	// one Close sent it if it then exited with a code (a CLI that traps
	// SIGTERM exits with 143). Empty when the process exited on its own.
	// Where there are no signals (Windows) it is "killed" after Close had
	// to kill the process.
	Signal string
	// Stderr holds the last Config.StderrTail lines of stderr, each cut to
	// 4 KiB.
	Stderr []string
	// Err is the error from waiting for the process: an *exec.ExitError
	// for a nonzero code or a signal, nil for code 0.
	Err error
	// StderrDropped counts the stderr lines not passed to Config.Stderr
	// because its queue was full.
	StderrDropped int
}

// Process is a running CLI. Its methods are safe for concurrent use.
type Process struct {
	cmd      *exec.Cmd
	pid      int // the CLI's
	pgid     int // the process group's: the CLI's, or its supervisor's
	log      *slog.Logger
	grace    time.Duration
	termWait time.Duration
	tailMax  int
	onLine   func(string)

	stdin  *os.File // our end of the CLI's stdin
	stdout *os.File // our end of the CLI's stdout
	stderr *os.File // our end of the CLI's stderr, owned by readStderr

	// Under a supervisor (Linux): ctl is our end of its control pipe;
	// closing it makes the supervisor kill the CLI and all it started.
	supervised bool
	ctl        *os.File
	ctlOnce    sync.Once
	cliGone    chan struct{} // closed once the supervisor says the CLI exited

	// The Stderr callback's queue.
	qmu     sync.Mutex
	queue   []string
	qbytes  int
	qend    bool          // stderr ended: deliver what is queued, then stop
	qwake   chan struct{} // signalled when the queue gains a line or ends
	dropped int

	reaped     chan struct{} // closed once the CLI has been waited for
	stderrDone chan struct{} // closed when readStderr returns
	done       chan struct{} // closed when both of the above are

	mu     sync.Mutex
	exited bool     // the CLI can no longer be signalled (guards its pgid)
	sent   string   // the strongest signal Close sent while the CLI ran
	tail   []string // last stderr lines
	status ExitStatus

	closeOnce sync.Once
	closeErr  error
}

// Start starts the process described by c with its own stdin, stdout and
// stderr pipes, in a new process group: on Linux under a supervisor (see
// the package doc), elsewhere, or when the supervisor cannot run, directly.
//
// Started directly on Linux, the process gets Pdeathsig SIGKILL, so it
// dies with the host even if the host is killed and never calls Close; it
// is forked from a thread kept for that purpose (see spawn_linux.go). Only
// the CLI itself gets the death signal; its own children die with it only
// if it reaps them.
func Start(c Config) (*Process, error) {
	if c.Path == "" {
		return nil, errors.New("proc: empty executable path")
	}
	if exe := supervisorPath(); exe != "" {
		p, err := start(c, exe)
		if err == nil || !errors.Is(err, errNoSupervisor) {
			return p, err
		}
		logger(c.Logger).Debug("proc: starting the CLI without a supervisor", "err", err)
	}
	return start(c, "")
}

func logger(l *slog.Logger) *slog.Logger {
	if l == nil {
		return slog.New(slog.DiscardHandler)
	}
	return l
}

// start starts c under the supervisor exe, or directly if exe is "".
func start(c Config, exe string) (*Process, error) {
	p := &Process{
		grace:      orDefault(c.Grace, DefaultGrace),
		termWait:   orDefault(c.TermWait, DefaultTermWait),
		tailMax:    c.StderrTail,
		onLine:     c.Stderr,
		log:        logger(c.Logger),
		reaped:     make(chan struct{}),
		stderrDone: make(chan struct{}),
		done:       make(chan struct{}),
		qwake:      make(chan struct{}, 1),
	}
	if p.tailMax <= 0 {
		p.tailMax = DefaultStderrTail
	}

	// Our own pipes rather than exec's StdoutPipe and friends: exec then
	// starts no copying goroutines, so Wait never waits on a pipe that a
	// leftover grandchild holds open, and we decide when each end closes.
	var (
		child [3]*os.File // stdin read end, stdout and stderr write ends
		err   error
	)
	closeAll := func() {
		for _, f := range []*os.File{child[0], child[1], child[2], p.stdin, p.stdout, p.stderr} {
			if f != nil {
				f.Close()
			}
		}
	}
	if child[0], p.stdin, err = os.Pipe(); err == nil {
		if p.stdout, child[1], err = os.Pipe(); err == nil {
			p.stderr, child[2], err = os.Pipe()
		}
	}
	if err != nil {
		closeAll()
		return nil, fmt.Errorf("proc: creating pipes: %w", err)
	}

	if exe != "" {
		if err := p.startSupervised(c, exe, child); err != nil {
			closeAll()
			return nil, err
		}
	} else {
		p.cmd = exec.Command(c.Path, c.Args...)
		p.cmd.Env = c.Env
		p.cmd.Dir = c.Dir
		p.cmd.Stdin, p.cmd.Stdout, p.cmd.Stderr = child[0], child[1], child[2]
		p.cmd.SysProcAttr = sysProcAttr()
		if err := withCred(p.cmd.SysProcAttr, c.Cred); err != nil {
			closeAll()
			return nil, err
		}

		if err := spawn(p.cmd); err != nil {
			closeAll()
			return nil, err
		}
		p.pid = p.cmd.Process.Pid
		p.pgid = p.pid
		go p.reap(waitExitedPolled, spawned)
	}
	// The child has its copies; ours would keep the pipes from ever
	// reaching EOF.
	for _, f := range child {
		f.Close()
	}
	go p.readStderr()
	if p.onLine != nil {
		go p.deliverStderr()
	}
	return p, nil
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// reap waits for the process (the CLI, or its supervisor) to exit and
// cleans up after it. waitNoReap waits without reaping where it can;
// afterWait runs once the process is reaped.
func (p *Process) reap(waitNoReap func(int) bool, afterWait func()) {
	// Where the platform lets us see the exit without reaping, the zombie
	// leader still holds the process group ID while we kill what is left
	// of the group, so the signal cannot reach an unrelated group that
	// reused the ID. Elsewhere the group is killed right after reaping.
	held := waitNoReap(p.pgid)
	if held {
		p.markExited()
		killGroup(p.pgid)
	}
	err := p.cmd.Wait()
	afterWait()
	if !held {
		p.markExited()
		killGroup(p.pgid)
	}
	p.closeCtl()
	p.mu.Lock()
	p.status = exitStatus(p.cmd.ProcessState, err, p.sent)
	p.mu.Unlock()
	close(p.reaped)

	// Everything in the group is dead, so stderr normally ends now. A
	// process that left the group may still hold it: close our end after
	// drainWait so the reader, and Done, end anyway.
	t := time.NewTimer(drainWait)
	select {
	case <-p.stderrDone:
	case <-t.C:
		p.stderr.Close()
		<-p.stderrDone
	}
	t.Stop()

	p.mu.Lock()
	p.status.Stderr = append([]string(nil), p.tail...)
	p.mu.Unlock()
	p.qmu.Lock()
	dropped := p.dropped
	p.qmu.Unlock()
	p.mu.Lock()
	p.status.StderrDropped = dropped
	p.mu.Unlock()
	close(p.done)
}

// closeCtl closes the supervisor's control pipe, which makes it kill the
// CLI and everything the CLI started.
func (p *Process) closeCtl() {
	if p.ctl != nil {
		p.ctlOnce.Do(func() { p.ctl.Close() })
	}
}

func (p *Process) markExited() {
	p.mu.Lock()
	p.exited = true
	p.mu.Unlock()
}

// exitStatus turns the result of Wait into an ExitStatus. sent is the
// signal Close sent, if any.
func exitStatus(ps *os.ProcessState, err error, sent string) ExitStatus {
	st := ExitStatus{Code: -1, Err: err}
	if ps == nil {
		return st
	}
	st.Code = ps.ExitCode()
	if sig := exitSignal(ps); sig != "" {
		st.Signal = sig
	} else {
		st.Signal = sent
	}
	return st
}

// readStderr reads stderr a line at a time until EOF or until run closes
// the pipe.
func (p *Process) readStderr() {
	defer close(p.stderrDone)
	defer p.endQueue()
	defer p.stderr.Close()
	br := bufio.NewReaderSize(p.stderr, 16<<10)
	var line []byte
	for {
		frag, err := br.ReadSlice('\n')
		if room := maxStderrLine - len(line); room > 0 {
			line = append(line, frag[:min(len(frag), room)]...)
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if len(line) > 0 {
			p.emit(line)
			line = line[:0]
		}
		if err != nil {
			return
		}
	}
}

// emit hands one line, newline included if it had one, to the callback and
// the tail.
func (p *Process) emit(b []byte) {
	if n := len(b); n > 0 && b[n-1] == '\n' {
		b = b[:n-1]
	}
	if n := len(b); n > 0 && b[n-1] == '\r' {
		b = b[:n-1]
	}
	s := string(b)
	// The tail first: a line the callback has seen is in the tail, so a
	// caller that acts on a callback (ends a ctx, say) and then asks for
	// the tail finds it there.
	kept := truncate(s, maxTailLine)
	p.mu.Lock()
	if len(p.tail) == p.tailMax {
		copy(p.tail, p.tail[1:])
		p.tail = p.tail[:len(p.tail)-1]
	}
	p.tail = append(p.tail, kept)
	p.mu.Unlock()
	if p.onLine != nil {
		p.enqueue(s)
	}
}

// enqueue queues a line for the Stderr callback, or counts it dropped when
// the queue is full.
func (p *Process) enqueue(s string) {
	p.qmu.Lock()
	if len(p.queue) >= stderrQueueLines || (len(p.queue) > 0 && p.qbytes+len(s) > stderrQueueBytes) {
		p.dropped++
		p.qmu.Unlock()
		return
	}
	p.queue = append(p.queue, s)
	p.qbytes += len(s)
	p.qmu.Unlock()
	p.wake()
}

func (p *Process) endQueue() {
	p.qmu.Lock()
	p.qend = true
	p.qmu.Unlock()
	p.wake()
}

func (p *Process) wake() {
	select {
	case p.qwake <- struct{}{}:
	default:
	}
}

// deliverStderr passes queued lines to the Stderr callback until stderr
// has ended and the queue is empty.
func (p *Process) deliverStderr() {
	for {
		p.qmu.Lock()
		if len(p.queue) == 0 {
			end := p.qend
			p.queue = nil // let a burst's backing array go
			p.qmu.Unlock()
			if end {
				return
			}
			<-p.qwake
			continue
		}
		s := p.queue[0]
		p.queue[0] = ""
		p.queue = p.queue[1:]
		p.qbytes -= len(s)
		p.qmu.Unlock()
		p.callStderr(s)
	}
}

// callStderr calls the Stderr callback, recovering a panic.
func (p *Process) callStderr(s string) {
	defer func() {
		if r := recover(); r != nil {
			p.log.Log(context.Background(), slog.LevelError, "proc: the Stderr callback panicked", "panic", r)
		}
	}()
	p.onLine(s)
}

// truncate cuts s to at most max bytes, at a rune boundary, marking the cut.
func truncate(s string, max int) string {
	if len(s) <= max {
		return s
	}
	const mark = "…"
	cut := max - len(mark)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + mark
}

// Stdin returns the process's standard input. Close closes it first; so
// may the caller, to signal EOF early.
func (p *Process) Stdin() io.Writer { return p.stdin }

// Stdout returns the process's standard output. It reaches EOF once every
// holder of the pipe has exited (normally when the process does, since its
// group is killed then) and fails once Close has returned.
func (p *Process) Stdout() io.Reader { return p.stdout }

// PID returns the CLI's process ID. Started directly, the CLI leads its
// process group; under a supervisor the supervisor does.
func (p *Process) PID() int { return p.pid }

// Done is closed once the process has exited and been reaped and its
// stderr has been read to the end. (If a process that left the group still
// holds stderr 2 s after the exit, the rest is abandoned instead.) Every
// goroutine Start created has ended, or is about to, when Done is closed,
// except the one calling Config.Stderr, which ends once it has delivered
// the queued lines.
func (p *Process) Done() <-chan struct{} { return p.done }

// Exited is closed once the process has exited and been reaped, and its
// process group killed; unlike Done it does not wait for stderr. What the
// process wrote to Stdout before it exited may still be unread: a reader
// that stopped reading (its consumer is slow) can learn from Exited that
// nothing more will come than what the pipe holds.
func (p *Process) Exited() <-chan struct{} { return p.reaped }

// Exit returns how the process ended. It is valid once Done is closed; before
// that it returns the zero ExitStatus.
func (p *Process) Exit() ExitStatus {
	select {
	case <-p.done:
	default:
		return ExitStatus{}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	st := p.status
	st.Stderr = append([]string(nil), st.Stderr...)
	return st
}

// StderrTail returns a copy of the last stderr lines read so far.
func (p *Process) StderrTail() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.tail...)
}

// Close shuts the process down in order, each step bounded: close stdin;
// wait up to Config.Grace for it to exit; SIGTERM its process group; wait
// up to Config.TermWait; SIGKILL the group; wait for it to be reaped. Then
// it waits (briefly) for stderr to be read out and closes stdout, so a
// blocked read of Stdout returns.
//
// Close returns once the process is gone, without reporting its exit
// status (see Exit). It is idempotent and safe to call concurrently; every
// call returns after the shutdown has finished. It reports an error only
// if the process could not be ended.
func (p *Process) Close() error {
	p.closeOnce.Do(func() { p.closeErr = p.shutdown() })
	return p.closeErr
}

// Kill sends SIGKILL to the process group at once, if the process still
// runs: for a start that failed, whose Close should not wait out Grace.
func (p *Process) Kill() { p.signal(sigKill) }

func (p *Process) shutdown() error {
	var err error
	p.stdin.Close()
	if !waitFor(p.reaped, p.grace) {
		p.signal(sigTerm)
		if !waitFor(p.reaped, p.termWait) {
			p.signal(sigKill)
			if !waitFor(p.reaped, killWait) && p.supervised {
				// The supervisor did not end: kill it and the CLI too.
				p.mu.Lock()
				if !p.exited {
					killGroup(p.pgid)
				}
				p.mu.Unlock()
			}
			if !waitFor(p.reaped, killWait) {
				err = fmt.Errorf("proc: process %d still running %v after SIGKILL", p.pid, killWait)
			}
		}
	}
	if err == nil && !waitFor(p.done, drainWait+time.Second) {
		err = errors.New("proc: stderr reader did not finish (is the Stderr callback blocked?)")
	}
	p.stdout.Close()
	return err
}

// signal sends sig to the process group unless the process has already
// exited, and records it for ExitStatus.Signal.
func (p *Process) signal(sig sigKind) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.exited {
		return
	}
	if p.supervised {
		select {
		case <-p.cliGone:
			return // the supervisor is only cleaning up after it
		default:
		}
		p.sent = signalSupervised(p.pgid, sig, p.closeCtl)
		return
	}
	if name := signalGroup(p.cmd.Process, sig); name != "" {
		p.sent = name
	}
}

// waitFor reports whether ch was closed within d.
func waitFor(ch <-chan struct{}, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ch:
		return true
	case <-t.C:
		return false
	}
}

// sigKind is a step of the shutdown, mapped to a real signal per platform.
type sigKind int

const (
	sigTerm sigKind = iota
	sigKill
)
