package core

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/gofam/openfam/core/amo"
	"github.com/gofam/openfam/core/fabric"
	"github.com/gofam/openfam/core/transport"
	"github.com/gofam/openfam/internal/sigguard"
	pb "github.com/gofam/openfam/spec/proto/openfamv1"
)

// The libfabric data plane on the client side (issue 15). Every famd
// announces the provider its data plane runs (Info for famd's own regions,
// Servers for memory servers); a server on a libfabric provider gets a
// fabric Plane for data, reached through the process's endpoint on that
// provider (opened on first use, shared by the process's instances and
// closed when the last of them finalizes), with the server's own protocol
// (*transport.Client) kept for control: keys' registrations, atomics the
// provider lacks, descriptors of same-host items (the fd-mapped fast path
// stays as it is) and commits.
//
// The client's choice is OPENFAM_PROVIDER (Options.Provider): when set
// and different from a server's, the instance refuses that server with
// both names. OpenFAM programs also name a provider in Fam_Options
// (libfabricProvider) or fam_pe_config.yaml (provider), by habit
// "sockets": that choice only warns, once, and the servers' provider is
// used (bindings/compat/MIGRATING.md).

// providerChoice is what the client asked for.
type providerChoice struct {
	name     string // "" when nothing was asked
	explicit bool   // from OPENFAM_PROVIDER: a mismatch is an error
	source   string // where name came from, for messages
}

// choiceOf reads the client's provider choice from opts.
func choiceOf(opts Options) providerChoice {
	if p := strings.TrimSpace(opts.Provider); p != "" {
		return providerChoice{name: p, explicit: true, source: "OPENFAM_PROVIDER"}
	}
	if p := strings.TrimSpace(opts.Settings["LIBFABRIC_PROVIDER"]); p != "" {
		return providerChoice{name: p, source: "the OpenFAM option LIBFABRIC_PROVIDER (Fam_Options.libfabricProvider or fam_pe_config.yaml's provider)"}
	}
	return providerChoice{}
}

// deviceOf is the fabric domain the client's endpoint opens (OpenFAM's
// if_device, fabric.Options.Device): the IF_DEVICE setting
// (Fam_Options.if_device, fam_pe_config.yaml's if_device), else
// $OPENFAM_IF_DEVICE, the variable famd's --if-device defaults to, so that
// one variable in famrun's environment sets a job's; "" lets the provider
// choose.
func deviceOf(opts Options) string {
	if d := strings.TrimSpace(opts.Settings["IF_DEVICE"]); d != "" {
		return d
	}
	return strings.TrimSpace(os.Getenv("OPENFAM_IF_DEVICE"))
}

// normProvider is a provider string as compared: "" is the default, tcp.
func normProvider(p string) string {
	p = strings.TrimSpace(p)
	if p == "" {
		return fabric.TCP
	}
	return p
}

// isTCPProvider reports whether p is the project's own data plane.
func isTCPProvider(p string) bool { return strings.EqualFold(normProvider(p), fabric.TCP) }

// The fabric Plane's control channel is the server's protocol client.
var _ fabric.Control = (*transport.Client)(nil)

// providerWarn prints the warning of a provider choice that is not
// honoured; tests replace it.
var providerWarn = func(msg string) { fmt.Fprintln(os.Stderr, "openfam: warning: "+msg) }

// fabricState is an instance's libfabric side: the client's choice, the
// one endpoint, and the warning given once.
type fabricState struct {
	choice providerChoice
	warned sync.Once

	mu sync.Mutex
	ep *fabric.Endpoint
	// renewMu serializes renewals of famd's own fabric plane.
	renewMu sync.Mutex
	// timeout bounds each fabric operation (OPENFAM_TIMEOUT).
	timeout time.Duration
	// device is the fabric domain the endpoint opens (deviceOf).
	device string
}

// checkProvider compares the client's choice with the provider of the
// server described by who: an explicit choice that differs fails with both
// names; an OpenFAM option that differs warns once and is overridden.
func (s *fabricState) checkProvider(who, serverProv string) error {
	c := s.choice
	if c.name == "" || strings.EqualFold(normProvider(c.name), normProvider(serverProv)) {
		return nil
	}
	sp := normProvider(serverProv)
	if c.explicit {
		return Errorf(CodeInvalid, "", "data-plane provider mismatch: OPENFAM_PROVIDER=%q, but %s runs the %q data plane: set OPENFAM_PROVIDER=%q (or unset it to use the servers' choice), or start the famds with --provider %q (famrun --provider)",
			c.name, who, sp, sp, c.name)
	}
	s.warned.Do(func() {
		providerWarn(fmt.Sprintf("%s names provider %q, but %s runs the %q data plane: using %q (set OPENFAM_PROVIDER to insist)", c.source, c.name, who, sp, sp))
	})
	return nil
}

