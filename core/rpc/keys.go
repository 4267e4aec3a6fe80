package rpc

import (
	"crypto/rand"
	"os"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/gofam/openfam/core"
	"github.com/gofam/openfam/core/internal/hashindex"
	"github.com/gofam/openfam/core/transport"
)

// entry is one issued key: a server-side item handle opened through the
// identity the key was issued to, so it carries that identity's rights.
type entry struct {
	key transport.Key
	it  *core.Item
	id  identity
	// servers holds the memory servers the key was granted on, for a
	// placed item (nil otherwise).
	servers []uint64
	// session is the client session the key was issued in (0: none); its
	// end revokes the key.
	session uint64
	// quiet is set while the key's own session deallocates the item
	// through this key (Server.Deallocate): the session is not told of
	// the revocation the deallocation causes (see quietRevoke).
	quiet atomic.Int32
}

// States of entry.quiet.
const (
	quietOff        = iota // revocations are told to the session
	quietOn                // a deallocation by the key's session is under way
	quietSuppressed        // and a revocation was not told
)

// quietRevoke reports whether the revocation of e need not be told to its
// session, recording that it was not (see Server.Deallocate).
func (e *entry) quietRevoke() bool { return e.quiet.CompareAndSwap(quietOn, quietSuppressed) }

// keyTable maps keys to entries. A key lives until CloseItem, or until the
// item's handle reports a change (permissions, deallocation, region
// destroyed or remapped): then it is revoked and its holder must resolve
// the item again, which re-runs the permission check.
//
// Every fam_allocate, fam_lookup and fam_close through famd adds or
// forgets a key, and famd holds one per open client handle: with a million
// of them a Go map costs about three cache misses a probe, the
// hashindex.KeyTable (key and entry side by side in one array) one
// (issue 18).
type keyTable struct {
	mu sync.RWMutex
	m  hashindex.KeyTable[transport.Key, entry]
	// onRevoke, when set, runs after an entry is forgotten (withdrawing
	// the key from memory servers, telling its session). byHolder says
	// the key's holder gave it up itself (CloseItem): its session already
	// knows.
	onRevoke func(e *entry, byHolder bool)
	// fabric, when set, is famd's own libfabric endpoint: every key
	// forgotten is withdrawn from it too (see fabric.go), including at
	// closeAll, which drops onRevoke.
	fabric transport.FabricServer
}

func newKeyTable() *keyTable { return &keyTable{} }

// add issues a fresh key for it (which the table then owns) acting for id.
func (t *keyTable) add(it *core.Item, id identity, session uint64) *entry {
	e := &entry{it: it, id: id, session: session}
	// crypto/rand.Read never fails (it aborts the process if the kernel
	// has no randomness), so its error is not checked.
	_, _ = rand.Read(e.key[:])
	// A change that fires before the key is published finds nothing to
	// revoke; that is harmless because Resolve and OpenFD read the
	// handle's current rights and validity on every use.
	it.Watch(func() { t.revoke(e) })
	t.mu.Lock()
	if old := t.m.Get(e.key); old != nil {
		old.P = e // a repeated random key: the new entry wins, as in a map
	} else {
		t.m.Add(hashindex.Key16[transport.Key, entry]{K: e.key, P: e})
	}
	t.mu.Unlock()
	return e
}

// get returns the live entry for key.
func (t *keyTable) get(key transport.Key) (*entry, bool) {
	t.mu.RLock()
	var e *entry
	if x := t.m.Get(key); x != nil {
		e = x.P
	}
	t.mu.RUnlock()
	return e, e != nil
}

// revoke forgets e's key and releases its handle. It runs from the
// handle's watcher (no core lock held) and when famd drops keys itself; a
// second call for the same entry, or one after release, does nothing.
func (t *keyTable) revoke(e *entry) { t.forget(e, false) }

// release is revoke for CloseItem: the key's holder gave it up, so its
// session is not told (see Server.Session). The client has dropped the
// key before asking, and an event per fam_close costs both sides a gRPC
// stream write and read, several goroutine wake-ups each, on the control
// path's critical cores (issue 19).
func (t *keyTable) release(e *entry) { t.forget(e, true) }

