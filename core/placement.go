package core

import (
	"github.com/gofam/openfam/core/metadata"
)

// Placer puts regions on memory servers. famd's metadata service sets one
// in Options; an instance without one keeps every region in its own
// files. The core keeps the catalogue and the allocator of a placed
// region (names, permissions, item offsets) and calls the Placer for
// everything that touches its bytes, which live in one segment per
// memory server (see package stripe for the layout).
//
// Methods are called without core locks held, except Zero, which runs
// under the region's lock (it is part of making a block an item). They
// return errors worded for the user (the core adds the API call's name).
type Placer interface {
	// Place decides where a new region goes: nil servers keep it in this
	// instance's own storage; otherwise the memory server ids (in
	// interleave order, never 0) and the block size.
	Place(name string, size uint64, attr RegionAttr) (servers []uint64, block uint64, err error)
	// Create makes the region's segment on each of its servers.
	Create(rec metadata.Region) error
	// Resize sets every segment to the size rec.Size needs.
	Resize(rec metadata.Region) error
	// Destroy deletes the region's segments, best effort.
	Destroy(rec metadata.Region)
	// Zero clears region bytes [off, off+n) on the servers holding them.
	Zero(rec metadata.Region, off, n uint64) error
	// ReadAt and WriteAt move region bytes [off, off+len(b)) between the
	// servers and b, for what the instance itself does with an item's
	// bytes (backup and restore). b is at most a few MiB.
	ReadAt(rec metadata.Region, off uint64, b []byte) error
	WriteAt(rec metadata.Region, off uint64, b []byte) error
}

// Placed reports whether a region's bytes live on memory servers rather
// than in the instance's own files (server id 0 is the instance itself).
func Placed(rec metadata.Region) bool { return len(rec.Servers) > 0 && rec.Servers[0] != 0 }

// MinRegionSize is the least a region holds, whatever size it was created
// with: OpenFAM rounds every region's heap up to 1 MiB (its
// MIN_REGION_SIZE), so ten 1 KiB items fit in an "8 KiB" region, and
// programs written for it rely on that. fam_stat still reports the size
// asked for.
const MinRegionSize = 1 << 20

// Capacity is the bytes region rec can hold: its size, at least
// MinRegionSize.
func Capacity(rec metadata.Region) uint64 { return max(rec.Size, MinRegionSize) }

// DefaultInterleaveSize is the interleave block size of a region when the
// service configures none: OpenFAM's default dataitem_interleave_size.
const DefaultInterleaveSize = 1 << 20

// interleaveOf is the interleave size fam_stat reports for region rec:
// its block size, or the default for a region recorded without one (never
// 0, which OpenFAM programs would divide by).
func interleaveOf(rec metadata.Region) uint64 {
	if rec.InterleaveSize == 0 {
		return DefaultInterleaveSize
	}
	return rec.InterleaveSize
}

// Placement is where a placed item's bytes are: its region's record (with
// servers and block size), the item's offset and size in the region, and
// the rights of the handle's identity on it.
type Placement struct {
	Region       metadata.Region
	Offset, Size uint64
	Rights       Rights
}

// Placement describes the item's placement; ok is false when its region
// is not placed on memory servers or the handle is not usable.
func (it *Item) Placement() (p Placement, ok bool) {
	v, err := it.use("fam_placement", 0)
	if err != nil || v.rs == nil {
		return Placement{}, false
	}
	// The record is read under the region's lock: a region-level chmod
	// replaces it (its servers never change, its mode does).
	v.rs.mu.Lock()
	rec := v.rs.rec
	v.rs.mu.Unlock()
	if !Placed(rec) {
		return Placement{}, false
	}
	return Placement{Region: rec, Offset: it.g.Offset, Size: v.size, Rights: v.rights}, true
}

// notHere is the error of a data-path call on a placed item in the
// instance that only keeps its catalogue (famd's metadata service):
// clients reach those bytes on the memory servers' data planes, and the
// instance itself only through the Placer (backup and restore).
func (it *Item) notHere(op string) error {
	return Errorf(CodeUnimplemented, op, "data item {%d, %d} lives on memory servers; this famd keeps only its catalogue and cannot %s it (clients reach the bytes on the memory servers directly)", it.g.RegionID, it.g.Offset, op)
}
