package core

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Fam is an initialized OpenFAM instance: the Go counterpart of
// openfam::fam after fam_initialize. Every method is safe for concurrent use.
//
// With no server configured an instance serves everything itself (the
// embedded mode): metadata in a bbolt store under Options.DataDir, each
// region a file mapped into this process.
type Fam struct {
	*famState
	uid uint32 // identity permission checks use (see As)
	gid uint32
}

// famState is the instance proper, shared by every identity view of it.
type famState struct {
	opts    Options
	peID    int
	peCount int
	// b serves the control path: local (embedded) or remote (famd).
	b backend

	mu       sync.Mutex  // guards the maps below, and the local backend's (see local)
	items    handleIndex // first open handle of each incarnation (see handles.go)
	rhandles map[uint64]map[*Region]struct{}
	lazy     map[*Item]struct{} // unresolved item handles
	contexts map[*Context]struct{}
	// items holds open item handles by incarnation (handles.go); keys
	// maps the famd key of each open famd-served handle's view to the
	// handle, so that a revocation event finds it at once. It is part of
	// the handle bookkeeping (bindLocked), empty in embedded mode, whose
	// views have no key.
	keys keyIndex
	// creating counts the calls under way that make item handles
	// (allocate, lookup, restore into a new item); doomed holds the ids
	// of the regions destroyed while any was, so that a handle on an item
	// made in one meanwhile is refused (bindItemLocked). It is emptied
	// whenever no such call is under way.
	creating int
	doomed   map[uint64]struct{}

	def    *Context
	closed atomic.Bool

	// persist is the dirty list of persistent items (persist.go).
	persist persistState
}

// As returns a view of the instance that acts for another identity: every
// permission check of calls made through it, and of handles it returns,
// uses uid and gid. Servers (famd) use one view per authenticated client.
// The view shares everything else; finalizing any view finalizes the
// instance.
func (f *Fam) As(uid, gid uint32) *Fam {
	return &Fam{famState: f.famState, uid: uid, gid: gid}
}

// Identity returns the uid and gid permission checks use for this view.
func (f *Fam) Identity() (uid, gid uint32) { return f.uid, f.gid }

// Initialize starts an instance with opts (see DefaultOptions). It creates
// the data directories if needed and opens the metadata store; a store held
// by another process is reported with CodeResource after a short timeout.
func Initialize(opts Options) (*Fam, error) {
	const op = "fam_initialize"
	if err := applyPEConfig(&opts); err != nil {
		return nil, Errorf(CodeInvalid, op, "%v", err)
	}
	if err := checkSettings(opts.Settings); err != nil {
		return nil, err
	}
	if err := checkPersist(&opts); err != nil {
		return nil, err
	}
	opts.resolveDirs()
	f := &Fam{famState: newFamState(opts)}
	f.uid, f.gid = uint32(os.Getuid()), uint32(os.Getgid())
	if opts.UID >= 0 {
		f.uid = uint32(opts.UID)
	}
	if opts.GID >= 0 {
		f.gid = uint32(opts.GID)
	}
	f.def = &Context{f: f}
	f.peID, f.peCount = launcherRank()
	if opts.PEID >= 0 {
		f.peID = opts.PEID
	}
	if opts.PECount > 0 {
		f.peCount = opts.PECount
	}
	if opts.Server != "" {
		if f.opts.DefaultMemoryType == MemoryDefault {
			f.opts.DefaultMemoryType = Volatile
		}
		r, err := dialRemote(opts)
		if err != nil {
			var e *Error
			if errors.As(err, &e) {
				return nil, &Error{Code: e.Code, Op: op, Msg: e.Msg}
			}
			return nil, Errorf(CodeRPC, op, "%v", err)
		}
		f.b = r
		hook := f.keyRevoked
		r.revoked.Store(&hook)
		return f, nil
	}
	if f.opts.DefaultMemoryType == MemoryDefault {
		f.opts.DefaultMemoryType = Volatile
		if strings.EqualFold(opts.Settings["FAM_DEFAULT_MEMORY_TYPE"], "persistent") {
			f.opts.DefaultMemoryType = Persistent
		}
	}
	l, err := newLocal(op, f.opts)
	if err != nil {
		return nil, err
	}
	f.b = l
	return f, nil
}

// newFamState makes the mode-independent part of an instance; the caller
// sets its backend and its default context.
func newFamState(opts Options) *famState {
	fs := &famState{
		opts:     opts,
		rhandles: map[uint64]map[*Region]struct{}{},
		lazy:     map[*Item]struct{}{},
		contexts: map[*Context]struct{}{},
		doomed:   map[uint64]struct{}{},
	}
	return fs
}

