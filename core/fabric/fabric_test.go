package fabric

import (
	"bytes"
	"errors"
	"sync"
	"testing"
	"unsafe"

	"github.com/gofam/openfam/core/amo"
	"github.com/gofam/openfam/core/transport"
)

// providers are the software providers Debian's libfabric1 ships.
var providers = []string{"sockets", "tcp;ofi_rxm", "shm"}

// fakeCtl is the control path of a memory server in one process: it
// exposes keys on the server endpoint directly and serves atomics and
// indexed transfers on the server's memory, as famd would.
type fakeCtl struct {
	srv   *Endpoint
	mu    sync.Mutex
	items map[transport.Key]*item
	calls map[string]int
}

type item struct {
	mem    []byte
	rights uint8
}

func newFakeCtl(srv *Endpoint) *fakeCtl {
	return &fakeCtl{srv: srv, items: map[transport.Key]*item{}, calls: map[string]int{}}
}

// add makes a server item of size bytes (8-byte aligned) under a new key.
func (c *fakeCtl) add(size int, rights uint8) (transport.Key, []byte) {
	mem := make([]byte, size)
	var k transport.Key
	c.mu.Lock()
	defer c.mu.Unlock()
	k[0], k[1], k[2] = byte(len(c.items)), byte(len(c.items)>>8), 0xfa
	c.items[k] = &item{mem: mem, rights: rights}
	return k, mem
}

// revoke withdraws k as famd does when an item's access is revoked.
func (c *fakeCtl) revoke(k transport.Key) {
	c.mu.Lock()
	delete(c.items, k)
	c.mu.Unlock()
	c.srv.Withdraw(k)
}

func (c *fakeCtl) lookup(k transport.Key, what string) (*item, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls[what]++
	it, ok := c.items[k]
	if !ok {
		return nil, transport.ErrStaleKey
	}
	return it, nil
}

func (c *fakeCtl) count(what string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls[what]
}

func (c *fakeCtl) FabricKey(k transport.Key) (rkey, base, size uint64, rights uint8, err error) {
	it, err := c.lookup(k, "FabricKey")
	if err != nil {
		return 0, 0, 0, 0, err
	}
	rkey, base, err = c.srv.Expose(k, it.mem, it.rights)
	return rkey, base, uint64(len(it.mem)), it.rights, err
}

func (c *fakeCtl) Atomic(k transport.Key, off uint64, kind amo.Kind, op amo.Op, v, cmp amo.Value, fetch bool) (amo.Value, error) {
	it, err := c.lookup(k, "Atomic")
	if err != nil {
		return amo.Value{}, err
	}
	if off+kind.Size() > uint64(len(it.mem)) {
		return amo.Value{}, &transport.Error{Code: codeOutOfRange, Msg: "beyond the item"}
	}
	if op.Modifies() && it.rights&transport.RightWrite == 0 {
		return amo.Value{}, &transport.Error{Code: codeNoPerm, Msg: "no write right"}
	}
	r, err := amo.Do(unsafe.Pointer(&it.mem[off]), kind, op, v, cmp)
	if err != nil {
		return amo.Value{}, &transport.Error{Code: codeInvalid, Msg: err.Error()}
	}
	return r, nil
}

func (c *fakeCtl) GatherIndexed(k transport.Key, dst []byte, index []uint64, esize uint64) error {
	it, err := c.lookup(k, "GatherIndexed")
	if err != nil {
		return err
	}
	for i, x := range index {
		copy(dst[uint64(i)*esize:][:esize], it.mem[x*esize:])
	}
	return nil
}

func (c *fakeCtl) ScatterIndexed(k transport.Key, src []byte, index []uint64, esize uint64) error {
	it, err := c.lookup(k, "ScatterIndexed")
	if err != nil {
		return err
	}
	for i, x := range index {
		copy(it.mem[x*esize:][:esize], src[uint64(i)*esize:][:esize])
	}
	return nil
}

func (c *fakeCtl) Close() error { return nil }

// pair is a server and a client endpoint on one provider, and the client's
// Plane to the server.
type pair struct {
	srv, cli *Endpoint
	ctl      *fakeCtl
	p        *Plane
}

// openPair opens the pair on prov, or skips the test naming the provider
// and why when libfabric or the provider is missing.
func openPair(t testing.TB, prov string, opts Options) *pair {
	t.Helper()
	if opts.Logf == nil {
		opts.Logf = t.Logf
	}
	srv, err := Open(prov, opts)
	if err != nil {
		if errors.Is(err, ErrNoLibfabric) {
			t.Skipf("SKIP provider %s: libfabric is not installed (%v)", prov, err)
		}
		t.Skipf("SKIP provider %s: not available here: %v", prov, err)
	}
	cli, err := Open(prov, opts)
	if err != nil {
		srv.Close()
		t.Fatalf("second endpoint on %s: %v", prov, err)
	}
	ctl := newFakeCtl(srv)
	p, err := cli.Plane(srv.Addr(), ctl)
	if err != nil {
		srv.Close()
		cli.Close()
		t.Fatalf("Plane on %s: %v", prov, err)
	}
	t.Cleanup(func() {
		p.Close()
		cli.Close()
		srv.Close()
	})
	return &pair{srv: srv, cli: cli, ctl: ctl, p: p}
}

func pattern(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7) + seed + byte(i>>12)
	}
	return b
}

func forEach(t *testing.T, f func(t *testing.T, prov string)) {
	for _, prov := range providers {
		t.Run(prov, func(t *testing.T) { f(t, prov) })
	}
}

func TestGetPut(t *testing.T) {
	forEach(t, func(t *testing.T, prov string) {
		pr := openPair(t, prov, Options{})
		for _, n := range []int{8, 256, 4 << 20} {
			k, mem := pr.ctl.add(n+64, transport.RightRead|transport.RightWrite)
			copy(mem[64:], pattern(n, 1))
			got := make([]byte, n)
			if err := pr.p.Get(k, 64, got); err != nil {
				t.Fatalf("Get %d: %v", n, err)
			}
			if !bytes.Equal(got, mem[64:]) {
				t.Fatalf("Get %d: wrong bytes", n)
			}
			src := pattern(n, 9)
			if err := pr.p.Put(k, 64, src); err != nil {
				t.Fatalf("Put %d: %v", n, err)
			}
			if !bytes.Equal(mem[64:], src) {
				t.Fatalf("Put %d: server memory differs", n)
			}
		}
	})
}
