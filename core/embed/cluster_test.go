package embed_test

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gofam/openfam/core"
	"github.com/gofam/openfam/core/amo"
	"github.com/gofam/openfam/core/embed"
	"github.com/gofam/openfam/core/rpc"
)

// cluster is a metadata famd with memory servers, all in this process on
// real sockets.
type cluster struct {
	meta      *embed.Famd
	mems      []*embed.Memory
	tokenFile string
}

// serverToken is the memory servers' credential in these clusters: they
// join over TCP, which needs it.
const serverToken = "cluster-test-server-token"

func startCluster(t testing.TB, k int, role string, block uint64) *cluster {
	t.Helper()
	return startClusterAs(t, k, role, block, nil)
}

// startClusterAs is startCluster with the metadata famd's TCP callers
// taken as tcpID (nil: famd's own uid and gid).
func startClusterAs(t testing.TB, k int, role string, block uint64, tcpID *rpc.Identity) *cluster {
	t.Helper()
	dir := t.TempDir()
	tokenFile := writeToken(t, dir, "cluster-test-token")
	meta, err := embed.Start(embed.Options{TCPAddr: "127.0.0.1:0", Token: "cluster-test-token", Role: role,
		InterleaveSize: block, ShmDir: filepath.Join(dir, "meta-shm"), ServerToken: serverToken, TCPIdentity: tcpID})
	if err != nil {
		t.Fatal(err)
	}
	c := &cluster{meta: meta, tokenFile: tokenFile}
	t.Cleanup(func() {
		for _, m := range c.mems {
			m.Close()
		}
		meta.Close()
	})
	for i := 0; i < k; i++ {
		c.addMemory(t, filepath.Join(dir, "mem"+string(rune('0'+i))))
	}
	return c
}

func (c *cluster) addMemory(t testing.TB, dir string) *embed.Memory {
	t.Helper()
	m, err := embed.StartMemory(embed.MemoryOptions{DataDir: dir, ShmDir: dir + "-shm", TCPAddr: "127.0.0.1:0",
		Join: c.meta.Addr(), Token: "cluster-test-token", ServerToken: serverToken})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-m.Joined():
	case <-time.After(60 * time.Second):
		t.Fatal("memory server did not join within 60s")
	}
	c.mems = append(c.mems, m)
	return m
}

func (c *cluster) client(t testing.TB) *core.Fam {
	t.Helper()
	f, err := core.Initialize(core.Options{Server: "unix:" + c.meta.SocketPath(), TokenFile: c.tokenFile,
		UID: -1, GID: -1, PEID: 0, PECount: 1, Timeout: 60 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Finalize() })
	return f
}

