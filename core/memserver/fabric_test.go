package memserver

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"sync"
	"testing"

	"github.com/gofam/openfam/core/transport"
	pb "github.com/gofam/openfam/spec/proto/openfamv1"
)

// recFabric is a transport.FabricServer that records exposures and
// withdrawals.
type recFabric struct {
	mu        sync.Mutex
	exposed   map[transport.Key]int
	withdrawn map[transport.Key]int
}

func newRecFabric() *recFabric {
	return &recFabric{exposed: map[transport.Key]int{}, withdrawn: map[transport.Key]int{}}
}

func (f *recFabric) Provider() string { return "sockets" }
func (f *recFabric) Addr() []byte     { return []byte{1, 2, 3} }
func (f *recFabric) Expose(k transport.Key, mem []byte, rights uint8) (uint64, uint64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.exposed[k] = len(mem)
	return 7, 0, nil
}
func (f *recFabric) Withdraw(k transport.Key) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.exposed, k)
	f.withdrawn[k]++
}

func (f *recFabric) gone(k transport.Key) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, live := f.exposed[k]
	return !live && f.withdrawn[k] > 0
}

// TestRevocationWithdrawsFromFabric: every way a memory server forgets a
// key (Revoke, a new epoch, Drop, Close) or remaps the memory it reaches
// withdraws it from the fabric endpoint, and FabricKey of a revoked key is
// refused by the data plane.
func TestRevocationWithdrawsFromFabric(t *testing.T) {
	dir := t.TempDir()
	fab := newRecFabric()
	s, err := New(Options{DataDir: dir, ShmDir: filepath.Join(dir, "shm"), Fabric: fab})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	seg := &pb.Segment{RegionId: 1, Size: 1 << 20}
	seg2 := &pb.Segment{RegionId: 2, Size: 1 << 20}
	ok(t)(s.Ensure(ctx, &pb.SegmentRequest{Segment: seg}))
	ok(t)(s.Ensure(ctx, &pb.SegmentRequest{Segment: seg2}))
	grant := func(k transport.Key, sg *pb.Segment, epoch string) {
		ok(t)(s.Grant(ctx, &pb.GrantRequest{Segment: sg, Key: k[:], Start: 0, End: 4096, Rights: 3, Epoch: []byte(epoch)}))
	}

	// The data plane, as famd serves it, with the same endpoint.
	l, err := net.Listen("unix", filepath.Join(dir, "data.sock"))
	if err != nil {
		t.Fatal(err)
	}
	ts := transport.NewServer(s, transport.ServerOptions{Fabric: fab})
	go ts.Serve(l)
	defer ts.Close()
	c, err := transport.Dial("unix", l.Addr().String(), transport.ClientOptions{Conns: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	expose := func(k transport.Key) error {
		_, _, size, rights, err := c.FabricKey(k)
		if err == nil && (size != 4096 || rights != 3) {
			t.Fatalf("FabricKey: size %d rights %d, want 4096 and 3", size, rights)
		}
		return err
	}

	kRevoke, kEpoch, kDrop, kGrow, kClose := key(1), key(2), key(3), key(4), key(5)
	for _, k := range []transport.Key{kRevoke, kEpoch, kDrop} {
		grant(k, seg, "e1")
	}
	grant(kDrop, seg2, "e1") // re-granted into region 2
	for _, k := range []transport.Key{kRevoke, kEpoch, kDrop} {
		if err := expose(k); err != nil {
			t.Fatal(err)
		}
	}
	ok(t)(s.Revoke(ctx, &pb.RevokeRequest{Keys: [][]byte{kRevoke[:]}}))
	if !fab.gone(kRevoke) {
		t.Fatal("Revoke left the key's fabric registration")
	}
	if err := expose(kRevoke); !errors.Is(err, transport.ErrStaleKey) {
		t.Fatalf("FabricKey after Revoke: %v, want ErrStaleKey", err)
	}

	ok(t)(s.Drop(ctx, &pb.SegmentRequest{Segment: seg2}))
	if !fab.gone(kDrop) {
		t.Fatal("Drop left the fabric registration of a key into the segment")
	}

	grant(kGrow, seg, "e2") // a new epoch drops kEpoch
	if !fab.gone(kEpoch) {
		t.Fatal("a new epoch left an old grant's fabric registration")
	}
	if err := expose(kGrow); err != nil {
		t.Fatal(err)
	}
	ok(t)(s.Ensure(ctx, &pb.SegmentRequest{Segment: &pb.Segment{RegionId: 1, Size: 2 << 20}}))
	if !fab.gone(kGrow) {
		t.Fatal("remapping a segment left a registration of the old mapping")
	}
	if err := expose(kGrow); err != nil {
		t.Fatalf("FabricKey after a resize (the key stays granted): %v", err)
	}

	grant(kClose, seg, "e2")
	if err := expose(kClose); err != nil {
		t.Fatal(err)
	}
	ts.Close()
	s.Close()
	if !fab.gone(kClose) || !fab.gone(kGrow) {
		t.Fatal("Close left fabric registrations of the memory it unmapped")
	}
}
