package core

import (
	"github.com/gofam/openfam/core/metadata"
	"github.com/gofam/openfam/core/transport"
)

// The control path of an instance is served in one of two modes, each an
// implementation of backend:
//
//	            Fam / Region / Item / Context
//	argument checks, handle bookkeeping (handles.go), data path (itemView)
//	                        |
//	                     backend
//	 instanceBackend regionBackend itemBackend backupBackend listBackend
//	          |                                         |
//	        local                                     remote
//	catalogue (Catalog), heap files,          famd: gRPC control plane,
//	Placer for regions on memory servers      keys, revocation events
//	(embedded, and famd's own instance)       (Options.Server)
//
// The public methods check their arguments and handles once, call the
// backend for what the mode decides, and do the handle bookkeeping (binding
// a new handle, releasing a destroyed region's or a deallocated item's
// handles, refreshing views) once, whatever the mode. The data path does
// not go through the backend: an item's view carries its mapping or its
// data plane (see itemView).
//
// Methods take the identity view f (or a handle, which carries it): the
// backend is shared by every view of the instance (see Fam.As), and the
// embedded mode checks permissions with the view's uid and gid. Methods
// whose name ends in Locked are called with f.mu held.
//
// Registering a new item handle is part of the operation that makes the
// item reachable (see bindLocked): a backend calls bindItemLocked while it
// still holds whatever makes the item's creation atomic, so that a racing
// deallocation or region destruction either sees the handle and releases
// it, or happens before and makes the creation fail.
type backend interface {
	instanceBackend
	regionBackend
	itemBackend
	backupBackend
	listBackend
}

// instanceBackend is the instance's own life cycle.
type instanceBackend interface {
	// quiesce stops anything that could reach handles being torn down
	// by Finalize (famd's revocation events).
	quiesce()
	// close ends the mode's state once Finalize has released every
	// handle; views are the views the open item handles had.
	close(f *Fam, views []*itemView) error
	// sync flushes what can be flushed before the process exits (Abort).
	sync(f *Fam)
	// barrier waits for the job's PEs (more than one).
	barrier(f *Fam, op string) error
	// model is the OPENFAM_MODEL option's value given the configured one.
	model(configured string) string
	// localUsage answers Fam.LocalUsage.
	localUsage(f *Fam, op string) (regions int, size, used uint64, err error)
	// lostVolatile names the volatile regions dropped at Initialize.
	lostVolatile() []string
}

// regionBackend serves regions. rec is the region's record as the
// caller's Region.record returned it.
type regionBackend interface {
	createRegion(f *Fam, op, name string, size uint64, mode uint32, attr RegionAttr) (id uint64, err error)
	lookupRegion(f *Fam, op, name string) (id uint64, err error)
	// regionRecord returns region id's record; lazy says the handle has
	// not been used yet, and needs the permission check a lookup does.
	regionRecord(f *Fam, op string, id uint64, lazy bool) (metadata.Region, error)
	// destroyRegion deletes the region; done, if not nil, runs once
	// every handle on it is released (freeing its memory).
	destroyRegion(f *Fam, op string, rec metadata.Region) (done func(), err error)
	resizeRegion(f *Fam, op string, rec metadata.Region, n uint64) error
	changeRegionPermissions(f *Fam, op string, rec metadata.Region, mode uint32) error
	regionUsed(f *Fam, op string, id uint64) (uint64, error)
}

// itemBackend serves data items.
type itemBackend interface {
	// allocate and lookup return a handle bound with bindItemLocked.
	allocate(f *Fam, op string, r *Region, name string, n uint64, mode uint32) (*Item, error)
	lookup(f *Fam, op, item, region string) (*Item, error)
	// resolveLocked finds the item at g and its view for f's identity.
	resolveLocked(f *Fam, op string, g GlobalDesc) (*itemView, metadata.Item, error)
	// itemRecord is the record of the handle's item (its incarnation).
	itemRecord(it *Item, op string) (metadata.Item, error)
	deallocate(it *Item, op string) error
	// changeItemPermissions sets the item's mode, checking that the
	// caller owns it, and renews every open handle of the item (see
	// Fam.renewHandles) before it returns.
	changeItemPermissions(it *Item, op string, mode uint32) error
	// refresh gives an open handle a new view after its rights or its
	// region's mapping changed, remaps its fam_map mappings and tells its
	// watcher. With stale set it renews only a handle whose view still
	// has that famd key. It fails with CodeNotFound when the handle's
	// item is gone.
	refresh(it *Item, op string, stale *transport.Key) error
	// closeView lets go of the view of a handle its holder closed;
	// dropView, of one released because its item or region went.
	closeView(v *itemView)
	dropView(v *itemView)
	// mapItem maps the item for fam_map: the whole mapping m and the
	// item's bytes b in it.
	mapItem(it *Item, op string, v *itemView) (m, b []byte, err error)
	// copier returns the work of a copy between two items whose bytes
	// are not on memory servers, ranges checked.
	copier(op string, src *Item, sv *itemView, srcOff uint64, dst *Item, dv *itemView, dstOff, n uint64) (func() error, error)
}

// backupBackend serves backups; path is the checked backup file path.
type backupBackend interface {
	backup(f *Fam, op string, it *Item, v *itemView, name, path string) (*Wait, error)
	restore(f *Fam, op, name string, dst *Item, v *itemView) (*Wait, error)
	restoreNew(f *Fam, op, name string, r *Region, itemName string, mode uint32) (*Wait, *Item, error)
	deleteBackup(f *Fam, op, name, path string) (*Wait, error)
	listBackups(f *Fam, op, prefix string) (string, error)
}

// listBackend serves listings.
type listBackend interface {
	// listRegions lists the regions: every one, or with visible only
	// those the caller may read or write (famd applies its own rule).
	listRegions(f *Fam, op string, visible bool) ([]metadata.Region, error)
	listItems(f *Fam, op string, rec metadata.Region) (map[uint64]Stat, error)
}

var (
	_ backend = (*local)(nil)
	_ backend = (*remote)(nil)
)
