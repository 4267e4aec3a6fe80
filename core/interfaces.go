package core

import (
	"os"

	"github.com/gofam/openfam/core/amo"
	"github.com/gofam/openfam/core/metadata"
	"github.com/gofam/openfam/core/transport"
)

// The three places faults come from are reached through interfaces so that
// unit tests can put a double in their place (see the mocks in
// core/internal/mocks): the catalogue, the data plane and, for a
// famd-served instance, the control plane (the generated
// openfamv1.FamClient).

// Catalog is the metadata store an embedded instance keeps its regions and
// items in; *metadata.Store implements it.
type Catalog interface {
	CreateRegion(r metadata.Region) (metadata.Region, error)
	UpdateRegion(r metadata.Region) error
	DeleteRegion(id uint64) error
	RegionByID(id uint64) (metadata.Region, error)
	RegionByName(name string) (metadata.Region, error)
	Regions() []metadata.Region
	PutItem(it metadata.Item) error
	UpdateItem(it metadata.Item) error
	DeleteItem(regionID, offset uint64) error
	ItemAt(regionID, offset uint64) (metadata.Item, error)
	ItemByName(regionID uint64, name string) (metadata.Item, error)
	Items(regionID uint64) []metadata.Item
	Close() error
}

// DataPlane is a client of memory servers; *transport.Client implements it
// and an RDMA provider would too.
type DataPlane interface {
	Get(key transport.Key, off uint64, dst []byte) error
	Put(key transport.Key, off uint64, src []byte) error
	GetAsync(key transport.Key, off uint64, dst []byte) *transport.Call
	PutAsync(key transport.Key, off uint64, src []byte) *transport.Call
	GatherIndexed(key transport.Key, dst []byte, index []uint64, esize uint64) error
	ScatterIndexed(key transport.Key, src []byte, index []uint64, esize uint64) error
	Atomic(key transport.Key, off uint64, kind amo.Kind, op amo.Op, v, cmp amo.Value, fetch bool) (amo.Value, error)
	OpenFD(key transport.Key) (f *os.File, offset, size uint64, rights uint8, err error)
	Close() error
}

var (
	_ Catalog   = (*metadata.Store)(nil)
	_ DataPlane = (*transport.Client)(nil)
)