func randomBytes(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 7))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func TestInterleavedItemIsStripedOverMemoryServers(t *testing.T) {
	const block = 64 << 10
	c := startCluster(t, 3, "metadata", block)
	f := c.client(t)
	r, err := f.CreateRegion("striped", 8<<20, 0o600, core.RegionAttr{})
	if err != nil {
		t.Fatal(err)
	}
	st, err := r.Stat()
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Servers) != 3 || st.InterleaveSize != block {
		t.Fatalf("region placed on %v with interleave size %d, want 3 servers and %d", st.Servers, st.InterleaveSize, block)
	}
	// An odd size and an unaligned offset exercise partial blocks.
	const size = 5<<20 + 12345
	it, err := r.Allocate("x", size, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	zeros := make([]byte, size)
	got := make([]byte, size)
	ctx := f.Default()
	if err := ctx.Get(got, it, 0); err != nil || !bytes.Equal(got, zeros) {
		t.Fatalf("a fresh item does not read as zeros (%v)", err)
	}
	want := randomBytes(size, 1)
	if err := ctx.Put(want, it, 0); err != nil {
		t.Fatal(err)
	}
	if err := ctx.Get(got, it, 0); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("read back differs (%v)", err)
	}
	// Every memory server holds part of the item: each has a segment with
	// non-zero bytes and a key for the item.
	for i, m := range c.mems {
		if n, bytes := m.Server().Segments(); n != 1 || bytes < size/3 {
			t.Fatalf("memory server %d holds %d segments of %d bytes", i, n, bytes)
		}
		if m.Server().Keys() == 0 {
			t.Fatalf("memory server %d has no key for the item", i)
		}
	}
	// Unaligned pieces across block boundaries, blocking and not.
	part := randomBytes(3*block+777, 2)
	if err := ctx.PutNB(part, it, block-100); err != nil {
		t.Fatal(err)
	}
	if err := ctx.Quiet(); err != nil {
		t.Fatal(err)
	}
	copy(want[block-100:], part)
	back := make([]byte, len(part)+200)
	if err := ctx.GetNB(back, it, block-200); err != nil {
		t.Fatal(err)
	}
	if err := ctx.Quiet(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(back, want[block-200:block-200+len(back)]) {
		t.Fatal("a get across block boundaries differs")
	}
	// Atomics land on the server holding the word, whichever it is.
	for _, off := range []uint64{0, block, 2 * block, 3*block + 8, size - 8 - (size % 8)} {
		if _, err := ctx.Atomic(it, off, amo.Int64, amo.Add, core.Value{Lo: 5}, core.Value{}, false); err != nil {
			t.Fatalf("atomic add at %d: %v", off, err)
		}
		old, err := ctx.Atomic(it, off, amo.Int64, amo.Fetch, core.Value{}, core.Value{}, true)
		if err != nil {
			t.Fatal(err)
		}
		w := int64(0)
		for k := 7; k >= 0; k-- {
			w = w<<8 | int64(want[off+uint64(k)])
		}
		if int64(old.Lo) != w+5 {
			t.Fatalf("word at %d is %d after add 5 to %d", off, int64(old.Lo), w)
		}
		for k, b := 0, uint64(w+5); k < 8; k, b = k+1, b>>8 {
			want[off+uint64(k)] = byte(b)
		}
	}
	// Gather and scatter, aligned (one request per server) and not
	// (element by element).
	idx := []uint64{0, 1, 8191, 8192, 16385, 40000, 3}
	g := make([]byte, 8*len(idx))
	if err := ctx.GatherIndexed(g, it, idx, 8, false); err != nil {
		t.Fatal(err)
	}
	for i, e := range idx {
		if !bytes.Equal(g[8*i:8*i+8], want[8*e:8*e+8]) {
			t.Fatalf("gathered element %d (index %d) differs", i, e)
		}
	}
	sc := randomBytes(12*4, 3)
	if err := ctx.ScatterStrided(sc, it, 4, 10, 5461, 12, false); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 4; i++ {
		o := (10 + i*5461) * 12
		copy(want[o:o+12], sc[12*i:12*i+12])
	}
	if err := ctx.Get(got, it, 0); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("item differs after atomics and scatter (%v)", err)
	}
	// A copy to another striped item goes through the client.
	it2, err := r.Allocate("y", 1<<20, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	w, err := ctx.Copy(it, 1000, it2, 17, 1<<20-17)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Wait(); err != nil {
		t.Fatal(err)
	}
	got2 := make([]byte, 1<<20-17)
	if err := ctx.Get(got2, it2, 17); err != nil || !bytes.Equal(got2, want[1000:1000+len(got2)]) {
		t.Fatalf("copied bytes differ (%v)", err)
	}
	// Out of range is refused by the client, before any server.
	if err := ctx.Get(make([]byte, 2), it, size-1); core.CodeOf(err) != core.CodeOutOfRange {
		t.Fatalf("get past the end: %v", err)
	}
	if _, err := it.Map(); core.CodeOf(err) != core.CodeUnimplemented {
		t.Fatalf("fam_map of an interleaved item: %v", err)
	}
	if err := it.Deallocate(); err != nil {
		t.Fatal(err)
	}
	if err := r.Destroy(); err != nil {
		t.Fatal(err)
	}
	for i, m := range c.mems {
		if n, _ := m.Server().Segments(); n != 0 {
			t.Fatalf("memory server %d still holds %d segments after the region was destroyed", i, n)
		}
	}
}

