package claude

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"iter"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/tetherhq/tether/internal/wire"
)

// Session files: the CLI keeps each session's transcript as a JSON Lines
// file, <config dir>/projects/<project>/<session id>.jsonl, where
// <project> is the session's working directory with every character but
// ASCII letters and digits replaced by "-". The functions here read them
// in Go, without starting the CLI: list the sessions of a directory (to
// offer Options.Resume), and read one back.
//
// The lines are the CLI's internal format, not stream-json: camelCase
// envelope fields (parentUuid, sessionId, toolUseResult), linked by
// parentUuid, interleaved with bookkeeping lines (titles, queue
// operations, file checkpoints). The format is not a public contract of
// the CLI; ReadSession types what CLI 2.1.197 and 2.1.330 write and keeps
// everything else as *UnknownEntry.

// EnvConfigDir names the environment variable that moves the CLI's
// configuration directory (settings, credentials, session files) away
// from $HOME/.claude.
const EnvConfigDir = "CLAUDE_CONFIG_DIR"

// ConfigDir returns the CLI's configuration directory for this process's
// environment: $CLAUDE_CONFIG_DIR when set, else $HOME/.claude. A session
// started with Options.Env setting HOME or CLAUDE_CONFIG_DIR uses that
// directory instead.
func ConfigDir() (string, error) {
	if d := os.Getenv(EnvConfigDir); d != "" {
		return d, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("claude: locating the CLI's config directory: %w", err)
	}
	return filepath.Join(home, ".claude"), nil
}

// maxProjectName is where the CLI cuts a long project folder name and
// appends a hash of the whole path.
const maxProjectName = 200

// projectName is the CLI's folder name for a working directory: every
// UTF-16 code unit that is not an ASCII letter or digit becomes "-"
// (the CLI's JavaScript replaces /[^a-zA-Z0-9]/g, so a character outside
// the Basic Multilingual Plane becomes two), cut at 200 characters with a
// hash of the path appended.
func projectName(cwd string) string {
	var b strings.Builder
	for _, r := range cwd {
		switch {
		case r < 0x80 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'):
			b.WriteRune(r)
		case r >= 0x10000:
			b.WriteString("--")
		default:
			b.WriteByte('-')
		}
	}
	name := b.String()
	if len(name) <= maxProjectName {
		return name
	}
	return name[:maxProjectName] + "-" + strconv.FormatInt(pathHash(cwd), 36)
}

// pathHash is the CLI's 32-bit string hash (h = h*31 + c over UTF-16 code
// units), made non-negative as JavaScript's Math.abs does.
func pathHash(s string) int64 {
	var h int32
	for _, u := range utf16.Encode([]rune(s)) {
		h = h*31 + int32(u)
	}
	return abs64(int64(h))
}

func abs64(n int64) int64 {
	if n < 0 {
		return -n
	}
	return n
}

// physicalPath returns dir made absolute, with symbolic links resolved
// when it exists: the CLI names a session's folder after its working
// directory as the operating system reports it, which has no links.
func physicalPath(dir string) string {
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	return dir
}

// ProjectDir returns the folder in which the CLI keeps the session files
// of sessions run in cwd: <configDir>/projects/<cwd with every character
// but ASCII letters and digits replaced by "-">. cwd is made absolute and
// its symbolic links resolved first, as the CLI sees its working
// directory. Get configDir from ConfigDir.
func ProjectDir(configDir, cwd string) string {
	return filepath.Join(configDir, "projects", projectName(physicalPath(cwd)))
}

// SessionFilePath returns the path of the session file of the session
// with the given id run in cwd (see ProjectDir).
func SessionFilePath(configDir, cwd, sessionID string) string {
	return filepath.Join(ProjectDir(configDir, cwd), sessionID+".jsonl")
}

