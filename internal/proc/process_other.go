//go:build !unix

package proc

import (
	"errors"
	"os"
	"syscall"
)

// withCred refuses Config.Cred: there are no Unix credentials here.
func withCred(_ *syscall.SysProcAttr, c *Cred) error {
	if c == nil {
		return nil
	}
	return errors.New("proc: starting a process as another user is not supported on this platform")
}

// sysProcAttr: without process groups or signals there is nothing to set.
func sysProcAttr() *syscall.SysProcAttr { return nil }

func waitExitedNoReap(int) bool { return false }

// killGroup is a no-op: there are no process groups to clean up.
func killGroup(int) {}

// signalGroup kills the process: there is no SIGTERM to send first.
func signalGroup(p *os.Process, _ sigKind) string {
	_ = p.Kill()
	return "killed"
}

func exitSignal(*os.ProcessState) string { return "" }