// TestPermissionChangeRevokesKeysOnMemoryServers: the owner's chmod
// reaches the memory servers at once for a user the new mode binds (a
// group member: this process on the Unix socket; the owner is uid 4321 of
// the same group over TCP), while the owner keeps read and write.
func TestPermissionChangeRevokesKeysOnMemoryServers(t *testing.T) {
	c := startClusterAs(t, 2, "metadata", 4096, &rpc.Identity{UID: 4321, GID: uint32(os.Getgid())})
	owner, err := core.Initialize(core.Options{Server: c.meta.Addr(), TokenFile: c.tokenFile,
		UID: -1, GID: -1, PEID: 0, PECount: 1, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { owner.Finalize() })
	member := c.client(t)
	r, err := owner.CreateRegion("perm", 1<<20, 0o770, core.RegionAttr{PermLevel: core.PermDataItem})
	if err != nil {
		t.Fatal(err)
	}
	own, err := r.Allocate("x", 64<<10, 0o660)
	if err != nil {
		t.Fatal(err)
	}
	if st, err := own.Stat(); err != nil || st.UID != 4321 {
		t.Fatalf("item owned by %d (%v), want 4321", st.UID, err)
	}
	it, err := member.Lookup("x", "perm")
	if err != nil {
		t.Fatal(err)
	}
	ctx := member.Default()
	if err := ctx.Put([]byte("hello"), it, 5000); err != nil {
		t.Fatal(err)
	}
	if err := own.ChangePermissions(0o640); err != nil {
		t.Fatal(err)
	}
	if err := ctx.Put([]byte("again"), it, 5000); core.CodeOf(err) != core.CodeNoPerm {
		t.Fatalf("put after chmod 0640: %v, want a permission error", err)
	}
	got := make([]byte, 5)
	if err := ctx.Get(got, it, 5000); err != nil || string(got) != "hello" {
		t.Fatalf("get after chmod 0640: %q %v", got, err)
	}
	if err := owner.Default().Put([]byte("owner"), own, 5000); err != nil {
		t.Fatalf("the owner's put after chmod 0640: %v", err)
	}
	if err := ctx.Get(got, it, 5000); err != nil || string(got) != "owner" {
		t.Fatalf("get of the owner's put: %q %v", got, err)
	}
}

func TestMemoryServerRestartKeepsPersistentData(t *testing.T) {
	c := startCluster(t, 2, "metadata", 4096)
	f := c.client(t)
	r, err := f.CreateRegion("keep", 1<<20, 0o600, core.RegionAttr{Memory: core.Persistent})
	if err != nil {
		t.Fatal(err)
	}
	it, err := r.Allocate("x", 100<<10, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	ctx := f.Default()
	want := randomBytes(100<<10, 9)
	if err := ctx.Put(want, it, 0); err != nil {
		t.Fatal(err)
	}
	// Restart memory server 1 on its data directory and addresses: it
	// comes back with the same id, knows no keys, and the client renews
	// its key through the metadata service transparently.
	old := c.mems[1]
	id := old.ID()
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}
	m, err := embed.StartMemory(embed.MemoryOptions{DataDir: old.DataDir(), ShmDir: old.DataDir() + "-shm",
		TCPAddr: old.Addr(), DataTCPAddr: old.DataAddr(), Join: c.meta.Addr(), Token: "cluster-test-token", ServerToken: serverToken})
	if err != nil {
		t.Fatal(err)
	}
	c.mems[1] = m
	select {
	case <-m.Joined():
	case <-time.After(60 * time.Second):
		t.Fatal("restarted memory server did not join within 60s")
	}
	if m.ID() != id {
		t.Fatalf("restarted memory server got id %d, want %d", m.ID(), id)
	}
	got := make([]byte, len(want))
	if err := ctx.Get(got, it, 0); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("data after the memory server restarted: %v", err)
	}
}

