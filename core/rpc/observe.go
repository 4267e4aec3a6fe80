package rpc

import (
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/gofam/openfam/spec/proto/openfamv1"
)

// Observer counts a Server's control calls for monitoring (famd
// --metrics-listen). Call is told of each call when it ends: method is
// the gRPC method's short name ("CreateRegion"); grpcCode is codes.OK
// unless the call was not served (Unauthenticated, Canceled, ...);
// famCode is the FAM_E* number of a failure the reply carries, 0 for
// success. It must be safe for concurrent use.
type Observer interface {
	Call(method string, grpcCode codes.Code, famCode int32)
}

// observeCall tells o how the call of fullMethod ("/openfam.v1.Fam/Info")
// ended: with reply resp (nil for streams) and error err.
func observeCall(o Observer, fullMethod string, resp any, err error) {
	method := fullMethod[strings.LastIndexByte(fullMethod, '/')+1:]
	if err != nil {
		o.Call(method, status.Code(err), 0)
		return
	}
	var fam int32
	if r, ok := resp.(interface{ GetErr() *pb.FamError }); ok {
		fam = r.GetErr().GetCode()
	}
	o.Call(method, codes.OK, fam)
}

// ServerUsage is the memory one server holds, for monitoring.
type ServerUsage struct {
	// ID is the memory server's id; 0 is this famd itself (role all).
	ID uint64
	// Hostname is where the server runs ("" for this famd).
	Hostname string
	// Reachable says whether the server answered just now (always true
	// for this famd); the counts below are zero when it did not.
	Reachable bool
	// Regions counts the regions with bytes on the server; Bytes is their
	// size there.
	Regions, Bytes uint64
	// Used is the bytes allocated to items, known for this famd only
	// (memory servers hold segments, not items).
	Used uint64
}

// Usage reports the memory each server holds: this famd's own regions
// first (role all only), then every memory server that joined, which it
// asks (within 2s each, in parallel). It is for metrics and is not served.
func (s *Server) Usage() ([]ServerUsage, error) {
	var out []ServerUsage
	if s.opts.Cluster == nil || s.opts.Cluster.opts.Role != "metadata" {
		n, size, used, err := s.fam.LocalUsage()
		if err != nil {
			return nil, err
		}
		out = append(out, ServerUsage{Hostname: s.host, Reachable: true, Regions: uint64(n), Bytes: size, Used: used})
	}
	if s.opts.Cluster != nil {
		for _, m := range s.opts.Cluster.list(true) {
			out = append(out, ServerUsage{ID: m.GetId(), Hostname: m.GetHostname(), Reachable: m.GetReachable(),
				Regions: m.GetSegments(), Bytes: m.GetBytes()})
		}
	}
	return out, nil
}
