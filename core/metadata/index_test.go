package metadata

import (
	"errors"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"strconv"
	"testing"
	"unsafe"

	bolt "go.etcd.io/bbolt"
)

// TestItemTableMatchesMaps drives an itemTable and the two maps it replaced
// (offset -> item, name -> offset) with the same random adds, renames and
// removals, and checks after each that both find the same items by offset
// and by name, misses included. Few distinct offsets and names make the
// probe runs collide, wrap around the index's end and shift back on
// deletion; the growing phase crosses several doublings.
func TestItemTableMatchesMaps(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	tb := newItemTable()
	byOff := map[uint64]Item{}
	names := map[string]uint64{}
	check := func(step int) {
		t.Helper()
		if tb.len() != len(byOff) {
			t.Fatalf("step %d: %d items, want %d", step, tb.len(), len(byOff))
		}
		for off, want := range byOff {
			if got, ok := tb.at(off); !ok || got != want {
				t.Fatalf("step %d: at(%d) = %v, want %v", step, off, got, want)
			}
		}
		for name, off := range names {
			if got, ok := tb.named(name, tb.nameHash(name)); !ok || got != byOff[off] {
				t.Fatalf("step %d: named(%q) = %v, want offset %d", step, name, got, off)
			}
		}
		n := 0
		tb.each(func(it Item) {
			n++
			if byOff[it.Offset] != it {
				t.Fatalf("step %d: each gave %v", step, it)
			}
		})
		if n != len(byOff) {
			t.Fatalf("step %d: each gave %d items, want %d", step, n, len(byOff))
		}
	}
	const offsets = 3000
	for step := range 60000 {
		off := uint64(rng.IntN(offsets)) * 64
		name := ""
		if rng.IntN(4) != 0 {
			k := rng.IntN(2 * offsets)
			name = "n" + strconv.Itoa(k)
			if k%3 == 0 {
				// Longer than a record's copy of a name: kept aside.
				name += "-a-name-longer-than-the-70-bytes-a-record-holds-so-kept-in-the-table's-map"
			}
		}
		// Grow to most offsets in use, then mostly delete.
		grow := step < 30000
		cur, exists := byOff[off]
		switch {
		case !exists && (grow || rng.IntN(3) == 0):
			if _, taken := names[name]; taken && name != "" {
				continue
			}
			it := Item{Offset: off, Name: name, Gen: uint64(step)}
			tb.add(it, tb.nameHash(name), true)
			byOff[off] = it
			if name != "" {
				names[name] = off
			}
		case exists && rng.IntN(4) == 0:
			if o, taken := names[name]; taken && name != "" && o != off {
				continue
			}
			it := cur
			it.Name, it.Mode = name, uint32(step)
			h := uint32(0)
			if name != "" {
				h = tb.nameHash(name)
			}
			tb.update(it, h)
			delete(names, cur.Name)
			if name != "" {
				names[name] = off
			}
			byOff[off] = it
		case exists:
			tb.remove(off)
			delete(byOff, off)
			delete(names, cur.Name)
		}
		_, found := tb.at(off + 1)
		if _, named := tb.named("absent", tb.nameHash("absent")); found || named {
			t.Fatalf("step %d: found an item that was never added", step)
		}
		if step%997 == 0 {
			check(step)
		}
	}
	check(-1)
	// Every long name still there is in the map, and no other.
	long := 0
	for name := range names {
		if len(name) > len(rec{}.name) {
			long++
		}
	}
	if len(tb.long) != long {
		t.Fatalf("%d names kept aside, want %d", len(tb.long), long)
	}
}

// TestRecordIsPointerFree: a record is 128 bytes (two cache lines, so that
// records stay aligned on line pairs) and holds no Go pointer, so the
// collector never scans the record chunks.
func TestRecordIsPointerFree(t *testing.T) {
	if n := unsafe.Sizeof(rec{}); n != 128 {
		t.Errorf("record is %d bytes, want 128", n)
	}
	rt := reflect.TypeFor[rec]()
	for i := range rt.NumField() {
		switch k := rt.Field(i).Type.Kind(); k {
		case reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Int64, reflect.Array:
		default:
			t.Errorf("record field %s is a %v, which may hold a pointer", rt.Field(i).Name, k)
		}
	}
}

// An item record in bbolt under a key other than its offset is corrupt:
// loading adds each record once by its key (no probe for a duplicate), so
// two records claiming one offset must fail Open instead of leaving two
// index entries for it.
func TestItemKeyOffsetMismatchFailsOpen(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, quiet)
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.CreateRegion(Region{Name: "r"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.PutItem(Item{RegionID: r.ID, Offset: 64, Size: 1, Name: "a"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := bolt.Open(filepath.Join(dir, dbFile), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		dup := Item{RegionID: r.ID, Offset: 64, Size: 1, Name: "b"}
		return tx.Bucket(bucketItems).Bucket(u64key(r.ID)).Put(u64key(128), appendItem(nil, &dup))
	})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir, quiet); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Open with two records at offset 64: %v, want ErrCorrupt", err)
	}
}
