package transport

import "github.com/gofam/openfam/core/wire"

// The libfabric data plane (issue 15) keeps this protocol for control: a
// client asks the server, with wire OpFabricKey, to expose the bytes of a
// key on the server's fabric endpoint, then reads and writes them with
// one-sided RMA. The server checks the key exactly as it checks a Get or
// Put, and whoever revokes a key also withdraws it from the fabric (see
// FabricServer.Withdraw), so the fabric never grants more than the key.

// FabricServer is a memory server's libfabric endpoint, as the data plane
// needs it; *fabric.Endpoint implements it.
type FabricServer interface {
	// Provider is the libfabric provider string the endpoint runs on
	// ("tcp;ofi_rxm", "sockets", "verbs;ofi_rxm" ...).
	Provider() string
	// Addr is the endpoint's fabric address, which clients insert into
	// their address vector.
	Addr() []byte
	// Expose registers mem, the bytes key reaches, for remote access with
	// rights (RightRead, RightWrite) and returns the remote key and the
	// base address clients add item offsets to. Exposing a key already
	// exposed returns its existing registration.
	Expose(key Key, mem []byte, rights uint8) (rkey, base uint64, err error)
	// Withdraw closes key's registration, so that the fabric refuses it
	// from now on; unknown keys are ignored.
	Withdraw(key Key)
}

// FabricKey asks the server to expose the item key names on its libfabric
// endpoint and returns the registration: the remote key, the base address
// item offsets are added to, the item's size and the rights the key
// grants. A server without a fabric endpoint answers an *Error with Code
// 16 (the client is told at once, without a round trip, when the server
// did not announce one in its Hello reply); a revoked key, ErrStaleKey.
func (c *Client) FabricKey(key Key) (rkey, base, size uint64, rights uint8, err error) {
	if c.features.Load()&wire.FeatureFabric == 0 {
		// An older server would take the request for a malformed frame
		// and close the connection.
		return 0, 0, 0, 0, &Error{Code: codeUnimpl, Msg: "the memory server has no libfabric endpoint (it runs the tcp data plane)"}
	}
	r := &req{op: wire.OpFabricKey}
	if err := c.one(wire.Header{Op: wire.OpFabricKey, Key: key}, r); err != nil {
		return 0, 0, 0, 0, err
	}
	return r.res64[0], r.res64[1], r.res64[2], uint8(r.res64[3]), nil
}

// fabricKey serves OpFabricKey: the key is resolved through the server's
// Memory with the usual answers (stale, no rights), then exposed on the
// fabric with the rights it grants.
func (sc *sconn) fabricKey(h wire.Header) (*replyError, error) {
	fs := sc.s.opts.Fabric
	if fs == nil {
		return fail(codeUnimpl, "this memory server has no libfabric endpoint: it serves the tcp data plane only (famd --provider)"), nil
	}
	key := Key(h.Key)
	mem, rights, ok := sc.s.mem.Resolve(key)
	if !ok {
		return &replyError{status: wire.StatusStaleKey, msg: "unknown or revoked item key"}, nil
	}
	if rights == 0 {
		return fail(codeNoPerm, "the key grants neither read nor write permission"), nil
	}
	rkey, base, err := fs.Expose(key, mem, rights)
	if err != nil {
		return fail(codeResource, "exposing the item on the %s fabric: %v", fs.Provider(), err), nil
	}
	// A revocation that ran between Resolve and Expose withdrew nothing
	// (the registration did not exist yet): look again, and withdraw what
	// was just registered if the key is gone or its bytes or rights
	// changed, so that no registration outlives its key. Revokers forget
	// the key before they withdraw it, so one of the two sees the other.
	mem2, rights2, ok := sc.s.mem.Resolve(key)
	if !ok || rights2 != rights || len(mem2) != len(mem) || (len(mem) > 0 && &mem2[0] != &mem[0]) {
		fs.Withdraw(key)
		return &replyError{status: wire.StatusStaleKey, msg: "unknown or revoked item key"}, nil
	}
	if o := sc.s.opts.Observer; o != nil {
		o.Request(h.Op, wire.StatusOK, 0, 0)
	}
	rh := wire.Header{Op: h.Op, Flags: wire.FlagReply, ID: h.ID, Arg: [4]uint64{rkey, base, uint64(len(mem)), uint64(rights)}}
	rh.Encode(sc.rhdr[:])
	_, err = sc.bw.Write(sc.rhdr[:])
	return nil, err
}
