package stripe

import "crypto/subtle"

// Redundant layouts (issue 16, spec/cluster.md "Redundancy").
//
// RAID1 keeps Layout unchanged for the data and adds, on every server, a
// mirror segment: server (j+1) mod K's mirror segment is server j's data
// segment, byte for byte (MirrorOf). Memory: 2x.
//
// RAID5 (Parity) cuts the region into data blocks of B bytes and groups
// them in rows of K-1; row r's parity block lives on server r mod K (so
// parity rotates) and its K-1 data blocks on the other servers in order.
// Each server's data blocks are consecutive in its data segment (so an
// item's share on a server stays one contiguous range, as with Layout),
// and its parity blocks in a separate parity segment. Memory: K/(K-1).

// MirrorOf is the server whose mirror segment copies server j's data
// segment in a RAID1 region of K servers.
func MirrorOf(j, k int) int { return (j + 1) % k }

// MirroredBy is the server whose data segment server j's mirror segment
// copies: the inverse of MirrorOf.
func MirroredBy(j, k int) int { return (j + k - 1) % k }

// Parity is the RAID5 placement of one region: Block bytes per block over
// Servers (K >= 3) servers.
type Parity struct {
	Block   uint64
	Servers int
}

// Valid reports whether p can place bytes.
func (p Parity) Valid() bool { return p.Servers >= 3 && p.Block > 0 }

func (p Parity) k() uint64 { return uint64(p.Servers) }

// ParityServer is the server holding row r's parity block.
func (p Parity) ParityServer(r uint64) int { return int(r % p.k()) }

// DataServer is the server holding the i-th data block (i < K-1) of row r.
func (p Parity) DataServer(r uint64, i int) int {
	if ps := p.ParityServer(r); i >= ps {
		return i + 1
	}
	return i
}

// dataIndex is the block index in server s's data segment of its data
// block of row r (s must not be row r's parity server): the rows before r
// minus those of them whose parity s holds.
func (p Parity) dataIndex(r uint64, s int) uint64 {
	return r - (r+p.k()-1-uint64(s))/p.k()
}

// RowOfData is the row of the block at index d of server s's data
// segment: the inverse of dataIndex.
func (p Parity) RowOfData(s int, d uint64) uint64 {
	m, t := d/(p.k()-1), d%(p.k()-1)
	if t >= uint64(s) {
		t++
	}
	return m*p.k() + t
}

// DataOffset is the offset, in server s's data segment, of byte in of its
// data block of row r.
func (p Parity) DataOffset(r uint64, s int, in uint64) uint64 {
	return p.dataIndex(r, s)*p.Block + in
}

// ParityOffset is the offset, in row r's parity server's parity segment,
// of byte in of the row's parity block.
func (p Parity) ParityOffset(r uint64, in uint64) uint64 { return (r/p.k())*p.Block + in }

// RowOfParity is the row of the block at index q of server s's parity
// segment.
func (p Parity) RowOfParity(s int, q uint64) uint64 { return q*p.k() + uint64(s) }

// rows is the number of rows a region of size bytes needs.
func (p Parity) rows(size uint64) uint64 {
	blocks := (size + p.Block - 1) / p.Block
	return (blocks + p.k() - 2) / (p.k() - 1)
}

// SegmentSize is the size of each server's data segment for a region of
// size bytes: the most data blocks any server holds.
func (p Parity) SegmentSize(size uint64) uint64 {
	r := p.rows(size)
	return (r - r/p.k()) * p.Block
}

// ParitySegmentSize is the size of each server's parity segment.
func (p Parity) ParitySegmentSize(size uint64) uint64 {
	return (p.rows(size) + p.k() - 1) / p.k() * p.Block
}

// Locate returns the server and data-segment offset of region byte o, and
// how many bytes from o on stay in the same block.
func (p Parity) Locate(o uint64) (server int, soff, run uint64) {
	b, in := o/p.Block, o%p.Block
	r, i := b/(p.k()-1), int(b%(p.k()-1))
	s := p.DataServer(r, i)
	return s, p.DataOffset(r, s, in), p.Block - in
}

// blockOn is the region block number of server s's data block in row r,
// ok false when s holds row r's parity.
func (p Parity) blockOn(r uint64, s int) (uint64, bool) {
	ps := p.ParityServer(r)
	if s == ps {
		return 0, false
	}
	i := uint64(s)
	if s > ps {
		i--
	}
	return r*(p.k()-1) + i, true
}

// Share returns the range [start, end) of server j's data segment that
// holds the bytes of region range [a, a+n); start == end when none of
// them is on j.
func (p Parity) Share(a, n uint64, j int) (start, end uint64) {
	if n == 0 {
		return 0, 0
	}
	B := p.Block
	b0, bl := a/B, (a+n-1)/B
	var first, last uint64
	found := false
	for r := b0 / (p.k() - 1); r <= b0/(p.k()-1)+2; r++ {
		if b, ok := p.blockOn(r, j); ok && b >= b0 {
			first, found = b, true
			break
		}
	}
	if !found || first > bl {
		return 0, 0
	}
	found = false
	for r := bl / (p.k() - 1); ; r-- {
		if b, ok := p.blockOn(r, j); ok && b <= bl {
			last, found = b, true
			break
		}
		if r == 0 {
			break
		}
	}
	if !found || last < first {
		return 0, 0
	}
	rf, rl := first/(p.k()-1), last/(p.k()-1)
	start = p.dataIndex(rf, j) * B
	if first == b0 {
		start += a % B
	}
	end = p.dataIndex(rl, j)*B + B
	if last == bl {
		end = p.dataIndex(rl, j)*B + (a+n-1)%B + 1
	}
	return start, end
}

// Pieces is Layout.Pieces for a RAID5 region: it cuts bytes [off, off+n)
// of an item that starts at region byte a into per-block pieces addressed
// relative to each server's share (starts[j]).
func (p Parity) Pieces(a uint64, starts []uint64, off, n uint64, fn func(Piece)) {
	for done := uint64(0); done < n; {
		j, soff, run := p.Locate(a + off + done)
		m := min(run, n-done)
		fn(Piece{Server: j, Off: soff - starts[j], Buf: done, Len: m})
		done += m
	}
}

// Member is one block of a row: its server, and the offset of the row's
// byte 0 in that server's data segment (or parity segment, for the
// parity member).
type Member struct {
	Server int
	Off    uint64
}

// Row describes row r: its parity member and its K-1 data members.
func (p Parity) Row(r uint64) (parity Member, data []Member) {
	ps := p.ParityServer(r)
	parity = Member{Server: ps, Off: p.ParityOffset(r, 0)}
	data = make([]Member, 0, p.Servers-1)
	for i := 0; i < p.Servers-1; i++ {
		s := p.DataServer(r, i)
		data = append(data, Member{Server: s, Off: p.DataOffset(r, s, 0)})
	}
	return parity, data
}

// XOR sets dst[i] ^= src[i] for every byte of src (len(dst) >= len(src)),
// with the vectorised loop of crypto/subtle.
func XOR(dst, src []byte) { subtle.XORBytes(dst[:len(src)], dst[:len(src)], src) }
