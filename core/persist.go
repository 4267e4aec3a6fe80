package core

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/gofam/openfam/core/stripe"
	"github.com/gofam/openfam/core/transport"
)

// Persistence (issue 20). For a persistent region, when Quiet returns nil
// every put, scatter, copy and atomic issued before it is on stable storage
// at the server holding it: the persist point of librpmem's rpmem_persist.
// A blocking put is visible to others at once but durable only at the next
// Quiet (or Item.Persist), unless the policy is PersistEach.
//
// Tracking. Each item handle has one flag, Item.pdirty. A write to a
// persistent item tests it (one atomic load, no store, after the first
// write) and, the first time after a flush, sets it and appends the handle
// to the instance's dirty list. Quiet (on any context: flushing more than
// asked is only safer) takes the list, clears the flags, and then makes
// each listed item durable:
//
//   - mapped in this process (embedded store, or famd on this host over
//     its Unix socket): msync(MS_SYNC) of the item's pages. The kernel
//     writes only the pages that are dirty, so the cost follows what was
//     written, not the item's size; no call into famd.
//   - served through a data plane (famd over TCP, memory servers): one
//     Commit frame (wire.OpCommit) per item and server, all in flight at
//     once; each server msyncs the range before it answers.
//
// Nothing is listed for volatile items, so Quiet on them costs one load of
// an empty list. Flags are cleared before the flush: a write racing with
// it lists its item again, and a write that completed before is in a page
// the flush writes.
//
// fam_map mappings are written by plain stores the library never sees:
// every writable mapping of a persistent item is msynced at each Quiet.

// PersistPolicy says when writes to persistent regions reach stable
// storage ($OPENFAM_PERSIST).
type PersistPolicy uint8

const (
	// PersistQuiet (default, "quiet"): durable when Quiet or Persist returns.
	PersistQuiet PersistPolicy = iota
	// PersistEach ("each"): every blocking call is durable when it returns;
	// non-blocking ones at the next Quiet.
	PersistEach
	// PersistLazy ("lazy"): Quiet does not wait for stable storage; a
	// background flush every Options.PersistInterval does (and Persist,
	// when called, still does at once).
	PersistLazy
)

// DefaultPersistInterval is the lazy policy's flush period when
// $OPENFAM_PERSIST_INTERVAL is unset.
const DefaultPersistInterval = 5 * time.Second

func (p PersistPolicy) String() string {
	switch p {
	case PersistQuiet:
		return "quiet"
	case PersistEach:
		return "each"
	case PersistLazy:
		return "lazy"
	}
	return fmt.Sprintf("PersistPolicy(%d)", uint8(p))
}

// ParsePersistPolicy reads "quiet", "each" or "lazy" (any case; "" is
// quiet).
func ParsePersistPolicy(s string) (PersistPolicy, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "quiet":
		return PersistQuiet, nil
	case "each":
		return PersistEach, nil
	case "lazy":
		return PersistLazy, nil
	}
	return PersistQuiet, fmt.Errorf("OPENFAM_PERSIST=%q: want quiet, each or lazy", s)
}

// persistFromEnv fills the persistence options from the environment;
// errors are kept for Initialize to report (DefaultOptions cannot fail).
func (o *Options) persistFromEnv() {
	if v, ok := os.LookupEnv("OPENFAM_PERSIST"); ok {
		p, err := ParsePersistPolicy(v)
		o.Persist = p
		if err != nil {
			o.persistErr = err
		}
	}
	if v := os.Getenv("OPENFAM_PERSIST_INTERVAL"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			o.persistErr = fmt.Errorf("OPENFAM_PERSIST_INTERVAL=%q: want a positive Go duration such as 5s", v)
		} else {
			o.PersistInterval = d
		}
	}
}

// checkPersist validates the persistence options at Initialize.
func checkPersist(o *Options) error {
	if o.persistErr != nil {
		return Errorf(CodeInvalid, "fam_initialize", "%v", o.persistErr)
	}
	if o.Persist > PersistLazy {
		return Errorf(CodeInvalid, "fam_initialize", "unknown persistence policy %d", o.Persist)
	}
	if o.PersistInterval < 0 {
		return Errorf(CodeInvalid, "fam_initialize", "negative persistence interval %v", o.PersistInterval)
	}
	if o.PersistInterval == 0 {
		o.PersistInterval = DefaultPersistInterval
	}
	return nil
}

