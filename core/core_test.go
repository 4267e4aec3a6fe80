package core_test

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/gofam/openfam/core"
	"github.com/gofam/openfam/core/amo"
)

// The API's shared suite: every test runs on every mode (suite_test.go),
// embedded and served by famd, with the same expectations.

func TestRegionAndItemLifecycle(t *testing.T) {
	forEachMode(t, func(t *testing.T, env *testEnv) {
		f := env.open()
		c := f.Default()
		r := mustV(f.CreateRegion("r1", 1<<20, 0o600, core.RegionAttr{}))(t, "create region r1")
		_, err := f.CreateRegion("r1", 1<<20, 0o600, core.RegionAttr{})
		code(t, err, core.CodeExists)
		_, err = f.CreateRegion(strings.Repeat("n", core.NameMax+1), 4096, 0o600, core.RegionAttr{})
		code(t, err, core.CodeNameTooLong)
		if _, err = f.CreateRegion("a-name-longer-than-openfams-forty-byte-limit", 4096, 0o600, core.RegionAttr{}); err != nil {
			t.Fatalf("a 44-byte name: %v", err)
		}
		_, err = f.CreateRegion("zero", 0, 0o600, core.RegionAttr{})
		code(t, err, core.CodeInvalid)
		_, err = f.CreateRegion("bad", 4096, 0o600, core.RegionAttr{Memory: 9})
		code(t, err, core.CodeInvalid)

		st, err := r.Stat()
		if err != nil || st.Size != 1<<20 || st.Name != "r1" || st.Attr.Memory != core.Volatile || st.Attr.PermLevel != core.PermRegion {
			t.Fatalf("stat = %+v, %v", st, err)
		}
		it := mustV(r.Allocate("a", 100, 0o600))(t, "allocate a")
		_, err = r.Allocate("a", 100, 0o600)
		code(t, err, core.CodeExists)
		_, err = r.Allocate("big", 2<<20, 0o600)
		code(t, err, core.CodeNoSpace)
		_, err = r.Allocate("z", 0, 0o600)
		code(t, err, core.CodeInvalid)

		msg := []byte("hello fabric-attached memory")
		must(t, "put", c.Put(msg, it, 10))
		it2 := mustV(f.Lookup("a", "r1"))(t, "lookup a")
		got := make([]byte, len(msg))
		if err := c.Get(got, it2, 10); err != nil || !bytes.Equal(got, msg) {
			t.Fatalf("get = %q, %v", got, err)
		}
		_, err = f.Lookup("nope", "r1")
		code(t, err, core.CodeNotFound)
		_, err = f.Lookup("a", "nope")
		code(t, err, core.CodeNotFound)

		// Bounds, including overflow of offset+length.
		code(t, c.Get(make([]byte, 8), it, 96), core.CodeOutOfRange)
		code(t, c.Get(make([]byte, 8), it, math.MaxUint64-3), core.CodeOutOfRange)
		code(t, c.Get(nil, it, 0), core.CodeInvalid)
		code(t, c.Get(make([]byte, 0), it, 0), core.CodeInvalid)

		// Global descriptors resolve lazily to the same bytes.
		g := mustV(it.Global())(t, "global of a")
		it3 := mustV(f.ItemFromGlobal(g))(t, "item from global")
		if err := c.Get(got, it3, 10); err != nil || !bytes.Equal(got, msg) {
			t.Fatalf("get via global = %q, %v", got, err)
		}
		bogus := mustV(f.ItemFromGlobal(core.GlobalDesc{RegionID: 999, Offset: 0}))(t, "item from a global of no region")
		code(t, c.Get(got, bogus, 0), core.CodeNotFound)

		// Deallocate invalidates every handle; the space is reused.
		must(t, "deallocate a", it.Deallocate())
		code(t, c.Get(got, it2, 0), core.CodeInvalid)
		code(t, c.Get(got, it3, 0), core.CodeInvalid)
		code(t, it.Deallocate(), core.CodeInvalid)
		again := mustV(r.Allocate("a", 100, 0o600))(t, "allocate a again")
		zero := make([]byte, 100)
		buf := make([]byte, 100)
		if err := c.Get(buf, again, 0); err != nil || !bytes.Equal(buf, zero) {
			t.Fatalf("reused block not zeroed: %v", err)
		}
		if g2 := mustV(again.Global())(t, "global of a again"); g2 != g {
			t.Fatalf("freed block not reused: %v vs %v", g2, g)
		}
		must(t, "destroy r1", r.Destroy())
		code(t, c.Get(buf, again, 0), core.CodeInvalid)
		_, err = f.LookupRegion("r1")
		code(t, err, core.CodeNotFound)
	})
}

func TestResizeKeepsData(t *testing.T) {
	forEachMode(t, func(t *testing.T, env *testEnv) {
		f := env.open()
		r := mustV(f.CreateRegion("grow", 4096, 0o600, core.RegionAttr{}))(t, "create region")
		it := mustV(r.Allocate("x", 4000, 0o600))(t, "allocate x")
		must(t, "put", f.Default().Put([]byte("keep"), it, 0))
		base := localBase(it)
		must(t, "resize", r.Resize(4<<20))
		if _, err := r.Allocate("y", 2<<20, 0o600); err != nil {
			t.Fatalf("allocate after grow: %v", err)
		}
		got := make([]byte, 4)
		must(t, "get", f.Default().Get(got, it, 0))
		if string(got) != "keep" {
			t.Fatalf("data lost across resize: %q", got)
		}
		if nb := localBase(it); nb == base && base != nil {
			t.Log("mapping grew in place")
		}
		code(t, r.Resize(4096), core.CodeInvalid)
	})
}

