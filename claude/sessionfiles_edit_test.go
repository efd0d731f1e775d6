package claude_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tetherhq/tether/claude"
)

func TestSessionFileChanges(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "0b6f5c2e-1111-4222-8333-444455556666.jsonl")
	// A torn last line, as a killed CLI leaves it.
	if err := os.WriteFile(path, []byte(`{"type":"user","sessionId":"0b6f5c2e-1111-4222-8333-444455556666","message":{"role":"user","content":"hi"},"uuid":"u1","timestamp":"2026-11-23T00:00:00Z"}`+"\n"+`{"type":"assi`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := claude.RenameSessionFile(path, "  Release notes "); err != nil {
		t.Fatal(err)
	}
	if err := claude.TagSessionFile(path, "urgent"); err != nil {
		t.Fatal(err)
	}
	si, err := claude.ReadSessionInfo(path)
	if err != nil {
		t.Fatal(err)
	}
	if si.Title != "Release notes" || si.Tag != "urgent" || si.FirstPrompt != "hi" {
		t.Errorf("info = %+v", si)
	}
	if err := claude.TagSessionFile(path, ""); err != nil {
		t.Fatal(err)
	}
	if si, _ := claude.ReadSessionInfo(path); si.Tag != "" {
		t.Errorf("tag after clearing = %q", si.Tag)
	}
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 5 || !strings.Contains(lines[2], `"customTitle":"Release notes"`) || !strings.Contains(lines[2], `"sessionId":"0b6f5c2e-1111-4222-8333-444455556666"`) {
		t.Errorf("file:\n%s", b)
	}
	if err := claude.RenameSessionFile(path, " "); err == nil {
		t.Error("an empty title was accepted")
	}
	if err := claude.RenameSessionFile(filepath.Join(dir, "missing.jsonl"), "x"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}

	// Subagent transcripts, then deletion of it all.
	for _, id := range []string{"b2", "a1"} {
		p := claude.SubagentFilePath(path, id)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(`{"type":"user","sessionId":"x","message":{"role":"user","content":"sub"}}`+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ids, err := claude.ListSubagents(path)
	if err != nil || !slices.Equal(ids, []string{"a1", "b2"}) {
		t.Errorf("ListSubagents = %v, %v", ids, err)
	}
	for e, err := range claude.ReadSession(claude.SubagentFilePath(path, "a1")) {
		if ue, ok := e.(*claude.UserEntry); err != nil || !ok || ue.Raw == nil {
			t.Errorf("subagent entry %T, %v", e, err)
		}
	}
	if err := claude.DeleteSessionFile(path); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(strings.TrimSuffix(path, ".jsonl")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the session folder survived: %v", err)
	}
	if ids, err := claude.ListSubagents(path); err != nil || ids != nil {
		t.Errorf("ListSubagents after delete = %v, %v", ids, err)
	}
}
