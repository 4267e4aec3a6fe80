package features

import (
	"fmt"
	"strconv"

	"github.com/cucumber/godog"

	"github.com/gofam/openfam/core/amo"
)

// ---- atomics ----------------------------------------------------------------------

func (w *world) holds(name, typ, val, off string) error {
	k, ok := kinds[typ]
	if !ok {
		return fmt.Errorf("unknown type %q", typ)
	}
	v, err := parseValue(k, val)
	if err != nil {
		return err
	}
	d, err := w.item(name)
	if err != nil {
		return err
	}
	o, err := parseU64(off)
	if err != nil {
		return err
	}
	b := w.b.Buffer(k.Size())
	copy(b, encode(k, v))
	if c := w.b.RW(Ctx{}, Put, b, k.Size(), d, o); c != 0 {
		return fmt.Errorf("fam_put_blocking: code %d: %s", c, w.b.LastError())
	}
	return nil
}

// valueIs reads the word with a plain get, not an atomic, so that a broken
// atomic cannot vouch for itself.
func (w *world) valueIs(typ, off, name, want string) error {
	k, ok := kinds[typ]
	if !ok {
		return fmt.Errorf("unknown type %q", typ)
	}
	got, err := w.reading(strconv.FormatUint(k.Size(), 10), off, name)
	if err != nil {
		return err
	}
	wantC, err := canonical(k, want)
	if err != nil {
		return err
	}
	if g := formatValue(k, decode(k, got)); g != wantC {
		return fmt.Errorf("the %s at offset %s is %s, want %s", typ, off, g, wantC)
	}
	return nil
}

func (w *world) atomic(try, opName, typ, off, name, val, ctx string) error {
	o, ok := atomicOps[opName]
	if !ok {
		return fmt.Errorf("unknown atomic %q", opName)
	}
	return w.doAtomic(try, o.op, o.fetch, typ, off, name, val, "", ctx)
}

func (w *world) fetch(try, typ, off, name, ctx string) error {
	return w.doAtomic(try, amo.Fetch, true, typ, off, name, "0", "", ctx)
}

func (w *world) compareSwap(try, typ, off, name, expected, desired, ctx string) error {
	return w.doAtomic(try, amo.CompareSwap, true, typ, off, name, desired, expected, ctx)
}

func (w *world) doAtomic(try string, op amo.Op, fetch bool, typ, off, name, val, cmpVal, ctx string) error {
	k, ok := kinds[typ]
	if !ok {
		return fmt.Errorf("unknown type %q", typ)
	}
	v, err := parseValue(k, val)
	if err != nil {
		return err
	}
	var cmp amo.Value
	if cmpVal != "" {
		if cmp, err = parseValue(k, cmpVal); err != nil {
			return err
		}
	}
	d, err := w.item(name)
	if err != nil {
		return err
	}
	c, err := w.ctx(ctx)
	if err != nil {
		return err
	}
	o, err := strconv.ParseUint(off, 10, 64)
	if err != nil {
		return err
	}
	old, code := w.b.Atomic(c, d, o, k, op, fetch, v, cmp)
	w.returned, w.retKind = old, k
	return w.outcome(try, "atomic", code)
}

func (w *world) returnedIs(want string) error {
	wantC, err := canonical(w.retKind, want)
	if err != nil {
		return err
	}
	if g := formatValue(w.retKind, w.returned); g != wantC {
		return fmt.Errorf("the atomic returned %s, want %s", g, wantC)
	}
	return nil
}

// registerAtomics registers the atomic steps.
func (w *world) registerAtomics(sc *godog.ScenarioContext) {
	sc.Step(`^item `+q+` holds the `+typ+` `+val+` at offset `+num+`$`, w.holds)
	sc.Step(`^the `+typ+` at offset `+num+` of item `+q+` is `+val+`$`, w.valueIs)
	sc.Step(`^`+try+`apply (\w+) to the `+typ+` at offset `+num+` of item `+q+` with `+val+onCtx+`$`, w.atomic)
	sc.Step(`^`+try+`fetch the `+typ+` at offset `+num+` of item `+q+onCtx+`$`, w.fetch)
	sc.Step(`^`+try+`compare and swap the `+typ+` at offset `+num+` of item `+q+` expecting `+val+` with `+val+onCtx+`$`, w.compareSwap)
	sc.Step(`^the atomic returned `+val+`$`, w.returnedIs)
}
