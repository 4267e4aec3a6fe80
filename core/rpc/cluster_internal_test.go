package rpc

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/gofam/openfam/core/memserver"
	"github.com/gofam/openfam/core/transport"
	pb "github.com/gofam/openfam/spec/proto/openfamv1"
)

// clusterDeadline bounds every wait in these tests. It is a deadline, not
// a measurement: owed revocations go out once a second, and a machine with
// every core busy may take several rounds to complete one.
const clusterDeadline = 60 * time.Second

// serveMemory serves ms's control service on addr until the returned stop
// is called. Each extra interceptor runs after the secret check.
func serveMemory(t *testing.T, ms *memserver.Server, addr string, extra ...grpc.UnaryServerInterceptor) (string, func()) {
	t.Helper()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer(grpc.ChainUnaryInterceptor(append([]grpc.UnaryServerInterceptor{ms.UnaryInterceptor}, extra...)...))
	pb.RegisterMemoryServer(g, ms)
	go g.Serve(l)
	return l.Addr().String(), g.Stop
}

// owed is a cluster owing one memory server the revocation of one key.
type owed struct {
	ms      *memserver.Server
	dataDir string // ms's data directory
	c       *Cluster
	id      uint64 // ms's server id
	key     transport.Key
	addr    string // where ms's control service listened
}

