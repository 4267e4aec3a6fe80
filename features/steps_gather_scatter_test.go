package features

import (
	"strings"

	"github.com/cucumber/godog"
)

// ---- gather and scatter ----------------------------------------------------------

func (w *world) gsArgs(name, ctx string) (Handle, Ctx, error) {
	d, err := w.item(name)
	if err != nil {
		return nil, Ctx{}, err
	}
	c, err := w.ctx(ctx)
	return d, c, err
}

func (w *world) gatherStrided(try, n, es, name, first, stride, bufName, nb, ctx string) error {
	d, c, err := w.gsArgs(name, ctx)
	if err != nil {
		return err
	}
	v, err := parseList(strings.Join([]string{n, es, first, stride}, ","))
	if err != nil {
		return err
	}
	buf := w.b.Buffer(max(v[0]*v[1], 1))
	w.bufs[bufName] = buf
	return w.outcome(try, "gather", w.b.Strided(c, xfer(false, nb), buf, d, v[0], v[2], v[3], v[1]))
}

func (w *world) scatterStrided(try, text, n, es, name, first, stride, nb, ctx string) error {
	d, c, err := w.gsArgs(name, ctx)
	if err != nil {
		return err
	}
	v, err := parseList(strings.Join([]string{n, es, first, stride}, ","))
	if err != nil {
		return err
	}
	buf := w.b.Buffer(uint64(max(len(text), 1)))
	copy(buf, text)
	return w.outcome(try, "scatter", w.b.Strided(c, xfer(true, nb), buf, d, v[0], v[2], v[3], v[1]))
}

func (w *world) gatherIndexed(try, list, es, name, bufName, nb, ctx string) error {
	d, c, err := w.gsArgs(name, ctx)
	if err != nil {
		return err
	}
	idx, err := parseList(list)
	if err != nil {
		return err
	}
	e, err := parseU64(es)
	if err != nil {
		return err
	}
	buf := w.b.Buffer(uint64(len(idx)) * e)
	w.bufs[bufName] = buf
	return w.outcome(try, "gather", w.b.Indexed(c, xfer(false, nb), buf, d, idx, e))
}

func (w *world) scatterIndexed(try, text, list, es, name, nb, ctx string) error {
	d, c, err := w.gsArgs(name, ctx)
	if err != nil {
		return err
	}
	idx, err := parseList(list)
	if err != nil {
		return err
	}
	e, err := parseU64(es)
	if err != nil {
		return err
	}
	buf := w.b.Buffer(uint64(len(text)))
	copy(buf, text)
	return w.outcome(try, "scatter", w.b.Indexed(c, xfer(true, nb), buf, d, idx, e))
}

// registerGatherScatter registers the gather and scatter steps.
func (w *world) registerGatherScatter(sc *godog.ScenarioContext) {
	sc.Step(`^`+try+`gather `+num+` elements of `+num+` bytes? from item `+q+` starting at element `+num+` with stride `+num+` into buffer `+q+nb+onCtx+`$`, w.gatherStrided)
	sc.Step(`^`+try+`scatter `+q+` as `+num+` elements of `+num+` bytes? into item `+q+` starting at element `+num+` with stride `+num+nb+onCtx+`$`, w.scatterStrided)
	sc.Step(`^`+try+`gather elements? ([\d, ]+) of `+num+` bytes? from item `+q+` into buffer `+q+nb+onCtx+`$`, w.gatherIndexed)
	sc.Step(`^`+try+`scatter `+q+` to elements? ([\d, ]+) of `+num+` bytes? of item `+q+nb+onCtx+`$`, w.scatterIndexed)
}
