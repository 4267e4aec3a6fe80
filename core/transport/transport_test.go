package transport

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"net"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gofam/openfam/core/amo"
	"github.com/gofam/openfam/core/wire"
)

const itemOff, itemSize = 4096, 64 << 10

// fixture is a server over a file-backed heap with one read-write item,
// one read-only and one write-only item at page boundaries.
type fixture struct {
	mem          *fileMem
	rw, ro, wo   Key
	network, adr string
}

func newFixture(t *testing.T, network string, opts ServerOptions) *fixture {
	mem := newFileMem(t, t.TempDir(), 1<<20)
	f := &fixture{mem: mem, network: network,
		rw: mem.add(itemOff, itemSize, RightRead|RightWrite),
		ro: mem.add(itemOff+itemSize, 4096, RightRead),
		wo: mem.add(itemOff+itemSize+4096, 4096, RightWrite)}
	if opts.FDs == nil && network == "unix" {
		opts.FDs = mem
	}
	f.adr = serve(t, NewServer(mem, opts), network)
	return f
}

func (f *fixture) item() []byte { return f.mem.data[itemOff : itemOff+itemSize] }

func wantCode(t *testing.T, what string, err error, code int32) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) || e.Code != code {
		t.Fatalf("%s: error %v, want FAM code %d", what, err, code)
	}
}

func forNetworks(t *testing.T, fn func(t *testing.T, network string)) {
	for _, n := range []string{"tcp", "unix"} {
		t.Run(n, func(t *testing.T) { fn(t, n) })
	}
}

func TestOps(t *testing.T) {
	forNetworks(t, func(t *testing.T, network string) {
		f := newFixture(t, network, ServerOptions{})
		// Waiting callers poll for their replies on TCP (Unix sockets
		// ignore Spin): every op must read the same through the poller.
		c := dial(t, network, f.adr, ClientOptions{Spin: 50 * time.Microsecond})
		if err := c.Ping(); err != nil {
			t.Fatal(err)
		}

		src := []byte("fabric attached memory")
		if err := c.Put(f.rw, 100, src); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(f.item()[100:100+len(src)], src) {
			t.Fatalf("put did not land in the mapping: %q", f.item()[100:100+len(src)])
		}
		dst := make([]byte, len(src))
		if err := c.Get(f.rw, 100, dst); err != nil || !bytes.Equal(dst, src) {
			t.Fatalf("get: %q %v", dst, err)
		}

		// Strided: 4-byte elements 2, 5, 8 of the item.
		el := []byte("AAAABBBBCCCC")
		if err := c.ScatterStrided(f.rw, el, 3, 2, 3, 4); err != nil {
			t.Fatal(err)
		}
		for i, e := range []int{2, 5, 8} {
			if got := f.item()[e*4 : e*4+4]; !bytes.Equal(got, el[i*4:i*4+4]) {
				t.Fatalf("scatter strided element %d: %q", i, got)
			}
		}
		g := make([]byte, 12)
		if err := c.GatherStrided(f.rw, g, 3, 2, 3, 4); err != nil || !bytes.Equal(g, el) {
			t.Fatalf("gather strided: %q %v", g, err)
		}

		// Indexed: 8-byte elements at arbitrary indexes, out of order.
		idx := []uint64{40, 7, 1000}
		el = []byte("xxxxxxx1yyyyyyy2zzzzzzz3")
		if err := c.ScatterIndexed(f.rw, el, idx, 8); err != nil {
			t.Fatal(err)
		}
		for i, e := range idx {
			if got := f.item()[e*8 : e*8+8]; !bytes.Equal(got, el[i*8:i*8+8]) {
				t.Fatalf("scatter indexed element %d: %q", i, got)
			}
		}
		g = make([]byte, 24)
		if err := c.GatherIndexed(f.rw, g, idx, 8); err != nil || !bytes.Equal(g, el) {
			t.Fatalf("gather indexed: %q %v", g, err)
		}

		// Atomics, at the server on the mapping.
		word := func(off int) uint64 { return binary.LittleEndian.Uint64(f.item()[off:]) }
		binary.LittleEndian.PutUint64(f.item()[512:], 40)
		old, err := c.Atomic(f.rw, 512, amo.Int64, amo.Add, amo.Value{Lo: 2}, amo.Value{}, true)
		if err != nil || old.Lo != 40 || word(512) != 42 {
			t.Fatalf("fetch add: old %d word %d %v", old.Lo, word(512), err)
		}
		old, err = c.Atomic(f.rw, 512, amo.Int64, amo.CompareSwap, amo.Value{Lo: 7}, amo.Value{Lo: 42}, true)
		if err != nil || old.Lo != 42 || word(512) != 7 {
			t.Fatalf("compare swap: old %d word %d %v", old.Lo, word(512), err)
		}
		if _, err := c.Atomic(f.rw, 516, amo.Float32, amo.Set, amo.Value{Lo: uint64(math.Float32bits(1.5))}, amo.Value{}, false); err != nil {
			t.Fatal(err)
		}
		if got := math.Float32frombits(binary.LittleEndian.Uint32(f.item()[516:])); got != 1.5 {
			t.Fatalf("float32 set: %v", got)
		}
		v128 := amo.Value{Lo: 0x1111, Hi: 0x2222}
		if _, err := c.Atomic(f.rw, 528, amo.Int128, amo.Set, v128, amo.Value{}, false); err != nil {
			t.Fatal(err)
		}
		old, err = c.Atomic(f.rw, 528, amo.Int128, amo.Fetch, amo.Value{}, amo.Value{}, true)
		if err != nil || old != v128 {
			t.Fatalf("int128 fetch: %+v %v", old, err)
		}
		// A fetch needs only the read right.
		binary.LittleEndian.PutUint64(f.mem.data[itemOff+itemSize+8:], 99)
		old, err = c.Atomic(f.ro, 8, amo.Uint64, amo.Fetch, amo.Value{}, amo.Value{}, true)
		if err != nil || old.Lo != 99 {
			t.Fatalf("fetch on read-only item: %d %v", old.Lo, err)
		}
	})
}

