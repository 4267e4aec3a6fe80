package transport

// Group returns a Call that finishes when every one of calls has, with the
// first error among them in the order given: one operation made of
// requests to several servers (an interleaved item) waits and reports as
// one. The calls' buffers stay in use until Wait returns.
func Group(calls ...*Call) *Call {
	if len(calls) == 1 {
		return calls[0]
	}
	return &Call{subs: calls}
}
