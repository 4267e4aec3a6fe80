package features

import (
	"cmp"
	"errors"
	"slices"
	"unsafe"

	"github.com/gofam/openfam/core"
	"github.com/gofam/openfam/core/amo"
)

// goBackend drives package core directly.
type goBackend struct {
	f, self *core.Fam // f is self, or self.As(other identity)
	last    error
}

func newGoBackend() *goBackend { return &goBackend{} }

func (b *goBackend) Name() string { return "go" }

// code records err and returns its FAM_E* number.
func (b *goBackend) code(err error) int {
	if err != nil {
		b.last = err
	}
	return int(core.CodeOf(err))
}

func (b *goBackend) LastError() string {
	if b.last == nil {
		return ""
	}
	return b.last.Error()
}

func (b *goBackend) Violation() error { return nil }
func (b *goBackend) Null() Handle     { return nil }
func (b *goBackend) Teardown()        {}

func (b *goBackend) Buffer(n uint64) []byte { return make([]byte, n) }

func (b *goBackend) Initialize() int {
	o := core.DefaultOptions()
	f, err := core.Initialize(o)
	if err != nil {
		return b.code(err)
	}
	b.f, b.self = f, f
	return 0
}

func (b *goBackend) Finalize() int { return b.code(b.self.Finalize()) }

// actAs makes later calls act for uid/gid (nil: this process's identity).
func (b *goBackend) actAs(id *[2]uint32) {
	if id == nil {
		b.f = b.self
		return
	}
	b.f = b.self.As(id[0], id[1])
}

func reg(h Handle) *core.Region {
	r, _ := h.(*core.Region)
	return r
}

func item(h Handle) *core.Item {
	d, _ := h.(*core.Item)
	return d
}

func gctx(c Ctx, f *core.Fam) *core.Context {
	if !c.On {
		if f == nil {
			return nil // not initialized: ctxOK reports it
		}
		return f.Default()
	}
	x, _ := c.H.(*core.Context)
	return x
}

func (b *goBackend) CreateRegion(name string, size uint64, mode uint32, attr *core.RegionAttr) (Handle, int) {
	var a core.RegionAttr
	if attr != nil {
		a = *attr
	}
	r, err := b.f.CreateRegion(name, size, mode, a)
	return r, b.code(err)
}

func (b *goBackend) LookupRegion(name string) (Handle, int) {
	r, err := b.f.LookupRegion(name)
	return r, b.code(err)
}

func (b *goBackend) DestroyRegion(r Handle) int { return b.code(reg(r).Destroy()) }
func (b *goBackend) CloseRegion(r Handle) int   { return b.code(reg(r).Close()) }
func (b *goBackend) ResizeRegion(r Handle, n uint64) int {
	return b.code(reg(r).Resize(n))
}
func (b *goBackend) ChangeRegionPermissions(r Handle, mode uint32) int {
	return b.code(reg(r).ChangePermissions(mode))
}

func stat(s core.Stat) Stat {
	return Stat{Size: s.Size, Mode: s.Mode, Name: s.Name, UID: s.UID, GID: s.GID, Attr: s.Attr, NumServers: s.NumServers,
		InterleaveSize: s.InterleaveSize}
}

func (b *goBackend) StatRegion(r Handle) (Stat, int) {
	s, err := reg(r).Stat()
	return stat(s), b.code(err)
}

func (b *goBackend) RegionGlobal(r Handle) (core.GlobalDesc, int) {
	g, err := reg(r).Global()
	return g, b.code(err)
}

func (b *goBackend) RegionFromGlobal(g core.GlobalDesc) (Handle, int) {
	r, err := b.f.RegionFromGlobal(g)
	return r, b.code(err)
}