func TestErrorCodes(t *testing.T) {
	forNetworks(t, func(t *testing.T, network string) {
		f := newFixture(t, network, ServerOptions{})
		// One connection, so that every refused request below is followed
		// on the same stream by the next one: the stream stays in step.
		c := dial(t, network, f.adr, ClientOptions{Conns: 1})
		buf := make([]byte, 16)
		big := make([]byte, 100<<10)

		wantCode(t, "get of 0 bytes", c.Get(f.rw, 0, nil), codeInvalid)
		wantCode(t, "put of 0 bytes", c.Put(f.rw, 0, []byte{}), codeInvalid)
		wantCode(t, "get past the end", c.Get(f.rw, itemSize-8, buf), codeOutOfRange)
		wantCode(t, "get at huge offset", c.Get(f.rw, math.MaxUint64-4, buf), codeOutOfRange)
		wantCode(t, "put past the end", c.Put(f.rw, itemSize, buf), codeOutOfRange)
		wantCode(t, "put larger than the item", c.Put(f.rw, 0, big), codeOutOfRange)
		wantCode(t, "put to read-only", c.Put(f.ro, 0, buf), codeNoPerm)
		wantCode(t, "get from write-only", c.Get(f.wo, 0, buf), codeNoPerm)
		if err := c.Get(Key{1}, 0, buf); !errors.Is(err, ErrStaleKey) {
			t.Fatalf("unknown key: %v", err)
		}
		if err := c.Put(Key{1}, 0, big[:8<<10]); !errors.Is(err, ErrStaleKey) {
			t.Fatalf("put with unknown key: %v", err)
		}

		wantCode(t, "gather of 0 elements", c.GatherStrided(f.rw, buf, 0, 0, 1, 4), codeInvalid)
		wantCode(t, "gather of 0-byte elements", c.GatherStrided(f.rw, buf, 2, 0, 1, 0), codeInvalid)
		wantCode(t, "indexed of 0 elements", c.GatherIndexed(f.rw, buf, nil, 4), codeInvalid)
		wantCode(t, "local buffer too small", c.GatherStrided(f.rw, buf, 5, 0, 1, 4), codeInvalid)
		wantCode(t, "gather from write-only", c.GatherStrided(f.wo, buf, 2, 0, 1, 4), codeNoPerm)
		wantCode(t, "scatter to read-only", c.ScatterIndexed(f.ro, buf, []uint64{0, 1}, 8), codeNoPerm)
		wantCode(t, "strided past the end", c.GatherStrided(f.rw, buf, 2, 0, itemSize/4, 4), codeOutOfRange)
		wantCode(t, "strided index overflow", c.GatherStrided(f.rw, buf, 2, 1, math.MaxUint64, 4), codeOutOfRange)
		wantCode(t, "indexed byte overflow", c.GatherIndexed(f.rw, buf, []uint64{0, math.MaxUint64 / 2}, 8), codeOutOfRange)

		// A refused scatter touches nothing, not even its valid elements.
		before := append([]byte(nil), f.item()...)
		wantCode(t, "scatter strided, last element out", c.ScatterStrided(f.rw, []byte("abcdefgh"), 2, 0, itemSize/4, 4), codeOutOfRange)
		wantCode(t, "scatter indexed, last element out", c.ScatterIndexed(f.rw, []byte("abcdefgh"), []uint64{0, itemSize / 4}, 4), codeOutOfRange)
		if !bytes.Equal(before, f.item()) {
			t.Fatal("a refused scatter changed the item")
		}

		none := amo.Value{}
		_, err := c.Atomic(f.rw, 4, amo.Int64, amo.Add, none, none, false)
		wantCode(t, "misaligned atomic", err, codeInvalid)
		_, err = c.Atomic(f.rw, 0, amo.Float64, amo.And, none, none, false)
		wantCode(t, "and on float64", err, codeInvalid)
		_, err = c.Atomic(f.rw, 0, amo.Kind(99), amo.Add, none, none, false)
		wantCode(t, "unknown kind", err, codeInvalid)
		_, err = c.Atomic(f.rw, itemSize, amo.Uint32, amo.Add, none, none, false)
		wantCode(t, "atomic past the end", err, codeOutOfRange)
		_, err = c.Atomic(f.ro, 0, amo.Uint64, amo.Add, none, none, false)
		wantCode(t, "add on read-only", err, codeNoPerm)
		_, err = c.Atomic(f.wo, 0, amo.Uint64, amo.Add, none, none, true)
		wantCode(t, "fetch-add on write-only", err, codeNoPerm)
		_, err = c.Atomic(f.wo, 0, amo.Uint64, amo.Fetch, none, none, false)
		wantCode(t, "fetch on write-only", err, codeNoPerm)
		if _, err = c.Atomic(f.wo, 0, amo.Uint64, amo.Add, amo.Value{Lo: 1}, none, false); err != nil {
			t.Fatalf("non-fetching add on write-only: %v", err)
		}
		if _, err := c.Atomic(Key{2}, 0, amo.Uint64, amo.Add, none, none, false); !errors.Is(err, ErrStaleKey) {
			t.Fatalf("atomic with unknown key: %v", err)
		}

		// After all those refusals the connection still works.
		if err := c.Put(f.rw, 0, []byte("ok")); err != nil {
			t.Fatal(err)
		}
		if err := c.Get(f.rw, 0, buf[:2]); err != nil || string(buf[:2]) != "ok" {
			t.Fatalf("after errors: %q %v", buf[:2], err)
		}
	})
}

