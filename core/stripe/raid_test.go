package stripe

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

func TestMirrorIsARotation(t *testing.T) {
	for k := 2; k <= 6; k++ {
		seen := map[int]bool{}
		for j := 0; j < k; j++ {
			m := MirrorOf(j, k)
			if m == j || seen[m] || MirroredBy(m, k) != j {
				t.Fatalf("K=%d: server %d's mirror on %d (inverse %d)", k, j, m, MirroredBy(m, k))
			}
			seen[m] = true
		}
	}
}

// raid5Model places every data block one at a time: row-major, parity of
// row r on r mod K, a server's data blocks consecutive in its segment.
func raid5Model(p Parity, o uint64) (server int, soff uint64) {
	B, K := p.Block, uint64(p.Servers)
	next := make([]uint64, p.Servers)
	b := o / B
	for blk := uint64(0); ; blk++ {
		r, i := blk/(K-1), blk%(K-1)
		ps := int(r % K)
		s := int(i)
		if s >= ps {
			s++
		}
		if blk == b {
			return s, next[s]*B + o%B
		}
		next[s]++
	}
}

func TestParityAgreesWithTheBlockModel(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for iter := 0; iter < 2000; iter++ {
		p := Parity{Block: uint64(1+r.IntN(4)) * 16, Servers: 3 + r.IntN(4)}
		size := uint64(1 + r.IntN(1500))
		a := uint64(r.IntN(2000))
		seg := p.SegmentSize(a + size)
		lo := make([]uint64, p.Servers)
		hi := make([]uint64, p.Servers)
		seen := make([]uint64, p.Servers)
		for j := range lo {
			lo[j] = ^uint64(0)
		}
		for o := a; o < a+size; o++ {
			j, s := raid5Model(p, o)
			if gj, gs, _ := p.Locate(o); gj != j || gs != s {
				t.Fatalf("%+v byte %d: Locate says server %d at %d, model %d at %d", p, o, gj, gs, j, s)
			}
			if s >= seg {
				t.Fatalf("%+v: byte %d at %d beyond data segment of %d", p, o, s, seg)
			}
			lo[j], hi[j] = min(lo[j], s), max(hi[j], s+1)
			seen[j]++
		}
		starts := make([]uint64, p.Servers)
		for j := 0; j < p.Servers; j++ {
			s, e := p.Share(a, size, j)
			starts[j] = s
			if seen[j] == 0 {
				if s != e {
					t.Fatalf("%+v item [%d,+%d) server %d: share [%d,%d), want empty", p, a, size, j, s, e)
				}
				continue
			}
			if s != lo[j] || e != hi[j] || e-s != seen[j] {
				t.Fatalf("%+v item [%d,+%d) server %d: share [%d,%d), want [%d,%d) of %d bytes", p, a, size, j, s, e, lo[j], hi[j], seen[j])
			}
		}
		off := uint64(r.IntN(int(size)))
		n := uint64(1 + r.IntN(int(size-off)))
		next := uint64(0)
		p.Pieces(a, starts, off, n, func(pc Piece) {
			if pc.Buf != next {
				t.Fatalf("piece %+v does not continue at %d", pc, next)
			}
			for k := uint64(0); k < pc.Len; k++ {
				j, s := raid5Model(p, a+off+pc.Buf+k)
				if j != pc.Server || s-starts[j] != pc.Off+k {
					t.Fatalf("%+v: piece %+v byte %d is on %d at %d", p, pc, k, j, s-starts[j])
				}
			}
			next += pc.Len
		})
		if next != n {
			t.Fatalf("pieces cover %d of %d", next, n)
		}
	}
}

func TestParityRowsInvertAndReconstruct(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for K := 3; K <= 7; K++ {
		p := Parity{Block: 8, Servers: K}
		rows := uint64(5 * K)
		size := rows * uint64(K-1) * p.Block
		data := make([][]byte, K)
		par := make([][]byte, K)
		for s := range data {
			data[s] = make([]byte, p.SegmentSize(size))
			par[s] = make([]byte, p.ParitySegmentSize(size))
		}
		region := make([]byte, size)
		for o := range region {
			region[o] = byte(r.Uint32())
			s, so, _ := p.Locate(uint64(o))
			data[s][so] = region[o]
		}
		for row := uint64(0); row < rows; row++ {
			pm, dm := p.Row(row)
			if pm.Server != p.ParityServer(row) || len(dm) != K-1 {
				t.Fatalf("row %d: %+v %+v", row, pm, dm)
			}
			if p.RowOfParity(pm.Server, pm.Off/p.Block) != row {
				t.Fatalf("K=%d row %d: parity index does not invert", K, row)
			}
			for _, m := range dm {
				if m.Server == pm.Server || p.RowOfData(m.Server, m.Off/p.Block) != row {
					t.Fatalf("K=%d row %d: data member %+v does not invert (got row %d)", K, row, m, p.RowOfData(m.Server, m.Off/p.Block))
				}
				XOR(par[pm.Server][pm.Off:pm.Off+p.Block], data[m.Server][m.Off:m.Off+p.Block])
			}
		}
		// Losing any one server, every byte of the region is recovered from
		// the others: its data blocks from the row's parity and other data.
		for dead := 0; dead < K; dead++ {
			for o := uint64(0); o < size; o++ {
				s, so, _ := p.Locate(o)
				if s != dead {
					continue
				}
				row := p.RowOfData(s, so/p.Block)
				pm, dm := p.Row(row)
				in := so % p.Block
				v := par[pm.Server][pm.Off+in]
				for _, m := range dm {
					if m.Server != dead {
						v ^= data[m.Server][m.Off+in]
					}
				}
				if v != region[o] {
					t.Fatalf("K=%d dead %d: byte %d reconstructed %#x, is %#x", K, dead, o, v, region[o])
				}
			}
		}
		// Memory: K/(K-1) of the data, against RAID1's 2x.
		total := uint64(K) * (p.SegmentSize(size) + p.ParitySegmentSize(size))
		if total*uint64(K-1) > size*uint64(K)+uint64(K*K)*p.Block*uint64(K-1) {
			t.Fatalf("K=%d: %d bytes stored for %d", K, total, size)
		}
	}
}

func TestXOR(t *testing.T) {
	a := []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	b := []byte{1, 1, 1, 1, 1, 1, 1, 1, 1}
	XOR(a, b)
	if !bytes.Equal(a, []byte{0, 3, 2, 5, 4, 7, 6, 9, 8, 10}) {
		t.Fatal(a)
	}
}
