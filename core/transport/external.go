package transport

import "sync"

// NewPending returns a Call that another data plane (package core/fabric)
// completes itself, and the function that completes it: done(err) ends
// the Call with err (nil: success); calls after the first are ignored.
// Wait blocks until done is called, so the caller of NewPending must call
// it (within its own timeout) on every path.
func NewPending() (call *Call, done func(err error)) {
	cl := &Call{}
	r := &cl.one
	cl.onep[0] = r
	cl.reqs = cl.onep[:]
	cl.sending.Add(1)
	var once sync.Once
	return cl, func(err error) {
		once.Do(func() {
			r.finish(err)
			cl.sending.Done()
		})
	}
}