func writeToken(t testing.TB, dir, tok string) string {
	t.Helper()
	p := filepath.Join(dir, "token")
	if err := os.WriteFile(p, []byte(tok+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func tokenFile(b *testing.B) string { return writeToken(b, b.TempDir(), "bench-token") }

func TestMetadataRestartKeepsPlacedRegionsAndRenewsKeys(t *testing.T) {
	dir := t.TempDir()
	tok := writeToken(t, dir, "cluster-test-token")
	opts := embed.Options{DataDir: filepath.Join(dir, "meta"), SocketPath: filepath.Join(dir, "meta.sock"),
		TCPAddr: "127.0.0.1:0", Token: "cluster-test-token", Role: "metadata", InterleaveSize: 4096, ServerToken: serverToken}
	meta, err := embed.Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	c := &cluster{meta: meta, tokenFile: tok}
	t.Cleanup(func() {
		for _, m := range c.mems {
			m.Close()
		}
		c.meta.Close()
	})
	c.addMemory(t, filepath.Join(dir, "m0"))
	c.addMemory(t, filepath.Join(dir, "m1"))
	f := c.client(t)
	r, err := f.CreateRegion("durable", 1<<20, 0o600, core.RegionAttr{Memory: core.Persistent})
	if err != nil {
		t.Fatal(err)
	}
	it, err := r.Allocate("x", 40000, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	want := randomBytes(40000, 5)
	ctx := f.Default()
	if err := ctx.Put(want, it, 0); err != nil {
		t.Fatal(err)
	}
	keysBefore := c.mems[0].Server().Keys()
	// The metadata famd restarts on the same directory and addresses; the
	// memory servers stay up. The client's next call renews its key (a new
	// epoch, which drops the old grants on the servers it touches).
	opts.TCPAddr, opts.DataTCPAddr = meta.Addr(), meta.DataAddr()
	if err := meta.Close(); err != nil {
		t.Fatal(err)
	}
	meta2, err := embed.Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	c.meta = meta2
	got := make([]byte, len(want))
	if err := ctx.Get(got, it, 0); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("data after the metadata famd restarted: %v", err)
	}
	if keysBefore == 0 || c.mems[0].Server().Keys() != 1 {
		t.Fatalf("memory server 0 holds %d keys (before the restart %d); want only the renewed one", c.mems[0].Server().Keys(), keysBefore)
	}
	// A fresh client finds the item by name with its bytes.
	f2 := c.client(t)
	it2, err := f2.Lookup("x", "durable")
	if err != nil {
		t.Fatal(err)
	}
	clear(got)
	if err := f2.Default().Get(got, it2, 0); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("a new client reads %v", err)
	}
}

func TestBackupAndRestoreOfInterleavedItems(t *testing.T) {
	c := startCluster(t, 3, "metadata", 64<<10)
	f := c.client(t)
	r, err := f.CreateRegion("bk", 16<<20, 0o600, core.RegionAttr{})
	if err != nil {
		t.Fatal(err)
	}
	const size = 5<<20 + 333 // more than one 4 MiB chunk, partial blocks
	it, err := r.Allocate("src", size, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	want := randomBytes(size, 11)
	ctx := f.Default()
	if err := ctx.Put(want, it, 0); err != nil {
		t.Fatal(err)
	}
	w, err := f.Backup(it, "bk-src")
	if err == nil {
		err = w.Wait()
	}
	if err != nil {
		t.Fatalf("backup of an interleaved item: %v", err)
	}
	// Restore into a fresh interleaved item, and into an existing one.
	w, fresh, err := f.RestoreNew("bk-src", r, "restored", 0o600)
	if err == nil {
		err = w.Wait()
	}
	if err != nil {
		t.Fatalf("restore into a new interleaved item: %v", err)
	}
	got := make([]byte, size)
	if err := ctx.Get(got, fresh, 0); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("restored item differs (%v)", err)
	}
	other, err := r.Allocate("dst", size+100, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	w, err = f.Restore("bk-src", other)
	if err == nil {
		err = w.Wait()
	}
	if err != nil {
		t.Fatalf("restore into an existing interleaved item: %v", err)
	}
	if err := ctx.Get(got, other, 0); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("item restored in place differs (%v)", err)
	}
	// famd's own keys for the transfers are gone again: only the client's
	// three items hold keys on the servers.
	for i, m := range c.mems {
		if k := m.Server().Keys(); k > 3 {
			t.Fatalf("memory server %d holds %d keys after backup and restores", i, k)
		}
	}
}

// TestMemoryServerNeedsServerToken: a memory server joining over TCP
// with the cluster token but without the metadata service's server token
// (or with another one) is refused for good: Failed reports it and it
// never joins; the metadata service places nothing on it.
func TestMemoryServerNeedsServerToken(t *testing.T) {
	c := startCluster(t, 0, "all", 0)
	for _, stok := range []string{"", "another-server-token"} {
		dir := t.TempDir()
		m, err := embed.StartMemory(embed.MemoryOptions{DataDir: dir, ShmDir: dir + "-shm", TCPAddr: "127.0.0.1:0",
			Join: c.meta.Addr(), Token: "cluster-test-token", ServerToken: stok})
		if err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-m.Failed():
			if !strings.Contains(err.Error(), "refused this memory server") {
				t.Errorf("server token %q: Failed says %v", stok, err)
			}
		case <-m.Joined():
			t.Errorf("memory server with server token %q joined", stok)
		case <-time.After(20 * time.Second):
			t.Errorf("memory server with server token %q neither joined nor failed within 20s", stok)
		}
		m.Close()
	}
	f := c.client(t)
	r, err := f.CreateRegion("local", 1<<20, 0o600, core.RegionAttr{})
	if err != nil {
		t.Fatal(err)
	}
	if st, err := r.Stat(); err != nil || len(st.Servers) > 1 || len(st.Servers) == 1 && st.Servers[0] != 0 {
		t.Fatalf("region placed on %v (%v), want famd's own storage", st.Servers, err)
	}
}
