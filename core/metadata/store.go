package metadata

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// Defaults for zero Options fields.
const (
	DefaultTimeout            = 2 * time.Second
	DefaultCheckpointInterval = 200 * time.Millisecond
	DefaultCheckpointBytes    = 4 << 20
)

// bbolt bucket names.
var (
	bucketRegions = []byte("regions") // region ID -> region record; its sequence is the ID counter
	bucketItems   = []byte("items")   // region ID -> bucket of offset -> item record; its sequence is the incarnation high-water mark
)

// Options tunes a Store. The zero value is usable.
type Options struct {
	// NoSync skips the fsync of bbolt commits (bolt.Options.NoSync): region
	// changes and checkpoints then survive a process crash but not a power
	// loss.
	NoSync bool
	// SyncJournal fdatasyncs the journal after every item change, so item
	// changes survive a power loss too (at the cost of a disk flush each).
	SyncJournal bool
	// Timeout bounds the wait for the file lock of another process
	// (default DefaultTimeout).
	Timeout time.Duration
	// CheckpointInterval is how often pending item changes are folded into
	// bbolt (default DefaultCheckpointInterval).
	CheckpointInterval time.Duration
	// CheckpointBytes starts a checkpoint early once the journal grows past
	// this size (default DefaultCheckpointBytes).
	CheckpointBytes int64
}

// regionState is one region with its items (see itemTable).
type regionState struct {
	r     Region
	items *itemTable
}

// The item changes not yet in bbolt are the records of the journals and
// nothing else: a checkpoint reads them back from the journal it rotated
// out (see commit), so an item change costs its journal write and no
// second copy in memory (no map of pending changes to hash into and grow
// under the catalogue's lock with every allocation).

// Store is the metadata catalogue: an in-memory copy of every region and
// item, a journal of item changes, and a bbolt checkpoint. See the package
// documentation for the design. All methods are safe for concurrent use.
type Store struct {
	dir  string
	opts Options

	// mu guards the catalogue and the active journal; item
	// changes write their journal record while holding it so the journal
	// order is the order the catalogue saw.
	mu          sync.RWMutex
	closed      bool
	jerr        error // set when the journal is unusable; item changes fail with it
	regions     map[uint64]*regionState
	regionNames map[string]uint64
	j           *journal
	// lastGen is the last incarnation number PutItem gave out. Every
	// number it gave is either in a journal record still on disk or at
	// most the high-water mark committed to bbolt, so a restart resumes
	// above all of them.
	lastGen uint64

	// ckptMu serialises checkpoints and guards oldExists and dbClosed; it
	// is taken before mu, never while holding it.
	ckptMu    sync.Mutex
	oldExists bool // metadata.journal.old holds records not yet in bbolt
	dbClosed  bool
	savedGen  uint64 // the incarnation high-water mark committed to bbolt
	db        *bolt.DB

	// syncCkpt is set by the first Sync: from then on a checkpoint under
	// NoSync flushes bbolt before it deletes the journal it folded in, so
	// what Sync made durable stays durable (sync.go).
	syncCkpt atomic.Bool
	// dirGen counts the changes to the directory's names (journals
	// created, renamed, removed) and dbGen the writes to bbolt's file,
	// each counted once done; dirSynced and dbSynced are the counts that
	// Sync last made durable, so that Sync pays for a directory sync or a
	// bbolt flush only when there is something new to flush: a fam_allocate
	// in a persistent region made three syncs (journal, directory, bbolt)
	// where the journal's was the commit (issue 19).
	dirGen, dirSynced atomic.Uint64
	dbGen, dbSynced   atomic.Uint64

	kick chan struct{} // asks the checkpointer for an early checkpoint
	stop chan struct{}
	done chan struct{}
}

// testHooks lets tests stop a checkpoint at its crash points or make its
// commit fail. Set only before Open; nil in production.
var testHooks struct {
	afterRotate func()
	commit      func() error
	afterCommit func()
}

