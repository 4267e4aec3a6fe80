package core_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/gofam/openfam/core"
	"github.com/gofam/openfam/core/amo"
	"github.com/gofam/openfam/internal/smaps"
)

// The persistence tests (issue 20) cannot read the files to tell whether
// bytes are on stable storage: a read through the page cache sees bytes
// never written back, and an O_DIRECT read writes them back first. What
// tells is the page state: after Quiet, no page of a persistent region's
// files may be dirty in any process mapping them (smaps' Shared_Dirty and
// Private_Dirty), checked while the writer still has them mapped.

// dirtyKB is the dirty kB of this process's mappings under dir.
func dirtyKB(t *testing.T, dir string) int {
	t.Helper()
	n, err := smaps.DirtyKB(0, dir)
	if err != nil {
		t.Fatalf("reading smaps: %v", err)
	}
	return n
}

// embeddedWith starts an embedded instance on dir with the given policy.
func embeddedWith(t *testing.T, dir string, p core.PersistPolicy, interval time.Duration) *core.Fam {
	t.Helper()
	o := core.DefaultOptions()
	o.DataDir, o.ShmDir, o.Server = dir, filepath.Join(dir, "shm"), ""
	o.PEID, o.PECount = 0, 1
	o.Persist, o.PersistInterval = p, interval
	f, err := core.Initialize(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Finalize() })
	return f
}

// dirtyPages writes one byte into each of n pages of it from byte 0.
func dirtyPages(t *testing.T, c *core.Context, it *core.Item, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		if err := c.Put([]byte{byte(i + 1)}, it, uint64(i)*4096); err != nil {
			t.Fatal(err)
		}
	}
}

