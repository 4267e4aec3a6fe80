package core

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"go.uber.org/mock/gomock"

	"github.com/gofam/openfam/core/internal/mocks"
	"github.com/gofam/openfam/core/metadata"
)

// errDiskFull is the failure injected into the metadata store.
var errDiskFull = errors.New("injected: journal append: no space left on device")

// faultyCatalog puts a gomock double in front of an embedded instance's
// real metadata store. Every call goes through to the store except when
// failPut says the n-th PutItem (counted from 1) fails, or failDelete is
// set; the record of the item whose PutItem failed is kept in lostPut.
type faultyCatalog struct {
	store      Catalog
	puts       int
	failPut    func(n int) bool
	failDelete bool
	lostPut    *metadata.Item
}

func newFaultyCatalog(t *testing.T, f *Fam) *faultyCatalog {
	t.Helper()
	fc := &faultyCatalog{store: localOf(f).store, failPut: func(int) bool { return false }}
	st := fc.store
	m := mocks.NewMockCatalog(gomock.NewController(t))
	x := gomock.Any()
	m.EXPECT().CreateRegion(x).DoAndReturn(st.CreateRegion).AnyTimes()
	m.EXPECT().UpdateRegion(x).DoAndReturn(st.UpdateRegion).AnyTimes()
	m.EXPECT().DeleteRegion(x).DoAndReturn(st.DeleteRegion).AnyTimes()
	m.EXPECT().RegionByID(x).DoAndReturn(st.RegionByID).AnyTimes()
	m.EXPECT().RegionByName(x).DoAndReturn(st.RegionByName).AnyTimes()
	m.EXPECT().Regions().DoAndReturn(st.Regions).AnyTimes()
	m.EXPECT().UpdateItem(x).DoAndReturn(st.UpdateItem).AnyTimes()
	m.EXPECT().ItemAt(x, x).DoAndReturn(st.ItemAt).AnyTimes()
	m.EXPECT().ItemByName(x, x).DoAndReturn(st.ItemByName).AnyTimes()
	m.EXPECT().Items(x).DoAndReturn(st.Items).AnyTimes()
	m.EXPECT().Close().DoAndReturn(st.Close).AnyTimes()
	// The core calls the store with f.mu held, so these counters need no
	// lock of their own.
	m.EXPECT().PutItem(x).DoAndReturn(func(it metadata.Item) error {
		fc.puts++
		if fc.failPut(fc.puts) {
			fc.lostPut = &it
			return errDiskFull
		}
		return st.PutItem(it)
	}).AnyTimes()
	m.EXPECT().DeleteItem(x, x).DoAndReturn(func(region, off uint64) error {
		if fc.failDelete {
			return errDiskFull
		}
		return st.DeleteItem(region, off)
	}).AnyTimes()
	localOf(f).store = m
	return fc
}

func itemBytes(t *testing.T, it *Item, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if err := it.f.Default().Get(b, it, 0); err != nil {
		t.Fatalf("get: %v", err)
	}
	return b
}

func offsetOf(t *testing.T, it *Item) uint64 {
	t.Helper()
	g, err := it.Global()
	if err != nil {
		t.Fatal(err)
	}
	return g.Offset
}

