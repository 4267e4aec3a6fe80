package core_test

import (
	"io"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/gofam/openfam/core"
	"github.com/gofam/openfam/core/amo"
	"github.com/gofam/openfam/core/embed"
	"github.com/gofam/openfam/core/transport"
)

// Benchmarks of the famd-served data path over loopback TCP, each beside a
// raw TCP baseline measured in the same run:
//
//	go test -run '^$' -bench Remote -benchtime 2s ./core/
//
// Remote/get256 vs Remote/raw-pingpong256, Remote/get4MiB and
// Remote/put4MiB vs Remote/raw-stream4MiB, Remote/putNB4KiB vs
// Remote/put4KiB.

func benchClient(b *testing.B) (*core.Fam, *core.Item) {
	d, err := embed.Start(embed.Options{NoSocket: true, TCPAddr: "127.0.0.1:0", Token: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { d.Close() })
	tok := b.TempDir() + "/token"
	if err := writeFile(tok, "bench"); err != nil {
		b.Fatal(err)
	}
	o := core.DefaultOptions()
	o.Server, o.TokenFile, o.Timeout, o.PEID, o.PECount = d.Addr(), tok, 30*time.Second, 0, 1
	f, err := core.Initialize(o)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { f.Finalize() })
	r, err := f.CreateRegion("bench", 64<<20, 0o600, core.RegionAttr{})
	if err != nil {
		b.Fatal(err)
	}
	it, err := r.Allocate("x", 16<<20, 0o600)
	if err != nil {
		b.Fatal(err)
	}
	return f, it
}

// rawServer echoes n-byte messages (ping-pong) or swallows a stream and
// acknowledges each n bytes with one byte.
func rawServer(b *testing.B, n int, echo bool) net.Conn {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { l.Close() })
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		buf := make([]byte, n)
		for {
			if _, err := io.ReadFull(c, buf); err != nil {
				return
			}
			out := buf
			if !echo {
				out = buf[:1]
			}
			if _, err := c.Write(out); err != nil {
				return
			}
		}
	}()
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	return c
}

