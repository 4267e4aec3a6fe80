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
