package metadata

import "fmt"

// Sync makes every change made so far survive a power loss, whatever
// Options.NoSync and Options.SyncJournal say: it fdatasyncs the active
// journal, syncs the store's directory and, under NoSync, flushes bbolt's
// file, the last two only when they changed since the last Sync. Callers that promise
// durability for some changes only (core: persistent regions) use it
// after those changes instead of paying for a flush on every one. From
// the first call on, checkpoints under NoSync flush bbolt too.
func (s *Store) Sync() error {
	s.syncCkpt.Store(true)
	s.mu.Lock()
	err := s.checkOpen("sync")
	if err == nil && s.j != nil && s.j.f != nil && !s.j.sync {
		err = fdatasync(s.j.fd)
	}
	if g := s.dirGen.Load(); err == nil && g != s.dirSynced.Load() {
		// A checkpoint renamed journals since the last sync. Journals
		// change names under mu (or, removing the old one, in a way that
		// loses nothing if undone), so g covers what is done now.
		if err = syncDir(s.dir); err == nil {
			s.dirSynced.Store(g)
		}
	}
	s.mu.Unlock()
	if err != nil {
		return fmt.Errorf("metadata: sync journal: %w", err)
	}
	if s.opts.NoSync {
		s.ckptMu.Lock()
		defer s.ckptMu.Unlock()
		// Writes to bbolt count once done: g covers every write that
		// could be in the file now, and a later one counts again.
		if g := s.dbGen.Load(); !s.dbClosed && g != s.dbSynced.Load() {
			if err := s.db.Sync(); err != nil {
				return fmt.Errorf("metadata: sync %s: %w", s.db.Path(), err)
			}
			s.dbSynced.Store(g)
		}
	}
	return nil
}
