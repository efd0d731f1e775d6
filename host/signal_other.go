//go:build !unix

package host

import "errors"

var errNoSignals = errors.New("host: signals are not supported on this platform")

func signalInterrupt(pid int) error { return errNoSignals }

func signalKill(pid int) error { return errNoSignals }
