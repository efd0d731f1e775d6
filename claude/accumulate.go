package claude

import (
	"encoding/json"
	"slices"
	"strings"
)

// A Draft is an assistant message as far as it has arrived: what a UI
// shows while the model is still writing. Drafts are snapshots; later
// messages never change one already returned.
type Draft struct {
	MessageID string
	// ParentToolUseID is the thread: "" for the main conversation, the
	// Agent tool call's id for a subagent's messages.
	ParentToolUseID string
	Model           string
	// Content holds the blocks so far: *TextBlock (with its citations),
	// *ThinkingBlock (with its signature), *RedactedThinkingBlock,
	// *ToolUseBlock and *ServerToolUseBlock, whose Input is the JSON
	// typed so far, completed into a valid value (an unfinished string is
	// closed where it stops, a key without its value left out), and any
	// other block as the CLI sent it. A block the CLI has sent as a
	// complete assistant message is that message's block, exactly.
	Content []ContentBlock
	// StopReason and Usage come from the API's message_delta (the final
	// output token count); before it, Usage is the message_start's.
	StopReason string
	Usage      *Usage
	Status     DraftStatus
}

// DraftStatus says whether a draft is still growing.
type DraftStatus string

// Draft statuses.
const (
	// DraftStreaming: more may come.
	DraftStreaming DraftStatus = "streaming"
	// DraftComplete: the message ended normally.
	DraftComplete DraftStatus = "complete"
	// DraftInterrupted: the message was cut off (an interrupt, an error
	// ending the turn, a retry of the API call); Content is what had
	// arrived, tool inputs completed as usual.
	DraftInterrupted DraftStatus = "interrupted"
)

// An Accumulator folds a session's messages into drafts of the assistant
// messages in progress, one per message id. With
// Options.IncludePartialMessages it grows a draft token by token from
// *StreamEvent messages; each *AssistantMessage (one per content block)
// then replaces its block with the final one. Without partial messages,
// or for subagents (whose API calls stream nothing), drafts are built
// from the assistant messages alone. Each thread (the main conversation,
// and each subagent, by ParentToolUseID) has its own current draft.
//
// A draft ends complete at the API's message_stop after a stop reason,
// or when the turn's result arrives; it ends interrupted when the user
// interrupts, the turn fails, or a new message starts on its thread
// before it ended (a retried API call). The result also clears every
// thread, so a finished turn leaves no drafts.
//
// The zero value is ready to use. An Accumulator is not safe for
// concurrent use: feed it from the goroutine that receives.
type Accumulator struct {
	drafts  map[string]*draftState // by message id
	threads map[string]string      // thread -> message id of its current draft
}

type draftState struct {
	id, thread, model string
	blocks            []*draftBlock
	finals            int // assistant lines seen: the index of the next final block
	stopReason        string
	usage             *Usage
	status            DraftStatus
	streamed          bool // built from stream events
}

type draftBlock struct {
	start     ContentBlock // from content_block_start
	final     ContentBlock // from the assistant line
	text      strings.Builder
	thinking  strings.Builder
	signature strings.Builder
	input     strings.Builder // tool input JSON as typed
	citations []json.RawMessage
	snap      ContentBlock // cached snapshot; nil when the block changed
}

// Add folds m in and returns a snapshot of the draft it changed, or nil
// when m changed none. A result may end drafts on several threads; Add
// returns the main thread's, and Drafts has the others up to the result.
// Add costs O(size of the changed draft).
func (a *Accumulator) Add(m Message) *Draft {
	if a.drafts == nil {
		a.drafts = map[string]*draftState{}
		a.threads = map[string]string{}
	}
	switch m := m.(type) {
	case *StreamEvent:
		return a.addEvent(m)
	case *AssistantMessage:
		return a.addAssistant(m)
	case *UserMessage:
		if m.ParentToolUseID == "" && isInterruptMarker(m) {
			return a.endThread("", DraftInterrupted)
		}
	case *ResultMessage:
		end := DraftComplete
		if m.IsError {
			end = DraftInterrupted
		}
		var main *Draft
		for thread := range a.threads {
			if d := a.endThread(thread, end); thread == "" {
				main = d
			}
		}
		clear(a.drafts)
		clear(a.threads)
		return main
	}
	return nil
}

// Draft returns the current draft of a thread ("" for the main
// conversation), or nil when there is none.
func (a *Accumulator) Draft(thread string) *Draft {
	if id, ok := a.threads[thread]; ok {
		return a.drafts[id].snapshot()
	}
	return nil
}

// Drafts returns the current draft of every thread, the main thread's
// first.
func (a *Accumulator) Drafts() []*Draft {
	out := make([]*Draft, 0, len(a.threads))
	for _, id := range a.threads {
		out = append(out, a.drafts[id].snapshot())
	}
	slices.SortFunc(out, func(x, y *Draft) int { return strings.Compare(x.ParentToolUseID, y.ParentToolUseID) })
	return out
}

func isInterruptMarker(m *UserMessage) bool {
	return strings.HasPrefix(m.Text(), "[Request interrupted by user")
}

// begin makes id the current draft of thread, ending the one before it.
func (a *Accumulator) begin(id, thread string) *draftState {
	if d, ok := a.drafts[id]; ok {
		return d
	}
	if prev, ok := a.threads[thread]; ok && prev != id {
		if p := a.drafts[prev]; p != nil && p.status == DraftStreaming {
			// A new message on the thread: the old one was cut off (a
			// retried API call) unless it had a stop reason, or
			// nothing says when it ended (no partial messages).
			if p.streamed && p.stopReason == "" {
				p.status = DraftInterrupted
			} else {
				p.status = DraftComplete
			}
		}
		delete(a.drafts, prev)
	}
	d := &draftState{id: id, thread: thread, status: DraftStreaming}
	a.drafts[id] = d
	a.threads[thread] = id
	return d
}

