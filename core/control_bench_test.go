package core_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/gofam/openfam/core"
	"github.com/gofam/openfam/core/embed"
)

// BenchmarkControl measures the control calls of issue 19 through a famd
// in this process, on its Unix socket and over TCP: fam_lookup (+ close),
// fam_lookup_region (+ close) and fam_allocate + fam_deallocate of a named
// 1 KiB item, in a volatile and a persistent region.
//
//	go test -run '^$' -bench Control -benchtime 2000x ./core/
func BenchmarkControl(b *testing.B) {
	d, err := embed.Start(embed.Options{DataDir: b.TempDir(), ShmDir: b.TempDir(), TCPAddr: "127.0.0.1:0", Token: "ctl"})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { d.Close() })
	tok := writeTokenB(b, "ctl")
	for _, tr := range []struct{ name, server, token string }{{"unix", "unix:" + d.SocketPath(), ""}, {"tcp", d.Addr(), tok}} {
		o := core.DefaultOptions()
		o.Server, o.TokenFile, o.Timeout, o.PEID, o.PECount = tr.server, tr.token, 30*time.Second, 0, 1
		f, err := core.Initialize(o)
		if err != nil {
			b.Fatal(err)
		}
		for _, mem := range []core.MemoryType{core.Volatile, core.Persistent} {
			rname := fmt.Sprintf("ctl-%s-%d", tr.name, mem)
			r, err := f.CreateRegion(rname, 64<<20, 0o600, core.RegionAttr{Memory: mem})
			if err != nil {
				b.Fatal(err)
			}
			if _, err := r.Allocate("it", 1024, 0o600); err != nil {
				b.Fatal(err)
			}
			kind := map[core.MemoryType]string{core.Volatile: "volatile", core.Persistent: "persistent"}[mem]
			b.Run(tr.name+"/"+kind+"/lookup", func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					it, err := f.Lookup("it", rname)
					if err != nil {
						b.Fatal(err)
					}
					it.Close()
				}
			})
			b.Run(tr.name+"/"+kind+"/lookup_region", func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					r, err := f.LookupRegion(rname)
					if err != nil {
						b.Fatal(err)
					}
					r.Close()
				}
			})
			b.Run(tr.name+"/"+kind+"/alloc+dealloc", func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					it, err := r.Allocate(fmt.Sprintf("a%d", i), 1024, 0o600)
					if err != nil {
						b.Fatal(err)
					}
					if err := it.Deallocate(); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
		f.Finalize()
	}
}

func writeTokenB(b *testing.B, tok string) string {
	p := b.TempDir() + "/token"
	if err := writeFile(p, tok); err != nil {
		b.Fatal(err)
	}
	return p
}
