package features

import (
	"bytes"
	"fmt"
	"strconv"

	"github.com/cucumber/godog"
)

// ---- get and put -------------------------------------------------------------

func xfer(write bool, nb string) Xfer {
	switch {
	case write && nb != "":
		return PutNB
	case write:
		return Put
	case nb != "":
		return GetNB
	}
	return Get
}

func parseU64(s string) (uint64, error) { return strconv.ParseUint(s, 10, 64) }

// put writes text at off; the local buffer lives until teardown, as a
// non-blocking put needs.
func (w *world) put(try, text, off, name, nb, ctx string) error {
	d, err := w.item(name)
	if err != nil {
		return err
	}
	c, err := w.ctx(ctx)
	if err != nil {
		return err
	}
	o, err := parseU64(off)
	if err != nil {
		return err
	}
	buf := w.b.Buffer(uint64(len(text)))
	copy(buf, text)
	return w.outcome(try, "put", w.b.RW(c, xfer(true, nb), buf, uint64(len(text)), d, o))
}

func (w *world) fill(try, n, ch, off, name, nb, ctx string) error {
	cnt, err := parseU64(n)
	if err != nil {
		return err
	}
	d, err := w.item(name)
	if err != nil {
		return err
	}
	c, err := w.ctx(ctx)
	if err != nil {
		return err
	}
	o, err := parseU64(off)
	if err != nil {
		return err
	}
	buf := w.b.Buffer(cnt)
	copy(buf, bytes.Repeat([]byte(ch), int(cnt)))
	return w.outcome(try, "put", w.b.RW(c, xfer(true, nb), buf, cnt, d, o))
}

func (w *world) get(try, n, off, name, bufName, nb, ctx string) error {
	cnt, err := parseU64(n)
	if err != nil {
		return err
	}
	d, err := w.item(name)
	if err != nil {
		return err
	}
	c, err := w.ctx(ctx)
	if err != nil {
		return err
	}
	o, err := parseU64(off)
	if err != nil {
		return err
	}
	buf := w.b.Buffer(cnt)
	w.bufs[bufName] = buf
	return w.outcome(try, "get", w.b.RW(c, xfer(false, nb), buf, cnt, d, o))
}

func (w *world) nullBuffer(dir, n, off, name string) error {
	cnt, err := parseU64(n)
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
	return w.outcome("try", dir, w.b.RW(Ctx{}, xfer(dir == "put", ""), nil, cnt, d, o))
}

func (w *world) reading(n, off, name string) ([]byte, error) {
	cnt, err := parseU64(n)
	if err != nil {
		return nil, err
	}
	d, err := w.item(name)
	if err != nil {
		return nil, err
	}
	o, err := parseU64(off)
	if err != nil {
		return nil, err
	}
	buf := w.b.Buffer(cnt)
	if c := w.b.RW(Ctx{}, Get, buf, cnt, d, o); c != 0 {
		return nil, fmt.Errorf("fam_get_blocking: code %d: %s", c, w.b.LastError())
	}
	return append([]byte(nil), buf...), nil
}

func (w *world) readingGives(n, off, name, want string) error {
	got, err := w.reading(n, off, name)
	if err != nil {
		return err
	}
	if string(got) != want {
		return fmt.Errorf("read %q, want %q", got, want)
	}
	return nil
}

// readingGivesRun checks bytes read against a run of cnt copies of ch ("0"
// meaning zero bytes).
func (w *world) readingGivesRun(n, off, name, cnt, ch string) error {
	got, err := w.reading(n, off, name)
	if err != nil {
		return err
	}
	return checkRun(got, cnt, ch)
}

func checkRun(got []byte, cnt, ch string) error {
	k, err := strconv.Atoi(cnt)
	if err != nil {
		return err
	}
	want := bytes.Repeat([]byte(ch), k)
	if ch == "zero" {
		want = make([]byte, k)
	}
	if !bytes.Equal(got, want) {
		return fmt.Errorf("read %d bytes %q..., want %d bytes of %s", len(got), got[:min(len(got), 16)], k, ch)
	}
	return nil
}

func (w *world) bufferHolds(name, want string) error {
	b, ok := w.bufs[name]
	if !ok {
		return fmt.Errorf("no buffer %q", name)
	}
	if string(b) != want {
		return fmt.Errorf("buffer %q holds %q, want %q", name, b, want)
	}
	return nil
}

func (w *world) bufferHoldsRun(name, cnt, ch string) error {
	b, ok := w.bufs[name]
	if !ok {
		return fmt.Errorf("no buffer %q", name)
	}
	return checkRun(b, cnt, ch)
}

// registerGetPut registers the get and put steps and the checks of item
// and buffer contents.
func (w *world) registerGetPut(sc *godog.ScenarioContext) {
	sc.Step(`^`+try+`put `+q+` at offset `+num+` of item `+q+nb+onCtx+`$`, w.put)
	sc.Step(`^`+try+`put `+num+` bytes of `+q+` at offset `+num+` of item `+q+nb+onCtx+`$`, w.fill)
	sc.Step(`^`+try+`get `+num+` bytes at offset `+num+` of item `+q+` into buffer `+q+nb+onCtx+`$`, w.get)
	sc.Step(`^I try to (get|put) `+num+` bytes at offset `+num+` of item `+q+` with a NULL buffer$`, w.nullBuffer)
	sc.Step(`^reading `+num+` bytes at offset `+num+` of item `+q+` gives `+q+`$`, w.readingGives)
	sc.Step(`^reading `+num+` bytes at offset `+num+` of item `+q+` gives `+num+` (?:bytes of "(.)"|(zero) bytes)$`,
		func(n, off, name, cnt, ch, zero string) error { return w.readingGivesRun(n, off, name, cnt, ch+zero) })
	sc.Step(`^buffer `+q+` holds `+q+`$`, w.bufferHolds)
	sc.Step(`^buffer `+q+` holds `+num+` (?:bytes of "(.)"|(zero) bytes)$`,
		func(name, cnt, ch, zero string) error { return w.bufferHoldsRun(name, cnt, ch+zero) })
}
