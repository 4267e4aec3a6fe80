package core_test

import (
	"os"
	"testing"
	"time"

	"google.golang.org/grpc/connectivity"

	"github.com/gofam/openfam/core"
	"github.com/gofam/openfam/core/embed"
	"github.com/gofam/openfam/core/rpc"
)

// Tests of what only a famd-served program has: a cluster token, famd
// restarting under its clients, famd's revocation events on the session
// stream, keys renewed. What every mode has is in the shared suite
// (core_test.go, run on each mode by forEachMode).

// A TCP client with the wrong cluster token is refused (famd-only: the
// embedded store and the Unix socket have no token).
func TestWrongTokenRefused(t *testing.T) {
	d := startFamd(t, embed.Options{NoSocket: true, TCPAddr: "127.0.0.1:0", Token: "s3cret"})
	client(t, d.Addr(), writeToken(t, "s3cret")) // the right one is accepted
	o := core.DefaultOptions()
	o.Server, o.TokenFile, o.Timeout = d.Addr(), writeToken(t, "wrong"), 2*time.Second
	if f, err := core.Initialize(o); err == nil {
		must(t, "finalize", f.Finalize())
		t.Fatal("a wrong token was accepted")
	}
}

// A famd restart loses every key; clients re-resolve and carry on with the
// data that was acknowledged before the crash.
func TestRemoteRestart(t *testing.T) {
	dir := t.TempDir()
	o := embed.Options{DataDir: dir + "/data", ShmDir: dir + "/shm", NoSocket: true, TCPAddr: "127.0.0.1:0", Token: "tok"}
	d := startFamd(t, o)
	tok := writeToken(t, "tok")
	f := client(t, d.Addr(), tok)
	r, err := f.CreateRegion("durable", 1<<16, 0o600, core.RegionAttr{Memory: core.Persistent})
	if err != nil {
		t.Fatal(err)
	}
	it, err := r.Allocate("x", 64, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Default().Put([]byte("before"), it, 0); err != nil {
		t.Fatal(err)
	}
	addr, daddr := d.Addr(), d.DataAddr()
	must(t, "closing famd", d.Close())
	code(t, f.Default().Put([]byte("down"), it, 0), core.CodeRPC)
	o.TCPAddr, o.DataTCPAddr = addr, daddr
	startFamd(t, o)
	got := make([]byte, 6)
	if err := f.Default().Get(got, it, 0); err != nil || string(got) != "before" {
		t.Fatalf("after restart: %q, %v", got, err)
	}
	// The put before the restart is still due for durability (no quiet
	// since): commit it while famd is up, since the test's cleanup stops
	// famd before it finalizes the client.
	must(t, "quiet after the restart", f.Default().Quiet())
}

// A famd that restarts while the client's connection to it is backing off
// (gRPC's TRANSIENT_FAILURE after failed reconnects) is reached by the next
// call, not only when the backoff timer (up to two minutes) expires: the
// call used to fail at once with the old "connection refused".
func TestRemoteRestartWhileBackingOff(t *testing.T) {
	dir := t.TempDir()
	o := embed.Options{DataDir: dir + "/data", ShmDir: dir + "/shm", NoSocket: true, TCPAddr: "127.0.0.1:0", Token: "tok"}
	d := startFamd(t, o)
	f := client(t, d.Addr(), writeToken(t, "tok"))
	if _, err := f.CreateRegion("durable", 1<<16, 0o600, core.RegionAttr{Memory: core.Persistent}); err != nil {
		t.Fatal(err)
	}
	addr, daddr := d.Addr(), d.DataAddr()
	must(t, "closing famd", d.Close())
	// The session loop keeps reconnecting; wait until gRPC has given up
	// for now and backs off.
	waitFor(t, "the connection to the dead famd to back off", func() bool {
		return core.ControlState(f) == connectivity.TransientFailure
	})
	o.TCPAddr, o.DataTCPAddr = addr, daddr
	startFamd(t, o)
	if _, err := f.LookupRegion("durable"); err != nil {
		t.Fatalf("lookup right after famd came back: %v", err)
	}
}

// Another program's permission change reaches an item this program has
// mapped (same host: famd passed the heap file) without any call failing
// first: famd reports the revoked key on the session stream and the
// handle resolves again.
// TestRevocationReachesMappedItems: another program's chmod reaches the
// items this program has mapped at once, and so does its deallocation. The
// other program is the item's owner, a different user (a TCP client famd
// knows as uid 7000 of this process's group), so that the mode bits bind
// this program: the owner itself is bound by none (as in OpenFAM).
func TestRevocationReachesMappedItems(t *testing.T) {
	gid := uint32(os.Getgid())
	d := startFamd(t, embed.Options{TCPAddr: "127.0.0.1:0", Token: "rev", TCPIdentity: &rpc.Identity{UID: 7000, GID: gid}})
	owner := client(t, d.Addr(), writeToken(t, "rev"))
	a := client(t, "unix:"+d.SocketPath(), "")
	r, err := owner.CreateRegion("pushed", 1<<20, 0o770, core.RegionAttr{PermLevel: core.PermDataItem})
	if err != nil {
		t.Fatal(err)
	}
	other, err := r.Allocate("x", 4096, 0o660)
	if err != nil {
		t.Fatal(err)
	}
	it, err := a.Lookup("x", "pushed")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, rights, ok := it.Local(); !ok || rights != core.RightRead|core.RightWrite {
		t.Fatalf("item not mapped read-write here (ok %v, rights %v)", ok, rights)
	}
	ca := a.Default()
	if err := ca.Put([]byte("before"), it, 0); err != nil {
		t.Fatal(err)
	}
	if err := other.ChangePermissions(0o640); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the mapped item to become read-only", func() bool {
		_, _, rights, ok := it.Local()
		return ok && rights == core.RightRead
	})
	if err := ca.Put([]byte("after"), it, 0); core.CodeOf(err) != core.CodeNoPerm {
		t.Fatalf("put after another program's chmod 0640: %v, want a permission error", err)
	}
	got := make([]byte, 6)
	if err := ca.Get(got, it, 0); err != nil || string(got) != "before" {
		t.Fatalf("get after chmod 0640: %q %v", got, err)
	}
	// A chmod to 0 cuts this program off at once and binds the owner to
	// nothing.
	other0, err := r.Allocate("y", 4096, 0o660)
	if err != nil {
		t.Fatal(err)
	}
	it0, err := a.Lookup("y", "pushed")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, _, ok := it0.Local(); !ok {
		t.Fatal("item y not mapped here")
	}
	if err := other0.ChangePermissions(0); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the mapped item to lose every right", func() bool {
		_, _, _, ok := it0.Local()
		return !ok
	})
	if err := ca.Get(got, it0, 0); core.CodeOf(err) != core.CodeNoPerm {
		t.Fatalf("get after the owner's chmod 0: %v, want a permission error", err)
	}
	if err := owner.Default().Put([]byte("owner!"), other0, 0); err != nil {
		t.Fatalf("the owner's put on its mode-0 item: %v", err)
	}
	if err := owner.Default().Get(got, other0, 0); err != nil || string(got) != "owner!" {
		t.Fatalf("the owner's get on its mode-0 item: %q %v", got, err)
	}
	// Deallocated by the other program: the handle here is released.
	if err := other.ChangePermissions(0o660); err != nil {
		t.Fatal(err)
	}
	if err := other.Deallocate(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the mapping of the deallocated item to go", func() bool {
		_, _, _, ok := it.Local()
		return !ok
	})
	// The chmod just above revokes the key too, so the mapping may go
	// before the deallocation's event arrives; a get in between resolves
	// the item again and finds it gone (CodeNotFound). Once the event is
	// handled the handle is released (CodeInvalid). A get that succeeds,
	// or any other error, is wrong.
	waitFor(t, "the handle of the deallocated item to be released", func() bool {
		err := ca.Get(got, it, 0)
		switch core.CodeOf(err) {
		case core.CodeInvalid:
			return true
		case core.CodeNotFound:
			return false
		}
		t.Fatalf("get through the handle of a deallocated item: %v, want CodeNotFound then CodeInvalid", err)
		return false
	})
}

