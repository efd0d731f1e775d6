//go:build unix

package proc

import (
	"os"
	"syscall"
)

// withCred makes a start as c's user (Config.Cred); nil changes nothing.
func withCred(a *syscall.SysProcAttr, c *Cred) error {
	if c == nil {
		return nil
	}
	a.Credential = &syscall.Credential{Uid: c.UID, Gid: c.GID, Groups: append([]uint32{}, c.Groups...)}
	return nil
}

// signalGroup sends the signal for k to the process group led by p, and to
// p itself in case it has left its group. It returns the signal's name.
func signalGroup(p *os.Process, k sigKind) string {
	sig := syscall.SIGTERM
	if k == sigKill {
		sig = syscall.SIGKILL
	}
	// Errors mean there is nothing left to signal (ESRCH), which the
	// caller learns from the process being reaped.
	_ = syscall.Kill(-p.Pid, sig)
	_ = p.Signal(sig)
	return signalName(sig)
}

// killGroup sends SIGKILL to whatever is left of the process group pgid.
func killGroup(pgid int) { _ = syscall.Kill(-pgid, syscall.SIGKILL) }

// exitSignal names the signal that ended the process, or "".
func exitSignal(ps *os.ProcessState) string {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return signalName(ws.Signal())
	}
	return ""
}

var signalNames = map[syscall.Signal]string{
	syscall.SIGABRT: "SIGABRT",
	syscall.SIGALRM: "SIGALRM",
	syscall.SIGBUS:  "SIGBUS",
	syscall.SIGFPE:  "SIGFPE",
	syscall.SIGHUP:  "SIGHUP",
	syscall.SIGILL:  "SIGILL",
	syscall.SIGINT:  "SIGINT",
	syscall.SIGKILL: "SIGKILL",
	syscall.SIGPIPE: "SIGPIPE",
	syscall.SIGQUIT: "SIGQUIT",
	syscall.SIGSEGV: "SIGSEGV",
	syscall.SIGSYS:  "SIGSYS",
	syscall.SIGTERM: "SIGTERM",
	syscall.SIGTRAP: "SIGTRAP",
	syscall.SIGUSR1: "SIGUSR1",
	syscall.SIGUSR2: "SIGUSR2",
	syscall.SIGXCPU: "SIGXCPU",
	syscall.SIGXFSZ: "SIGXFSZ",
}

// signalName returns the conventional name of sig ("SIGTERM"), or the
// system's description for signals without one here.
func signalName(sig syscall.Signal) string {
	if name, ok := signalNames[sig]; ok {
		return name
	}
	return sig.String()
}