// Open opens (creating if needed) the store in dir: the directory with mode
// 0700, metadata.db and journal files with mode 0600. It loads the bbolt
// checkpoint, replays any journals left by a crash, folds them into bbolt,
// and starts the background checkpointer. Only one process may have a store
// open: if another holds it past opts.Timeout, Open returns an error that
// wraps ErrLocked and names the file. A journal record whose checksum is good
// but whose content is invalid, or an invalid bbolt record, gives ErrCorrupt.
func Open(dir string, opts Options) (*Store, error) {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.CheckpointInterval <= 0 {
		opts.CheckpointInterval = DefaultCheckpointInterval
	}
	if opts.CheckpointBytes <= 0 {
		opts.CheckpointBytes = DefaultCheckpointBytes
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("metadata: create %s: %w", dir, err)
	}
	path := filepath.Join(dir, dbFile)
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: opts.Timeout, NoSync: opts.NoSync})
	if errors.Is(err, berrors.ErrTimeout) {
		return nil, fmt.Errorf("metadata: %s: no lock after %v: %w", path, opts.Timeout, ErrLocked)
	}
	if err != nil {
		return nil, fmt.Errorf("metadata: open %s: %w", path, err)
	}
	s := &Store{
		dir:         dir,
		opts:        opts,
		db:          db,
		regions:     make(map[uint64]*regionState),
		regionNames: make(map[string]uint64),
		kick:        make(chan struct{}, 1),
		stop:        make(chan struct{}),
		done:        make(chan struct{}),
	}
	if err := s.load(); err != nil {
		db.Close()
		return nil, err
	}
	go s.checkpointer()
	return s, nil
}

// load reads bbolt into memory, replays the journals over it, commits the
// result and leaves an empty active journal.
func (s *Store) load() error {
	defer s.dbGen.Add(1) // once the write is done (see dbGen)
	err := s.db.Update(func(tx *bolt.Tx) error {
		rb, err := tx.CreateBucketIfNotExists(bucketRegions)
		if err != nil {
			return err
		}
		ib, err := tx.CreateBucketIfNotExists(bucketItems)
		if err != nil {
			return err
		}
		s.savedGen = ib.Sequence()
		s.lastGen = s.savedGen
		return rb.ForEach(func(k, v []byte) error {
			r, err := decodeRegion(v)
			if err != nil {
				return err
			}
			rs := &regionState{r: r, items: newItemTable()}
			s.regions[r.ID] = rs
			s.regionNames[r.Name] = r.ID
			b := ib.Bucket(u64key(r.ID))
			if b == nil {
				return nil
			}
			return b.ForEach(func(k, v []byte) error {
				it, err := decodeItem(v)
				if err != nil {
					return err
				}
				// bbolt's keys are the offsets, so each comes once, as
				// the table's add needs, as long as the record agrees.
				if len(k) != 8 || binary.BigEndian.Uint64(k) != it.Offset {
					return fmt.Errorf("item record under key %x of region %d says offset %d: %w", k, r.ID, it.Offset, ErrCorrupt)
				}
				rs.items.add(it, 0, false)
				s.lastGen = max(s.lastGen, it.Gen)
				return nil
			})
		})
	})
	if err != nil {
		return fmt.Errorf("metadata: load %s: %w", s.dir, err)
	}

	// Replay may pass through states that clash on names with the loaded
	// ones (bbolt can already hold later changes than an old journal), so
	// it works on offsets only and the name indexes are rebuilt after.
	replay := func(op journalOp) {
		// Even a record of a deleted region or item counts: its number
		// was given out and must not be given again.
		s.lastGen = max(s.lastGen, op.item.Gen)
		rs := s.regions[op.item.RegionID]
		if rs == nil {
			return // its region was deleted after the record was written
		}
		if op.del {
			rs.items.remove(op.item.Offset)
		} else {
			rs.items.put(op.item)
		}
	}
	for _, name := range []string{oldJournal, journalFile} {
		if err := readJournal(filepath.Join(s.dir, name), replay); err != nil {
			return err
		}
	}
	for _, rs := range s.regions {
		rs.items.indexNames()
	}

	journals := []string{filepath.Join(s.dir, oldJournal), filepath.Join(s.dir, journalFile)}
	if err := s.commit(journals, s.lastGen); err != nil {
		return fmt.Errorf("metadata: checkpoint replayed journal: %w", err)
	}
	for _, name := range []string{oldJournal, newJournal} {
		if err := os.Remove(filepath.Join(s.dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("metadata: %w", err)
		}
	}
	j, err := openJournal(filepath.Join(s.dir, journalFile), s.opts.SyncJournal, true)
	if err != nil {
		return fmt.Errorf("metadata: open journal: %w", err)
	}
	s.j = j
	s.dirGen.Add(1) // journals removed and created (see dirGen)
	if s.opts.SyncJournal {
		if err := syncDir(s.dir); err != nil {
			j.close()
			return fmt.Errorf("metadata: %w", err)
		}
	}
	return nil
}

// Close stops the checkpointer, folds all pending item changes into bbolt
// and releases the files and the lock. The first call returns the error of
// that final checkpoint, if any (the journal is then kept on disk and the
// next Open replays it); later calls return ErrClosed. Calls made after
// Close return ErrClosed.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return fmt.Errorf("metadata: close: %w", ErrClosed)
	}
	s.closed = true
	s.mu.Unlock()

	close(s.stop)
	<-s.done
	err := s.checkpoint()

	s.ckptMu.Lock()
	defer s.ckptMu.Unlock()
	s.dbClosed = true
	s.mu.Lock()
	jerr := s.j.close()
	s.mu.Unlock()
	if err == nil {
		err = jerr
	}
	if derr := s.db.Close(); err == nil {
		err = derr
	}
	return err
}

