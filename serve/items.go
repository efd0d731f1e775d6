package serve

import (
	"encoding/json"
	"errors"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/tetherhq/tether/claude"
)

// ItemKind names what an Item shows.
type ItemKind string

// The kinds of Item (docs/serve-protocol.md, "Transcript items").
const (
	// ItemPrompt: a user message's text and images (a person's prompt, the
	// CLI's echo of one, a synthetic message the CLI made, a subagent's
	// prompt).
	ItemPrompt ItemKind = "prompt"
	// ItemText, ItemThinking, ItemRedactedThinking, ItemToolUse and
	// ItemBlock are the content blocks of an assistant message, growing
	// while it is written (Status "streaming").
	ItemText             ItemKind = "text"
	ItemThinking         ItemKind = "thinking"
	ItemRedactedThinking ItemKind = "redacted_thinking"
	ItemToolUse          ItemKind = "tool_use"
	ItemBlock            ItemKind = "block"
	// ItemToolResult: what a tool call gave back.
	ItemToolResult ItemKind = "tool_result"
	// ItemNotice: a line for people that is not a message: a local
	// command's output, an interrupt, an API retry, a compaction, a
	// notification.
	ItemNotice ItemKind = "notice"
	// ItemSystem: the CLI said what it runs with (system init, which also
	// begins a turn; a status with a new permission mode), or that a
	// background task ended (task_notification: ToolUseID, TaskStatus).
	ItemSystem ItemKind = "system"
	// ItemResult: a turn ended.
	ItemResult ItemKind = "result"
	// ItemSuggestion: the CLI's guess at the person's next prompt, in
	// Text, made after a turn's result when the session asked for
	// suggestions (tether serve --prompt-suggestions). It is not part of
	// the conversation: a front end offers it until the next prompt.
	ItemSuggestion ItemKind = "suggestion"
)

// Item statuses of assistant blocks.
const (
	ItemStreaming   = "streaming"
	ItemDone        = "done"
	ItemInterrupted = "interrupted"
)