// As in OpenFAM, a region holds at least MinRegionSize (1 MiB) whatever
// size it was created with, and stat reports the size asked for.
func TestSmallRegionsHoldAtLeastOneMiB(t *testing.T) {
	forEachMode(t, func(t *testing.T, env *testEnv) {
		f := env.open()
		r := mustV(f.CreateRegion("small", 8192, 0o600, core.RegionAttr{}))(t, "create region")
		for i := 0; i < 10; i++ {
			if _, err := r.Allocate(fmt.Sprintf("k%d", i), 1024, 0o600); err != nil {
				t.Fatalf("item %d of 1 KiB in an 8 KiB region: %v", i, err)
			}
		}
		if _, err := r.Allocate("big", 900<<10, 0o600); err != nil {
			t.Fatalf("900 KiB in an 8 KiB region (1 MiB heap): %v", err)
		}
		_, err := r.Allocate("too-big", 200<<10, 0o600)
		code(t, err, core.CodeNoSpace)
		if st := mustV(r.Stat())(t, "region stat"); st.Size != 8192 {
			t.Fatalf("stat size %d, want the 8192 asked for", st.Size)
		}
	})
}

// TestPermissions checks item-level mode bits as they bind a user who is
// not the owner (a group member here), that a chmod reaches that user's
// open handles at once, and that the owner is bound by none of them, as in
// OpenFAM.
func TestPermissions(t *testing.T) {
	forEachMode(t, func(t *testing.T, env *testEnv) {
		env.otherUser(uint32(os.Getuid())+1, uint32(os.Getgid()))
		f := env.open()
		me, mygid := f.Identity()
		member := env.as(f, me+1, mygid)
		r := mustV(f.CreateRegion("perm", 1<<16, 0o644, core.RegionAttr{PermLevel: core.PermDataItem}))(t, "create region")
		mustV(r.Allocate("ro", 64, 0o440))(t, "allocate ro") // group: read only
		mustV(r.Allocate("wo", 64, 0o220))(t, "allocate wo") // group: write only
		ro := mustV(member.Lookup("ro", "perm"))(t, "member's lookup of ro")
		wo := mustV(member.Lookup("wo", "perm"))(t, "member's lookup of wo")
		mc := member.Default()
		buf := make([]byte, 8)
		code(t, mc.Put(buf, ro, 0), core.CodeNoPerm)
		must(t, "member's get of ro", mc.Get(buf, ro, 0))
		code(t, mc.Get(buf, wo, 0), core.CodeNoPerm)
		_, err := mc.Atomic(wo, 0, amo.Int64, amo.Add, core.Value{Lo: 1}, core.Value{}, true)
		code(t, err, core.CodeNoPerm)
		if _, err := mc.Atomic(wo, 0, amo.Int64, amo.Add, core.Value{Lo: 1}, core.Value{}, false); err != nil {
			t.Fatalf("non-fetching add with write-only permission: %v", err)
		}
		// Changing permissions takes effect on the member's open handles at once
		// (with famd, once famd's revocation event has reached the member).
		own := mustV(f.Lookup("ro", "perm"))(t, "owner's lookup of ro")
		key := core.KeyOf(ro)
		must(t, "chmod 0420", own.ChangePermissions(0o420))
		env.awaitRevocation(ro, key)
		if err := mc.Put(buf, ro, 0); err != nil {
			t.Fatalf("put after chmod: %v", err)
		}
		code(t, mc.Get(buf, ro, 0), core.CodeNoPerm)

		// The owner is bound by no mode bits: it reads and writes its own
		// items whatever their mode, 0 included, on handles opened before and
		// after the chmod.
		must(t, "chmod 0", own.ChangePermissions(0))
		if err := f.Default().Put([]byte("owner!!!"), own, 0); err != nil {
			t.Fatalf("owner put on its mode-0 item: %v", err)
		}
		if err := f.Default().Get(buf, own, 0); err != nil || string(buf) != "owner!!!" {
			t.Fatalf("owner get on its mode-0 item: %q, %v", buf, err)
		}
		code(t, mc.Put(buf, ro, 0), core.CodeNoPerm)
		code(t, mc.Get(buf, ro, 0), core.CodeNoPerm)
		ownWO := mustV(f.Lookup("wo", "perm"))(t, "owner's lookup of wo")
		if err := f.Default().Get(buf, ownWO, 0); err != nil {
			t.Fatalf("owner get on its write-only item: %v", err)
		}
		must(t, "finalize", f.Finalize())

		// Another user: group and other bits apply.
		f2 := env.openAs(4242, 4242)
		_, err = f2.Lookup("ro", "perm")
		code(t, err, core.CodeNoPerm)
		r2 := mustV(f2.LookupRegion("perm"))(t, "another user's region lookup")
		_, err = r2.Allocate("mine", 64, 0o600)
		code(t, err, core.CodeNoPerm)
		code(t, r2.Destroy(), core.CodeNoPerm)
		code(t, r2.ChangePermissions(0o777), core.CodeNoPerm)
	})
}