// checkpointer runs checkpoints on the interval, on request, until Close.
func (s *Store) checkpointer() {
	defer close(s.done)
	t := time.NewTicker(s.opts.CheckpointInterval)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		case <-s.kick:
		}
		// A failure leaves the changes pending and their journals on
		// disk; the next round retries, and Close reports the last one.
		_ = s.checkpoint()
	}
}

// Checkpoint folds all item changes made so far into bbolt in one
// transaction and discards the journal they were in. The background
// checkpointer does this on its own; call it to bound replay work before a
// planned stop. Returns ErrClosed after Close.
func (s *Store) Checkpoint() error {
	s.mu.RLock()
	closed := s.closed
	s.mu.RUnlock()
	if closed {
		return fmt.Errorf("metadata: checkpoint: %w", ErrClosed)
	}
	return s.checkpoint()
}

// checkpoint rotates the journal, commits the pending changes of the rotated
// part, then deletes it. At every crash point the journals on disk, replayed
// in order over bbolt, give the latest state: before the commit bbolt lacks
// exactly what the old journal holds; after it, replaying the old journal
// again only rewrites what bbolt already has.
func (s *Store) checkpoint() error {
	s.ckptMu.Lock()
	defer s.ckptMu.Unlock()
	if s.dbClosed {
		return fmt.Errorf("metadata: checkpoint: %w", ErrClosed)
	}

	s.mu.Lock()
	if s.jerr != nil {
		s.mu.Unlock()
		return s.jerr
	}
	if s.j.size == 0 && !s.oldExists {
		s.mu.Unlock()
		return nil
	}
	if err := s.rotateLocked(); err != nil {
		s.mu.Unlock()
		return err
	}
	gen := s.lastGen
	s.mu.Unlock()

	if h := testHooks.afterRotate; h != nil {
		h()
	}
	if err := s.commit([]string{filepath.Join(s.dir, oldJournal)}, gen); err != nil {
		// The old journal keeps the changes; the next rotation appends
		// the active one to it and the retry commits both.
		return fmt.Errorf("metadata: checkpoint: %w", err)
	}
	if h := testHooks.afterCommit; h != nil {
		h()
	}
	if s.opts.NoSync && s.syncCkpt.Load() {
		// The old journal is the only durable copy of what it holds
		// until bbolt's file is.
		if err := s.db.Sync(); err != nil {
			return fmt.Errorf("metadata: checkpoint: %w", err)
		}
	}
	err := os.Remove(filepath.Join(s.dir, oldJournal))
	s.dirGen.Add(1)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		// Harmless: the next checkpoint appends to it and commits again.
		return fmt.Errorf("metadata: checkpoint: %w", err)
	}
	s.oldExists = false
	if s.opts.SyncJournal {
		if err := syncDir(s.dir); err != nil {
			return fmt.Errorf("metadata: checkpoint: %w", err)
		}
	}
	return nil
}