// PersistPolicy returns the instance's persistence policy.
func (f *Fam) PersistPolicy() PersistPolicy { return f.opts.Persist }

// PersistInterval returns the lazy policy's flush period.
func (f *Fam) PersistInterval() time.Duration {
	if f.opts.PersistInterval <= 0 {
		return DefaultPersistInterval
	}
	return f.opts.PersistInterval
}

// persistState is the instance's dirty list (see the top of this file).
type persistState struct {
	mu    sync.Mutex
	dirty []*Item
	// maps are the writable fam_map mappings of persistent items.
	maps map[uintptr][]byte
	// hook, set by the C library, flushes what its fast path wrote.
	hook func() error
	// ticker runs the lazy flush; started on the first dirty write.
	tickOnce sync.Once
	// flushMu serialises flushes: a Quiet that finds the list empty
	// because a concurrent one took it must not return before that one
	// has written the items out.
	flushMu sync.Mutex
}

// SetPersistHook registers fn, called by every flush (Quiet, the lazy
// flush) before the instance's own: the C library flushes through it the
// pages its fast path wrote without entering Go.
func (f *Fam) SetPersistHook(fn func() error) {
	f.persist.mu.Lock()
	f.persist.hook = fn
	f.persist.mu.Unlock()
	if f.opts.Persist == PersistLazy {
		// Writes listed by the hook's owner never pass through wrote,
		// which otherwise starts the timer.
		f.persist.tickOnce.Do(func() { go f.lazyFlusher() })
	}
}

// wrote records a completed write to item it through view v: nb says the
// call was non-blocking. Cheap when v is not persistent or the item is
// already listed.
func (f *Fam) wrote(it *Item, v *itemView, nb bool) error {
	if !v.persist {
		return nil
	}
	if f.opts.Persist == PersistEach && !nb {
		return it.flushView(v, 0, v.size)
	}
	if it.pdirty.Load() {
		return nil
	}
	if it.pdirty.CompareAndSwap(false, true) {
		f.persist.mu.Lock()
		f.persist.dirty = append(f.persist.dirty, it)
		f.persist.mu.Unlock()
		if f.opts.Persist == PersistLazy {
			f.persist.tickOnce.Do(func() { go f.lazyFlusher() })
		}
	}
	return nil
}

// lazyFlusher flushes the dirty list every PersistInterval until the
// instance is finalized.
func (f *Fam) lazyFlusher() {
	t := time.NewTicker(f.PersistInterval())
	defer t.Stop()
	for range t.C {
		if f.closed.Load() {
			return
		}
		_ = f.flushDirty("openfam lazy flush")
	}
}

// quietFlush is Quiet's part: under the lazy policy nothing (the
// background flush does it), otherwise the whole dirty list.
func (f *Fam) quietFlush(op string) error {
	if f.opts.Persist == PersistLazy {
		return nil
	}
	return f.flushDirty(op)
}

