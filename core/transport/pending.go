package transport

// pendingSet holds a connection's outstanding requests by id, under
// cc.mu. Ids are handed out one after another and a connection rarely has
// more than a few requests outstanding, so each request goes into a small
// ring at its id's slot and the map is needed only when that slot is
// still held by an older request (a long pipeline): a lone blocking call
// then registers, finds and removes its request without the map's hashing,
// which on a small request is a noticeable share of the client's work.
type pendingSet struct {
	ring [pendingRing]*req
	more map[uint64]*req // requests whose ring slot was taken; nil until needed
	n    int
}

// pendingRing is the ring's size: a power of two, so that the slot is the
// id's low bits.
const pendingRing = 16

// add registers r under r.id, which no outstanding request has.
func (p *pendingSet) add(r *req) {
	if s := &p.ring[r.id%pendingRing]; *s == nil {
		*s = r
	} else {
		if p.more == nil {
			p.more = map[uint64]*req{}
		}
		p.more[r.id] = r
	}
	p.n++
}

// get returns the outstanding request with id, nil if none.
func (p *pendingSet) get(id uint64) *req {
	if r := p.ring[id%pendingRing]; r != nil && r.id == id {
		return r
	}
	return p.more[id]
}

// del removes the outstanding request with id, if any.
func (p *pendingSet) del(id uint64) {
	if s := &p.ring[id%pendingRing]; *s != nil && (*s).id == id {
		*s = nil
		p.n--
		return
	}
	if _, ok := p.more[id]; ok {
		delete(p.more, id)
		p.n--
	}
}

// len is how many requests are outstanding.
func (p *pendingSet) len() int { return p.n }

// drain removes every outstanding request, calling fn on each.
func (p *pendingSet) drain(fn func(r *req)) {
	for i, r := range p.ring {
		if r != nil {
			fn(r)
			p.ring[i] = nil
		}
	}
	for _, r := range p.more {
		fn(r)
	}
	p.more, p.n = nil, 0
}
