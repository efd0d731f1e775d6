package proc

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"
)

// The supervisor.
//
// On Linux the CLI does not run as the host's child but as the child of a
// small supervisor process: the host's own executable, re-executed with
// envSupervise set, which package proc's init function turns into
// superviseMain before the host's main runs. The supervisor
//
//   - is a child subreaper (PR_SET_CHILD_SUBREAPER), so every process the
//     CLI leaves behind, whether it called setsid, double-forked or not, is
//     reparented to it rather than to init: the kernel keeps the whole tree
//     under it;
//   - holds the read end of a control pipe whose only write end is in the
//     host. The kernel closes that end however the host ends (Close,
//     os.Exit, a panic, SIGKILL), and EOF tells the supervisor to kill
//     everything;
//   - once the CLI has exited (on its own, killed by anyone) or the host is
//     gone, SIGKILLs every descendant it has until it has none left, then
//     exits with the CLI's own status (the same code, or dies of the same
//     signal), so the host's wait sees what the CLI did.
//
// It ignores SIGTERM, SIGINT, SIGHUP and SIGQUIT, which the host sends to
// the CLI's process group (the supervisor leads it), so that only the CLI
// acts on them. The CLI gets Pdeathsig SIGKILL from the supervisor's main
// thread, which lives as long as the supervisor: if the supervisor is
// itself SIGKILLed, the CLI goes too.
//
// The host never locks an OS thread for any of this: it waits for the
// supervisor through a pidfd in the runtime's poller, so a thousand
// sessions cost no thread each.

// envSupervise marks a re-executed host binary as a supervisor. Its value
// is the protocol version.
const envSupervise = "TETHER_PROC_SUPERVISE"

const superviseVersion = "1"

// handshakeWait bounds how long Start waits for the supervisor to report
// the CLI's PID. A re-executed binary that is not a Go program linking
// this package (a c-shared library's host) never answers; Start then kills
// it and starts the CLI directly.
const handshakeWait = 30 * time.Second

func init() {
	if os.Getenv(envSupervise) == "" {
		return
	}
	// From here on this process is a supervisor, never the host.
	superviseMain()
}

// superviseSpec is what the host writes on the control pipe.
type superviseSpec struct {
	Path string   `json:"path"`
	Args []string `json:"args"`
	Cred *Cred    `json:"cred,omitempty"` // Config.Cred: the CLI's, not the supervisor's
}

// superviseReply is the supervisor's one status line.
type superviseReply struct {
	PID   int    `json:"pid,omitempty"`
	Errno int    `json:"errno,omitempty"`
	Err   string `json:"err,omitempty"`
	// Exited, on a line of its own, says the CLI has exited.
	Exited bool `json:"exited,omitempty"`
}

const (
	prSetName           = 15
	prSetChildSubreaper = 36
	sysPidfdOpen        = 434 // the same number on every Linux architecture
	pPIDFD              = 3   // P_PIDFD for waitid
)

// superviseMain runs the supervisor; it never returns. fd 3 is the control
// pipe (read end), fd 4 the status pipe (write end); 0, 1 and 2 are the
// CLI's.
func superviseMain() {
	runtime.LockOSThread() // the main thread: it forks the CLI (Pdeathsig)
	os.Unsetenv(envSupervise)
	debug.SetGCPercent(400) // a tiny heap; collecting it often is waste
	syscall.CloseOnExec(3)
	syscall.CloseOnExec(4)
	ctl := os.NewFile(3, "control")
	status := os.NewFile(4, "status")

	ignored := make(chan os.Signal, 8)
	signal.Notify(ignored, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT)
	go func() {
		for range ignored {
		}
	}()

	br := bufio.NewReader(ctl)
	var spec superviseSpec
	if err := json.NewDecoder(io.LimitReader(br, 1<<30)).Decode(&spec); err != nil {
		fmt.Fprintf(os.Stderr, "tether supervisor: reading the spec: %v\n", err)
		syscall.Exit(125)
	}
	name := []byte("tether-sup\x00") // ps and top show this, not "exe"
	syscall.RawSyscall(syscall.SYS_PRCTL, prSetName, uintptr(unsafe.Pointer(&name[0])), 0)
	if _, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); e != 0 {
		// No answer: the host starts the CLI directly instead.
		fmt.Fprintf(os.Stderr, "tether supervisor: PR_SET_CHILD_SUBREAPER: %v\n", e)
		syscall.Exit(125)
	}

	cmd := exec.Command(spec.Path, spec.Args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	// The supervisor keeps the host's identity, so it can still kill all
	// the CLI leaves behind; only the CLI changes user. The runtime sets
	// Pdeathsig after the credentials (a change of user clears it).
	withCred(cmd.SysProcAttr, spec.Cred)
	if err := cmd.Start(); err != nil {
		r := superviseReply{Err: err.Error()}
		var errno syscall.Errno
		if errors.As(err, &errno) {
			r.Errno = int(errno)
		}
		reply(status, r)
		syscall.Exit(127)
	}
	cli := cmd.Process.Pid
	reply(status, superviseReply{PID: cli})
	// The CLI has its stdin and stdout; ours would keep the host from
	// seeing EOF until we exit. Stderr stays, for our own last words.
	if null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0); err == nil {
		syscall.Dup3(int(null.Fd()), 0, 0)
		syscall.Dup3(int(null.Fd()), 1, 0)
		null.Close()
	}

	// Reap everything: the CLI, and every orphan the kernel hands us.
	cliDone := make(chan syscall.WaitStatus, 1)
	reaped := make(chan struct{}, 1)
	noChildren := make(chan struct{})
	go func() {
		for {
			var ws syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &ws, 0, nil)
			if err == syscall.EINTR {
				continue
			}
			if err != nil {
				close(noChildren)
				return
			}
			if pid == cli {
				cliDone <- ws
			}
			select {
			case reaped <- struct{}{}:
			default:
			}
		}
	}()
	hostGone := make(chan struct{})
	go func() {
		io.Copy(io.Discard, br) // the host never writes more: this ends at EOF
		close(hostGone)
	}()

	var ws syscall.WaitStatus
	select {
	case ws = <-cliDone:
	case <-hostGone:
		syscall.Kill(cli, syscall.SIGKILL)
		ws = <-cliDone
	}
	// The CLI is gone: the host must not count the signals it sends while
	// we clean up as ending it.
	reply(status, superviseReply{Exited: true})
	status.Close()
	self := os.Getpid()
	tick := time.NewTicker(20 * time.Millisecond)
	for {
		killDescendants(self)
		select {
		case <-noChildren:
			exitLike(ws)
		case <-reaped:
		case <-tick.C:
		}
	}
}

