package claude

import (
	"encoding/json"
	"sync"

	"github.com/tetherhq/tether/internal/wire"
)

// turnState tracks, from what goes in and out, whether the CLI is running
// a turn, so that Close interrupts only then: an interrupt on an idle CLI
// is not a no-op (2.1.197 cancels an in-process MCP call that had already
// finished, sending its server a stray notifications/cancelled).
//
// The CLI starts each turn with a system/init line and ends it with one
// result. Prompts sent during a turn queue, and the CLI merges all the
// queued ones into the next turn, so prompts and results do not pair up:
// instead, a turn's init marks every prompt written so far as taken, and
// after a result the CLI is idle unless prompts were written since the
// last init. A prompt written in the instant between the CLI's init and
// our reading it counts as taken; Close then skips the interrupt and the
// CLI runs that prompt's turn within CloseTimeout.
type turnState struct {
	mu       sync.Mutex
	sends    int64 // user messages written
	consumed int64 // sends taken by the turns started so far
	running  bool  // an init without its result yet
}

// sent records a user message going to the CLI.
func (t *turnState) sent() {
	t.mu.Lock()
	t.sends++
	t.mu.Unlock()
}

// unsent takes back a user message that was not written after all.
func (t *turnState) unsent() {
	t.mu.Lock()
	t.sends--
	t.consumed = min(t.consumed, t.sends)
	t.mu.Unlock()
}

// observe updates the state from one stdout line of the given type.
func (t *turnState) observe(typ string, line []byte) {
	switch typ {
	case "system":
		st, ok := wire.PeekString(line, `{"type":"system","subtype":"`)
		if !ok {
			// Another member order: system lines are few, decode it.
			var v struct {
				Subtype string `json:"subtype"`
			}
			_ = json.Unmarshal(line, &v)
			st = v.Subtype
		}
		if st != "init" {
			return
		}
		t.mu.Lock()
		t.running = true
		t.consumed = t.sends
		t.mu.Unlock()
	case "result":
		t.mu.Lock()
		if !t.running {
			// A result without an init (a local slash command): it
			// answered what was pending.
			t.consumed = t.sends
		}
		t.running = false
		t.mu.Unlock()
	}
}

// busy reports whether a turn is running or about to.
func (t *turnState) busy() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.running || t.sends > t.consumed
}
