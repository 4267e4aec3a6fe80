package allocator

import (
	"math/rand/v2"
	"testing"
)

// TestBlockTableMatchesMap drives a blockTable and a map with the same
// random sets and deletions over few offsets, so that probe runs collide,
// wrap around the table's end and shift back on deletion, and checks that
// both agree on every offset after each step.
func TestBlockTableMatchesMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var bt blockTable
	m := map[uint64]uint64{}
	const offsets = 500
	for step := range 40000 {
		off := uint64(rng.IntN(offsets)) * Align
		if _, ok := m[off]; ok && (step > 20000 || rng.IntN(3) == 0) {
			bt.del(off)
			delete(m, off)
		} else if !ok {
			sz := uint64(1+rng.IntN(8)) * Align
			bt.set(off, sz)
			m[off] = sz
		}
		bt.del(offsets*Align + off) // never recorded: a no-op
		if bt.n != len(m) {
			t.Fatalf("step %d: %d blocks, want %d", step, bt.n, len(m))
		}
		if step%101 == 0 {
			for o := uint64(0); o <= offsets; o++ {
				got, ok := bt.get(o * Align)
				want, wok := m[o*Align]
				if got != want || ok != wok {
					t.Fatalf("step %d: get(%d) = %d %v, want %d %v", step, o*Align, got, ok, want, wok)
				}
			}
		}
	}
}
