package metadata

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/gofam/openfam/internal/smaps"
)

// Sync leaves no page of the catalogue dirty (bbolt's file is mapped by
// the store, so smaps shows its page cache state), even under NoSync; and
// once Sync was called, a checkpoint flushes what it folds into bbolt
// before dropping the journal that held it.
func TestSyncMakesNoSyncStoreDurable(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "meta")
	s, err := Open(dir, Options{NoSync: true, CheckpointInterval: time.Hour, CheckpointBytes: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	dirty := func() int {
		n, err := smaps.DirtyKB(0, dir)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	r, err := s.CreateRegion(Region{Name: "p", Size: 1 << 20, MemoryType: 2})
	if err != nil {
		t.Fatal(err)
	}
	if dirty() == 0 {
		t.Fatal("a NoSync region creation left nothing dirty: the check could not fail")
	}
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	if n := dirty(); n != 0 {
		t.Fatalf("%d kB of the catalogue dirty after Sync", n)
	}
	if err := s.PutItem(Item{RegionID: r.ID, Offset: 0, Size: 64, Name: "x"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	if n := dirty(); n != 0 {
		t.Fatalf("%d kB of the catalogue dirty after a checkpoint that follows a Sync", n)
	}
}

// Sync flushes the directory and bbolt's file only when they changed since
// the last Sync (an item change then costs one fdatasync, of the journal),
// and still flushes every change to them: a region created after a Sync is
// clean after the next one, as is a checkpoint's fold made before the
// first Sync.
func TestSyncFlushesOnlyWhatChanged(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "meta")
	s, err := Open(dir, Options{NoSync: true, CheckpointInterval: time.Hour, CheckpointBytes: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	dirty := func() int {
		n, err := smaps.DirtyKB(0, dir)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	r, err := s.CreateRegion(Region{Name: "p", Size: 1 << 20, MemoryType: 2})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.PutItem(Item{RegionID: r.ID, Offset: 0, Size: 64, Name: "x"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Checkpoint(); err != nil { // before any Sync: bbolt left dirty
		t.Fatal(err)
	}
	if dirty() == 0 {
		t.Fatal("a NoSync checkpoint left nothing dirty: the check could not fail")
	}
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	if n := dirty(); n != 0 {
		t.Fatalf("%d kB of the catalogue dirty after Sync", n)
	}
	dir0, db0 := s.dirSynced.Load(), s.dbSynced.Load()
	for i := uint64(1); i <= 3; i++ {
		if err := s.PutItem(Item{RegionID: r.ID, Offset: i * 64, Size: 64, Name: "y" + string(rune('0'+i))}); err != nil {
			t.Fatal(err)
		}
		if err := s.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	if s.dirSynced.Load() != dir0 || s.dbSynced.Load() != db0 {
		t.Errorf("item changes alone made Sync flush the directory or bbolt (generations %d/%d, were %d/%d)",
			s.dirSynced.Load(), s.dbSynced.Load(), dir0, db0)
	}
	if _, err := s.CreateRegion(Region{Name: "q", Size: 1 << 20, MemoryType: 2}); err != nil {
		t.Fatal(err)
	}
	if dirty() == 0 {
		t.Fatal("a NoSync region creation left nothing dirty: the check could not fail")
	}
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	if n := dirty(); n != 0 {
		t.Fatalf("%d kB of the catalogue dirty after a region creation and Sync", n)
	}
	if s.dbSynced.Load() == db0 {
		t.Error("Sync after a region creation did not flush bbolt")
	}
}