// endpoint returns the instance's fabric endpoint on prov, opening it on
// first use. One instance talks to servers of one provider.
func (s *fabricState) endpoint(prov string) (*fabric.Endpoint, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ep != nil {
		if !strings.EqualFold(s.ep.Provider(), prov) {
			return nil, fmt.Errorf("servers of one job run different data-plane providers (%q and %q): start every famd with the same --provider", s.ep.Provider(), prov)
		}
		return s.ep, nil
	}
	ep, err := acquireEndpoint(prov, endpointOptions(s.timeout, s.device))
	if err != nil {
		return nil, fmt.Errorf("opening the %q data plane (the servers' --provider): %w; `fi_info -l` lists the providers libfabric has on this host", prov, err)
	}
	s.ep = ep
	return ep, nil
}

// close lets go of the endpoint, after every Plane using it was closed.
func (s *fabricState) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ep != nil {
		releaseEndpoint(s.ep)
		s.ep = nil
	}
}

// endpoints holds the process's fabric endpoints, one per provider, shared
// by its instances and closed when the last one using it finalizes: an
// endpoint costs a completion queue, an address vector and, on providers
// without automatic progress, a progress thread.
var endpoints struct {
	mu sync.Mutex
	m  map[string]*sharedEndpoint
}

type sharedEndpoint struct {
	ep   *fabric.Endpoint
	refs int
}

// acquireEndpoint returns the process's endpoint on prov, opening it with
// opts if no instance holds one (the first instance's OPENFAM_TIMEOUT and
// device then hold for the process's instances, which share it).
func acquireEndpoint(prov string, opts fabric.Options) (*fabric.Endpoint, error) {
	endpoints.mu.Lock()
	defer endpoints.mu.Unlock()
	if se := endpoints.m[prov]; se != nil {
		se.refs++
		return se.ep, nil
	}
	var ep *fabric.Endpoint
	var err error
	// libfabric's providers replace the program's handlers of SIGINT,
	// SIGTERM, SIGSEGV, SIGBUS...: the program's (and Go's) are put back.
	sigguard.Keep(func() { ep, err = fabric.Open(prov, opts) })
	if err != nil {
		return nil, err
	}
	if endpoints.m == nil {
		endpoints.m = map[string]*sharedEndpoint{}
	}
	endpoints.m[prov] = &sharedEndpoint{ep: ep, refs: 1}
	return ep, nil
}

// endpointOptions are the options of a client's endpoint: timeout bounds
// every fabric operation, as OPENFAM_TIMEOUT bounds every request of the
// TCP data plane, so that a memory server that dies mid-transfer fails the
// call (or fam_quiet) within it (0 keeps the package's default); device
// is the fabric domain (deviceOf).
func endpointOptions(timeout time.Duration, device string) fabric.Options {
	return fabric.Options{Timeout: timeout, Device: device}
}

// releaseEndpoint drops one instance's hold on ep, closing it with the last.
func releaseEndpoint(ep *fabric.Endpoint) {
	endpoints.mu.Lock()
	defer endpoints.mu.Unlock()
	for prov, se := range endpoints.m {
		if se.ep == ep {
			if se.refs--; se.refs == 0 {
				delete(endpoints.m, prov)
				ep.Close()
			}
			return
		}
	}
}

// plane returns the data plane to the server described by who, whose
// protocol client is ctl: ctl itself for the tcp data plane (or a server
// that announces no fabric address), else a fabric Plane over the
// instance's endpoint with ctl for control. On error ctl is closed.
func (s *fabricState) plane(who, prov string, addr []byte, ctl *transport.Client) (DataPlane, error) {
	if err := s.checkProvider(who, prov); err != nil {
		ctl.Close()
		return nil, err
	}
	if isTCPProvider(prov) || len(addr) == 0 {
		return ctl, nil
	}
	prov = normProvider(prov)
	ep, err := s.endpoint(prov)
	if err != nil {
		ctl.Close()
		return nil, fmt.Errorf("%w: %s: %v", transport.ErrUnavailable, who, err)
	}
	p, err := ep.Plane(addr, ctl)
	if err != nil {
		ctl.Close()
		return nil, fmt.Errorf("%w: %s on the %q fabric: %v", transport.ErrUnavailable, who, prov, err)
	}
	dp, ok := any(p).(DataPlane)
	if !ok {
		// The surface promises it; a build where it does not hold must
		// fail clearly rather than move bytes the wrong way.
		ctl.Close()
		return nil, fmt.Errorf("%w: %s: this build's fabric.Plane is not a data plane", transport.ErrUnavailable, who)
	}
	return &fabricData{DataPlane: dp, ctl: ctl}, nil
}

// fabricData is a fabric Plane with the server's protocol client beside
// it, for what only that protocol does (see ctlClient).
type fabricData struct {
	DataPlane
	ctl *transport.Client
	// renew, set on famd's own fabric plane, rebuilds it from what famd
	// announces now (remote.renewFamdPlane).
	renew func(*fabricData) bool
}