func reply(w io.Writer, r superviseReply) {
	b, _ := json.Marshal(r)
	w.Write(append(b, '\n'))
}

// killDescendants SIGKILLs every process below self, found by walking
// /proc: the kernel reparents what a killed process leaves to us (we are a
// subreaper), so repeating this until we have no children kills the tree.
func killDescendants(self int) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return
	}
	kids := make(map[int][]int)
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ppid, ok := parentOf(pid); ok {
			kids[ppid] = append(kids[ppid], pid)
		}
	}
	queue := append([]int(nil), kids[self]...)
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		syscall.Kill(pid, syscall.SIGKILL)
		queue = append(queue, kids[pid]...)
	}
}

// parentOf returns the parent PID of pid from /proc/pid/stat.
func parentOf(pid int) (int, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')') // the command name may hold anything
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(s[i+1:]) // state, ppid, …
	if len(f) < 2 {
		return 0, false
	}
	ppid, err := strconv.Atoi(f[1])
	return ppid, err == nil
}

// exitLike ends the supervisor the way the CLI ended: the same exit code,
// or death by the same signal. syscall.Exit skips the runtime's exit hooks
// (a race-enabled binary would otherwise sleep a second).
func exitLike(ws syscall.WaitStatus) {
	if ws.Exited() {
		syscall.Exit(ws.ExitStatus())
	}
	sig := ws.Signal()
	if ws.Signaled() && sig != syscall.SIGKILL && sig != syscall.SIGSTOP {
		// No core file of ours in the CLI's name.
		syscall.Setrlimit(syscall.RLIMIT_CORE, &syscall.Rlimit{})
		// SIG_DFL, so the runtime's handler does not turn it into an exit
		// code: an all-zero struct sigaction is SIG_DFL on every layout.
		var act [8]uint64
		syscall.RawSyscall6(syscall.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(&act)), 0, 8, 0, 0)
	}
	if ws.Signaled() {
		syscall.Kill(os.Getpid(), sig)
		time.Sleep(time.Second) // delivery is immediate; this never runs out
	}
	syscall.Exit(128 + int(sig))
}

// supervisorPath returns the executable to re-execute as the supervisor,
// or "" when supervision is off or impossible.
func supervisorPath() string {
	if os.Getenv(envNoSupervisor) != "" {
		return ""
	}
	// Only a Go program of our own can be a supervisor: a c-shared or
	// c-archive build runs inside some other executable.
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "-buildmode" && s.Value != "exe" && s.Value != "pie" {
				return ""
			}
		}
	}
	if _, err := os.Stat("/proc/self/exe"); err != nil {
		return ""
	}
	return "/proc/self/exe"
}

// errNoSupervisor says the supervisor could not be started; Start then
// starts the CLI directly.
var errNoSupervisor = errors.New("proc: no supervisor")

