package core_test

import (
	"testing"

	"github.com/gofam/openfam/core"
	"github.com/gofam/openfam/core/amo"
	"github.com/gofam/openfam/core/embed"
)

// TestRemoteNonFetchingAtomicsCompleteAtQuiet: over famd's TCP data plane
// fam_add and friends return once issued, as OpenFAM's do; fam_quiet
// completes them and reports their failures, here a famd gone away after
// the item was resolved (the call itself returns 0).
func TestRemoteNonFetchingAtomicsCompleteAtQuiet(t *testing.T) {
	d := startFamd(t, embed.Options{NoSocket: true, TCPAddr: "127.0.0.1:0", Token: "amo"})
	f := client(t, d.Addr(), writeToken(t, "amo"))
	defer f.Finalize()
	r, err := f.CreateRegion("amo", 1<<20, 0o600, core.RegionAttr{})
	if err != nil {
		t.Fatal(err)
	}
	it, err := r.Allocate("x", 4096, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	ctx := f.Default()
	const n = 500
	for i := 0; i < n; i++ {
		if err := core.AtomicDo(ctx, it, 8, amo.Add, int64(3)); err != nil {
			t.Fatal(err)
		}
		if err := core.AtomicDo(ctx, it, 16, amo.Max, int64(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := ctx.Quiet(); err != nil {
		t.Fatal(err)
	}
	if ctx.Progress() != 0 {
		t.Fatalf("%d operations outstanding after quiet", ctx.Progress())
	}
	for off, want := range map[uint64]int64{8: 3 * n, 16: n - 1} {
		got, err := core.AtomicFetch(ctx, it, off, amo.Fetch, int64(0))
		if err != nil || got != want {
			t.Fatalf("word at %d: %d, %v; want %d", off, got, err, want)
		}
	}
	// Bad arguments are still refused at the call.
	code(t, core.AtomicDo(ctx, it, 4096, amo.Add, int64(1)), core.CodeOutOfRange)
	code(t, core.AtomicDo(ctx, it, 4, amo.Add, int64(1)), core.CodeInvalid)

	d.Close()
	if err := core.AtomicDo(ctx, it, 8, amo.Add, int64(1)); err != nil {
		t.Fatalf("fam_add with famd gone: %v; want 0, its failure reported by quiet", err)
	}
	code(t, ctx.Quiet(), core.CodeRPC)
	if err := ctx.Quiet(); err != nil {
		t.Fatalf("a second quiet reported %v again", err)
	}
}