// ListSessionsOptions configures ListSessions. The zero value lists every
// session of the directory from the default config directory.
type ListSessionsOptions struct {
	// ConfigDir is the CLI's configuration directory; "" means
	// ConfigDir().
	ConfigDir string
	// Limit caps the number of sessions returned (the most recent ones);
	// 0 means all.
	Limit int
	// Offset skips that many of the most recent sessions first, for
	// paging with Limit.
	Offset int
	// IncludeWorktrees adds the sessions of every git worktree of dir's
	// repository (found from the repository's own files; git is not run).
	IncludeWorktrees bool
	// ExcludeProgrammatic leaves out sessions started by an SDK (an
	// sdk-* entrypoint, Tether's included) or a daemon, as the CLI's own
	// /resume does.
	ExcludeProgrammatic bool
}

// SessionInfo describes a session file.
type SessionInfo struct {
	// ID is the session id, for Options.Resume.
	ID   string
	Path string
	// ModTime is when the file last changed: the session's last activity.
	ModTime time.Time
	Size    int64
	// CreatedAt is the time of the file's first timestamped entry.
	CreatedAt time.Time

	// Title is the session's title: the last one set by RenameSession, or
	// else one the CLI generated; "" when it has none.
	Title string
	// Tag is the session's tag (TagSessionFile); "" when none.
	Tag string
	// Archived reports a session archived with ArchiveSession (or by the
	// CLI) and not prompted since.
	Archived bool
	// Summary is the last summary the CLI wrote (older CLIs write one when
	// a conversation is compacted or resumed).
	Summary string
	// FirstPrompt is the text of the first prompt a user typed, and
	// LastPrompt of the latest (tool results, slash commands and
	// CLI-generated messages are skipped).
	FirstPrompt string
	LastPrompt  string

	// Cwd, GitBranch and Version are the working directory, git branch and
	// CLI version of the last entry that recorded them.
	Cwd       string
	GitBranch string
	Version   string
	// Entrypoint is how the CLI that wrote the session was started
	// ("cli", "sdk-go", "sdk-ts", …), as its first entry recorded it.
	Entrypoint string
}

// Programmatic reports a session an SDK or a daemon started, which the
// CLI's own /resume does not list.
func (si *SessionInfo) Programmatic() bool {
	return strings.HasPrefix(si.Entrypoint, "sdk-") || strings.HasPrefix(si.Entrypoint, "daemon")
}

// DisplayTitle is what a session picker would show: Title, else Summary,
// else FirstPrompt.
func (si *SessionInfo) DisplayTitle() string {
	for _, s := range []string{si.Title, si.Summary, si.FirstPrompt} {
		if s != "" {
			return s
		}
	}
	return ""
}

