package core_test

import (
	"strings"
	"testing"

	"github.com/gofam/openfam/core"
	"github.com/gofam/openfam/core/embed"
	"github.com/gofam/openfam/core/fabric"
)

// TestFabricDevice: OpenFAM's if_device reaches the fabric endpoint on
// both sides. famd's (embed Device, famd --if-device) and a PE's, from the
// IF_DEVICE setting (Fam_Options.if_device, fam_pe_config.yaml), else
// $OPENFAM_IF_DEVICE: a device the provider has no domain of fails, naming
// it; "lo" serves puts and gets; the setting wins over the variable.
func TestFabricDevice(t *testing.T) {
	const prov = "sockets"
	if ep, err := fabric.Open(prov, fabric.Options{}); err != nil {
		t.Skipf("SKIP provider %s: not available here: %v", prov, err)
	} else {
		ep.Close()
	}
	if d, err := embed.Start(embed.Options{Provider: prov, Device: "nosuchdev9"}); err == nil {
		d.Close()
		t.Fatal("famd started on a device its provider has no domain of")
	} else if !strings.Contains(err.Error(), `"nosuchdev9"`) {
		t.Fatalf("famd on device nosuchdev9: %v; want the device named", err)
	}
	d := startFamd(t, embed.Options{Provider: prov, Device: "lo"})
	server := "unix:" + d.SocketPath()

	if _, err := initWith(t, server, prov, map[string]string{"IF_DEVICE": "nosuchdev9"}); err == nil || !strings.Contains(err.Error(), `"nosuchdev9"`) {
		t.Fatalf("IF_DEVICE=nosuchdev9: %v; want fam_initialize to fail naming the device", err)
	}
	t.Setenv("OPENFAM_IF_DEVICE", "nosuchdev8")
	if _, err := initWith(t, server, prov, nil); err == nil || !strings.Contains(err.Error(), `"nosuchdev8"`) {
		t.Fatalf("OPENFAM_IF_DEVICE=nosuchdev8: %v; want fam_initialize to fail naming the device", err)
	}
	f, err := initWith(t, server, prov, map[string]string{"IF_DEVICE": "lo"})
	if err != nil {
		t.Fatalf("IF_DEVICE=lo over OPENFAM_IF_DEVICE=nosuchdev8: %v", err)
	}
	r := mustV(f.CreateRegion("dev", 1<<20, 0o600, core.RegionAttr{}))(t, "create region")
	it := mustV(r.Allocate("x", 64, 0o600))(t, "allocate")
	ctx := f.Default()
	must(t, "put on domain lo", ctx.Put([]byte("on lo"), it, 0))
	got := make([]byte, 5)
	must(t, "get on domain lo", ctx.Get(got, it, 0))
	if string(got) != "on lo" {
		t.Fatalf("read %q", got)
	}
}
