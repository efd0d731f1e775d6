package host

import (
	"maps"
	"strings"

	"github.com/tetherhq/tether/claude"
)

// Tokens counts tokens by kind.
type Tokens struct {
	Input         int64 `json:"input"`
	Output        int64 `json:"output"`
	CacheCreation int64 `json:"cache_creation"`
	CacheRead     int64 `json:"cache_read"`
}

func (t Tokens) add(o Tokens) Tokens {
	return Tokens{t.Input + o.Input, t.Output + o.Output, t.CacheCreation + o.CacheCreation, t.CacheRead + o.CacheRead}
}

// max is the field-wise maximum: the same message's usage seen again
// (every content block repeats it; message_delta has the final output
// count) only ever grows.
func (t Tokens) max(o Tokens) Tokens {
	return Tokens{max(t.Input, o.Input), max(t.Output, o.Output), max(t.CacheCreation, o.CacheCreation), max(t.CacheRead, o.CacheRead)}
}

func tokensOf(u *claude.Usage) Tokens {
	if u == nil {
		return Tokens{}
	}
	return Tokens{u.InputTokens, u.OutputTokens, u.CacheCreationInputTokens, u.CacheReadInputTokens}
}

// Cost is what a session has used and spent: Session.Cost.
type Cost struct {
	// USD is the session's spending by the CLI's own reckoning
	// (total_cost_usd), as of the last result, summed over restarts.
	USD float64 `json:"usd"`
	// Tokens are the session's tokens: the ended turns' as their results
	// report them, plus the running turn's so far.
	Tokens Tokens `json:"tokens"`
	// Models splits Tokens and USD by model (the model id without a
	// "[1m]"-style suffix).
	Models map[string]ModelCost `json:"models"`
	// Turns is the number of turns ended.
	Turns int `json:"turns"`
	// Turn is the running turn, counted from its API messages, each
	// message once (zero between turns).
	Turn TurnCost `json:"turn"`
	// LastTurn is the last ended turn, reconciled with its result.
	LastTurn TurnCost `json:"last_turn"`
}

// ModelCost is one model's share of a session's cost.
type ModelCost struct {
	Tokens Tokens  `json:"tokens"`
	USD    float64 `json:"usd"`
}

// TurnCost is one turn's usage.
type TurnCost struct {
	// Tokens are the turn's tokens: counted from its messages while it
	// runs, the result's figures once it has ended.
	Tokens Tokens `json:"tokens"`
	// Counted is what the turn's messages added up to, each message id
	// once, for comparison with the result. Without partial messages the
	// output count of the last message is provisional (the assistant
	// messages carry the count from the start of the stream).
	Counted Tokens `json:"counted"`
	// Messages is the number of API messages (main thread and subagents).
	Messages int `json:"messages"`
	// USD is the turn's cost (0 while it runs: the CLI reports cost with
	// the result).
	USD float64 `json:"usd"`
}

// costTracker counts usage per API message and reconciles it with each
// result (s.mu held).
type costTracker struct {
	sawTurn bool // a turn started in this session (the conversation exists)

	msgs    map[string]msgUsage // the running turn's messages, by id
	stream  map[string]string   // thread -> id of the message streaming
	ended   Tokens              // the ended turns' tokens
	turns   int
	last    TurnCost
	procUSD float64                      // this process's total so far
	prevUSD float64                      // earlier processes' totals
	procMod map[string]claude.ModelUsage // this process's per-model totals
	prevMod map[string]ModelCost         // earlier processes'
}

type msgUsage struct {
	model  string
	tokens Tokens
}

func modelKey(m string) string {
	if i := strings.IndexByte(m, '['); i > 0 {
		return m[:i]
	}
	return m
}

func (c *costTracker) see(id, model string, t Tokens) {
	if id == "" {
		return
	}
	if c.msgs == nil {
		c.msgs = map[string]msgUsage{}
	}
	u := c.msgs[id]
	if u.model == "" {
		u.model = model
	}
	u.tokens = u.tokens.max(t)
	c.msgs[id] = u
}