func (a *Accumulator) endThread(thread string, status DraftStatus) *Draft {
	id, ok := a.threads[thread]
	if !ok {
		return nil
	}
	d := a.drafts[id]
	if d.status != DraftStreaming {
		if status == DraftInterrupted && d.streamed && d.stopReason == "" && d.status == DraftComplete {
			// A CLI that closes an aborted stream with message_stop
			// (2.1.330) still aborted it.
			d.status = DraftInterrupted
			return d.snapshot()
		}
		return nil
	}
	d.status = status
	return d.snapshot()
}

func (a *Accumulator) addEvent(e *StreamEvent) *Draft {
	thread := e.ParentToolUseID
	if st, ok := e.Event.(*MessageStartEvent); ok {
		id := st.Message.ID
		d := a.begin(id, thread)
		d.streamed = true
		d.model = st.Message.Model
		d.usage = st.Message.Usage
		return d.snapshot()
	}
	id, ok := a.threads[thread]
	if !ok {
		return nil
	}
	d := a.drafts[id]
	switch ev := e.Event.(type) {
	case *ContentBlockStartEvent:
		b := d.block(ev.Index)
		b.start = ev.ContentBlock
		switch cb := ev.ContentBlock.(type) {
		case *TextBlock:
			b.text.WriteString(cb.Text)
		case *ThinkingBlock:
			b.thinking.WriteString(cb.Thinking)
			b.signature.WriteString(cb.Signature)
		}
	case *ContentBlockDeltaEvent:
		b := d.block(ev.Index)
		switch dl := ev.Delta.(type) {
		case *TextDelta:
			b.text.WriteString(dl.Text)
		case *InputJSONDelta:
			b.input.WriteString(dl.PartialJSON)
		case *ThinkingDelta:
			b.thinking.WriteString(dl.Thinking)
		case *SignatureDelta:
			b.signature.WriteString(dl.Signature)
		case *CitationsDelta:
			b.citations = append(b.citations, dl.Citation)
		default:
			return nil
		}
		b.snap = nil
	case *MessageDeltaEvent:
		d.stopReason = ev.StopReason
		if ev.Usage != nil {
			u := *ev.Usage
			if d.usage != nil {
				// message_delta carries the final output count; the
				// input side stays message_start's when it is omitted.
				if u.InputTokens == 0 {
					u.InputTokens = d.usage.InputTokens
				}
				if u.CacheCreationInputTokens == 0 {
					u.CacheCreationInputTokens = d.usage.CacheCreationInputTokens
				}
				if u.CacheReadInputTokens == 0 {
					u.CacheReadInputTokens = d.usage.CacheReadInputTokens
				}
			}
			d.usage = &u
		}
	case *MessageStopEvent:
		if d.status == DraftStreaming && d.stopReason != "" {
			d.status = DraftComplete
		}
	default:
		return nil
	}
	return d.snapshot()
}

func (a *Accumulator) addAssistant(m *AssistantMessage) *Draft {
	id := m.Message.ID
	if id == "" {
		id = m.UUID
	}
	d := a.begin(id, m.ParentToolUseID)
	if d.model == "" {
		d.model = m.Message.Model
	}
	if d.usage == nil {
		d.usage = m.Message.Usage
	}
	for _, c := range m.Message.Content {
		b := d.block(d.finals)
		b.final = c
		b.snap = nil
		d.finals++
	}
	if m.Synthetic() {
		// The CLI's own text (an API error): nothing more will come.
		d.status = DraftComplete
	}
	return d.snapshot()
}

func (d *draftState) block(i int) *draftBlock {
	for len(d.blocks) <= i {
		d.blocks = append(d.blocks, &draftBlock{})
	}
	return d.blocks[i]
}

func (d *draftState) snapshot() *Draft {
	out := &Draft{
		MessageID: d.id, ParentToolUseID: d.thread, Model: d.model,
		StopReason: d.stopReason, Status: d.status,
		Content: make([]ContentBlock, 0, len(d.blocks)),
	}
	if d.usage != nil {
		u := *d.usage
		out.Usage = &u
	}
	for _, b := range d.blocks {
		if b.snap == nil {
			b.snap = b.build()
		}
		if b.snap != nil {
			out.Content = append(out.Content, b.snap)
		}
	}
	return out
}

// build returns the block as far as it has arrived.
func (b *draftBlock) build() ContentBlock {
	if b.final != nil {
		return b.final
	}
	switch s := b.start.(type) {
	case *TextBlock:
		return &TextBlock{Text: b.text.String(), Citations: slices.Clip(b.citations)}
	case *ThinkingBlock:
		return &ThinkingBlock{Thinking: b.thinking.String(), Signature: b.signature.String()}
	case *ToolUseBlock:
		return &ToolUseBlock{ID: s.ID, Name: s.Name, Input: b.partialInput(s.Input)}
	case *ServerToolUseBlock:
		return &ServerToolUseBlock{ID: s.ID, Name: s.Name, Input: b.partialInput(s.Input)}
	case nil:
		if b.text.Len() > 0 {
			return &TextBlock{Text: b.text.String()}
		}
		return nil
	default:
		return s
	}
}

func (b *draftBlock) partialInput(start json.RawMessage) json.RawMessage {
	if b.input.Len() == 0 {
		if len(start) > 0 {
			return start
		}
		return json.RawMessage("{}")
	}
	if c := completeJSON([]byte(b.input.String())); c != nil {
		return c
	}
	return json.RawMessage("{}")
}