func BenchmarkRemote(b *testing.B) {
	f, it := benchClient(b)
	c := f.Default()
	for _, n := range []int{256, 4 << 20} {
		buf := make([]byte, n)
		b.Run(sizeName("get", n), func(b *testing.B) {
			b.SetBytes(int64(n))
			for i := 0; i < b.N; i++ {
				if err := c.Get(buf, it, 0); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	big := make([]byte, 4<<20)
	b.Run("put4MiB", func(b *testing.B) {
		b.SetBytes(int64(len(big)))
		for i := 0; i < b.N; i++ {
			if err := c.Put(big, it, 0); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("raw-pingpong256", func(b *testing.B) {
		conn := rawServer(b, 256, true)
		buf := make([]byte, 256)
		b.SetBytes(256)
		for i := 0; i < b.N; i++ {
			conn.Write(buf)
			if _, err := io.ReadFull(conn, buf); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("raw-stream4MiB", func(b *testing.B) {
		conn := rawServer(b, 4<<20, false)
		ack := make([]byte, 1)
		b.SetBytes(int64(len(big)))
		for i := 0; i < b.N; i++ {
			conn.Write(big)
			if _, err := io.ReadFull(conn, ack); err != nil {
				b.Fatal(err)
			}
		}
	})
	small := make([]byte, 4096)
	b.Run("put4KiB", func(b *testing.B) {
		b.SetBytes(4096)
		for i := 0; i < b.N; i++ {
			if err := c.Put(small, it, uint64(i%1024)*4096); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("putNB4KiB", func(b *testing.B) {
		b.SetBytes(4096)
		for i := 0; i < b.N; i++ {
			if err := c.PutNB(small, it, uint64(i%1024)*4096); err != nil {
				b.Fatal(err)
			}
			if i%256 == 255 {
				if err := c.Quiet(); err != nil {
					b.Fatal(err)
				}
			}
		}
		if err := c.Quiet(); err != nil {
			b.Fatal(err)
		}
	})
}

func sizeName(op string, n int) string {
	if n >= 1<<20 {
		return op + strconv.Itoa(n>>20) + "MiB"
	}
	return op + strconv.Itoa(n)
}

// BenchmarkUnixAllocate measures fam_allocate + fam_deallocate of a
// 128-byte item through a famd on its Unix socket (two control round
// trips, a descriptor passed and mapped, the key revoked), beside one
// control round trip (LookupRegion) and the same pair on an embedded
// store, all in the same run:
//
//	go test -run '^$' -bench UnixAllocate -benchtime 2000x ./core/
func BenchmarkUnixAllocate(b *testing.B) {
	d, err := embed.Start(embed.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { d.Close() })
	o := core.DefaultOptions()
	o.Server, o.Timeout, o.PEID, o.PECount = "unix:"+d.SocketPath(), 30*time.Second, 0, 1
	f, err := core.Initialize(o)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { f.Finalize() })
	r, err := f.CreateRegion("alloc-bench", 64<<20, 0o600, core.RegionAttr{PermLevel: core.PermDataItem})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("famd-unix/alloc+dealloc128", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			it, err := r.Allocate("", 128, 0o600)
			if err != nil {
				b.Fatal(err)
			}
			if err := it.Deallocate(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("famd-unix/lookup-region", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			x, err := f.LookupRegion("alloc-bench")
			if err != nil {
				b.Fatal(err)
			}
			_ = x.Close()
		}
	})
	eo := core.DefaultOptions()
	dir := b.TempDir()
	eo.DataDir, eo.ShmDir, eo.BackupDir, eo.PEID, eo.PECount = dir+"/data", dir+"/shm", dir+"/backups", 0, 1
	e, err := core.Initialize(eo)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { e.Finalize() })
	er, err := e.CreateRegion("alloc-bench", 64<<20, 0o600, core.RegionAttr{PermLevel: core.PermDataItem})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("embedded/alloc+dealloc128", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			it, err := er.Allocate("", 128, 0o600)
			if err != nil {
				b.Fatal(err)
			}
			if err := it.Deallocate(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkRemoteSmall measures the small operations of issue 19 through
// a famd over loopback TCP with both ends polling as famd and the C
// library do by default (famd --spin, OPENFAM_SPIN): blocking 8 B get
// and put, fetch_add and add + quiet. Run with -benchmem: the
// allocations per operation are the deterministic part of the figure.
//
//	go test -run '^$' -bench RemoteSmall -benchmem ./core/
func BenchmarkRemoteSmall(b *testing.B) {
	d, err := embed.Start(embed.Options{NoSocket: true, TCPAddr: "127.0.0.1:0", Token: "bench",
		DataSpin: transport.DefaultServerSpin})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { d.Close() })
	tok := b.TempDir() + "/token"
	if err := writeFile(tok, "bench"); err != nil {
		b.Fatal(err)
	}
	o := core.DefaultOptions()
	o.Server, o.TokenFile, o.Timeout, o.PEID, o.PECount = d.Addr(), tok, 30*time.Second, 0, 1
	o.Spin = 100 * time.Microsecond // the C library's default
	f, err := core.Initialize(o)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { f.Finalize() })
	r, err := f.CreateRegion("small", 1<<20, 0o600, core.RegionAttr{})
	if err != nil {
		b.Fatal(err)
	}
	it, err := r.Allocate("x", 4096, 0o600)
	if err != nil {
		b.Fatal(err)
	}
	c := f.Default()
	buf := make([]byte, 8)
	for _, bm := range []struct {
		name string
		fn   func() error
	}{
		{"get8", func() error { return c.Get(buf, it, 0) }},
		{"put8", func() error { return c.Put(buf, it, 0) }},
		{"fetch_add", func() error { _, err := core.AtomicFetch(c, it, 1024, amo.Add, int64(1)); return err }},
		{"add+quiet", func() error {
			if err := core.AtomicDo(c, it, 1024, amo.Add, int64(1)); err != nil {
				return err
			}
			return c.Quiet()
		}},
	} {
		b.Run(bm.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if err := bm.fn(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
