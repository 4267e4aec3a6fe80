package core_test

import (
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/gofam/openfam/core"
	"github.com/gofam/openfam/core/embed"
	"github.com/gofam/openfam/core/wire"
)

// opCount counts a data plane's requests by op.
type opCount struct {
	mu sync.Mutex
	n  map[wire.Op]int
}

func (c *opCount) Request(op wire.Op, status uint32, read, written uint64) {
	c.mu.Lock()
	if c.n == nil {
		c.n = map[wire.Op]int{}
	}
	c.n[op]++
	c.mu.Unlock()
}

func (c *opCount) take() map[wire.Op]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.n
	c.n = nil
	return n
}

// TestControlCallsAreOneDataPlaneExchange: through famd's Unix socket,
// fam_lookup, fam_allocate, fam_deallocate, fam_lookup_region and
// fam_close_region each make one exchange on the data-plane connection,
// fam_close one that it does not wait for (a looked-up or allocated item's descriptor comes with the
// reply: no OpenFD round trip after it), and the item is mapped here all
// the same.
func TestControlCallsAreOneDataPlaneExchange(t *testing.T) {
	var ops opCount
	d := startFamd(t, embed.Options{DataObserver: &ops})
	f := client(t, "unix:"+d.SocketPath(), "")
	defer f.Finalize()
	r, err := f.CreateRegion("ctl", 1<<20, 0o600, core.RegionAttr{})
	if err != nil {
		t.Fatal(err)
	}
	one := func(what string, fn func()) {
		t.Helper()
		ops.take()
		fn()
		if got := ops.take(); got[wire.OpControl] != 1 || len(got) != 1 {
			t.Errorf("%s: data-plane requests %v, want one Control", what, got)
		}
	}
	var it *core.Item
	one("fam_allocate", func() {
		if it, err = r.Allocate("x", 4096, 0o600); err != nil {
			t.Fatal(err)
		}
	})
	local := func(what string, it *core.Item) {
		t.Helper()
		ops.take()
		if err := f.Default().Put([]byte("mapped"), it, 0); err != nil {
			t.Fatal(err)
		}
		if got := ops.take(); len(got) != 0 {
			t.Errorf("a put to the item %s made data-plane requests %v: it is not mapped here", what, got)
		}
	}
	local("allocated", it)
	var lk *core.Item
	one("fam_lookup", func() {
		if lk, err = f.Lookup("x", "ctl"); err != nil {
			t.Fatal(err)
		}
	})
	local("looked up", lk)
	// fam_close does not wait for famd: its request goes out with the
	// next call on the connection (or soon after), so the two together
	// make two Control requests, one exchange each.
	ops.take()
	if err := lk.Close(); err != nil {
		t.Fatal(err)
	}
	var rr *core.Region
	if rr, err = f.LookupRegion("ctl"); err != nil {
		t.Fatal(err)
	}
	if got := ops.take(); got[wire.OpControl] != 2 || len(got) != 1 {
		t.Errorf("fam_close and fam_lookup_region: data-plane requests %v, want two Control", got)
	}
	one("fam_close_region", func() {
		if err := rr.Close(); err != nil {
			t.Fatal(err)
		}
	})
	one("fam_deallocate", func() {
		if err := it.Deallocate(); err != nil {
			t.Fatal(err)
		}
	})
	if _, err := f.Lookup("x", "ctl"); core.CodeOf(err) != core.CodeNotFound {
		t.Fatalf("lookup after deallocate: %v, want FAM_ENOTFOUND", err)
	}
}

