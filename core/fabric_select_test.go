package core_test

import (
	"bytes"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gofam/openfam/core"
	"github.com/gofam/openfam/core/embed"
	"github.com/gofam/openfam/core/transport"
)

// announceFabric is a transport.FabricServer double: a server that says it
// runs provider prov. Nothing reaches it over a fabric; the tests below
// are about the choice of data plane, made before any byte moves.
type announceFabric struct{ prov string }

func (f announceFabric) Provider() string { return f.prov }
func (f announceFabric) Addr() []byte     { return []byte("fabric-address-of-" + f.prov) }
func (f announceFabric) Expose(transport.Key, []byte, uint8) (uint64, uint64, error) {
	return 1, 0, nil
}
func (f announceFabric) Withdraw(transport.Key) {}

func initWith(t *testing.T, server, provider string, settings map[string]string) (*core.Fam, error) {
	t.Helper()
	o := core.DefaultOptions()
	o.Server, o.Provider, o.Settings, o.Timeout = server, provider, settings, 30*time.Second
	f, err := core.Initialize(o)
	if err == nil {
		t.Cleanup(func() { f.Finalize() })
	}
	return f, err
}

// TestProviderMismatch: OPENFAM_PROVIDER naming another data plane than
// famd's fails fam_initialize with both names and what to do; naming the
// same one (or nothing) works.
func TestProviderMismatch(t *testing.T) {
	tcpd := startFamd(t, embed.Options{})
	fabd := startFamd(t, embed.Options{Fabric: announceFabric{"sockets"}})
	for _, tc := range []struct {
		server, want, runs string
	}{
		{"unix:" + tcpd.SocketPath(), "sockets", "tcp"},
		{"unix:" + tcpd.SocketPath(), "tcp;ofi_rxm", "tcp"},
		{"unix:" + fabd.SocketPath(), "tcp", "sockets"},
		{"unix:" + fabd.SocketPath(), "tcp;ofi_rxm", "sockets"},
	} {
		_, err := initWith(t, tc.server, tc.want, nil)
		var e *core.Error
		if err == nil || !errors.As(err, &e) || e.Op != "fam_initialize" ||
			!strings.Contains(err.Error(), `OPENFAM_PROVIDER="`+tc.want+`"`) || !strings.Contains(err.Error(), `"`+tc.runs+`" data plane`) ||
			!strings.Contains(err.Error(), "--provider") {
			t.Errorf("OPENFAM_PROVIDER=%q against a %q famd: %v; want fam_initialize to fail naming both and --provider", tc.want, tc.runs, err)
		}
	}
	for _, p := range []string{"", "tcp", "TCP"} {
		f, err := initWith(t, "unix:"+tcpd.SocketPath(), p, nil)
		if err != nil {
			t.Fatalf("OPENFAM_PROVIDER=%q against a tcp famd: %v", p, err)
		}
		f.Finalize()
	}
}