func TestQuietMakesMappedPersistentWritesDurable(t *testing.T) {
	dir := t.TempDir()
	f := embeddedWith(t, dir, core.PersistQuiet, 0)
	r, err := f.CreateRegion("p", 8<<20, 0o600, core.RegionAttr{Memory: core.Persistent})
	if err != nil {
		t.Fatal(err)
	}
	it, err := r.Allocate("x", 4<<20, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	// (The catalogue's durability is tested in core/metadata: its
	// background checkpoints dirty bbolt's file at any time.)
	regions := filepath.Join(dir, "regions")
	c := f.Default()
	ops := []struct {
		name string
		do   func()
	}{
		{"put", func() { dirtyPages(t, c, it, 64) }},
		{"scatter", func() {
			if err := c.ScatterIndexed(make([]byte, 16), it, []uint64{100, 50000}, 8, false); err != nil {
				t.Fatal(err)
			}
		}},
		{"atomic", func() {
			if _, err := c.Atomic(it, 300<<10, amo.Int64, amo.Add, core.Value{Lo: 1}, core.Value{}, false); err != nil {
				t.Fatal(err)
			}
		}},
		{"copy", func() {
			w, err := c.Copy(it, 0, it, 2<<20, 64<<10)
			if err != nil {
				t.Fatal(err)
			}
			if err := w.Wait(); err != nil {
				t.Fatal(err)
			}
		}},
		{"fam_map", func() {
			b, err := it.Map()
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 16; i++ {
				b[3<<20+i*4096] = 7
			}
		}},
	}
	for _, op := range ops {
		op.do()
		if n := dirtyKB(t, regions); n == 0 {
			t.Fatalf("%s: no dirty page before quiet: the check could not fail", op.name)
		}
		if err := c.Quiet(); err != nil {
			t.Fatal(err)
		}
		if n := dirtyKB(t, regions); n != 0 {
			t.Fatalf("%s: %d kB of the persistent region still dirty after quiet", op.name, n)
		}
	}
}

func TestPersistPolicies(t *testing.T) {
	t.Run("lazy", func(t *testing.T) {
		dir := t.TempDir()
		f := embeddedWith(t, dir, core.PersistLazy, time.Hour)
		r, err := f.CreateRegion("p", 1<<20, 0o600, core.RegionAttr{Memory: core.Persistent})
		if err != nil {
			t.Fatal(err)
		}
		it, err := r.Allocate("x", 256<<10, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		c := f.Default()
		dirtyPages(t, c, it, 8)
		if err := c.Quiet(); err != nil {
			t.Fatal(err)
		}
		if n := dirtyKB(t, filepath.Join(dir, "regions")); n == 0 {
			t.Fatal("lazy: quiet flushed the region, want it left to the periodic flush")
		}
		// fam_persist flushes whatever the policy.
		if err := it.Persist(0, 256<<10); err != nil {
			t.Fatal(err)
		}
		if n := dirtyKB(t, filepath.Join(dir, "regions")); n != 0 {
			t.Fatalf("lazy: %d kB dirty after Persist", n)
		}
	})
	t.Run("lazy-interval", func(t *testing.T) {
		dir := t.TempDir()
		f := embeddedWith(t, dir, core.PersistLazy, 50*time.Millisecond)
		r, err := f.CreateRegion("p", 1<<20, 0o600, core.RegionAttr{Memory: core.Persistent})
		if err != nil {
			t.Fatal(err)
		}
		it, err := r.Allocate("x", 256<<10, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		dirtyPages(t, f.Default(), it, 8)
		// The periodic flush is what is tested: poll for its effect. The
		// deadline, 400 intervals, stays below the kernel's own writeback
		// (dirty_expire_centisecs, 30 s by default), which would clean
		// the pages without the flush.
		deadline := time.Now().Add(20 * time.Second)
		for dirtyKB(t, filepath.Join(dir, "regions")) != 0 {
			if time.Now().After(deadline) {
				t.Fatal("lazy: the periodic flush did not clean the region within 20s")
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
	t.Run("each", func(t *testing.T) {
		dir := t.TempDir()
		f := embeddedWith(t, dir, core.PersistEach, 0)
		r, err := f.CreateRegion("p", 1<<20, 0o600, core.RegionAttr{Memory: core.Persistent})
		if err != nil {
			t.Fatal(err)
		}
		it, err := r.Allocate("x", 256<<10, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		dirtyPages(t, f.Default(), it, 8)
		if n := dirtyKB(t, filepath.Join(dir, "regions")); n != 0 {
			t.Fatalf("each: %d kB dirty after blocking puts, before any quiet", n)
		}
	})
	t.Run("volatile", func(t *testing.T) {
		dir := t.TempDir()
		f := embeddedWith(t, dir, core.PersistQuiet, 0)
		r, err := f.CreateRegion("v", 1<<20, 0o600, core.RegionAttr{Memory: core.Volatile})
		if err != nil {
			t.Fatal(err)
		}
		it, err := r.Allocate("x", 256<<10, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		if it.Persistent() {
			t.Fatal("a volatile region's item reports persistent")
		}
		dirtyPages(t, f.Default(), it, 4)
		if err := f.Default().Quiet(); err != nil {
			t.Fatal(err)
		}
		if err := it.Persist(0, 4096); err != nil {
			t.Fatalf("Persist on a volatile item: %v", err)
		}
	})
}

func TestPersistArguments(t *testing.T) {
	f := embeddedWith(t, t.TempDir(), core.PersistQuiet, 0)
	r, err := f.CreateRegion("p", 1<<20, 0o600, core.RegionAttr{Memory: core.Persistent})
	if err != nil {
		t.Fatal(err)
	}
	it, err := r.Allocate("x", 4096, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	code(t, it.Persist(0, 0), core.CodeInvalid)
	code(t, it.Persist(4000, 100), core.CodeOutOfRange)
	code(t, (*core.Item)(nil).Persist(0, 1), core.CodeInvalid)
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	code(t, it.Persist(0, 1), core.CodeInvalid)
}

func TestPersistPolicyFromEnvironment(t *testing.T) {
	t.Setenv("OPENFAM_PERSIST", "each")
	t.Setenv("OPENFAM_PERSIST_INTERVAL", "250ms")
	o := core.DefaultOptions()
	if o.Persist != core.PersistEach || o.PersistInterval != 250*time.Millisecond {
		t.Fatalf("DefaultOptions: %v %v", o.Persist, o.PersistInterval)
	}
	t.Setenv("OPENFAM_PERSIST", "sometimes")
	o = core.DefaultOptions()
	o.DataDir = t.TempDir()
	_, err := core.Initialize(o)
	code(t, err, core.CodeInvalid)
}
