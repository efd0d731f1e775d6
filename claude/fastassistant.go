package claude

import (
	"bytes"
	"strings"
)

// decodeAssistantFast decodes an assistant line of the commonest shape —
// text blocks only, the envelope and usage the CLI writes — without the
// reflection-driven decoder. Like decodeDeltaFast it returns ok false for
// anything it is not sure of (another block type, a member it does not
// know, a duplicate member, a number that is not a plain integer, invalid
// UTF-8), and the general decoder then takes the line; FuzzDecode checks
// the two agree whenever this succeeds.
func decodeAssistantFast(line []byte) (*AssistantMessage, bool) {
	s := scanner{b: line}
	if !s.consume('{') {
		return nil, false
	}
	var uuid, sid, parent, reqID, id, model, role, stopReason, stopSeq span
	var texts []span
	var usage fastUsage
	var seen, useen uint32
	hasUsage, sawMessage := false, false
	for first := true; ; first = false {
		key, done, ok := s.member(first)
		if !ok {
			return nil, false
		} else if done {
			break
		}
		var bit uint32
		switch string(key) {
		case "type":
			bit = 1
			v, ok := s.rawString()
			if !ok || string(v) != "assistant" {
				return nil, false
			}
		case "message":
			bit = 2
			if !s.consume('{') {
				return nil, false
			}
			sawMessage = true
			for first := true; ; first = false {
				key, done, ok := s.member(first)
				if !ok {
					return nil, false
				} else if done {
					break
				}
				var mbit uint32
				switch string(key) {
				case "id":
					mbit = 1 << 8
					id, ok = s.str()
				case "type":
					mbit = 1 << 9
					v, rok := s.rawString()
					ok = rok && string(v) == "message"
				case "role":
					mbit = 1 << 10
					role, ok = s.str()
				case "model":
					mbit = 1 << 11
					model, ok = s.str()
				case "content":
					mbit = 1 << 12
					texts, ok = s.textBlocks()
				case "stop_reason":
					mbit = 1 << 13
					stopReason, ok = s.stringOrNull()
				case "stop_sequence":
					mbit = 1 << 14
					stopSeq, ok = s.stringOrNull()
				case "context_management":
					mbit = 1 << 15
					ok = s.null()
				case "usage":
					mbit = 1 << 16
					hasUsage = true
					ok = s.usage(&usage, &useen)
				default:
					return nil, false
				}
				if !ok || seen&mbit != 0 {
					return nil, false
				}
				seen |= mbit
			}
		case "parent_tool_use_id":
			bit = 4
			if parent, ok = s.stringOrNull(); !ok {
				return nil, false
			}
		case "session_id":
			bit = 8
			if sid, ok = s.stringOrNull(); !ok {
				return nil, false
			}
		case "uuid":
			bit = 16
			if uuid, ok = s.stringOrNull(); !ok {
				return nil, false
			}
		case "request_id":
			bit = 32
			if reqID, ok = s.stringOrNull(); !ok {
				return nil, false
			}
		default:
			return nil, false
		}
		if seen&bit != 0 {
			return nil, false
		}
		seen |= bit
	}
	s.ws()
	if s.i != len(s.b) || !sawMessage {
		return nil, false
	}
	// One allocation for every string of the message.
	n := uuid.len() + sid.len() + parent.len() + reqID.len() + id.len() + model.len() + role.len() + stopReason.len() + stopSeq.len() + usage.ServiceTier.len()
	for _, t := range texts {
		n += t.len()
	}
	var sb strings.Builder
	sb.Grow(n)
	for _, p := range []*span{&uuid, &sid, &parent, &reqID, &id, &model, &role, &stopReason, &stopSeq, &usage.ServiceTier} {
		if !s.put(&sb, p) {
			return nil, false
		}
	}
	for i := range texts {
		if !s.put(&sb, &texts[i]) {
			return nil, false
		}
	}
	all := sb.String()
	x := &struct {
		m   AssistantMessage
		u   Usage
		stu serverToolUse
	}{}
	m := &x.m
	m.UUID, m.SessionID, m.ParentToolUseID, m.RequestID = uuid.of(all), sid.of(all), parent.of(all), reqID.of(all)
	m.Message.ID, m.Message.Model, m.Message.Role = id.of(all), model.of(all), role.of(all)
	m.Message.StopReason, m.Message.StopSequence = stopReason.of(all), stopSeq.of(all)
	if seen&(1<<12) != 0 {
		blocks := make([]TextBlock, len(texts))
		m.Message.Content = make([]ContentBlock, len(texts))
		for i, t := range texts {
			blocks[i].Text = t.of(all)
			m.Message.Content[i] = &blocks[i]
		}
	}
	if hasUsage {
		x.u = Usage{InputTokens: usage.InputTokens, OutputTokens: usage.OutputTokens,
			CacheCreationInputTokens: usage.CacheCreationInputTokens, CacheReadInputTokens: usage.CacheReadInputTokens,
			ServiceTier: usage.ServiceTier.of(all)}
		if usage.hasServerToolUse {
			x.stu = usage.serverToolUse
			x.u.ServerToolUse = &x.stu
		}
		if !usage.null {
			m.Message.Usage = &x.u
		}
	}
	return m, true
}