// rotateLocked makes the active journal's records part of the old journal
// and starts an empty active journal. Holding mu keeps writers out, so the
// incarnation counter read right after covers the old journal exactly. Called with
// ckptMu and mu held.
func (s *Store) rotateLocked() error {
	defer s.dirGen.Add(1) // once the renames are done (see dirGen)
	active := filepath.Join(s.dir, journalFile)
	old := filepath.Join(s.dir, oldJournal)
	next := filepath.Join(s.dir, newJournal)
	// The new file is made under a temporary name first so that a failure
	// to create it leaves everything as it was.
	nj, err := openJournal(next, s.opts.SyncJournal, true)
	if err != nil {
		return fmt.Errorf("metadata: rotate journal: %w", err)
	}
	if s.oldExists {
		// A failed commit left records in the old journal; the active
		// ones must follow them there.
		err = appendFileTo(old, active, s.opts.SyncJournal)
	} else {
		err = os.Rename(active, old)
	}
	if err != nil {
		nj.close()
		os.Remove(next)
		return fmt.Errorf("metadata: rotate journal: %w", err)
	}
	s.oldExists = true
	if err := os.Rename(next, active); err != nil {
		// The records are safe in the old journal, but the open file is
		// no longer where replay looks; stop item changes until reopen.
		nj.close()
		s.jerr = fmt.Errorf("metadata: rotate journal: %w", err)
		return s.jerr
	}
	s.j.close()
	s.j = nj
	if s.opts.SyncJournal {
		// Records fdatasynced into the new file are only as durable as
		// its directory entry.
		if err := syncDir(s.dir); err != nil {
			return fmt.Errorf("metadata: rotate journal: %w", err)
		}
	}
	return nil
}

// change is one journal record to fold into bbolt: the item record val
// (as the journal holds it, which is how bbolt holds it too) at offset off
// of region rid, or the item's deletion when val is nil.
type change struct {
	rid, off uint64
	seq      int // its place in the journals, for the last change of an item
	val      []byte
}