// Ctl returns the server's protocol client: control calls over the data
// plane, commits, descriptors.
func (d *fabricData) Ctl() *transport.Client { return d.ctl }

// OpenFD implements DataPlane on the server's protocol: a same-host item
// is mapped from famd's descriptor whatever the fabric.
func (d *fabricData) OpenFD(key transport.Key) (*os.File, uint64, uint64, uint8, error) {
	return d.ctl.OpenFD(key)
}

// CommitAsync implements committer: the server makes the bytes durable
// (the Plane's writes have completed by the time fam_quiet commits).
func (d *fabricData) CommitAsync(key transport.Key, off, n uint64) *transport.Call {
	return d.ctl.CommitAsync(key, off, n)
}

// AtomicAsync implements asyncAtomics: the Plane's own when it has one,
// else the Plane's blocking atomic, whose outcome the Call reports. The
// atomic never goes to the server's protocol behind the Plane's back: a
// word is updated by one kind of atomics only (spec/wire.md section 11).
func (d *fabricData) AtomicAsync(key transport.Key, off uint64, kind amo.Kind, op amo.Op, v amo.Value) *transport.Call {
	return atomicAsyncOn(d.DataPlane, key, off, kind, op, v)
}

// ctlClient returns the server's protocol client behind a data plane:
// d itself, or a fabric plane's control client; nil for others (test
// doubles, striped planes).
func ctlClient(d DataPlane) *transport.Client {
	switch c := d.(type) {
	case *transport.Client:
		return c
	case interface{ Ctl() *transport.Client }:
		return c.Ctl()
	}
	return nil
}

// atomicAsyncOn issues a non-fetching atomic on d without waiting when d
// can, else waits and returns the finished Call.
func atomicAsyncOn(d DataPlane, key transport.Key, off uint64, kind amo.Kind, op amo.Op, v amo.Value) *transport.Call {
	if a, ok := d.(asyncAtomics); ok {
		return a.AtomicAsync(key, off, kind, op, v)
	}
	_, err := d.Atomic(key, off, kind, op, v, amo.Value{}, false)
	return transport.DoneCall(err)
}

// commitAsyncOn starts a commit on d; a plane without commits (a test
// double) makes its writes durable itself.
func commitAsyncOn(d DataPlane, key transport.Key, off, n uint64) *transport.Call {
	if c, ok := d.(committer); ok {
		return c.CommitAsync(key, off, n)
	}
	return transport.DoneCall(nil)
}

// dataBox holds famd's own data plane for remote.dataP.
type dataBox struct{ d DataPlane }

// data returns famd's own data plane.
func (r *remote) data() DataPlane {
	if b := r.dataP.Load(); b != nil {
		return b.d
	}
	return nil
}

// renewFabric runs after a call on item it failed as unavailable: when the
// item's data plane is famd's own fabric plane, famd may have restarted
// with its endpoint at a new address (a restart keeps famd's socket and
// TCP address, not its fabric address), so the plane is rebuilt from what
// famd announces now and the item resolved again onto it. The failed call
// is not retried (it may have been applied); the next one uses the new
// plane.
func renewFabric(it *Item, op string) {
	fd, ok := it.view.Load().dp.(*fabricData)
	if !ok || fd.renew == nil || !fd.renew(fd) {
		return
	}
	_ = it.f.b.refresh(it, op, nil)
}

// renewFamdPlane replaces old, famd's own fabric plane, with one to the
// fabric address famd announces now. It reports whether famd's data plane
// is another one than old by the time it returns.
func (r *remote) renewFamdPlane(old *fabricData) bool {
	r.fab.renewMu.Lock()
	defer r.fab.renewMu.Unlock()
	if r.data() != DataPlane(old) {
		return true // renewed by another caller
	}
	ctx, cancel := r.ctx()
	defer cancel()
	info, err := r.cl.Info(ctx, &pb.InfoRequest{})
	if err != nil {
		return false
	}
	network, daddr, token := "tcp", info.GetDataTcp(), r.token
	if r.unix && info.GetDataUnix() != "" {
		network, daddr, token = "unix", info.GetDataUnix(), ""
	}
	dc, err := transport.Dial(network, daddr, transport.ClientOptions{Token: token, Timeout: r.timeout, Spin: r.spin})
	if err != nil {
		return false
	}
	d, err := r.fab.plane("famd at "+r.addr, info.GetProvider(), info.GetFabricAddr(), dc)
	if err != nil {
		return false
	}
	if fd, ok := d.(*fabricData); ok {
		fd.renew = r.renewFamdPlane
	}
	r.dataP.Store(&dataBox{d})
	// Views still holding old fail until they are resolved again (their
	// keys died with famd anyway); closing it fails them at once.
	old.Close()
	return true
}
