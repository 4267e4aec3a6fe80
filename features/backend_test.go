package features

import (
	"github.com/gofam/openfam/core"
	"github.com/gofam/openfam/core/amo"
)

// Handle is a backend's region, item, context or wait handle: a *core.Region
// (and so on) for the Go backend, the encoded C handle for the C one.
type Handle any

// Ctx selects the context of a data-path call: the instance's default
// context through the plain fam_ calls when On is false, else the fam_ctx_
// call on H (which may be the backend's NULL handle).
type Ctx struct {
	H  Handle
	On bool
}

// Xfer is a data-path direction.
type Xfer int

// The four transfers of get/put, gather/scatter.
const (
	Get Xfer = iota
	Put
	GetNB
	PutNB
)

// Stat is what fam_stat and fam_stat_region report, in both backends' terms.
type Stat struct {
	Size       uint64
	Mode       uint32
	Name       string
	UID, GID   uint32
	Attr       core.RegionAttr
	NumServers uint64
	// InterleaveSize is the block size of a region striped over memory
	// servers.
	InterleaveSize uint64
}

// Backend is the OpenFAM API as the scenarios drive it. Every call returns
// the positive FAM_E* code of its failure (0 on success); LastError has the
// message. Step definitions are written once against this interface, so a
// scenario that passes on one backend and fails on the other points at the
// layer between them.
type Backend interface {
	Name() string
	// Initialize starts the instance from the process environment
	// (OPENFAM_DATA_DIR, OPENFAM_SERVER, FAMRUN_*...), as fam_initialize.
	Initialize() int
	Finalize() int
	// Teardown releases what the backend holds for the scenario (buffers);
	// the instance must be finalized already.
	Teardown()
	LastError() string
	// Violation reports a breach of the C ABI's own rules noticed by the
	// backend (fam_errcode disagreeing with the return code, a handle of the
	// wrong kind); nil for the Go backend.
	Violation() error
	Null() Handle
	// Buffer returns n bytes of local memory valid until Teardown.
	Buffer(n uint64) []byte

	CreateRegion(name string, size uint64, mode uint32, attr *core.RegionAttr) (Handle, int)
	LookupRegion(name string) (Handle, int)
	DestroyRegion(r Handle) int
	CloseRegion(r Handle) int
	ResizeRegion(r Handle, n uint64) int
	ChangeRegionPermissions(r Handle, mode uint32) int
	StatRegion(r Handle) (Stat, int)
	RegionGlobal(r Handle) (core.GlobalDesc, int)
	RegionFromGlobal(g core.GlobalDesc) (Handle, int)

	// Allocate makes an item; unnamed passes a NULL name.
	Allocate(r Handle, name string, unnamed bool, n uint64, mode uint32) (Handle, int)
	Lookup(item, region string) (Handle, int)
	Deallocate(d Handle) int
	Close(d Handle) int
	ChangePermissions(d Handle, mode uint32) int
	Stat(d Handle) (Stat, int)
	DescGlobal(d Handle) (core.GlobalDesc, int)
	DescFromGlobal(g core.GlobalDesc) (Handle, int)

	// RW transfers n bytes between buf (nil: a NULL pointer) and the item.
	RW(c Ctx, x Xfer, buf []byte, n uint64, d Handle, off uint64) int
	Strided(c Ctx, x Xfer, buf []byte, d Handle, n, first, stride, esize uint64) int
	Indexed(c Ctx, x Xfer, buf []byte, d Handle, index []uint64, esize uint64) int
	Atomic(c Ctx, d Handle, off uint64, k amo.Kind, op amo.Op, fetch bool, v, cmp amo.Value) (amo.Value, int)
	Map(d Handle, size uint64) ([]byte, int)
	Unmap(b []byte, d Handle) int

	Copy(c Ctx, src Handle, srcOff uint64, dst Handle, dstOff, n uint64) (Handle, int)
	// Wait completes a wait handle with the *_wait call named by what:
	// copy, backup, restore or delete.
	Wait(what string, w Handle) int
	Backup(d Handle, name string) (Handle, int)
	Restore(name string, d Handle) (Handle, int)
	RestoreRegion(name string, r Handle, item string, mode uint32) (w, d Handle, code int)
	DeleteBackup(name string) (Handle, int)
	ListBackup(prefix string) (string, int)
	// ListRegions and ListItems are fam_list_regions and fam_list_items,
	// one Listed per line (Offset is 0 for regions).
	ListRegions() ([]Listed, int)
	ListItems(r Handle) ([]Listed, int)

	ContextOpen() (Handle, int)
	ContextClose(c Handle) int
	Fence(c Ctx) int
	Quiet(c Ctx) int
	Progress(c Ctx) uint64

	Barrier() int
	// PE returns fam_get_option's PE_ID and PE_COUNT.
	PE() (id, count, code int)
}

// Listed is one entry of a region or item listing.
type Listed struct {
	Name         string
	Offset, Size uint64
	Mode         uint32
	UID, GID     uint32
}
