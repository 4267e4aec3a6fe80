package core_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gofam/openfam/core"
	"github.com/gofam/openfam/core/embed"
	"github.com/gofam/openfam/core/fabric"
	"github.com/gofam/openfam/core/rpc"
	"github.com/gofam/openfam/core/transport"
)

// revokeProviders are the libfabric providers TestFabricRefusesRevokedKey
// runs on: those of $OPENFAM_TEST_PROVIDERS (comma-separated; tcp, the
// project's own plane, has no fabric to refuse anything), else every
// provider the fabric package is tested on.
func revokeProviders() []string {
	var ps []string
	for _, p := range strings.Split(os.Getenv("OPENFAM_TEST_PROVIDERS"), ",") {
		if p = strings.TrimSpace(p); p != "" && !strings.EqualFold(p, "tcp") {
			ps = append(ps, p)
		}
	}
	if len(ps) == 0 {
		ps = []string{"sockets", "tcp;ofi_rxm", "shm"}
	}
	return ps
}

// TestFabricRefusesRevokedKey (issue 15): a program whose key was revoked
// (the owner's chmod 0400, then a write) fails on the fabric itself, not
// only on our protocol. famd normally tells the program of the revocation
// first and the program then refuses the write itself; here the program
// holds the event back and writes through its fabric plane with the old
// key and the registration it cached: the memory server must have
// withdrawn that registration, so the fabric refuses it and the bytes
// stay as they were.
func TestFabricRefusesRevokedKey(t *testing.T) {
	for _, prov := range revokeProviders() {
		t.Run(strings.ReplaceAll(prov, ";", "+"), func(t *testing.T) {
			ep, err := fabric.Open(prov, fabric.Options{})
			if err != nil {
				t.Skipf("SKIP provider %s: not available here: %v", prov, err)
			}
			ep.Close()
			fabricRefusesRevokedKey(t, prov)
		})
	}
}

func fabricRefusesRevokedKey(t *testing.T, prov string) {
	dir := t.TempDir()
	tok := writeToken(t, "revoke-token")
	// Program A, the owner, is a TCP client famd knows as uid 7000 of this
	// process's group; program B, on famd's socket, is this process's
	// user: the mode bits bind B (the owner itself is bound by none).
	meta := startFamd(t, embed.Options{TCPAddr: "127.0.0.1:0", Token: "revoke-token", Role: "metadata",
		ShmDir: filepath.Join(dir, "meta-shm"), ServerToken: "revoke-server", Provider: prov,
		TCPIdentity: &rpc.Identity{UID: 7000, GID: uint32(os.Getgid())}})
	m, err := embed.StartMemory(embed.MemoryOptions{DataDir: filepath.Join(dir, "mem"), ShmDir: filepath.Join(dir, "shm"),
		TCPAddr: "127.0.0.1:0", Join: meta.Addr(), Token: "revoke-token", ServerToken: "revoke-server", Provider: prov})
	if err != nil {
		t.Fatalf("memory server on %s: %v", prov, err)
	}
	t.Cleanup(func() { m.Close() })
	select {
	case <-m.Joined():
	case <-time.After(60 * time.Second):
		t.Fatal("memory server did not join within 60s")
	}
	open := func(server string) *core.Fam {
		o := core.DefaultOptions()
		o.Server, o.TokenFile, o.Provider, o.Timeout = server, tok, prov, 20*time.Second
		f, err := core.Initialize(o)
		if err != nil {
			t.Fatalf("fam_initialize on the %s data plane: %v", prov, err)
		}
		t.Cleanup(func() { f.Finalize() })
		return f
	}
	a, b := open(meta.Addr()), open("unix:"+meta.SocketPath())

	// An item every program may write.
	r := mustV(a.CreateRegion("revoke", 1<<20, 0o770, core.RegionAttr{PermLevel: core.PermDataItem}))(t, "create region")
	ait := mustV(r.Allocate("x", 4096, 0o666))(t, "allocate")
	must(t, "the owner's first write", a.Default().Put(bytes.Repeat([]byte{'A'}, 64), ait, 0))

	// Program B writes once through the fabric: its plane caches the
	// registration of its key.
	bit := mustV(b.Lookup("x", "revoke"))(t, "lookup")
	q := b.HoldRevocations()
	want := bytes.Repeat([]byte{'B'}, 64)
	must(t, "B's write before the revocation", b.Default().Put(want, bit, 0))
	planes := core.MemPlanesFabric(b)
	if len(planes) == 0 {
		t.Fatal("B wrote to the item without a data plane to its memory server")
	}
	for id, isFab := range planes {
		if !isFab {
			t.Fatalf("B's data plane to memory server %d is not a %s fabric plane", id, prov)
		}
	}
	key, stalePut := core.KeyOf(bit), core.ViewPut(bit)

	// The owner revokes B's write right. famd withdraws the key from the
	// memory server (which withdraws it from its fabric endpoint before
	// answering) before it sends B the event, so once the event arrived
	// the fabric no longer honours the key.
	must(t, "chmod 0400", ait.ChangePermissions(0o400))
	select {
	case <-q.Arrived(key):
	case <-time.After(60 * time.Second):
		t.Fatal("famd did not send B the revocation within 60s")
	}

	err = stalePut(0, bytes.Repeat([]byte{'C'}, 64))
	t.Logf("%s: write with the revoked key on the fabric: %v", prov, err)
	if !errors.Is(err, transport.ErrStaleKey) || !strings.Contains(err.Error(), "fabric") {
		t.Errorf("B's write with its revoked key through its %s fabric plane: %v; want the fabric's refusal (wrapping transport.ErrStaleKey)", prov, err)
	}
	got := make([]byte, 64)
	must(t, "the owner's read", a.Default().Get(got, ait, 0))
	if !bytes.Equal(got, want) {
		t.Fatalf("after the refused write the item holds %q, want %q", got, want)
	}

	// Once B handles the revocation, its calls fail as a permission
	// error (mode 0400 leaves B nothing).
	q.Deliver(key)
	if err := b.Default().Put([]byte("D"), bit, 0); core.CodeOf(err) != core.CodeNoPerm {
		t.Fatalf("B's write after the revocation was handled: %v, want a permission error", err)
	}
	if err := b.Default().Get(got, bit, 0); core.CodeOf(err) != core.CodeNoPerm {
		t.Fatalf("B's read after the revocation was handled: %v, want a permission error", err)
	}
	must(t, "the owner's last read", a.Default().Get(got, ait, 0))
	if !bytes.Equal(got, want) {
		t.Fatalf("the item holds %q at the end, want %q", got, want)
	}
}
