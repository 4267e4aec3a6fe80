package core_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc/connectivity"

	"github.com/gofam/openfam/core"
	"github.com/gofam/openfam/core/amo"
	"github.com/gofam/openfam/core/embed"
	"github.com/gofam/openfam/core/rpc"
)

func startFamd(t *testing.T, o embed.Options) *embed.Famd {
	t.Helper()
	d, err := embed.Start(o)
	if err != nil {
		t.Fatalf("embed.Start: %v", err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func client(t *testing.T, server, tokenFile string) *core.Fam {
	t.Helper()
	o := core.DefaultOptions()
	o.Server, o.TokenFile, o.Timeout = server, tokenFile, 60*time.Second
	o.PEID, o.PECount = 0, 1
	f, err := core.Initialize(o)
	if err != nil {
		t.Fatalf("Initialize(%s): %v", server, err)
	}
	return f
}

func code(t *testing.T, err error, want core.Code) {
	t.Helper()
	if core.CodeOf(err) != want {
		t.Fatalf("got %v (code %d), want code %d", err, core.CodeOf(err), want)
	}
}

// exercise runs the API against a famd-served instance; local says whether
// items should be mapped into this process (same host, Unix socket).
func exercise(t *testing.T, f *core.Fam, local bool) {
	c := f.Default()
	r, err := f.CreateRegion("remote", 1<<20, 0o600, core.RegionAttr{PermLevel: core.PermDataItem})
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.CreateRegion("remote", 1<<20, 0o600, core.RegionAttr{})
	code(t, err, core.CodeExists)
	it, err := r.Allocate("item", 4096, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, _, ok := it.Local(); ok != local {
		t.Fatalf("Local() ok = %v, want %v", ok, local)
	}
	msg := []byte("across the fabric")
	if err := c.Put(msg, it, 100); err != nil {
		t.Fatal(err)
	}
	it2, err := f.Lookup("item", "remote")
	if err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(msg))
	if err := c.Get(got, it2, 100); err != nil || !bytes.Equal(got, msg) {
		t.Fatalf("get = %q, %v", got, err)
	}
	code(t, c.Get(make([]byte, 8), it, 4090), core.CodeOutOfRange)
	// Gather and atomics execute at the server when not mapped here.
	idx := []uint64{0, 2, 4}
	for _, i := range idx {
		if _, err := c.Atomic(it, i*8, amo.Int64, amo.Set, core.Value{Lo: i + 1}, core.Value{}, false); err != nil {
			t.Fatal(err)
		}
	}
	dst := make([]byte, 24)
	if err := c.GatherIndexed(dst, it, idx, 8, false); err != nil {
		t.Fatal(err)
	}
	if dst[0] != 1 || dst[8] != 3 || dst[16] != 5 {
		t.Fatalf("gather = %v", dst)
	}
	old, err := core.AtomicFetch(c, it, 0, amo.Add, int64(41))
	if err != nil || old != 1 {
		t.Fatalf("fetch_add = %d, %v", old, err)
	}
	v, _ := core.AtomicFetch(c, it2, 0, amo.Fetch, int64(0))
	if v != 42 {
		t.Fatalf("fetch via second handle = %d", v)
	}
	if _, err := c.Atomic(it, 16, amo.Int128, amo.CompareSwap, core.Value{Lo: 9, Hi: 9}, core.Value{Lo: 3}, true); err != nil {
		t.Fatal(err)
	}
	// Global descriptors resolve through famd.
	g, _ := it.Global()
	it3, _ := f.ItemFromGlobal(g)
	if err := c.Get(got, it3, 100); err != nil || !bytes.Equal(got, msg) {
		t.Fatalf("get via global = %q, %v", got, err)
	}
	// Server-side copy.
	dst2, _ := r.Allocate("", 4096, 0o600)
	w, err := c.Copy(it, 0, dst2, 0, 4096)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Wait(); err != nil {
		t.Fatal(err)
	}
	c.Get(got, dst2, 100)
	if !bytes.Equal(got, msg) {
		t.Fatalf("copy = %q", got)
	}
	// Permission changes reach open handles.
	if err := it.ChangePermissions(0o400); err != nil {
		t.Fatal(err)
	}
	st, err := r.Stat()
	if err != nil || st.Name != "remote" || st.Size != 1<<20 {
		t.Fatalf("region stat %+v, %v", st, err)
	}
	ist, err := it2.Stat()
	if err != nil || ist.Mode != 0o400 || ist.Name != "item" {
		t.Fatalf("item stat %+v, %v", ist, err)
	}
	// Backups live at the server.
	bw, err := f.Backup(it, "bk1")
	if err != nil {
		t.Fatal(err)
	}
	if err := bw.Wait(); err != nil {
		t.Fatal(err)
	}
	if list, _ := f.ListBackups("bk"); len(list) == 0 {
		t.Fatal("backup not listed")
	}
	if err := it.Deallocate(); err != nil {
		t.Fatal(err)
	}
	code(t, c.Get(got, it2, 0), core.CodeInvalid)
	if err := r.Destroy(); err != nil {
		t.Fatal(err)
	}
	_, err = f.LookupRegion("remote")
	code(t, err, core.CodeNotFound)
}

func TestRemoteUnixSocket(t *testing.T) {
	d := startFamd(t, embed.Options{})
	f := client(t, "unix:"+d.SocketPath(), "")
	defer f.Finalize()
	exercise(t, f, true)
}

func writeToken(t *testing.T, tok string) string {
	p := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(p, []byte(tok+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestRemoteTCP(t *testing.T) {
	d := startFamd(t, embed.Options{NoSocket: true, TCPAddr: "127.0.0.1:0", Token: "s3cret"})
	f := client(t, d.Addr(), writeToken(t, "s3cret"))
	defer f.Finalize()
	exercise(t, f, false)

	o := core.DefaultOptions()
	o.Server, o.TokenFile, o.Timeout = d.Addr(), writeToken(t, "wrong"), 2*time.Second
	if _, err := core.Initialize(o); err == nil {
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
	defer f.Finalize()
	r, err := f.CreateRegion("durable", 1<<16, 0o600, core.RegionAttr{Memory: core.Persistent})
	if err != nil {
		t.Fatal(err)
	}
	it, _ := r.Allocate("x", 64, 0o600)
	if err := f.Default().Put([]byte("before"), it, 0); err != nil {
		t.Fatal(err)
	}
	addr, daddr := d.Addr(), d.DataAddr()
	d.Close()
	code(t, f.Default().Put([]byte("down"), it, 0), core.CodeRPC)
	o.TCPAddr, o.DataTCPAddr = addr, daddr
	startFamd(t, o)
	got := make([]byte, 6)
	if err := f.Default().Get(got, it, 0); err != nil || string(got) != "before" {
		t.Fatalf("after restart: %q, %v", got, err)
	}
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
	defer f.Finalize()
	if _, err := f.CreateRegion("durable", 1<<16, 0o600, core.RegionAttr{Memory: core.Persistent}); err != nil {
		t.Fatal(err)
	}
	addr, daddr := d.Addr(), d.DataAddr()
	d.Close()
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

func TestRemoteNonBlockingPipelined(t *testing.T) {
	d := startFamd(t, embed.Options{NoSocket: true, TCPAddr: "127.0.0.1:0", Token: "nb"})
	f := client(t, d.Addr(), writeToken(t, "nb"))
	defer f.Finalize()
	r, _ := f.CreateRegion("nb", 1<<20, 0o600, core.RegionAttr{})
	it, _ := r.Allocate("x", 64*4096, 0o600)
	ctx, _ := f.OpenContext()
	bufs := make([][]byte, 64)
	for i := range bufs {
		bufs[i] = bytes.Repeat([]byte{byte(i + 1)}, 4096)
		if err := ctx.PutNB(bufs[i], it, uint64(i)*4096); err != nil {
			t.Fatal(err)
		}
	}
	if err := ctx.Quiet(); err != nil {
		t.Fatal(err)
	}
	if ctx.Progress() != 0 {
		t.Fatal("progress after quiet")
	}
	got := make([]byte, 64*4096)
	if err := ctx.GetNB(got, it, 0); err != nil {
		t.Fatal(err)
	}
	if err := ctx.Quiet(); err != nil {
		t.Fatal(err)
	}
	for i := range bufs {
		if !bytes.Equal(got[i*4096:(i+1)*4096], bufs[i]) {
			t.Fatalf("block %d wrong", i)
		}
	}
	// An out-of-range non-blocking put is refused at once, before the wire.
	code(t, ctx.PutNB(bufs[0], it, 64*4096), core.CodeOutOfRange)
}

func writeFile(path, s string) error { return os.WriteFile(path, []byte(s+"\n"), 0o600) }

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
	waitFor(t, "the handle of the deallocated item to be released", func() bool {
		_, _, _, ok := it.Local()
		return !ok
	})
	if err := ca.Get(got, it, 0); core.CodeOf(err) != core.CodeInvalid {
		t.Fatalf("get through the handle of a deallocated item: %v, want CodeInvalid", err)
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("waited 60s for %s", what)
		}
	}
}

// A program that changes an item's permissions and then deallocates it
// through famd must succeed every time: famd's revocation of the old key
// reaches this program's session stream while it already uses the key its
// own chmod renewed, and renewing once more would withdraw that key under
// the deallocation ("unknown or revoked data item key", 100 of 100 tries of
// an OpenFAM test program before).
func TestChmodThenDeallocateThroughFamd(t *testing.T) {
	d := startFamd(t, embed.Options{})
	f := client(t, "unix:"+d.SocketPath(), "")
	defer f.Finalize()
	r, err := f.CreateRegion("chmod-dealloc", 1<<20, 0o600, core.RegionAttr{PermLevel: core.PermDataItem})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 200; i++ {
		it, err := r.Allocate("x", 4096, 0o600)
		if err != nil {
			t.Fatalf("round %d: %v", i, err)
		}
		if err := f.Default().Put([]byte("v"), it, 0); err != nil {
			t.Fatalf("round %d: put: %v", i, err)
		}
		if err := it.ChangePermissions(0o640); err != nil {
			t.Fatalf("round %d: chmod: %v", i, err)
		}
		if err := it.Deallocate(); err != nil {
			t.Fatalf("round %d: deallocate after chmod: %v", i, err)
		}
	}
}

// OPENFAM_MODEL names the model in use: memory_server for a program
// served by famd (OpenFAM programs run their memory-server-only paths
// on it), shared_memory for the embedded default.
func TestModelOptionFollowsTheServer(t *testing.T) {
	d := startFamd(t, embed.Options{})
	f := client(t, "unix:"+d.SocketPath(), "")
	defer f.Finalize()
	if v, err := f.Option("OPENFAM_MODEL"); err != nil || v != "memory_server" {
		t.Fatalf("served by famd: OPENFAM_MODEL = %v (%v), want memory_server", v, err)
	}
	o := core.DefaultOptions()
	dir := t.TempDir()
	o.DataDir, o.ShmDir, o.BackupDir, o.PEID, o.PECount = dir+"/d", dir+"/s", dir+"/b", 0, 1
	e, err := core.Initialize(o)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Finalize()
	if v, err := e.Option("OPENFAM_MODEL"); err != nil || v != "shared_memory" {
		t.Fatalf("embedded: OPENFAM_MODEL = %v (%v), want shared_memory", v, err)
	}
}

// Control calls renew a key famd revoked meanwhile, as data calls do:
// another program's chmod revokes this program's key, and a deallocate,
// stat, chmod or backup made before the revocation event is handled here
// must still succeed (they failed with "unknown or revoked data item key").
func TestControlCallsRenewARevokedKey(t *testing.T) {
	d := startFamd(t, embed.Options{BackupDir: t.TempDir()})
	server := "unix:" + d.SocketPath()
	a, b := client(t, server, ""), client(t, server, "")
	defer a.Finalize()
	defer b.Finalize()
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

// Through famd too, an address fam_map returned keeps showing the item
// after the program's own permission change moved its bytes to another
// heap file.
func TestRemoteMapFollowsPermissionChange(t *testing.T) {
	d := startFamd(t, embed.Options{})
	f := client(t, "unix:"+d.SocketPath(), "")
	defer f.Finalize()
	r, err := f.CreateRegion("rmapped", 1<<20, 0o700, core.RegionAttr{PermLevel: core.PermDataItem})
	if err != nil {
		t.Fatal(err)
	}
	it, err := r.Allocate("m", 100, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	m, err := it.Map()
	if err != nil {
		t.Fatal(err)
	}
	copy(m, "through the map")
	if err := it.ChangePermissions(0o640); err != nil {
		t.Fatal(err)
	}
	if string(m[:15]) != "through the map" {
		t.Fatalf("the mapping shows %q after chmod", m[:15])
	}
	copy(m[20:], "after")
	got := make([]byte, 5)
	if err := f.Default().Get(got, it, 20); err != nil || string(got) != "after" {
		t.Fatalf("a write through the map after chmod reads back %q %v", got, err)
	}
}
