package fabric

import (
	"net"
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/gofam/openfam/core/amo"
	"github.com/gofam/openfam/core/transport"
)

// benchPair opens a pair on prov for a benchmark with an item of size
// bytes, or skips naming the provider.
func benchPair(b *testing.B, prov string, size int) (*pair, transport.Key) {
	opts := Options{Logf: func(string, ...any) {}}
	// FABRIC_BENCH_CHUNK sets Options.ChunkSize, to compare piece sizes.
	if c, err := strconv.Atoi(os.Getenv("FABRIC_BENCH_CHUNK")); err == nil {
		opts.ChunkSize = c
	}
	// FABRIC_BENCH_SPIN sets Options.Spin (a Go duration).
	if d, err := time.ParseDuration(os.Getenv("FABRIC_BENCH_SPIN")); err == nil {
		opts.Spin = d
	}
	// FABRIC_BENCH_PROGRESS_SPIN sets Options.ProgressSpin.
	if d, err := time.ParseDuration(os.Getenv("FABRIC_BENCH_PROGRESS_SPIN")); err == nil {
		opts.ProgressSpin = d
	}
	pr := openPair(b, prov, opts)
	k, _ := pr.ctl.add(size, transport.RightRead|transport.RightWrite)
	if err := pr.p.Get(k, 0, make([]byte, 8)); err != nil { // resolve the key, connect
		b.Fatal(err)
	}
	return pr, k
}

func benchEach(b *testing.B, f func(b *testing.B, prov string)) {
	for _, prov := range providers {
		b.Run(prov, func(b *testing.B) { f(b, prov) })
	}
}

func BenchmarkGet8(b *testing.B)   { benchGet(b, 8) }
func BenchmarkGet256(b *testing.B) { benchGet(b, 256) }
func BenchmarkGet4M(b *testing.B)  { benchGet(b, 4<<20) }
func BenchmarkPut4M(b *testing.B)  { benchPut(b, 4<<20) }

func benchGet(b *testing.B, n int) {
	benchEach(b, func(b *testing.B, prov string) {
		pr, k := benchPair(b, prov, n)
		buf := make([]byte, n)
		b.SetBytes(int64(n))
		r := startUsage(b, pr)
		for i := 0; i < b.N; i++ {
			if err := pr.p.Get(k, 0, buf); err != nil {
				b.Fatal(err)
			}
		}
		r.report(b)
	})
}

func benchPut(b *testing.B, n int) {
	benchEach(b, func(b *testing.B, prov string) {
		pr, k := benchPair(b, prov, n)
		buf := make([]byte, n)
		b.SetBytes(int64(n))
		r := startUsage(b, pr)
		for i := 0; i < b.N; i++ {
			if err := pr.p.Put(k, 0, buf); err != nil {
				b.Fatal(err)
			}
		}
		r.report(b)
	})
}

// usage is the process's resource use at the start of a benchmark's
// timed loop: CPU time and context switches per operation (both ends of
// the pair are in the process) vary less with the host's load than the
// wall time does. It also reports how often the server's progress
// goroutine blocked and the client's caller parked per operation: near 0
// where polling after work serves a stream, about 1 where every
// operation costs a wake-up.
type usage struct {
	ru            syscall.Rusage
	pr            *pair
	blocks, parks int64
}

func startUsage(b *testing.B, pr *pair) *usage {
	r := &usage{pr: pr, blocks: pr.srv.blocks.Load(), parks: pr.cli.parks.Load()}
	syscall.Getrusage(syscall.RUSAGE_SELF, &r.ru)
	b.ResetTimer()
	return r
}

func (r *usage) report(b *testing.B) {
	b.StopTimer()
	var now syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &now)
	cpu := time.Duration(now.Utime.Nano() + now.Stime.Nano() - r.ru.Utime.Nano() - r.ru.Stime.Nano())
	cs := now.Nvcsw + now.Nivcsw - r.ru.Nvcsw - r.ru.Nivcsw
	n := float64(b.N)
	b.ReportMetric(float64(cpu.Microseconds())/n, "cpu-us/op")
	b.ReportMetric(float64(cs)/n, "ctxsw/op")
	b.ReportMetric(float64(r.pr.srv.blocks.Load()-r.blocks)/n, "srvblock/op")
	b.ReportMetric(float64(r.pr.cli.parks.Load()-r.parks)/n, "park/op")
}

// BenchmarkFetchAdd is an int64 fetch_add: native where the provider
// offers every atomic (sockets), elsewhere through the control path, here
// the project's TCP protocol on loopback (a transport.Server serving the
// items), as famd serves it.
func BenchmarkFetchAdd(b *testing.B) {
	benchEach(b, func(b *testing.B, prov string) {
		pr, k := benchPair(b, prov, 64)
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		srv := transport.NewServer(pr.ctl, transport.ServerOptions{})
		go srv.Serve(l)
		defer srv.Close()
		c, err := transport.Dial("tcp", l.Addr().String(), transport.ClientOptions{})
		if err != nil {
			b.Fatal(err)
		}
		p, err := pr.cli.Plane(pr.srv.Addr(), tcpCtl{c, pr.ctl})
		if err != nil {
			b.Fatal(err)
		}
		defer p.Close()
		pr.p = p
		b.ReportMetric(map[bool]float64{true: 1, false: 0}[pr.cli.NativeAtomics()], "native")
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if _, err := pr.p.Atomic(k, 0, amo.Int64, amo.Add, amo.Value{Lo: 1}, amo.Value{}, true); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// tcpCtl is a control path over the project's TCP protocol, with the
// fabric registrations from the in-process fake.
type tcpCtl struct {
	*transport.Client
	f *fakeCtl
}

func (c tcpCtl) FabricKey(k transport.Key) (rkey, base, size uint64, rights uint8, err error) {
	return c.f.FabricKey(k)
}

// Resolve serves the fake's items to a transport.Server.
func (c *fakeCtl) Resolve(k transport.Key) ([]byte, uint8, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	it, ok := c.items[k]
	if !ok {
		return nil, 0, false
	}
	return it.mem, it.rights, true
}