// fastUsage is Usage while scanning, its string a span.
type fastUsage struct {
	InputTokens, OutputTokens, CacheCreationInputTokens, CacheReadInputTokens int64
	ServiceTier                                                               span
	null                                                                      bool
	hasServerToolUse                                                          bool
	serverToolUse                                                             serverToolUse
}

// serverToolUse is the type of Usage.ServerToolUse.
type serverToolUse = struct {
	WebSearchRequests int64 `json:"web_search_requests"`
	WebFetchRequests  int64 `json:"web_fetch_requests"`
}

// intObject decodes an object of plain integers, each member handed to
// set; a duplicate member is refused.
func (s *scanner) intObject(set func(key []byte, v int64) bool) bool {
	if !s.consume('{') {
		return false
	}
	var keys [4][]byte
	n := 0
	for first := true; ; first = false {
		key, done, ok := s.member(first)
		if !ok {
			return false
		} else if done {
			return true
		}
		// rawString leaves keys unchecked (see there); these are passed on,
		// so only plain ones are taken.
		for _, c := range key {
			if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '_' {
				return false
			}
		}
		for _, k := range keys[:n] {
			if bytes.Equal(k, key) {
				return false
			}
		}
		if n == len(keys) {
			return false
		}
		keys[n] = key
		n++
		v, ok := s.int64()
		if !ok || !set(key, v) {
			return false
		}
	}
}

// textBlocks decodes a content array of text blocks without citations.
func (s *scanner) textBlocks() ([]span, bool) {
	if !s.consume('[') {
		return nil, false
	}
	var out []span
	if s.consume(']') {
		return []span{}, true
	}
	for {
		if !s.consume('{') {
			return nil, false
		}
		var text span
		sawType, sawText := false, false
		for first := true; ; first = false {
			key, done, ok := s.member(first)
			if !ok {
				return nil, false
			} else if done {
				break
			}
			switch string(key) {
			case "type":
				v, ok := s.rawString()
				if !ok || string(v) != "text" || sawType {
					return nil, false
				}
				sawType = true
			case "text":
				if text, ok = s.str(); !ok || sawText {
					return nil, false
				}
				sawText = true
			default:
				return nil, false
			}
		}
		if !sawType {
			return nil, false
		}
		out = append(out, text)
		if s.consume(']') {
			return out, true
		}
		if !s.consume(',') {
			return nil, false
		}
	}
}

// usage decodes the usage object as the CLI writes it (or null).
func (s *scanner) usage(u *fastUsage, seen *uint32) bool {
	if s.null() {
		u.null = true
		return true
	}
	if !s.consume('{') {
		return false
	}
	for first := true; ; first = false {
		key, done, ok := s.member(first)
		if !ok {
			return false
		} else if done {
			return true
		}
		var bit uint32
		switch string(key) {
		case "input_tokens":
			bit = 1
			u.InputTokens, ok = s.int64()
		case "output_tokens":
			bit = 2
			u.OutputTokens, ok = s.int64()
		case "cache_creation_input_tokens":
			bit = 4
			u.CacheCreationInputTokens, ok = s.int64()
		case "cache_read_input_tokens":
			bit = 8
			u.CacheReadInputTokens, ok = s.int64()
		case "service_tier":
			bit = 16
			u.ServiceTier, ok = s.str()
		case "server_tool_use":
			bit = 32
			ok = s.intObject(func(key []byte, v int64) bool {
				switch string(key) {
				case "web_search_requests":
					u.serverToolUse.WebSearchRequests = v
				case "web_fetch_requests":
					u.serverToolUse.WebFetchRequests = v
				default:
					return false
				}
				return true
			})
			u.hasServerToolUse = true
		case "cache_creation":
			// Not modelled in Usage: the general decoder skips it.
			bit = 64
			ok = s.intObject(func([]byte, int64) bool { return true })
		default:
			return false
		}
		if !ok || *seen&bit != 0 {
			return false
		}
		*seen |= bit
	}
}

// null consumes a JSON null.
func (s *scanner) null() bool {
	s.ws()
	if len(s.b)-s.i >= 4 && string(s.b[s.i:s.i+4]) == "null" {
		s.i += 4
		return true
	}
	return false
}

// int64 decodes a non-negative integer of up to 18 digits.
func (s *scanner) int64() (int64, bool) {
	s.ws()
	var n int64
	j := s.i
	for j < len(s.b) && j-s.i < 18 && s.b[j] >= '0' && s.b[j] <= '9' {
		n = n*10 + int64(s.b[j]-'0')
		j++
	}
	if j == s.i || (s.b[s.i] == '0' && j-s.i > 1) {
		return 0, false
	}
	if j < len(s.b) && (s.b[j] == '.' || s.b[j] == 'e' || s.b[j] == 'E' || (s.b[j] >= '0' && s.b[j] <= '9')) {
		return 0, false
	}
	s.i = j
	return n, true
}
