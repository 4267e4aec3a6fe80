package fabric

import (
	"io"
	"net"
	"os"
	"strconv"
	"sync"
	"syscall"
	"testing"

	"github.com/gofam/openfam/core/transport"
)

// BenchmarkGet4MPairs and BenchmarkPut4MPairs move 4 MiB per operation
// split over FABRIC_BENCH_PAIRS (default 2) independent endpoint pairs
// (own connections, own progress goroutines), each moving its share at
// once: what several connections in parallel could give at best, against
// BenchmarkGet4M's one.
func BenchmarkGet4MPairs(b *testing.B) { benchPairs(b, false) }
func BenchmarkPut4MPairs(b *testing.B) { benchPairs(b, true) }

func benchPairs(b *testing.B, write bool) {
	n := 2
	if v, err := strconv.Atoi(os.Getenv("FABRIC_BENCH_PAIRS")); err == nil && v > 0 {
		n = v
	}
	const size = 4 << 20
	b.Run("tcp;ofi_rxm", func(b *testing.B) {
		prs := make([]*pair, n)
		keys := make([]transport.Key, n)
		for i := range prs {
			prs[i], keys[i] = benchPair(b, "tcp;ofi_rxm", size)
		}
		buf := make([]byte, size)
		share := size / n
		b.SetBytes(size)
		r := startUsage(b, prs[0])
		for it := 0; it < b.N; it++ {
			var wg sync.WaitGroup
			errs := make([]error, n)
			for i := range prs {
				wg.Add(1)
				go func(i int) {
					defer wg.Done()
					part := buf[i*share : (i+1)*share]
					if write {
						errs[i] = prs[i].p.Put(keys[i], 0, part)
					} else {
						errs[i] = prs[i].p.Get(keys[i], 0, part)
					}
				}(i)
			}
			wg.Wait()
			for _, err := range errs {
				if err != nil {
					b.Fatal(err)
				}
			}
		}
		r.report(b)
	})
}

// BenchmarkTCPGet4M and BenchmarkTCPPut4M are the kernel's ceiling for
// the 4 MiB figures over loopback: the same transfers over one plain TCP
// connection between two goroutines of the process (a 16-byte request,
// then 4 MiB one way and, for the put, an 8-byte answer), with none of
// libfabric. Their CPU time per operation (both ends, as for the fabric
// benchmarks) is what the kernel's copies and TCP stack cost.
func BenchmarkTCPGet4M(b *testing.B) { benchTCP(b, false) }
func BenchmarkTCPPut4M(b *testing.B) { benchTCP(b, true) }

func benchTCP(b *testing.B, put bool) {
	const size = 4 << 20
	// FABRIC_BENCH_TCP_PIECE > 0 frames a get's answer as tcp;ofi_rxm
	// frames a read's (a 16-byte header before every piece of that
	// size), to tell the framing's cost from the provider's.
	piece, _ := strconv.Atoi(os.Getenv("FABRIC_BENCH_TCP_PIECE"))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	served := make(chan error, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			served <- err
			return
		}
		defer c.Close()
		mem := make([]byte, size)
		var req [16]byte
		for {
			if _, err := io.ReadFull(c, req[:]); err != nil {
				served <- nil // the client closed
				return
			}
			if put {
				if _, err := io.ReadFull(c, mem); err != nil {
					served <- err
					return
				}
				_, err = c.Write(req[:8])
			} else if piece > 0 {
				// As tcp;ofi_rxm frames a read's answer: a 16-byte
				// header before each piece, one writev each.
				for off := 0; off < size && err == nil; off += piece {
					bufs := net.Buffers{req[:], mem[off:min(off+piece, size)]}
					_, err = bufs.WriteTo(c)
				}
			} else {
				_, err = c.Write(mem)
			}
			if err != nil {
				served <- err
				return
			}
		}
	}()
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, size)
	var req [16]byte
	op := func() error {
		if _, err := c.Write(req[:]); err != nil {
			return err
		}
		if put {
			if _, err := c.Write(buf); err != nil {
				return err
			}
			_, err := io.ReadFull(c, req[:8])
			return err
		}
		for off := 0; piece > 0 && off < size; off += piece {
			if _, err := io.ReadFull(c, req[:]); err != nil {
				return err
			}
			if _, err := io.ReadFull(c, buf[off:min(off+piece, size)]); err != nil {
				return err
			}
		}
		if piece > 0 {
			return nil
		}
		_, err := io.ReadFull(c, buf)
		return err
	}
	if err := op(); err != nil { // connect, grow the socket buffers
		b.Fatal(err)
	}
	b.SetBytes(size)
	var ru0, ru1 syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := op(); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
	cpu := ru1.Utime.Nano() + ru1.Stime.Nano() - ru0.Utime.Nano() - ru0.Stime.Nano()
	b.ReportMetric(float64(cpu)/1e3/float64(b.N), "cpu-us/op")
	c.Close()
	if err := <-served; err != nil {
		b.Fatal(err)
	}
}
