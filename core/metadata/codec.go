package metadata

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Record encodings. Every encoded record starts with a version byte so that
// a later release can change the layout and still read what this one wrote;
// integers are little-endian and fixed width, strings carry a uint32 length.
// Only bbolt keys are big-endian, because bbolt orders keys bytewise and the
// catalogue wants numeric order.
const (
	regionVersion = 1
	// itemVersion 2 adds Gen after Created; version 1 records (no Gen)
	// are still read, with Gen 0.
	itemVersion  = 2
	itemVersion1 = 1

	// version + ID + Size + Mode + UID + GID + 4 small fields +
	// InterleaveSize + Created + name length + server count
	regionFixed = 1 + 8 + 8 + 4 + 4 + 4 + 4 + 8 + 8 + 4 + 4
	// version + RegionID + Offset + Size + Mode + UID + GID + Created + name length
	itemFixed1 = 1 + 8 + 8 + 8 + 4 + 4 + 4 + 8 + 4
	// version 2: the same, then Gen
	itemFixed = itemFixed1 + 8
)

var le = binary.LittleEndian

// u64key is the bbolt key for an ID or an offset.
func u64key(v uint64) []byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], v)
	return b[:]
}

func appendRegion(b []byte, r *Region) []byte {
	b = append(b, regionVersion)
	b = le.AppendUint64(b, r.ID)
	b = le.AppendUint64(b, r.Size)
	b = le.AppendUint32(b, r.Mode)
	b = le.AppendUint32(b, r.UID)
	b = le.AppendUint32(b, r.GID)
	b = append(b, r.Redundancy, r.MemoryType, r.Interleave, r.PermLevel)
	b = le.AppendUint64(b, r.InterleaveSize)
	b = le.AppendUint64(b, uint64(r.Created))
	b = le.AppendUint32(b, uint32(len(r.Name)))
	b = le.AppendUint32(b, uint32(len(r.Servers)))
	b = append(b, r.Name...)
	for _, s := range r.Servers {
		b = le.AppendUint64(b, s)
	}
	return b
}

func decodeRegion(b []byte) (Region, error) {
	var r Region
	if len(b) < regionFixed || b[0] != regionVersion {
		return r, fmt.Errorf("region record of %d bytes, version %d: %w", len(b), firstByte(b), ErrCorrupt)
	}
	p := b[1:]
	r.ID = le.Uint64(p[0:])
	r.Size = le.Uint64(p[8:])
	r.Mode = le.Uint32(p[16:])
	r.UID = le.Uint32(p[20:])
	r.GID = le.Uint32(p[24:])
	r.Redundancy, r.MemoryType, r.Interleave, r.PermLevel = p[28], p[29], p[30], p[31]
	r.InterleaveSize = le.Uint64(p[32:])
	r.Created = int64(le.Uint64(p[40:]))
	nameLen := uint64(le.Uint32(p[48:]))
	nServers := uint64(le.Uint32(p[52:]))
	p = p[56:]
	if uint64(len(p)) != nameLen+8*nServers {
		return Region{}, fmt.Errorf("region record %d: length mismatch: %w", r.ID, ErrCorrupt)
	}
	r.Name = string(p[:nameLen])
	p = p[nameLen:]
	if nServers > 0 {
		r.Servers = make([]uint64, nServers)
		for i := range r.Servers {
			r.Servers[i] = le.Uint64(p[8*i:])
		}
	}
	return r, nil
}

func appendItem(b []byte, it *Item) []byte {
	b = append(b, itemVersion)
	b = le.AppendUint64(b, it.RegionID)
	b = le.AppendUint64(b, it.Offset)
	b = le.AppendUint64(b, it.Size)
	b = le.AppendUint32(b, it.Mode)
	b = le.AppendUint32(b, it.UID)
	b = le.AppendUint32(b, it.GID)
	b = le.AppendUint64(b, uint64(it.Created))
	b = le.AppendUint32(b, uint32(len(it.Name)))
	b = le.AppendUint64(b, it.Gen)
	return append(b, it.Name...)
}

func decodeItem(b []byte) (Item, error) {
	var it Item
	fixed := itemFixed
	if len(b) > 0 && b[0] == itemVersion1 {
		fixed = itemFixed1
	}
	if len(b) < fixed || (b[0] != itemVersion && b[0] != itemVersion1) {
		return it, fmt.Errorf("item record of %d bytes, version %d: %w", len(b), firstByte(b), ErrCorrupt)
	}
	p := b[1:]
	it.RegionID = le.Uint64(p[0:])
	it.Offset = le.Uint64(p[8:])
	it.Size = le.Uint64(p[16:])
	it.Mode = le.Uint32(p[24:])
	it.UID = le.Uint32(p[28:])
	it.GID = le.Uint32(p[32:])
	it.Created = int64(le.Uint64(p[36:]))
	nameLen := uint64(le.Uint32(p[44:]))
	p = p[48:]
	if b[0] == itemVersion {
		it.Gen = le.Uint64(p)
		p = p[8:]
	}
	if uint64(len(p)) != nameLen {
		return Item{}, fmt.Errorf("item record %d/%d: length mismatch: %w", it.RegionID, it.Offset, ErrCorrupt)
	}
	it.Name = string(p)
	return it, nil
}

func firstByte(b []byte) int {
	if len(b) == 0 {
		return -1
	}
	return int(b[0])
}

// checkLen rejects strings and lists that the uint32 length fields cannot
// describe; nothing legitimate comes close, but silently truncating a length
// would corrupt every later field.
func checkLen(what string, n int) error {
	if uint64(n) > math.MaxUint32/8 {
		return fmt.Errorf("metadata: %s of length %d is too long", what, n)
	}
	return nil
}
