package core

import (
	"testing"

	"github.com/gofam/openfam/core/metadata"
)

// hookCatalog runs after, when set, each time ItemAt has its answer.
type hookCatalog struct {
	Catalog
	after func()
}

func (h *hookCatalog) ItemAt(regionID, offset uint64) (metadata.Item, error) {
	rec, err := h.Catalog.ItemAt(regionID, offset)
	if fn := h.after; fn != nil {
		h.after = nil // once; the hook's own calls go straight through
		fn()
	}
	return rec, err
}

// TestStaleHandleNeverChangesNewItem (issue 11, embedded): a thread
// changing an item's permissions has read the item's record when another
// thread deallocates the item and allocates a new one at its offset. The
// change used to be written over the new item (its mode, and the old
// item's name and size); it must fail and leave the new item alone.
func TestStaleHandleNeverChangesNewItem(t *testing.T) {
	f := open(t, testOpts(t))
	defer f.Finalize()
	hc := &hookCatalog{Catalog: localOf(f).store}
	localOf(f).store = hc
	r, err := f.CreateRegion("stale", 1<<20, 0o600, RegionAttr{PermLevel: PermDataItem})
	if err != nil {
		t.Fatal(err)
	}
	x, err := r.Allocate("x", 64, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	other, err := f.Lookup("x", "stale")
	if err != nil {
		t.Fatal(err)
	}
	var y *Item
	hc.after = func() {
		if err := other.Deallocate(); err != nil {
			t.Errorf("deallocate through the second handle: %v", err)
		}
		if y, err = r.Allocate("y", 128, 0o600); err != nil {
			t.Errorf("allocate: %v", err)
		}
	}
	err = x.ChangePermissions(0o644)
	if y == nil {
		t.Fatal("the new item was not allocated")
	}
	if offsetOf(t, y) != x.g.Offset {
		t.Fatalf("the new item is at offset %d, not the freed %d", offsetOf(t, y), x.g.Offset)
	}
	if c := CodeOf(err); c != CodeNotFound && c != CodeInvalid {
		t.Fatalf("changing the permissions of a deallocated item: %v, want CodeNotFound or CodeInvalid", err)
	}
	st, err := y.Stat()
	if err != nil {
		t.Fatal(err)
	}
	if st.Name != "y" || st.Mode != 0o600 || st.Size != 128 {
		t.Fatalf("the new item became %q mode %#o size %d; want \"y\" mode 0600 size 128", st.Name, st.Mode, st.Size)
	}
	if err := y.Deallocate(); err != nil {
		t.Fatalf("deallocating the new item: %v", err)
	}
}