// loadStoreID returns the random id of the store in dir, making one the
// first time. Volatile region files are named after it so that two stores
// sharing one tmpfs directory never collide.
func loadStoreID(dir string) (string, error) {
	p := filepath.Join(dir, "store-id")
	b, err := os.ReadFile(p)
	if err == nil && len(strings.TrimSpace(string(b))) > 0 {
		return strings.TrimSpace(string(b)), nil
	}
	var r [8]byte
	if _, err := rand.Read(r[:]); err != nil {
		return "", err
	}
	id := hex.EncodeToString(r[:])
	tmp := p + ".tmp" + strconv.Itoa(os.Getpid())
	if err := os.WriteFile(tmp, []byte(id+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("writing %s: %w", p, err)
	}
	if err := os.Rename(tmp, p); err != nil {
		return "", fmt.Errorf("writing %s: %w", p, err)
	}
	return id, nil
}

// LostVolatileRegions names the volatile regions Initialize dropped
// because their memory did not survive (the machine rebooted since), so
// that famd can log them.
func (f *Fam) LostVolatileRegions() []string { return f.b.lostVolatile() }

// check returns CodeInvalid once the instance is finalized.
func (f *Fam) check(op string) error {
	if f == nil || f.closed.Load() {
		return Errorf(CodeInvalid, op, "OpenFAM is not initialized (call fam_initialize first, not after fam_finalize)")
	}
	return nil
}

// Finalize waits for outstanding operations, releases every handle, retires
// every mapping (see scrubMapping) and closes the store. Handles used
// afterwards fail with CodeInvalid. A second call fails with CodeInvalid.
func (f *Fam) Finalize() error {
	if err := f.check("fam_finalize"); err != nil {
		return err
	}
	f.mu.Lock()
	ctxs := make([]*Context, 0, len(f.contexts)+1)
	ctxs = append(ctxs, f.def)
	for c := range f.contexts {
		ctxs = append(ctxs, c)
	}
	f.mu.Unlock()
	var firstErr error
	for _, c := range ctxs {
		if err := c.Quiet(); err != nil && firstErr == nil {
			firstErr = err
		}
	}
	if !f.closed.CompareAndSwap(false, true) {
		return Errorf(CodeInvalid, "fam_finalize", "already finalized")
	}
	// No revocation events may reach handles being torn down.
	f.b.quiesce()
	f.mu.Lock()
	var notify []*Item
	f.items.each(func(_ itemKey, head *Item) {
		for it := head; it != nil; it = it.hnext {
			it.state.Store(stateClosed)
			notify = append(notify, it)
		}
	})
	for it := range f.lazy {
		it.state.Store(stateClosed)
		notify = append(notify, it)
	}
	for _, set := range f.rhandles {
		for r := range set {
			r.state.Store(stateClosed)
		}
	}
	var views []*itemView
	f.items.each(func(_ itemKey, head *Item) {
		for it := head; it != nil; it = it.hnext {
			if v := it.view.Load(); v != nil {
				views = append(views, v)
			}
		}
	})
	f.items, f.lazy, f.rhandles = handleIndex{}, nil, nil
	f.mu.Unlock()
	for _, it := range notify {
		it.retireMaps()
		it.fire()
	}
	if err := f.b.close(f, views); err != nil && firstErr == nil {
		firstErr = err
	}
	return firstErr
}

// PEID returns this PE's rank in the job (0 when run alone).
func (f *Fam) PEID() int { return f.peID }

// PECount returns the number of PEs in the job (1 when run alone).
func (f *Fam) PECount() int { return f.peCount }

// Barrier waits until every PE of the job has called Barrier. Alone it
// returns at once. A multi-PE job meets at its famd (OPENFAM_SERVER, set by
// famrun); an embedded instance in a multi-PE job gets CodeUnimplemented.
func (f *Fam) Barrier() error {
	if err := f.check("fam_barrier_all"); err != nil {
		return err
	}
	if err := f.def.Quiet(); err != nil {
		return err
	}
	if f.peCount <= 1 {
		return nil
	}
	return f.b.barrier(f, "fam_barrier_all")
}

// Abort ends the job with status. Alone, it flushes what it can and exits
// the process; it returns only if the instance is not initialized.
func (f *Fam) Abort(status int) error {
	if err := f.check("fam_abort"); err != nil {
		return err
	}
	f.b.sync(f)
	// With famrun (or any launcher) a non-zero exit stops the whole job.
	os.Exit(status)
	return nil
}

// Option returns the value of an OpenFAM option: an int for PE_ID and
// PE_COUNT, a uint64 for LOC_BUF_SIZE, a string otherwise. Unknown names
// fail with CodeInvalid.
func (f *Fam) Option(name string) (any, error) {
	if err := f.check("fam_get_option"); err != nil {
		return nil, err
	}
	switch name {
	case "VERSION":
		return APIVersion, nil
	case "PE_ID":
		return f.peID, nil
	case "PE_COUNT":
		return f.peCount, nil
	}
	def, ok := optionDefaults[name]
	if !ok {
		return nil, Errorf(CodeInvalid, "fam_get_option", "unknown option %q (fam_list_options lists the names)", name)
	}
	v, set := f.opts.Settings[name]
	if !set {
		v = def
	}
	if name == "OPENFAM_MODEL" {
		v = f.b.model(v)
	}
	if name == "FAM_DEFAULT_MEMORY_TYPE" && !set {
		v = "volatile"
		if f.opts.DefaultMemoryType == Persistent {
			v = "persistent"
		}
	}
	if name == "LOC_BUF_SIZE" {
		n, err := strconv.ParseUint(v, 0, 64)
		if err != nil {
			return uint64(0), nil
		}
		return n, nil
	}
	return v, nil
}

// scrubMapping replaces the pages of mapping m with anonymous zero pages
// (reserved, not backed, until touched) instead of unmapping it, so that a
// thread racing with Finalize that still copies through an address it read
// before reads zeros or writes to a private page rather than faulting. The
// file's pages are released; the address range stays reserved for the life
// of the process, so it is never reused for other data a stale access could
// corrupt.
func scrubMapping(m []byte) {
	if len(m) == 0 {
		return
	}
	_, _ = unix.MmapPtr(-1, 0, unsafe.Pointer(&m[0]), uintptr(len(m)),
		unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_FIXED|unix.MAP_NORESERVE)
}

// retireMaps is unmapAll for Finalize: the fam_map mappings of the item are
// scrubbed (scrubMapping), not unmapped, since another thread of the program
// may still be using one.
func (it *Item) retireMaps() {
	it.wmu.Lock()
	maps := it.maps
	it.maps = nil
	it.wmu.Unlock()
	for _, m := range maps {
		scrubMapping(m)
	}
}