func (b *goBackend) Allocate(r Handle, name string, unnamed bool, n uint64, mode uint32) (Handle, int) {
	if unnamed {
		name = ""
	} else if name == "" {
		// core spells "unnamed" as ""; the C API's "" is a bad name.
		return nil, b.code(core.Errorf(core.CodeInvalid, "fam_allocate", "data item name is empty"))
	}
	x := reg(r)
	if x == nil {
		return nil, b.code(core.Errorf(core.CodeInvalid, "fam_allocate", "region handle is NULL"))
	}
	d, err := x.Allocate(name, n, mode)
	return d, b.code(err)
}

func (b *goBackend) Lookup(it, region string) (Handle, int) {
	d, err := b.f.Lookup(it, region)
	return d, b.code(err)
}

func (b *goBackend) Deallocate(d Handle) int { return b.code(item(d).Deallocate()) }
func (b *goBackend) Close(d Handle) int      { return b.code(item(d).Close()) }
func (b *goBackend) ChangePermissions(d Handle, mode uint32) int {
	return b.code(item(d).ChangePermissions(mode))
}

func (b *goBackend) Stat(d Handle) (Stat, int) {
	s, err := item(d).Stat()
	return stat(s), b.code(err)
}

func (b *goBackend) DescGlobal(d Handle) (core.GlobalDesc, int) {
	g, err := item(d).Global()
	return g, b.code(err)
}

func (b *goBackend) DescFromGlobal(g core.GlobalDesc) (Handle, int) {
	d, err := b.f.ItemFromGlobal(g)
	return d, b.code(err)
}

// ctxOK reports a NULL context the way the C layer does: core's methods on
// a nil *Context would dereference it.
func (b *goBackend) ctxOK(c Ctx, op string) (*core.Context, error) {
	x := gctx(c, b.f)
	if x == nil {
		return nil, core.Errorf(core.CodeInvalid, op, "context handle is NULL")
	}
	return x, nil
}

func (b *goBackend) RW(c Ctx, x Xfer, buf []byte, n uint64, d Handle, off uint64) int {
	cx, err := b.ctxOK(c, "fam_ctx_rw")
	if err != nil {
		return b.code(err)
	}
	if buf != nil {
		buf = buf[:n]
	}
	switch x {
	case Get:
		err = cx.Get(buf, item(d), off)
	case Put:
		err = cx.Put(buf, item(d), off)
	case GetNB:
		err = cx.GetNB(buf, item(d), off)
	default:
		err = cx.PutNB(buf, item(d), off)
	}
	return b.code(err)
}

func (b *goBackend) Strided(c Ctx, x Xfer, buf []byte, d Handle, n, first, stride, esize uint64) int {
	cx, err := b.ctxOK(c, "fam_ctx_strided")
	if err != nil {
		return b.code(err)
	}
	nb := x == GetNB || x == PutNB
	if x == Get || x == GetNB {
		return b.code(cx.GatherStrided(buf, item(d), n, first, stride, esize, nb))
	}
	return b.code(cx.ScatterStrided(buf, item(d), n, first, stride, esize, nb))
}

func (b *goBackend) Indexed(c Ctx, x Xfer, buf []byte, d Handle, index []uint64, esize uint64) int {
	cx, err := b.ctxOK(c, "fam_ctx_indexed")
	if err != nil {
		return b.code(err)
	}
	nb := x == GetNB || x == PutNB
	if x == Get || x == GetNB {
		return b.code(cx.GatherIndexed(buf, item(d), index, esize, nb))
	}
	return b.code(cx.ScatterIndexed(buf, item(d), index, esize, nb))
}

func (b *goBackend) Atomic(c Ctx, d Handle, off uint64, k amo.Kind, op amo.Op, fetch bool, v, cmp amo.Value) (amo.Value, int) {
	cx, err := b.ctxOK(c, "fam_ctx_atomic")
	if err != nil {
		return amo.Value{}, b.code(err)
	}
	old, err := cx.Atomic(item(d), off, k, op, v, cmp, fetch)
	return old, b.code(err)
}

func (b *goBackend) Map(d Handle, _ uint64) ([]byte, int) {
	m, err := item(d).Map()
	return m, b.code(err)
}

