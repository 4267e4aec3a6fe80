package transport

import (
	"sync"
	"testing"

	"github.com/gofam/openfam/core/wire"
)

// countingObserver records what a Server tells its Observer.
type countingObserver struct {
	mu            sync.Mutex
	ok, failed    map[wire.Op]int
	read, written uint64
}

func (o *countingObserver) Request(op wire.Op, status uint32, read, written uint64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if status == wire.StatusOK {
		o.ok[op]++
	} else {
		o.failed[op]++
	}
	o.read += read
	o.written += written
}

// The Observer hears of every answered request with its op, its result
// and the item bytes it moved: puts and scatters written, gets and
// gathers read, failures (bad range, unknown key, no permission) counted
// without bytes.
func TestObserver(t *testing.T) {
	mem := newFileMem(t, t.TempDir(), 1<<20)
	key := mem.add(0, 1<<16, RightRead|RightWrite)
	ro := mem.add(1<<16, 4096, RightRead)
	obs := &countingObserver{ok: map[wire.Op]int{}, failed: map[wire.Op]int{}}
	s := NewServer(mem, ServerOptions{Observer: obs})
	c := dial(t, "unix", serve(t, s, "unix"), ClientOptions{})

	buf := make([]byte, 1000)
	if err := c.Put(key, 0, buf); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(key, 10, buf[:300]); err != nil {
		t.Fatal(err)
	}
	if err := c.ScatterStrided(key, buf[:8*10], 10, 0, 3, 8); err != nil {
		t.Fatal(err)
	}
	if err := c.GatherIndexed(key, buf[:16*4], []uint64{0, 5, 9, 2}, 16); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(key, 1<<16-10, buf[:100]); err == nil {
		t.Fatal("a get past the item's end succeeded")
	}
	if err := c.Put(ro, 0, buf[:10]); err == nil {
		t.Fatal("a put on a read-only key succeeded")
	}
	if err := c.Get(Key{9}, 0, buf[:10]); err == nil {
		t.Fatal("a get with an unknown key succeeded")
	}
	c.Close()
	s.Close()

	obs.mu.Lock()
	defer obs.mu.Unlock()
	for op, n := range map[wire.Op]int{wire.OpPut: 1, wire.OpGet: 1, wire.OpScatterStrided: 1, wire.OpGatherIndexed: 1} {
		if obs.ok[op] != n {
			t.Errorf("%v: %d answered ok, want %d", op, obs.ok[op], n)
		}
	}
	if obs.failed[wire.OpGet] != 2 || obs.failed[wire.OpPut] != 1 {
		t.Errorf("failures %v, want 2 gets and 1 put", obs.failed)
	}
	if obs.written != 1000+80 || obs.read != 300+64 {
		t.Errorf("bytes written %d, read %d; want %d and %d", obs.written, obs.read, 1080, 364)
	}
}
