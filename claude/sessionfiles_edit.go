package claude

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Changing session files on disk, as the TypeScript SDK's renameSession,
// tagSession, deleteSession, listSubagents and getSubagentMessages do:
// by appending the entries the CLI itself writes, so the CLI, Tether and
// the official SDKs all read the result. They take a session file's path
// (SessionFilePath, or SessionInfo.Path from ListSessions). Do not change
// the file of a session a running CLI is writing: its appends and yours
// may interleave.

// TagEntry records a session's tag ("" clears it).
type TagEntry struct {
	BookkeepingMeta
	Tag string `json:"tag"`
}

func (*TagEntry) isSessionEntry() {}

// RenameSessionFile sets the title of the session whose file is path, by
// appending a custom-title entry (RenameSession does the same for a
// running session).
func RenameSessionFile(path, title string) error {
	title = strings.TrimSpace(title)
	if title == "" {
		return errors.New("claude: RenameSessionFile: empty title")
	}
	return appendSessionEntry(path, map[string]any{"type": "custom-title", "customTitle": title})
}

// TagSessionFile tags the session whose file is path; "" clears the tag.
// SessionInfo.Tag reports it.
func TagSessionFile(path, tag string) error {
	return appendSessionEntry(path, map[string]any{"type": "tag", "tag": strings.TrimSpace(tag)})
}

// appendSessionEntry appends one entry with the session's id, a fresh
// uuid and the time, on a line of its own even after a torn last line.
func appendSessionEntry(path string, entry map[string]any) error {
	id := strings.TrimSuffix(filepath.Base(path), ".jsonl")
	if !strings.HasSuffix(path, ".jsonl") || id == "" {
		return fmt.Errorf("claude: %s is not a session file (.jsonl)", path)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND, 0)
	if err != nil {
		return fmt.Errorf("claude: session file: %w", err)
	}
	defer f.Close()
	entry["sessionId"] = id
	entry["uuid"] = newUUID()
	entry["timestamp"] = time.Now().UTC().Format(time.RFC3339Nano)
	line, err := json.Marshal(entry)
	if err != nil {
		return err
	}
	if fi, err := f.Stat(); err == nil && fi.Size() > 0 {
		last := make([]byte, 1)
		if _, err := f.ReadAt(last, fi.Size()-1); err == nil && last[0] != '\n' {
			line = append([]byte{'\n'}, line...)
		}
	}
	if _, err := f.Write(append(line, '\n')); err != nil {
		return fmt.Errorf("claude: session file: %w", err)
	}
	return f.Close()
}

// DeleteSessionFile deletes a session: its file and the folder next to it
// (<id>/, with subagent transcripts and the CLI's sidecar files). A
// missing file is an error wrapping fs.ErrNotExist.
func DeleteSessionFile(path string) error {
	if !strings.HasSuffix(path, ".jsonl") {
		return fmt.Errorf("claude: %s is not a session file (.jsonl)", path)
	}
	if err := os.Remove(path); err != nil {
		return fmt.Errorf("claude: session file: %w", err)
	}
	if err := os.RemoveAll(strings.TrimSuffix(path, ".jsonl")); err != nil {
		return fmt.Errorf("claude: session folder: %w", err)
	}
	return nil
}

// ListSubagents lists the ids of the subagents whose transcripts the
// session at path kept (<id>/subagents/agent-<agent id>.jsonl), sorted.
// Read one with ReadSession(SubagentFilePath(path, id)). A session
// without subagents has none (nil, no error).
func ListSubagents(path string) ([]string, error) {
	dir := filepath.Join(strings.TrimSuffix(path, ".jsonl"), "subagents")
	var ids []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, os.ErrNotExist) && p == dir {
				return filepath.SkipAll
			}
			return err
		}
		if d.IsDir() && p != dir {
			return filepath.SkipDir // nested agents' folders: not listed yet
		}
		name := d.Name()
		if !d.IsDir() && strings.HasPrefix(name, "agent-") && strings.HasSuffix(name, ".jsonl") {
			ids = append(ids, strings.TrimSuffix(strings.TrimPrefix(name, "agent-"), ".jsonl"))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("claude: subagent transcripts: %w", err)
	}
	sort.Strings(ids)
	return ids, nil
}

// SubagentFilePath is the transcript of subagent agentID of the session
// at path. Its entries carry the subagent's conversation; the Agent tool
// call that started it is in the session's own file.
func SubagentFilePath(path, agentID string) string {
	return filepath.Join(strings.TrimSuffix(path, ".jsonl"), "subagents", "agent-"+agentID+".jsonl")
}

// newUUID returns a random (version 4) UUID.
func newUUID() string {
	var b [16]byte
	_, _ = io.ReadFull(rand.Reader, b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
