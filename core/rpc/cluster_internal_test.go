package rpc

import (
	"context"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/gofam/openfam/core/memserver"
	"github.com/gofam/openfam/core/transport"
	pb "github.com/gofam/openfam/spec/proto/openfamv1"
)

// serveMemory serves ms's control service on addr until the returned stop
// is called.
func serveMemory(t *testing.T, ms *memserver.Server, addr string) (string, func()) {
	t.Helper()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer(grpc.UnaryInterceptor(ms.UnaryInterceptor))
	pb.RegisterMemoryServer(g, ms)
	go g.Serve(l)
	return l.Addr().String(), g.Stop
}

// A revocation a memory server misses (down or unreachable) is owed and
// sent again until it takes it: the key must not keep working there.
func TestMissedRevocationIsRetried(t *testing.T) {
	ms, err := memserver.New(memserver.Options{DataDir: t.TempDir(), ShmDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer ms.Close()
	addr, stop := serveMemory(t, ms, "127.0.0.1:0")
	c, err := NewCluster(ClusterOptions{DataDir: t.TempDir(), Role: "metadata", Timeout: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	id, err := c.join(&pb.JoinRequest{Uuid: ms.UUID(), Control: addr, DataTcp: "127.0.0.1:1", Secret: []byte(ms.Secret())})
	if err != nil {
		t.Fatal(err)
	}
	seg := &pb.Segment{RegionId: 1, Size: 1 << 20}
	var key transport.Key
	key[0] = 42
	if rep, err := ms.Grant(context.Background(), &pb.GrantRequest{Segment: seg, Key: key[:], End: 4096, Rights: 3, Epoch: c.epoch}); err != nil || rep.GetErr() != nil {
		t.Fatalf("grant: %v %v", err, rep.GetErr())
	}
	stop()
	c.revoke([]uint64{id}, key)
	if c.Owed() != 1 {
		t.Fatalf("%d revocations owed after the server missed one, want 1", c.Owed())
	}
	if _, _, ok := ms.Resolve(key); !ok {
		t.Fatal("the key is gone although its revocation never arrived (test setup)")
	}
	// The server comes back at the same address (same process: it did not
	// restart, so it still honours the key): the owed revocation arrives.
	_, stop = serveMemory(t, ms, addr)
	defer stop()
	for deadline := time.Now().Add(5 * time.Second); c.Owed() != 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d revocations still owed 5s after the server came back", c.Owed())
		}
	}
	if _, _, ok := ms.Resolve(key); ok {
		t.Fatal("the memory server still honours a revoked key")
	}
}
