package stripe

import (
	"math/rand/v2"
	"testing"
)

// model places every byte one at a time, the definition the closed forms
// of Layout must agree with.
func model(l Layout, o uint64) (int, uint64) {
	if l.Servers == 1 {
		return 0, o
	}
	b := o / l.Block
	return int(b % uint64(l.Servers)), (b/uint64(l.Servers))*l.Block + o%l.Block
}

func TestShareAndPiecesAgreeWithTheByteModel(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for iter := 0; iter < 3000; iter++ {
		l := Layout{Block: uint64(1+r.IntN(5)) * 16, Servers: 1 + r.IntN(5)}
		size := uint64(1 + r.IntN(2000))
		a := uint64(r.IntN(3000))
		seg := l.SegmentSize(a + size)
		lo := make([]uint64, l.Servers)
		hi := make([]uint64, l.Servers)
		seen := make([]uint64, l.Servers)
		for j := range lo {
			lo[j] = ^uint64(0)
		}
		for o := a; o < a+size; o++ {
			j, s := model(l, o)
			if s >= seg {
				t.Fatalf("%+v: byte %d at segment offset %d beyond segment size %d", l, o, s, seg)
			}
			lo[j], hi[j] = min(lo[j], s), max(hi[j], s+1)
			seen[j]++
		}
		starts := make([]uint64, l.Servers)
		for j := 0; j < l.Servers; j++ {
			s, e := l.Share(a, size, j)
			starts[j] = s
			if seen[j] == 0 {
				if s != e {
					t.Fatalf("%+v item [%d,+%d) server %d: share [%d,%d), want empty", l, a, size, j, s, e)
				}
				continue
			}
			if s != lo[j] || e != hi[j] {
				t.Fatalf("%+v item [%d,+%d) server %d: share [%d,%d), want [%d,%d)", l, a, size, j, s, e, lo[j], hi[j])
			}
			if e-s != seen[j] {
				t.Fatalf("%+v item [%d,+%d) server %d: share of %d bytes holds %d item bytes: not contiguous", l, a, size, j, e-s, seen[j])
			}
		}
		off := uint64(r.IntN(int(size)))
		n := uint64(1 + r.IntN(int(size-off)))
		next := uint64(0)
		l.Pieces(a, starts, off, n, func(p Piece) {
			if p.Buf != next || p.Len == 0 {
				t.Fatalf("%+v: piece %+v does not continue at %d", l, p, next)
			}
			for k := uint64(0); k < p.Len; k++ {
				j, s := model(l, a+off+p.Buf+k)
				if j != p.Server || s-starts[j] != p.Off+k {
					t.Fatalf("%+v: piece %+v byte %d is on server %d at share offset %d", l, p, k, j, s-starts[j])
				}
			}
			next += p.Len
		})
		if next != n {
			t.Fatalf("%+v: pieces cover %d of %d bytes", l, next, n)
		}
	}
}

func TestOneServerIsTheIdentity(t *testing.T) {
	l := Layout{Servers: 1}
	if !l.Valid() || l.SegmentSize(12345) != 12345 {
		t.Fatal("one server: segment must be the region")
	}
	if s, e := l.Share(100, 50, 0); s != 100 || e != 150 {
		t.Fatalf("share [%d,%d)", s, e)
	}
	if (Layout{Servers: 2}).Valid() || (Layout{Block: 64}).Valid() {
		t.Fatal("invalid layouts reported valid")
	}
}
