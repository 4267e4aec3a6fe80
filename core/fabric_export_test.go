package core

import (
	"fmt"

	"github.com/gofam/openfam/core/transport"
)

// SetProviderWarn replaces the printer of provider warnings (see
// fabricplane.go) and returns the function restoring it.
func SetProviderWarn(f func(string)) (restore func()) {
	old := providerWarn
	providerWarn = f
	return func() { providerWarn = old }
}

// BreakFamdFabricPlane makes f's data plane to famd a fabric plane whose
// transfers fail as unavailable, as one does after famd restarted with its
// endpoint at a new address; it is renewed as such planes are.
func BreakFamdFabricPlane(f *Fam) {
	r := remoteOf(f)
	ctl := ctlClient(r.data())
	fd := &fabricData{DataPlane: deadPlane{ctl}, ctl: ctl}
	fd.renew = r.renewFamdPlane
	r.dataP.Store(&dataBox{fd})
}

// deadPlane fails every transfer as unavailable.
type deadPlane struct{ *transport.Client }

var errDead = fmt.Errorf("%w: fabric peer gone", transport.ErrUnavailable)

func (deadPlane) Get(transport.Key, uint64, []byte) error { return errDead }
func (deadPlane) Put(transport.Key, uint64, []byte) error { return errDead }
func (deadPlane) GetAsync(transport.Key, uint64, []byte) *transport.Call {
	return transport.DoneCall(errDead)
}
func (deadPlane) PutAsync(transport.Key, uint64, []byte) *transport.Call {
	return transport.DoneCall(errDead)
}

// ViewPut returns a write through the data plane and with the key of it's
// view as it stands now, with none of the client's handling of a refused
// key (no renewal, no mapping to a FAM error): the plane's own answer,
// for tests of what the fabric itself refuses.
func ViewPut(it *Item) func(off uint64, src []byte) error {
	v := it.view.Load()
	return func(off uint64, src []byte) error { return v.dp.Put(v.key, off, src) }
}

// MemPlanesFabric reports, for each memory server f has a data plane to,
// whether that plane is a libfabric one.
func MemPlanesFabric(f *Fam) map[uint64]bool {
	r := remoteOf(f)
	r.mmu.Lock()
	defer r.mmu.Unlock()
	out := map[uint64]bool{}
	for id, c := range r.mems {
		_, ok := c.(*fabricData)
		out[id] = ok
	}
	return out
}
