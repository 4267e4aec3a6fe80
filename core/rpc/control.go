package rpc

import (
	"context"
	"os"
	"strconv"

	gmd "google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	"github.com/gofam/openfam/core"
	"github.com/gofam/openfam/core/transport"
	"github.com/gofam/openfam/internal/famauth"
	pb "github.com/gofam/openfam/spec/proto/openfamv1"
)

// Control implements transport.Controller: famd's control calls that PEs
// make in inner loops (fam_lookup, fam_lookup_region, fam_allocate,
// fam_deallocate, fam_close and fam_close_region's check), made over the
// data plane. Each runs the gRPC handler of the same name, so it checks,
// grants and revokes exactly as the control plane does; only the
// transport differs: one data-plane round trip, and for a looked-up or
// allocated item on a Unix socket the heap file's descriptor in the same
// exchange, where the control plane takes a gRPC round trip and an OpenFD
// round trip after it.
//
// Who calls: on a Unix socket the kernel's uid and gid of the peer, as on
// the control plane's Unix socket; on TCP (which presented the cluster
// token in its Hello) famd's --tcp-identity, as a token-authenticated gRPC
// caller. A famd authenticating TCP callers with MUNGE serves no control
// calls on its TCP data plane (ErrUnsupported: the client uses gRPC).
//
// The session, given by the client, binds the keys issued to it, as the
// gRPC session metadata does; a session that is not live binds nothing.
func (s *Server) Control(p transport.Peer, method, session uint64, req []byte) (rep []byte, fd *os.File, off, size uint64, rights uint8, err error) {
	var id identity
	switch {
	case p.Unix:
		id = identity{p.UID, p.GID}
	case s.token == "":
		// As on gRPC: without a cluster token famd takes no TCP users.
		return nil, nil, 0, 0, 0, &transport.Error{Code: int32(core.CodeNoPerm), Msg: "this famd accepts no TCP clients: it was started without a cluster token"}
	case s.auth == famauth.ModeMunge:
		return nil, nil, 0, 0, 0, transport.ErrUnsupported
	default:
		id = s.tcpID
	}
	ctx := context.WithValue(context.Background(), identityKey{}, id)
	if session != 0 {
		ctx = gmd.NewIncomingContext(ctx, gmd.Pairs(MDSession, strconv.FormatUint(session, 10)))
	}
	var (
		out      proto.Message
		name     string
		mappable bool // an item reply whose descriptor a Unix caller may map
	)
	switch method {
	case transport.CtlLookup:
		var in pb.LookupRequest
		if err := proto.Unmarshal(req, &in); err != nil {
			return nil, nil, 0, 0, 0, err
		}
		out, err = s.Lookup(ctx, &in)
		name, mappable = pb.Fam_Lookup_FullMethodName, true
	case transport.CtlLookupRegion:
		var in pb.LookupRegionRequest
		if err := proto.Unmarshal(req, &in); err != nil {
			return nil, nil, 0, 0, 0, err
		}
		out, err = s.LookupRegion(ctx, &in)
		name = pb.Fam_LookupRegion_FullMethodName
	case transport.CtlAllocate:
		var in pb.AllocateRequest
		if err := proto.Unmarshal(req, &in); err != nil {
			return nil, nil, 0, 0, 0, err
		}
		out, err = s.Allocate(ctx, &in)
		name, mappable = pb.Fam_Allocate_FullMethodName, true
	case transport.CtlDeallocate:
		var in pb.KeyRequest
		if err := proto.Unmarshal(req, &in); err != nil {
			return nil, nil, 0, 0, 0, err
		}
		out, err = s.Deallocate(ctx, &in)
		name = pb.Fam_Deallocate_FullMethodName
	case transport.CtlCloseItem:
		var in pb.KeyRequest
		if err := proto.Unmarshal(req, &in); err != nil {
			return nil, nil, 0, 0, 0, err
		}
		out, err = s.CloseItem(ctx, &in)
		name = pb.Fam_CloseItem_FullMethodName
	case transport.CtlRegionByID:
		var in pb.RegionByIDRequest
		if err := proto.Unmarshal(req, &in); err != nil {
			return nil, nil, 0, 0, 0, err
		}
		out, err = s.RegionByID(ctx, &in)
		name = pb.Fam_RegionByID_FullMethodName
	default:
		return nil, nil, 0, 0, 0, transport.ErrUnsupported
	}
	if o := s.opts.Observer; o != nil {
		observeCall(o, name, out, err)
	}
	if err != nil {
		return nil, nil, 0, 0, 0, err
	}
	if rep, err = proto.Marshal(out); err != nil {
		return nil, nil, 0, 0, 0, err
	}
	if ir, ok := out.(*pb.ItemReply); ok && mappable && p.Unix && ir.GetErr() == nil {
		info := ir.GetItem()
		srv := info.GetServers()
		striped := len(srv) > 0 && srv[0] != 0 // on memory servers: nothing here to map
		if k, ok := keyFrom(info.GetKey()); ok && !striped && info.GetRights()&1 != 0 {
			// As the client's OpenFD would; an item famd cannot pass
			// (no file) goes without, and the client maps nothing.
			if f, o, sz, r, ferr := s.OpenFD(k); ferr == nil {
				return rep, f, o, sz, r, nil
			}
		}
	}
	return rep, nil, 0, 0, 0, nil
}

// keyFrom reads a 16-byte key from a reply.
func keyFrom(b []byte) (transport.Key, bool) {
	var k transport.Key
	if len(b) != len(k) {
		return k, false
	}
	copy(k[:], b)
	return k, true
}
