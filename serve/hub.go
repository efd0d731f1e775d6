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
		s.mu.Lock()
		s.told = map[string]bool{}
		s.mu.Unlock()
		list, err := s.b.List(s.ctx)
		now := make(map[string]SessionInfo, len(list))
		for _, si := range list {
			now[si.ID] = si
		}
		s.mu.Lock()
		told := s.told
		s.told = nil
		if err != nil {
			s.mu.Unlock()
			continue
		}
		// A session started (and broadcast) while the list was being
		// read may be missing from it: it stays until a list read after
		// it says otherwise. Dropping it would tell clients "removed"
		// for a session that runs, and leave the hub without it, so
		// that its real removal later went unannounced.
		for id := range told {
			if si, ok := s.last[id]; ok {
				if _, listed := now[id]; !listed {
					now[id] = si
				}
			}
		}
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
	if s.told != nil {
		s.told[si.ID] = true
	}
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
