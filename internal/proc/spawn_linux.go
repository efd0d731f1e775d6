package proc

import (
	"os/exec"
	"runtime"
	"sync"
)

// The spawner thread.
//
// A direct start on Linux gives the CLI Pdeathsig SIGKILL, which the
// kernel sends when the OS thread that forked the child exits, not the
// host process (go.dev/issue/27505); the runtime ends a thread whenever a
// goroutine locked to it exits while still locked. So every direct start
// forks from one goroutine that holds its OS thread locked for as long as
// any CLI it forked is alive: no other goroutine runs on that thread, and
// the runtime never ends a thread whose goroutine lives. When the last of
// its CLIs has been reaped the goroutine exits, still locked, and the
// thread ends with it (harmlessly: it has no live children). One thread
// for all CLIs, not one each, so sessions never run the host into Go's
// thread limit.

var spawner struct {
	mu   sync.Mutex
	live int               // CLIs forked and not yet reaped, plus pending forks
	reqs chan spawnRequest // nil while no spawner goroutine runs
}

type spawnRequest struct {
	cmd  *exec.Cmd
	done chan error
}

// spawn starts cmd from the spawner thread. A nil error must be followed,
// once the process has been reaped, by spawned.
func spawn(cmd *exec.Cmd) error {
	spawner.mu.Lock()
	spawner.live++
	if spawner.reqs == nil {
		spawner.reqs = make(chan spawnRequest)
		go spawnLoop(spawner.reqs)
	}
	reqs := spawner.reqs
	spawner.mu.Unlock()
	r := spawnRequest{cmd: cmd, done: make(chan error, 1)}
	reqs <- r
	err := <-r.done
	if err != nil {
		spawned()
	}
	return err
}

// spawned says a process spawn started has been reaped (or never started).
func spawned() {
	spawner.mu.Lock()
	spawner.live--
	if spawner.live == 0 && spawner.reqs != nil {
		close(spawner.reqs) // the loop exits, and its thread with it
		spawner.reqs = nil
	}
	spawner.mu.Unlock()
}

func spawnLoop(reqs <-chan spawnRequest) {
	runtime.LockOSThread() // never unlocked: the thread ends with the loop
	for r := range reqs {
		r.done <- r.cmd.Start()
	}
}
