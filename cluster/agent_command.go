package cluster

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/nats-io/nats.go"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/host"
)

// command serves one command. Commands of a session run one at a time,
// in arrival order; each is bounded by 30 s.
func (s *agentSession) command(msg *nats.Msg) {
	reply := func(r *commandReply) {
		if msg.Reply == "" {
			return
		}
		data, _ := json.Marshal(r)
		msg.Respond(data)
	}
	defer func() {
		if p := recover(); p != nil {
			s.log.Error("command panicked", "panic", p)
			reply(&commandReply{Error: &wireError{Code: codeFailed, Message: "internal error"}})
		}
	}()
	var c Command
	if err := decode(msg.Subject, msg.Data, MaxCommandSize, &c); err != nil {
		s.log.Warn("refused a command", "err", err)
		reply(&commandReply{Error: wireErr(err)})
		return
	}
	ctx, cancel := context.WithTimeout(s.ctx, 30*time.Second)
	defer cancel()
	if c.Op == opSnapshot {
		s.snapshot(msg)
		return
	}
	s.log.Debug("command", "op", c.Op)
	out, err := s.do(ctx, &c)
	if err != nil {
		s.log.Info("command refused", "op", c.Op, "err", err)
	}
	r := &commandReply{Error: wireErr(err)}
	if c.Op == OpInterrupt {
		r.Step = out
	} else {
		r.UUID = out
	}
	reply(r)
}

func (s *agentSession) do(ctx context.Context, c *Command) (string, error) {
	hs := s.hs
	select {
	case <-hs.Done():
		return "", &CommandError{Code: codeNoSession, Message: "the session has ended"}
	default:
	}
	switch c.Op {
	case OpSend:
		var blocks []claude.ContentBlock
		for _, im := range c.Images {
			data, err := base64.StdEncoding.DecodeString(im.Data)
			if err != nil {
				return "", &CommandError{Code: codeMalformed, Message: "image data is not base64"}
			}
			blocks = append(blocks, claude.NewImageBlock(im.MediaType, data))
		}
		m := claude.NewUserMessage(c.Prompt, blocks...)
		m.UUID = c.UUID
		d, err := hs.SendMessage(ctx, m)
		if err != nil {
			return "", err
		}
		if p := clip(c.Prompt, 200); p != "" {
			s.mu.Lock()
			s.lastPrompt = p
			if s.rec.Title == "" {
				s.rec.Title = clip(c.Prompt, 80)
			}
			s.mu.Unlock()
			s.poke()
		}
		return d.UUID, nil
	case OpInterrupt:
		if c.Interrupt {
			step, err := hs.ForceInterrupt(ctx)
			if err != nil {
				return "", err
			}
			if step == host.InterruptNotNeeded {
				return "none", nil
			}
			return strings.ToLower(step.String()), nil
		}
		return "", hs.Interrupt(ctx)
	case OpRespond:
		if c.Behavior == "" || c.Answers != nil {
			ap, err := hs.Approval(c.Approval)
			if err != nil {
				return "", err
			}
			return "", ap.Answer(c.Answers)
		}
		var r claude.PermissionResult
		switch c.Behavior {
		case "allow":
			r = &claude.PermissionAllow{}
		case "allow_always":
			ap, err := hs.Approval(c.Approval)
			if err != nil {
				return "", err
			}
			return "", ap.AllowAlways(alwaysUpdates(ap.Request.Suggestions)...)
		default:
			r = &claude.PermissionDeny{Message: c.Message, Interrupt: c.Interrupt}
		}
		return "", hs.Respond(c.Approval, r)
	case OpCancel:
		return "", hs.CancelMessage(ctx, c.UUID)
	case OpSetModel, OpSetMode:
		cs := hs.Claude()
		if cs == nil {
			return "", &CommandError{Code: codeDisconnected, Message: "no CLI running"}
		}
		if c.Op == OpSetModel {
			if err := cs.SetModel(ctx, c.Model); err != nil {
				return "", err
			}
			s.mu.Lock()
			s.rec.Model = c.Model
			s.mu.Unlock()
			s.poke()
			return "", nil
		}
		return "", cs.SetPermissionMode(ctx, claude.PermissionMode(c.Mode))
	case OpClose:
		s.mu.Lock()
		s.closed = true
		s.mu.Unlock()
		return "", hs.Close()
	}
	return "", &CommandError{Code: codeMalformed, Message: "unknown op"}
}

// alwaysUpdates is what "allow always" applies: the CLI's suggestions as
// it made them (a settings file: they last), and each again for this
// session, because the CLI ignores settings-file rules in a workspace it
// does not trust, and a person who said "always" must not be asked again
// (as tether serve's local backend does).
func alwaysUpdates(sugg []claude.PermissionUpdate) []claude.PermissionUpdate {
	out := slices.Clone(sugg)
	for _, u := range sugg {
		if u.Destination != claude.DestinationSession {
			u.Destination = claude.DestinationSession
			out = append(out, u)
		}
	}
	return out
}

// clip shortens s to n bytes on one line (for titles and last prompts in
// the registry).
func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// snapshot answers with the session's snapshot, its sequence numbers
// shifted like the events', in as many parts as it takes.
func (s *agentSession) snapshot(msg *nats.Msg) {
	snap := s.hs.Snapshot()
	s.mu.Lock()
	snap.Seq += s.base
	s.mu.Unlock()
	data, err := json.Marshal(snap)
	if err != nil {
		data, _ = json.Marshal(&commandReply{Error: wireErr(err)})
	}
	replyParts(s.a.b, msg.Reply, data)
}

// replyParts answers a request with data split into parts (header
// Tether-Part "i/n"); one message when it fits.
func replyParts(b *bus, reply string, data []byte) {
	if reply == "" {
		return
	}
	parts := splitParts(data, b.maxPart())
	for i, p := range parts {
		m := nats.NewMsg(reply)
		m.Data = p
		m.Header.Set(hdrPart, fmt.Sprintf("%d/%d", i+1, len(parts)))
		if err := b.nc.PublishMsg(m); err != nil {
			return
		}
	}
}
