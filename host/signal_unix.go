//go:build unix

package host

import "syscall"

func signalInterrupt(pid int) error { return syscall.Kill(pid, syscall.SIGINT) }

func signalKill(pid int) error { return syscall.Kill(pid, syscall.SIGKILL) }
