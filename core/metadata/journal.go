package metadata

import (
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"syscall"
)

// Journal record framing:
//
//	uint32 n        length of type+payload (little-endian)
//	uint8  type     recPut or recDelete
//	[n-1]  payload  recPut: an item record (appendItem); recDelete: region ID, offset
//	uint32 crc      CRC32C of everything before it in the record
//
// The length is covered by the CRC so that a torn length cannot make a later
// record look valid.
const (
	recPut    = 1
	recDelete = 2

	recHeader  = 4 + 1
	recTrailer = 4
	deleteLen  = 16
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Journal file names inside the store directory. Only the process holding the
// bbolt file lock touches them, so the bbolt lock protects them too.
const (
	dbFile      = "metadata.db"
	journalFile = "metadata.journal"
	oldJournal  = "metadata.journal.old" // being checkpointed
	newJournal  = "metadata.journal.new" // next active journal, before its rename
)

// journal is the active journal file: an append-only sequence of records.
// The Store's mutex serialises every use.
type journal struct {
	f    *os.File
	fd   int
	size int64 // bytes of complete records in the file
	sync bool  // fdatasync after every record
	buf  []byte
}

func openJournal(path string, sync bool, truncate bool) (*journal, error) {
	flag := os.O_WRONLY | os.O_CREATE | os.O_APPEND
	if truncate {
		flag |= os.O_TRUNC
	}
	f, err := os.OpenFile(path, flag, 0o600)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	return &journal{f: f, fd: int(f.Fd()), size: st.Size(), sync: sync}, nil
}

// beginRecord starts a record of the given type in j.buf; the caller appends
// the payload and calls commitRecord.
func (j *journal) beginRecord(typ byte) []byte {
	b := append(j.buf[:0], 0, 0, 0, 0, typ)
	return b
}

// appendRecord writes one framed record with a single write(2), so a crash
// of the process leaves either the whole record in the page cache or none of
// it (a concurrent power loss can still tear it; replay drops torn tails).
// On failure the file is cut back to its last complete record, because a
// partial record followed by later good ones would hide them from replay.
func (j *journal) appendRecord(b []byte) error {
	le.PutUint32(b, uint32(len(b)-4))
	b = le.AppendUint32(b, crc32.Checksum(b, castagnoli))
	j.buf = b
	n, err := j.f.Write(b)
	if err == nil && j.sync {
		err = fdatasync(j.fd)
	}
	if err != nil {
		if n > 0 {
			if terr := j.f.Truncate(j.size); terr != nil {
				return fmt.Errorf("metadata: journal write: %v; cutting back the partial record: %w", err, terr)
			}
		}
		return fmt.Errorf("metadata: journal write: %w", err)
	}
	j.size += int64(n)
	return nil
}

func (j *journal) close() error {
	if j == nil || j.f == nil {
		return nil
	}
	err := j.f.Close()
	j.f = nil
	return err
}

func fdatasync(fd int) error {
	for {
		err := syscall.Fdatasync(fd)
		if err != syscall.EINTR {
			return err
		}
	}
}

// syncDir makes renames, creations and removals in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// journalOp is one decoded journal record. For a delete only
// item.RegionID and item.Offset are meaningful.
type journalOp struct {
	del  bool
	item Item
}

// readJournal decodes the complete records of the journal at path and calls
// fn for each, in order. A missing file is an empty journal. Records after
// the first bad one (short, bad length, bad CRC) are the remains of a write
// torn by a crash: they are ignored and the file is truncated to the last
// good record so new records never follow garbage. A record whose CRC is good
// but whose payload does not decode is real corruption and fails with
// ErrCorrupt.
func readJournal(path string, fn func(journalOp)) error {
	return scanJournal(path, func(typ byte, payload []byte, pos int) error {
		op, err := decodeOp(typ, payload)
		if err != nil {
			return fmt.Errorf("metadata: journal %s at byte %d: %w", path, pos, err)
		}
		fn(op)
		return nil
	})
}

// scanJournal is readJournal's framing: it calls fn with the type and
// payload of each complete record (the payload aliases a buffer that stays
// valid after scanJournal returns) and the record's byte position, stops at
// the first error fn returns, and truncates a torn tail as readJournal does.
func scanJournal(path string, fn func(typ byte, payload []byte, pos int) error) error {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("metadata: read journal: %w", err)
	}
	pos := 0
	for pos < len(data) {
		rest := data[pos:]
		if len(rest) < recHeader+recTrailer {
			break
		}
		n := int64(le.Uint32(rest))
		total := 4 + n + recTrailer
		if n < 1 || total > int64(len(rest)) {
			break
		}
		body := rest[:4+n]
		if crc32.Checksum(body, castagnoli) != le.Uint32(rest[4+n:]) {
			break
		}
		if err := fn(body[4], body[5:], pos); err != nil {
			return err
		}
		pos += int(total)
	}
	if pos < len(data) {
		if err := os.Truncate(path, int64(pos)); err != nil {
			return fmt.Errorf("metadata: truncate torn journal tail: %w", err)
		}
	}
	return nil
}

func decodeOp(typ byte, payload []byte) (journalOp, error) {
	switch typ {
	case recPut:
		it, err := decodeItem(payload)
		return journalOp{item: it}, err
	case recDelete:
		if len(payload) != deleteLen {
			return journalOp{}, fmt.Errorf("delete record of %d bytes: %w", len(payload), ErrCorrupt)
		}
		return journalOp{del: true, item: Item{RegionID: le.Uint64(payload), Offset: le.Uint64(payload[8:])}}, nil
	}
	return journalOp{}, fmt.Errorf("journal record type %d: %w", typ, ErrCorrupt)
}

// appendFileTo appends the contents of src to dst. Used only when a previous
// checkpoint failed and dst (the old journal) still holds uncommitted
// records: the active journal's records must follow them, in order.
func appendFileTo(dst, src string, sync bool) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	if err == nil && sync {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}
