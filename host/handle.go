package host

import (
	"context"
	"iter"
	"slices"
	"strings"
	"time"

	"github.com/tetherhq/tether/claude"
)

// handle folds one message into the session's facts, in stdout order,
// on the receive loop.
func (s *Session) handle(m claude.Message, merr error) {
	s.lastEvent.Store(time.Now().UnixNano())
	turnUSD := -1.0 // set for a result: the turn's cost, told after the unlock
	defer func() { s.turnCost(turnUSD) }()
	// Edit tool calls: the files as they are, read once the lock is
	// released (changes.go).
	var uses []*claude.ToolUseBlock
	defer func() {
		for _, tu := range uses {
			s.changes.toolUse(tu)
		}
	}()
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.repeated(m) {
		s.recordMessage(m) // before what it causes
	}
	forward := true
	switch m := m.(type) {
	case *claude.SessionStateChangedMessage:
		// "running" opens a turn (before system/init); "idle" follows the
		// result and "requires_action" the control request, both seen
		// already.
		if m.State == "running" {
			s.beginTurn()
		}
	case *claude.CommandsChangedMessage:
		s.slash = m.Commands
	case *claude.InitMessage:
		if m.SessionID != "" {
			s.sid = m.SessionID
		}
		s.costs.sawTurn = true
		s.beginTurn()
	case *claude.StatusMessage:
		if m.Status == "requesting" {
			s.beginTurn()
			if s.phase != StateRequesting {
				s.phase, s.attempt, s.tool = StateRequesting, 0, ""
			}
		}
	case *claude.APIRetryMessage:
		s.beginTurn()
		s.phase, s.attempt, s.tool = StateRequesting, m.Attempt, ""
	case *claude.StreamEvent:
		if m.ParentToolUseID != "" {
			break // subagents' work shows as the Agent tool running
		}
		s.beginTurn()
		if st, ok := m.Event.(*claude.ContentBlockStartEvent); ok {
			s.blockStarted(st.ContentBlock)
		}
	case *claude.AssistantMessage:
		if !m.Synthetic() {
			for _, c := range m.Message.Content {
				if tu, ok := c.(*claude.ToolUseBlock); ok {
					uses = append(uses, tu)
				}
			}
		}
		if m.ParentToolUseID != "" || m.Synthetic() {
			// A subagent's calls (uses: none when synthetic) are kept only
			// to tell which call an MCP server's request for input comes
			// from (askingToolLocked).
			for _, tu := range uses[:min(len(uses), maxSubTools-len(s.subTools))] {
				s.subTools = append(s.subTools, toolRun{id: tu.ID, name: tu.Name})
			}
			break
		}
		s.beginTurn()
		for _, c := range m.Message.Content {
			if tu, ok := c.(*claude.ToolUseBlock); ok {
				s.tools = append(s.tools, toolRun{tu.ID, tu.Name, s.startTool(tu.ID, tu.Name)})
				s.phase, s.tool = StateRunningTool, s.tools[0].name
				continue
			}
			s.blockStarted(c)
		}
	case *claude.UserMessage:
		if m.IsReplay {
			forward = s.acknowledge(m.UUID)
			if m.UUID != "" {
				s.changes.notePrompt(m.UUID)
			}
			break
		}
		s.noteToolResults(m)
		if m.ParentToolUseID != "" {
			for _, r := range m.ToolResults() {
				s.subTools = slices.DeleteFunc(s.subTools, func(t toolRun) bool { return t.id == r.ToolUseID })
			}
			break
		}
		done := 0
		for _, r := range m.ToolResults() {
			for i, t := range s.tools {
				if t.id == r.ToolUseID {
					endTool(t, r)
					s.tools = append(s.tools[:i], s.tools[i+1:]...)
					done++
					break
				}
			}
		}
		if done > 0 && s.turn {
			if len(s.tools) == 0 {
				// Every result is back: the CLI calls the API again.
				s.phase, s.attempt, s.tool = StateRequesting, 0, ""
			} else {
				s.tool = s.tools[0].name
			}
		}
	case *claude.CommandLifecycleMessage:
		s.lifecycle(m)
	case *claude.TaskStartedMessage, *claude.TaskNotificationMessage, *claude.TaskUpdatedMessage, *claude.BackgroundTasksChangedMessage:
		s.noteTask(m)
	case *claude.ResultMessage:
		if m.SessionID != "" {
			s.sid = m.SessionID
		}
		s.last, s.lastErr = m, m.Err()
		s.resetTurn()
		s.withdrawAll()
		s.answerDeliveries(m)
		if !m.IsError {
			s.restarts = 0
		}
	}
	s.acc.Add(m)
	s.countResult(m) // before costs.add: it reads the totals before m
	s.costs.add(m)
	if _, ok := m.(*claude.ResultMessage); ok {
		turnUSD = s.costs.last.USD
	}
	s.transition()
	s.recordCost(m)
	if forward {
		s.publishLocked(m, merr)
	}
}

