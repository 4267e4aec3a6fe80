package rpc_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/gofam/openfam/core"
	"github.com/gofam/openfam/core/embed"
	"github.com/gofam/openfam/core/rpc"
	"github.com/gofam/openfam/core/transport"
	"github.com/gofam/openfam/internal/famauth"
	"github.com/gofam/openfam/internal/testutil"
	pb "github.com/gofam/openfam/spec/proto/openfamv1"
)

// TestMain doubles as a helper process: with FAMD_TEST_HELPER set the
// test binary acts as a client of another uid (see TestPeerCredIdentity).
func TestMain(m *testing.M) {
	switch h := os.Getenv("FAMD_TEST_HELPER"); h {
	case "":
	case "nobody":
		os.Exit(nobodyHelper())
	case "fdpass":
		os.Exit(fdpassHelper())
	default:
		os.Exit(authHelper(h))
	}
	os.Exit(m.Run())
}

func start(t *testing.T, opts embed.Options) (*embed.Famd, pb.FamClient) {
	t.Helper()
	d, err := embed.Start(opts)
	if err != nil {
		t.Fatalf("embed.Start: %v", err)
	}
	t.Cleanup(func() {
		if err := d.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	if d.SocketPath() == "" {
		return d, nil
	}
	conn, err := rpc.DialUnix(d.SocketPath(), 60*time.Second)
	if err != nil {
		t.Fatalf("DialUnix: %v", err)
	}
	t.Cleanup(func() { conn.Close() })
	return d, pb.NewFamClient(conn)
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return c
}

type reply interface{ GetErr() *pb.FamError }

// result holds a call's two results for the assertions below.
type result[R reply] struct {
	rep R
	err error
}

func check[R reply](rep R, err error) result[R] { return result[R]{rep, err} }

// ok fails the test on a transport error or a domain error.
func (r result[R]) ok(t *testing.T, what string) R {
	t.Helper()
	if r.err != nil {
		t.Fatalf("%s: gRPC error %v", what, r.err)
	}
	if fe := r.rep.GetErr(); fe.GetCode() != 0 {
		t.Fatalf("%s: FAM error %d %s: %s", what, fe.GetCode(), fe.GetOp(), fe.GetMsg())
	}
	return r.rep
}

// code checks the reply's domain error code and that it says something.
func (r result[R]) code(t *testing.T, what string, code core.Code) {
	t.Helper()
	if r.err != nil {
		t.Fatalf("%s: gRPC error %v, want FAM error %d", what, r.err, code)
	}
	if got := r.rep.GetErr().GetCode(); got != int32(code) {
		t.Fatalf("%s: FAM error %d (%s), want %d", what, got, r.rep.GetErr().GetMsg(), code)
	}
	if r.rep.GetErr().GetMsg() == "" {
		t.Fatalf("%s: error without a message", what)
	}
}

func key(t *testing.T, b []byte) transport.Key {
	t.Helper()
	var k transport.Key
	if len(b) != len(k) {
		t.Fatalf("key of %d bytes", len(b))
	}
	copy(k[:], b)
	return k
}

func dataClient(t *testing.T, network, addr, token string) *transport.Client {
	t.Helper()
	c, err := transport.Dial(network, addr, transport.ClientOptions{Conns: 2, Token: token, Timeout: 60 * time.Second})
	if err != nil {
		t.Fatalf("transport.Dial %s %s: %v", network, addr, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

const persistent = uint32(core.Persistent)

func createRegion(t *testing.T, c pb.FamClient, name string, size uint64, mode uint32) *pb.RegionInfo {
	t.Helper()
	rep := check(c.CreateRegion(ctx(t), &pb.CreateRegionRequest{Name: name, Size: size, Mode: mode,
		Attr: &pb.RegionAttr{Memory: persistent, PermLevel: uint32(core.PermDataItem)}})).ok(t, "CreateRegion "+name)
	return rep.GetRegion()
}

// listingSupported checks that the core behind famd lists regions
// (core.Fam.RegionIDs and core.Region.Items); it fails the test otherwise.
func listingSupported(t *testing.T, c pb.FamClient) bool {
	t.Helper()
	rep, err := c.ListRegions(ctx(t), &pb.ListRegionsRequest{})
	if err != nil {
		t.Fatalf("ListRegions: %v", err)
	}
	if rep.GetErr().GetCode() == int32(core.CodeUnimplemented) {
		t.Fatalf("ListRegions is unimplemented: %v", rep.GetErr())
	}
	return true
}

func TestRegionCalls(t *testing.T) {
	d, c := start(t, embed.Options{})
	uid, gid := uint32(os.Getuid()), uint32(os.Getgid())

	r := createRegion(t, c, "r1", 1<<20, 0o640)
	if r.GetId() == 0 || r.GetName() != "r1" || r.GetSize() < 1<<20 || r.GetMode() != 0o640 ||
		r.GetUid() != uid || r.GetGid() != gid || r.GetAttr().GetMemory() != persistent {
		t.Fatalf("CreateRegion gave %v", r)
	}
	check(c.CreateRegion(ctx(t), &pb.CreateRegionRequest{Name: "r1", Size: 4096, Mode: 0o600})).code(t, "CreateRegion duplicate", core.CodeExists)
	check(c.CreateRegion(ctx(t), &pb.CreateRegionRequest{Name: "r0", Size: 0, Mode: 0o600})).code(t, "CreateRegion size 0", core.CodeInvalid)

	lr := check(c.LookupRegion(ctx(t), &pb.LookupRegionRequest{Name: "r1"})).ok(t, "LookupRegion").GetRegion()
	if lr.GetId() != r.GetId() {
		t.Fatalf("LookupRegion id %d, want %d", lr.GetId(), r.GetId())
	}
	check(c.LookupRegion(ctx(t), &pb.LookupRegionRequest{Name: "nope"})).code(t, "LookupRegion missing", core.CodeNotFound)
	check(c.RegionByID(ctx(t), &pb.RegionByIDRequest{Id: 999999})).code(t, "RegionByID missing", core.CodeNotFound)

	check(c.ResizeRegion(ctx(t), &pb.ResizeRegionRequest{Id: r.GetId(), Size: 4 << 20})).ok(t, "ResizeRegion")
	check(c.ChangeRegionPermissions(ctx(t), &pb.ChangeRegionPermissionsRequest{Id: r.GetId(), Mode: 0o600})).ok(t, "ChangeRegionPermissions")
	br := check(c.RegionByID(ctx(t), &pb.RegionByIDRequest{Id: r.GetId()})).ok(t, "RegionByID").GetRegion()
	if br.GetSize() < 4<<20 || br.GetMode() != 0o600 {
		t.Fatalf("after resize and chmod: %v", br)
	}

	info := check(c.Info(ctx(t), &pb.InfoRequest{})).ok(t, "Info")
	if info.GetVersion() != "3.2.0" || info.GetDataUnix() != d.DataSocketPath() || info.GetDataDir() != d.DataDir() ||
		info.GetDataTcp() != "" || info.GetUptimeNs() == 0 || info.GetServerVersion() == "" {
		t.Fatalf("Info gave %v", info)
	}

	if listingSupported(t, c) {
		createRegion(t, c, "r2", 1<<20, 0o600)
		check(c.Allocate(ctx(t), &pb.AllocateRequest{RegionId: r.GetId(), Name: "i", Size: 1000, Mode: 0o600})).ok(t, "Allocate")
		rs := check(c.ListRegions(ctx(t), &pb.ListRegionsRequest{})).ok(t, "ListRegions").GetRegions()
		if len(rs) != 2 || rs[0].GetName() != "r1" || rs[1].GetName() != "r2" || rs[0].GetUsed() != 1000 {
			t.Fatalf("ListRegions gave %v", rs)
		}
		info := check(c.Info(ctx(t), &pb.InfoRequest{})).ok(t, "Info")
		if info.GetRegions() != 2 || info.GetBytesUsed() != 1000 || info.GetBytesTotal() < 5<<20 {
			t.Fatalf("Info usage: %v", info)
		}
		if n, err := d.Regions(); err != nil || n != 2 {
			t.Fatalf("Regions() = %d, %v", n, err)
		}
	} else {
		t.Log("the core cannot list regions yet (core.Fam.RegionIDs, core.Region.Items): listing not checked")
	}

	check(c.DestroyRegion(ctx(t), &pb.RegionByIDRequest{Id: r.GetId()})).ok(t, "DestroyRegion")
	check(c.LookupRegion(ctx(t), &pb.LookupRegionRequest{Name: "r1"})).code(t, "LookupRegion destroyed", core.CodeNotFound)
	check(c.DestroyRegion(ctx(t), &pb.RegionByIDRequest{Id: r.GetId()})).code(t, "DestroyRegion twice", core.CodeNotFound)
}

func TestItemCalls(t *testing.T) {
	d, c := start(t, embed.Options{})
	r := createRegion(t, c, "items", 1<<20, 0o600)
	dc := dataClient(t, "unix", d.DataSocketPath(), "")

	a := check(c.Allocate(ctx(t), &pb.AllocateRequest{RegionId: r.GetId(), Name: "a", Size: 4096, Mode: 0o640})).ok(t, "Allocate").GetItem()
	if len(a.GetKey()) != 16 || a.GetRights() != 3 || a.GetSize() != 4096 || a.GetName() != "a" ||
		a.GetMode() != 0o640 || a.GetRegionId() != r.GetId() || a.GetUid() != uint32(os.Getuid()) {
		t.Fatalf("Allocate gave %v", a)
	}
	check(c.Allocate(ctx(t), &pb.AllocateRequest{RegionId: r.GetId(), Name: "a", Size: 64, Mode: 0o600})).code(t, "Allocate duplicate name", core.CodeExists)
	check(c.Allocate(ctx(t), &pb.AllocateRequest{RegionId: 4242, Name: "x", Size: 64, Mode: 0o600})).code(t, "Allocate in a missing region", core.CodeNotFound)
	check(c.Allocate(ctx(t), &pb.AllocateRequest{RegionId: r.GetId(), Name: "big", Size: 1 << 30, Mode: 0o600})).code(t, "Allocate too large", core.CodeNoSpace)

	msg := []byte("written through the data plane")
	if err := dc.Put(key(t, a.GetKey()), 100, msg); err != nil {
		t.Fatalf("Put: %v", err)
	}

	l := check(c.Lookup(ctx(t), &pb.LookupRequest{Item: "a", Region: "items"})).ok(t, "Lookup").GetItem()
	if bytes.Equal(l.GetKey(), a.GetKey()) || l.GetOffset() != a.GetOffset() {
		t.Fatalf("Lookup gave %v (allocate %v): want a new key for the same item", l, a)
	}
	check(c.Lookup(ctx(t), &pb.LookupRequest{Item: "zz", Region: "items"})).code(t, "Lookup missing", core.CodeNotFound)
	got := make([]byte, len(msg))
	if err := dc.Get(key(t, l.GetKey()), 100, got); err != nil || !bytes.Equal(got, msg) {
		t.Fatalf("Get through the looked-up key: %q, %v", got, err)
	}

	at := check(c.ItemAt(ctx(t), &pb.ItemAtRequest{RegionId: r.GetId(), Offset: a.GetOffset()})).ok(t, "ItemAt").GetItem()
	if at.GetName() != "a" || len(at.GetKey()) != 16 {
		t.Fatalf("ItemAt gave %v", at)
	}
	check(c.ItemAt(ctx(t), &pb.ItemAtRequest{RegionId: r.GetId(), Offset: a.GetOffset() + 8})).code(t, "ItemAt nothing", core.CodeNotFound)

	st := check(c.StatItem(ctx(t), &pb.KeyRequest{Key: a.GetKey()})).ok(t, "StatItem").GetItem()
	if st.GetSize() != 4096 || !bytes.Equal(st.GetKey(), a.GetKey()) || st.GetRights() != 3 {
		t.Fatalf("StatItem gave %v", st)
	}
	check(c.StatItem(ctx(t), &pb.KeyRequest{Key: []byte{1, 2, 3}})).code(t, "StatItem malformed key", core.CodeInvalid)
	check(c.StatItem(ctx(t), &pb.KeyRequest{Key: make([]byte, 16)})).code(t, "StatItem unknown key", core.CodeNoPerm)

	// Copy at the server.
	b := check(c.Allocate(ctx(t), &pb.AllocateRequest{RegionId: r.GetId(), Name: "b", Size: 4096, Mode: 0o600})).ok(t, "Allocate b").GetItem()
	check(c.Copy(ctx(t), &pb.CopyRequest{SrcKey: a.GetKey(), SrcOffset: 100, DstKey: b.GetKey(), DstOffset: 7, Nbytes: uint64(len(msg))})).ok(t, "Copy")
	if err := dc.Get(key(t, b.GetKey()), 7, got); err != nil || !bytes.Equal(got, msg) {
		t.Fatalf("after Copy: %q, %v", got, err)
	}
	check(c.Copy(ctx(t), &pb.CopyRequest{SrcKey: a.GetKey(), SrcOffset: 4000, DstKey: b.GetKey(), Nbytes: 200})).code(t, "Copy out of range", core.CodeOutOfRange)

	// Backups.
	check(c.Backup(ctx(t), &pb.BackupRequest{Key: a.GetKey(), Name: "bk1"})).ok(t, "Backup")
	lb := check(c.ListBackups(ctx(t), &pb.BackupNameRequest{Name: "bk"})).ok(t, "ListBackups")
	if !bytes.Contains([]byte(lb.GetText()), []byte("bk1")) {
		t.Fatalf("ListBackups: %q", lb.GetText())
	}
	if err := dc.Put(key(t, a.GetKey()), 100, make([]byte, len(msg))); err != nil {
		t.Fatal(err)
	}
	check(c.Restore(ctx(t), &pb.RestoreRequest{Name: "bk1", Key: a.GetKey()})).ok(t, "Restore")
	if err := dc.Get(key(t, a.GetKey()), 100, got); err != nil || !bytes.Equal(got, msg) {
		t.Fatalf("after Restore: %q, %v", got, err)
	}
	rn := check(c.RestoreNew(ctx(t), &pb.RestoreNewRequest{Name: "bk1", RegionId: r.GetId(), ItemName: "restored", Mode: 0o600})).ok(t, "RestoreNew").GetItem()
	if rn.GetName() != "restored" || rn.GetSize() != 4096 || len(rn.GetKey()) != 16 {
		t.Fatalf("RestoreNew gave %v", rn)
	}
	if err := dc.Get(key(t, rn.GetKey()), 100, got); err != nil || !bytes.Equal(got, msg) {
		t.Fatalf("RestoreNew's item: %q, %v", got, err)
	}
	check(c.Restore(ctx(t), &pb.RestoreRequest{Name: "nope", Key: a.GetKey()})).code(t, "Restore missing backup", core.CodeBackupNotFound)
	check(c.DeleteBackup(ctx(t), &pb.BackupNameRequest{Name: "bk1"})).ok(t, "DeleteBackup")
	check(c.DeleteBackup(ctx(t), &pb.BackupNameRequest{Name: "bk1"})).code(t, "DeleteBackup twice", core.CodeBackupNotFound)

	if listingSupported(t, c) {
		items := check(c.ListItems(ctx(t), &pb.ListItemsRequest{RegionId: r.GetId()})).ok(t, "ListItems").GetItems()
		if len(items) != 3 || items[0].GetName() != "a" || items[0].GetRights() != 3 || len(items[0].GetKey()) != 0 {
			t.Fatalf("ListItems gave %v", items)
		}
	}

	// CloseItem forgets the key; closing again is harmless.
	before := d.Server().Keys()
	check(c.CloseItem(ctx(t), &pb.KeyRequest{Key: l.GetKey()})).ok(t, "CloseItem")
	check(c.CloseItem(ctx(t), &pb.KeyRequest{Key: l.GetKey()})).ok(t, "CloseItem again")
	if d.Server().Keys() != before-1 {
		t.Fatalf("keys %d after CloseItem, want %d", d.Server().Keys(), before-1)
	}
	check(c.StatItem(ctx(t), &pb.KeyRequest{Key: l.GetKey()})).code(t, "StatItem closed key", core.CodeNoPerm)
	if err := dc.Get(key(t, l.GetKey()), 0, got); !errors.Is(err, transport.ErrStaleKey) {
		t.Fatalf("Get with a closed key: %v, want ErrStaleKey", err)
	}

	check(c.Deallocate(ctx(t), &pb.KeyRequest{Key: b.GetKey()})).ok(t, "Deallocate")
	check(c.Lookup(ctx(t), &pb.LookupRequest{Item: "b", Region: "items"})).code(t, "Lookup deallocated", core.CodeNotFound)
}

// groupPeer starts famd with a TCP listener whose callers are uid 4321 of
// this process's group, and returns famd, a client on the Unix socket (this
// process's uid) and one over TCP (the group member): two users, so that a
// test can act as the owner of an item with one and as a user its mode
// bits bind with the other (the owner is bound by none, as in OpenFAM).
func groupPeer(t *testing.T, token string) (*embed.Famd, pb.FamClient, pb.FamClient) {
	t.Helper()
	d, c := start(t, embed.Options{TCPAddr: "127.0.0.1:0", Token: token,
		TCPIdentity: &rpc.Identity{UID: 4321, GID: uint32(os.Getgid())}})
	conn, err := rpc.DialTCP(d.Addr(), &famauth.Client{Token: token}, 5*time.Second)
	if err != nil {
		t.Fatalf("DialTCP: %v", err)
	}
	t.Cleanup(func() { conn.Close() })
	return d, c, pb.NewFamClient(conn)
}

// TestRevocation: a permission change, a deallocation, a resize and a
// destruction each revoke every key of the items concerned. The chmod's
// new rights are checked for a group member (TCP, uid 4321) the mode binds;
// the owner keeps read and write.
func TestRevocation(t *testing.T) {
	const token = "revocation-token"
	d, c, member := groupPeer(t, token)
	srv := d.Server()
	r := createRegion(t, c, "rev", 1<<20, 0o660)
	a := check(c.Allocate(ctx(t), &pb.AllocateRequest{RegionId: r.GetId(), Name: "a", Size: 8192, Mode: 0o660})).ok(t, "Allocate").GetItem()
	k1 := key(t, a.GetKey())
	other := check(member.Lookup(ctx(t), &pb.LookupRequest{Item: "a", Region: "rev"})).ok(t, "Lookup").GetItem()
	if mem, rights, ok := srv.Resolve(k1); !ok || rights != 3 || len(mem) != 8192 {
		t.Fatalf("Resolve = %d bytes, rights %d, %v", len(mem), rights, ok)
	}
	if _, rights, ok := srv.Resolve(key(t, other.GetKey())); !ok || rights != 3 {
		t.Fatalf("Resolve(group member's key) rights %d, %v", rights, ok)
	}

	// A permission change revokes every key of the item; ItemAt gives a
	// new key with the new rights.
	check(c.ChangeItemPermissions(ctx(t), &pb.ChangeItemPermissionsRequest{Key: a.GetKey(), Mode: 0o640})).ok(t, "ChangeItemPermissions")
	for _, k := range [][]byte{a.GetKey(), other.GetKey()} {
		if _, _, ok := srv.Resolve(key(t, k)); ok {
			t.Fatal("a key still resolves after ChangeItemPermissions")
		}
	}
	check(member.StatItem(ctx(t), &pb.KeyRequest{Key: other.GetKey()})).code(t, "StatItem revoked", core.CodeNoPerm)
	at := check(member.ItemAt(ctx(t), &pb.ItemAtRequest{RegionId: r.GetId(), Offset: a.GetOffset()})).ok(t, "ItemAt").GetItem()
	k2 := key(t, at.GetKey())
	if k2 == k1 || at.GetRights() != uint32(core.RightRead) || at.GetMode() != 0o640 {
		t.Fatalf("ItemAt after chmod: %v", at)
	}
	if _, rights, ok := srv.Resolve(k2); !ok || rights != uint8(core.RightRead) {
		t.Fatalf("Resolve(new key) rights %d, %v", rights, ok)
	}
	dc := dataClient(t, "tcp", d.DataAddr(), token)
	var te *transport.Error
	if err := dc.Put(k2, 0, []byte{1}); !errors.As(err, &te) || te.Code != int32(core.CodeNoPerm) {
		t.Fatalf("Put with a read-only key: %v, want FAM error 2", err)
	}
	// The owner's new key still reads and writes.
	mine := check(c.ItemAt(ctx(t), &pb.ItemAtRequest{RegionId: r.GetId(), Offset: a.GetOffset()})).ok(t, "owner's ItemAt").GetItem()
	if mine.GetRights() != uint32(core.RightRead|core.RightWrite) {
		t.Fatalf("the owner's rights on its 0640 item: %d, want read and write", mine.GetRights())
	}
	if err := dataClient(t, "unix", d.DataSocketPath(), "").Put(key(t, mine.GetKey()), 0, []byte{1}); err != nil {
		t.Fatalf("the owner's put on its 0640 item: %v", err)
	}

	// Deallocation revokes too; the item is then gone for ItemAt.
	check(c.Deallocate(ctx(t), &pb.KeyRequest{Key: mine.GetKey()})).ok(t, "Deallocate")
	if _, _, ok := srv.Resolve(k2); ok {
		t.Fatal("key resolves after Deallocate")
	}
	check(c.ItemAt(ctx(t), &pb.ItemAtRequest{RegionId: r.GetId(), Offset: a.GetOffset()})).code(t, "ItemAt deallocated", core.CodeNotFound)

	// Resizing (a remap) and destroying the region revoke as well.
	b := check(c.Allocate(ctx(t), &pb.AllocateRequest{RegionId: r.GetId(), Name: "b", Size: 64, Mode: 0o600})).ok(t, "Allocate b").GetItem()
	check(c.ResizeRegion(ctx(t), &pb.ResizeRegionRequest{Id: r.GetId(), Size: 2 << 20})).ok(t, "ResizeRegion")
	if _, _, ok := srv.Resolve(key(t, b.GetKey())); ok {
		t.Fatal("key resolves after ResizeRegion")
	}
	b2 := check(c.ItemAt(ctx(t), &pb.ItemAtRequest{RegionId: r.GetId(), Offset: b.GetOffset()})).ok(t, "ItemAt b").GetItem()
	check(c.DestroyRegion(ctx(t), &pb.RegionByIDRequest{Id: r.GetId()})).ok(t, "DestroyRegion")
	if _, _, ok := srv.Resolve(key(t, b2.GetKey())); ok {
		t.Fatal("key resolves after DestroyRegion")
	}
	if n := srv.Keys(); n != 0 {
		t.Fatalf("%d keys left after every item went away", n)
	}
}

// TestOpenFD: famd passes a descriptor whose access mode is the key's
// rights. The read-only case is a group member's (this process, on the Unix
// socket) after the owner (uid 4321 over TCP) chmods the item 0640; the
// owner of an item chmodded 0400 still gets a read-write descriptor, as the
// owner is bound by no mode bits.
func TestOpenFD(t *testing.T) {
	const token = "openfd-token"
	d, c, owner := groupPeer(t, token)
	r := createRegion(t, owner, "fd", 1<<20, 0o770)
	oa := check(owner.Allocate(ctx(t), &pb.AllocateRequest{RegionId: r.GetId(), Name: "a", Size: 4096, Mode: 0o660})).ok(t, "Allocate").GetItem()
	a := check(c.Lookup(ctx(t), &pb.LookupRequest{Item: "a", Region: "fd"})).ok(t, "Lookup").GetItem()
	dc := dataClient(t, "unix", d.DataSocketPath(), "")
	if err := dc.Put(key(t, a.GetKey()), 10, []byte("heap bytes")); err != nil {
		t.Fatal(err)
	}
	checkFD := func(k []byte, wantOff uint64, wantRights uint8, wantFlags int) {
		t.Helper()
		f, off, size, rights, err := dc.OpenFD(key(t, k))
		if err != nil {
			t.Fatalf("OpenFD: %v", err)
		}
		defer f.Close()
		if off != wantOff || size != 4096 || rights != wantRights {
			t.Fatalf("OpenFD: offset %d size %d rights %d; want %d 4096 %d", off, size, rights, wantOff, wantRights)
		}
		fl, err := unix.FcntlInt(f.Fd(), unix.F_GETFL, 0)
		if err != nil || fl&unix.O_ACCMODE != wantFlags {
			t.Fatalf("descriptor flags %#x (%v), want access mode %#x", fl, err, wantFlags)
		}
		buf := make([]byte, 10)
		if _, err := f.ReadAt(buf, int64(off)+10); err != nil || string(buf) != "heap bytes" {
			t.Fatalf("reading the passed file: %q, %v", buf, err)
		}
	}
	checkFD(a.GetKey(), a.GetOffset(), 3, unix.O_RDWR)
	check(owner.ChangeItemPermissions(ctx(t), &pb.ChangeItemPermissionsRequest{Key: oa.GetKey(), Mode: 0o640})).ok(t, "ChangeItemPermissions")
	ro := check(c.ItemAt(ctx(t), &pb.ItemAtRequest{RegionId: r.GetId(), Offset: a.GetOffset()})).ok(t, "ItemAt").GetItem()
	checkFD(ro.GetKey(), a.GetOffset(), 1, unix.O_RDONLY)
	if _, _, _, _, err := dc.OpenFD(key(t, a.GetKey())); !errors.Is(err, transport.ErrStaleKey) {
		t.Fatalf("OpenFD with a revoked key: %v", err)
	}

	// This process's own item, chmodded 0400: still read-write for it.
	mr := createRegion(t, c, "fd-own", 1<<20, 0o600)
	b := check(c.Allocate(ctx(t), &pb.AllocateRequest{RegionId: mr.GetId(), Name: "b", Size: 4096, Mode: 0o600})).ok(t, "Allocate own").GetItem()
	if err := dc.Put(key(t, b.GetKey()), 10, []byte("heap bytes")); err != nil {
		t.Fatal(err)
	}
	check(c.ChangeItemPermissions(ctx(t), &pb.ChangeItemPermissionsRequest{Key: b.GetKey(), Mode: 0o400})).ok(t, "ChangeItemPermissions own")
	b2 := check(c.ItemAt(ctx(t), &pb.ItemAtRequest{RegionId: mr.GetId(), Offset: b.GetOffset()})).ok(t, "ItemAt own").GetItem()
	checkFD(b2.GetKey(), b.GetOffset(), 3, unix.O_RDWR)
	// Listings report the same rights: read and write for the owner.
	items := check(c.ListItems(ctx(t), &pb.ListItemsRequest{RegionId: mr.GetId()})).ok(t, "ListItems").GetItems()
	if len(items) != 1 || items[0].GetRights() != uint32(core.RightRead|core.RightWrite) {
		t.Fatalf("ListItems of the owner's 0400 item: %v, want rights 3", items)
	}
	// And the group member's rights on the owner's 0640 item: read only.
	items = check(c.ListItems(ctx(t), &pb.ListItemsRequest{RegionId: r.GetId()})).ok(t, "ListItems member").GetItems()
	if len(items) != 1 || items[0].GetRights() != uint32(core.RightRead) {
		t.Fatalf("ListItems of another user's 0640 item for a group member: %v, want rights 1", items)
	}
}

func TestBarrier(t *testing.T) {
	_, c := start(t, embed.Options{})
	round := func(job string) {
		t.Helper()
		done := make(chan int, 3)
		errs := make(chan error, 3)
		arrive := func(rank uint32) {
			rep, err := c.Barrier(ctx(t), &pb.BarrierRequest{Job: job, Size: 3, Rank: rank})
			if err == nil && rep.GetErr().GetCode() != 0 {
				err = fmt.Errorf("FAM error %v", rep.GetErr())
			}
			if err != nil {
				errs <- err
			}
			done <- int(rank)
		}
		go arrive(0)
		go arrive(1)
		select {
		case r := <-done:
			t.Fatalf("rank %d left the barrier before all 3 arrived", r)
		case <-time.After(300 * time.Millisecond):
		}
		go arrive(2)
		for i := 0; i < 3; i++ {
			select {
			case <-done:
			case <-time.After(60 * time.Second):
				t.Fatal("barrier did not release all three within 60s")
			}
		}
		select {
		case err := <-errs:
			t.Fatal(err)
		default:
		}
	}
	round("job-a")
	round("job-a") // the same job again: a new generation
	round("job-b")

	// A caller that gives up leaves; the barrier still needs the full count.
	short, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := c.Barrier(short, &pb.BarrierRequest{Job: "job-c", Size: 2, Rank: 0})
	if status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("abandoned Barrier: %v, want DeadlineExceeded", err)
	}
	// The server's copy of the deadline expires at the same moment; give
	// it time to act on it.
	time.Sleep(200 * time.Millisecond)
	var wg sync.WaitGroup
	released := make(chan struct{})
	var again result[*pb.Reply]
	wg.Add(1)
	go func() {
		defer wg.Done()
		again = check(c.Barrier(ctx(t), &pb.BarrierRequest{Job: "job-c", Size: 2, Rank: 0}))
		close(released)
	}()
	select {
	case <-released:
		t.Fatal("a barrier of 2 released with one live caller: the abandoned one was counted")
	case <-time.After(300 * time.Millisecond):
	}
	check(c.Barrier(ctx(t), &pb.BarrierRequest{Job: "job-c", Size: 2, Rank: 1})).ok(t, "Barrier rank 1")
	wg.Wait()
	again.ok(t, "Barrier rank 0 again")

	check(c.Barrier(ctx(t), &pb.BarrierRequest{Job: "j", Size: 0})).code(t, "Barrier size 0", core.CodeInvalid)
	check(c.Barrier(ctx(t), &pb.BarrierRequest{Size: 1})).code(t, "Barrier no job", core.CodeInvalid)
	check(c.Barrier(ctx(t), &pb.BarrierRequest{Job: "j", Size: 2, Rank: 2})).code(t, "Barrier rank too big", core.CodeInvalid)
	check(c.Barrier(ctx(t), &pb.BarrierRequest{Job: "solo", Size: 1})).ok(t, "Barrier of one")
}

func TestTCPToken(t *testing.T) {
	const token = "correct-horse-battery-staple"
	d, _ := start(t, embed.Options{NoSocket: true, TCPAddr: "127.0.0.1:0", Token: token, TCPIdentity: &rpc.Identity{UID: 4321, GID: 8765}})
	if d.Addr() == "" || d.DataAddr() == "" || d.SocketPath() != "" {
		t.Fatalf("addresses: grpc %q data %q socket %q", d.Addr(), d.DataAddr(), d.SocketPath())
	}
	dial := func(tok string) pb.FamClient {
		conn, err := rpc.DialTCP(d.Addr(), &famauth.Client{Token: tok}, 60*time.Second)
		if err != nil {
			t.Fatalf("DialTCP: %v", err)
		}
		t.Cleanup(func() { conn.Close() })
		return pb.NewFamClient(conn)
	}
	if _, err := dial("wrong").Info(ctx(t), &pb.InfoRequest{}); status.Code(err) != codes.Unauthenticated {
		t.Fatalf("Info with a wrong token: %v, want Unauthenticated", err)
	}
	bare, err := grpc.NewClient("passthrough:///"+d.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer bare.Close()
	if _, err := pb.NewFamClient(bare).CreateRegion(ctx(t), &pb.CreateRegionRequest{Name: "x", Size: 4096, Mode: 0o600}); status.Code(err) != codes.Unauthenticated {
		t.Fatalf("CreateRegion without a token: %v, want Unauthenticated", err)
	}

	c := dial(token)
	info := check(c.Info(ctx(t), &pb.InfoRequest{})).ok(t, "Info")
	if info.GetDataTcp() != d.DataAddr() || info.GetDataUnix() != "" {
		t.Fatalf("Info addresses: %v", info)
	}
	r := createRegion(t, c, "tcp", 1<<20, 0o600)
	if r.GetUid() != 4321 || r.GetGid() != 8765 {
		t.Fatalf("region made over TCP owned by %d:%d, want famd's TCP identity 4321:8765", r.GetUid(), r.GetGid())
	}
	a := check(c.Allocate(ctx(t), &pb.AllocateRequest{RegionId: r.GetId(), Size: 64, Mode: 0o600})).ok(t, "Allocate").GetItem()
	dc := dataClient(t, "tcp", d.DataAddr(), token)
	if err := dc.Put(key(t, a.GetKey()), 0, []byte("over tcp")); err != nil {
		t.Fatalf("data plane Put: %v", err)
	}
	if _, err := transport.Dial("tcp", d.DataAddr(), transport.ClientOptions{Conns: 1, Token: "wrong", Timeout: 5 * time.Second}); err == nil {
		t.Fatal("data plane accepted a wrong token")
	}
}

func pbClient(t *testing.T, addr, token string) pb.FamClient {
	conn, err := rpc.DialTCP(addr, &famauth.Client{Token: token}, 60*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return pb.NewFamClient(conn)
}

// TestUnixNeedsNoToken serves both planes from one famd: Unix callers
// are known by the kernel and need no token, TCP callers do.
func TestUnixNeedsNoToken(t *testing.T) {
	d, c := start(t, embed.Options{TCPAddr: "127.0.0.1:0", Token: "tok"})
	check(c.Info(ctx(t), &pb.InfoRequest{})).ok(t, "Info over Unix")
	if _, err := pbClient(t, d.Addr(), "not-tok").Info(ctx(t), &pb.InfoRequest{}); status.Code(err) != codes.Unauthenticated {
		t.Fatalf("Info over TCP with a wrong token: %v", err)
	}
	if _, err := rpc.DialTCP(d.Addr(), &famauth.Client{}, time.Second); err == nil {
		t.Fatal("DialTCP without a token succeeded")
	}
}

// TestPeerCredIdentity runs a client as another uid (root only): famd
// must act for the uid the kernel reports, not for its own.
func TestPeerCredIdentity(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to run a client as another uid")
	}
	d, c := start(t, embed.Options{})
	private := createRegion(t, c, "root-only", 1<<20, 0o600)
	// The helper must reach the socket through its directory, and run a
	// copy of this binary it may execute.
	if err := os.Chmod(dirOf(d.SocketPath()), 0o755); err != nil {
		t.Fatal(err)
	}
	bin := copyExecutable(t)
	cmd := exec.Command(bin, "-test.run=^$")
	cmd.Env = append(os.Environ(), "FAMD_TEST_HELPER=nobody", "FAMD_SOCK="+d.SocketPath(),
		"FAMD_PRIVATE="+strconv.FormatUint(private.GetId(), 10))
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helper: %v\n%s", err, out)
	}
	if want := "uid=65534 gid=65534 destroy=2 lookup=2\n"; string(out) != want {
		t.Fatalf("helper said %q, want %q", out, want)
	}
	check(c.RegionByID(ctx(t), &pb.RegionByIDRequest{Id: private.GetId()})).ok(t, "root still owns its region")
}

func copyExecutable(t *testing.T) string { return testutil.CopyExecutable(t) }

func dirOf(p string) string {
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] == '/' {
			return p[:i]
		}
	}
	return "."
}

// nobodyHelper creates a region as itself, then tries to destroy and look
// up root's private region, and prints what happened.
func nobodyHelper() int {
	conn, err := rpc.DialUnix(os.Getenv("FAMD_SOCK"), 60*time.Second)
	if err != nil {
		fmt.Println(err)
		return 1
	}
	defer conn.Close()
	c := pb.NewFamClient(conn)
	cx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	r, err := c.CreateRegion(cx, &pb.CreateRegionRequest{Name: "nobodys", Size: 4096, Mode: 0o644})
	if err != nil || r.GetErr() != nil {
		fmt.Println("CreateRegion:", err, r.GetErr())
		return 1
	}
	id, _ := strconv.ParseUint(os.Getenv("FAMD_PRIVATE"), 10, 64)
	dr, err := c.DestroyRegion(cx, &pb.RegionByIDRequest{Id: id})
	if err != nil {
		fmt.Println("DestroyRegion:", err)
		return 1
	}
	lr, err := c.LookupRegion(cx, &pb.LookupRegionRequest{Name: "root-only"})
	if err != nil {
		fmt.Println("LookupRegion:", err)
		return 1
	}
	fmt.Printf("uid=%d gid=%d destroy=%d lookup=%d\n", r.GetRegion().GetUid(), r.GetRegion().GetGid(),
		dr.GetErr().GetCode(), lr.GetErr().GetCode())
	return 0
}