func (b *goBackend) Unmap(m []byte, d Handle) int {
	if len(m) == 0 {
		return b.code(core.Errorf(core.CodeInvalid, "fam_unmap", "no mapping"))
	}
	return b.code(item(d).Unmap(unsafe.Pointer(unsafe.SliceData(m))))
}

func (b *goBackend) Copy(c Ctx, src Handle, srcOff uint64, dst Handle, dstOff, n uint64) (Handle, int) {
	cx, err := b.ctxOK(c, "fam_copy")
	if err != nil {
		return nil, b.code(err)
	}
	w, err := cx.Copy(item(src), srcOff, item(dst), dstOff, n)
	return w, b.code(err)
}

func (b *goBackend) Wait(_ string, w Handle) int {
	x, _ := w.(*core.Wait)
	return b.code(x.Wait())
}

func (b *goBackend) Backup(d Handle, name string) (Handle, int) {
	w, err := b.f.Backup(item(d), name)
	return w, b.code(err)
}

func (b *goBackend) Restore(name string, d Handle) (Handle, int) {
	w, err := b.f.Restore(name, item(d))
	return w, b.code(err)
}

func (b *goBackend) RestoreRegion(name string, r Handle, it string, mode uint32) (Handle, Handle, int) {
	w, d, err := b.f.RestoreNew(name, reg(r), it, mode)
	return w, d, b.code(err)
}

func (b *goBackend) DeleteBackup(name string) (Handle, int) {
	w, err := b.f.DeleteBackup(name)
	return w, b.code(err)
}

func (b *goBackend) ListBackup(prefix string) (string, int) {
	s, err := b.f.ListBackups(prefix)
	return s, b.code(err)
}

func (b *goBackend) ListRegions() ([]Listed, int) {
	rs, err := b.f.Regions()
	out := []Listed{}
	for _, r := range rs {
		out = append(out, Listed{Name: r.Name, Size: r.Size, Mode: r.Mode, UID: r.UID, GID: r.GID})
	}
	return out, b.code(err)
}

func (b *goBackend) ListItems(r Handle) ([]Listed, int) {
	items, err := reg(r).Items()
	out := []Listed{}
	for off, it := range items {
		out = append(out, Listed{Name: it.Name, Offset: off, Size: it.Size, Mode: it.Mode, UID: it.UID, GID: it.GID})
	}
	slices.SortFunc(out, func(a, b Listed) int { return cmp.Compare(a.Offset, b.Offset) })
	return out, b.code(err)
}

func (b *goBackend) ContextOpen() (Handle, int) {
	c, err := b.f.OpenContext()
	return c, b.code(err)
}

func (b *goBackend) ContextClose(c Handle) int {
	x, _ := c.(*core.Context)
	if x == nil {
		return b.code(core.Errorf(core.CodeInvalid, "fam_context_close", "context handle is NULL"))
	}
	return b.code(x.Close())
}

func (b *goBackend) Fence(c Ctx) int {
	cx, err := b.ctxOK(c, "fam_fence")
	if err != nil {
		return b.code(err)
	}
	return b.code(cx.Fence())
}

func (b *goBackend) Quiet(c Ctx) int {
	cx, err := b.ctxOK(c, "fam_quiet")
	if err != nil {
		return b.code(err)
	}
	return b.code(cx.Quiet())
}

func (b *goBackend) Progress(c Ctx) uint64 {
	if b.f == nil {
		return 0
	}
	return gctx(c, b.f).Progress()
}

func (b *goBackend) Barrier() int { return b.code(b.f.Barrier()) }

func (b *goBackend) PE() (int, int, int) {
	id, err := b.f.Option("PE_ID")
	if err != nil {
		return 0, 0, b.code(err)
	}
	n, err := b.f.Option("PE_COUNT")
	if err != nil {
		return 0, 0, b.code(err)
	}
	i, ok1 := id.(int)
	c, ok2 := n.(int)
	if !ok1 || !ok2 {
		return 0, 0, b.code(errors.New("PE_ID or PE_COUNT is not an int"))
	}
	return i, c, 0
}