// flushDirty makes every listed item, every writable fam_map mapping of a
// persistent item and the C fast path's writes durable. Items served by
// data planes are committed in parallel.
func (f *Fam) flushDirty(op string) error {
	ps := &f.persist
	ps.flushMu.Lock()
	defer ps.flushMu.Unlock()
	ps.mu.Lock()
	list := ps.dirty
	ps.dirty = nil
	hook := ps.hook
	var maps [][]byte
	for _, m := range ps.maps {
		maps = append(maps, m)
	}
	ps.mu.Unlock()
	var first error
	keep := func(err error) {
		if err != nil && first == nil {
			first = err
		}
	}
	if hook != nil {
		keep(hook())
	}
	for _, m := range maps {
		keep(msyncErr(op, m))
	}
	if len(list) == 0 {
		return first
	}
	var remote []*Item
	for _, it := range list {
		it.pdirty.Store(false)
	}
	for _, it := range list {
		v := it.view.Load()
		if v == nil || (it.state.Load() != stateOpen && v.mem == nil) {
			// Released: Close flushed it (flushOnRelease), or a
			// deallocation freed its bytes. A mapping stays valid
			// until Finalize, and an msync of it costs little.
			continue
		}
		if v.mem != nil {
			keep(it.flushView(v, 0, v.size))
		} else {
			remote = append(remote, it)
		}
	}
	if len(remote) == 1 {
		v := remote[0].view.Load()
		keep(remote[0].flushView(v, 0, v.size))
	} else if len(remote) > 1 {
		errs := make([]error, len(remote))
		var wg sync.WaitGroup
		for i, it := range remote {
			wg.Add(1)
			go func() {
				defer wg.Done()
				v := it.view.Load()
				errs[i] = it.flushView(v, 0, v.size)
			}()
		}
		wg.Wait()
		for _, err := range errs {
			keep(err)
		}
	}
	return first
}

// flushOnRelease flushes a listed handle being closed (see Close). Errors
// are dropped: Close reports on the handle, and the write to stable
// storage of a closed handle's item has no one left to tell.
func (it *Item) flushOnRelease() {
	if !it.pdirty.Load() || it.f.opts.Persist == PersistLazy {
		return
	}
	if v := it.view.Load(); v != nil && v.persist {
		_ = it.flushView(v, 0, v.size)
	}
}

// flushView makes bytes [off, off+n) of the item durable: an msync of this
// process's mapping, or a commit on every server holding them.
func (it *Item) flushView(v *itemView, off, n uint64) error {
	const op = "fam_persist"
	if n == 0 || !v.persist {
		return nil
	}
	if v.mem != nil {
		if err := transport.MsyncRange(v.mem[off : off+n]); err != nil && !errors.Is(err, unix.ENOMEM) {
			// ENOMEM: the mapping went with a released view, and
			// with it the need.
			return Errorf(CodeResource, op, "writing data item {%d, %d} to stable storage: %v", it.g.RegionID, it.g.Offset, err)
		}
		if v.heap != nil {
			return v.heap.syncDirOnce()
		}
		return nil
	}
	if v.dp == nil {
		return it.notHere(op)
	}
	return it.remoteData(op, func(v *itemView) error {
		if v.mem != nil { // renewed and now mapped here
			return transport.MsyncRange(v.mem[off : off+n])
		}
		return commitPlane(v.dp, v.key, off, n)
	})
}

// committer is a data plane that can make ranges durable on its server
// (transport.Client, stripedPlane).
type committer interface {
	CommitAsync(key transport.Key, off, n uint64) *transport.Call
}

// commitPlane commits through d. A data plane without Commit (a test
// double) is taken to make its writes durable itself.
func commitPlane(d DataPlane, key transport.Key, off, n uint64) error {
	c, ok := d.(committer)
	if !ok {
		return nil
	}
	return c.CommitAsync(key, off, n).Wait()
}

// CommitAsync implements committer: one commit per server for the share
// of [off, off+n) it holds, all in flight at once.
func (p *stripedPlane) CommitAsync(key transport.Key, off, n uint64) *transport.Call {
	type span struct{ lo, hi uint64 }
	per := map[int]*span{}
	p.lay.Pieces(p.base, p.starts, off, n, func(pc stripe.Piece) {
		s := per[pc.Server]
		if s == nil {
			per[pc.Server] = &span{pc.Off, pc.Off + pc.Len}
			return
		}
		s.lo, s.hi = min(s.lo, pc.Off), max(s.hi, pc.Off+pc.Len)
	})
	calls := make([]*transport.Call, 0, len(per))
	for j, s := range per {
		c, err := p.client(j)
		if err != nil {
			calls = append(calls, transport.DoneCall(err))
			continue
		}
		calls = append(calls, commitAsyncOn(c, key, s.lo, s.hi-s.lo))
	}
	return transport.Group(calls...)
}