// TestRegionLevelPermissions checks that at region level the region's
// bits govern its items for a non-owner, whatever the items' own bits,
// and that a region chmod reaches that user's open handles at once; the
// owner keeps read and write.
func TestRegionLevelPermissions(t *testing.T) {
	forEachMode(t, func(t *testing.T, env *testEnv) {
		env.otherUser(uint32(os.Getuid())+1, uint32(os.Getgid()))
		f := env.open()
		me, mygid := f.Identity()
		member := env.as(f, me+1, mygid)
		mc := member.Default()
		r := mustV(f.CreateRegion("rl", 1<<16, 0o660, core.RegionAttr{}))(t, "create region")
		mine := mustV(r.Allocate("i", 64, 0o400))(t, "allocate i") // item bits do not govern at region level
		it := mustV(member.Lookup("i", "rl"))(t, "member's lookup")
		if err := mc.Put(make([]byte, 8), it, 0); err != nil {
			t.Fatalf("region-level rw region should allow put: %v", err)
		}
		must(t, "region chmod 0640", r.ChangePermissions(0o640))
		code(t, mc.Put(make([]byte, 8), it, 0), core.CodeNoPerm)
		if err := mc.Get(make([]byte, 8), it, 0); err != nil {
			t.Fatalf("group read after chmod 0640: %v", err)
		}
		must(t, "region chmod 0", r.ChangePermissions(0))
		code(t, mc.Get(make([]byte, 8), it, 0), core.CodeNoPerm)
		if err := f.Default().Put(make([]byte, 8), mine, 0); err != nil {
			t.Fatalf("the owner may write its mode-0 region's item: %v", err)
		}
	})
}

// A persistent region's items, named and unnamed, outlive the program (and
// with famd, famd itself: it restarts between the two programs).
func TestPersistenceAcrossInstances(t *testing.T) {
	forEachMode(t, func(t *testing.T, env *testEnv) {
		f := env.open()
		r := mustV(f.CreateRegion("p", 1<<16, 0o600, core.RegionAttr{Memory: core.Persistent}))(t, "create region")
		a := mustV(r.Allocate("a", 64, 0o600))(t, "allocate a")
		b := mustV(r.Allocate("", 128, 0o600))(t, "allocate an unnamed item")
		must(t, "put a", f.Default().Put([]byte("persisted"), a, 0))
		must(t, "put b", f.Default().Put([]byte("unnamed"), b, 0))
		gb := mustV(b.Global())(t, "global of b")
		must(t, "finalize", f.Finalize())
		code(t, f.Finalize(), core.CodeInvalid)
		code(t, f.Default().Put([]byte("x"), a, 0), core.CodeInvalid)

		env.restart()
		f = env.open()
		a2 := mustV(f.Lookup("a", "p"))(t, "lookup a")
		got := make([]byte, 9)
		must(t, "get a", f.Default().Get(got, a2, 0))
		if string(got) != "persisted" {
			t.Fatalf("got %q", got)
		}
		b2 := mustV(f.ItemFromGlobal(gb))(t, "b from its global")
		must(t, "get b", f.Default().Get(got[:7], b2, 0))
		if string(got[:7]) != "unnamed" {
			t.Fatalf("unnamed got %q", got[:7])
		}
		// The reopened allocator knows both blocks: a new item overlaps neither.
		r2 := mustV(f.LookupRegion("p"))(t, "lookup region")
		c := mustV(r2.Allocate("c", 64, 0o600))(t, "allocate c")
		gc := mustV(c.Global())(t, "global of c")
		ga := mustV(a2.Global())(t, "global of a")
		if gc.Offset == ga.Offset || gc.Offset == gb.Offset {
			t.Fatalf("reopened allocator reused a live block: %v", gc)
		}
	})
}

func TestGatherScatter(t *testing.T) {
	forEachMode(t, func(t *testing.T, env *testEnv) {
		f := env.open()
		r := mustV(f.CreateRegion("gs", 1<<16, 0o600, core.RegionAttr{}))(t, "create region")
		it := mustV(r.Allocate("v", 80, 0o600))(t, "allocate") // ten 8-byte elements
		src := make([]byte, 80)
		for i := range src {
			src[i] = byte(i)
		}
		c := f.Default()
		must(t, "put", c.Put(src, it, 0))
		dst := make([]byte, 24)
		must(t, "strided gather", c.GatherStrided(dst, it, 3, 1, 3, 8, false)) // elements 1, 4, 7
		want := append(append(append([]byte{}, src[8:16]...), src[32:40]...), src[56:64]...)
		if !bytes.Equal(dst, want) {
			t.Fatalf("strided gather = %v", dst)
		}
		must(t, "indexed gather", c.GatherIndexed(dst, it, []uint64{9, 0, 5}, 8, true))
		want = append(append(append([]byte{}, src[72:80]...), src[0:8]...), src[40:48]...)
		if !bytes.Equal(dst, want) {
			t.Fatalf("indexed gather = %v", dst)
		}
		// An out-of-range element leaves the item untouched.
		code(t, c.ScatterIndexed(make([]byte, 16), it, []uint64{0, 10}, 8, false), core.CodeOutOfRange)
		got := make([]byte, 8)
		must(t, "get", c.Get(got, it, 0))
		if !bytes.Equal(got, src[:8]) {
			t.Fatal("failed scatter modified the item")
		}
		code(t, c.GatherStrided(dst, it, 3, 0, math.MaxUint64/2, 8, false), core.CodeOutOfRange)
		code(t, c.GatherStrided(dst, it, 4, 0, 1, 8, false), core.CodeInvalid) // dst too small
		must(t, "strided scatter", c.ScatterStrided([]byte{1, 1, 2, 2}, it, 2, 0, 5, 2, false))
		must(t, "get", c.Get(got[:2], it, 10))
		if got[0] != 2 || got[1] != 2 {
			t.Fatalf("strided scatter = %v", got[:2])
		}
	})
}

