package features

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/cucumber/godog"

	"github.com/gofam/openfam/core"
)

// ---- items ------------------------------------------------------------------

func (w *world) allocate(try, unnamed, name, n, unit, mode, rname string) error {
	r, err := w.region(rname)
	if err != nil {
		return err
	}
	size, m, err := parseSizeMode(n, unit, mode)
	if err != nil {
		return err
	}
	d, c := w.b.Allocate(r, name, unnamed != "", size, m)
	if c == 0 {
		w.items[name] = d
	}
	return w.outcome(try, "fam_allocate", c)
}

func (w *world) lookup(try, name, region, as string) error {
	d, c := w.b.Lookup(name, region)
	if as == "" {
		as = name
	}
	if c == 0 {
		w.items[as] = d
	}
	return w.outcome(try, "fam_lookup", c)
}

func (w *world) itemOp(try, verb, name string) error {
	d, err := w.item(name)
	if err != nil {
		return err
	}
	if verb == "deallocate" {
		return w.outcome(try, "fam_deallocate", w.b.Deallocate(d))
	}
	return w.outcome(try, "fam_close", w.b.Close(d))
}

func (w *world) chmodItem(try, name, mode string) error {
	d, err := w.item(name)
	if err != nil {
		return err
	}
	m, err := parseMode(mode)
	if err != nil {
		return err
	}
	return w.outcome(try, "fam_change_permissions", w.b.ChangePermissions(d, m))
}

func (w *world) itemHas(name string, t *godog.Table) error {
	d, err := w.item(name)
	if err != nil {
		return err
	}
	s, c := w.b.Stat(d)
	if c != 0 {
		return fmt.Errorf("fam_stat: code %d: %s", c, w.b.LastError())
	}
	return checkStat(s, t)
}

func (w *world) statItem(try, name string) error {
	d, err := w.item(name)
	if err != nil {
		return err
	}
	_, c := w.b.Stat(d)
	return w.outcome(try, "fam_stat", c)
}

func (w *world) noteItemGlobal(name string) error {
	d, err := w.item(name)
	if err != nil {
		return err
	}
	g, c := w.b.DescGlobal(d)
	if c != 0 {
		return fmt.Errorf("fam_desc_global: code %d: %s", c, w.b.LastError())
	}
	w.globals["item "+name] = g
	return nil
}

func (w *world) itemFromGlobal(try, as, name string) error {
	g, ok := w.globals["item "+name]
	if !ok {
		return fmt.Errorf("no global descriptor noted for item %q", name)
	}
	d, c := w.b.DescFromGlobal(g)
	if c == 0 {
		w.items[as] = d
	}
	return w.outcome(try, "fam_desc_from_global", c)
}

func (w *world) itemFromLiteralGlobal(try, as, rid, off string) error {
	r, err1 := strconv.ParseUint(rid, 10, 64)
	o, err2 := strconv.ParseUint(off, 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return err
	}
	d, c := w.b.DescFromGlobal(core.GlobalDesc{RegionID: r, Offset: o})
	if c == 0 {
		w.items[as] = d
	}
	return w.outcome(try, "fam_desc_from_global", c)
}

func (w *world) sameGlobal(a, b string) error {
	ga, oka := w.globals["item "+a]
	gb, okb := w.globals["item "+b]
	if !oka || !okb {
		return errors.New("both global descriptors must be noted first")
	}
	if ga != gb {
		return fmt.Errorf("global descriptors differ: %+v and %+v", ga, gb)
	}
	return nil
}

// registerItems registers the steps on data items.
func (w *world) registerItems(sc *godog.ScenarioContext) {
	sc.Step(`^`+try+`allocate (?:an )?(unnamed )?item `+q+` of `+size+` with mode `+mode+` in region `+q+`$`, w.allocate)
	sc.Step(`^`+try+`look up item `+q+` in region `+q+`(?: as `+q+`)?$`, w.lookup)
	sc.Step(`^`+try+`(deallocate|close) item `+q+`$`, w.itemOp)
	sc.Step(`^`+try+`change the permissions of item `+q+` to `+mode+`$`, w.chmodItem)
	sc.Step(`^item `+q+` has$`, w.itemHas)
	sc.Step(`^`+try+`stat item `+q+`$`, w.statItem)
	sc.Step(`^I note the global descriptor of item `+q+`$`, w.noteItemGlobal)
	sc.Step(`^`+try+`open item `+q+` from the global descriptor of item `+q+`$`, w.itemFromGlobal)
	sc.Step(`^`+try+`open item `+q+` from the global descriptor \{`+num+`, `+num+`\}$`, w.itemFromLiteralGlobal)
	sc.Step(`^items `+q+` and `+q+` have the same global descriptor$`, w.sameGlobal)
}