// commit folds the item changes recorded in the journals at paths (in that
// order; a missing one is empty) into bbolt in one transaction, with gen,
// the incarnation counter when they were rotated out, as the new
// high-water mark (the journals, and their numbers, are deleted after).
// Only the last change of each item is written. Changes for regions no
// longer in bbolt are dropped: DeleteRegion may have committed after the
// records were written. Called with ckptMu held, or before the store is
// shared.
func (s *Store) commit(paths []string, gen uint64) error {
	var chs []change
	for _, path := range paths {
		err := scanJournal(path, func(typ byte, p []byte, pos int) error {
			switch {
			case typ == recPut && len(p) >= 1+16:
				chs = append(chs, change{rid: le.Uint64(p[1:]), off: le.Uint64(p[9:]), seq: len(chs), val: p})
			case typ == recDelete && len(p) == deleteLen:
				chs = append(chs, change{rid: le.Uint64(p), off: le.Uint64(p[8:]), seq: len(chs)})
			default:
				return fmt.Errorf("metadata: journal %s at byte %d: record type %d of %d bytes: %w", path, pos, typ, len(p), ErrCorrupt)
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	if len(chs) == 0 && gen <= s.savedGen {
		return nil
	}
	if h := testHooks.commit; h != nil {
		if err := h(); err != nil {
			return err
		}
	}
	// In key order: bbolt keeps a node's keys in one sorted slice until
	// the commit splits it, so puts in journal (random) order shift that
	// slice each time, quadratic in the changes of one checkpoint (534 s
	// for a million allocations); in order, each put appends or lands
	// where the last one did. Ties go by journal order, so an item's last
	// change is the last of its run; changes of different items commute.
	slices.SortFunc(chs, func(a, b change) int {
		if c := cmpU64(a.rid, b.rid); c != 0 {
			return c
		}
		if c := cmpU64(a.off, b.off); c != 0 {
			return c
		}
		return a.seq - b.seq
	})
	defer s.dbGen.Add(1) // once the write is done (see dbGen)
	err := s.db.Update(func(tx *bolt.Tx) error {
		ib := tx.Bucket(bucketItems)
		if gen > ib.Sequence() {
			if err := ib.SetSequence(gen); err != nil {
				return err
			}
		}
		var b *bolt.Bucket
		for i, c := range chs {
			if i == 0 || chs[i-1].rid != c.rid {
				b = ib.Bucket(u64key(c.rid))
			}
			if i+1 < len(chs) && chs[i+1].rid == c.rid && chs[i+1].off == c.off {
				continue // superseded
			}
			if b == nil {
				continue // region deleted
			}
			var err error
			if c.val == nil {
				err = b.Delete(u64key(c.off))
			} else {
				err = b.Put(u64key(c.off), c.val)
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil {
		s.savedGen = max(s.savedGen, gen)
	}
	return err
}

func (s *Store) checkOpen(op string) error {
	if s.closed {
		return fmt.Errorf("metadata: %s: %w", op, ErrClosed)
	}
	return nil
}

// cloneRegion gives r its own Servers so callers cannot reach the store's
// copy; an empty list becomes nil, as it comes back from bbolt.
func cloneRegion(r Region) Region {
	if len(r.Servers) == 0 {
		r.Servers = nil
	} else {
		r.Servers = slices.Clone(r.Servers)
	}
	return r
}

// CreateRegion adds region r, committing it to bbolt before returning. The
// store assigns r.ID (IDs are never reused, even after DeleteRegion) and sets
// r.Created to now if it is 0; the stored region is returned. The name must
// be non-empty; ErrExists if another region has it.
func (s *Store) CreateRegion(r Region) (Region, error) {
	if r.Name == "" {
		return Region{}, errors.New("metadata: create region: empty name")
	}
	if err := errors.Join(checkLen("region name", len(r.Name)), checkLen("server list", len(r.Servers))); err != nil {
		return Region{}, err
	}
	r = cloneRegion(r)
	if r.Created == 0 {
		r.Created = time.Now().UnixNano()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.checkOpen("create region"); err != nil {
		return Region{}, err
	}
	if _, taken := s.regionNames[r.Name]; taken {
		return Region{}, fmt.Errorf("metadata: region %q: %w", r.Name, ErrExists)
	}
	defer s.dbGen.Add(1) // once the write is done (see dbGen)
	err := s.db.Update(func(tx *bolt.Tx) error {
		rb := tx.Bucket(bucketRegions)
		id, err := rb.NextSequence()
		if err != nil {
			return err
		}
		r.ID = id
		if _, err := tx.Bucket(bucketItems).CreateBucketIfNotExists(u64key(id)); err != nil {
			return err
		}
		return rb.Put(u64key(id), appendRegion(nil, &r))
	})
	if err != nil {
		return Region{}, fmt.Errorf("metadata: create region %q: %w", r.Name, err)
	}
	s.regions[r.ID] = &regionState{r: r, items: newItemTable()}
	s.regionNames[r.Name] = r.ID
	return cloneRegion(r), nil
}

// UpdateRegion replaces the stored region with ID r.ID by r, keeping the
// stored Created, and commits it to bbolt before returning. It may rename
// the region; ErrExists if another region has the new name, ErrNotFound if
// there is no region r.ID.
func (s *Store) UpdateRegion(r Region) error {
	if r.Name == "" {
		return errors.New("metadata: update region: empty name")
	}
	if err := errors.Join(checkLen("region name", len(r.Name)), checkLen("server list", len(r.Servers))); err != nil {
		return err
	}
	r = cloneRegion(r)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.checkOpen("update region"); err != nil {
		return err
	}
	rs := s.regions[r.ID]
	if rs == nil {
		return fmt.Errorf("metadata: region %d: %w", r.ID, ErrNotFound)
	}
	if id, taken := s.regionNames[r.Name]; taken && id != r.ID {
		return fmt.Errorf("metadata: rename region %d to %q: %w", r.ID, r.Name, ErrExists)
	}
	r.Created = rs.r.Created
	defer s.dbGen.Add(1) // once the write is done (see dbGen)
	err := s.db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketRegions).Put(u64key(r.ID), appendRegion(nil, &r))
	})
	if err != nil {
		return fmt.Errorf("metadata: update region %d: %w", r.ID, err)
	}
	delete(s.regionNames, rs.r.Name)
	s.regionNames[r.Name] = r.ID
	rs.r = r
	return nil
}

// DeleteRegion removes region id and all its items, including item changes
// not yet checkpointed, and commits that to bbolt before returning.
// ErrNotFound if there is no such region.
func (s *Store) DeleteRegion(id uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.checkOpen("delete region"); err != nil {
		return err
	}
	rs := s.regions[id]
	if rs == nil {
		return fmt.Errorf("metadata: region %d: %w", id, ErrNotFound)
	}
	defer s.dbGen.Add(1) // once the write is done (see dbGen)
	err := s.db.Update(func(tx *bolt.Tx) error {
		if err := tx.Bucket(bucketItems).DeleteBucket(u64key(id)); err != nil && !errors.Is(err, berrors.ErrBucketNotFound) {
			return err
		}
		return tx.Bucket(bucketRegions).Delete(u64key(id))
	})
	if err != nil {
		return fmt.Errorf("metadata: delete region %d: %w", id, err)
	}
	delete(s.regions, id)
	delete(s.regionNames, rs.r.Name)
	// Their journal records stay on disk until the next checkpoint, but
	// replay and commit drop items of regions that do not exist.
	return nil
}

// RegionByID returns region id, or ErrNotFound.
func (s *Store) RegionByID(id uint64) (Region, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if err := s.checkOpen("region"); err != nil {
		return Region{}, err
	}
	rs := s.regions[id]
	if rs == nil {
		return Region{}, fmt.Errorf("metadata: region %d: %w", id, ErrNotFound)
	}
	return cloneRegion(rs.r), nil
}

// RegionByName returns the region called name, or ErrNotFound.
func (s *Store) RegionByName(name string) (Region, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if err := s.checkOpen("region"); err != nil {
		return Region{}, err
	}
	id, ok := s.regionNames[name]
	if !ok {
		return Region{}, fmt.Errorf("metadata: region %q: %w", name, ErrNotFound)
	}
	return cloneRegion(s.regions[id].r), nil
}

// Regions returns all regions sorted by ID (nil after Close).
func (s *Store) Regions() []Region {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil
	}
	out := make([]Region, 0, len(s.regions))
	for _, rs := range s.regions {
		out = append(out, cloneRegion(rs.r))
	}
	slices.SortFunc(out, func(a, b Region) int { return cmpU64(a.ID, b.ID) })
	return out
}

func cmpU64(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// logItemLocked journals an item change: it, or the deletion of the item
// at it's offset when del. Called with mu held.
func (s *Store) logItemLocked(del bool, it *Item) error {
	if s.jerr != nil {
		return s.jerr
	}
	var b []byte
	if del {
		b = s.j.beginRecord(recDelete)
		b = le.AppendUint64(b, it.RegionID)
		b = le.AppendUint64(b, it.Offset)
	} else {
		b = s.j.beginRecord(recPut)
		b = appendItem(b, it)
	}
	if err := s.j.appendRecord(b); err != nil {
		return err
	}
	if s.j.size >= s.opts.CheckpointBytes {
		select {
		case s.kick <- struct{}{}:
		default:
		}
	}
	return nil
}

// PutItem adds a new item, durable against a process crash when it returns
// (see Options.SyncJournal for power loss). Created is set to now if 0. The
// store gives the item a fresh incarnation number (it.Gen is ignored), one
// it never gave before, even across restarts; ItemAt returns it.
// ErrNotFound if region it.RegionID does not exist; ErrExists if the region
// already has an item at it.Offset or, for a non-empty name, an item called
// it.Name.
func (s *Store) PutItem(it Item) error {
	if err := checkLen("item name", len(it.Name)); err != nil {
		return err
	}
	if it.Created == 0 {
		it.Created = time.Now().UnixNano()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.checkOpen("put item"); err != nil {
		return err
	}
	rs := s.regions[it.RegionID]
	if rs == nil {
		return fmt.Errorf("metadata: put item: region %d: %w", it.RegionID, ErrNotFound)
	}
	if rs.items.has(it.Offset) {
		return fmt.Errorf("metadata: item at region %d offset %d: %w", it.RegionID, it.Offset, ErrExists)
	}
	var h uint32
	if it.Name != "" {
		h = rs.items.nameHash(it.Name)
		if _, taken := rs.items.named(it.Name, h); taken {
			return fmt.Errorf("metadata: item %q in region %d: %w", it.Name, it.RegionID, ErrExists)
		}
	}
	// A number burnt by a failed journal write is simply never used.
	s.lastGen++
	it.Gen = s.lastGen
	if err := s.logItemLocked(false, &it); err != nil {
		return err
	}
	rs.items.add(it, h, true)
	return nil
}

// UpdateItem changes the Mode, Name and Size of the item at (it.RegionID,
// it.Offset); its other fields, Gen included, are kept. Durable as PutItem. ErrNotFound if
// there is no such item; ErrExists if another item in the region has the
// new non-empty name.
func (s *Store) UpdateItem(it Item) error {
	if err := checkLen("item name", len(it.Name)); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.checkOpen("update item"); err != nil {
		return err
	}
	rs := s.regions[it.RegionID]
	if rs == nil {
		return fmt.Errorf("metadata: update item: region %d: %w", it.RegionID, ErrNotFound)
	}
	cur, ok := rs.items.at(it.Offset)
	if !ok {
		return fmt.Errorf("metadata: item at region %d offset %d: %w", it.RegionID, it.Offset, ErrNotFound)
	}
	var h uint32
	if it.Name != "" && it.Name != cur.Name {
		h = rs.items.nameHash(it.Name)
		if o, taken := rs.items.named(it.Name, h); taken && o.Offset != it.Offset {
			return fmt.Errorf("metadata: item %q in region %d: %w", it.Name, it.RegionID, ErrExists)
		}
	}
	cur.Mode, cur.Name, cur.Size = it.Mode, it.Name, it.Size
	if err := s.logItemLocked(false, &cur); err != nil {
		return err
	}
	rs.items.update(cur, h)
	return nil
}

// DeleteItem removes the item at (regionID, offset). Durable as PutItem.
// ErrNotFound if there is no such item.
func (s *Store) DeleteItem(regionID, offset uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.checkOpen("delete item"); err != nil {
		return err
	}
	rs := s.regions[regionID]
	if rs == nil {
		return fmt.Errorf("metadata: delete item: region %d: %w", regionID, ErrNotFound)
	}
	if !rs.items.has(offset) {
		return fmt.Errorf("metadata: item at region %d offset %d: %w", regionID, offset, ErrNotFound)
	}
	if err := s.logItemLocked(true, &Item{RegionID: regionID, Offset: offset}); err != nil {
		return err
	}
	rs.items.remove(offset)
	return nil
}

// ItemAt returns the item at (regionID, offset), or ErrNotFound.
func (s *Store) ItemAt(regionID, offset uint64) (Item, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if err := s.checkOpen("item"); err != nil {
		return Item{}, err
	}
	if rs := s.regions[regionID]; rs != nil {
		if it, ok := rs.items.at(offset); ok {
			return it, nil
		}
	}
	return Item{}, fmt.Errorf("metadata: item at region %d offset %d: %w", regionID, offset, ErrNotFound)
}

// ItemAtUnnamed is ItemAt without the item's name (Name is empty), which
// spares the copy of the name, the call's one allocation: a deallocation
// needs the rest of the record only.
func (s *Store) ItemAtUnnamed(regionID, offset uint64) (Item, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if err := s.checkOpen("item"); err != nil {
		return Item{}, err
	}
	if rs := s.regions[regionID]; rs != nil {
		if _, slot, ok := rs.items.findOff(offset); ok {
			var none string
			return rs.items.item(rs.items.slot(slot), slot, &none), nil
		}
	}
	return Item{}, fmt.Errorf("metadata: item at region %d offset %d: %w", regionID, offset, ErrNotFound)
}

// ItemByName returns the item called name in region regionID, or
// ErrNotFound. The empty name never matches.
func (s *Store) ItemByName(regionID uint64, name string) (Item, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if err := s.checkOpen("item"); err != nil {
		return Item{}, err
	}
	if rs := s.regions[regionID]; rs != nil && name != "" {
		if it, ok := rs.items.named(name, rs.items.nameHash(name)); ok {
			return it, nil
		}
	}
	return Item{}, fmt.Errorf("metadata: item %q in region %d: %w", name, regionID, ErrNotFound)
}

// Items returns the items of region regionID sorted by offset; nil if the
// region does not exist or the store is closed.
func (s *Store) Items(regionID uint64) []Item {
	s.mu.RLock()
	defer s.mu.RUnlock()
	rs := s.regions[regionID]
	if s.closed || rs == nil {
		return nil
	}
	out := make([]Item, 0, rs.items.len())
	rs.items.each(func(it Item) { out = append(out, it) })
	slices.SortFunc(out, func(a, b Item) int { return cmpU64(a.Offset, b.Offset) })
	return out
}