// ListSessions lists the sessions the CLI ran in dir (a project's working
// directory, as given to Options.Cwd), most recently active first. It
// reads the session files only; no CLI is started.
// With dir "" it lists the sessions of every project.
//
// A directory with no sessions yields an empty list and no error. A file
// that cannot be read is skipped; its error is joined into the returned
// error, next to the sessions that could be read.
func ListSessions(dir string, opts *ListSessionsOptions) ([]SessionInfo, error) {
	var o ListSessionsOptions
	if opts != nil {
		o = *opts
	}
	if o.ConfigDir == "" {
		d, err := ConfigDir()
		if err != nil {
			return nil, err
		}
		o.ConfigDir = d
	}
	var folders []string
	if dir == "" {
		ents, err := os.ReadDir(filepath.Join(o.ConfigDir, "projects"))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		for _, e := range ents {
			if e.IsDir() {
				folders = append(folders, filepath.Join(o.ConfigDir, "projects", e.Name()))
			}
		}
	} else {
		dirs := []string{dir}
		if o.IncludeWorktrees {
			dirs = append(dirs, gitWorktrees(dir)...)
		}
		for _, d := range dirs {
			fl, err := projectFolders(o.ConfigDir, d)
			if err != nil {
				return nil, err
			}
			for _, f := range fl {
				if !slices.Contains(folders, f) {
					folders = append(folders, f)
				}
			}
		}
	}
	var (
		out  []SessionInfo
		errs []error
	)
	for _, folder := range folders {
		ents, err := os.ReadDir(folder)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			}
			continue
		}
		for _, e := range ents {
			name := e.Name()
			if e.IsDir() || !strings.HasSuffix(name, ".jsonl") {
				continue
			}
			info, err := ReadSessionInfo(filepath.Join(folder, name))
			if err != nil {
				errs = append(errs, err)
				continue
			}
			if o.ExcludeProgrammatic && info.Programmatic() {
				continue
			}
			out = append(out, *info)
		}
	}
	slices.SortStableFunc(out, func(a, b SessionInfo) int {
		if c := b.ModTime.Compare(a.ModTime); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	if o.Offset > 0 {
		out = out[min(o.Offset, len(out)):]
	}
	if o.Limit > 0 && len(out) > o.Limit {
		out = out[:o.Limit]
	}
	if out == nil {
		out = []SessionInfo{}
	}
	return out, errors.Join(errs...)
}

// projectFolders returns the folders that may hold dir's sessions: the
// one its physical path names and, when that differs, the one its path
// as given names. A name cut for length ends in a hash the CLI computes
// with its runtime's hash function in some places, so for those every
// folder with the same cut prefix counts.
func projectFolders(configDir, dir string) ([]string, error) {
	projects := filepath.Join(configDir, "projects")
	var names []string
	for _, p := range []string{physicalPath(dir), dir} {
		if n := projectName(p); !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	var out []string
	for _, n := range names {
		if len(n) <= maxProjectName {
			out = append(out, filepath.Join(projects, n))
			continue
		}
		ents, err := os.ReadDir(projects)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			return nil, err
		}
		cut := n[:maxProjectName+1]
		for _, e := range ents {
			if e.IsDir() && strings.HasPrefix(e.Name(), cut) {
				if f := filepath.Join(projects, e.Name()); !slices.Contains(out, f) {
					out = append(out, f)
				}
			}
		}
	}
	return out, nil
}

// ReadSessionInfo reads the summary of one session file.
func ReadSessionInfo(path string) (*SessionInfo, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("claude: session file: %w", err)
	}
	info := &SessionInfo{
		ID:      strings.TrimSuffix(filepath.Base(path), ".jsonl"),
		Path:    path,
		ModTime: fi.ModTime(),
		Size:    fi.Size(),
	}
	var customTitle, aiTitle string
	var lastPromptAt time.Time // for Archived
	for e, err := range ReadSession(path) {
		if err != nil {
			var le *LineError
			if errors.As(err, &le) {
				continue // a torn last line, say: the rest still counts
			}
			return nil, err
		}
		if m := entryMeta(e); m != nil {
			if info.CreatedAt.IsZero() && !m.Timestamp.IsZero() {
				info.CreatedAt = m.Timestamp
			}
			if m.Cwd != "" {
				info.Cwd = m.Cwd
			}
			if m.GitBranch != "" {
				info.GitBranch = m.GitBranch
			}
			if m.Version != "" {
				info.Version = m.Version
			}
			if info.Entrypoint == "" {
				info.Entrypoint = m.Entrypoint
			}
		}
		switch e := e.(type) {
		case *UserEntry:
			if p := e.prompt(); p != "" {
				if info.FirstPrompt == "" {
					info.FirstPrompt = p
				}
				info.LastPrompt = p
				lastPromptAt = e.Timestamp
			}
		case *QueueOperationEntry:
			if info.CreatedAt.IsZero() && !e.Timestamp.IsZero() {
				info.CreatedAt = e.Timestamp
			}
		case *CustomTitleEntry:
			customTitle = e.Title
		case *TagEntry:
			info.Tag = e.Tag
		case *AITitleEntry:
			aiTitle = e.Title
		case *SummaryEntry:
			info.Summary = e.Summary
		case *LastPromptEntry:
			if e.Prompt != "" {
				info.LastPrompt = e.Prompt
			}
		}
	}
	if customTitle == "" {
		customTitle = sidecarTitle(path)
	}
	info.Title = customTitle
	if info.Title == "" {
		info.Title = aiTitle
	}
	info.Archived = archivedState(path, lastPromptAt)
	return info, nil
}

// sidecarTitle reads the title CLI 2.1.330 also keeps next to the session
// file, in <id>/custom-title.json.
func sidecarTitle(path string) string {
	b, err := os.ReadFile(filepath.Join(strings.TrimSuffix(path, ".jsonl"), "custom-title.json"))
	if err != nil {
		return ""
	}
	var t struct {
		CustomTitle string `json:"customTitle"`
	}
	if unmarshal(b, &t) != nil {
		return ""
	}
	return t.CustomTitle
}

