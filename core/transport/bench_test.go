package transport

import (
	"io"
	"net"
	"testing"
	"time"
)

// The data plane against raw TCP on the same loopback: what the protocol
// and the client/server machinery cost on top of the sockets.

func benchClient(b *testing.B, size int) (*Client, Key) {
	mem := newFileMem(b, b.TempDir(), size+4096)
	key := mem.add(4096, uint64(size), RightRead|RightWrite)
	addr := serve(b, NewServer(mem, ServerOptions{}), "tcp")
	return dial(b, "tcp", addr, ClientOptions{}), key
}

// rawServer serves every connection on a loopback listener with fn.
func rawServer(b *testing.B, fn func(c net.Conn)) net.Conn {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); fn(c) }()
		}
	}()
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	return c
}

func BenchmarkGet256(b *testing.B) {
	c, key := benchClient(b, 1<<20)
	buf := make([]byte, 256)
	b.SetBytes(256)
	for b.Loop() {
		if err := c.Get(key, 0, buf); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRawTCPPingPong256(b *testing.B) {
	c := rawServer(b, func(c net.Conn) {
		buf := make([]byte, 256)
		for {
			if _, err := io.ReadFull(c, buf); err != nil {
				return
			}
			if _, err := c.Write(buf); err != nil {
				return
			}
		}
	})
	buf := make([]byte, 256)
	b.SetBytes(256)
	for b.Loop() {
		if _, err := c.Write(buf); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(c, buf); err != nil {
			b.Fatal(err)
		}
	}
}

const big = 4 << 20

func BenchmarkGet4MiB(b *testing.B) {
	c, key := benchClient(b, big)
	buf := make([]byte, big)
	b.SetBytes(big)
	for b.Loop() {
		if err := c.Get(key, 0, buf); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPut4MiB(b *testing.B) {
	c, key := benchClient(b, big)
	buf := make([]byte, big)
	b.SetBytes(big)
	for b.Loop() {
		if err := c.Put(key, 0, buf); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRawTCPCopy4MiB sends 4 MiB over one connection and waits for a
// one-byte acknowledgement: a single-stream copy, the baseline of Put.
func BenchmarkRawTCPCopy4MiB(b *testing.B) {
	c := rawServer(b, func(c net.Conn) {
		buf := make([]byte, big)
		for {
			if _, err := io.ReadFull(c, buf); err != nil {
				return
			}
			if _, err := c.Write(buf[:1]); err != nil {
				return
			}
		}
	})
	buf := make([]byte, big)
	b.SetBytes(big)
	for b.Loop() {
		if _, err := c.Write(buf); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(c, buf[:1]); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPut4KiB(b *testing.B) {
	c, key := benchClient(b, 1<<20)
	buf := make([]byte, 4096)
	b.SetBytes(4096)
	i := uint64(0)
	for b.Loop() {
		if err := c.Put(key, (i%256)*4096, buf); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkPutAsync4KiB keeps up to 64 puts outstanding on the pool.
func BenchmarkPutAsync4KiB(b *testing.B) {
	c, key := benchClient(b, 1<<20)
	buf := make([]byte, 4096)
	b.SetBytes(4096)
	const window = 64
	var calls [window]*Call
	i := 0
	for b.Loop() {
		if cl := calls[i%window]; cl != nil {
			if err := cl.Wait(); err != nil {
				b.Fatal(err)
			}
		}
		calls[i%window] = c.PutAsync(key, uint64(i%256)*4096, buf)
		i++
	}
	for _, cl := range calls {
		if cl != nil {
			if err := cl.Wait(); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkGet256Spin is BenchmarkGet256 with both ends polling (the
// server's DefaultServerSpin, the client's Spin as the C library sets it).
func BenchmarkGet256Spin(b *testing.B) {
	mem := newFileMem(b, b.TempDir(), 1<<20+4096)
	key := mem.add(4096, 1<<20, RightRead|RightWrite)
	s := NewServer(mem, ServerOptions{Spin: DefaultServerSpin})
	addr := serve(b, s, "tcp")
	c := dial(b, "tcp", addr, ClientOptions{Spin: 100 * time.Microsecond})
	buf := make([]byte, 256)
	b.SetBytes(256)
	for b.Loop() {
		if err := c.Get(key, 0, buf); err != nil {
			b.Fatal(err)
		}
	}
	polls, hits := s.SpinStats()
	b.ReportMetric(float64(hits)/float64(max(polls, 1)), "hits/poll")
	b.ReportMetric(float64(polls)/float64(b.N), "polls/op")
}
