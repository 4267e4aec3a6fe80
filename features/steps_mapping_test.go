package features

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"unsafe"

	"github.com/cucumber/godog"
)

// ---- mapping ------------------------------------------------------------------------

func (w *world) mapItem(try, name string) error {
	d, err := w.item(name)
	if err != nil {
		return err
	}
	s, c := w.b.Stat(d)
	if c != 0 {
		return w.outcome(try, "fam_stat", c)
	}
	m, c := w.b.Map(d, s.Size)
	if c == 0 {
		w.maps[name] = m
	}
	return w.outcome(try, "fam_map", c)
}

func (w *world) writeMapping(text, off, name string) error {
	m, ok := w.maps[name]
	if !ok {
		return fmt.Errorf("item %q is not mapped", name)
	}
	o, err := strconv.Atoi(off)
	if err != nil {
		return err
	}
	copy(m[o:], text)
	return nil
}

func (w *world) mappingReads(name, off, want string) error {
	m, ok := w.maps[name]
	if !ok {
		return fmt.Errorf("item %q is not mapped", name)
	}
	o, err := strconv.Atoi(off)
	if err != nil {
		return err
	}
	if got := string(m[o : o+len(want)]); got != want {
		return fmt.Errorf("mapping reads %q, want %q", got, want)
	}
	return nil
}

// mappingPages reports whether the whole pages the mapping of item name
// lies in contain text: a mapping exposes every byte of its pages, not
// only the item's.
func (w *world) mappingPages(name, not, text string) error {
	m, ok := w.maps[name]
	if !ok {
		return fmt.Errorf("item %q is not mapped", name)
	}
	const page = 4096
	base := uintptr(unsafe.Pointer(unsafe.SliceData(m)))
	lo := base &^ (page - 1)
	hi := (base + uintptr(len(m)) + page - 1) &^ (page - 1)
	pages := unsafe.Slice((*byte)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(m)), -int(base-lo))), hi-lo)
	if has := bytes.Contains(pages, []byte(text)); has != (not == "") {
		return fmt.Errorf("the pages mapped for item %q contain %q: %v", name, text, has)
	}
	return nil
}

// longName is a name of n bytes of ch, for the name-length steps.
func (w *world) longName(n, ch string) (string, error) {
	k, err := strconv.Atoi(n)
	if err != nil {
		return "", err
	}
	return strings.Repeat(ch, k), nil
}

func (w *world) createLongRegion(try, n, ch string) error {
	name, err := w.longName(n, ch)
	if err != nil {
		return err
	}
	if try == "" {
		w.lastLong = name
	}
	return w.createRegion(try, name, "64", "KiB", "0600", "", "", "")
}

func (w *world) allocateLong(try, n, ch string) error {
	name, err := w.longName(n, ch)
	if err != nil {
		return err
	}
	return w.allocate(try, "", name, "64", "bytes", "0600", w.lastLong)
}

func (w *world) lookUpLong(n, ch string) error {
	name, err := w.longName(n, ch)
	if err != nil {
		return err
	}
	return w.lookup("", name, w.lastLong, "")
}

func (w *world) unmap(try, name string) error {
	d, err := w.item(name)
	if err != nil {
		return err
	}
	m := w.maps[name]
	delete(w.maps, name)
	return w.outcome(try, "fam_unmap", w.b.Unmap(m, d))
}

// registerMapping registers the mapping and long-name steps.
func (w *world) registerMapping(sc *godog.ScenarioContext) {
	sc.Step(`^`+try+`map item `+q+`$`, w.mapItem)
	sc.Step(`^I write `+q+` at offset `+num+` through the mapping of item `+q+`$`, w.writeMapping)
	sc.Step(`^the mapping of item `+q+` reads at offset `+num+` `+q+`$`, w.mappingReads)
	sc.Step(`^`+try+`unmap item `+q+`$`, w.unmap)
	sc.Step(`^`+try+`create a region whose name is `+num+` bytes of `+q+`$`, w.createLongRegion)
	sc.Step(`^`+try+`allocate an item whose name is `+num+` bytes of `+q+` in that region$`, w.allocateLong)
	sc.Step(`^the item whose name is `+num+` bytes of `+q+` can be looked up in that region$`, w.lookUpLong)
	sc.Step(`^the pages of the mapping of item `+q+` (do not )?contain `+q+`$`, w.mappingPages)
}
