package core

import (
	"context"
	"net"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gofam/openfam/core/transport"
	"github.com/gofam/openfam/core/wire"
	pb "github.com/gofam/openfam/spec/proto/openfamv1"
)

type noMemory struct{}

func (noMemory) Resolve(transport.Key) ([]byte, uint8, bool) { return nil, 0, false }

type ctlCount struct{ n atomic.Int64 }

func (c *ctlCount) Request(op wire.Op, status uint32, read, written uint64) {
	if op == wire.OpControl {
		c.n.Add(1)
	}
}

// TestCtlCallFallsBackToGRPC: against a famd whose data plane serves no
// control calls (a memory-role famd, an older famd: its Hello reply
// announces no wire.FeatureControl), a control call is made on gRPC, and
// no Control frame is sent, which an older famd would take for a
// malformed one and close the connection.
func TestCtlCallFallsBackToGRPC(t *testing.T) {
	var seen ctlCount
	srv := transport.NewServer(noMemory{}, transport.ServerOptions{Observer: &seen})
	l, err := net.Listen("unix", filepath.Join(t.TempDir(), "data.sock"))
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(l)
	defer srv.Close()
	dc, err := transport.Dial("unix", l.Addr().String(), transport.ClientOptions{Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer dc.Close()
	r := &remote{}
	r.dataP.Store(&dataBox{dc})
	grpcCalls := 0
	for i := 0; i < 3; i++ {
		rep, fd, err := ctlCall(r, transport.CtlLookupRegion, &pb.LookupRegionRequest{Name: "x"}, &pb.RegionReply{}, true,
			func(context.Context) (*pb.RegionReply, error) {
				grpcCalls++
				return &pb.RegionReply{Region: &pb.RegionInfo{Id: 7}}, nil
			})
		if err != nil || fd != nil || rep.GetRegion().GetId() != 7 {
			t.Fatalf("call %d: %v %v %v, want gRPC's reply", i, rep, fd, err)
		}
	}
	if grpcCalls != 3 || seen.n.Load() != 0 {
		t.Fatalf("%d gRPC calls, %d data-plane attempts; want 3 and 0", grpcCalls, seen.n.Load())
	}
	if err := dc.Ping(); err != nil {
		t.Fatalf("the data plane after the fallback: %v", err)
	}
}
