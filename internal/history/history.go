// Package history reads the earlier conversation of a resumed session
// from the CLI's session file, for the backends that show it
// (host.History): serve's, from the file on disk, and the cluster's,
// from its mirror in the bus.
package history

import (
	"encoding/json"
	"errors"
	"iter"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/host"
)

// Read returns the user and assistant messages of a session file's
// entries, shaped as the CLI's stdout lines, keeping the last maxMsgs of
// them within maxBytes (the older ones are counted in Dropped; a single
// message bigger than maxBytes is dropped). A torn or unknown line is
// skipped; another error ends the reading with what was read before it.
// It returns nil when nothing was read.
func Read(entries iter.Seq2[claude.SessionEntry, error], source string, maxMsgs, maxBytes int) *host.History {
	h := &host.History{Source: source}
	size := 0
	for e, err := range entries {
		if err != nil {
			var le *claude.LineError
			if errors.As(err, &le) {
				continue
			}
			break
		}
		var typ string
		switch e := e.(type) {
		case *claude.UserEntry:
			if e.IsMeta || e.IsSidechain {
				continue
			}
			typ = "user"
		case *claude.AssistantEntry:
			if e.IsSidechain {
				continue
			}
			typ = "assistant"
		default:
			continue
		}
		var line struct {
			UUID          string          `json:"uuid"`
			Message       json.RawMessage `json:"message"`
			ToolUseResult json.RawMessage `json:"toolUseResult,omitempty"`
		}
		if json.Unmarshal(e.RawJSON(), &line) != nil || len(line.Message) == 0 {
			continue
		}
		b, err := json.Marshal(struct {
			Type          string          `json:"type"`
			UUID          string          `json:"uuid,omitempty"`
			Message       json.RawMessage `json:"message"`
			ToolUseResult json.RawMessage `json:"tool_use_result,omitempty"`
		}{typ, line.UUID, line.Message, line.ToolUseResult})
		if err != nil || len(b) > maxBytes {
			h.Dropped++
			continue
		}
		h.Messages = append(h.Messages, b)
		size += len(b)
		for len(h.Messages) > maxMsgs || size > maxBytes {
			size -= len(h.Messages[0])
			h.Messages[0] = nil
			h.Messages = h.Messages[1:]
			h.Dropped++
		}
	}
	if len(h.Messages) == 0 && h.Dropped == 0 {
		return nil
	}
	return h
}