func TestAtomicsEveryTypeAndOp(t *testing.T) {
	forEachMode(t, func(t *testing.T, env *testEnv) {
		f := env.open()
		r := mustV(f.CreateRegion("amo", 1<<16, 0o600, core.RegionAttr{}))(t, "create region")
		it := mustV(r.Allocate("w", 256, 0o600))(t, "allocate")
		c := f.Default()
		check := func(name string, got, want any) {
			t.Helper()
			if got != want {
				t.Fatalf("%s: got %v want %v", name, got, want)
			}
		}
		// do is a non-fetching atomic; fetch a fetching one, its result
		// checked against want.
		do := func(what string, err error) { t.Helper(); must(t, what, err) }
		fetch := func(what string, got any, err error, want any) {
			t.Helper()
			must(t, what, err)
			check(what, got, want)
		}
		// int64
		do("int64 set", core.AtomicDo(c, it, 0, amo.Set, int64(10)))
		do("int64 add", core.AtomicDo(c, it, 0, amo.Add, int64(5)))
		do("int64 subtract", core.AtomicDo(c, it, 0, amo.Subtract, int64(3)))
		v, err := core.AtomicFetch(c, it, 0, amo.Fetch, int64(0))
		fetch("int64 set/add/sub", v, err, int64(12))
		do("int64 min", core.AtomicDo(c, it, 0, amo.Min, int64(-7)))
		do("int64 max", core.AtomicDo(c, it, 0, amo.Max, int64(-9)))
		v, err = core.AtomicFetch(c, it, 0, amo.Fetch, int64(0))
		fetch("int64 min/max", v, err, int64(-7))
		old, err := core.AtomicFetch(c, it, 0, amo.Swap, int64(100))
		fetch("int64 swap", old, err, int64(-7))
		old, err = core.CompareSwap(c, it, 0, int64(1), int64(2))
		fetch("int64 cas fail", old, err, int64(100))
		old, err = core.CompareSwap(c, it, 0, int64(100), int64(2))
		fetch("int64 cas ok", old, err, int64(100))
		v, err = core.AtomicFetch(c, it, 0, amo.Fetch, int64(0))
		fetch("int64 after cas", v, err, int64(2))
		// uint32 bitwise
		do("uint32 set", core.AtomicDo(c, it, 8, amo.Set, uint32(0b1100)))
		do("uint32 and", core.AtomicDo(c, it, 8, amo.And, uint32(0b1010)))
		do("uint32 or", core.AtomicDo(c, it, 8, amo.Or, uint32(0b0001)))
		o32, err := core.AtomicFetch(c, it, 8, amo.Xor, uint32(0b1111))
		fetch("uint32 and/or", o32, err, uint32(0b1001))
		u, err := core.AtomicFetch(c, it, 8, amo.Fetch, uint32(0))
		fetch("uint32 xor", u, err, uint32(0b0110))
		// uint64 min is unsigned
		do("uint64 set", core.AtomicDo(c, it, 16, amo.Set, uint64(5)))
		do("uint64 min", core.AtomicDo(c, it, 16, amo.Min, uint64(math.MaxUint64)))
		u64, err := core.AtomicFetch(c, it, 16, amo.Fetch, uint64(0))
		fetch("uint64 unsigned min", u64, err, uint64(5))
		// int32 negative min
		do("int32 set", core.AtomicDo(c, it, 24, amo.Set, int32(3)))
		do("int32 min", core.AtomicDo(c, it, 24, amo.Min, int32(-3)))
		i32, err := core.AtomicFetch(c, it, 24, amo.Fetch, int32(0))
		fetch("int32 min", i32, err, int32(-3))
		// floats
		do("double set", core.AtomicDo(c, it, 32, amo.Set, 1.5))
		do("double add", core.AtomicDo(c, it, 32, amo.Add, 2.25))
		do("double max", core.AtomicDo(c, it, 32, amo.Max, -1.0))
		d, err := core.AtomicFetch(c, it, 32, amo.Fetch, 0.0)
		fetch("double add/max", d, err, 3.75)
		do("double min NaN", core.AtomicDo(c, it, 32, amo.Min, math.NaN()))
		d, err = core.AtomicFetch(c, it, 32, amo.Fetch, 0.0)
		fetch("double min NaN keeps value", d, err, 3.75)
		do("float set", core.AtomicDo(c, it, 40, amo.Set, float32(2)))
		do("float subtract", core.AtomicDo(c, it, 40, amo.Subtract, float32(0.5)))
		do("float min", core.AtomicDo(c, it, 40, amo.Min, float32(-8)))
		fl, err := core.AtomicFetch(c, it, 40, amo.Fetch, float32(0))
		fetch("float sub/min", fl, err, float32(-8))
		// int128 through the raw interface
		if _, err := c.Atomic(it, 48, amo.Int128, amo.Set, core.Value{Lo: 1, Hi: 2}, core.Value{}, false); err != nil {
			t.Fatal(err)
		}
		prev, err := c.Atomic(it, 48, amo.Int128, amo.CompareSwap, core.Value{Lo: 3, Hi: 4}, core.Value{Lo: 1, Hi: 2}, true)
		if err != nil || prev != (core.Value{Lo: 1, Hi: 2}) {
			t.Fatalf("int128 cas = %v, %v", prev, err)
		}
		cur, err := c.Atomic(it, 48, amo.Int128, amo.Fetch, core.Value{}, core.Value{}, true)
		fetch("int128 fetch", cur, err, core.Value{Lo: 3, Hi: 4})
		// Errors.
		_, err = c.Atomic(it, 4, amo.Int64, amo.Add, core.Value{}, core.Value{}, false)
		code(t, err, core.CodeInvalid) // misaligned
		_, err = c.Atomic(it, 256, amo.Int64, amo.Add, core.Value{}, core.Value{}, false)
		code(t, err, core.CodeOutOfRange)
		_, err = c.Atomic(it, 0, amo.Float64, amo.And, core.Value{}, core.Value{}, false)
		code(t, err, core.CodeInvalid)
		_, err = c.Atomic(it, 48, amo.Int128, amo.Add, core.Value{}, core.Value{}, false)
		code(t, err, core.CodeInvalid)
	})
}

