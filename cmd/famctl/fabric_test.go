package main

import "github.com/gofam/openfam/core/transport"

// shownFabric is a transport.FabricServer double for famctl's listing: a
// memory server announcing a libfabric data plane (no bytes move in the
// tests that use it).
type shownFabric struct{}

func (shownFabric) Provider() string { return "tcp;ofi_rxm" }
func (shownFabric) Addr() []byte     { return []byte{0x02, 0x00, 0x1f, 0x90, 127, 0, 0, 1} }
func (shownFabric) Expose(transport.Key, []byte, uint8) (uint64, uint64, error) {
	return 0, 0, nil
}
func (shownFabric) Withdraw(transport.Key) {}