// noteToolResults tells the change tracker of the results of the tool
// calls it follows, and journals that files may have changed (s.mu
// held).
func (s *Session) noteToolResults(m *claude.UserMessage) {
	for _, r := range m.ToolResults() {
		p, ok := s.changes.toolResult(r.ToolUseID, r.IsError, m.ToolUseResult)
		switch {
		case !ok || r.IsError:
		case p.name == "Bash":
			if s.changes.inRepo() {
				s.record(EventFilesChanged, FilesChanged{ToolUseID: r.ToolUseID, Tool: p.name})
			}
		case p.path != "":
			s.record(EventFilesChanged, FilesChanged{ToolUseID: r.ToolUseID, Tool: p.name, Paths: []string{p.path}})
		}
	}
}

// beginTurn notes that a turn is under way (s.mu held).
func (s *Session) beginTurn() {
	if !s.turn {
		s.turn = true
		s.turnStart = time.Now()
		if s.turnBegun != nil {
			close(s.turnBegun) // an Interrupt was waiting for this turn
			s.turnBegun = nil
		}
		s.phase, s.attempt, s.tool = StateRequesting, 0, ""
		s.turnQueued = s.turnQueued[:0]
		for _, d := range s.deliveries {
			if d.status == DeliveryQueued {
				s.turnQueued = append(s.turnQueued, d)
			}
		}
	}
}

// blockStarted sets the phase for a content block the model started.
func (s *Session) blockStarted(b claude.ContentBlock) {
	switch b := b.(type) {
	case *claude.ThinkingBlock, *claude.RedactedThinkingBlock:
		s.phase, s.tool = StateThinking, ""
	case *claude.TextBlock:
		s.phase, s.tool = StateStreaming, ""
	case *claude.ToolUseBlock:
		s.phase, s.tool = StateStreaming, b.Name
	case *claude.ServerToolUseBlock:
		s.phase, s.tool = StateStreaming, b.Name
	}
}

// observe receives the CLI's control events on the receive loop, in
// stdout order (claude.Options.ObserveControl).
func (s *Session) observe(ev *claude.ControlEvent) {
	s.lastEvent.Store(time.Now().UnixNano())
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case ev.Type == claude.ControlEventRequest && ev.Subtype == "can_use_tool":
		req, err := ev.PermissionRequest()
		if err != nil {
			s.log.Warn("host: undecodable can_use_tool", "err", err)
			return
		}
		s.announceLocked(s.approvalLocked(req))
	case ev.Type == claude.ControlEventRequest && ev.Subtype == "elicitation" && s.elicit:
		req, err := ev.ElicitationRequest()
		if err != nil {
			s.log.Warn("host: undecodable elicitation", "err", err)
			return
		}
		a := s.elicitationLocked(req)
		if a.Request.ToolUseID == "" && !a.announced {
			a.Request.ToolUseID = s.askingToolLocked(req.ServerName)
		}
		s.announceLocked(a)
	case ev.Type == claude.ControlEventCancel:
		if a, ok := s.byID[ev.RequestID]; ok {
			a.withdrawLocked()
			s.forget(a)
		}
	default:
		return
	}
	s.transition()
}

// maxSubTools bounds the subagents' calls a session tracks as running:
// a subagent whose results never come (its CLI lost them) must not grow
// the list for the rest of the turn. Past it, new calls go untracked, and
// a form from one of them is tied to no call.
const maxSubTools = 256

