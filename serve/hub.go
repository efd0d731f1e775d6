package serve

import (
	"maps"
	"time"
)

// The list hub: one goroutine per server follows the Backend's session
// list and pushes what changed to every client (coalesced per session,
// so a slow client gets the latest and never holds the hub up).

// startHub starts the hub on the first connection (s.mu held).
func (s *Server) startHub() {
	if s.hubOn {
		return
	}
	s.hubOn = true
	s.wg.Add(1)
	go s.hub()
}

func (s *Server) hub() {
	defer s.wg.Done()
	t := time.NewTicker(s.opts.ListInterval)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
		case <-s.kick:
		}
		list, err := s.b.List(s.ctx)
		if err != nil {
			continue
		}
		now := make(map[string]SessionInfo, len(list))
		for _, si := range list {
			now[si.ID] = si
		}
		s.mu.Lock()
		prev := s.last
		s.last = now
		clients := make([]*client, 0, len(s.clients))
		for c := range s.clients {
			clients = append(clients, c)
		}
		s.mu.Unlock()
		if s.opts.Team != nil {
			s.teamRound(now, clients)
			continue
		}
		for id, si := range now {
			if old, ok := prev[id]; ok && old == si {
				continue
			}
			for _, c := range clients {
				c.setInfo(id, &si)
			}
		}
		for id := range prev {
			if _, ok := now[id]; !ok {
				for _, c := range clients {
					c.setInfo(id, nil)
				}
			}
		}
	}
}

// broadcast tells every client about a session now (after a start).
func (s *Server) broadcast(si SessionInfo) {
	s.mu.Lock()
	if s.last == nil {
		s.last = map[string]SessionInfo{}
	} else {
		s.last = maps.Clone(s.last)
	}
	s.last[si.ID] = si
	clients := make([]*client, 0, len(s.clients))
	for c := range s.clients {
		clients = append(clients, c)
	}
	acl := s.acls[si.ID]
	s.mu.Unlock()
	for _, c := range clients {
		if s.opts.Team != nil {
			c.showTeam(si, acl)
			continue
		}
		c.setInfo(si.ID, &si)
	}
}

// kickList asks the hub to look at the list now.
func (s *Server) kickList() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}
