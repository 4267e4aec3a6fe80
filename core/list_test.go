package core

import (
	"cmp"
	"slices"
	"testing"
)

// regionNames returns the names f.Regions lists, in its order.
func regionNames(t *testing.T, f *Fam) []string {
	t.Helper()
	rs, err := f.Regions()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range rs {
		names = append(names, r.Name)
	}
	return names
}

// TestRegionsListsWhatTheCallerMayOpen: the listing behind
// fam_list_regions shows a caller exactly the regions LookupRegion would
// open for it (the owner always, others by their class's r or w bits),
// with the region's size, mode and owner, by ascending id.
func TestRegionsListsWhatTheCallerMayOpen(t *testing.T) {
	f := open(t, testOpts(t))
	defer f.Finalize()
	uid, gid := f.Identity()
	for _, c := range []struct {
		name string
		mode uint32
	}{{"private", 0o700}, {"locked", 0o000}, {"group", 0o640}, {"world", 0o604}, {"wonly", 0o602}} {
		if _, err := f.CreateRegion(c.name, 1<<16, c.mode, RegionAttr{}); err != nil {
			t.Fatal(err)
		}
	}
	rs, err := f.Regions()
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 5 || rs[0].Name != "private" || rs[2].Mode != 0o640 || rs[2].UID != uid || rs[2].GID != gid ||
		rs[2].Size != 1<<16 || !slices.IsSortedFunc(rs, func(a, b RegionEntry) int { return cmp.Compare(a.ID, b.ID) }) {
		t.Fatalf("the owner lists %+v", rs)
	}
	// POSIX classes: a group member gets the group's bits only, so the
	// regions open to others but not to the group are not its to see.
	if got, want := regionNames(t, f.As(7000, gid)), []string{"group"}; !slices.Equal(got, want) {
		t.Fatalf("a group member lists %v, want %v", got, want)
	}
	stranger := f.As(7001, gid+1)
	if got, want := regionNames(t, stranger), []string{"world", "wonly"}; !slices.Equal(got, want) {
		t.Fatalf("a stranger lists %v, want %v", got, want)
	}
	// What is listed is what the stranger may open, and list items of.
	for _, n := range []string{"private", "locked", "group"} {
		_, err := stranger.LookupRegion(n)
		wantCode(t, err, CodeNoPerm)
	}
	r, err := stranger.LookupRegion("world")
	if err != nil {
		t.Fatal(err)
	}
	if items, err := r.Items(); err != nil || len(items) != 0 {
		t.Fatalf("items of an empty region: %v, %v", items, err)
	}
	priv, err := stranger.RegionFromGlobal(GlobalDesc{RegionID: rs[0].ID, Offset: RegionOffset})
	if err != nil {
		t.Fatal(err)
	}
	_, err = priv.Items()
	wantCode(t, err, CodeNoPerm)
}