// ReadSession reads a session file's entries in file order. The iterator
// is single-use.
//
// A line that is not a JSON object yields a *LineError (Line is its line
// number) and reading goes on: a CLI killed mid-write leaves a torn last
// line. Failing to open or read the file yields that error and ends the
// iteration. Lines of types this version of Tether does not know, and
// known types whose fields have unexpected JSON types, are *UnknownEntry.
func ReadSession(path string) iter.Seq2[SessionEntry, error] {
	return func(yield func(SessionEntry, error) bool) {
		f, err := os.Open(path)
		if err != nil {
			yield(nil, fmt.Errorf("claude: session file: %w", err))
			return
		}
		defer f.Close()
		readSession(f, path, yield)
	}
}

// ReadSessionFrom is ReadSession on a session file's bytes read from r:
// one copied elsewhere (a cluster's mirror of it, an archive). Reading
// ends at io.EOF; another error of r is yielded and ends it.
func ReadSessionFrom(r io.Reader) iter.Seq2[SessionEntry, error] {
	return func(yield func(SessionEntry, error) bool) {
		readSession(r, "a session file", yield)
	}
}

// readSession yields the entries of the session file read from f (name
// says which, in errors).
func readSession(f io.Reader, name string, yield func(SessionEntry, error) bool) {
	r := wire.NewReader(f, 0)
	for {
		line, err := r.ReadLine()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return
			}
			if errors.Is(err, ErrLineTooLong) {
				if !yield(nil, lineError(r.Lines(), nil, err)) {
					return
				}
				continue
			}
			yield(nil, fmt.Errorf("claude: reading %s: %w", name, err))
			return
		}
		e, err := DecodeSessionEntry(line)
		if err != nil {
			err = lineError(r.Lines(), line, fmt.Errorf("not a JSON object: %w", err))
		}
		if !yield(e, err) {
			return
		}
	}
}

// SessionEntry is one line of a session file, decoded. It is one of:
//
//   - *UserEntry: a prompt, a tool's result, or a message the CLI added
//     (IsMeta)
//   - *AssistantEntry: one content block of the model's answer
//   - *SystemEntry: a CLI notice (compaction boundary, local command
//     output, API error…)
//   - *AttachmentEntry: context the CLI attached to the conversation
//     (skill and agent listings, file contents, hook output…)
//   - *SummaryEntry, *CustomTitleEntry, *AITitleEntry, *LastPromptEntry:
//     what session pickers show
//   - *QueueOperationEntry: a prompt entering or leaving the CLI's queue
//   - *FileHistorySnapshotEntry: a file checkpoint (RewindFiles)
//   - *UnknownEntry: any other line, kept raw.
//
// Every entry keeps its line (RawJSON).
type SessionEntry interface {
	// RawJSON returns the line the entry was decoded from.
	RawJSON() json.RawMessage
	isSessionEntry()
}

// EntryMeta holds what the conversation entries (user, assistant, system,
// attachment) carry.
type EntryMeta struct {
	UUID string `json:"uuid"`
	// ParentUUID links the entry to the one before it in the
	// conversation; "" for the first. Entries of abandoned branches stay
	// in the file, so file order and conversation order can differ.
	ParentUUID string    `json:"parentUuid"`
	SessionID  string    `json:"sessionId"`
	Timestamp  time.Time `json:"timestamp"`
	// IsSidechain marks a subagent's entry.
	IsSidechain bool   `json:"isSidechain"`
	Cwd         string `json:"cwd"`
	GitBranch   string `json:"gitBranch"`
	// Version is the version of the CLI that wrote the entry.
	Version string `json:"version"`
	// Entrypoint is how the CLI was started ("cli", "sdk-go", …).
	Entrypoint string `json:"entrypoint"`

	Raw json.RawMessage `json:"-"`
}

// RawJSON returns the line the entry was decoded from.
func (m *EntryMeta) RawJSON() json.RawMessage { return m.Raw }

