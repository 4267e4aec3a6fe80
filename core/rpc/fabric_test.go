package rpc_test

import (
	"errors"
	"sync"
	"testing"

	"github.com/gofam/openfam/core/embed"
	"github.com/gofam/openfam/core/rpc"
	"github.com/gofam/openfam/core/transport"
	"github.com/gofam/openfam/internal/famauth"
	pb "github.com/gofam/openfam/spec/proto/openfamv1"
)

// keyFabric is a transport.FabricServer double recording what is exposed.
type keyFabric struct {
	mu      sync.Mutex
	exposed map[transport.Key]bool
}

func (f *keyFabric) Provider() string { return "sockets" }
func (f *keyFabric) Addr() []byte     { return []byte("fi_addr") }
func (f *keyFabric) Expose(k transport.Key, mem []byte, rights uint8) (uint64, uint64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.exposed[k] = true
	return 1, 0, nil
}
func (f *keyFabric) Withdraw(k transport.Key) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.exposed, k)
}
func (f *keyFabric) has(k transport.Key) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.exposed[k]
}

// TestFabricRevocation: famd serving its own regions on a fabric endpoint
// withdraws a key from it whenever it revokes the key (chmod, close,
// deallocation, resize, destroy, shutdown), Info announces the endpoint,
// and FabricKey of a revoked key is refused.
func TestFabricRevocation(t *testing.T) {
	fab := &keyFabric{exposed: map[transport.Key]bool{}}
	d, c := start(t, embed.Options{Fabric: fab})
	info := check(c.Info(ctx(t), &pb.InfoRequest{})).ok(t, "Info")
	if info.GetProvider() != "sockets" || string(info.GetFabricAddr()) != "fi_addr" {
		t.Fatalf("Info announces provider %q address %q", info.GetProvider(), info.GetFabricAddr())
	}
	dc := dataClient(t, "unix", d.DataSocketPath(), "")
	r := createRegion(t, c, "fab", 1<<20, 0o660)
	alloc := func(name string) transport.Key {
		it := check(c.Allocate(ctx(t), &pb.AllocateRequest{RegionId: r.GetId(), Name: name, Size: 4096, Mode: 0o660})).ok(t, "Allocate").GetItem()
		k := key(t, it.GetKey())
		_, _, size, rights, err := dc.FabricKey(k)
		if err != nil || size != 4096 || rights != 3 || !fab.has(k) {
			t.Fatalf("FabricKey: size %d rights %d err %v, exposed %v", size, rights, err, fab.has(k))
		}
		return k
	}
	revoked := func(what string, k transport.Key) {
		t.Helper()
		if fab.has(k) {
			t.Fatalf("%s left the key exposed on the fabric", what)
		}
		if _, _, _, _, err := dc.FabricKey(k); !errors.Is(err, transport.ErrStaleKey) {
			t.Fatalf("FabricKey after %s: %v, want ErrStaleKey", what, err)
		}
	}
	k := alloc("chmod")
	check(c.ChangeItemPermissions(ctx(t), &pb.ChangeItemPermissionsRequest{Key: k[:], Mode: 0o400})).ok(t, "ChangeItemPermissions")
	revoked("chmod", k)
	k = alloc("close")
	check(c.CloseItem(ctx(t), &pb.KeyRequest{Key: k[:]})).ok(t, "CloseItem")
	revoked("CloseItem", k)
	k = alloc("dealloc")
	check(c.Deallocate(ctx(t), &pb.KeyRequest{Key: k[:]})).ok(t, "Deallocate")
	revoked("Deallocate", k)
	k = alloc("resize")
	check(c.ResizeRegion(ctx(t), &pb.ResizeRegionRequest{Id: r.GetId(), Size: 2 << 20})).ok(t, "ResizeRegion")
	revoked("ResizeRegion", k)
	k = alloc("destroy")
	check(c.DestroyRegion(ctx(t), &pb.RegionByIDRequest{Id: r.GetId()})).ok(t, "DestroyRegion")
	revoked("DestroyRegion", k)
	r = createRegion(t, c, "fab2", 1<<20, 0o660)
	k = alloc("shutdown")
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if fab.has(k) {
		t.Fatal("famd's shutdown left a key exposed on the fabric")
	}
}

// TestJoinProofCoversFabric: a memory server's join proof covers its
// data-plane provider and fabric address when it gives them, so a proof
// captured from one join cannot register another fabric address; a join
// without them is proved as before.
func TestJoinProofCoversFabric(t *testing.T) {
	const tok = "server-token"
	plain := &pb.JoinRequest{Uuid: "u", Control: "h:1", DataTcp: "h:2", Hostname: "h", Secret: []byte("s")}
	fab := &pb.JoinRequest{Uuid: "u", Control: "h:1", DataTcp: "h:2", Hostname: "h", Secret: []byte("s"),
		Provider: "tcp;ofi_rxm", FabricAddr: []byte{1, 2, 3}}
	moved := &pb.JoinRequest{Uuid: "u", Control: "h:1", DataTcp: "h:2", Hostname: "h", Secret: []byte("s"),
		Provider: "tcp;ofi_rxm", FabricAddr: []byte{9, 9, 9}}
	if len(rpc.JoinProofFields(plain)) != 6 {
		t.Fatalf("a join without a fabric is proved over %d fields, want the 6 it always had", len(rpc.JoinProofFields(plain)))
	}
	proof := famauth.ServerProof(tok, rpc.JoinProofFields(fab)...)
	if !famauth.CheckServerProof(tok, proof, rpc.JoinProofFields(fab)...) {
		t.Fatal("the proof of a join with a fabric does not check")
	}
	for _, other := range []*pb.JoinRequest{plain, moved} {
		if famauth.CheckServerProof(tok, proof, rpc.JoinProofFields(other)...) {
			t.Fatalf("a proof made for fabric address %x checks for %q %x", fab.GetFabricAddr(), other.GetProvider(), other.GetFabricAddr())
		}
	}
}