// Control calls renew a key famd revoked meanwhile, as data calls do:
// another program's chmod revokes this program's key, and a deallocate,
// stat, chmod or backup made before the revocation event is handled here
// must still succeed (they failed with "unknown or revoked data item key").
func TestControlCallsRenewARevokedKey(t *testing.T) {
	d := startFamd(t, embed.Options{BackupDir: t.TempDir()})
	server := "unix:" + d.SocketPath()
	a, b := client(t, server, ""), client(t, server, "")
	r, err := a.CreateRegion("renew", 1<<20, 0o600, core.RegionAttr{PermLevel: core.PermDataItem})
	if err != nil {
		t.Fatal(err)
	}
	q := a.HoldRevocations()
	ops := map[string]func(it *core.Item) error{
		"stat":  func(it *core.Item) error { _, err := it.Stat(); return err },
		"chmod": func(it *core.Item) error { return it.ChangePermissions(0o600) },
		"backup": func(it *core.Item) error {
			w, err := a.Backup(it, "renew-bk")
			if err == nil {
				err = w.Wait()
			}
			return err
		},
		"deallocate": func(it *core.Item) error { return it.Deallocate() },
	}
	for _, name := range []string{"stat", "chmod", "backup", "deallocate"} {
		it, err := r.Allocate(name, 4096, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		key := core.KeyOf(it)
		other, err := b.Lookup(name, "renew")
		if err != nil {
			t.Fatal(err)
		}
		if err := other.ChangePermissions(0o640); err != nil {
			t.Fatal(err)
		}
		// famd has revoked a's key; a has not handled the event yet.
		<-q.Arrived(key)
		if err := ops[name](it); err != nil {
			t.Fatalf("%s with a key revoked by another program's chmod: %v", name, err)
		}
	}
}

// Past the budget of item mappings a famd-served item is served through
// famd's data plane instead of being mapped: each mapping is a kernel
// memory area, never unmapped while another thread may use it, and past
// vm.max_map_count every mmap fails, the Go runtime's own included (a C
// client holding 30,000 items died of it: issue 18). Items beyond the
// budget must still read and write. The items are a page each: items
// sharing a page share its mapping, which counts once.
func TestItemMapBudget(t *testing.T) {
	defer core.SetItemMapBudget(3)()
	d := startFamd(t, embed.Options{})
	f := client(t, "unix:"+d.SocketPath(), "")
	r, err := f.CreateRegion("budget", 1<<20, 0o600, core.RegionAttr{PermLevel: core.PermDataItem})
	if err != nil {
		t.Fatal(err)
	}
	var its []*core.Item
	for i := range 6 {
		it, err := r.Allocate("i"+string(rune('a'+i)), 4096, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		its = append(its, it)
	}
	mapped := 0
	for _, it := range its {
		if _, _, _, ok := it.Local(); ok {
			mapped++
		}
	}
	if mapped != 3 {
		t.Fatalf("%d of 6 items mapped with a budget of 3", mapped)
	}
	c := f.Default()
	for i, it := range its {
		want := []byte{byte(i), 1, 2, 3}
		if err := c.Put(want, it, 8); err != nil {
			t.Fatalf("put to item %d: %v", i, err)
		}
		got := make([]byte, 4)
		if err := c.Get(got, it, 8); err != nil || string(got) != string(want) {
			t.Fatalf("item %d read back %v (%v), want %v", i, got, err, want)
		}
	}
}