// owedSetup starts a memory server, joins it to a metadata-only cluster,
// grants it a key and then stops its control service, so that revoking
// the key leaves one revocation owed.
func owedSetup(t *testing.T) owed {
	t.Helper()
	dataDir := t.TempDir()
	ms, err := memserver.New(memserver.Options{DataDir: dataDir, ShmDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ms.Close)
	addr, stop := serveMemory(t, ms, "127.0.0.1:0")
	c, err := NewCluster(ClusterOptions{DataDir: t.TempDir(), Role: "metadata"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
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
	return owed{ms: ms, dataDir: dataDir, c: c, id: id, key: key, addr: addr}
}

// waitOwed waits until c owes no revocation.
func waitOwed(t *testing.T, c *Cluster) {
	t.Helper()
	for deadline := time.Now().Add(clusterDeadline); c.Owed() != 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d revocations still owed %v after the server came back", c.Owed(), clusterDeadline)
		}
	}
}

// A revocation a memory server misses (down or unreachable) is owed and
// sent again until it takes it: the key must not keep working there.
func TestMissedRevocationIsRetried(t *testing.T) {
	o := owedSetup(t)
	ms, c, key, addr := o.ms, o.c, o.key, o.addr
	// The server comes back at the same address (same process: it did not
	// restart, so it still honours the key): the owed revocation arrives.
	_, stop := serveMemory(t, ms, addr)
	defer stop()
	waitOwed(t, c)
	if _, _, ok := ms.Resolve(key); ok {
		t.Fatal("the memory server still honours a revoked key")
	}
}

// A retried revocation stays owed until the server has answered: while
// the call is on its way (here: held at the server's door) Owed must not
// report it delivered, since the server still honours the key. The retry
// used to take the keys off the list before sending them.
func TestOwedRevocationCountsUntilAcknowledged(t *testing.T) {
	o := owedSetup(t)
	ms, c, key, addr := o.ms, o.c, o.key, o.addr
	arrived, release := make(chan struct{}, 16), make(chan struct{})
	hold := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		if strings.HasSuffix(info.FullMethod, "/Revoke") {
			arrived <- struct{}{}
			select {
			case <-release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		return h(ctx, req)
	}
	_, stop := serveMemory(t, ms, addr, hold)
	defer stop()
	select {
	case <-arrived:
	case <-time.After(clusterDeadline):
		t.Fatalf("the owed revocation was not retried within %v", clusterDeadline)
	}
	if _, _, ok := ms.Resolve(key); !ok {
		t.Fatal("the key is gone although its revocation is held at the door (test setup)")
	}
	if n := c.Owed(); n != 1 {
		t.Fatalf("Owed() = %d while the server still honours the key, want 1", n)
	}
	close(release)
	waitOwed(t, c)
	if _, _, ok := ms.Resolve(key); ok {
		t.Fatal("the memory server still honours a revoked key")
	}
}

// A server that joins again without having restarted (a join the
// metadata service took but whose answer was lost, so the server asked
// again) still holds its grants: the revocations it owed stay owed. They
// used to be dropped with the old membership entry, leaving the key
// working for good.
func TestRejoinWithoutRestartKeepsOwedRevocations(t *testing.T) {
	o := owedSetup(t)
	ms, c, id, key, addr := o.ms, o.c, o.id, o.key, o.addr
	again, err := c.join(&pb.JoinRequest{Uuid: ms.UUID(), Control: addr, DataTcp: "127.0.0.1:1", Secret: []byte(ms.Secret())})
	if err != nil || again != id {
		t.Fatalf("rejoin: id %d, %v; want id %d", again, err, id)
	}
	if n := c.Owed(); n != 1 {
		t.Fatalf("Owed() = %d after a rejoin of the same incarnation, want 1", n)
	}
	_, stop := serveMemory(t, ms, addr)
	defer stop()
	waitOwed(t, c)
	if _, _, ok := ms.Resolve(key); ok {
		t.Fatal("the memory server still honours a revoked key")
	}
}

// A server that restarted (it rejoins with a new secret) holds no grants:
// what its previous incarnation was owed is dropped, not sent to the new
// one for ever.
func TestRestartedServerOwesNothing(t *testing.T) {
	o := owedSetup(t)
	ms, c, id := o.ms, o.c, o.id
	ms2, err := memserver.New(memserver.Options{DataDir: o.dataDir, ShmDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer ms2.Close()
	if ms2.UUID() != ms.UUID() || ms2.Secret() == ms.Secret() {
		t.Fatal("a restarted memory server keeps its uuid and gets a new secret (test setup)")
	}
	addr2, stop := serveMemory(t, ms2, "127.0.0.1:0")
	defer stop()
	again, err := c.join(&pb.JoinRequest{Uuid: ms2.UUID(), Control: addr2, DataTcp: "127.0.0.1:1", Secret: []byte(ms2.Secret())})
	if err != nil || again != id {
		t.Fatalf("rejoin: id %d, %v; want id %d", again, err, id)
	}
	waitOwed(t, c)
}

// A revocation that fails on a server's previous incarnation after the
// server rejoined with a new secret (a restart) is moot, and must not
// replace what the new incarnation is owed: that key would stay honoured.
func TestLateFailureOnRestartedServerKeepsNewOwedRevocations(t *testing.T) {
	o := owedSetup(t)
	c, id := o.c, o.id
	c.mu.Lock()
	old := c.members[id]
	c.mu.Unlock()
	ms2, err := memserver.New(memserver.Options{DataDir: o.dataDir, ShmDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer ms2.Close()
	addr2, stop := serveMemory(t, ms2, "127.0.0.1:0")
	if again, err := c.join(&pb.JoinRequest{Uuid: ms2.UUID(), Control: addr2, DataTcp: "127.0.0.1:1", Secret: []byte(ms2.Secret())}); err != nil || again != id {
		t.Fatalf("rejoin: id %d, %v; want id %d", again, err, id)
	}
	var key2 transport.Key
	key2[0] = 43
	seg := &pb.Segment{RegionId: 1, Size: 1 << 20}
	if rep, err := ms2.Grant(context.Background(), &pb.GrantRequest{Segment: seg, Key: key2[:], End: 4096, Rights: 3, Epoch: c.epoch}); err != nil || rep.GetErr() != nil {
		t.Fatalf("grant: %v %v", err, rep.GetErr())
	}
	stop()
	c.revoke([]uint64{id}, key2)
	// The call to the old incarnation that was still out fails now.
	var key3 transport.Key
	key3[0] = 44
	c.owe(old, key3)
	if n := c.Owed(); n != 1 {
		t.Fatalf("Owed() = %d, want 1 (the new incarnation's key only)", n)
	}
	_, stop = serveMemory(t, ms2, addr2)
	defer stop()
	waitOwed(t, c)
	if _, _, ok := ms2.Resolve(key2); ok {
		t.Fatal("the restarted memory server still honours a revoked key")
	}
}
