//go:build unix && !linux

package proc

import "syscall"

// sysProcAttr puts the CLI in a process group of its own, so that
// signalling the group reaches what it spawned and a terminal's Ctrl-C
// reaches only the host. There is no parent-death signal here.
func sysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// waitExitedNoReap is not implemented here: run reaps first and then kills
// the rest of the group, leaving a tiny window in which the group ID could
// be reused.
func waitExitedNoReap(int) bool { return false }
