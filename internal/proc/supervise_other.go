//go:build !linux

package proc

import (
	"errors"
	"os"
)

// Supervision is Linux only; see the package doc.

var errNoSupervisor = errors.New("proc: no supervisor")

func supervisorPath() string { return "" }

func (p *Process) startSupervised(Config, string, [3]*os.File) error { return errNoSupervisor }

func signalSupervised(int, sigKind, func()) string { return "" }