// askingToolLocked returns the id of the one call to server's tools
// running, on the main thread or in a subagent, "" when there is none or
// there are several (s.mu held): the tool call an elicitation comes
// from, as far as the stream tells.
func (s *Session) askingToolLocked(server string) string {
	id := ""
	for _, t := range slices.Concat(s.tools, s.subTools) {
		if strings.HasPrefix(t.name, "mcp__"+server+"__") {
			if id != "" {
				return ""
			}
			id = t.id
		}
	}
	return id
}

// announceLocked lists a pending approval, in stream order, and
// journals it (s.mu held).
func (s *Session) announceLocked(a *Approval) {
	if a.status == approvalPending && !a.announced {
		a.announced = true
		s.approvals = append(s.approvals, a)
		s.record(EventApproval, a.Info())
	}
}

// Messages yields the session's messages, in order, from the moment of
// the call until the session ends for good; the last value yielded is
// then the reason (claude.ErrClosed after Close, the CLI's error when it
// died). Errors that are not final are yielded as they come: a
// *claude.ResultError with a failed turn's result, a *claude.LineError,
// and the CLI's error when it died and is being restarted.
//
// Replays of the host's own prompts (acknowledgements) are yielded once;
// duplicates are dropped.
//
// Each call is a subscriber of its own, registered when Messages is
// called, so nothing after the call is missed; it ends when ctx is done.
// Buffering: a subscriber's messages queue and never slow the session
// down, up to Options.MessageBuffer (8192 by default). A subscriber that
// falls further behind loses its queue (the memory is freed at once) and
// is told so: the next value it gets is a *ResyncError (errors.Is
// ErrResync) counting the messages it missed, after which it goes on with
// the messages that came since. A UI takes a Snapshot then; see Events
// for a feed that never loses track. The iterator is single-use.
func (s *Session) Messages(ctx context.Context) iter.Seq2[claude.Message, error] {
	sub := &subscriber{signal: make(chan struct{}, 1), limit: cmpOr(s.opts.MessageBuffer, 8192)}
	s.mu.Lock()
	if s.ended {
		sub.closed = true
		sub.push(item{err: s.endErr()})
	} else {
		s.subs[sub] = struct{}{}
	}
	s.mu.Unlock()
	stop := context.AfterFunc(ctx, func() { s.unsubscribe(sub) })
	return func(yield func(claude.Message, error) bool) {
		defer stop()
		defer s.unsubscribe(sub)
		for {
			s.mu.Lock()
			q, closed, missed := sub.q, sub.closed, sub.missed
			sub.q, sub.missed = nil, 0
			s.mu.Unlock()
			if missed > 0 && !yield(nil, &ResyncError{Missed: missed}) {
				return
			}
			for _, it := range q {
				if !yield(it.m, it.err) {
					return
				}
			}
			if closed {
				return
			}
			select {
			case <-sub.signal:
			case <-ctx.Done():
				yield(nil, ctx.Err())
				return
			}
		}
	}
}

type item struct {
	m   claude.Message
	err error
}

type subscriber struct {
	q      []item
	closed bool
	signal chan struct{}
	limit  int // most items queued
	missed int // items dropped since the reader last took the queue
}

// push queues it (the session's lock held). A full queue is dropped,
// its items counted as missed; the final item (pushed once closed is
// set) always goes in.
func (sub *subscriber) push(it item) {
	if len(sub.q) >= sub.limit && !sub.closed {
		sub.missed += len(sub.q)
		clear(sub.q)
		sub.q = nil
	}
	sub.q = append(sub.q, it)
	select {
	case sub.signal <- struct{}{}:
	default:
	}
}

func (s *Session) unsubscribe(sub *subscriber) {
	s.mu.Lock()
	delete(s.subs, sub)
	s.mu.Unlock()
}

func (s *Session) publish(m claude.Message, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.publishLocked(m, err)
}

func (s *Session) publishLocked(m claude.Message, err error) {
	for sub := range s.subs {
		sub.push(item{m, err})
	}
}

// Drafts returns the assistant messages being written, one per thread
// (the main conversation first, then subagents): see claude.Accumulator.
// It is empty between turns.
func (s *Session) Drafts() []*claude.Draft {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.acc.Drafts()
}