// Item is one entry of a session's transcript as a front end shows it,
// derived by the server from the CLI's messages (claude.Accumulator
// folds the stream events; a tool's input is completed from the partial
// JSON typed so far). An item that grows is sent again whole, with the
// same ID: a client replaces the item it has (keeping its place) or
// appends a new one. Fields not of the item's Kind are omitted.
type Item struct {
	// ID names the item for its life: a tool call's id, "<message
	// id>/<index>" for another assistant block (the API's message ids are
	// unique), "result/<tool_use_id>" for a tool result, the CLI line's
	// uuid for the rest (a prompt's is its delivery's uuid; a notice from
	// a user line adds "/<block index>").
	ID   string   `json:"id"`
	Kind ItemKind `json:"kind"`
	// Parent is the Agent tool call a subagent's item belongs to; "" for
	// the main conversation.
	Parent string `json:"parent,omitempty"`

	// Message, Index: the assistant message (its API id) a block belongs
	// to and the block's place in it. Model is the message's model;
	// Synthetic marks the CLI's own text ("<synthetic>": an API error
	// shown as a message), Error the assistant line's error ("rate_limit",
	// …).
	Message   string `json:"message,omitempty"`
	Index     int    `json:"index,omitempty"`
	Model     string `json:"model,omitempty"`
	Synthetic bool   `json:"synthetic,omitempty"`
	Error     string `json:"error,omitempty"`
	// Status of an assistant block: "streaming" while it grows, "done",
	// or "interrupted" (cut off).
	Status string `json:"status,omitempty"`

	// Text: a text or thinking block's text so far, a notice's text, a
	// suggestion's prompt.
	Text string `json:"text,omitempty"`
	// Append: Text is what a text or thinking block grew by since the
	// version sent before (in an earlier frame of this subscription): the
	// client appends it to the text it has; the other fields are the
	// item's, whole. Sent so that a long answer costs its length on the
	// wire, not its length times its deltas.
	Append bool `json:"append,omitempty"`
	// BlockType is an unknown block's type (ItemBlock).
	BlockType string `json:"block_type,omitempty"`

	// ToolUseID, Name, Input: a tool call (ItemToolUse), its input
	// always a valid JSON value, completed while it streams. ToolUseID
	// also names the call a tool result answers.
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`

	// Content, IsError, Structured: a tool result's content blocks (or
	// string) as the CLI sent them, whether it failed, and the CLI's
	// tool_use_result (Bash's stdout and stderr, a question's answers).
	Content    json.RawMessage `json:"content,omitempty"`
	IsError    bool            `json:"is_error,omitempty"`
	Structured json.RawMessage `json:"structured,omitempty"`

	// Texts and Images: a prompt's text blocks and image blocks
	// ({"type":"image","source":…}). Replay marks the CLI's echo of a
	// prompt sent to it (ID is the prompt's uuid, the delivery's); an echo
	// of prompts merged during a turn carries only the texts no earlier
	// echo of the turn gave. Synthetic (above) a message the CLI made.
	Texts  []string          `json:"texts,omitempty"`
	Images []json.RawMessage `json:"images,omitempty"`
	Replay bool              `json:"replay,omitempty"`

	// Level of a notice: "info", "warn", or "interrupted".
	Level string `json:"level,omitempty"`

	// Subtype, PermissionMode, Cwd (and Model above): ItemSystem's.
	Subtype string `json:"subtype,omitempty"`
	// TaskStatus is how a background task ended (ItemSystem of subtype
	// task_notification, ToolUseID the call that started it): the CLI's
	// "completed", "stopped", "failed" or "killed".
	TaskStatus     string `json:"task_status,omitempty"`
	PermissionMode string `json:"permission_mode,omitempty"`
	Cwd            string `json:"cwd,omitempty"`

	// Turn: ItemResult's.
	Turn *TurnResult `json:"turn,omitempty"`
}

// TurnResult is what a turn's result says, for a person.
type TurnResult struct {
	IsError bool   `json:"is_error,omitempty"`
	Subtype string `json:"subtype,omitempty"`
	// Reason says why a failed turn failed: "stopped" when it was
	// interrupted, else the CLI's words.
	Reason     string `json:"reason,omitempty"`
	DurationMS int64  `json:"duration_ms"`
	// InputTokens (cache reads and writes included) and OutputTokens;
	// absent when the CLI counted nothing (a stopped turn: the tokens were
	// spent all the same).
	InputTokens  *int64 `json:"input_tokens,omitempty"`
	OutputTokens *int64 `json:"output_tokens,omitempty"`
	// CostUSD is the turn's cost, TotalCostUSD the CLI process's total;
	// absent when unknown (a stopped turn reports 0).
	CostUSD      *float64 `json:"cost_usd,omitempty"`
	TotalCostUSD *float64 `json:"total_cost_usd,omitempty"`
	// ContextUsed of ContextWindow tokens: the last API call's context.
	ContextUsed   int64 `json:"context_used,omitempty"`
	ContextWindow int64 `json:"context_window,omitempty"`
}

// Bounds of an Itemizer's memory for messages in progress: past them it
// forgets what it gave (and sends a block again whole when it changes,
// which the client takes as it takes any update).
const (
	maxLiveMessages = 64
	// maxEchoes bounds the echoed prompt texts kept within a turn to take
	// out of the merged echo that follows; past it the oldest is
	// forgotten (and would be shown twice if the CLI merged it later).
	maxEchoes = 64
)

// Itemizer derives items from a session's messages, in order: the
// server runs one per subscription that asked for items, and a front
// end in Go may run its own on host.EventMessage payloads. It holds the
// running turn's drafts (claude.Accumulator) and, for the assistant
// messages in progress, the items it gave, so that it gives only the
// blocks that changed; all of it is dropped at each turn's result, and
// bounded by maxLiveMessages. Not safe for concurrent use.
type Itemizer struct {
	acc       claude.Accumulator
	live      map[string]*liveMessage // by message id
	lastCost  float64
	lastUsage *claude.Usage // the main thread's last API message's
	anon      int           // lines without uuid so far
	echoes    []string      // prompt texts echoed since the last result (unshown)
}

// liveMessage is an assistant message whose blocks may still change.
type liveMessage struct {
	finals    int // blocks given by complete assistant lines
	error     string
	synthetic bool
	given     map[string]*givenItem // item id -> last given
	order     []string
}

type givenItem struct {
	item   *Item // as last sent (whole)
	latest *Item // as last derived (a streaming tool input may not be sent yet)
}

// NewItemizer returns an Itemizer at the start of a session.
func NewItemizer() *Itemizer {
	return &Itemizer{live: map[string]*liveMessage{}}
}

// envelope is what the Itemizer reads of every line before decoding it.
type envelope struct {
	Type            string          `json:"type"`
	Subtype         string          `json:"subtype"`
	UUID            string          `json:"uuid"`
	ParentToolUseID string          `json:"parent_tool_use_id"`
	IsReplay        bool            `json:"isReplay"`
	IsSynthetic     bool            `json:"isSynthetic"`
	ToolUseResult   json.RawMessage `json:"tool_use_result"`
	Message         struct {
		ID      string          `json:"id"`
		Content json.RawMessage `json:"content"`
	} `json:"message"`
	Error string `json:"error"`
	// system
	Model          string `json:"model"`
	PermissionMode string `json:"permissionMode"`
	Cwd            string `json:"cwd"`
	Attempt        int    `json:"attempt"`
	MaxRetries     int    `json:"max_retries"`
	ErrorStatus    any    `json:"error_status"`
	Text           string `json:"text"`
	ToolUseID      string `json:"tool_use_id"` // task_notification
	Status         string `json:"status"`      // task_notification

	anon string // the id lineID made for a line without uuid
}

// Add derives the items one CLI stdout line (an EventMessage payload)
// adds or changes: none for lines no one shows and for stream events
// that change nothing shown. An item given again (same ID) replaces the
// one given before.
func (z *Itemizer) Add(line json.RawMessage) []Item {
	var env envelope
	if json.Unmarshal(line, &env) != nil {
		return nil
	}
	switch env.Type {
	case "stream_event", "assistant":
		m, err := claude.DecodeMessage(line)
		if err != nil {
			return nil
		}
		var before, thread string
		starts := false // m may begin a new message on its thread
		if a, ok := m.(*claude.AssistantMessage); ok {
			thread, starts = a.ParentToolUseID, true
			id := a.Message.ID
			if id == "" {
				id = a.UUID
			}
			lm := z.message(id)
			lm.finals += len(a.Message.Content)
			if a.Error != "" {
				lm.error = a.Error
			}
			lm.synthetic = lm.synthetic || a.Synthetic()
		} else if s, ok := m.(*claude.StreamEvent); ok {
			_, starts = s.Event.(*claude.MessageStartEvent)
			thread = s.ParentToolUseID
		}
		if starts {
			if d := z.acc.Draft(thread); d != nil {
				before = d.MessageID
			}
		}
		d := z.acc.Add(m)
		if d == nil {
			return nil
		}
		var out []Item
		if before != "" && before != d.MessageID {
			// A new message on the thread ended the one before it.
			out = z.finish(before, ItemInterrupted)
		}
		// A synthetic message (a local command's output, an API error)
		// made no API call: its zero usage is not the context's.
		if d.ParentToolUseID == "" && d.Usage != nil && d.Model != "<synthetic>" {
			u := *d.Usage
			z.lastUsage = &u
		}
		return append(out, z.draft(d)...)
	case "user":
		m, err := claude.DecodeMessage(line)
		if err != nil {
			return nil
		}
		var out []Item
		if d := z.acc.Add(m); d != nil {
			out = z.draft(d)
		}
		return append(out, z.user(&env)...)
	case "result":
		m, err := claude.DecodeMessage(line)
		if err != nil {
			return nil
		}
		r, ok := m.(*claude.ResultMessage)
		if !ok {
			return nil
		}
		var out []Item
		if d := z.acc.Add(m); d != nil {
			out = z.draft(d)
		}
		end := ItemDone
		if r.IsError {
			end = ItemInterrupted
		}
		// In a stable order: every subscriber gets the same frames.
		for _, id := range slices.Sorted(maps.Keys(z.live)) {
			out = append(out, z.finish(id, end)...)
		}
		clear(z.live)
		z.echoes = z.echoes[:0]
		return append(out, z.result(r, &env))
	case "system":
		return z.system(&env, line)
	case "prompt_suggestion":
		var ps claude.PromptSuggestionMessage
		if json.Unmarshal(line, &ps) != nil || strings.TrimSpace(ps.Suggestion) == "" {
			return nil
		}
		return []Item{{ID: z.lineID(&env), Kind: ItemSuggestion, Text: ps.Suggestion}}
	}
	return nil
}

func (z *Itemizer) message(id string) *liveMessage {
	lm := z.live[id]
	if lm == nil {
		if len(z.live) >= maxLiveMessages {
			clear(z.live) // forget: blocks are sent whole again
		}
		lm = &liveMessage{given: map[string]*givenItem{}}
		z.live[id] = lm
	}
	return lm
}

// draft gives the blocks of d that changed since they were last given.
func (z *Itemizer) draft(d *claude.Draft) []Item {
	lm := z.message(d.MessageID)
	var out []Item
	for i, b := range d.Content {
		it := Item{Parent: d.ParentToolUseID, Message: d.MessageID, Index: i, Error: lm.error, Synthetic: lm.synthetic}
		if d.Model != "<synthetic>" {
			it.Model = d.Model
		}
		it.ID = d.MessageID + "/" + strconv.Itoa(i)
		switch b := b.(type) {
		case *claude.TextBlock:
			it.Kind, it.Text = ItemText, b.Text
		case *claude.ThinkingBlock:
			it.Kind, it.Text = ItemThinking, b.Thinking
		case *claude.RedactedThinkingBlock:
			it.Kind = ItemRedactedThinking
		case *claude.ToolUseBlock:
			it.Kind, it.ToolUseID, it.Name, it.Input = ItemToolUse, b.ID, b.Name, validInput(b.Input)
			it.ID = b.ID
		case *claude.ServerToolUseBlock:
			it.Kind, it.ToolUseID, it.Name, it.Input = ItemToolUse, b.ID, b.Name, validInput(b.Input)
			it.ID = b.ID
		case *claude.UnknownBlock:
			it.Kind, it.BlockType = ItemBlock, b.Type
			if b.Type == "mcp_tool_use" {
				var t struct {
					ID    string          `json:"id"`
					Name  string          `json:"name"`
					Input json.RawMessage `json:"input"`
				}
				if json.Unmarshal(b.Raw, &t) == nil && t.ID != "" {
					it.Kind, it.BlockType, it.ToolUseID, it.Name, it.Input, it.ID = ItemToolUse, "", t.ID, t.Name, validInput(t.Input), t.ID
				}
			}
		default:
			it.Kind, it.BlockType = ItemBlock, blockType(b)
		}
		switch {
		case i < lm.finals:
			it.Status = ItemDone
		case d.Status == claude.DraftStreaming:
			it.Status = ItemStreaming
		case d.Status == claude.DraftInterrupted:
			it.Status = ItemInterrupted
		default:
			it.Status = ItemDone
		}
		if g, ok := z.give(lm, &it); ok {
			out = append(out, *g)
		}
	}
	if d.Status != claude.DraftStreaming && len(d.Content) <= lm.finals {
		// Every block is final: what was given need not be kept (a
		// change, unlikely now, is sent whole); the count of final
		// blocks is.
		clear(lm.given)
		lm.order = nil
	}
	return out
}

// give records it as the block's latest version and returns what to
// send of it: nil when nothing changed (or a streaming tool input grew
// too little, below), the growth alone (Append) when a text or thinking
// block only grew, else the item whole. A tool input being typed is a
// new whole JSON value at each step; it is sent when it grew by an
// eighth (at least 16 bytes) since it was last sent, so that a long one
// costs a bounded multiple of its size, and always when its status
// changes (its final version).
func (z *Itemizer) give(lm *liveMessage, it *Item) (*Item, bool) {
	g := lm.given[it.ID]
	if g == nil {
		lm.given[it.ID] = &givenItem{item: it, latest: it}
		lm.order = append(lm.order, it.ID)
		return it, true
	}
	g.latest = it
	old := g.item
	// Compared without marshalling: a long text grows by small deltas,
	// and each costs a comparison of its prefix, not an encoding.
	same := sameButText(old, it)
	if same && old.Text == it.Text {
		return nil, false
	}
	if it.Kind == ItemToolUse && old.Kind == ItemToolUse && it.Status == ItemStreaming && old.Status == ItemStreaming && len(it.Input) < len(old.Input)+max(16, len(old.Input)/8) {
		return nil, false
	}
	send := it
	if same && (it.Kind == ItemText || it.Kind == ItemThinking) && len(it.Text) > len(old.Text) && strings.HasPrefix(it.Text, old.Text) {
		d := *it
		d.Text, d.Append = it.Text[len(old.Text):], true
		send = &d
	}
	g.item = it
	return send, true
}

// sameButText reports whether a and b differ at most in Text.
func sameButText(a, b *Item) bool {
	x, y := *a, *b
	x.Text, y.Text = "", ""
	return reflect.DeepEqual(&x, &y)
}

// finish ends a message's blocks still streaming with status end.
func (z *Itemizer) finish(id, end string) []Item {
	lm := z.live[id]
	if lm == nil {
		return nil
	}
	delete(z.live, id)
	var out []Item
	for _, iid := range lm.order {
		g := lm.given[iid]
		if g.latest.Status == ItemStreaming {
			it := *g.latest
			it.Status = end
			out = append(out, it)
		}
	}
	return out
}

var interruptPrefix = "[Request interrupted by user"

// user gives a user line's items: its tool results, its notices, and
// its prompt (texts and images).
func (z *Itemizer) user(env *envelope) []Item {
	var blocks []json.RawMessage
	var s string
	if json.Unmarshal(env.Message.Content, &s) == nil {
		b, _ := json.Marshal(map[string]string{"type": "text", "text": s})
		blocks = []json.RawMessage{b}
	} else if json.Unmarshal(env.Message.Content, &blocks) != nil {
		return nil
	}
	var out []Item
	prompt := Item{Kind: ItemPrompt, Parent: env.ParentToolUseID, Replay: env.IsReplay, Synthetic: env.IsSynthetic}
	for i, raw := range blocks {
		var b struct {
			Type      string          `json:"type"`
			Text      string          `json:"text"`
			ToolUseID string          `json:"tool_use_id"`
			Content   json.RawMessage `json:"content"`
			IsError   bool            `json:"is_error"`
		}
		if json.Unmarshal(raw, &b) != nil {
			continue
		}
		switch b.Type {
		case "tool_result":
			it := Item{ID: "result/" + b.ToolUseID, Kind: ItemToolResult, Parent: env.ParentToolUseID, ToolUseID: b.ToolUseID, Content: b.Content, IsError: b.IsError}
			if len(env.ToolUseResult) > 0 && string(env.ToolUseResult) != "null" {
				it.Structured = env.ToolUseResult
			}
			out = append(out, it)
		case "text":
			t := strings.TrimSpace(b.Text)
			noteID := z.lineID(env) + "/" + strconv.Itoa(i)
			if rest, ok := strings.CutPrefix(t, "<local-command-stdout>"); ok && strings.HasSuffix(rest, "</local-command-stdout>") {
				out = append(out, Item{ID: noteID, Kind: ItemNotice, Parent: env.ParentToolUseID, Level: "info", Text: strings.TrimSuffix(rest, "</local-command-stdout>")})
				continue
			}
			if strings.HasPrefix(t, interruptPrefix) && strings.HasSuffix(t, "]") {
				out = append(out, Item{ID: noteID, Kind: ItemNotice, Parent: env.ParentToolUseID, Level: "interrupted", Text: "Interrupted"})
				continue
			}
			text := b.Text
			if env.IsReplay && env.ParentToolUseID == "" && !env.IsSynthetic {
				if text = z.unshown(text); text == "" {
					continue
				}
			}
			prompt.Texts = append(prompt.Texts, text)
		case "image":
			prompt.Images = append(prompt.Images, raw)
		}
	}
	if len(prompt.Texts) > 0 || len(prompt.Images) > 0 {
		prompt.ID = z.lineID(env)
		out = append(out, prompt)
	}
	return out
}

// unshown returns what of an echoed prompt's text the turn's earlier
// echoes did not show, and remembers it. The CLI echoes the first prompt
// queued during a turn alone, then every queued prompt merged into one
// message (with the last one's uuid): 2.1.197 as one text block each,
// 2.1.330 and later as one text, the prompts on lines of their own. So a
// front end shows each prompt once without knowing either shape.
func (z *Itemizer) unshown(text string) string {
	for i := 0; i < len(z.echoes); i++ {
		rest, ok := strings.CutPrefix(text, z.echoes[i])
		if !ok {
			continue
		}
		if sep := rest[:len(rest)-len(strings.TrimLeftFunc(rest, unicode.IsSpace))]; rest != "" && !strings.Contains(sep, "\n") {
			continue // the echo is the start of a longer line, not a prompt of its own
		}
		text = strings.TrimSpace(rest)
		z.echoes = slices.Delete(z.echoes, i, i+1)
		i--
	}
	if text != "" {
		if len(z.echoes) == maxEchoes {
			z.echoes = slices.Delete(z.echoes, 0, 1)
		}
		z.echoes = append(z.echoes, text)
	}
	return text
}

// result gives a turn's end.
func (z *Itemizer) result(r *claude.ResultMessage, env *envelope) Item {
	t := &TurnResult{IsError: r.IsError, Subtype: string(r.Subtype), DurationMS: r.DurationMS, Reason: turnReason(r)}
	u := r.Usage
	dropped := r.IsError && u.InputTokens == 0 && u.OutputTokens == 0 && u.CacheReadInputTokens == 0 && u.CacheCreationInputTokens == 0
	if !dropped {
		in, out := u.InputTokens+u.CacheReadInputTokens+u.CacheCreationInputTokens, u.OutputTokens
		t.InputTokens, t.OutputTokens = &in, &out
	}
	if !(r.TotalCostUSD == 0 && r.IsError) {
		// The total is the CLI process's; a restarted CLI counts anew.
		cost := r.TotalCostUSD
		if cost >= z.lastCost {
			cost -= z.lastCost
		}
		total := r.TotalCostUSD
		t.CostUSD, t.TotalCostUSD = &cost, &total
		z.lastCost = r.TotalCostUSD
	}
	for _, mu := range r.ModelUsage {
		t.ContextWindow = max(t.ContextWindow, mu.ContextWindow)
	}
	if t.ContextWindow > 0 && z.lastUsage != nil {
		lu := z.lastUsage
		t.ContextUsed = lu.InputTokens + lu.CacheReadInputTokens + lu.CacheCreationInputTokens + lu.OutputTokens
	} else {
		t.ContextWindow = 0
	}
	return Item{ID: z.lineID(env), Kind: ItemResult, Turn: t}
}

// turnReason says, for a person, why a turn failed ("" when it did
// not): "stopped" when it was interrupted, else the CLI's words. The
// result of a turn whose calls auto mode could not check is the final
// text, and the words are in its errors.
func turnReason(r *claude.ResultMessage) string {
	var rerr *claude.ResultError
	if !errors.As(r.Err(), &rerr) {
		return ""
	}
	switch {
	case rerr.Interrupted():
		return "stopped"
	case rerr.Result != "":
		return rerr.Result
	case len(rerr.Errors) > 0:
		return strings.Join(rerr.Errors, "; ")
	}
	return string(r.Subtype)
}

// system gives the system lines people see, and the facts a client
// keeps (model, permission mode, folder).
func (z *Itemizer) system(env *envelope, line json.RawMessage) []Item {
	it := Item{Kind: ItemNotice, Level: "info"}
	switch env.Subtype {
	case "init":
		it.Kind, it.Level, it.Subtype, it.Model, it.PermissionMode, it.Cwd = ItemSystem, "", "init", env.Model, env.PermissionMode, env.Cwd
	case "status":
		if env.PermissionMode == "" {
			return nil
		}
		it.Kind, it.Level, it.Subtype, it.PermissionMode = ItemSystem, "", "status", env.PermissionMode
	case "api_retry":
		why := env.Error
		if why == "" && env.ErrorStatus != nil {
			b, _ := json.Marshal(env.ErrorStatus)
			why = string(b)
		}
		it.Level, it.Text = "warn", "API retry "+strconv.Itoa(env.Attempt)+"/"+strconv.Itoa(env.MaxRetries)+": "+why
	case "task_notification":
		// How a background task ended: its call's card says so.
		if env.ToolUseID == "" || env.Status == "" {
			return nil
		}
		it.Kind, it.Level, it.Subtype, it.ToolUseID, it.TaskStatus = ItemSystem, "", "task_notification", env.ToolUseID, env.Status
	case "compact_boundary":
		it.Text = "Conversation compacted"
	case "notification":
		if env.Text == "" {
			return nil
		}
		it.Text = env.Text
	case "informational":
		// What the CLI tells the person at its terminal: why auto mode
		// refuses every call, a mode that changed.
		m, err := claude.DecodeMessage(line)
		im, ok := m.(*claude.InformationalMessage)
		if err != nil || !ok || im.Content == "" {
			return nil
		}
		it.Text = im.Content
		if im.Level == "warning" {
			it.Level = "warn"
		}
	default:
		return nil
	}
	it.ID = z.lineID(env)
	return []Item{it}
}

// lineID is the id of the items of a line that are not blocks: the
// line's uuid, which the CLI gives every line; else one of this
// Itemizer's own ("line/N", the same for the same lines in the same
// order).
func (z *Itemizer) lineID(env *envelope) string {
	if env.UUID != "" {
		return env.UUID
	}
	if env.anon == "" {
		z.anon++
		env.anon = "line/" + strconv.Itoa(z.anon)
	}
	return env.anon
}

// validInput is a tool input as a JSON value ({} when there is none).
// What the accumulator gives is valid JSON already (completed while it
// streams, decoded when complete): it is not scanned again at each
// delta.
func validInput(in json.RawMessage) json.RawMessage {
	if len(in) == 0 {
		return json.RawMessage("{}")
	}
	return in
}

// blockType names a block the Itemizer has no kind for.
func blockType(b claude.ContentBlock) string {
	raw, err := json.Marshal(b)
	if err != nil {
		return "unknown"
	}
	var t struct {
		Type string `json:"type"`
	}
	_ = json.Unmarshal(raw, &t)
	if t.Type == "" {
		return "unknown"
	}
	return t.Type
}

// itemList collects items in the order they first appeared, each at its
// latest version, whole: a snapshot's items. A growth (Append) is added
// to the text the item has: a snapshot taken while a block streams holds
// its whole text so far, not its last delta.
type itemList struct {
	items []Item
	at    map[string]int
}

func (l *itemList) put(its []Item) {
	if l.at == nil {
		l.at = map[string]int{}
	}
	for _, it := range its {
		i, ok := l.at[it.ID]
		if it.Append {
			if ok {
				it.Text = l.items[i].Text + it.Text
			}
			it.Append = false
		}
		if ok {
			l.items[i] = it
			continue
		}
		l.at[it.ID] = len(l.items)
		l.items = append(l.items, it)
	}
}
