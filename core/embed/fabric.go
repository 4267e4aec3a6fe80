package embed

import (
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/gofam/openfam/core/fabric"
	"github.com/gofam/openfam/core/transport"
	"github.com/gofam/openfam/internal/sigguard"
)

// The libfabric data plane (issue 15): famd --provider NAME opens one
// endpoint on that provider for the data plane of the memory it serves
// (role all: its own regions; role memory: its segments), announces the
// provider and the endpoint's address (Info, Join), and exposes keys on
// it when clients ask. "tcp" (or "") is the project's own TCP protocol,
// the default, which needs no endpoint.

// IsTCP reports whether provider names the project's own data plane ("",
// or "tcp" in any case: libfabric's own tcp provider is "tcp;ofi_rxm").
func IsTCP(provider string) bool {
	p := strings.TrimSpace(provider)
	return p == "" || strings.EqualFold(p, fabric.TCP)
}

// openFabric opens the endpoint of provider for a server whose clients
// reach it at host ("" or a wildcard: the provider chooses), on the fabric
// domain device ("": the provider's choice). It returns nil for the tcp
// data plane. Its errors name the provider and say how to list the ones
// this host has.
func openFabric(provider, host, device string, logf func(string, ...any)) (*fabric.Endpoint, error) {
	if IsTCP(provider) {
		return nil, nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = ""
	}
	var ep *fabric.Endpoint
	var err error
	// libfabric's providers install signal handlers of their own (SIGTERM
	// among them): famd's graceful stop and the data plane's fault
	// handling need Go's back.
	if n := sigguard.Keep(func() { ep, err = fabric.Open(provider, fabric.Options{Node: host, Device: device, Logf: logf}) }); n > 0 && logf != nil {
		logf("famd: put back %d signal handlers libfabric (provider %s) replaced", n, provider)
	}
	if err != nil {
		hint := "`fi_info -l` lists the providers libfabric has on this host"
		if errors.Is(err, fabric.ErrNoLibfabric) {
			hint = "install libfabric (Debian: apt-get install libfabric1 libfabric-bin; `fi_info -l` then lists its providers)"
		}
		return nil, fmt.Errorf("data-plane provider %q: %w; %s, or use --provider tcp (the default, no libfabric needed)", provider, err, hint)
	}
	return ep, nil
}

// closeFabric closes ep if it is open.
func closeFabric(ep *fabric.Endpoint) error {
	if ep == nil {
		return nil
	}
	return ep.Close()
}

// fabricServer is the endpoint the memory server exposes keys on, if any.
func (m *Memory) fabricServer() transport.FabricServer {
	if m.opts.Fabric != nil {
		return m.opts.Fabric
	}
	if m.fabric != nil {
		return m.fabric
	}
	return nil
}
