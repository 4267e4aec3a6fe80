package core

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A heap file is sparse: without reserving an item's pages at allocation,
// a store into a page tmpfs cannot provide would kill the program with
// SIGBUS. Allocation must fail cleanly instead, and what was allocated
// must stay writable. Needs root to mount a tiny tmpfs.
func TestAllocationBeyondTheFilesystemFailsCleanly(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a small tmpfs")
	}
	o := testOpts(t)
	if err := os.MkdirAll(o.ShmDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", o.ShmDir, "tmpfs", 0, "size=4m"); err != nil {
		t.Skipf("cannot mount a tmpfs here: %v", err)
	}
	defer unix.Unmount(o.ShmDir, unix.MNT_DETACH)
	f := open(t, o)
	defer f.Finalize()
	// The region is larger than the filesystem: fine, it is sparse.
	r, err := f.CreateRegion("big", 64<<20, 0o600, RegionAttr{Memory: Volatile})
	if err != nil {
		t.Fatal(err)
	}
	a, err := r.Allocate("a", 3<<20, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Allocate("b", 2<<20, 0o600)
	wantCode(t, err, CodeNoSpace)
	// The failed allocation left its block free and nothing behind.
	if _, err := f.Lookup("b", "big"); CodeOf(err) != CodeNotFound {
		t.Fatalf("lookup of the failed item: %v", err)
	}
	// Small items (zeroed by writing, not by punching pages) until the
	// filesystem is full: the last one fails.
	var small []*Item
	for i := 0; ; i++ {
		it, err := r.Allocate("", 256<<10, 0o600)
		if err != nil {
			wantCode(t, err, CodeNoSpace)
			break
		}
		small = append(small, it)
		if i > 8 {
			t.Fatalf("%d small items fit in what is left of a 4 MiB filesystem", len(small))
		}
	}
	// Every byte of the items that exist can be written (no SIGBUS).
	c := f.Default()
	full := bytes.Repeat([]byte{0xab}, 3<<20)
	if err := c.Put(full, a, 0); err != nil {
		t.Fatal(err)
	}
	for _, it := range small {
		if err := c.Put(full[:256<<10], it, 0); err != nil {
			t.Fatal(err)
		}
	}
	got := make([]byte, 3<<20)
	if err := c.Get(got, a, 0); err != nil || !bytes.Equal(got, full) {
		t.Fatalf("read back: %v", err)
	}
}

// tmpfsUsed returns the bytes in use on the filesystem at dir.
func tmpfsUsed(t *testing.T, dir string) uint64 {
	t.Helper()
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	return (st.Blocks - st.Bfree) * uint64(st.Bsize)
}

// Space comes back while the process runs: destroying a region, freeing a
// large item and a failed large allocation each return their pages to the
// filesystem. Before, a 16 MiB tmpfs was full after two create, allocate,
// destroy cycles and emptied only at exit, and a failed allocation kept
// the part it had reserved. Needs root to mount a small tmpfs.
func TestSpaceComesBackWhileRunning(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a small tmpfs")
	}
	o := testOpts(t)
	if err := os.MkdirAll(o.ShmDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", o.ShmDir, "tmpfs", 0, "size=16m"); err != nil {
		t.Skipf("cannot mount a tmpfs here: %v", err)
	}
	defer unix.Unmount(o.ShmDir, unix.MNT_DETACH)
	f := open(t, o)
	defer f.Finalize()
	base := tmpfsUsed(t, o.ShmDir)
	const slack = 1 << 20
	c := f.Default()
	fill := bytes.Repeat([]byte{0x5a}, 10<<20)
	for cycle := 0; cycle < 5; cycle++ {
		r, err := f.CreateRegion("cycle", 32<<20, 0o600, RegionAttr{Memory: Volatile, PermLevel: PermDataItem})
		if err != nil {
			t.Fatalf("cycle %d: %v", cycle, err)
		}
		it, err := r.Allocate("big", 10<<20, 0o600)
		if err != nil {
			t.Fatalf("cycle %d: allocating 10 MiB on a 16 MiB tmpfs: %v", cycle, err)
		}
		if err := c.Put(fill, it, 0); err != nil {
			t.Fatal(err)
		}
		// An item of another mode gets its own heap file.
		other, err := r.Allocate("other", 1<<20, 0o640)
		if err != nil {
			t.Fatalf("cycle %d: %v", cycle, err)
		}
		if err := c.Put(fill[:1<<20], other, 0); err != nil {
			t.Fatal(err)
		}
		if err := r.Destroy(); err != nil {
			t.Fatal(err)
		}
		if used := tmpfsUsed(t, o.ShmDir); used > base+slack {
			t.Fatalf("cycle %d: %d bytes still used after destroy (%d before)", cycle, used, base)
		}
	}

	r, err := f.CreateRegion("items", 64<<20, 0o600, RegionAttr{Memory: Volatile})
	if err != nil {
		t.Fatal(err)
	}
	for cycle := 0; cycle < 5; cycle++ {
		it, err := r.Allocate("", 12<<20, 0o600)
		if err != nil {
			t.Fatalf("cycle %d: %v", cycle, err)
		}
		if err := c.Put(fill, it, 0); err != nil {
			t.Fatal(err)
		}
		if err := it.Deallocate(); err != nil {
			t.Fatal(err)
		}
		if used := tmpfsUsed(t, o.ShmDir); used > base+2*slack+4<<20 {
			t.Fatalf("cycle %d: %d bytes still used after deallocating (%d before)", cycle, used, base)
		}
	}
	// A 20 MiB item cannot fit: the allocation fails and keeps nothing.
	if _, err := r.Allocate("", 20<<20, 0o600); CodeOf(err) != CodeNoSpace {
		t.Fatalf("20 MiB on a 16 MiB tmpfs: %v", err)
	}
	if used := tmpfsUsed(t, o.ShmDir); used > base+2*slack+4<<20 {
		t.Fatalf("a failed allocation kept %d bytes (%d before)", used-base, base)
	}
	if _, err := r.Allocate("", 12<<20, 0o600); err != nil {
		t.Fatalf("12 MiB after the failed allocation: %v", err)
	}
}

