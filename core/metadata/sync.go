package metadata

import "fmt"

// Sync makes every change made so far survive a power loss, whatever
// Options.NoSync and Options.SyncJournal say: it fdatasyncs the active
// journal, syncs the store's directory and, under NoSync, flushes bbolt's file. Callers that promise
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
	if err == nil {
		// A checkpoint may have renamed journals since the last sync.
		err = syncDir(s.dir)
	}
	s.mu.Unlock()
	if err != nil {
		return fmt.Errorf("metadata: sync journal: %w", err)
	}
	if s.opts.NoSync {
		s.ckptMu.Lock()
		defer s.ckptMu.Unlock()
		if !s.dbClosed {
			if err := s.db.Sync(); err != nil {
				return fmt.Errorf("metadata: sync %s: %w", s.db.Path(), err)
			}
		}
	}
	return nil
}
