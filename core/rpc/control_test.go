package rpc_test

import (
	"errors"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/gofam/openfam/core"
	"github.com/gofam/openfam/core/embed"
	"github.com/gofam/openfam/core/transport"
	"github.com/gofam/openfam/internal/famauth"
	pb "github.com/gofam/openfam/spec/proto/openfamv1"
)

// ctlCall makes one control call on the data plane and decodes its reply.
func ctlCall(t *testing.T, dc *transport.Client, method uint64, in, out proto.Message) error {
	t.Helper()
	req, err := proto.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	b, f, _, _, _, err := dc.Control(method, 0, req)
	if f != nil {
		f.Close()
	}
	if err != nil {
		return err
	}
	if err := proto.Unmarshal(b, out); err != nil {
		t.Fatalf("decoding the reply: %v", err)
	}
	return nil
}

// TestControlOverTCPDataPlane: on TCP the data plane's control calls act
// as famd's TCP identity (the token was checked by Hello), run the same
// handlers as gRPC (a lookup, an allocation and its deallocation, a
// region lookup), pass no descriptor, and refuse unknown methods and
// undecodable requests with an error reply, leaving the connection usable.
func TestControlOverTCPDataPlane(t *testing.T) {
	d, c := start(t, embed.Options{TCPAddr: "127.0.0.1:0", Token: "ctl-token"})
	reg := createRegion(t, c, "ctl", 1<<20, 0o600)
	dc, err := transport.Dial("tcp", d.DataAddr(), transport.ClientOptions{Token: "ctl-token", Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer dc.Close()
	var ir pb.ItemReply
	if err := ctlCall(t, dc, transport.CtlAllocate, &pb.AllocateRequest{RegionId: reg.GetId(), Name: "x", Size: 64, Mode: 0o600}, &ir); err != nil || ir.GetErr() != nil {
		t.Fatalf("Allocate over the data plane: %v %v", err, ir.GetErr())
	}
	key, _ := keyFrom(ir.GetItem().GetKey())
	if err := dc.Put(key, 0, []byte("hello")); err != nil {
		t.Fatalf("put with the key the data plane issued: %v", err)
	}
	var lk pb.ItemReply
	if err := ctlCall(t, dc, transport.CtlLookup, &pb.LookupRequest{Item: "x", Region: "ctl"}, &lk); err != nil || lk.GetErr() != nil {
		t.Fatalf("Lookup over the data plane: %v %v", err, lk.GetErr())
	}
	var rr pb.RegionReply
	if err := ctlCall(t, dc, transport.CtlLookupRegion, &pb.LookupRegionRequest{Name: "ctl"}, &rr); err != nil || rr.GetRegion().GetId() != reg.GetId() {
		t.Fatalf("LookupRegion over the data plane: %v %v", err, rr.GetErr())
	}
	var nf pb.ItemReply
	if err := ctlCall(t, dc, transport.CtlLookup, &pb.LookupRequest{Item: "nope", Region: "ctl"}, &nf); err != nil || nf.GetErr().GetCode() != int32(core.CodeNotFound) {
		t.Fatalf("Lookup of a missing item: %v %v, want FAM_ENOTFOUND", err, nf.GetErr())
	}
	var dr pb.Reply
	if err := ctlCall(t, dc, transport.CtlDeallocate, &pb.KeyRequest{Key: key[:]}, &dr); err != nil || dr.GetErr() != nil {
		t.Fatalf("Deallocate over the data plane: %v %v", err, dr.GetErr())
	}
	if err := dc.Get(key, 0, make([]byte, 5)); !errors.Is(err, transport.ErrStaleKey) {
		t.Fatalf("get after deallocation: %v, want a stale key", err)
	}
	var e *transport.Error
	if _, _, _, _, _, err := dc.Control(99, 0, nil); !errors.As(err, &e) || e.Code != int32(core.CodeUnimplemented) {
		t.Fatalf("unknown method: %v, want FAM_EUNIMPL", err)
	}
	if _, _, _, _, _, err := dc.Control(transport.CtlLookup, 0, []byte{0xff, 0xff, 0xff}); !errors.As(err, &e) {
		t.Fatalf("undecodable request: %v, want an error reply", err)
	}
	if err := dc.Ping(); err != nil {
		t.Fatalf("the connection after refused control calls: %v", err)
	}
}

// TestControlOverTCPRefusedWithMunge: a famd that authenticates TCP users
// with MUNGE serves no control calls on its TCP data plane, where the
// cluster token is all it knows of the caller: FAM_EUNIMPL, so that the
// client makes them on gRPC, authenticated.
func TestControlOverTCPRefusedWithMunge(t *testing.T) {
	d, c := start(t, embed.Options{TCPAddr: "127.0.0.1:0", Token: "ctl-token", Auth: famauth.ModeMunge})
	_ = c
	dc, err := transport.Dial("tcp", d.DataAddr(), transport.ClientOptions{Token: "ctl-token", Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer dc.Close()
	var e *transport.Error
	req, _ := proto.Marshal(&pb.LookupRegionRequest{Name: "any"})
	if _, _, _, _, _, err := dc.Control(transport.CtlLookupRegion, 0, req); !errors.As(err, &e) || e.Code != int32(core.CodeUnimplemented) {
		t.Fatalf("control call on a MUNGE famd's TCP data plane: %v, want FAM_EUNIMPL", err)
	}
}
