package features

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/cucumber/godog"
)

// Steps of fam_list_regions and fam_list_items (an extension of OpenFAM's
// API). On the C backend the listings are parsed strictly from the
// library's tab-separated lines (cBackend.listing), so these scenarios
// check the line format as well as the content.

// listedRegions runs fam_list_regions; a failure fails the step.
func (w *world) listedRegions() ([]Listed, error) {
	rs, c := w.b.ListRegions()
	if c != 0 {
		return nil, fmt.Errorf("fam_list_regions: code %d: %s", c, w.b.LastError())
	}
	return rs, nil
}

// ownerUID reads "me" or "user N".
func ownerUID(who string) (uint32, error) {
	if who == "me" {
		return uint32(os.Getuid()), nil
	}
	u, err := strconv.ParseUint(strings.TrimPrefix(who, "user "), 10, 32)
	return uint32(u), err
}

// regionListed: the listing holds exactly one line for name, with that
// size, mode and owner.
func (w *world) regionListed(name, n, unit, mode, who string) error {
	rs, err := w.listedRegions()
	if err != nil {
		return err
	}
	size, m, err := parseSizeMode(n, unit, mode)
	if err != nil {
		return err
	}
	uid, err := ownerUID(who)
	if err != nil {
		return err
	}
	var found []Listed
	for _, r := range rs {
		if r.Name == name {
			found = append(found, r)
		}
	}
	if len(found) != 1 {
		return fmt.Errorf("region %q is listed %d times in %+v", name, len(found), rs)
	}
	if r := found[0]; r.Size != size || r.Mode != m || r.UID != uid {
		return fmt.Errorf("region %q listed as %+v, want size %d, mode %#o, uid %d", name, r, size, m, uid)
	}
	return nil
}

func (w *world) regionNotListed(name string) error {
	rs, err := w.listedRegions()
	if err != nil {
		return err
	}
	for _, r := range rs {
		if r.Name == name {
			return fmt.Errorf("region %q is listed: %+v", name, r)
		}
	}
	return nil
}

// itemListingIs checks the item listing of region name against a table
// with columns item (the scenario's handle, whose global descriptor gives
// the offset the line must show), name (empty for an unnamed item), size,
// mode and, optionally, owner ("me" or "user N"; me when absent). The
// listing must hold exactly the table's items, by ascending offset.
func (w *world) itemListingIs(name string, t *godog.Table) error {
	r, err := w.region(name)
	if err != nil {
		return err
	}
	got, c := w.b.ListItems(r)
	if c != 0 {
		return fmt.Errorf("fam_list_items: code %d: %s", c, w.b.LastError())
	}
	rows := t.Rows[1:]
	if len(got) != len(rows) {
		return fmt.Errorf("region %q lists %d items, want %d: %+v", name, len(got), len(rows), got)
	}
	byOffset := map[uint64]Listed{}
	for i, e := range got {
		if i > 0 && e.Offset <= got[i-1].Offset {
			return fmt.Errorf("region %q's listing is not by ascending offset: %+v", name, got)
		}
		byOffset[e.Offset] = e
	}
	for _, row := range rows {
		cell := map[string]string{"owner": "me"}
		for j, h := range t.Rows[0].Cells {
			cell[h.Value] = row.Cells[j].Value
		}
		d, err := w.item(cell["item"])
		if err != nil {
			return err
		}
		g, c := w.b.DescGlobal(d)
		if c != 0 {
			return fmt.Errorf("fam_desc_global of %q: code %d", cell["item"], c)
		}
		m, err := parseMode(cell["mode"])
		if err != nil {
			return err
		}
		uid, err := ownerUID(cell["owner"])
		if err != nil {
			return err
		}
		e, ok := byOffset[g.Offset]
		if !ok || e.Name != cell["name"] || strconv.FormatUint(e.Size, 10) != cell["size"] || e.Mode != m || e.UID != uid {
			return fmt.Errorf("region %q lists %+v; want item %q at offset %d: name %q, size %s, mode %s, owner %s",
				name, got, cell["item"], g.Offset, cell["name"], cell["size"], cell["mode"], cell["owner"])
		}
	}
	return nil
}

func (w *world) listItems(try, name string) error {
	r, err := w.region(name)
	if err != nil {
		return err
	}
	_, c := w.b.ListItems(r)
	return w.outcome(try, "fam_list_items", c)
}

func (w *world) registerListing(sc *godog.ScenarioContext) {
	const (
		q    = `"([^"]*)"`
		size = `(\d+) ?(bytes?|KiB|MiB)`
		mode = `(0[0-7]+)`
		try  = `(?:I )?(try to |)`
	)
	sc.Step(`^the region listing shows `+q+` of `+size+` with mode `+mode+` owned by (me|user \d+)$`, w.regionListed)
	sc.Step(`^the region listing does not show `+q+`$`, w.regionNotListed)
	sc.Step(`^the item listing of region `+q+` is$`, w.itemListingIs)
	sc.Step(`^`+try+`list the items of region `+q+`$`, w.listItems)
}