// forget is revoke and release.
func (t *keyTable) forget(e *entry, byHolder bool) {
	t.mu.Lock()
	x := t.m.Get(e.key)
	live := x != nil && x.P == e
	if live {
		t.m.Remove(x)
	}
	onRevoke, fab := t.onRevoke, t.fabric
	t.mu.Unlock()
	if !live {
		return
	}
	if fab != nil {
		// Forgotten first, withdrawn second: a FabricKey request racing
		// with this finds the key gone when it looks again.
		fab.Withdraw(e.key)
	}
	e.it.Watch(nil)
	if onRevoke != nil {
		onRevoke(e, byHolder)
	}
	// The handle may already be released (deallocated, region destroyed);
	// then Close reports it and there is nothing left to do.
	_ = e.it.Close()
}

// revokeSession revokes every key issued in session id.
func (t *keyTable) revokeSession(id uint64) {
	t.mu.Lock()
	var es []*entry
	t.eachLocked(func(e *entry) {
		if e.session == id {
			es = append(es, e)
		}
	})
	t.mu.Unlock()
	for _, e := range es {
		t.revoke(e)
	}
}

// closeAll revokes every key (famd shutting down).
func (t *keyTable) closeAll() {
	t.mu.Lock()
	// Withdrawing every key from memory servers one call at a time could
	// hold a shutdown for minutes when one is unreachable; the grants die
	// instead with the next start's first grant (a new epoch).
	t.onRevoke = nil
	es := make([]*entry, 0, t.m.Len())
	t.eachLocked(func(e *entry) { es = append(es, e) })
	t.mu.Unlock()
	for _, e := range es {
		t.revoke(e)
	}
}

// eachLocked calls fn for every live entry; the caller holds t.mu (read
// or write) and fn must not add or forget keys.
func (t *keyTable) eachLocked(fn func(e *entry)) {
	t.m.Each(func(x *hashindex.Key16[transport.Key, entry]) { fn(x.P) })
}

func (t *keyTable) len() int {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.m.Len()
}

// Resolve implements transport.Memory: the bytes of the item key names, as
// mapped in famd, and the key holder's current rights. ok is false for an
// unknown or revoked key. Safe for concurrent use.
func (s *Server) Resolve(key transport.Key) (mem []byte, rights uint8, ok bool) {
	e, ok := s.keys.get(key)
	if !ok {
		return nil, 0, false
	}
	base, size, r, ok := e.it.Local()
	if !ok || r == 0 {
		return nil, 0, false
	}
	return unsafe.Slice((*byte)(base), size), uint8(r), true
}

// itemFile is the one call into core that famd needs for descriptor
// passing: the heap file holding the item and the item's offset in it.
var itemFile = func(it *core.Item) (string, uint64, error) { return it.File() }

// OpenFD implements transport.FDSource: it opens the heap file of the item
// key names for a same-host client to map, read-only unless the key grants
// write (a read-only descriptor cannot be made writable: the file is
// famd's, mode 0600, so reopening /proc/self/fd/N fails for other users).
// The file holds only items of the same access class as this one (see
// core's storage.go): nothing the holder may not access with these
// rights. Write-only keys get no descriptor. The caller owns the file.
func (s *Server) OpenFD(key transport.Key) (f *os.File, offset, size uint64, rights uint8, err error) {
	e, ok := s.keys.get(key)
	if !ok {
		return nil, 0, 0, 0, transport.ErrStaleKey
	}
	_, size, r, ok := e.it.Local()
	if !ok || r == 0 {
		return nil, 0, 0, 0, transport.ErrStaleKey
	}
	if r&core.RightRead == 0 {
		// A shared mapping needs a readable descriptor, and a write-only
		// key must not yield one: such items go through the data plane.
		return nil, 0, 0, 0, &transport.Error{Code: int32(core.CodeNoPerm), Msg: "a write-only data item is not mapped; use the data plane"}
	}
	path, off, err := itemFile(e.it)
	if err != nil {
		return nil, 0, 0, 0, &transport.Error{Code: int32(core.CodeOf(err)), Msg: err.Error()}
	}
	flag := os.O_RDONLY
	if r&core.RightWrite != 0 {
		flag = os.O_RDWR
	}
	// open(2) and os.NewFile rather than os.OpenFile: the descriptor is
	// only passed on, and os.OpenFile would try to register the regular
	// file with the network poller (a failing epoll_ctl) and, when
	// Fd() is asked for to pass it, make it blocking again: four more
	// system calls on every fam_lookup and fam_allocate (issue 19).
	fd, err := unix.Open(path, flag|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	if err != nil {
		return nil, 0, 0, 0, &transport.Error{Code: int32(core.CodeResource), Msg: (&os.PathError{Op: "open", Path: path, Err: err}).Error()}
	}
	return os.NewFile(uintptr(fd), path), off, size, uint8(r), nil
}
