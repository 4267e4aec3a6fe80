// Package stripe is the arithmetic of regions spread over memory servers:
// which server holds a byte of a region, where in that server's segment,
// and which contiguous range of a segment an item occupies. The metadata
// service (placing regions and granting keys), memory servers (sizing
// segments) and clients (splitting requests) all use it, so they agree by
// construction.
//
// A region of K servers is cut into blocks of B bytes; block b lives on
// server b mod K, as block b div K of that server's segment. Region byte o
// is therefore at segment offset (o/B/K)*B + o%B of server (o/B)%K. With
// K = 1 the segment is the region, byte for byte.
//
// Consecutive blocks of one server are adjacent in its segment, so the
// bytes of any item [a, a+n) on server j form one contiguous range of j's
// segment (its share): a key granted for exactly that range lets a client
// reach the item's bytes on j and nothing else.
package stripe

// Layout is the placement of one region: Block bytes per block (B), over
// Servers servers (K). The zero Block is valid only with one server.
type Layout struct {
	Block   uint64
	Servers int
}

// Valid reports whether l can place bytes.
func (l Layout) Valid() bool { return l.Servers == 1 || (l.Servers > 1 && l.Block > 0) }

func (l Layout) k() uint64 { return uint64(l.Servers) }

// SegmentSize is the size of each server's segment for a region of size
// bytes: enough blocks for the region's last byte on any server.
func (l Layout) SegmentSize(size uint64) uint64 {
	if l.Servers == 1 {
		return size
	}
	blocks := (size + l.Block - 1) / l.Block
	return (blocks + l.k() - 1) / l.k() * l.Block
}

// Locate returns the server index and segment offset of region byte o,
// and how many bytes from o on stay in the same block (so on the same
// server and contiguous in its segment).
func (l Layout) Locate(o uint64) (server int, soff, run uint64) {
	if l.Servers == 1 {
		return 0, o, ^uint64(0) - o
	}
	b := o / l.Block
	in := o % l.Block
	return int(b % l.k()), (b/l.k())*l.Block + in, l.Block - in
}

// Share returns the range [start, end) of server j's segment that holds
// the bytes of the region range [a, a+n); start == end when none of them
// is on j.
func (l Layout) Share(a, n uint64, j int) (start, end uint64) {
	if n == 0 {
		return 0, 0
	}
	if l.Servers == 1 {
		return a, a + n
	}
	B, K, J := l.Block, l.k(), uint64(j)
	b0, bl := a/B, (a+n-1)/B
	first := b0 + (J+K-b0%K)%K // first block of the range on j
	if first > bl {
		return 0, 0
	}
	last := bl - (bl%K+K-J)%K // last block of the range on j
	start = (first / K) * B
	if first == b0 {
		start += a % B
	}
	end = (last/K)*B + B
	if last == bl {
		end = (last/K)*B + (a+n-1)%B + 1
	}
	return start, end
}

// Piece is a run of bytes of a request that one server serves: Len bytes
// at Off of the server's share, at Buf of the request's buffer.
type Piece struct {
	Server   int
	Off, Buf uint64
	Len      uint64
}

// Pieces cuts bytes [off, off+n) of an item that starts at region byte a
// into per-block pieces, each addressed relative to its server's share of
// the item (starts[j] is Share(a, size, j)'s start), and calls fn for each
// in order. Pieces never cross a block boundary.
func (l Layout) Pieces(a uint64, starts []uint64, off, n uint64, fn func(Piece)) {
	for done := uint64(0); done < n; {
		j, soff, run := l.Locate(a + off + done)
		m := min(run, n-done)
		fn(Piece{Server: j, Off: soff - starts[j], Buf: done, Len: m})
		done += m
	}
}