func TestPipelining(t *testing.T) {
	f := newFixture(t, "tcp", ServerOptions{})
	c := dial(t, "tcp", f.adr, ClientOptions{Conns: 2})
	const n, size = 1000, 64
	src := make([]byte, n*size)
	rand.Read(src)
	calls := make([]*Call, n)
	for i := range calls {
		calls[i] = c.PutAsync(f.rw, uint64(i*size), src[i*size:(i+1)*size])
	}
	for i, cl := range calls {
		if err := cl.Wait(); err != nil {
			t.Fatalf("put %d: %v", i, err)
		}
	}
	if !bytes.Equal(f.item()[:n*size], src) {
		t.Fatal("pipelined puts: item differs")
	}
	dst := make([]byte, n*size)
	for i := range calls {
		calls[i] = c.GetAsync(f.rw, uint64(i*size), dst[i*size:(i+1)*size])
	}
	for _, cl := range calls {
		if err := cl.Wait(); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(dst, src) {
		t.Fatal("pipelined gets: data differs")
	}
}

func TestChunked64MiB(t *testing.T) {
	const size = 64 << 20
	mem := newFileMem(t, t.TempDir(), size+4096)
	key := mem.add(4096, size, RightRead|RightWrite)
	addr := serve(t, NewServer(mem, ServerOptions{}), "tcp")
	c := dial(t, "tcp", addr, ClientOptions{Spin: 50 * time.Microsecond})
	src := make([]byte, size)
	rand.Read(src)
	if err := c.Put(key, 0, src); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(mem.data[4096:], src) {
		t.Fatal("64 MiB put: mapping differs")
	}
	dst := make([]byte, size)
	if err := c.Get(key, 0, dst); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(dst, src) {
		t.Fatal("64 MiB get: data differs")
	}
	// Chunked gathers and scatters too: 4 MiB of 8-byte elements, every
	// other one.
	const n = 1 << 19
	g := make([]byte, n*8)
	if err := c.GatherStrided(key, g, n, 1, 2, 8); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i += 4099 {
		if !bytes.Equal(g[i*8:i*8+8], src[(1+2*i)*8:(2+2*i)*8]) {
			t.Fatalf("chunked gather element %d differs", i)
		}
	}
	idx := make([]uint64, n)
	for i := range idx {
		idx[i] = uint64(n - 1 - i)
	}
	if err := c.ScatterIndexed(key, g, idx, 8); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i += 4099 {
		if !bytes.Equal(mem.data[4096+(n-1-i)*8:][:8], g[i*8:i*8+8]) {
			t.Fatalf("chunked scatter element %d differs", i)
		}
	}
}

func TestConcurrentAtomics(t *testing.T) {
	forNetworks(t, func(t *testing.T, network string) {
		f := newFixture(t, network, ServerOptions{})
		c := dial(t, network, f.adr, ClientOptions{})
		const workers, each = 8, 300
		var wg sync.WaitGroup
		errs := make(chan error, workers)
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < each; i++ {
					if _, err := c.Atomic(f.rw, 64, amo.Uint64, amo.Add, amo.Value{Lo: 3}, amo.Value{}, i%2 == 0); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		if got := binary.LittleEndian.Uint64(f.item()[64:]); got != workers*each*3 {
			t.Fatalf("total %d, want %d", got, workers*each*3)
		}
	})
}

func TestToken(t *testing.T) {
	f := newFixture(t, "tcp", ServerOptions{Token: "s3cret"})
	_, err := Dial("tcp", f.adr, ClientOptions{Token: "wrong", Timeout: 5 * time.Second})
	wantCode(t, "wrong token", err, codeNoPerm)
	_, err = Dial("tcp", f.adr, ClientOptions{Timeout: 5 * time.Second})
	wantCode(t, "no token", err, codeNoPerm)

	// A request before Hello is refused and the connection closed, and
	// the request is not served.
	raw, err := net.Dial("tcp", f.adr)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	raw.Write(wire.Append(nil, wire.Header{Op: wire.OpPut, ID: 1, Key: f.rw, Arg: [4]uint64{0, 4}}, []byte("evil")))
	h, msg := readReply(t, raw)
	if h.Status != codeNoPerm || h.ID != 1 {
		t.Fatalf("put before hello: status %d id %d %q", h.Status, h.ID, msg)
	}
	if _, err := raw.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("connection not closed after refusal: %v", err)
	}
	if bytes.Equal(f.item()[:4], []byte("evil")) {
		t.Fatal("a request before Hello was served")
	}

	c := dial(t, "tcp", f.adr, ClientOptions{Token: "s3cret"})
	if err := c.Put(f.rw, 0, []byte("good")); err != nil || string(f.item()[:4]) != "good" {
		t.Fatalf("with the token: %v", err)
	}
}

func readReply(t *testing.T, c net.Conn) (wire.Header, string) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(60 * time.Second))
	var hb [wire.HeaderSize]byte
	h, err := wire.ReadHeader(c, &hb)
	if err != nil {
		t.Fatal(err)
	}
	msg := make([]byte, h.PayloadLen)
	if _, err := io.ReadFull(c, msg); err != nil {
		t.Fatal(err)
	}
	return h, string(msg)
}

