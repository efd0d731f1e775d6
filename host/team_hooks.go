package host

// turnCost tells Options.OnTurnCost an ended turn's cost (usd < 0: no
// turn ended), recovering a panic in it: the receive loop must go on.
// Called without s.mu held.
func (s *Session) turnCost(usd float64) {
	if usd < 0 || s.opts.OnTurnCost == nil {
		return
	}
	defer func() {
		if p := recover(); p != nil {
			s.log.Error("host: OnTurnCost panicked", "panic", p)
		}
	}()
	s.opts.OnTurnCost(usd)
}
