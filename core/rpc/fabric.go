package rpc

import (
	"encoding/hex"

	"github.com/gofam/openfam/core/transport"
	pb "github.com/gofam/openfam/spec/proto/openfamv1"
)

// The libfabric data plane (issue 15) on the metadata famd's side: famd's
// own regions (role all) are exposed on its endpoint when a client asks
// (wire OpFabricKey, served by package transport from Options.Fabric), and
// withdrawn whenever their key is revoked (keyTable.revoke: CloseItem,
// chmod, deallocation, a region destroyed or resized, a session's end,
// shutdown). Memory servers announce their provider and fabric address
// when they join; Servers lists them.

// newKeyTableFabric is newKeyTable withdrawing revoked keys from f.
func newKeyTableFabric(f transport.FabricServer) *keyTable {
	t := newKeyTable()
	t.fabric = f
	return t
}

// fabricInfo is what Info announces of famd's own data plane: the provider
// (prov, else "tcp", without an endpoint) and the fabric address.
func fabricInfo(f transport.FabricServer, prov string) (provider string, addr []byte) {
	if f == nil {
		if prov == "" {
			prov = "tcp"
		}
		return prov, nil
	}
	return f.Provider(), f.Addr()
}

// joinFabricFields extends the fields a join proof covers with the
// server's provider and fabric address when it gives them, so that a
// proof made for one fabric address is worthless for another, and the
// proofs of servers on the tcp data plane stay as they were.
func joinFabricFields(fields []string, req *pb.JoinRequest) []string {
	if req.GetProvider() == "" && len(req.GetFabricAddr()) == 0 {
		return fields
	}
	return append(fields, req.GetProvider(), hex.EncodeToString(req.GetFabricAddr()))
}
