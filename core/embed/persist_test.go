package embed_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/gofam/openfam/core"
	"github.com/gofam/openfam/core/amo"
	"github.com/gofam/openfam/core/embed"
	"github.com/gofam/openfam/internal/smaps"
)

// Persistence through famd and memory servers (issue 20): after Quiet no
// page of the persistent region's files is dirty in any mapping of this
// process, which here holds the writer, famd and the memory servers alike
// (all on real sockets). See core/persist_test.go for why smaps.

func dirtyUnder(t *testing.T, dirs ...string) int {
	t.Helper()
	total := 0
	for _, d := range dirs {
		n, err := smaps.DirtyKB(0, d)
		if err != nil {
			t.Fatal(err)
		}
		total += n
	}
	return total
}

func persistClient(t *testing.T, server, tokenFile string, p core.PersistPolicy) *core.Fam {
	t.Helper()
	f, err := core.Initialize(core.Options{Server: server, TokenFile: tokenFile, UID: -1, GID: -1, PEID: 0, PECount: 1,
		Timeout: 60 * time.Second, Persist: p, PersistInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Finalize() })
	return f
}

// checkQuietPersists writes to a persistent item through every kind of
// write, each followed by a quiet, and checks the pages under dirs before
// and after; under the lazy policy quiet must leave them dirty.
func checkQuietPersists(t *testing.T, f *core.Fam, attr core.RegionAttr, lazy bool, dirs ...string) {
	t.Helper()
	attr.Memory = core.Persistent
	r, err := f.CreateRegion("p", 16<<20, 0o600, attr)
	if err != nil {
		t.Fatal(err)
	}
	it, err := r.Allocate("x", 4<<20, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	c := f.Default()
	page := make([]byte, 4096)
	for i := range page {
		page[i] = byte(i)
	}
	writes := []struct {
		name string
		do   func() error
	}{
		{"blocking puts", func() error {
			for i := uint64(0); i < 64; i++ {
				if err := c.Put(page, it, i*4096*3); err != nil {
					return err
				}
			}
			return nil
		}},
		{"non-blocking puts", func() error {
			for i := uint64(0); i < 16; i++ {
				if err := c.PutNB(page, it, 1<<20+i*4096); err != nil {
					return err
				}
			}
			return nil
		}},
		{"scatter", func() error {
			return c.ScatterIndexed(make([]byte, 24), it, []uint64{8, 40000, 400000}, 8, false)
		}},
		{"atomic", func() error {
			_, err := c.Atomic(it, 3<<20, amo.Int64, amo.Add, core.Value{Lo: 5}, core.Value{}, false)
			return err
		}},
		{"copy", func() error {
			w, err := c.Copy(it, 0, it, 2<<20, 256<<10)
			if err != nil {
				return err
			}
			return w.Wait()
		}},
	}
	for _, w := range writes {
		if err := w.do(); err != nil {
			t.Fatalf("%s: %v", w.name, err)
		}
		if err := c.Quiet(); err != nil {
			t.Fatalf("%s: quiet: %v", w.name, err)
		}
		n := dirtyUnder(t, dirs...)
		if lazy {
			if n == 0 {
				t.Fatalf("%s: lazy: quiet left nothing dirty, want the pages left to the periodic flush", w.name)
			}
			if err := it.Persist(0, 4<<20); err != nil {
				t.Fatalf("%s: persist: %v", w.name, err)
			}
			if n := dirtyUnder(t, dirs...); n != 0 {
				t.Fatalf("%s: lazy: %d kB dirty after fam_persist", w.name, n)
			}
			continue
		}
		if n != 0 {
			t.Fatalf("%s: %d kB of the persistent region dirty after quiet", w.name, n)
		}
	}
}

func TestQuietPersistsThroughFamdUnixSocket(t *testing.T) {
	dir := t.TempDir()
	d, err := embed.Start(embed.Options{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	f := persistClient(t, "unix:"+d.SocketPath(), "", core.PersistQuiet)
	checkQuietPersists(t, f, core.RegionAttr{}, false, filepath.Join(dir, "regions"))
}

func TestQuietPersistsThroughFamdTCP(t *testing.T) {
	for _, lazy := range []bool{false, true} {
		dir := t.TempDir()
		tok := writeToken(t, dir, "persist-token")
		d, err := embed.Start(embed.Options{DataDir: filepath.Join(dir, "famd"), NoSocket: true, TCPAddr: "127.0.0.1:0", Token: "persist-token"})
		if err != nil {
			t.Fatal(err)
		}
		p := core.PersistQuiet
		if lazy {
			p = core.PersistLazy
		}
		f := persistClient(t, d.Addr(), tok, p)
		checkQuietPersists(t, f, core.RegionAttr{}, lazy, filepath.Join(dir, "famd", "regions"))
		f.Finalize()
		d.Close()
	}
}

func TestQuietPersistsOnStripedRegion(t *testing.T) {
	for _, lazy := range []bool{false, true} {
		c := startCluster(t, 2, "metadata", 64<<10)
		p := core.PersistQuiet
		if lazy {
			p = core.PersistLazy
		}
		f := persistClient(t, "unix:"+c.meta.SocketPath(), c.tokenFile, p)
		dirs := []string{c.mems[0].DataDir(), c.mems[1].DataDir()}
		checkQuietPersists(t, f, core.RegionAttr{Interleave: core.InterleaveEnable}, lazy, dirs...)
	}
}

// A handle closed before quiet took its key with it: its writes are made
// durable when it is closed.
func TestClosedHandleWritesAreDurable(t *testing.T) {
	dir := t.TempDir()
	tok := writeToken(t, dir, "persist-token")
	d, err := embed.Start(embed.Options{DataDir: filepath.Join(dir, "famd"), NoSocket: true, TCPAddr: "127.0.0.1:0", Token: "persist-token"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	f := persistClient(t, d.Addr(), tok, core.PersistQuiet)
	r, err := f.CreateRegion("p", 1<<20, 0o600, core.RegionAttr{Memory: core.Persistent})
	if err != nil {
		t.Fatal(err)
	}
	it, err := r.Allocate("x", 64<<10, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	for i := uint64(0); i < 8; i++ {
		if err := f.Default().Put([]byte("closed"), it, i*4096); err != nil {
			t.Fatal(err)
		}
	}
	regions := filepath.Join(dir, "famd", "regions")
	if dirtyUnder(t, regions) == 0 {
		t.Fatal("nothing dirty before close: the check could not fail")
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Default().Quiet(); err != nil {
		t.Fatal(err)
	}
	if n := dirtyUnder(t, regions); n != 0 {
		t.Fatalf("%d kB dirty after close and quiet", n)
	}
}
