// Package metadata is the durable catalogue of regions and data items:
// names, sizes, owners, modes, attributes and placement. It is kept in a bbolt
// database, with item changes first appended to a journal so that allocation
// costs a write(2) rather than a bbolt transaction.
//
// # Design
//
// Allocation must be cheap: a fam_allocate plus fam_deallocate pair has a
// budget of about 20 µs, while one bbolt update transaction costs 12-35 µs
// even without fsync. So the store keeps three layers:
//
//   - Memory. The whole catalogue lives in maps (regions by ID and by name;
//     per region, items by offset and by name). Every read is answered from
//     them under a read lock and never touches the disk. Records go in and
//     out by value; returned slices are fresh copies.
//
//   - The journal, metadata.journal. Each item change (PutItem, UpdateItem,
//     DeleteItem) is appended as one record - length, type, payload, CRC32C -
//     with a single write(2) before the call returns, under the same lock
//     that orders the in-memory change. A completed write(2) is in the page
//     cache and survives a crash of the process; with Options.SyncJournal
//     each record is also fdatasynced, so it survives a power loss.
//
//   - The checkpoint, metadata.db (bbolt). Buckets "regions" (ID -> region
//     record; the bucket sequence is the ID counter, so IDs are never
//     reused) and "items" (one nested bucket per region ID, big-endian
//     offset -> item record). Records use a compact versioned binary layout
//     (codec.go). Region changes are rare and go straight to bbolt in their
//     own transaction before the call returns (fsynced unless
//     Options.NoSync).
//
// A background checkpointer (every Options.CheckpointInterval, when the
// journal passes Options.CheckpointBytes, and on Close) folds the item
// changes not yet in bbolt into it in one transaction. Those changes are
// the journal's records and are kept nowhere else (an item change costs its
// journal write, no second copy in memory). Under the lock the checkpointer
// renames the active journal to metadata.journal.old (created first under
// metadata.journal.new, then renamed into place, so the active name always
// refers to a complete file); it then reads the old journal back and
// commits the last change of each item, in key order, without the lock, so
// item changes keep flowing, and finally deletes the old journal. If a
// commit fails, the old journal stays; the next rotation appends the active
// journal to it so it remains one ordered history, committed whole by the
// retry.
//
// In memory each region's items are one table of records found through two
// open-addressing indexes, by offset and by name (index.go), so that an
// operation on a region of a million items costs about as many cache
// misses as one on a region of a thousand.
//
// Open loads bbolt, replays metadata.journal.old and then metadata.journal,
// commits the result and starts with an empty journal. Replay is idempotent
// (a put is an upsert, a delete removes the item if present), so it is
// correct whether a crash came before or after a checkpoint's commit. Items
// whose region no longer exists are dropped: DeleteRegion commits to bbolt at
// once and leaves the region's journal records to be ignored. A record cut
// short by a crash (bad length or CRC) ends the journal and is truncated
// away; a record with a good CRC that does not decode is reported as
// ErrCorrupt.
//
// Only one process may open a store: bbolt's flock on metadata.db also
// guards the journals. Open waits Options.Timeout for it and then fails with
// an error wrapping ErrLocked; processes that want to share a catalogue go
// through famd instead.
package metadata
