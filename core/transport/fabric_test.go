package transport

import (
	"errors"
	"sync"
	"testing"
	"unsafe"

	"github.com/gofam/openfam/core/wire"
)

// fakeFabric is a FabricServer that records what the server asks of it.
type fakeFabric struct {
	mu        sync.Mutex
	exposed   map[Key]fakeReg
	withdrawn []Key
	fail      error
	// onExpose, when set, runs inside Expose (a revocation racing with
	// the request).
	onExpose func(Key)
}

type fakeReg struct {
	ptr    uintptr
	n      int
	rights uint8
	rkey   uint64
}

func newFakeFabric() *fakeFabric { return &fakeFabric{exposed: map[Key]fakeReg{}} }

func (f *fakeFabric) Provider() string { return "fake;ofi_rxm" }
func (f *fakeFabric) Addr() []byte     { return []byte("fake-address") }

func (f *fakeFabric) Expose(k Key, mem []byte, rights uint8) (uint64, uint64, error) {
	if f.onExpose != nil {
		f.onExpose(k)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return 0, 0, f.fail
	}
	r := fakeReg{ptr: uintptr(unsafe.Pointer(unsafe.SliceData(mem))), n: len(mem), rights: rights, rkey: 0xabc000 + uint64(len(f.exposed))}
	f.exposed[k] = r
	return r.rkey, uint64(r.ptr), nil
}

func (f *fakeFabric) Withdraw(k Key) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.exposed, k)
	f.withdrawn = append(f.withdrawn, k)
}

func (f *fakeFabric) reg(k Key) (fakeReg, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, ok := f.exposed[k]
	return r, ok
}

func (f *fakeFabric) withdrew(k Key) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, w := range f.withdrawn {
		if w == k {
			return true
		}
	}
	return false
}

func (m *fileMem) revoke(k Key) {
	m.mu.Lock()
	delete(m.items, k)
	m.mu.Unlock()
}

// TestFabricKey: the server exposes exactly the item's bytes with the
// key's rights and answers the registration; a revoked key is refused
// and nothing is exposed for it.
func TestFabricKey(t *testing.T) {
	for _, network := range []string{"tcp", "unix"} {
		t.Run(network, func(t *testing.T) {
			mem := newFileMem(t, t.TempDir(), 1<<16)
			fab := newFakeFabric()
			addr := serve(t, NewServer(mem, ServerOptions{Token: "tok", Fabric: fab}), network)
			c, err := Dial(network, addr, ClientOptions{Token: "tok", Conns: 1})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			ro := mem.add(4096, 100, RightRead)
			rw := mem.add(8192, 4096, RightRead|RightWrite)
			for _, tc := range []struct {
				k         Key
				off, size uint64
				rights    uint8
			}{{ro, 4096, 100, RightRead}, {rw, 8192, 4096, RightRead | RightWrite}} {
				rkey, base, size, rights, err := c.FabricKey(tc.k)
				if err != nil {
					t.Fatal(err)
				}
				r, ok := fab.reg(tc.k)
				want := uintptr(unsafe.Pointer(&mem.data[tc.off]))
				if !ok || r.ptr != want || uint64(r.n) != tc.size || r.rights != tc.rights {
					t.Fatalf("Expose got %+v (exposed %v); want the item's %d bytes at %#x with rights %d", r, ok, tc.size, want, tc.rights)
				}
				if rkey != r.rkey || base != uint64(r.ptr) || size != tc.size || rights != tc.rights {
					t.Fatalf("FabricKey = %#x %#x %d %d; want %#x %#x %d %d", rkey, base, size, rights, r.rkey, r.ptr, tc.size, tc.rights)
				}
			}
			// Revoked: refused as stale, nothing exposed.
			mem.revoke(ro)
			fab.Withdraw(ro) // what the revoker does
			if _, _, _, _, err := c.FabricKey(ro); !errors.Is(err, ErrStaleKey) {
				t.Fatalf("FabricKey of a revoked key: %v, want ErrStaleKey", err)
			}
			if _, ok := fab.reg(ro); ok {
				t.Fatal("a revoked key was exposed again")
			}
			// The connection is still good.
			if err := c.Ping(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestFabricKeyRacingRevocation: a revocation that lands while the server
// is exposing the key (after its lookup, before the registration exists,
// so the revoker's Withdraw found nothing) must not leave a registration
// behind: the server withdraws it and answers stale.
func TestFabricKeyRacingRevocation(t *testing.T) {
	mem := newFileMem(t, t.TempDir(), 1<<16)
	fab := newFakeFabric()
	k := mem.add(0, 64, RightRead|RightWrite)
	fab.onExpose = func(x Key) {
		if x == k {
			mem.revoke(k)
		}
	}
	addr := serve(t, NewServer(mem, ServerOptions{Fabric: fab}), "unix")
	c, err := Dial("unix", addr, ClientOptions{Conns: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, _, _, _, err := c.FabricKey(k); !errors.Is(err, ErrStaleKey) {
		t.Fatalf("FabricKey racing a revocation: %v, want ErrStaleKey", err)
	}
	if _, ok := fab.reg(k); ok || !fab.withdrew(k) {
		t.Fatal("the registration of a key revoked during FabricKey was left in place")
	}
}

// TestFabricKeyRefusals: a server without an endpoint, rights that grant
// nothing, and an endpoint that fails are each answered clearly, and the
// connection stays usable.
func TestFabricKeyRefusals(t *testing.T) {
	mem := newFileMem(t, t.TempDir(), 1<<16)
	plain := serve(t, NewServer(mem, ServerOptions{}), "unix")
	c, err := Dial("unix", plain, ClientOptions{Conns: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var e *Error
	k := mem.add(0, 64, RightRead)
	if _, _, _, _, err := c.FabricKey(k); !errors.As(err, &e) || e.Code != codeUnimpl {
		t.Fatalf("FabricKey on a server without an endpoint: %v, want Code 16", err)
	}
	// Sent anyway (a client that skips the Hello check): the server
	// answers 16 with why, and the connection stays.
	r := &req{op: wire.OpFabricKey}
	h := fabricKeyHeader(k)
	if err := c.one(h, r); !errors.As(err, &e) || e.Code != codeUnimpl || e.Msg == "" {
		t.Fatalf("raw FabricKey on a server without an endpoint: %v, want Code 16 with a message", err)
	}
	if err := c.Ping(); err != nil {
		t.Fatal(err)
	}

	fab := newFakeFabric()
	fab.fail = errors.New("fi_mr_reg: out of memory")
	addr := serve(t, NewServer(mem, ServerOptions{Fabric: fab}), "unix")
	c2, err := Dial("unix", addr, ClientOptions{Conns: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if _, _, _, _, err := c2.FabricKey(k); !errors.As(err, &e) || e.Code != codeResource {
		t.Fatalf("FabricKey with a failing endpoint: %v, want Code 17", err)
	}
	none := mem.add(128, 64, 0)
	if _, _, _, _, err := c2.FabricKey(none); !errors.As(err, &e) || e.Code != codeNoPerm {
		t.Fatalf("FabricKey of a key granting nothing: %v, want Code 2", err)
	}
}

func fabricKeyHeader(k Key) wire.Header { return wire.Header{Op: wire.OpFabricKey, Key: k} }