// BookkeepingMeta holds what the CLI's bookkeeping entries carry.
type BookkeepingMeta struct {
	SessionID string          `json:"sessionId"`
	Raw       json.RawMessage `json:"-"`
}

// RawJSON returns the line the entry was decoded from.
func (m *BookkeepingMeta) RawJSON() json.RawMessage { return m.Raw }

// UserEntry is a user turn of the conversation: a prompt, tool results,
// or a message the CLI made up (IsMeta).
type UserEntry struct {
	EntryMeta
	// Content is the message's content; a plain string decodes to one
	// *TextBlock.
	Content []ContentBlock
	// IsMeta marks a message the CLI added for the model, not typed by
	// anyone.
	IsMeta bool
	// ToolUseResult is the tool's structured result next to a
	// tool_result block, as in UserMessage.ToolUseResult.
	ToolUseResult json.RawMessage
	// PromptID groups the entries of one prompt's turn.
	PromptID       string
	PermissionMode PermissionMode
}

// Text returns the entry's text blocks, concatenated.
func (e *UserEntry) Text() string { return blocksText(e.Content) }

// ToolResults returns the entry's tool_result blocks.
func (e *UserEntry) ToolResults() []*ToolResultBlock {
	var out []*ToolResultBlock
	for _, c := range e.Content {
		if t, ok := c.(*ToolResultBlock); ok {
			out = append(out, t)
		}
	}
	return out
}

// prompt returns the text a person typed, or "" for tool results,
// CLI-made messages and slash-command records.
func (e *UserEntry) prompt() string {
	if e.IsMeta || e.IsSidechain || len(e.ToolResults()) > 0 {
		return ""
	}
	t := strings.TrimSpace(e.Text())
	for _, p := range []string{"<command-name>", "<command-message>", "<local-command-", "[Request interrupted"} {
		if strings.HasPrefix(t, p) {
			return ""
		}
	}
	return t
}

// AssistantEntry is one content block of the model's answer.
type AssistantEntry struct {
	EntryMeta
	Message APIMessage `json:"message"`
	// RequestID is the Messages API's request id.
	RequestID string `json:"requestId"`
}

// Text returns the entry's text blocks, concatenated.
func (e *AssistantEntry) Text() string { return blocksText(e.Message.Content) }

// ToolUses returns the entry's tool calls.
func (e *AssistantEntry) ToolUses() []*ToolUseBlock {
	var out []*ToolUseBlock
	for _, c := range e.Message.Content {
		if t, ok := c.(*ToolUseBlock); ok {
			out = append(out, t)
		}
	}
	return out
}

// SystemEntry is a notice the CLI recorded in the conversation.
type SystemEntry struct {
	EntryMeta
	// Subtype is e.g. "compact_boundary", "local_command", "api_error".
	Subtype string `json:"subtype"`
	Content string `json:"-"`
	// Level is "info", "warning", "error"…
	Level string `json:"level"`
}

// AttachmentEntry is context the CLI attached to the conversation.
type AttachmentEntry struct {
	EntryMeta
	// AttachmentType is the attachment's kind: "skill_listing",
	// "agent_listing_delta", "file", "hook_additional_context", …
	AttachmentType string `json:"-"`
	// Attachment is the attachment as the CLI wrote it.
	Attachment json.RawMessage `json:"attachment"`
}

// SummaryEntry is a summary of the conversation up to LeafUUID.
type SummaryEntry struct {
	BookkeepingMeta
	Summary  string `json:"summary"`
	LeafUUID string `json:"leafUuid"`
}

// CustomTitleEntry records a title set for the session (RenameSession).
type CustomTitleEntry struct {
	BookkeepingMeta
	Title string `json:"customTitle"`
}

// AITitleEntry records a title the CLI generated for the session.
type AITitleEntry struct {
	BookkeepingMeta
	Title string `json:"aiTitle"`
}

// LastPromptEntry records the session's latest prompt.
type LastPromptEntry struct {
	BookkeepingMeta
	Prompt   string `json:"lastPrompt"`
	LeafUUID string `json:"leafUuid"`
}

