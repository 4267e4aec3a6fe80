package memserver

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"golang.org/x/sys/unix"

	"github.com/gofam/openfam/core/transport"
	pb "github.com/gofam/openfam/spec/proto/openfamv1"
)

func newServer(t *testing.T, dir string) *Server {
	t.Helper()
	s, err := New(Options{DataDir: dir, ShmDir: filepath.Join(dir, "shm")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

func key(b byte) transport.Key {
	var k transport.Key
	for i := range k {
		k[i] = b
	}
	return k
}

// ok and refused check a control call's outcome: ok(t)(s.Call(...)).
func ok(t *testing.T) func(*pb.Reply, error) {
	return func(rep *pb.Reply, err error) {
		t.Helper()
		if err != nil || rep.GetErr().GetCode() != 0 {
			t.Fatalf("call failed: %v %v", err, rep.GetErr())
		}
	}
}

func refused(t *testing.T) func(*pb.Reply, error) {
	return func(rep *pb.Reply, err error) {
		t.Helper()
		if err == nil && rep.GetErr().GetCode() == 0 {
			t.Fatal("call succeeded; want a refusal")
		}
	}
}

func TestGrantReachesExactlyItsShare(t *testing.T) {
	s := newServer(t, t.TempDir())
	ctx := context.Background()
	seg := &pb.Segment{RegionId: 7, Size: 1 << 20}
	ok(t)(s.Ensure(ctx, &pb.SegmentRequest{Segment: seg}))
	k := key(1)
	ok(t)(s.Grant(ctx, &pb.GrantRequest{Segment: seg, Key: k[:], Start: 4096, End: 8192, Rights: 3, Epoch: []byte("e1")}))
	mem, rights, found := s.Resolve(k)
	if !found || len(mem) != 4096 || rights != 3 || cap(mem) != 4096 {
		t.Fatalf("Resolve: %d bytes (cap %d), rights %d, ok %v; want the 4096-byte share, rights 3", len(mem), cap(mem), rights, found)
	}
	copy(mem, "share")
	whole, _, _ := func() ([]byte, uint8, bool) {
		k2 := key(2)
		ok(t)(s.Grant(ctx, &pb.GrantRequest{Segment: seg, Key: k2[:], Start: 0, End: 1 << 20, Rights: 1, Epoch: []byte("e1")}))
		return s.Resolve(k2)
	}()
	if !bytes.Equal(whole[4096:4101], []byte("share")) {
		t.Fatal("the share is not at its offset in the segment")
	}
	// A grant beyond the segment, or malformed, is refused.
	k3 := key(3)
	refused(t)(s.Grant(ctx, &pb.GrantRequest{Segment: seg, Key: k3[:], Start: 0, End: 2 << 20, Rights: 1, Epoch: []byte("e1")}))
	refused(t)(s.Grant(ctx, &pb.GrantRequest{Segment: seg, Key: k3[:], Start: 9, End: 8, Rights: 1, Epoch: []byte("e1")}))
	refused(t)(s.Grant(ctx, &pb.GrantRequest{Segment: seg, Key: []byte("short"), Start: 0, End: 8, Epoch: []byte("e1")}))
	if _, _, found := s.Resolve(k3); found {
		t.Fatal("a refused grant resolves")
	}
	// Revoked keys resolve no more; unknown ones are ignored.
	ok(t)(s.Revoke(ctx, &pb.RevokeRequest{Keys: [][]byte{k[:], []byte("junk")}}))
	if _, _, found := s.Resolve(k); found {
		t.Fatal("a revoked key still resolves")
	}
}

// A Grant the metadata service gave up on (its deadline passed, so it
// revoked the key instead) may run here after that Revoke: it must not
// bring the key back, or the key would outlive its revocation with no
// revocation owed. Both a grant arriving after the key's revocation and a
// grant whose caller's context is done are refused.
func TestLateGrantDoesNotOutliveRevocation(t *testing.T) {
	s := newServer(t, t.TempDir())
	ctx := context.Background()
	seg := &pb.Segment{RegionId: 5, Size: 1 << 20}
	ok(t)(s.Ensure(ctx, &pb.SegmentRequest{Segment: seg}))

	// The Revoke overtook the Grant: the key was never granted here.
	late := key(0x11)
	ok(t)(s.Revoke(ctx, &pb.RevokeRequest{Keys: [][]byte{late[:]}}))
	refused(t)(s.Grant(ctx, &pb.GrantRequest{Segment: seg, Key: late[:], End: 4096, Rights: 3, Epoch: []byte("e1")}))
	if _, _, found := s.Resolve(late); found {
		t.Fatal("a key granted after its revocation resolves")
	}

	// A granted and revoked key is not granted again either.
	again := key(0x12)
	ok(t)(s.Grant(ctx, &pb.GrantRequest{Segment: seg, Key: again[:], End: 4096, Rights: 3, Epoch: []byte("e1")}))
	ok(t)(s.Revoke(ctx, &pb.RevokeRequest{Keys: [][]byte{again[:]}}))
	refused(t)(s.Grant(ctx, &pb.GrantRequest{Segment: seg, Key: again[:], End: 4096, Rights: 3, Epoch: []byte("e1")}))
	if _, _, found := s.Resolve(again); found {
		t.Fatal("a revoked key resolves after a second grant")
	}

	// The caller gave up before the grant ran.
	gone, cancel := context.WithCancel(ctx)
	cancel()
	abandoned := key(0x13)
	refused(t)(s.Grant(gone, &pb.GrantRequest{Segment: seg, Key: abandoned[:], End: 4096, Rights: 3, Epoch: []byte("e1")}))
	if _, _, found := s.Resolve(abandoned); found {
		t.Fatal("a grant its caller abandoned resolves")
	}

	// Fresh keys are granted as before.
	fresh := key(0x14)
	ok(t)(s.Grant(ctx, &pb.GrantRequest{Segment: seg, Key: fresh[:], End: 4096, Rights: 3, Epoch: []byte("e1")}))
	if _, _, found := s.Resolve(fresh); !found {
		t.Fatal("a fresh grant does not resolve")
	}
}

func TestNewEpochDropsOlderGrants(t *testing.T) {
	s := newServer(t, t.TempDir())
	ctx := context.Background()
	seg := &pb.Segment{RegionId: 1, Size: 8192}
	a, b := key(0xa), key(0xb)
	ok(t)(s.Grant(ctx, &pb.GrantRequest{Segment: seg, Key: a[:], Start: 0, End: 4096, Rights: 3, Epoch: []byte("boot-1")}))
	ok(t)(s.Grant(ctx, &pb.GrantRequest{Segment: seg, Key: b[:], Start: 4096, End: 8192, Rights: 3, Epoch: []byte("boot-2")}))
	if _, _, found := s.Resolve(a); found {
		t.Fatal("a key of the previous metadata service still resolves after a grant of a new one")
	}
	if _, _, found := s.Resolve(b); !found {
		t.Fatal("the new grant does not resolve")
	}
}

func TestPersistentSegmentSurvivesRestartAndDropDeletesIt(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	seg := &pb.Segment{RegionId: 3, Size: 64 << 10, Persistent: true}
	s, err := New(Options{DataDir: dir, ShmDir: filepath.Join(dir, "shm")})
	if err != nil {
		t.Fatal(err)
	}
	k := key(4)
	ok(t)(s.Grant(ctx, &pb.GrantRequest{Segment: seg, Key: k[:], Start: 0, End: 64 << 10, Rights: 3, Epoch: []byte("e")}))
	mem, _, _ := s.Resolve(k)
	copy(mem[1000:], "persist")
	id := s.UUID()
	s.Close()
	s2 := newServer(t, dir)
	if s2.UUID() != id {
		t.Fatal("the server's identity changed across a restart")
	}
	if s2.Secret() == s.Secret() {
		t.Fatal("the secret did not change across a restart")
	}
	if _, _, found := s2.Resolve(k); found {
		t.Fatal("a key survived a restart")
	}
	ok(t)(s2.Grant(ctx, &pb.GrantRequest{Segment: seg, Key: k[:], Start: 0, End: 64 << 10, Rights: 1, Epoch: []byte("e2")}))
	mem, _, _ = s2.Resolve(k)
	if string(mem[1000:1007]) != "persist" {
		t.Fatal("persistent segment lost its bytes across a restart")
	}
	// Zero clears exactly the range asked.
	ok(t)(s2.Zero(ctx, &pb.ZeroRequest{Segment: seg, Offset: 1002, Length: 3}))
	if string(mem[1000:1007]) != "pe\x00\x00\x00st" {
		t.Fatalf("after Zero: %q", mem[1000:1007])
	}
	refused(t)(s2.Zero(ctx, &pb.ZeroRequest{Segment: seg, Offset: 64<<10 - 1, Length: 2}))
	ok(t)(s2.Drop(ctx, &pb.SegmentRequest{Segment: seg}))
	if _, _, found := s2.Resolve(k); found {
		t.Fatal("a key into a dropped segment still resolves")
	}
	if _, err := os.Stat(filepath.Join(dir, "segments", "seg-3.heap")); !os.IsNotExist(err) {
		t.Fatalf("segment file still there after Drop: %v", err)
	}
}

func TestControlCallsNeedTheSecret(t *testing.T) {
	s := newServer(t, t.TempDir())
	call := func(md metadata.MD) error {
		ctx := metadata.NewIncomingContext(context.Background(), md)
		_, err := s.UnaryInterceptor(ctx, nil, &grpc.UnaryServerInfo{}, func(context.Context, any) (any, error) { return nil, nil })
		return err
	}
	for name, md := range map[string]metadata.MD{
		"none":  {},
		"wrong": metadata.Pairs(MDSecret, "not-the-secret"),
		"two":   metadata.Pairs(MDSecret, s.Secret(), MDSecret, s.Secret()),
	} {
		if err := call(md); status.Code(err) != codes.Unauthenticated {
			t.Fatalf("%s secret: %v, want Unauthenticated", name, err)
		}
	}
	if err := call(metadata.Pairs(MDSecret, s.Secret())); err != nil {
		t.Fatalf("right secret refused: %v", err)
	}
}

// Dropping a segment gives its pages back at once, not when the server
// stops (its mappings stay for racing requests, so only punching the file
// frees them). Needs root to mount a small tmpfs.
func TestDropFreesSpaceAtOnce(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a small tmpfs")
	}
	dir := t.TempDir()
	shm := filepath.Join(dir, "shm")
	if err := os.MkdirAll(shm, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", shm, "tmpfs", 0, "size=16m"); err != nil {
		t.Skipf("cannot mount a tmpfs here: %v", err)
	}
	defer unix.Unmount(shm, unix.MNT_DETACH)
	s := newServer(t, dir)
	used := func() uint64 {
		var st unix.Statfs_t
		if err := unix.Statfs(shm, &st); err != nil {
			t.Fatal(err)
		}
		return (st.Blocks - st.Bfree) * uint64(st.Bsize)
	}
	base := used()
	ctx := context.Background()
	for i := uint64(1); i <= 4; i++ {
		seg := &pb.Segment{RegionId: i, Size: 12 << 20}
		k := key(byte(i))
		ok(t)(s.Grant(ctx, &pb.GrantRequest{Segment: seg, Key: k[:], Start: 0, End: 12 << 20, Rights: 3, Epoch: []byte("e")}))
		ok(t)(s.Zero(ctx, &pb.ZeroRequest{Segment: seg, Offset: 0, Length: 10 << 20}))
		mem, _, _ := s.Resolve(k)
		for j := 0; j < 10<<20; j += 4096 {
			mem[j] = 1
		}
		ok(t)(s.Drop(ctx, &pb.SegmentRequest{Segment: seg}))
		if u := used(); u > base+1<<20 {
			t.Fatalf("segment %d: %d bytes still in use after Drop (%d before)", i, u, base)
		}
	}
}
