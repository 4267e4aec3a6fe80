package embed_test

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gofam/openfam/core"
	"github.com/gofam/openfam/core/embed"
	"github.com/gofam/openfam/core/rpc"
	pb "github.com/gofam/openfam/spec/proto/openfamv1"
)

func info(t *testing.T, socket string) *pb.InfoReply {
	t.Helper()
	conn, err := rpc.DialUnix(socket, 60*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	rep, err := pb.NewFamClient(conn).Info(ctx, &pb.InfoRequest{})
	if err != nil {
		t.Fatalf("Info: %v", err)
	}
	return rep
}

func TestStartAndClose(t *testing.T) {
	d, err := embed.Start(embed.Options{})
	if err != nil {
		t.Fatal(err)
	}
	sock, dataSock, dir := d.SocketPath(), d.DataSocketPath(), d.DataDir()
	if dataSock != sock+".data" {
		t.Fatalf("data socket %q, want %q", dataSock, sock+".data")
	}
	for _, p := range []string{sock, dataSock} {
		st, err := os.Stat(p)
		if err != nil || st.Mode()&os.ModeSocket == 0 || st.Mode().Perm() != 0o666 {
			t.Fatalf("%s: %v %v, want a socket of mode 0666", p, st.Mode(), err)
		}
	}
	if rep := info(t, sock); rep.GetVersion() != rpc.APIVersion || rep.GetDataUnix() != dataSock || rep.GetDataDir() != dir {
		t.Fatalf("Info: %v", rep)
	}
	if err := d.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := d.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	// A temporary famd leaves nothing behind.
	for _, p := range []string{sock, dataSock, dir} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Fatalf("%s still exists after Close (%v)", p, err)
		}
	}
}

func TestDataDirInUse(t *testing.T) {
	dir := t.TempDir()
	d, err := embed.Start(embed.Options{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	t0 := time.Now()
	d2, err := embed.Start(embed.Options{DataDir: dir})
	if err == nil {
		d2.Close()
		t.Fatal("a second famd started on the same data directory")
	}
	if !strings.Contains(err.Error(), "in use by another famd") || time.Since(t0) > time.Second {
		t.Fatalf("second famd: %v after %v; want a prompt 'in use' error", err, time.Since(t0))
	}
}

func TestSocketInUseAndStale(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "f.sock")
	d, err := embed.Start(embed.Options{SocketPath: sock})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := embed.Start(embed.Options{SocketPath: sock}); err == nil || !strings.Contains(err.Error(), "another server is listening") {
		t.Fatalf("second famd on a live socket: %v", err)
	}
	d.Close()

	// A socket file whose server died is replaced.
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	l.Close()
	d, err = embed.Start(embed.Options{SocketPath: sock})
	if err != nil {
		t.Fatalf("start over a stale socket: %v", err)
	}
	defer d.Close()
	info(t, sock)

	notSock := filepath.Join(dir, "plain")
	os.WriteFile(notSock, nil, 0o600)
	if _, err := embed.Start(embed.Options{SocketPath: notSock}); err == nil || !strings.Contains(err.Error(), "not a socket") {
		t.Fatalf("start on a regular file: %v", err)
	}
}

func TestTCPPortPlusOne(t *testing.T) {
	// Find a free pair of ports by asking for one and trying the next.
	var d *embed.Famd
	for i := 0; i < 20 && d == nil; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		d, err = embed.Start(embed.Options{NoSocket: true, TCPAddr: addr, Token: "t"})
		if err != nil {
			t.Logf("ports near %s busy: %v", addr, err)
		}
	}
	if d == nil {
		t.Skip("no free pair of consecutive ports")
	}
	defer d.Close()
	_, p, _ := net.SplitHostPort(d.Addr())
	_, dp, _ := net.SplitHostPort(d.DataAddr())
	if pn, dpn := atoi(p), atoi(dp); dpn != pn+1 {
		t.Fatalf("gRPC on %s, data on %s: want port + 1", d.Addr(), d.DataAddr())
	}
}

func atoi(s string) int {
	n := 0
	for _, c := range s {
		n = n*10 + int(c-'0')
	}
	return n
}

func TestOptionErrors(t *testing.T) {
	if _, err := embed.Start(embed.Options{TCPAddr: "127.0.0.1:0"}); err == nil {
		t.Fatal("TCP without a token started")
	}
	if _, err := embed.Start(embed.Options{NoSocket: true}); err == nil {
		t.Fatal("a famd with nothing to serve started")
	}
}

// TestCoreClient drives famd through the core's own client
// (OPENFAM_SERVER mode), the way OpenFAM programs use it.
func TestCoreClient(t *testing.T) {
	d, err := embed.Start(embed.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	opts := core.DefaultOptions()
	opts.Server = "unix:" + d.SocketPath()
	opts.PEID, opts.PECount = 0, 1
	f, err := core.Initialize(opts)
	if err != nil {
		t.Fatalf("Initialize against famd: %v", err)
	}
	defer f.Finalize()
	r, err := f.CreateRegion("via-core", 1<<20, 0o600, core.RegionAttr{})
	if err != nil {
		t.Fatal(err)
	}
	it, err := r.Allocate("x", 4096, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	msg := []byte("through famd")
	if err := f.Default().Put(msg, it, 5); err != nil {
		t.Fatalf("Put: %v", err)
	}
	got := make([]byte, len(msg))
	if err := f.Default().Get(got, it, 5); err != nil || !bytes.Equal(got, msg) {
		t.Fatalf("Get: %q, %v", got, err)
	}
	if d.Server().Keys() == 0 {
		t.Fatal("famd issued no key for the client's item")
	}
	if err := it.Deallocate(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Lookup("x", "via-core"); core.CodeOf(err) != core.CodeNotFound {
		t.Fatalf("Lookup after Deallocate: %v", err)
	}
}