func (c *costTracker) add(m claude.Message) {
	switch m := m.(type) {
	case *claude.AssistantMessage:
		if !m.Synthetic() {
			c.see(m.Message.ID, m.Message.Model, tokensOf(m.Message.Usage))
		}
	case *claude.StreamEvent:
		switch e := m.Event.(type) {
		case *claude.MessageStartEvent:
			if c.stream == nil {
				c.stream = map[string]string{}
			}
			c.stream[m.ParentToolUseID] = e.Message.ID
			c.see(e.Message.ID, e.Message.Model, tokensOf(e.Message.Usage))
		case *claude.MessageDeltaEvent:
			if id := c.stream[m.ParentToolUseID]; id != "" {
				c.see(id, "", tokensOf(e.Usage))
			}
		}
	case *claude.ResultMessage:
		counted := c.counted()
		c.last = TurnCost{Tokens: tokensOf(&m.Usage), Counted: counted, Messages: len(c.msgs)}
		if c.last.Tokens == (Tokens{}) && counted != (Tokens{}) {
			// An interrupted turn's result reports no usage although its
			// messages used tokens: what was counted is the best figure,
			// and a person watching the cost must not see it fall.
			c.last.Tokens = counted
		}
		if m.TotalCostUSD >= c.procUSD {
			c.last.USD = m.TotalCostUSD - c.procUSD
			c.procUSD = m.TotalCostUSD
		}
		if len(m.ModelUsage) > 0 {
			// The process's running totals; an empty map (an interrupted
			// turn) says nothing new and must not erase them.
			c.procMod = maps.Clone(m.ModelUsage)
		}
		c.ended = c.ended.add(c.last.Tokens)
		c.turns++
		clear(c.msgs)
		clear(c.stream)
	}
}

// restarted starts counting a new CLI process's totals.
func (c *costTracker) restarted() {
	c.prevUSD += c.procUSD
	if c.prevMod == nil {
		c.prevMod = map[string]ModelCost{}
	}
	for k, v := range c.procMod {
		mc := c.prevMod[modelKey(k)]
		mc.Tokens = mc.Tokens.add(Tokens{v.InputTokens, v.OutputTokens, v.CacheCreationInputTokens, v.CacheReadInputTokens})
		mc.USD += v.CostUSD
		c.prevMod[modelKey(k)] = mc
	}
	c.procUSD, c.procMod = 0, nil
	clear(c.msgs)
	clear(c.stream)
}

func (c *costTracker) counted() Tokens {
	var t Tokens
	for _, u := range c.msgs {
		t = t.add(u.tokens)
	}
	return t
}

func (c *costTracker) snapshot() Cost {
	turn := c.counted()
	out := Cost{
		USD:      c.prevUSD + c.procUSD,
		Tokens:   c.ended.add(turn),
		Turns:    c.turns,
		Turn:     TurnCost{Tokens: turn, Counted: turn, Messages: len(c.msgs)},
		LastTurn: c.last,
		Models:   map[string]ModelCost{},
	}
	for k, v := range c.prevMod {
		out.Models[k] = v
	}
	for k, v := range c.procMod {
		mc := out.Models[modelKey(k)]
		mc.Tokens = mc.Tokens.add(Tokens{v.InputTokens, v.OutputTokens, v.CacheCreationInputTokens, v.CacheReadInputTokens})
		mc.USD += v.CostUSD
		out.Models[modelKey(k)] = mc
	}
	for _, u := range c.msgs {
		mc := out.Models[modelKey(u.model)]
		mc.Tokens = mc.Tokens.add(u.tokens)
		out.Models[modelKey(u.model)] = mc
	}
	return out
}

// Cost returns the session's usage and cost so far.
func (s *Session) Cost() Cost {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.costs.snapshot()
}