func TestMalformedClosesOnlyThatConnection(t *testing.T) {
	f := newFixture(t, "tcp", ServerOptions{})
	c := dial(t, "tcp", f.adr, ClientOptions{Conns: 1})
	bad := map[string][]byte{
		"garbage":      bytes.Repeat([]byte{0xAB}, 100),
		"bad version":  func() []byte { b := wire.Append(nil, wire.Header{Op: wire.OpPing}, nil); b[4] = 9; return b }(),
		"inconsistent": wire.Append(nil, wire.Header{Op: wire.OpPut, Arg: [4]uint64{0, 99}}, []byte("x")),
		"reply frame":  wire.Append(nil, wire.Header{Op: wire.OpPing, Flags: wire.FlagReply}, nil),
		"huge payload": func() []byte {
			b := wire.Append(nil, wire.Header{Op: wire.OpPing}, nil)
			b[12], b[15] = 0xff, 0x7f
			return b
		}(),
		"unknown op": func() []byte { b := wire.Append(nil, wire.Header{Op: wire.OpPing}, nil); b[5] = 77; return b }(),
	}
	for name, b := range bad {
		raw, err := net.Dial("tcp", f.adr)
		if err != nil {
			t.Fatal(err)
		}
		// A valid request first, answered; then the bad frame closes it.
		raw.Write(wire.Append(nil, wire.Header{Op: wire.OpPing, ID: 5}, nil))
		if h, _ := readReply(t, raw); h.ID != 5 || h.Status != 0 {
			t.Fatalf("%s: ping reply %+v", name, h)
		}
		raw.Write(b)
		raw.SetReadDeadline(time.Now().Add(60 * time.Second))
		if n, err := raw.Read(make([]byte, 1)); err != io.EOF {
			t.Fatalf("%s: server did not close the connection: %d %v", name, n, err)
		}
		raw.Close()
		if err := c.Put(f.rw, 0, []byte(name)); err != nil {
			t.Fatalf("%s: the other connection broke: %v", name, err)
		}
	}
}

