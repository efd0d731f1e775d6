package proc

import (
	"syscall"
	"unsafe"
)

// sysProcAttr puts the CLI in a process group of its own, so that
// signalling the group reaches what it spawned and a terminal's Ctrl-C
// reaches only the host, which then shuts the CLI down in order; and makes
// the kernel kill it if the host dies (see spawn_linux.go for the thread
// caveat).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

const pPID = 1 // P_PID for waitid

// waitExitedNoReap blocks until the process pid has exited, leaving it a
// zombie (waitid with WNOWAIT), and reports whether it could. The zombie
// keeps its PID, and so its process group ID, from being reused until it
// is reaped. os does the same before reaping (blockUntilWaitable).
func waitExitedNoReap(pid int) bool {
	var info [16]uint64 // a siginfo_t is 128 bytes
	for {
		_, _, e := syscall.Syscall6(syscall.SYS_WAITID, pPID, uintptr(pid),
			uintptr(unsafe.Pointer(&info)), syscall.WEXITED|syscall.WNOWAIT, 0, 0)
		if e == syscall.EINTR {
			continue
		}
		// ENOSYS (some sandboxes) or anything else: reap first instead.
		return e == 0
	}
}
