package features

import (
	"fmt"
	"os"
	"strconv"

	"github.com/cucumber/godog"

	"github.com/gofam/openfam/core"
)

// ---- regions ----------------------------------------------------------------

func (w *world) createRegion(try, name, n, unit, mode, mem, level, inter string) error {
	size, m, err := parseSizeMode(n, unit, mode)
	if err != nil {
		return err
	}
	var attr *core.RegionAttr
	if mem != "" || level != "" || inter != "" {
		attr = &core.RegionAttr{}
		switch mem {
		case "volatile":
			attr.Memory = core.Volatile
		case "persistent":
			attr.Memory = core.Persistent
		}
		switch level {
		case "region":
			attr.PermLevel = core.PermRegion
		case "data item":
			attr.PermLevel = core.PermDataItem
		}
		switch inter {
		case "enabled":
			attr.Interleave = core.InterleaveEnable
		case "disabled":
			attr.Interleave = core.InterleaveDisable
		}
	}
	r, c := w.b.CreateRegion(name, size, m, attr)
	if c == 0 {
		w.regions[name] = r
	}
	return w.outcome(try, "fam_create_region", c)
}

func (w *world) lookupRegion(try, name, as string) error {
	r, c := w.b.LookupRegion(name)
	if as == "" {
		as = name
	}
	if c == 0 {
		w.regions[as] = r
	}
	return w.outcome(try, "fam_lookup_region", c)
}

func (w *world) regionOp(try, verb, name string) error {
	r, err := w.region(name)
	if err != nil {
		return err
	}
	if verb == "destroy" {
		return w.outcome(try, "fam_destroy_region", w.b.DestroyRegion(r))
	}
	return w.outcome(try, "fam_close_region", w.b.CloseRegion(r))
}

func (w *world) resizeRegion(try, name, n, unit string) error {
	r, err := w.region(name)
	if err != nil {
		return err
	}
	size, err := parseSize(n, unit)
	if err != nil {
		return err
	}
	return w.outcome(try, "fam_resize_region", w.b.ResizeRegion(r, size))
}

func (w *world) chmodRegion(try, name, mode string) error {
	r, err := w.region(name)
	if err != nil {
		return err
	}
	m, err := parseMode(mode)
	if err != nil {
		return err
	}
	return w.outcome(try, "fam_change_region_permissions", w.b.ChangeRegionPermissions(r, m))
}

// checkStat compares a stat with a two-column table of field and value.
func checkStat(s Stat, t *godog.Table) error {
	for i, row := range t.Rows {
		field, want := row.Cells[0].Value, row.Cells[1].Value
		if i == 0 && field == "field" {
			continue // the header row
		}
		var got string
		switch field {
		case "size":
			got = strconv.FormatUint(s.Size, 10)
		case "mode":
			got = fmt.Sprintf("%04o", s.Mode)
		case "name":
			got = s.Name
		case "uid":
			got = strconv.FormatUint(uint64(s.UID), 10)
		case "gid":
			got = strconv.FormatUint(uint64(s.GID), 10)
		case "owner":
			got = "someone else"
			if s.UID == uint32(os.Getuid()) && s.GID == uint32(os.Getgid()) {
				got = "me"
			}
		case "memory":
			got = map[core.MemoryType]string{core.Volatile: "volatile", core.Persistent: "persistent"}[s.Attr.Memory]
		case "permission level":
			got = map[core.PermLevel]string{core.PermRegion: "region", core.PermDataItem: "data item"}[s.Attr.PermLevel]
		case "interleave":
			got = map[core.Interleave]string{core.InterleaveEnable: "enabled", core.InterleaveDisable: "disabled"}[s.Attr.Interleave]
		case "memory servers":
			got = strconv.FormatUint(s.NumServers, 10)
		case "interleave size":
			got = strconv.FormatUint(s.InterleaveSize, 10)
		default:
			return fmt.Errorf("unknown stat field %q", field)
		}
		if got != want {
			return fmt.Errorf("stat %s is %q, want %q (stat %+v)", field, got, want, s)
		}
	}
	return nil
}

func (w *world) regionHas(name string, t *godog.Table) error {
	r, err := w.region(name)
	if err != nil {
		return err
	}
	s, c := w.b.StatRegion(r)
	if c != 0 {
		return fmt.Errorf("fam_stat_region: code %d: %s", c, w.b.LastError())
	}
	return checkStat(s, t)
}

func (w *world) statRegion(try, name string) error {
	r, err := w.region(name)
	if err != nil {
		return err
	}
	_, c := w.b.StatRegion(r)
	return w.outcome(try, "fam_stat_region", c)
}

func (w *world) noteRegionGlobal(name string) error {
	r, err := w.region(name)
	if err != nil {
		return err
	}
	g, c := w.b.RegionGlobal(r)
	if c != 0 {
		return fmt.Errorf("fam_region_global: code %d: %s", c, w.b.LastError())
	}
	if g.Offset != core.RegionOffset {
		return fmt.Errorf("region %q's global descriptor has offset %d, want UINT64_MAX", name, g.Offset)
	}
	w.globals["region "+name] = g
	return nil
}

func (w *world) regionFromGlobal(try, as, name string) error {
	g, ok := w.globals["region "+name]
	if !ok {
		return fmt.Errorf("no global descriptor noted for region %q", name)
	}
	r, c := w.b.RegionFromGlobal(g)
	if c == 0 {
		w.regions[as] = r
	}
	return w.outcome(try, "fam_region_from_global", c)
}

// registerRegions registers the steps on regions.
func (w *world) registerRegions(sc *godog.ScenarioContext) {
	sc.Step(`^`+try+`create region `+q+` of `+size+` with mode `+mode+`(?: and (volatile|persistent) memory)?(?: and (region|data item)-level permissions)?(?: and interleaving (enabled|disabled))?$`, w.createRegion)
	sc.Step(`^`+try+`look up region `+q+`(?: as `+q+`)?$`, w.lookupRegion)
	sc.Step(`^`+try+`(destroy|close) region `+q+`$`, w.regionOp)
	sc.Step(`^`+try+`resize region `+q+` to `+size+`$`, w.resizeRegion)
	sc.Step(`^`+try+`change the permissions of region `+q+` to `+mode+`$`, w.chmodRegion)
	sc.Step(`^region `+q+` has$`, w.regionHas)
	sc.Step(`^`+try+`stat region `+q+`$`, w.statRegion)
	sc.Step(`^I note the global descriptor of region `+q+`$`, w.noteRegionGlobal)
	sc.Step(`^`+try+`open region `+q+` from the global descriptor of region `+q+`$`, w.regionFromGlobal)
}