// startSupervised starts the supervisor with the CLI's pipes (child) and
// has it start the CLI. It returns errNoSupervisor (wrapped) when
// supervision failed and a direct start should be tried instead, or the
// CLI's own start error.
func (p *Process) startSupervised(c Config, exe string, child [3]*os.File) error {
	ctlR, ctlW, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("%w: %v", errNoSupervisor, err)
	}
	stR, stW, err := os.Pipe()
	if err != nil {
		ctlR.Close()
		ctlW.Close()
		return fmt.Errorf("%w: %v", errNoSupervisor, err)
	}
	env := c.Env
	if env == nil {
		env = os.Environ()
	}
	cmd := &exec.Cmd{
		Path:        exe,
		Args:        []string{"tether-supervise " + filepath.Base(c.Path)},
		Env:         append(env[:len(env):len(env)], envSupervise+"="+superviseVersion),
		Dir:         c.Dir,
		Stdin:       child[0],
		Stdout:      child[1],
		Stderr:      child[2],
		ExtraFiles:  []*os.File{ctlR, stW},
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true},
	}
	err = cmd.Start()
	ctlR.Close()
	stW.Close()
	if err != nil {
		ctlW.Close()
		stR.Close()
		return fmt.Errorf("%w: %v", errNoSupervisor, err)
	}
	fail := func(err error) error {
		ctlW.Close()
		stR.Close()
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
		return err
	}

	deadline := time.Now().Add(handshakeWait)
	ctlW.SetWriteDeadline(deadline)
	stR.SetReadDeadline(deadline)
	spec, _ := json.Marshal(superviseSpec{Path: c.Path, Args: c.Args, Cred: c.Cred})
	if _, err := ctlW.Write(spec); err != nil {
		return fail(fmt.Errorf("%w: sending the spec: %v", errNoSupervisor, err))
	}
	br := bufio.NewReader(stR)
	line, err := br.ReadBytes('\n')
	var r superviseReply
	if err != nil || json.Unmarshal(line, &r) != nil || (r.PID <= 0 && r.Err == "") {
		return fail(fmt.Errorf("%w: no answer (%v)", errNoSupervisor, err))
	}
	if r.PID <= 0 {
		stR.Close()
		ctlW.Close()
		cmd.Wait() // it exits at once after reporting
		if r.Errno != 0 {
			return &fs.PathError{Op: "fork/exec", Path: c.Path, Err: syscall.Errno(r.Errno)}
		}
		return fmt.Errorf("proc: starting %s: %s", c.Path, r.Err)
	}
	p.cmd = cmd
	p.pid = r.PID
	p.pgid = cmd.Process.Pid
	p.ctl = ctlW
	p.supervised = true
	p.cliGone = make(chan struct{})
	stR.SetReadDeadline(time.Time{})
	go func() {
		// The next line says the CLI exited; EOF, that the supervisor did.
		br.ReadBytes('\n')
		stR.Close()
		close(p.cliGone)
	}()
	go p.reap(waitExitedPolled, func() {})
	return nil
}

// waitExitedPolled is waitExitedNoReap without a blocked thread: it parks
// the goroutine on a pidfd in the runtime's poller, which makes the pidfd
// readable when the process exits. Without pidfds (Linux before 5.3) it
// blocks a thread, as waitExitedNoReap does.
func waitExitedPolled(pid int) bool {
	fd, _, e := syscall.RawSyscall(sysPidfdOpen, uintptr(pid), 0, 0)
	if e != 0 {
		return waitExitedNoReap(pid)
	}
	if err := syscall.SetNonblock(int(fd), true); err != nil {
		syscall.Close(int(fd))
		return waitExitedNoReap(pid)
	}
	f := os.NewFile(fd, "pidfd")
	defer f.Close()
	rc, err := f.SyscallConn()
	if err != nil {
		return waitExitedNoReap(pid)
	}
	var exited, failed bool
	err = rc.Read(func(fd uintptr) bool {
		var info [16]uint64 // a siginfo_t is 128 bytes
		_, _, e := syscall.Syscall6(syscall.SYS_WAITID, pPIDFD, fd,
			uintptr(unsafe.Pointer(&info)), syscall.WEXITED|syscall.WNOWAIT|syscall.WNOHANG, 0, 0)
		switch {
		case e == syscall.EINTR:
			return false
		case e == syscall.EAGAIN:
			return false
		case e != 0:
			failed = true
			return true
		}
		// si_signo is SIGCHLD once the process has exited, 0 before.
		exited = *(*int32)(unsafe.Pointer(&info[0])) == int32(syscall.SIGCHLD)
		return exited
	})
	if err != nil || failed {
		return waitExitedNoReap(pid)
	}
	return exited
}

// signalSupervised is Close's signal step under a supervisor: SIGTERM goes
// to the process group (the supervisor ignores it, the CLI acts on it);
// instead of SIGKILL, which would end the supervisor before it could clean
// up, the control pipe is closed, and the supervisor SIGKILLs the CLI and
// everything below it.
func signalSupervised(pgid int, k sigKind, closeCtl func()) string {
	if k == sigKill {
		closeCtl()
		return "SIGKILL"
	}
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	return "SIGTERM"
}