func TestConcurrentFetchAdd(t *testing.T) {
	forEachMode(t, func(t *testing.T, env *testEnv) {
		f := env.open()
		r := mustV(f.CreateRegion("cc", 1<<16, 0o600, core.RegionAttr{}))(t, "create region")
		it := mustV(r.Allocate("ctr", 8, 0o600))(t, "allocate")
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
				defer func() {
					if err := ctx.Close(); err != nil {
						t.Errorf("close context: %v", err)
					}
				}()
				for i := 0; i < n; i++ {
					if _, err := core.AtomicFetch(ctx, it, 0, amo.Add, int64(1)); err != nil {
						t.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
		v := mustV(core.AtomicFetch(f.Default(), it, 0, amo.Fetch, int64(0)))(t, "fetch the total")
		if v != workers*n {
			t.Fatalf("total %d, want %d", v, workers*n)
		}
	})
}

func TestContextsAndCopy(t *testing.T) {
	forEachMode(t, func(t *testing.T, env *testEnv) {
		f := env.open()
		r := mustV(f.CreateRegion("ctx", 4<<20, 0o600, core.RegionAttr{}))(t, "create region")
		a := mustV(r.Allocate("a", 1<<20, 0o600))(t, "allocate a")
		b := mustV(r.Allocate("b", 1<<20, 0o600))(t, "allocate b")
		c1 := mustV(f.OpenContext())(t, "open context 1")
		c2 := mustV(f.OpenContext())(t, "open context 2")
		data := bytes.Repeat([]byte{7}, 1<<20)
		must(t, "put nb", c1.PutNB(data, a, 0))
		// The put is complete at c1's quiet, not before: a copy on another
		// context may not see it earlier (over TCP it does not).
		must(t, "quiet", c1.Quiet())
		w := mustV(c2.Copy(a, 0, b, 0, 1<<20))(t, "copy")
		must(t, "wait for the copy", w.Wait())
		code(t, w.Wait(), core.CodeInvalid)
		got := make([]byte, 1<<20)
		must(t, "get", c2.Get(got, b, 0))
		if !bytes.Equal(got, data) {
			t.Fatal("copy mismatch")
		}
		_, err := c1.Copy(a, 1, b, 0, 1<<20)
		code(t, err, core.CodeOutOfRange)
		if c1.Progress() != 0 {
			t.Fatal("progress after quiet")
		}
		must(t, "close context 1", c1.Close())
		code(t, c1.Put(data[:1], a, 0), core.CodeInvalid)
		code(t, f.Default().Close(), core.CodeInvalid)
	})
}

// The bytes of a mapped item are the item's: puts show in the mapping and
// stores through it in gets. Over TCP nothing is mapped here.
func TestMapSeesPuts(t *testing.T) {
	forEachMode(t, func(t *testing.T, env *testEnv) {
		env.otherUser(uint32(os.Getuid())+1, uint32(os.Getgid()))
		f := env.open()
		r := mustV(f.CreateRegion("map", 1<<16, 0o600, core.RegionAttr{PermLevel: core.PermDataItem}))(t, "create region")
		it := mustV(r.Allocate("m", 5000, 0o600))(t, "allocate")
		if !env.local() {
			_, err := it.Map()
			code(t, err, core.CodeUnimplemented)
			return
		}
		m := mustV(it.Map())(t, "map")
		must(t, "put", f.Default().Put([]byte("via put"), it, 4000))
		if string(m[4000:4007]) != "via put" {
			t.Fatalf("mapping does not see put: %q", m[4000:4007])
		}
		copy(m[0:], "via map")
		got := make([]byte, 7)
		must(t, "get", f.Default().Get(got, it, 0))
		if string(got) != "via map" {
			t.Fatalf("get does not see mapped store: %q", got)
		}
		must(t, "unmap", it.Unmap(ptr(m)))
		code(t, it.Unmap(ptr(m)), core.CodeInvalid)
		// A write-only item is not mapped for a user the mode binds (a group
		// member here); its owner, bound by no mode bits, maps it read-write.
		own := mustV(r.Allocate("wo", 64, 0o220))(t, "allocate wo")
		me, mygid := f.Identity()
		wo := mustV(env.as(f, me+1, mygid).Lookup("wo", "map"))(t, "member's lookup of wo")
		_, err := wo.Map()
		code(t, err, core.CodeNoPerm)
		om, err := own.Map()
		if err != nil {
			t.Fatalf("the owner maps its write-only item: %v", err)
		}
		copy(om, "owner")
		if err := f.Default().Get(got[:5], own, 0); err != nil || string(got[:5]) != "owner" {
			t.Fatalf("the owner's store through its mapping: %q %v", got[:5], err)
		}
	})
}

func TestBackupRestore(t *testing.T) {
	forEachMode(t, func(t *testing.T, env *testEnv) {
		f := env.open()
		r := mustV(f.CreateRegion("bk", 1<<16, 0o600, core.RegionAttr{}))(t, "create region")
		it := mustV(r.Allocate("src", 1000, 0o600))(t, "allocate src")
		must(t, "put", f.Default().Put(bytes.Repeat([]byte("ab"), 500), it, 0))
		w := mustV(f.Backup(it, "snap1"))(t, "backup")
		must(t, "wait for the backup", w.Wait())
		_, err := f.Backup(it, "snap1")
		code(t, err, core.CodeExists)
		list := mustV(f.ListBackups("snap"))(t, "list backups")
		if !strings.HasPrefix(list, "snap1 1000 ") {
			t.Fatalf("list = %q", list)
		}
		dst := mustV(r.Allocate("dst", 1000, 0o600))(t, "allocate dst")
		w = mustV(f.Restore("snap1", dst))(t, "restore")
		must(t, "wait for the restore", w.Wait())
		got := make([]byte, 1000)
		must(t, "get", f.Default().Get(got, dst, 0))
		if !bytes.Equal(got, bytes.Repeat([]byte("ab"), 500)) {
			t.Fatal("restore mismatch")
		}
		w, nw, err := f.RestoreNew("snap1", r, "fresh", 0o600)
		must(t, "restore into a new item", err)
		must(t, "wait for the restore into a new item", w.Wait())
		must(t, "get", f.Default().Get(got, nw, 0))
		if !bytes.Equal(got, bytes.Repeat([]byte("ab"), 500)) {
			t.Fatal("restore-new mismatch")
		}
		small := mustV(r.Allocate("small", 10, 0o600))(t, "allocate small")
		_, err = f.Restore("snap1", small)
		code(t, err, core.CodeOutOfRange)
		_, err = f.Restore("missing", dst)
		code(t, err, core.CodeBackupNotFound)
		w = mustV(f.DeleteBackup("snap1"))(t, "delete backup")
		must(t, "wait for the deletion", w.Wait())
		_, err = f.DeleteBackup("snap1")
		code(t, err, core.CodeBackupNotFound)
		_, err = f.Backup(it, "../escape")
		code(t, err, core.CodeInvalid)
	})
}

func TestOptionsAndLifecycle(t *testing.T) {
	forEachMode(t, func(t *testing.T, env *testEnv) {
		o := env.options()
		o.Settings = map[string]string{"RUNTIME": "bogus"}
		_, err := env.initialize(o)
		code(t, err, core.CodeInvalid)
		o.Settings = map[string]string{"OPENFAM_MODEL": "memory_server"}
		f := mustV(env.initialize(o))(t, "Initialize")
		if v := mustV(f.Option("VERSION"))(t, "option VERSION"); v != core.APIVersion {
			t.Fatalf("VERSION = %v", v)
		}
		if v := mustV(f.Option("PE_COUNT"))(t, "option PE_COUNT"); v != 1 {
			t.Fatalf("PE_COUNT = %v", v)
		}
		if v := mustV(f.Option("OPENFAM_MODEL"))(t, "option OPENFAM_MODEL"); v != "memory_server" {
			t.Fatalf("OPENFAM_MODEL = %v", v)
		}
		_, err = f.Option("NOPE")
		code(t, err, core.CodeInvalid)
		if len(core.OptionNames()) != 17 {
			t.Fatal("option list length")
		}
		must(t, "barrier", f.Barrier())
		must(t, "finalize", f.Finalize())
		_, err = f.CreateRegion("late", 4096, 0o600, core.RegionAttr{})
		code(t, err, core.CodeInvalid)
	})
}

// OPENFAM_MODEL names the model in use: memory_server for a program
// served by famd (OpenFAM programs run their memory-server-only paths
// on it), shared_memory for the embedded default.
func TestModelOptionFollowsTheServer(t *testing.T) {
	forEachMode(t, func(t *testing.T, env *testEnv) {
		f := env.open()
		want := "shared_memory"
		if env.mode.famd {
			want = "memory_server"
		}
		if v, err := f.Option("OPENFAM_MODEL"); err != nil || v != want {
			t.Fatalf("OPENFAM_MODEL = %v (%v), want %s", v, err, want)
		}
	})
}

func TestPEConfigFile(t *testing.T) {
	forEachMode(t, func(t *testing.T, env *testEnv) {
		// famd runs in this process: start it (env.options) before
		// OPENFAM_ROOT is set, so that only the program reads the file.
		o := env.options()
		root := t.TempDir()
		t.Setenv("OPENFAM_ROOT", root)
		_, err := env.initialize(o)
		code(t, err, core.CodeInvalid) // OPENFAM_ROOT set, file missing
		must(t, "mkdir config", os.MkdirAll(root+"/config", 0o755))
		must(t, "write the PE config", os.WriteFile(root+"/config/fam_pe_config.yaml", []byte("# PE config\nFamThreadModel: single\nopenfam_model: memory_server\nruntime: NONE\nfam_client_interface_service_address: 10.0.0.5:8880\nlist:\n  - nested\n"), 0o644))
		o.Settings = map[string]string{"RUNTIME": "PMIX"} // Fam_Options win over the file
		f := mustV(env.initialize(o))(t, "Initialize")
		for name, want := range map[string]string{"FAM_THREAD_MODEL": "FAM_THREAD_SERIALIZE", "OPENFAM_MODEL": "memory_server",
			"RUNTIME": "PMIX", "CIS_SERVER": "10.0.0.5", "GRPC_PORT": "8880"} {
			if v, err := f.Option(name); err != nil || v != want {
				t.Errorf("%s = %v (%v), want %s", name, v, err, want)
			}
		}
	})
}

func TestDeallocateRule(t *testing.T) {
	forEachMode(t, func(t *testing.T, env *testEnv) {
		env.otherUser(5000, 5000)
		f := env.open()
		r := mustV(f.CreateRegion("dr", 1<<16, 0o644, core.RegionAttr{PermLevel: core.PermDataItem}))(t, "create region")
		ro := mustV(r.Allocate("ro", 64, 0o444))(t, "allocate ro")
		if err := ro.Deallocate(); err != nil {
			t.Fatalf("owner may free a read-only item: %v", err)
		}
		mustV(r.Allocate("shared", 64, 0o666))(t, "allocate shared")
		must(t, "finalize", f.Finalize())
		f2 := env.openAs(5000, 5000)
		it := mustV(f2.Lookup("shared", "dr"))(t, "another user's lookup")
		code(t, it.Deallocate(), core.CodeNoPerm) // region is 0644: others may not free
	})
}

func TestIdentityView(t *testing.T) {
	forEachMode(t, func(t *testing.T, env *testEnv) {
		env.otherUser(7000, 7000)
		f := env.open()
		r := mustV(f.CreateRegion("view", 1<<16, 0o640, core.RegionAttr{}))(t, "create region")
		mustV(r.Allocate("x", 64, 0o600))(t, "allocate x")
		other := env.as(f, 7000, 7000)
		// Fam.As keeps the identity it was given; a famd client is
		// whoever famd says (its TCP identity), which Identity does not
		// report (it answers this process's uid).
		if uid, gid := other.Identity(); !env.mode.famd && (uid != 7000 || gid != 7000) {
			t.Fatal("identity not kept")
		}
		_, err := other.Lookup("x", "view")
		code(t, err, core.CodeNoPerm)
		_, mygid := f.Identity()
		grp := env.as(f, 7001, mygid)
		it := mustV(grp.Lookup("x", "view"))(t, "group member's lookup") // group class of region mode 0640: read only
		code(t, grp.Default().Put([]byte{1}, it, 0), core.CodeNoPerm)
		must(t, "group member's get", grp.Default().Get(make([]byte, 1), it, 0))
	})
}

// A region's usage is a running count (servers report it without listing
// the items): right after allocations and deallocations, and after the
// store is opened again.
func TestRegionUsedIsKept(t *testing.T) {
	forEachMode(t, func(t *testing.T, env *testEnv) {
		f := env.open()
		r := mustV(f.CreateRegion("used", 1<<20, 0o600, core.RegionAttr{}))(t, "create region")
		a := mustV(r.Allocate("a", 1000, 0o600))(t, "allocate a")
		mustV(r.Allocate("b", 24, 0o600))(t, "allocate b")
		if env.mode.famd {
			// famd keeps the count (its own embedded instance, the
			// embedded mode here) and reports it to famctl; a famd client's
			// Region.Used is CodeUnimplemented, as documented.
			_, err := r.Used()
			code(t, err, core.CodeUnimplemented)
			t.Skip("Region.Used is not served to famd clients (CodeUnimplemented by design); famd's count is the embedded mode's")
		}
		if u, err := r.Used(); err != nil || u != 1024 {
			t.Fatalf("used %d (%v), want 1024", u, err)
		}
		must(t, "deallocate a", a.Deallocate())
		if u := mustV(r.Used())(t, "used"); u != 24 {
			t.Fatalf("used %d after freeing 1000 bytes, want 24", u)
		}
		must(t, "finalize", f.Finalize())
		env.restart()
		f = env.open()
		r = mustV(f.LookupRegion("used"))(t, "lookup region")
		if u := mustV(r.Used())(t, "used after reopening"); u != 24 {
			t.Fatalf("used %d after reopening, want 24", u)
		}
	})
}

// localBase is where it is mapped in this process, or nil.
func localBase(it *core.Item) unsafe.Pointer {
	base, _, _, ok := it.Local()
	if !ok {
		return nil
	}
	return base
}

// TestScriptedWalk walks the API once end to end: creation, a second
// handle, data and atomics (executed at the server when nothing is mapped
// here), global descriptors, copy, permission changes reaching open
// handles, stat, backup, deallocation and destruction. It was the famd
// client's test (on the Unix socket and over TCP); it holds embedded too.
func TestScriptedWalk(t *testing.T) {
	forEachMode(t, func(t *testing.T, env *testEnv) {
		f := env.open()
		c := f.Default()
		r := mustV(f.CreateRegion("remote", 1<<20, 0o600, core.RegionAttr{PermLevel: core.PermDataItem}))(t, "create region")
		_, err := f.CreateRegion("remote", 1<<20, 0o600, core.RegionAttr{})
		code(t, err, core.CodeExists)
		it := mustV(r.Allocate("item", 4096, 0o600))(t, "allocate")
		if _, _, _, ok := it.Local(); ok != env.local() {
			t.Fatalf("Local() ok = %v, want %v", ok, env.local())
		}
		msg := []byte("across the fabric")
		must(t, "put", c.Put(msg, it, 100))
		it2 := mustV(f.Lookup("item", "remote"))(t, "lookup")
		got := make([]byte, len(msg))
		if err := c.Get(got, it2, 100); err != nil || !bytes.Equal(got, msg) {
			t.Fatalf("get = %q, %v", got, err)
		}
		code(t, c.Get(make([]byte, 8), it, 4090), core.CodeOutOfRange)
		// Gather and atomics execute at the server when not mapped here.
		idx := []uint64{0, 2, 4}
		for _, i := range idx {
			if _, err := c.Atomic(it, i*8, amo.Int64, amo.Set, core.Value{Lo: i + 1}, core.Value{}, false); err != nil {
				t.Fatalf("atomic set of element %d: %v", i, err)
			}
		}
		dst := make([]byte, 24)
		must(t, "indexed gather", c.GatherIndexed(dst, it, idx, 8, false))
		if dst[0] != 1 || dst[8] != 3 || dst[16] != 5 {
			t.Fatalf("gather = %v", dst)
		}
		old, err := core.AtomicFetch(c, it, 0, amo.Add, int64(41))
		if err != nil || old != 1 {
			t.Fatalf("fetch_add = %d, %v", old, err)
		}
		if v := mustV(core.AtomicFetch(c, it2, 0, amo.Fetch, int64(0)))(t, "fetch via second handle"); v != 42 {
			t.Fatalf("fetch via second handle = %d", v)
		}
		if _, err := c.Atomic(it, 16, amo.Int128, amo.CompareSwap, core.Value{Lo: 9, Hi: 9}, core.Value{Lo: 3}, true); err != nil {
			t.Fatalf("int128 compare-swap: %v", err)
		}
		// Global descriptors resolve (through famd when it serves).
		g := mustV(it.Global())(t, "global")
		it3 := mustV(f.ItemFromGlobal(g))(t, "item from global")
		if err := c.Get(got, it3, 100); err != nil || !bytes.Equal(got, msg) {
			t.Fatalf("get via global = %q, %v", got, err)
		}
		// Copy (server-side with famd).
		dst2 := mustV(r.Allocate("", 4096, 0o600))(t, "allocate the copy's destination")
		w := mustV(c.Copy(it, 0, dst2, 0, 4096))(t, "copy")
		must(t, "wait for the copy", w.Wait())
		must(t, "get the copy", c.Get(got, dst2, 100))
		if !bytes.Equal(got, msg) {
			t.Fatalf("copy = %q", got)
		}
		// Permission changes reach open handles.
		must(t, "chmod", it.ChangePermissions(0o400))
		st, err := r.Stat()
		if err != nil || st.Name != "remote" || st.Size != 1<<20 {
			t.Fatalf("region stat %+v, %v", st, err)
		}
		ist, err := it2.Stat()
		if err != nil || ist.Mode != 0o400 || ist.Name != "item" {
			t.Fatalf("item stat %+v, %v", ist, err)
		}
		// Backups (at the server with famd).
		bw := mustV(f.Backup(it, "bk1"))(t, "backup")
		must(t, "wait for the backup", bw.Wait())
		if list := mustV(f.ListBackups("bk"))(t, "list backups"); len(list) == 0 {
			t.Fatal("backup not listed")
		}
		must(t, "deallocate", it.Deallocate())
		code(t, c.Get(got, it2, 0), core.CodeInvalid)
		must(t, "destroy", r.Destroy())
		_, err = f.LookupRegion("remote")
		code(t, err, core.CodeNotFound)
	})
}

// Many non-blocking puts and a get in flight at once complete at the
// quiet, in order; an out-of-range one is refused at once.
func TestNonBlockingPipelined(t *testing.T) {
	forEachMode(t, func(t *testing.T, env *testEnv) {
		f := env.open()
		r := mustV(f.CreateRegion("nb", 1<<20, 0o600, core.RegionAttr{}))(t, "create region")
		it := mustV(r.Allocate("x", 64*4096, 0o600))(t, "allocate")
		ctx := mustV(f.OpenContext())(t, "open context")
		bufs := make([][]byte, 64)
		for i := range bufs {
			bufs[i] = bytes.Repeat([]byte{byte(i + 1)}, 4096)
			if err := ctx.PutNB(bufs[i], it, uint64(i)*4096); err != nil {
				t.Fatalf("put nb %d: %v", i, err)
			}
		}
		must(t, "quiet", ctx.Quiet())
		if ctx.Progress() != 0 {
			t.Fatal("progress after quiet")
		}
		got := make([]byte, 64*4096)
		must(t, "get nb", ctx.GetNB(got, it, 0))
		must(t, "quiet", ctx.Quiet())
		for i := range bufs {
			if !bytes.Equal(got[i*4096:(i+1)*4096], bufs[i]) {
				t.Fatalf("block %d wrong", i)
			}
		}
		// An out-of-range non-blocking put is refused at once, before the wire.
		code(t, ctx.PutNB(bufs[0], it, 64*4096), core.CodeOutOfRange)
	})
}

// A program that changes an item's permissions and then deallocates it
// must succeed every time. Through famd, famd's revocation of the old key
// reaches this program's session stream while it already uses the key its
// own chmod renewed, and renewing once more would withdraw that key under
// the deallocation ("unknown or revoked data item key", 100 of 100 tries of
// an OpenFAM test program before).
func TestChmodThenDeallocate(t *testing.T) {
	forEachMode(t, func(t *testing.T, env *testEnv) {
		f := env.open()
		r := mustV(f.CreateRegion("chmod-dealloc", 1<<20, 0o600, core.RegionAttr{PermLevel: core.PermDataItem}))(t, "create region")
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
	})
}

// An address fam_map returned keeps showing the item after the program's
// own permission change moved its bytes to another heap file (through
// famd with a fresh descriptor). Over TCP nothing is mapped here.
func TestMapFollowsPermissionChange(t *testing.T) {
	forEachMode(t, func(t *testing.T, env *testEnv) {
		if !env.local() {
			t.Skip("fam_map needs the memory on this host; over TCP nothing is mapped (TestMapSeesPuts checks the refusal)")
		}
		f := env.open()
		r := mustV(f.CreateRegion("rmapped", 1<<20, 0o700, core.RegionAttr{PermLevel: core.PermDataItem}))(t, "create region")
		it := mustV(r.Allocate("m", 100, 0o600))(t, "allocate")
		m := mustV(it.Map())(t, "map")
		copy(m, "through the map")
		must(t, "chmod", it.ChangePermissions(0o640))
		if string(m[:15]) != "through the map" {
			t.Fatalf("the mapping shows %q after chmod", m[:15])
		}
		copy(m[20:], "after")
		got := make([]byte, 5)
		if err := f.Default().Get(got, it, 20); err != nil || string(got) != "after" {
			t.Fatalf("a write through the map after chmod reads back %q %v", got, err)
		}
	})
}
