package core

import "sync"

// serverStates is what this client believes of each memory server's
// health (issue 16, redundant regions). The metadata famd owns
// membership: it decides that a server is down and tells every client on
// the session stream, so all PEs agree; a client that meets an error on a
// server only reports it as suspect and, meanwhile, routes the operation
// around it (the surviving copy, or reconstruction).
//
// AGREED SURFACE (lead, 2026-11-25): the redundant data path (striped.go)
// calls down and suspect; the membership side (session events) calls
// setDown. Bodies may grow; the signatures stay.
type serverStates struct {
	mu   sync.Mutex
	down map[uint64]bool
}

// down reports whether famd has declared memory server id down.
func (s *serverStates) isDown(id uint64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.down[id]
}

// setDown records famd's word on server id (true: down, false: up again,
// rebuilt or rebuilding, so writes go to it again).
func (s *serverStates) setDown(id uint64, down bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.down == nil {
		s.down = map[uint64]bool{}
	}
	if down {
		s.down[id] = true
	} else {
		delete(s.down, id)
	}
}

// suspect is called by the data path when an operation on server id
// failed with err (unreachable or timed out). The membership side reports
// it to famd; this placeholder only remembers nothing.
func (s *serverStates) suspect(id uint64, err error) {}
