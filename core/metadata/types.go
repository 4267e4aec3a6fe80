package metadata

import "errors"

// Region describes one region (heap).
type Region struct {
	ID             uint64 // assigned by CreateRegion, never reused
	Name           string
	Size           uint64   // heap capacity in bytes
	Mode           uint32   // permission bits (0o777 mask)
	UID, GID       uint32   // owner
	Redundancy     uint8    // values as fam_redundancy_level_t
	MemoryType     uint8    // 1 volatile, 2 persistent (fam_memory_type_t)
	Interleave     uint8    // fam_interleave_t
	PermLevel      uint8    // 1 region, 2 data item (fam_permission_level_t)
	InterleaveSize uint64   // bytes per stripe block (0: not striped)
	Servers        []uint64 // memory server ids, in interleave order
	Created        int64    // unix nanoseconds
}

// Item describes one data item. (RegionID, Offset) locates it: the
// catalogue holds at most one item at an offset at a time. Offsets are
// reused once an item is deleted, so (RegionID, Offset, Gen) identifies one
// incarnation of an item for good: handles bind to it, and an event about
// an old incarnation never reaches a newer item at the same offset.
type Item struct {
	RegionID uint64
	Offset   uint64 // byte offset of the item in its region heap
	Size     uint64 // size asked for (the heap block may be larger)
	Name     string // "" for unnamed items
	Mode     uint32
	UID, GID uint32
	Created  int64
	// Gen is the item's incarnation number, assigned by PutItem from a
	// counter of the store that is never reused (it survives restarts
	// and crashes); 0 only for items written by a release that had no
	// incarnations.
	Gen uint64
}

// Errors returned by Store methods.
var (
	ErrNotFound = errors.New("not found")
	ErrExists   = errors.New("already exists")
	ErrLocked   = errors.New("metadata store is locked by another process")
	ErrClosed   = errors.New("metadata store is closed")
	ErrCorrupt  = errors.New("metadata store is corrupt")
)
