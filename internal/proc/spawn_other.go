//go:build !linux

package proc

import "os/exec"

// Without Pdeathsig any thread may fork.
func spawn(cmd *exec.Cmd) error { return cmd.Start() }

func spawned() {}

func waitExitedPolled(pid int) bool { return waitExitedNoReap(pid) }