// QueueOperationEntry records a prompt entering ("enqueue") or leaving
// ("dequeue", "remove") the CLI's input queue.
type QueueOperationEntry struct {
	BookkeepingMeta
	Operation string    `json:"operation"`
	Timestamp time.Time `json:"timestamp"`
	// Content is the queued prompt's text, when the CLI recorded it.
	Content string `json:"content,omitempty"`
}

// FileHistorySnapshotEntry records the file checkpoint taken for a user
// message, which RewindFiles restores.
type FileHistorySnapshotEntry struct {
	// MessageID is the user message the checkpoint belongs to (for an
	// update, the entry that caused it).
	MessageID string `json:"messageId"`
	// IsSnapshotUpdate marks an update of an earlier snapshot.
	IsSnapshotUpdate bool `json:"isSnapshotUpdate"`
	// Snapshot is the checkpoint: the tracked files and their backups.
	Snapshot json.RawMessage `json:"snapshot"`

	Raw json.RawMessage `json:"-"`
}

// RawJSON returns the line the entry was decoded from.
func (e *FileHistorySnapshotEntry) RawJSON() json.RawMessage { return e.Raw }

// UnknownEntry is a session file line of a type this version of Tether
// does not type. Raw has the whole line.
type UnknownEntry struct {
	Type string
	Raw  json.RawMessage
}

// RawJSON returns the line.
func (e *UnknownEntry) RawJSON() json.RawMessage { return e.Raw }

func (*UserEntry) isSessionEntry()                {}
func (*AssistantEntry) isSessionEntry()           {}
func (*SystemEntry) isSessionEntry()              {}
func (*AttachmentEntry) isSessionEntry()          {}
func (*SummaryEntry) isSessionEntry()             {}
func (*CustomTitleEntry) isSessionEntry()         {}
func (*AITitleEntry) isSessionEntry()             {}
func (*LastPromptEntry) isSessionEntry()          {}
func (*QueueOperationEntry) isSessionEntry()      {}
func (*FileHistorySnapshotEntry) isSessionEntry() {}
func (*UnknownEntry) isSessionEntry()             {}

// entryMeta returns a conversation entry's EntryMeta, or nil.
func entryMeta(e SessionEntry) *EntryMeta {
	switch e := e.(type) {
	case *UserEntry:
		return &e.EntryMeta
	case *AssistantEntry:
		return &e.EntryMeta
	case *SystemEntry:
		return &e.EntryMeta
	case *AttachmentEntry:
		return &e.EntryMeta
	}
	return nil
}

// DecodeSessionEntry decodes one line of a session file. The entry keeps
// line as its RawJSON, so line must not be modified afterwards. It fails
// only for a line that is not a JSON object.
func DecodeSessionEntry(line []byte) (SessionEntry, error) {
	var h struct {
		Type *string `json:"type"`
	}
	if typ, ok := wire.PeekString(line, `{"type":"`); ok {
		h.Type = &typ
	} else if err := unmarshal(line, &h); err != nil {
		if !isTypeError(err) || jsontext.Value(line).Kind() != '{' {
			return nil, err
		}
		h.Type = nil // an object whose type is no string: no entry Tether knows
	}
	if h.Type == nil {
		return &UnknownEntry{Raw: line}, nil
	}
	var e SessionEntry
	switch *h.Type {
	case "user":
		e = &UserEntry{}
	case "assistant":
		e = &AssistantEntry{}
	case "system":
		e = &SystemEntry{}
	case "attachment":
		e = &AttachmentEntry{}
	case "summary":
		e = &SummaryEntry{}
	case "custom-title":
		e = &CustomTitleEntry{}
	case "tag":
		e = &TagEntry{}
	case "ai-title":
		e = &AITitleEntry{}
	case "last-prompt":
		e = &LastPromptEntry{}
	case "queue-operation":
		e = &QueueOperationEntry{}
	case "file-history-snapshot":
		e = &FileHistorySnapshotEntry{}
	default:
		return &UnknownEntry{Type: *h.Type, Raw: line}, nil
	}
	if err := unmarshal(line, e); err != nil {
		if isTypeError(err) {
			return &UnknownEntry{Type: *h.Type, Raw: line}, nil
		}
		return nil, err
	}
	switch e := e.(type) {
	case *UserEntry:
		e.Raw = line
	case *AssistantEntry:
		e.Raw = line
	case *SystemEntry:
		e.Raw = line
	case *AttachmentEntry:
		e.Raw = line
		var a struct {
			Type string `json:"type"`
		}
		_ = unmarshal(e.Attachment, &a)
		e.AttachmentType = a.Type
	case *SummaryEntry:
		e.Raw = line
	case *CustomTitleEntry:
		e.Raw = line
	case *TagEntry:
		e.Raw = line
	case *AITitleEntry:
		e.Raw = line
	case *LastPromptEntry:
		e.Raw = line
	case *QueueOperationEntry:
		e.Raw = line
	case *FileHistorySnapshotEntry:
		e.Raw = line
	}
	return e, nil
}