// A freed item's bytes are zeroed in its heap file, so a descriptor of the
// file passed earlier shows nothing of it, and the next item there starts
// zeroed; a permission change moves the bytes to the new class's file.
func TestHeapFilesSeparateAccessClasses(t *testing.T) {
	o := testOpts(t)
	f := open(t, o)
	defer f.Finalize()
	r, err := f.CreateRegion("classes", 1<<20, 0o700, RegionAttr{Memory: Volatile, PermLevel: PermDataItem})
	if err != nil {
		t.Fatal(err)
	}
	c := f.Default()
	a, _ := r.Allocate("a", 100, 0o600)
	b, _ := r.Allocate("b", 100, 0o644)
	if err := c.Put([]byte("AAAA"), a, 0); err != nil {
		t.Fatal(err)
	}
	if err := c.Put([]byte("BBBB"), b, 0); err != nil {
		t.Fatal(err)
	}
	pa, offA, err := a.File()
	if err != nil {
		t.Fatal(err)
	}
	pb, offB, err := b.File()
	if err != nil {
		t.Fatal(err)
	}
	if pa == pb {
		t.Fatalf("items of modes 0600 and 0644 share heap file %s", pa)
	}
	fileHas := func(p, s string) bool {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return bytes.Contains(b, []byte(s))
	}
	if !fileHas(pa, "AAAA") || fileHas(pa, "BBBB") || !fileHas(pb, "BBBB") || fileHas(pb, "AAAA") {
		t.Fatal("each heap file must hold its own class's bytes only")
	}
	if offA == offB {
		t.Fatal("two items at one offset")
	}
	if err := b.ChangePermissions(0o600); err != nil {
		t.Fatal(err)
	}
	if fileHas(pb, "BBBB") || !fileHas(pa, "BBBB") {
		t.Fatal("chmod 0600 must move b's bytes into the 0600 file and out of the 0644 one")
	}
	got := make([]byte, 4)
	if err := c.Get(got, b, 0); err != nil || string(got) != "BBBB" {
		t.Fatalf("b after chmod: %q %v", got, err)
	}
	if err := a.Deallocate(); err != nil {
		t.Fatal(err)
	}
	if fileHas(pa, "AAAA") {
		t.Fatal("a freed item's bytes stay in its heap file")
	}
}

// A persistent region written by an earlier version kept every item in one
// heap file (the region's marker path, now empty). Opening it moves each
// item into its class's file and empties the old one.
func TestLegacyHeapFileIsMigrated(t *testing.T) {
	o := testOpts(t)
	f := open(t, o)
	r, err := f.CreateRegion("old", 1<<20, 0o755, RegionAttr{Memory: Persistent, PermLevel: PermDataItem})
	if err != nil {
		t.Fatal(err)
	}
	a, _ := r.Allocate("a", 64, 0o600)
	b, _ := r.Allocate("b", 64, 0o644)
	c := f.Default()
	_ = c.Put([]byte("legacy-a"), a, 0)
	_ = c.Put([]byte("legacy-b"), b, 0)
	ga, _ := a.Global()
	gb, _ := b.Global()
	pa, _, _ := a.File()
	if err := f.Finalize(); err != nil {
		t.Fatal(err)
	}
	// Rebuild the old layout: one file, every item at its offset.
	base := pa[:strings.LastIndex(pa, ".heap")+len(".heap")]
	legacy := make([]byte, 1<<20)
	copy(legacy[ga.Offset:], "legacy-a")
	copy(legacy[gb.Offset:], "legacy-b")
	if err := os.WriteFile(base, legacy, 0o600); err != nil {
		t.Fatal(err)
	}
	classFiles, _ := filepath.Glob(base + ".*")
	for _, p := range classFiles {
		os.Remove(p)
	}
	f = open(t, o)
	defer f.Finalize()
	for name, want := range map[string]string{"a": "legacy-a", "b": "legacy-b"} {
		it, err := f.Lookup(name, "old")
		if err != nil {
			t.Fatal(err)
		}
		got := make([]byte, len(want))
		if err := f.Default().Get(got, it, 0); err != nil || string(got) != want {
			t.Fatalf("%s after migration: %q %v", name, got, err)
		}
	}
	if st, err := os.Stat(base); err != nil || st.Size() != 0 {
		t.Fatalf("the legacy file is not emptied: %v %v", st, err)
	}
}

// An address fam_map returned keeps showing the item after a permission
// change moved the item's bytes to another heap file.
func TestMapFollowsPermissionChange(t *testing.T) {
	f := open(t, testOpts(t))
	defer f.Finalize()
	r, err := f.CreateRegion("mapped", 1<<20, 0o700, RegionAttr{PermLevel: PermDataItem})
	if err != nil {
		t.Fatal(err)
	}
	it, _ := r.Allocate("m", 100, 0o600)
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
	if err := it.Unmap(unsafe.Pointer(&m[0])); err != nil {
		t.Fatal(err)
	}
}