// TestLookupsShareOneMapping: through famd's Unix socket, the handles of
// one item share this instance's mapping of its pages, whether looked up
// while another is open or after it was closed: a loop of fam_lookup and
// fam_close made one more memory area (and an mmap) per call, kept until
// Finalize (issue 19). What one handle writes the other reads.
func TestLookupsShareOneMapping(t *testing.T) {
	d := startFamd(t, embed.Options{})
	f := client(t, "unix:"+d.SocketPath(), "")
	defer f.Finalize()
	r, err := f.CreateRegion("share", 1<<20, 0o600, core.RegionAttr{})
	if err != nil {
		t.Fatal(err)
	}
	it, err := r.Allocate("x", 4096, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	base, _, _, ok := it.Local()
	if !ok {
		t.Fatal("the allocated item is not mapped here")
	}
	for i := 0; i < 3; i++ {
		lk, err := f.Lookup("x", "share")
		if err != nil {
			t.Fatal(err)
		}
		b, size, _, ok := lk.Local()
		if !ok || b != base || size != 4096 {
			t.Fatalf("lookup %d: mapped at %p (%d bytes, %v), the first handle at %p", i, b, size, ok, base)
		}
		msg := []byte{'s', 'h', 'a', 'r', 'e', byte('0' + i)}
		if err := f.Default().Put(msg, lk, 0); err != nil {
			t.Fatal(err)
		}
		got := make([]byte, len(msg))
		if err := f.Default().Get(got, it, 0); err != nil || string(got) != string(msg) {
			t.Fatalf("lookup %d: read %q (%v) through the first handle, want %q", i, got, err, msg)
		}
		if err := lk.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// callCount counts famd's control calls by method.
type callCount struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *callCount) Call(method string, grpcCode codes.Code, famCode int32) {
	c.mu.Lock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[method]++
	c.mu.Unlock()
}

func (c *callCount) get(method string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[method]
}

// TestDeallocateMakesNoItemAt: famd reports the keys of an item it
// deallocates on the session stream before it answers, so the event
// usually reached the deallocating program first, whose session loop then
// renewed the handle with an ItemAt call that could only find the item
// gone: a gRPC round trip on every fam_deallocate. The revocation now
// waits for the deallocation, which releases the handle. Another program's
// chmod is still handled: the handle moves to the item's new heap file,
// after every earlier event, since one loop handles them in order.
func TestDeallocateMakesNoItemAt(t *testing.T) {
	var calls callCount
	d := startFamd(t, embed.Options{CallObserver: &calls})
	f := client(t, "unix:"+d.SocketPath(), "")
	defer f.Finalize()
	r, err := f.CreateRegion("dealloc", 1<<20, 0o600, core.RegionAttr{PermLevel: core.PermDataItem})
	if err != nil {
		t.Fatal(err)
	}
	kept, err := r.Allocate("kept", 4096, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	before, _, _, ok := kept.Local()
	if !ok {
		t.Fatal("the item is not mapped here")
	}
	other := client(t, "unix:"+d.SocketPath(), "")
	defer other.Finalize()
	theirs, err := other.Lookup("kept", "dealloc")
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 30; i++ {
		it, err := r.Allocate("tmp", 4096, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		if err := it.Deallocate(); err != nil {
			t.Fatal(err)
		}
	}
	if err := theirs.ChangePermissions(0o640); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if b, _, _, ok := kept.Local(); ok && b != before {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the chmod's revocation was not handled within 60s")
		}
	}
	// The chmod's own: this program's renewal, and at most the other
	// program's renewal and the handling of its own event.
	if n := calls.get("ItemAt"); n > 3 {
		t.Errorf("%d ItemAt calls, want at most 3 (the chmod's): the deallocations' revocations renewed their handles", n)
	}
}

// TestChangePermissionsRoundTrips: through famd, fam_change_permissions on
// an item this program owns makes one ChangeItemPermissions call and one
// ItemAt (the renewal of its handle, whose key famd revoked and whose bytes
// moved to another heap file): no StatItem before it (famd checks
// ownership), and no second renewal by the session loop for the
// revocation famd reports on the session stream. The handle keeps working
// and stays mapped here.
func TestChangePermissionsRoundTrips(t *testing.T) {
	var calls callCount
	d := startFamd(t, embed.Options{CallObserver: &calls})
	f := client(t, "unix:"+d.SocketPath(), "")
	defer f.Finalize()
	r, err := f.CreateRegion("chmod", 1<<20, 0o600, core.RegionAttr{PermLevel: core.PermDataItem})
	if err != nil {
		t.Fatal(err)
	}
	it, err := r.Allocate("x", 4096, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	const n = 20
	before := map[string]int{}
	for _, m := range []string{"StatItem", "ItemAt", "ChangeItemPermissions"} {
		before[m] = calls.get(m)
	}
	for i := 0; i < n; i++ {
		mode := uint32(0o600)
		if i%2 == 0 {
			mode = 0o640
		}
		if err := it.ChangePermissions(mode); err != nil {
			t.Fatal(err)
		}
		want := []byte{byte(i), 'c', 'h'}
		if err := f.Default().Put(want, it, 8); err != nil {
			t.Fatalf("put after chmod %d: %v", i, err)
		}
		got := make([]byte, len(want))
		if err := f.Default().Get(got, it, 8); err != nil || string(got) != string(want) {
			t.Fatalf("get after chmod %d: %q, %v; want %q", i, got, err, want)
		}
		if _, _, rights, ok := it.Local(); !ok || rights != core.RightRead|core.RightWrite {
			t.Fatalf("after chmod %d the owner's handle is mapped %v with rights %v, want read and write", i, ok, rights)
		}
	}
	st, err := it.Stat()
	if err != nil || st.Mode != 0o600 {
		t.Fatalf("mode after the changes: %o, %v; want 600", st.Mode, err)
	}
	// Stat above made one StatItem of its own.
	for m, want := range map[string]int{"StatItem": 1, "ItemAt": n, "ChangeItemPermissions": n} {
		if got := calls.get(m) - before[m]; got != want {
			t.Errorf("%d fam_change_permissions made %d %s calls, want %d", n, got, m, want)
		}
	}
}
