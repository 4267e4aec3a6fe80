package core

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/gofam/openfam/core/amo"
)

func testOpts(t *testing.T) Options {
	t.Helper()
	d := t.TempDir()
	o := DefaultOptions()
	o.DataDir, o.ShmDir, o.BackupDir = d+"/data", d+"/shm", d+"/backups"
	o.PEID, o.PECount = 0, 1
	return o
}

func open(t *testing.T, o Options) *Fam {
	t.Helper()
	f, err := Initialize(o)
	if err != nil {
		t.Fatalf("Initialize: %v", err)
	}
	return f
}

func wantCode(t *testing.T, err error, code Code) {
	t.Helper()
	if CodeOf(err) != code {
		t.Fatalf("got error %v (code %d), want code %d (%v)", err, CodeOf(err), code, code)
	}
}

func TestRegionAndItemLifecycle(t *testing.T) {
	f := open(t, testOpts(t))
	defer f.Finalize()
	r, err := f.CreateRegion("r1", 1<<20, 0o600, RegionAttr{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.CreateRegion("r1", 1<<20, 0o600, RegionAttr{})
	wantCode(t, err, CodeExists)
	_, err = f.CreateRegion(strings.Repeat("n", NameMax+1), 4096, 0o600, RegionAttr{})
	wantCode(t, err, CodeNameTooLong)
	if _, err = f.CreateRegion("a-name-longer-than-openfams-forty-byte-limit", 4096, 0o600, RegionAttr{}); err != nil {
		t.Fatalf("a 44-byte name: %v", err)
	}
	_, err = f.CreateRegion("zero", 0, 0o600, RegionAttr{})
	wantCode(t, err, CodeInvalid)
	_, err = f.CreateRegion("bad", 4096, 0o600, RegionAttr{Memory: 9})
	wantCode(t, err, CodeInvalid)

	st, err := r.Stat()
	if err != nil || st.Size != 1<<20 || st.Name != "r1" || st.Attr.Memory != Volatile || st.Attr.PermLevel != PermRegion {
		t.Fatalf("stat = %+v, %v", st, err)
	}
	it, err := r.Allocate("a", 100, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Allocate("a", 100, 0o600)
	wantCode(t, err, CodeExists)
	_, err = r.Allocate("big", 2<<20, 0o600)
	wantCode(t, err, CodeNoSpace)
	_, err = r.Allocate("z", 0, 0o600)
	wantCode(t, err, CodeInvalid)

	msg := []byte("hello fabric-attached memory")
	if err := f.Default().Put(msg, it, 10); err != nil {
		t.Fatal(err)
	}
	it2, err := f.Lookup("a", "r1")
	if err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(msg))
	if err := f.Default().Get(got, it2, 10); err != nil || !bytes.Equal(got, msg) {
		t.Fatalf("get = %q, %v", got, err)
	}
	_, err = f.Lookup("nope", "r1")
	wantCode(t, err, CodeNotFound)
	_, err = f.Lookup("a", "nope")
	wantCode(t, err, CodeNotFound)

	// Bounds, including overflow of offset+length.
	wantCode(t, f.Default().Get(make([]byte, 8), it, 96), CodeOutOfRange)
	wantCode(t, f.Default().Get(make([]byte, 8), it, math.MaxUint64-3), CodeOutOfRange)
	wantCode(t, f.Default().Get(nil, it, 0), CodeInvalid)
	wantCode(t, f.Default().Get(make([]byte, 0), it, 0), CodeInvalid)

	// Global descriptors resolve lazily to the same bytes.
	g, _ := it.Global()
	it3, err := f.ItemFromGlobal(g)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Default().Get(got, it3, 10); err != nil || !bytes.Equal(got, msg) {
		t.Fatalf("get via global = %q, %v", got, err)
	}
	bogus, _ := f.ItemFromGlobal(GlobalDesc{RegionID: 999, Offset: 0})
	wantCode(t, f.Default().Get(got, bogus, 0), CodeNotFound)

	// Deallocate invalidates every handle; the space is reused.
	if err := it.Deallocate(); err != nil {
		t.Fatal(err)
	}
	wantCode(t, f.Default().Get(got, it2, 0), CodeInvalid)
	wantCode(t, f.Default().Get(got, it3, 0), CodeInvalid)
	wantCode(t, it.Deallocate(), CodeInvalid)
	again, err := r.Allocate("a", 100, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	zero := make([]byte, 100)
	buf := make([]byte, 100)
	if err := f.Default().Get(buf, again, 0); err != nil || !bytes.Equal(buf, zero) {
		t.Fatalf("reused block not zeroed: %v", err)
	}
	if g2, _ := again.Global(); g2 != g {
		t.Fatalf("freed block not reused: %v vs %v", g2, g)
	}
	if err := r.Destroy(); err != nil {
		t.Fatal(err)
	}
	wantCode(t, f.Default().Get(buf, again, 0), CodeInvalid)
	_, err = f.LookupRegion("r1")
	wantCode(t, err, CodeNotFound)
}

func TestResizeKeepsData(t *testing.T) {
	f := open(t, testOpts(t))
	defer f.Finalize()
	r, _ := f.CreateRegion("grow", 4096, 0o600, RegionAttr{})
	it, err := r.Allocate("x", 4000, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	f.Default().Put([]byte("keep"), it, 0)
	base, _, _, _ := it.Local()
	if err := r.Resize(4 << 20); err != nil {
		t.Fatal(err)
	}
	big, err := r.Allocate("y", 2<<20, 0o600)
	if err != nil {
		t.Fatalf("allocate after grow: %v", err)
	}
	_ = big
	got := make([]byte, 4)
	f.Default().Get(got, it, 0)
	if string(got) != "keep" {
		t.Fatalf("data lost across resize: %q", got)
	}
	if nb, _, _, _ := it.Local(); nb == base {
		t.Log("mapping grew in place")
	}
	wantCode(t, r.Resize(4096), CodeInvalid)
}

// As in OpenFAM, a region holds at least MinRegionSize (1 MiB) whatever
// size it was created with, and stat reports the size asked for.
func TestSmallRegionsHoldAtLeastOneMiB(t *testing.T) {
	f := open(t, testOpts(t))
	defer f.Finalize()
	r, err := f.CreateRegion("small", 8192, 0o600, RegionAttr{})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10; i++ {
		if _, err := r.Allocate(fmt.Sprintf("k%d", i), 1024, 0o600); err != nil {
			t.Fatalf("item %d of 1 KiB in an 8 KiB region: %v", i, err)
		}
	}
	if _, err := r.Allocate("big", 900<<10, 0o600); err != nil {
		t.Fatalf("900 KiB in an 8 KiB region (1 MiB heap): %v", err)
	}
	_, err = r.Allocate("too-big", 200<<10, 0o600)
	wantCode(t, err, CodeNoSpace)
	if st, _ := r.Stat(); st.Size != 8192 {
		t.Fatalf("stat size %d, want the 8192 asked for", st.Size)
	}
}

// TestPermissions checks item-level mode bits as they bind a user who is
// not the owner (a group member here), that a chmod reaches that user's
// open handles at once, and that the owner is bound by none of them, as in
// OpenFAM.
func TestPermissions(t *testing.T) {
	o := testOpts(t)
	f := open(t, o)
	me, mygid := f.Identity()
	member := f.As(me+1, mygid)
	r, _ := f.CreateRegion("perm", 1<<16, 0o644, RegionAttr{PermLevel: PermDataItem})
	r.Allocate("ro", 64, 0o440) // group: read only
	r.Allocate("wo", 64, 0o220) // group: write only
	ro, err := member.Lookup("ro", "perm")
	if err != nil {
		t.Fatal(err)
	}
	wo, err := member.Lookup("wo", "perm")
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 8)
	wantCode(t, member.Default().Put(buf, ro, 0), CodeNoPerm)
	if err := member.Default().Get(buf, ro, 0); err != nil {
		t.Fatal(err)
	}
	wantCode(t, member.Default().Get(buf, wo, 0), CodeNoPerm)
	_, err = member.Default().Atomic(wo, 0, amo.Int64, amo.Add, Value{Lo: 1}, Value{}, true)
	wantCode(t, err, CodeNoPerm)
	if _, err := member.Default().Atomic(wo, 0, amo.Int64, amo.Add, Value{Lo: 1}, Value{}, false); err != nil {
		t.Fatalf("non-fetching add with write-only permission: %v", err)
	}
	// Changing permissions takes effect on the member's open handles at once.
	own, err := f.Lookup("ro", "perm")
	if err != nil {
		t.Fatal(err)
	}
	if err := own.ChangePermissions(0o420); err != nil {
		t.Fatal(err)
	}
	if err := member.Default().Put(buf, ro, 0); err != nil {
		t.Fatalf("put after chmod: %v", err)
	}
	wantCode(t, member.Default().Get(buf, ro, 0), CodeNoPerm)

	// The owner is bound by no mode bits: it reads and writes its own
	// items whatever their mode, 0 included, on handles opened before and
	// after the chmod.
	if err := own.ChangePermissions(0); err != nil {
		t.Fatal(err)
	}
	if err := f.Default().Put([]byte("owner!!!"), own, 0); err != nil {
		t.Fatalf("owner put on its mode-0 item: %v", err)
	}
	if err := f.Default().Get(buf, own, 0); err != nil || string(buf) != "owner!!!" {
		t.Fatalf("owner get on its mode-0 item: %q, %v", buf, err)
	}
	wantCode(t, member.Default().Put(buf, ro, 0), CodeNoPerm)
	wantCode(t, member.Default().Get(buf, ro, 0), CodeNoPerm)
	ownWO, err := f.Lookup("wo", "perm")
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Default().Get(buf, ownWO, 0); err != nil {
		t.Fatalf("owner get on its write-only item: %v", err)
	}
	f.Finalize()

	// Another user: group and other bits apply.
	o2 := o
	o2.UID, o2.GID = 4242, 4242
	f2 := open(t, o2)
	defer f2.Finalize()
	_, err = f2.Lookup("ro", "perm")
	wantCode(t, err, CodeNoPerm)
	r2, err := f2.LookupRegion("perm")
	if err != nil {
		t.Fatal(err)
	}
	_, err = r2.Allocate("mine", 64, 0o600)
	wantCode(t, err, CodeNoPerm)
	wantCode(t, r2.Destroy(), CodeNoPerm)
	wantCode(t, r2.ChangePermissions(0o777), CodeNoPerm)
}

// TestRegionLevelPermissions checks that at region level the region's
// bits govern its items for a non-owner, whatever the items' own bits,
// and that a region chmod reaches that user's open handles at once; the
// owner keeps read and write.
func TestRegionLevelPermissions(t *testing.T) {
	f := open(t, testOpts(t))
	defer f.Finalize()
	me, mygid := f.Identity()
	member := f.As(me+1, mygid)
	r, _ := f.CreateRegion("rl", 1<<16, 0o660, RegionAttr{})
	mine, _ := r.Allocate("i", 64, 0o400) // item bits do not govern at region level
	it, err := member.Lookup("i", "rl")
	if err != nil {
		t.Fatal(err)
	}
	if err := member.Default().Put(make([]byte, 8), it, 0); err != nil {
		t.Fatalf("region-level rw region should allow put: %v", err)
	}
	if err := r.ChangePermissions(0o640); err != nil {
		t.Fatal(err)
	}
	wantCode(t, member.Default().Put(make([]byte, 8), it, 0), CodeNoPerm)
	if err := member.Default().Get(make([]byte, 8), it, 0); err != nil {
		t.Fatalf("group read after chmod 0640: %v", err)
	}
	if err := r.ChangePermissions(0); err != nil {
		t.Fatal(err)
	}
	wantCode(t, member.Default().Get(make([]byte, 8), it, 0), CodeNoPerm)
	if err := f.Default().Put(make([]byte, 8), mine, 0); err != nil {
		t.Fatalf("the owner may write its mode-0 region's item: %v", err)
	}
}

func TestPersistenceAcrossInstances(t *testing.T) {
	o := testOpts(t)
	f := open(t, o)
	r, _ := f.CreateRegion("p", 1<<16, 0o600, RegionAttr{Memory: Persistent})
	a, _ := r.Allocate("a", 64, 0o600)
	b, _ := r.Allocate("", 128, 0o600)
	f.Default().Put([]byte("persisted"), a, 0)
	f.Default().Put([]byte("unnamed"), b, 0)
	gb, _ := b.Global()
	if err := f.Finalize(); err != nil {
		t.Fatal(err)
	}
	wantCode(t, f.Finalize(), CodeInvalid)
	wantCode(t, f.Default().Put([]byte("x"), a, 0), CodeInvalid)

	f = open(t, o)
	defer f.Finalize()
	a2, err := f.Lookup("a", "p")
	if err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 9)
	f.Default().Get(got, a2, 0)
	if string(got) != "persisted" {
		t.Fatalf("got %q", got)
	}
	b2, _ := f.ItemFromGlobal(gb)
	f.Default().Get(got[:7], b2, 0)
	if string(got[:7]) != "unnamed" {
		t.Fatalf("unnamed got %q", got[:7])
	}
	// The reopened allocator knows both blocks: a new item overlaps neither.
	r2, _ := f.LookupRegion("p")
	c, err := r2.Allocate("c", 64, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	gc, _ := c.Global()
	ga, _ := a2.Global()
	if gc.Offset == ga.Offset || gc.Offset == gb.Offset {
		t.Fatalf("reopened allocator reused a live block: %v", gc)
	}
}

func TestGatherScatter(t *testing.T) {
	f := open(t, testOpts(t))
	defer f.Finalize()
	r, _ := f.CreateRegion("gs", 1<<16, 0o600, RegionAttr{})
	it, _ := r.Allocate("v", 80, 0o600) // ten 8-byte elements
	src := make([]byte, 80)
	for i := range src {
		src[i] = byte(i)
	}
	c := f.Default()
	c.Put(src, it, 0)
	dst := make([]byte, 24)
	if err := c.GatherStrided(dst, it, 3, 1, 3, 8, false); err != nil { // elements 1, 4, 7
		t.Fatal(err)
	}
	want := append(append(append([]byte{}, src[8:16]...), src[32:40]...), src[56:64]...)
	if !bytes.Equal(dst, want) {
		t.Fatalf("strided gather = %v", dst)
	}
	if err := c.GatherIndexed(dst, it, []uint64{9, 0, 5}, 8, true); err != nil {
		t.Fatal(err)
	}
	want = append(append(append([]byte{}, src[72:80]...), src[0:8]...), src[40:48]...)
	if !bytes.Equal(dst, want) {
		t.Fatalf("indexed gather = %v", dst)
	}
	// An out-of-range element leaves the item untouched.
	wantCode(t, c.ScatterIndexed(make([]byte, 16), it, []uint64{0, 10}, 8, false), CodeOutOfRange)
	got := make([]byte, 8)
	c.Get(got, it, 0)
	if !bytes.Equal(got, src[:8]) {
		t.Fatal("failed scatter modified the item")
	}
	wantCode(t, c.GatherStrided(dst, it, 3, 0, math.MaxUint64/2, 8, false), CodeOutOfRange)
	wantCode(t, c.GatherStrided(dst, it, 4, 0, 1, 8, false), CodeInvalid) // dst too small
	if err := c.ScatterStrided([]byte{1, 1, 2, 2}, it, 2, 0, 5, 2, false); err != nil {
		t.Fatal(err)
	}
	c.Get(got[:2], it, 10)
	if got[0] != 2 || got[1] != 2 {
		t.Fatalf("strided scatter = %v", got[:2])
	}
}

func TestAtomicsEveryTypeAndOp(t *testing.T) {
	f := open(t, testOpts(t))
	defer f.Finalize()
	r, _ := f.CreateRegion("amo", 1<<16, 0o600, RegionAttr{})
	it, _ := r.Allocate("w", 256, 0o600)
	c := f.Default()
	check := func(name string, got, want any) {
		t.Helper()
		if got != want {
			t.Fatalf("%s: got %v want %v", name, got, want)
		}
	}
	// int64
	AtomicDo(c, it, 0, amo.Set, int64(10))
	AtomicDo(c, it, 0, amo.Add, int64(5))
	AtomicDo(c, it, 0, amo.Subtract, int64(3))
	v, _ := AtomicFetch(c, it, 0, amo.Fetch, int64(0))
	check("int64 set/add/sub", v, int64(12))
	AtomicDo(c, it, 0, amo.Min, int64(-7))
	AtomicDo(c, it, 0, amo.Max, int64(-9))
	v, _ = AtomicFetch(c, it, 0, amo.Fetch, int64(0))
	check("int64 min/max", v, int64(-7))
	old, _ := AtomicFetch(c, it, 0, amo.Swap, int64(100))
	check("int64 swap", old, int64(-7))
	old, _ = CompareSwap(c, it, 0, int64(1), int64(2))
	check("int64 cas fail", old, int64(100))
	old, _ = CompareSwap(c, it, 0, int64(100), int64(2))
	check("int64 cas ok", old, int64(100))
	v, _ = AtomicFetch(c, it, 0, amo.Fetch, int64(0))
	check("int64 after cas", v, int64(2))
	// uint32 bitwise
	AtomicDo(c, it, 8, amo.Set, uint32(0b1100))
	AtomicDo(c, it, 8, amo.And, uint32(0b1010))
	AtomicDo(c, it, 8, amo.Or, uint32(0b0001))
	o32, _ := AtomicFetch(c, it, 8, amo.Xor, uint32(0b1111))
	check("uint32 and/or", o32, uint32(0b1001))
	u, _ := AtomicFetch(c, it, 8, amo.Fetch, uint32(0))
	check("uint32 xor", u, uint32(0b0110))
	// uint64 min is unsigned
	AtomicDo(c, it, 16, amo.Set, uint64(5))
	AtomicDo(c, it, 16, amo.Min, uint64(math.MaxUint64))
	u64, _ := AtomicFetch(c, it, 16, amo.Fetch, uint64(0))
	check("uint64 unsigned min", u64, uint64(5))
	// int32 negative min
	AtomicDo(c, it, 24, amo.Set, int32(3))
	AtomicDo(c, it, 24, amo.Min, int32(-3))
	i32, _ := AtomicFetch(c, it, 24, amo.Fetch, int32(0))
	check("int32 min", i32, int32(-3))
	// floats
	AtomicDo(c, it, 32, amo.Set, 1.5)
	AtomicDo(c, it, 32, amo.Add, 2.25)
	AtomicDo(c, it, 32, amo.Max, -1.0)
	d, _ := AtomicFetch(c, it, 32, amo.Fetch, 0.0)
	check("double add/max", d, 3.75)
	AtomicDo(c, it, 32, amo.Min, math.NaN())
	d, _ = AtomicFetch(c, it, 32, amo.Fetch, 0.0)
	check("double min NaN keeps value", d, 3.75)
	AtomicDo(c, it, 40, amo.Set, float32(2))
	AtomicDo(c, it, 40, amo.Subtract, float32(0.5))
	AtomicDo(c, it, 40, amo.Min, float32(-8))
	fl, _ := AtomicFetch(c, it, 40, amo.Fetch, float32(0))
	check("float sub/min", fl, float32(-8))
	// int128 through the raw interface
	if _, err := c.Atomic(it, 48, amo.Int128, amo.Set, Value{Lo: 1, Hi: 2}, Value{}, false); err != nil {
		t.Fatal(err)
	}
	prev, err := c.Atomic(it, 48, amo.Int128, amo.CompareSwap, Value{Lo: 3, Hi: 4}, Value{Lo: 1, Hi: 2}, true)
	if err != nil || prev != (Value{Lo: 1, Hi: 2}) {
		t.Fatalf("int128 cas = %v, %v", prev, err)
	}
	cur, _ := c.Atomic(it, 48, amo.Int128, amo.Fetch, Value{}, Value{}, true)
	check("int128 fetch", cur, Value{Lo: 3, Hi: 4})
	// Errors.
	_, err = c.Atomic(it, 4, amo.Int64, amo.Add, Value{}, Value{}, false)
	wantCode(t, err, CodeInvalid) // misaligned
	_, err = c.Atomic(it, 256, amo.Int64, amo.Add, Value{}, Value{}, false)
	wantCode(t, err, CodeOutOfRange)
	_, err = c.Atomic(it, 0, amo.Float64, amo.And, Value{}, Value{}, false)
	wantCode(t, err, CodeInvalid)
	_, err = c.Atomic(it, 48, amo.Int128, amo.Add, Value{}, Value{}, false)
	wantCode(t, err, CodeInvalid)
}

func TestConcurrentFetchAdd(t *testing.T) {
	f := open(t, testOpts(t))
	defer f.Finalize()
	r, _ := f.CreateRegion("cc", 1<<16, 0o600, RegionAttr{})
	it, _ := r.Allocate("ctr", 8, 0o600)
	const workers, n = 8, 5000
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, err := f.OpenContext()
			if err != nil {
				t.Error(err)
				return
			}
			defer ctx.Close()
			for i := 0; i < n; i++ {
				if _, err := AtomicFetch(ctx, it, 0, amo.Add, int64(1)); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	v, _ := AtomicFetch(f.Default(), it, 0, amo.Fetch, int64(0))
	if v != workers*n {
		t.Fatalf("total %d, want %d", v, workers*n)
	}
}

func TestContextsAndCopy(t *testing.T) {
	f := open(t, testOpts(t))
	defer f.Finalize()
	r, _ := f.CreateRegion("ctx", 4<<20, 0o600, RegionAttr{})
	a, _ := r.Allocate("a", 1<<20, 0o600)
	b, _ := r.Allocate("b", 1<<20, 0o600)
	c1, _ := f.OpenContext()
	c2, _ := f.OpenContext()
	data := bytes.Repeat([]byte{7}, 1<<20)
	if err := c1.PutNB(data, a, 0); err != nil {
		t.Fatal(err)
	}
	w, err := c2.Copy(a, 0, b, 0, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Wait(); err != nil {
		t.Fatal(err)
	}
	wantCode(t, w.Wait(), CodeInvalid)
	if err := c1.Quiet(); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 1<<20)
	c2.Get(got, b, 0)
	if !bytes.Equal(got, data) {
		t.Fatal("copy mismatch")
	}
	_, err = c1.Copy(a, 1, b, 0, 1<<20)
	wantCode(t, err, CodeOutOfRange)
	if c1.Progress() != 0 {
		t.Fatal("progress after quiet")
	}
	if err := c1.Close(); err != nil {
		t.Fatal(err)
	}
	wantCode(t, c1.Put(data[:1], a, 0), CodeInvalid)
	wantCode(t, f.Default().Close(), CodeInvalid)
}

func TestMapSeesPuts(t *testing.T) {
	f := open(t, testOpts(t))
	defer f.Finalize()
	r, _ := f.CreateRegion("map", 1<<16, 0o600, RegionAttr{PermLevel: PermDataItem})
	it, _ := r.Allocate("m", 5000, 0o600)
	m, err := it.Map()
	if err != nil {
		t.Fatal(err)
	}
	f.Default().Put([]byte("via put"), it, 4000)
	if string(m[4000:4007]) != "via put" {
		t.Fatalf("mapping does not see put: %q", m[4000:4007])
	}
	copy(m[0:], "via map")
	got := make([]byte, 7)
	f.Default().Get(got, it, 0)
	if string(got) != "via map" {
		t.Fatalf("get does not see mapped store: %q", got)
	}
	if err := it.Unmap(unsafe_ptr(m)); err != nil {
		t.Fatal(err)
	}
	wantCode(t, it.Unmap(unsafe_ptr(m)), CodeInvalid)
	// A write-only item is not mapped for a user the mode binds (a group
	// member here); its owner, bound by no mode bits, maps it read-write.
	own, _ := r.Allocate("wo", 64, 0o220)
	me, mygid := f.Identity()
	wo, err := f.As(me+1, mygid).Lookup("wo", "map")
	if err != nil {
		t.Fatal(err)
	}
	_, err = wo.Map()
	wantCode(t, err, CodeNoPerm)
	om, err := own.Map()
	if err != nil {
		t.Fatalf("the owner maps its write-only item: %v", err)
	}
	copy(om, "owner")
	if err := f.Default().Get(got[:5], own, 0); err != nil || string(got[:5]) != "owner" {
		t.Fatalf("the owner's store through its mapping: %q %v", got[:5], err)
	}
}

func TestBackupRestore(t *testing.T) {
	f := open(t, testOpts(t))
	defer f.Finalize()
	r, _ := f.CreateRegion("bk", 1<<16, 0o600, RegionAttr{})
	it, _ := r.Allocate("src", 1000, 0o600)
	f.Default().Put(bytes.Repeat([]byte("ab"), 500), it, 0)
	w, err := f.Backup(it, "snap1")
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Wait(); err != nil {
		t.Fatal(err)
	}
	_, err = f.Backup(it, "snap1")
	wantCode(t, err, CodeExists)
	list, _ := f.ListBackups("snap")
	if !bytes.HasPrefix([]byte(list), []byte("snap1 1000 ")) {
		t.Fatalf("list = %q", list)
	}
	dst, _ := r.Allocate("dst", 1000, 0o600)
	w, err = f.Restore("snap1", dst)
	if err != nil {
		t.Fatal(err)
	}
	w.Wait()
	got := make([]byte, 1000)
	f.Default().Get(got, dst, 0)
	if !bytes.Equal(got, bytes.Repeat([]byte("ab"), 500)) {
		t.Fatal("restore mismatch")
	}
	w, nw, err := f.RestoreNew("snap1", r, "fresh", 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Wait(); err != nil {
		t.Fatal(err)
	}
	f.Default().Get(got, nw, 0)
	if !bytes.Equal(got, bytes.Repeat([]byte("ab"), 500)) {
		t.Fatal("restore-new mismatch")
	}
	small, _ := r.Allocate("small", 10, 0o600)
	_, err = f.Restore("snap1", small)
	wantCode(t, err, CodeOutOfRange)
	_, err = f.Restore("missing", dst)
	wantCode(t, err, CodeBackupNotFound)
	w, err = f.DeleteBackup("snap1")
	if err != nil {
		t.Fatal(err)
	}
	w.Wait()
	_, err = f.DeleteBackup("snap1")
	wantCode(t, err, CodeBackupNotFound)
	_, err = f.Backup(it, "../escape")
	wantCode(t, err, CodeInvalid)
}

func TestOptionsAndLifecycle(t *testing.T) {
	o := testOpts(t)
	o.Settings = map[string]string{"RUNTIME": "bogus"}
	_, err := Initialize(o)
	wantCode(t, err, CodeInvalid)
	o.Settings = map[string]string{"OPENFAM_MODEL": "memory_server"}
	f := open(t, o)
	if v, _ := f.Option("VERSION"); v != APIVersion {
		t.Fatalf("VERSION = %v", v)
	}
	if v, _ := f.Option("PE_COUNT"); v != 1 {
		t.Fatalf("PE_COUNT = %v", v)
	}
	if v, _ := f.Option("OPENFAM_MODEL"); v != "memory_server" {
		t.Fatalf("OPENFAM_MODEL = %v", v)
	}
	_, err = f.Option("NOPE")
	wantCode(t, err, CodeInvalid)
	if len(OptionNames()) != 17 {
		t.Fatal("option list length")
	}
	if err := f.Barrier(); err != nil {
		t.Fatal(err)
	}
	f.Finalize()
	_, err = f.CreateRegion("late", 4096, 0o600, RegionAttr{})
	wantCode(t, err, CodeInvalid)
}

func TestPEConfigFile(t *testing.T) {
	root := t.TempDir()
	t.Setenv("OPENFAM_ROOT", root)
	o := testOpts(t)
	_, err := Initialize(o)
	wantCode(t, err, CodeInvalid) // OPENFAM_ROOT set, file missing
	os.MkdirAll(root+"/config", 0o755)
	os.WriteFile(root+"/config/fam_pe_config.yaml", []byte("# PE config\nFamThreadModel: single\nopenfam_model: memory_server\nruntime: NONE\nfam_client_interface_service_address: 10.0.0.5:8880\nlist:\n  - nested\n"), 0o644)
	o.Settings = map[string]string{"RUNTIME": "PMIX"} // Fam_Options win over the file
	f := open(t, o)
	defer f.Finalize()
	for name, want := range map[string]string{"FAM_THREAD_MODEL": "FAM_THREAD_SERIALIZE", "OPENFAM_MODEL": "memory_server",
		"RUNTIME": "PMIX", "CIS_SERVER": "10.0.0.5", "GRPC_PORT": "8880"} {
		if v, _ := f.Option(name); v != want {
			t.Errorf("%s = %v, want %s", name, v, want)
		}
	}
}

func TestDeallocateRule(t *testing.T) {
	o := testOpts(t)
	f := open(t, o)
	r, _ := f.CreateRegion("dr", 1<<16, 0o644, RegionAttr{PermLevel: PermDataItem})
	ro, _ := r.Allocate("ro", 64, 0o444)
	if err := ro.Deallocate(); err != nil {
		t.Fatalf("owner may free a read-only item: %v", err)
	}
	r.Allocate("shared", 64, 0o666)
	f.Finalize()
	o.UID, o.GID = 5000, 5000
	f2 := open(t, o)
	defer f2.Finalize()
	it, err := f2.Lookup("shared", "dr")
	if err != nil {
		t.Fatal(err)
	}
	wantCode(t, it.Deallocate(), CodeNoPerm) // region is 0644: others may not free
}

func TestIdentityView(t *testing.T) {
	f := open(t, testOpts(t))
	defer f.Finalize()
	r, _ := f.CreateRegion("view", 1<<16, 0o640, RegionAttr{})
	r.Allocate("x", 64, 0o600)
	other := f.As(7000, 7000)
	if uid, _ := other.Identity(); uid != 7000 {
		t.Fatal("identity not kept")
	}
	_, err := other.Lookup("x", "view")
	wantCode(t, err, CodeNoPerm)
	grp := f.As(7001, func() uint32 { _, g := f.Identity(); return g }())
	it, err := grp.Lookup("x", "view") // group class of region mode 0640: read only
	if err != nil {
		t.Fatal(err)
	}
	wantCode(t, f.Default().Put([]byte{1}, it, 0), CodeNoPerm)
	if err := f.Default().Get(make([]byte, 1), it, 0); err != nil {
		t.Fatal(err)
	}
}

// A region's usage is a running count (servers report it without listing
// the items): right after allocations and deallocations, and after the
// store is opened again.
func TestRegionUsedIsKept(t *testing.T) {
	o := testOpts(t)
	f := open(t, o)
	r, err := f.CreateRegion("used", 1<<20, 0o600, RegionAttr{})
	if err != nil {
		t.Fatal(err)
	}
	a, _ := r.Allocate("a", 1000, 0o600)
	if _, err := r.Allocate("b", 24, 0o600); err != nil {
		t.Fatal(err)
	}
	if u, err := r.Used(); err != nil || u != 1024 {
		t.Fatalf("used %d (%v), want 1024", u, err)
	}
	if err := a.Deallocate(); err != nil {
		t.Fatal(err)
	}
	if u, _ := r.Used(); u != 24 {
		t.Fatalf("used %d after freeing 1000 bytes, want 24", u)
	}
	if err := f.Finalize(); err != nil {
		t.Fatal(err)
	}
	f = open(t, o)
	defer f.Finalize()
	r, err = f.LookupRegion("used")
	if err != nil {
		t.Fatal(err)
	}
	if u, _ := r.Used(); u != 24 {
		t.Fatalf("used %d after reopening, want 24", u)
	}
}