func TestServerKilledAndRestarted(t *testing.T) {
	file := filepath.Join(t.TempDir(), "heap")
	cmd, addr := startHelper(t, "127.0.0.1:0", file)
	const timeout = 2 * time.Second
	// The client polls for replies (as the C library's does): a reset
	// or EOF seen while polling fails the call like one seen asleep.
	c := dial(t, "tcp", addr, ClientOptions{Timeout: timeout, Spin: 100 * time.Microsecond})
	if err := c.Put(helperKey, 0, []byte("before the crash")); err != nil {
		t.Fatal(err)
	}

	// Kill it while 64 MiB transfers are in flight.
	buf := make([]byte, helperSize)
	errc := make(chan error, 1)
	start := time.Now()
	go func() {
		for {
			if err := c.Put(helperKey, 4096, buf[4096:]); err != nil {
				errc <- err
				return
			}
		}
	}()
	time.Sleep(100 * time.Millisecond)
	kill(t, cmd)
	select {
	case err := <-errc:
		if !errors.Is(err, ErrUnavailable) {
			t.Fatalf("transfer to a killed server: %v", err)
		}
	case <-time.After(timeout + 3*time.Second):
		t.Fatalf("transfer to a killed server still hangs after %v", time.Since(start))
	}
	// While it is down every call fails fast, none hangs.
	err := within(t, timeout+time.Second, func() error { return c.Get(helperKey, 0, buf[:16]) })
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("get while down: %v", err)
	}

	// Back on the same address and file: the client reconnects by itself
	// and sees what was acknowledged before the crash.
	startHelper(t, addr, file)
	got := make([]byte, 16)
	if err := c.Get(helperKey, 0, got); err != nil {
		t.Fatalf("after restart: %v", err)
	}
	if string(got) != "before the crash" {
		t.Fatalf("after restart: %q", got)
	}
	for i := 0; i < 8; i++ { // every slot of the pool redials
		if err := c.Ping(); err != nil {
			t.Fatalf("ping %d after restart: %v", i, err)
		}
	}
}

