package features

import (
	"errors"
	"fmt"

	"github.com/cucumber/godog"
)

// ---- contexts, ordering, copies -------------------------------------------------

func (w *world) openContext(name string) error {
	c, code := w.b.ContextOpen()
	if code == 0 {
		w.ctxs[name] = c
	}
	return w.outcome("", "fam_context_open", code)
}

func (w *world) closeContext(try, name string) error {
	c, err := w.ctx(name)
	if err != nil {
		return err
	}
	return w.outcome(try, "fam_context_close", w.b.ContextClose(c.H))
}

func (w *world) quiet(try, ctx string) error {
	c, err := w.ctx(ctx)
	if err != nil {
		return err
	}
	return w.outcome(try, "fam_quiet", w.b.Quiet(c))
}

func (w *world) fence(try, ctx string) error {
	c, err := w.ctx(ctx)
	if err != nil {
		return err
	}
	return w.outcome(try, "fam_fence", w.b.Fence(c))
}

func (w *world) progressIs(ctx, n string) error {
	c, err := w.ctx(ctx)
	if err != nil {
		return err
	}
	want, err := parseU64(n)
	if err != nil {
		return err
	}
	if got := w.b.Progress(c); got != want {
		return fmt.Errorf("%d operations in progress, want %d", got, want)
	}
	return nil
}

func (w *world) copyItem(try, n, unit, soff, src, doff, dst, ctx string) error {
	cnt, err := parseSize(n, unit)
	if err != nil {
		return err
	}
	s, err := w.item(src)
	if err != nil {
		return err
	}
	d, err := w.item(dst)
	if err != nil {
		return err
	}
	c, err := w.ctx(ctx)
	if err != nil {
		return err
	}
	so, err1 := parseU64(soff)
	do, err2 := parseU64(doff)
	if err := errors.Join(err1, err2); err != nil {
		return err
	}
	wt, code := w.b.Copy(c, s, so, d, do, cnt)
	if code == 0 {
		w.wait = wt
	}
	return w.outcome(try, "fam_copy", code)
}

func (w *world) waitFor(try, what string) error {
	if w.wait == nil {
		return errors.New("nothing to wait for")
	}
	wt := w.wait
	w.wait = nil
	return w.outcome(try, "fam_"+what+"_wait", w.b.Wait(what, wt))
}

// registerContexts registers the context, ordering and copy steps.
func (w *world) registerContexts(sc *godog.ScenarioContext) {
	sc.Step(`^I open context `+q+`$`, w.openContext)
	sc.Step(`^`+try+`close context `+q+`$`, w.closeContext)
	sc.Step(`^`+try+`quiet(?: context `+q+`)?$`, w.quiet)
	sc.Step(`^`+try+`fence(?: context `+q+`)?$`, w.fence)
	sc.Step(`^the operations in progress(?: on context `+q+`)? number `+num+`$`, w.progressIs)
	sc.Step(`^`+try+`copy `+size+` from offset `+num+` of item `+q+` to offset `+num+` of item `+q+onCtx+`$`, w.copyItem)
	sc.Step(`^`+try+`wait for the (copy)$`, w.waitFor)
}
