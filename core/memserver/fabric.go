package memserver

import "github.com/gofam/openfam/core/transport"

// The libfabric data plane (issue 15): the transport server exposes a key
// on the fabric endpoint when a client asks (wire OpFabricKey), and every
// path here that forgets a key (Revoke, a new epoch's first Grant, Drop,
// Close) or remaps the memory it reaches withdraws it from the endpoint,
// so that the fabric never reaches what the key no longer does.

// fabricRef boxes the endpoint for the atomic pointer.
type fabricRef struct{ f transport.FabricServer }

// SetFabric sets the libfabric endpoint keys are withdrawn from (nil: none).
// Set it before the data plane serves FabricKey requests with the same
// endpoint.
func (s *Server) SetFabric(f transport.FabricServer) {
	if f == nil {
		s.fab.Store(nil)
		return
	}
	s.fab.Store(&fabricRef{f})
}

// withdraw withdraws keys from the fabric endpoint, if there is one. Call
// it after the keys left s.grants, without s.gmu held.
func (s *Server) withdraw(keys ...transport.Key) {
	r := s.fab.Load()
	if r == nil {
		return
	}
	for _, k := range keys {
		r.f.Withdraw(k)
	}
}

// withdrawGrants withdraws every key of grants.
func (s *Server) withdrawGrants(grants map[transport.Key]*grant) {
	if s.fab.Load() == nil {
		return
	}
	for k := range grants {
		s.withdraw(k)
	}
}

// withdrawSegment withdraws the keys granted into sg (its mapping is
// changing). They stay granted: the next FabricKey exposes the new mapping.
func (s *Server) withdrawSegment(sg *segment) {
	if s.fab.Load() == nil {
		return
	}
	var keys []transport.Key
	s.gmu.RLock()
	for k, g := range s.grants {
		if g.seg == sg {
			keys = append(keys, k)
		}
	}
	s.gmu.RUnlock()
	s.withdraw(keys...)
}
