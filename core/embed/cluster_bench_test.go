package embed_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/gofam/openfam/core"
	"github.com/gofam/openfam/core/embed"
)

// BenchmarkStripedGet64MiB reads one 64 MiB item with fam_get_blocking's
// Go counterpart from regions interleaved over 1, 2, 4 and 8 memory
// servers (1 MiB blocks, data planes on loopback TCP), and, as the
// baseline of the same run, from a lone famd (role all) over its TCP data
// plane. Every server runs in this process: on a machine with few cores
// the servers compete with the client for them, so the figures show the
// client's parallel split, not a cluster's bandwidth (see
// tests/stripe-bench.sh for servers with links of their own).
//
//	go test -run '^$' -bench StripedGet64MiB -benchtime 20x ./core/embed/
func BenchmarkStripedGet64MiB(b *testing.B) {
	const size = 64 << 20
	b.Run("lone-famd", func(b *testing.B) {
		d, err := embed.Start(embed.Options{TCPAddr: "127.0.0.1:0", Token: "bench-token", NoSocket: true})
		if err != nil {
			b.Fatal(err)
		}
		defer d.Close()
		tf := tokenFile(b)
		f, err := core.Initialize(core.Options{Server: d.Addr(), TokenFile: tf, UID: -1, GID: -1, PEID: 0, PECount: 1, Timeout: 30 * time.Second})
		if err != nil {
			b.Fatal(err)
		}
		defer f.Finalize()
		benchGet(b, f, size)
	})
	for _, k := range []int{1, 2, 4, 8} {
		b.Run(fmt.Sprintf("servers-%d", k), func(b *testing.B) {
			c := startCluster(b, k, "metadata", 1<<20)
			f := c.client(b)
			benchGet(b, f, size)
		})
	}
}

func benchGet(b *testing.B, f *core.Fam, size uint64) {
	r, err := f.CreateRegion("bench", size+(1<<20), 0o600, core.RegionAttr{})
	if err != nil {
		b.Fatal(err)
	}
	it, err := r.Allocate("x", size, 0o600)
	if err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, size)
	ctx := f.Default()
	if err := ctx.Put(buf, it, 0); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(size))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := ctx.Get(buf, it, 0); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStripedGet256 reads 256 bytes inside one interleave block of an
// item striped over two memory servers, and, as the baseline of the same
// run, from a lone famd's TCP data plane: a small request to a striped
// item should cost one round trip to one server, as an unstriped one does.
//
//	go test -run '^$' -bench StripedGet256 -benchtime 20000x ./core/embed/
func BenchmarkStripedGet256(b *testing.B) {
	b.Run("lone-famd", func(b *testing.B) {
		d, err := embed.Start(embed.Options{TCPAddr: "127.0.0.1:0", Token: "bench-token", NoSocket: true})
		if err != nil {
			b.Fatal(err)
		}
		defer d.Close()
		f, err := core.Initialize(core.Options{Server: d.Addr(), TokenFile: tokenFile(b), UID: -1, GID: -1, PEID: 0, PECount: 1, Timeout: 30 * time.Second})
		if err != nil {
			b.Fatal(err)
		}
		defer f.Finalize()
		benchSmallGet(b, f)
	})
	b.Run("servers-2", func(b *testing.B) {
		benchSmallGet(b, startCluster(b, 2, "metadata", 1<<20).client(b))
	})
}

func benchSmallGet(b *testing.B, f *core.Fam) {
	r, err := f.CreateRegion("bench", 4<<20, 0o600, core.RegionAttr{})
	if err != nil {
		b.Fatal(err)
	}
	it, err := r.Allocate("x", 2<<20, 0o600)
	if err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, 256)
	ctx := f.Default()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := ctx.Get(buf, it, 4096); err != nil {
			b.Fatal(err)
		}
	}
}