// TestFaultCatalogNthRequest: the metadata store fails the third PutItem.
// The allocation reports CodeMetadata, records nothing, gives its block
// back to the allocator (the retry gets the very same offset) and leaves
// the neighbouring items' bytes alone.
func TestFaultCatalogNthRequest(t *testing.T) {
	const size = 4096
	f := open(t, testOpts(t))
	defer f.Finalize()
	fc := newFaultyCatalog(t, f)
	fc.failPut = func(n int) bool { return n == 3 }
	r, err := f.CreateRegion("faults", 1<<20, 0o600, RegionAttr{})
	if err != nil {
		t.Fatal(err)
	}
	a, err := r.Allocate("a", size, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	b, err := r.Allocate("b", size, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	pa, pb := fill(size, 3), fill(size, 5)
	if err := f.Default().Put(pa, a, 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Default().Put(pb, b, 0); err != nil {
		t.Fatal(err)
	}

	_, err = r.Allocate("c", size, 0o600)
	wantFault(t, err, CodeMetadata, "fam_allocate")
	if !strings.Contains(err.Error(), "no space left on device") {
		t.Errorf("allocate error %q hides the store's reason", err)
	}
	if fc.lostPut == nil {
		t.Fatal("the third PutItem was never made")
	}
	rg, err := r.Global()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fc.store.ItemAt(rg.RegionID, fc.lostPut.Offset); !errors.Is(err, metadata.ErrNotFound) {
		t.Fatalf("the store holds the failed item: %v", err)
	}
	_, err = f.Lookup("c", "faults")
	wantFault(t, err, CodeNotFound, "fam_lookup")
	if !bytes.Equal(itemBytes(t, a, size), pa) || !bytes.Equal(itemBytes(t, b, size), pb) {
		t.Fatal("a failed allocation changed a neighbouring item")
	}

	c, err := r.Allocate("c", size, 0o600)
	if err != nil {
		t.Fatalf("allocate after the store recovered: %v", err)
	}
	if got := offsetOf(t, c); got != fc.lostPut.Offset {
		t.Fatalf("retry got offset %d, the failed allocation had %d: the block leaked", got, fc.lostPut.Offset)
	}
	if !bytes.Equal(itemBytes(t, c, size), make([]byte, size)) {
		t.Fatal("the new item does not start zeroed")
	}
}

// TestFaultCatalogDeleteFails: the store refuses to delete an item record.
// Deallocate reports CodeMetadata and changes nothing: the handle, the name
// and the bytes survive, and the block stays allocated, so a new item
// cannot land on top of the one still in use. Once the store recovers the
// deallocation goes through.
func TestFaultCatalogDeleteFails(t *testing.T) {
	const size = 8192
	f := open(t, testOpts(t))
	defer f.Finalize()
	fc := newFaultyCatalog(t, f)
	r, err := f.CreateRegion("faults", 1<<20, 0o600, RegionAttr{})
	if err != nil {
		t.Fatal(err)
	}
	it, err := r.Allocate("keep", size, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	data := fill(size, 11)
	if err := f.Default().Put(data, it, 0); err != nil {
		t.Fatal(err)
	}

	fc.failDelete = true
	wantFault(t, it.Deallocate(), CodeMetadata, "fam_deallocate")
	if !bytes.Equal(itemBytes(t, it, size), data) {
		t.Fatal("a failed deallocate changed the item's bytes")
	}
	again, err := f.Lookup("keep", "faults")
	if err != nil {
		t.Fatalf("the item's name is gone after a failed deallocate: %v", err)
	}
	if offsetOf(t, again) != offsetOf(t, it) {
		t.Fatal("the name now leads to another item")
	}
	// The block must still be taken: the next item goes elsewhere, and
	// writing all of it leaves the first item intact.
	other, err := r.Allocate("other", size, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	lo, hi := offsetOf(t, it), offsetOf(t, it)+size
	if o := offsetOf(t, other); o < hi && o+size > lo {
		t.Fatalf("new item at %d overlaps the item at %d that failed to deallocate", o, lo)
	}
	if err := f.Default().Put(fill(size, 99), other, 0); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(itemBytes(t, it, size), data) {
		t.Fatal("writing the new item changed the old one")
	}

	fc.failDelete = false
	if err := it.Deallocate(); err != nil {
		t.Fatalf("deallocate after the store recovered: %v", err)
	}
	wantFault(t, f.Default().Get(make([]byte, 8), it, 0), CodeInvalid, "fam_get_blocking")
	_, err = f.Lookup("keep", "faults")
	wantFault(t, err, CodeNotFound, "fam_lookup")
}