// Persist makes bytes [off, off+n) of the item durable now, whatever the
// policy, if its region is persistent (for a volatile one it only checks
// its arguments): fam_persist. Operations still in flight on a context
// are not waited for (Quiet does that). Errors: CodeInvalid (bad handle, n
// 0), CodeOutOfRange, CodeNoPerm (no read or write right), CodeResource
// (the write to stable storage failed), CodeRPC (a server did not answer).
func (it *Item) Persist(off, n uint64) error {
	const op = "fam_persist"
	v, err := it.use(op, 0)
	if err != nil {
		return err
	}
	if err := span(op, it, off, n, v.size); err != nil {
		return err
	}
	if !v.persist {
		return nil
	}
	if err := it.flushView(v, off, n); err != nil {
		return err
	}
	// fam_map mappings of this handle are written by plain stores.
	it.wmu.Lock()
	maps := make([][]byte, 0, len(it.maps))
	for _, m := range it.maps {
		maps = append(maps, m)
	}
	it.wmu.Unlock()
	for _, m := range maps {
		if err := msyncErr(op, m); err != nil {
			return err
		}
	}
	return nil
}

// Persistent reports whether the item's region is persistent (false for
// a released or unresolvable handle).
func (it *Item) Persistent() bool {
	v, err := it.use("fam_persist", 0)
	return err == nil && v.persist
}

// trackMap records a writable fam_map mapping of a persistent item, which
// every flush msyncs; untrackMap forgets it (unmapped).
func (f *Fam) trackMap(v *itemView, m []byte) {
	if !v.persist || v.rights&RightWrite == 0 || len(m) == 0 {
		return
	}
	f.persist.mu.Lock()
	if f.persist.maps == nil {
		f.persist.maps = map[uintptr][]byte{}
	}
	f.persist.maps[uintptr(unsafe.Pointer(&m[0]))] = m
	f.persist.mu.Unlock()
}

func (f *Fam) untrackMap(m []byte) {
	if len(m) == 0 {
		return
	}
	f.persist.mu.Lock()
	delete(f.persist.maps, uintptr(unsafe.Pointer(&m[0])))
	f.persist.mu.Unlock()
}

func msyncErr(op string, m []byte) error {
	if err := transport.MsyncRange(m); err != nil && !errors.Is(err, unix.ENOMEM) {
		return Errorf(CodeResource, op, "writing a mapping to stable storage: %v", err)
	}
	return nil
}

// syncDirOnce makes the heap file's directory entry durable the first
// time the file is flushed: an fdatasync'ed file whose name is lost is
// lost.
func (h *heapFile) syncDirOnce() error {
	h.dirOnce.Do(func() {
		d, err := os.Open(filepath.Dir(h.path))
		if err != nil {
			h.dirErr = err
			return
		}
		h.dirErr = d.Sync()
		d.Close()
	})
	if h.dirErr != nil {
		return Errorf(CodeResource, "fam_persist", "syncing the directory of %s: %v", h.path, h.dirErr)
	}
	return nil
}

// metaDurable makes the catalogue's latest changes survive a power loss
// when they concern a persistent region: region creation, allocation and
// names. Skipped under the lazy policy (the catalogue then survives a
// crash of the process, as before).
func (l *local) metaDurable(f *Fam, op string, memType uint8) error {
	if MemoryType(memType) != Persistent || f.opts.Persist == PersistLazy {
		return nil
	}
	s, ok := l.store.(interface{ Sync() error })
	if !ok {
		return nil
	}
	if err := s.Sync(); err != nil {
		return Errorf(CodeResource, op, "making the metadata durable: %v", err)
	}
	return nil
}

// regionDurable makes a new persistent region's record and marker file
// survive a power loss before CreateRegion returns (see metaDurable).
func (l *local) regionDurable(f *Fam, op string, rs *regionState) error {
	if MemoryType(rs.rec.MemoryType) != Persistent || f.opts.Persist == PersistLazy {
		return nil
	}
	if rs.base != "" {
		if err := syncDir(filepath.Dir(rs.base)); err != nil {
			return Errorf(CodeResource, op, "making region %q's file durable: %v", rs.rec.Name, err)
		}
	}
	return l.metaDurable(f, op, rs.rec.MemoryType)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
