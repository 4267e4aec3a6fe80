package transport

import (
	"bytes"
	"io"
	"math/rand/v2"
	"net"
	"testing"

	"github.com/gofam/openfam/core/wire"
)

// TestBatchBytes: a batch mixing copied pieces (headers, payloads under
// minRef, blocking frames) with referred payloads writes exactly the
// frames' bytes in queue order, and can be reused after it is written.
func TestBatchBytes(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var q batch
	for round := 0; round < 3; round++ {
		var want bytes.Buffer
		for i := 0; i < 40; i++ {
			n := []int{0, 7, minRef - 1, minRef, 4096, maxQueued}[rng.IntN(6)]
			p := make([]byte, n)
			for j := range p {
				p[j] = byte(rng.Uint32())
			}
			// Two pieces per frame, as a scatter with an index array has.
			payload := [][]byte{p[:n/3], p[n/3:]}
			h := wire.Header{Op: wire.OpPut, ID: uint64(i), PayloadLen: uint32(n), Arg: [4]uint64{0, uint64(n)}}
			var hb [wire.HeaderSize]byte
			h.Encode(hb[:])
			want.Write(hb[:])
			want.Write(p)
			q.add(&h, payload, i%5 != 0)
		}
		if q.size != want.Len() {
			t.Fatalf("round %d: batch counts %d bytes, frames hold %d", round, q.size, want.Len())
		}
		a, b := net.Pipe()
		got := make(chan []byte)
		go func() { all, _ := io.ReadAll(b); got <- all }()
		if err := q.writeTo(newRawWriter(a)); err != nil {
			t.Fatal(err)
		}
		a.Close()
		if g := <-got; !bytes.Equal(g, want.Bytes()) {
			t.Fatalf("round %d: batch wrote %d bytes that differ from the %d queued", round, len(g), want.Len())
		}
		if q.size != 0 || len(q.buf) != 0 || len(q.parts) != 0 || q.mark != 0 {
			t.Fatalf("round %d: batch not empty after writing", round)
		}
		for _, p := range q.parts[:cap(q.parts)] {
			if p != nil {
				t.Fatalf("round %d: written batch still refers to a caller's buffer", round)
			}
		}
	}
}

// TestPipelinedMixedSizes: non-blocking puts of sizes on both sides of
// minRef and up to maxQueued, interleaved with blocking puts and gets on
// one connection, so that batches mix copied and referred payloads with
// frames written at once. Every put lands where it was aimed, in issue
// order where they overlap.
func TestPipelinedMixedSizes(t *testing.T) {
	forNetworks(t, func(t *testing.T, network string) {
		f := newFixture(t, network, ServerOptions{})
		c := dial(t, network, f.adr, ClientOptions{Conns: 1})
		rng := rand.New(rand.NewPCG(3, 4))
		model := make([]byte, itemSize)
		var calls []*Call
		for i := 0; i < 2000; i++ {
			n := []int{1, 100, minRef - 1, minRef, 3000, 4096, maxQueued}[rng.IntN(7)]
			off := rng.IntN(itemSize - n + 1)
			src := make([]byte, n)
			for j := range src {
				src[j] = byte(rng.Uint32())
			}
			copy(model[off:], src)
			switch i % 50 {
			case 17:
				if err := c.Put(f.rw, uint64(off), src); err != nil {
					t.Fatalf("put %d: %v", i, err)
				}
			case 33:
				// A blocking get sees every put issued before it.
				dst := make([]byte, 512)
				if err := c.Get(f.rw, 0, dst); err != nil {
					t.Fatalf("get %d: %v", i, err)
				}
				if !bytes.Equal(dst, model[:512]) {
					t.Fatalf("get %d: item start differs from the puts issued before it", i)
				}
			default:
				calls = append(calls, c.PutAsync(f.rw, uint64(off), src))
			}
		}
		for i, cl := range calls {
			if err := cl.Wait(); err != nil {
				t.Fatalf("non-blocking put %d: %v", i, err)
			}
		}
		if !bytes.Equal(f.item(), model) {
			t.Fatal("item differs from the puts issued")
		}
	})
}
