package core

import (
	"bytes"
	"os"
	"testing"

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