// UnmarshalJSONFrom decodes a user line of a session file.
func (e *UserEntry) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	var w struct {
		EntryMeta
		Message struct {
			Content blockList `json:"content"`
		} `json:"message"`
		IsMeta         bool            `json:"isMeta"`
		ToolUseResult  json.RawMessage `json:"toolUseResult"`
		PromptID       string          `json:"promptId"`
		PermissionMode PermissionMode  `json:"permissionMode"`
	}
	if err := jsonv2.UnmarshalDecode(dec, &w); err != nil {
		return err
	}
	*e = UserEntry{EntryMeta: w.EntryMeta, Content: w.Message.Content, IsMeta: w.IsMeta,
		ToolUseResult: w.ToolUseResult, PromptID: w.PromptID, PermissionMode: w.PermissionMode}
	return nil
}

// UnmarshalJSONFrom decodes a system line of a session file; its content
// is usually a string but is kept as JSON text otherwise.
func (e *SystemEntry) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	var w struct {
		EntryMeta
		Subtype string          `json:"subtype"`
		Content json.RawMessage `json:"content"`
		Level   string          `json:"level"`
	}
	if err := jsonv2.UnmarshalDecode(dec, &w); err != nil {
		return err
	}
	*e = SystemEntry{EntryMeta: w.EntryMeta, Subtype: w.Subtype, Content: rawString(w.Content), Level: w.Level}
	return nil
}

// blocksText concatenates the text blocks of a content list.
func blocksText(blocks []ContentBlock) string {
	var b strings.Builder
	for _, c := range blocks {
		if t, ok := c.(*TextBlock); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

// gitWorktrees returns the working directories of the other worktrees of
// the git repository dir is the top of, read from the repository's files
// (.git, .git/worktrees/*/gitdir, commondir) so no git process runs. It
// returns nil when dir is not a repository's top or nothing can be read.
func gitWorktrees(dir string) []string {
	gitDir := filepath.Join(dir, ".git")
	st, err := os.Stat(gitDir)
	if err != nil {
		return nil
	}
	if !st.IsDir() {
		// A linked worktree: .git is a file naming its git directory,
		// whose commondir leads to the main repository's.
		b, err := os.ReadFile(gitDir)
		if err != nil {
			return nil
		}
		p, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir: ")
		if !ok {
			return nil
		}
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		c, err := os.ReadFile(filepath.Join(p, "commondir"))
		if err != nil {
			return nil
		}
		gitDir = strings.TrimSpace(string(c))
		if !filepath.IsAbs(gitDir) {
			gitDir = filepath.Join(p, gitDir)
		}
		gitDir = filepath.Clean(gitDir)
	}
	var out []string
	if main := filepath.Dir(gitDir); filepath.Base(gitDir) == ".git" && main != filepath.Clean(dir) {
		out = append(out, main)
	}
	ents, err := os.ReadDir(filepath.Join(gitDir, "worktrees"))
	if err != nil {
		return out
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(gitDir, "worktrees", e.Name(), "gitdir"))
		if err != nil {
			continue
		}
		wt := filepath.Dir(strings.TrimSpace(string(b)))
		if wt != filepath.Clean(dir) && !slices.Contains(out, wt) {
			out = append(out, wt)
		}
	}
	return out
}