// TestProviderOpenFAMOptionWarns: a provider named only by OpenFAM's own
// options (Fam_Options.libfabricProvider, fam_pe_config.yaml: programs
// name "sockets" by habit) that the servers do not run gives one warning
// line and the servers' data plane, which then works.
func TestProviderOpenFAMOptionWarns(t *testing.T) {
	d := startFamd(t, embed.Options{})
	var mu sync.Mutex
	var warnings []string
	defer core.SetProviderWarn(func(s string) {
		mu.Lock()
		warnings = append(warnings, s)
		mu.Unlock()
	})()
	f, err := initWith(t, "unix:"+d.SocketPath(), "", map[string]string{"LIBFABRIC_PROVIDER": "sockets"})
	if err != nil {
		t.Fatalf("an OpenFAM provider option the servers do not run failed fam_initialize: %v", err)
	}
	r := mustV(f.CreateRegion("warn", 1<<20, 0o600, core.RegionAttr{}))(t, "create region")
	it := mustV(r.Allocate("x", 64, 0o600))(t, "allocate")
	must(t, "put", f.Default().Put([]byte("hello"), it, 0))
	got := make([]byte, 5)
	must(t, "get", f.Default().Get(got, it, 0))
	if string(got) != "hello" {
		t.Fatalf("read %q", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(warnings) != 1 || !strings.Contains(warnings[0], `"sockets"`) || !strings.Contains(warnings[0], `"tcp"`) ||
		!strings.Contains(warnings[0], "OPENFAM_PROVIDER") {
		t.Fatalf("warnings %q; want one line naming sockets, tcp and OPENFAM_PROVIDER", warnings)
	}
}

// TestProviderMismatchMemoryServer: a memory server running another data
// plane than OPENFAM_PROVIDER names is refused at its first use, with
// both names, and the call fails instead of moving bytes elsewhere.
func TestProviderMismatchMemoryServer(t *testing.T) {
	dir := t.TempDir()
	tokenFile := writeToken(t, "fabric-select")
	meta := startFamd(t, embed.Options{TCPAddr: "127.0.0.1:0", Token: "fabric-select", Role: "metadata",
		ShmDir: filepath.Join(dir, "meta-shm"), ServerToken: "fabric-select-server"})
	m, err := embed.StartMemory(embed.MemoryOptions{DataDir: filepath.Join(dir, "mem"), ShmDir: filepath.Join(dir, "shm"),
		TCPAddr: "127.0.0.1:0", Join: meta.Addr(), Token: "fabric-select", ServerToken: "fabric-select-server",
		Fabric: announceFabric{"tcp;ofi_rxm"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	select {
	case <-m.Joined():
	case <-time.After(60 * time.Second):
		t.Fatal("memory server did not join within 60s")
	}
	o := core.DefaultOptions()
	o.Server, o.TokenFile, o.Provider, o.Timeout = "unix:"+meta.SocketPath(), tokenFile, "tcp", 30*time.Second
	f, err := core.Initialize(o)
	if err != nil {
		t.Fatalf("fam_initialize against a tcp metadata famd: %v", err)
	}
	defer f.Finalize()
	r := mustV(f.CreateRegion("mm", 1<<20, 0o600, core.RegionAttr{}))(t, "create region")
	it := mustV(r.Allocate("x", 4096, 0o600))(t, "allocate")
	err = f.Default().Put(bytes.Repeat([]byte{1}, 4096), it, 0)
	if err == nil || !strings.Contains(err.Error(), `OPENFAM_PROVIDER="tcp"`) || !strings.Contains(err.Error(), `"tcp;ofi_rxm" data plane`) ||
		!strings.Contains(err.Error(), "memory server") {
		t.Fatalf("put to a tcp;ofi_rxm memory server with OPENFAM_PROVIDER=tcp: %v; want a refusal naming both", err)
	}
}

// TestFamdFabricPlaneRenewed: when famd's own fabric plane fails as
// unavailable (famd came back with its endpoint elsewhere), the failing
// call reports it and the next call runs on a plane rebuilt from what
// famd announces now.
func TestFamdFabricPlaneRenewed(t *testing.T) {
	d := startFamd(t, embed.Options{NoSocket: true, TCPAddr: "127.0.0.1:0", Token: "renew-token"})
	f := client(t, d.Addr(), writeToken(t, "renew-token"))
	defer f.Finalize()
	core.BreakFamdFabricPlane(f)
	r := mustV(f.CreateRegion("renew", 1<<20, 0o600, core.RegionAttr{}))(t, "create region")
	it := mustV(r.Allocate("x", 64, 0o600))(t, "allocate")
	ctx := f.Default()
	if err := ctx.Put([]byte("first"), it, 0); core.CodeOf(err) != core.CodeRPC {
		t.Fatalf("put on the dead plane: %v, want FAM_ERR_RPC (unavailable)", err)
	}
	must(t, "put after the renewal", ctx.Put([]byte("again"), it, 0))
	got := make([]byte, 5)
	must(t, "get", ctx.Get(got, it, 0))
	if string(got) != "again" {
		t.Fatalf("read %q", got)
	}
}
