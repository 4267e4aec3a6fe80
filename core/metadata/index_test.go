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

// boltKeys returns, from the closed store in dir, how many item records
// region rid's bucket holds and how many tombstones bucketGone holds.
func boltKeys(t *testing.T, dir string, rid uint64) (items, tombs int) {
	t.Helper()
	db, err := bolt.Open(filepath.Join(dir, dbFile), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.View(func(tx *bolt.Tx) error {
		items = tx.Bucket(bucketItems).Bucket(u64key(rid)).Stats().KeyN
		tombs = tx.Bucket(bucketGone).Stats().KeyN
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return items, tombs
}

// TestDeletionTombstones: a checkpoint records a deletion of an item
// already in bbolt as a tombstone (the item's record stays in its region's
// bucket), which a reopened store honours; an item later allocated at the
// same offset is not taken by the old tombstone; an item put and deleted
// between two checkpoints leaves no tombstone; and once the tombstones
// reach minCompact a checkpoint applies them and empties bucketGone.
func TestDeletionTombstones(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, quiet)
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.CreateRegion(Region{Name: "r"})
	if err != nil {
		t.Fatal(err)
	}
	const n = minCompact + 200
	put := func(i int, name string) {
		t.Helper()
		if err := s.PutItem(Item{RegionID: r.ID, Offset: uint64(i) * 64, Size: 8, Name: name}); err != nil {
			t.Fatal(err)
		}
	}
	del := func(i int) {
		t.Helper()
		if err := s.DeleteItem(r.ID, uint64(i)*64); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		put(i, "a"+strconv.Itoa(i))
	}
	if err := s.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 100; i++ {
		del(i)
	}
	put(n, "short-lived") // never reaches bbolt
	del(n)
	if err := s.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	put(0, "again") // offset 0 reused after its tombstone
	if err := s.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if items, tombs := boltKeys(t, dir, r.ID); items != n || tombs != 100 {
		t.Fatalf("bbolt holds %d item records and %d tombstones, want %d and 100", items, tombs, n)
	}
	check := func(s *Store, gone func(i int) bool) {
		t.Helper()
		if got := len(s.Items(r.ID)); got != n-99 {
			t.Fatalf("%d items after reopening", got)
		}
		for i := range n {
			it, err := s.ItemAt(r.ID, uint64(i)*64)
			switch {
			case i == 0:
				if err != nil || it.Name != "again" {
					t.Fatalf("item at offset 0 = %+v, %v; want the one allocated after the tombstone", it, err)
				}
			case gone(i):
				if err == nil {
					t.Fatalf("deleted item %d is back: %+v", i, it)
				}
			case err != nil || it.Name != "a"+strconv.Itoa(i):
				t.Fatalf("item %d = %+v, %v", i, it, err)
			}
		}
		if _, err := s.ItemByName(r.ID, "a5"); err == nil {
			t.Fatal("a deleted item's name is still taken")
		}
	}
	s, err = Open(dir, quiet)
	if err != nil {
		t.Fatal(err)
	}
	check(s, func(i int) bool { return i < 100 })
	// Past minCompact tombstones a checkpoint applies them all.
	for i := 100; i < minCompact+100; i++ {
		del(i)
	}
	if err := s.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if items, tombs := boltKeys(t, dir, r.ID); items != n-minCompact-99 || tombs != 0 {
		t.Fatalf("after compaction bbolt holds %d item records and %d tombstones, want %d and 0", items, tombs, n-minCompact-99)
	}
	s, err = Open(dir, quiet)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	gone := func(i int) bool { return i < minCompact+100 }
	for i := range n {
		_, err := s.ItemAt(r.ID, uint64(i)*64)
		if (err == nil) == (gone(i) && i != 0) {
			t.Fatalf("item %d: %v after compaction", i, err)
		}
	}
}