func TestSilentServer(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	// answerHello says whether the fake answers the Hello before falling
	// silent; it never reads anything after that.
	var answerHello bool
	var mu sync.Mutex
	var conns []net.Conn
	defer func() {
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
	}()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			hello := answerHello
			mu.Unlock()
			if hello {
				go func() {
					var hb [wire.HeaderSize]byte
					h, err := wire.ReadHeader(c, &hb)
					if err != nil {
						return
					}
					io.CopyN(io.Discard, c, int64(h.PayloadLen))
					c.Write(wire.Append(nil, wire.Header{Op: wire.OpHello, Flags: wire.FlagReply, ID: h.ID}, nil))
				}()
			}
		}
	}()
	const timeout = 300 * time.Millisecond
	err = within(t, 3*time.Second, func() error {
		_, err := Dial("tcp", l.Addr().String(), ClientOptions{Timeout: timeout})
		return err
	})
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("dial to a silent server: %v", err)
	}

	mu.Lock()
	answerHello = true
	mu.Unlock()
	// With and without polling for the reply (ClientOptions.Spin): the
	// deadline holds either way.
	for _, spin := range []time.Duration{0, 200 * time.Microsecond} {
		c := dial(t, "tcp", l.Addr().String(), ClientOptions{Conns: 1, Timeout: timeout, Spin: spin})
		for name, op := range map[string]func() error{
			"ping": c.Ping,
			"get":  func() error { return c.Get(Key{}, 0, make([]byte, 8)) },
			// Bigger than the socket buffers: the write itself blocks.
			"put 32 MiB": func() error { return c.Put(Key{}, 0, make([]byte, 32<<20)) },
		} {
			err := within(t, 3*time.Second, op)
			if !errors.Is(err, ErrUnavailable) {
				t.Fatalf("%s on a silent server (spin %v): %v", name, spin, err)
			}
		}
	}
}

func TestOpenFD(t *testing.T) {
	f := newFixture(t, "unix", ServerOptions{})
	copy(f.item()[10:], "mapped bytes")
	c := dial(t, "unix", f.adr, ClientOptions{})
	// Several at once on the pool: descriptors must match their replies.
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key, wantRights := f.rw, RightRead|RightWrite
			if i%2 == 1 {
				key, wantRights = f.ro, RightRead
			}
			fl, off, size, rights, err := c.OpenFD(key)
			if err != nil {
				t.Error(err)
				return
			}
			defer fl.Close()
			if rights != wantRights {
				t.Errorf("rights %d, want %d", rights, wantRights)
			}
			m, err := unix.Mmap(int(fl.Fd()), int64(off), int(size), unix.PROT_READ, unix.MAP_SHARED)
			if err != nil {
				t.Error(err)
				return
			}
			defer unix.Munmap(m)
			if key == f.rw && string(m[10:22]) != "mapped bytes" {
				t.Errorf("mapping shows %q", m[10:22])
			}
			if key == f.ro {
				if size != 4096 {
					t.Errorf("read-only item size %d", size)
				}
				// Read-only key, read-only descriptor: no writable mapping.
				if w, err := unix.Mmap(int(fl.Fd()), int64(off), int(size), unix.PROT_WRITE, unix.MAP_SHARED); err == nil {
					unix.Munmap(w)
					t.Error("a read-only key gave a writable descriptor")
				}
			}
		}()
	}
	wg.Wait()
	if _, _, _, _, err := c.OpenFD(Key{3}); !errors.Is(err, ErrStaleKey) {
		t.Fatalf("OpenFD with unknown key: %v", err)
	}
	// The pool still works after descriptors went over it.
	if err := c.Ping(); err != nil {
		t.Fatal(err)
	}

	tf := newFixture(t, "tcp", ServerOptions{FDs: f.mem})
	tc := dial(t, "tcp", tf.adr, ClientOptions{})
	_, _, _, _, err := tc.OpenFD(tf.rw)
	wantCode(t, "OpenFD over TCP", err, codeUnimpl)
}

func TestClosedClient(t *testing.T) {
	f := newFixture(t, "tcp", ServerOptions{})
	c, err := Dial("tcp", f.adr, ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if err := c.Ping(); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("ping after Close: %v", err)
	}
}

func TestOversizedReplies(t *testing.T) {
	f := newFixture(t, "tcp", ServerOptions{})
	raw, err := net.Dial("tcp", f.adr)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	// The Go client never sends these (it chunks), another client might:
	// the reply could not fit a frame, so they are refused, not malformed.
	for i, h := range []wire.Header{
		{Op: wire.OpGet, Key: f.rw, Arg: [4]uint64{0, wire.MaxPayload + 1}},
		{Op: wire.OpGatherStrided, Key: f.rw, Arg: [4]uint64{0, 1 << 22, 1, 8}},
		{Op: wire.OpGatherStrided, Key: f.rw, Arg: [4]uint64{0, 1 << 40, 1, 1 << 40}},
	} {
		h.ID = uint64(i + 1)
		raw.Write(wire.Append(nil, h, nil))
		if r, msg := readReply(t, raw); r.ID != h.ID || r.Status != codeInvalid {
			t.Fatalf("%v of %d: status %d %q", h.Op, h.Arg[1], r.Status, msg)
		}
	}
}
