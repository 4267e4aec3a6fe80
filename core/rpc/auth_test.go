package rpc_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/gofam/openfam/core"
	"github.com/gofam/openfam/core/embed"
	"github.com/gofam/openfam/core/rpc"
	"github.com/gofam/openfam/internal/famauth"
	"github.com/gofam/openfam/internal/munge/mungetest"
	pb "github.com/gofam/openfam/spec/proto/openfamv1"
)

// spoofer is a client that holds the cluster token and claims to be
// uid:gid over TCP the way clients did before famd stopped believing them
// (x-fam-uid, x-fam-gid metadata on every call).
func spoofer(t *testing.T, addr, token string, uid, gid uint32) pb.FamClient {
	t.Helper()
	conn, err := grpc.NewClient("passthrough:///"+addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn,
			invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
			ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+token,
				"x-fam-uid", fmt.Sprint(uid), "x-fam-gid", fmt.Sprint(gid))
			return invoker(ctx, method, req, reply, cc, opts...)
		}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return pb.NewFamClient(conn)
}

// TestTCPClaimedIdentityIgnored: uid A's 0600 item, made on the Unix
// socket, stays out of reach of a TCP client that holds the cluster token
// and claims to be A. famd runs with its default token mode, where every
// TCP client is famd's own uid; A is nobody (65534), whom a helper
// process runs as (root only). Before famd ignored claimed ids, the
// spoofer got A's rights.
func TestTCPClaimedIdentityIgnored(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to run a client as a second user (nobody)")
	}
	const token = "spoof-test-token"
	d, _ := start(t, embed.Options{TCPAddr: "127.0.0.1:0", Token: token})
	if err := os.Chmod(dirOf(d.SocketPath()), 0o755); err != nil {
		t.Fatal(err)
	}
	out := runHelper(t, 65534, "nobody-item", "FAMD_SOCK="+d.SocketPath())
	if want := "made nobodys-region/secret uid=65534\n"; out != want {
		t.Fatalf("helper said %q, want %q", out, want)
	}
	s := spoofer(t, d.Addr(), token, 65534, 65534)
	check(s.Lookup(ctx(t), &pb.LookupRequest{Region: "nobodys-region", Item: "secret"})).code(t, "Lookup of nobody's 0600 item by a spoofer claiming uid 65534", core.CodeNoPerm)
	check(s.LookupRegion(ctx(t), &pb.LookupRegionRequest{Name: "nobodys-region"})).code(t, "LookupRegion of nobody's 0700 region by the spoofer", core.CodeNoPerm)
	// Whatever it claims, a TCP client is famd's one TCP identity.
	r := createRegion(t, s, "spoofers", 1<<20, 0o600)
	if r.GetUid() != uint32(os.Getuid()) || r.GetGid() != uint32(os.Getgid()) {
		t.Fatalf("region made over TCP by a client claiming 65534 is owned by %d:%d, want famd's %d:%d",
			r.GetUid(), r.GetGid(), os.Getuid(), os.Getgid())
	}
}

// TestTCPIdentityConfigured: with --tcp-identity every TCP client is that
// identity, whatever it claims: the Unix caller's 0600 item is out of its
// reach even when it claims the Unix caller's uid. A client insisting on
// MUNGE is told this famd does not do MUNGE rather than quietly mapped.
func TestTCPIdentityConfigured(t *testing.T) {
	const token = "ident-test-token"
	d, c := start(t, embed.Options{TCPAddr: "127.0.0.1:0", Token: token, TCPIdentity: &rpc.Identity{UID: 4321, GID: 8765}})
	mine := createRegion(t, c, "unix-callers", 1<<20, 0o755)
	check(c.Allocate(ctx(t), &pb.AllocateRequest{RegionId: mine.GetId(), Name: "private", Size: 64, Mode: 0o600})).ok(t, "Allocate")
	s := spoofer(t, d.Addr(), token, uint32(os.Getuid()), uint32(os.Getgid()))
	check(s.LookupRegion(ctx(t), &pb.LookupRegionRequest{Name: "unix-callers"})).ok(t, "LookupRegion of a 0755 region")
	check(s.Lookup(ctx(t), &pb.LookupRequest{Region: "unix-callers", Item: "private"})).code(t, "Lookup of a 0600 item by a spoofer", core.CodeNoPerm)
	if r := createRegion(t, s, "tcp-made", 1<<20, 0o600); r.GetUid() != 4321 || r.GetGid() != 8765 {
		t.Fatalf("region made over TCP owned by %d:%d, want 4321:8765", r.GetUid(), r.GetGid())
	}
	conn, err := rpc.DialTCP(d.Addr(), &famauth.Client{Token: token, Mode: famauth.ModeMunge}, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_, err = pb.NewFamClient(conn).Info(ctx(t), &pb.InfoRequest{})
	if status.Code(err) != codes.Unauthenticated || !strings.Contains(err.Error(), "does not authenticate users with MUNGE") {
		t.Fatalf("a client insisting on MUNGE against a token-mode famd: %v", err)
	}
}

// fakeJoin is a Join as a fake memory server holding the cluster token
// would send it, with proof (the server proof metadata) when not "".
func fakeJoin(t *testing.T, c pb.FamClient, proof string) *pb.JoinReply {
	t.Helper()
	req := &pb.JoinRequest{Uuid: "fake-memory-server", Control: "127.0.0.1:1", DataTcp: "127.0.0.1:2",
		Hostname: "attacker", Secret: []byte("attackers-secret")}
	cx := ctx(t)
	if proof != "" {
		cx = metadata.AppendToOutgoingContext(cx, famauth.MDServerProof, proof)
	}
	rep, err := c.Join(cx, req)
	if err != nil {
		t.Fatalf("Join: gRPC error %v", err)
	}
	return rep
}

// warnings collects the lines famd logs at level warning.
type warnings struct {
	mu    sync.Mutex
	lines []string
}

func (w *warnings) logf(format string, args ...any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.lines = append(w.lines, fmt.Sprintf(format, args...))
}

func (w *warnings) count(sub string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, l := range w.lines {
		if strings.Contains(l, sub) {
			n++
		}
	}
	return n
}

// TestFakeMemoryServerRefused: a process holding only the cluster token
// (what every PE has) cannot join as a memory server, over TCP or with a
// proof made from the cluster token; each refusal is FAM_ERR_NOPERM and
// a warning. Regions made afterwards are not placed on it. Before the
// server credential, the fake joined and received every new interleaved
// region.
func TestFakeMemoryServerRefused(t *testing.T) {
	const token = "join-test-token"
	for _, serverToken := range []string{"", "join-test-server-token"} {
		t.Run(fmt.Sprintf("server token %q", serverToken), func(t *testing.T) {
			var w warnings
			d, c := start(t, embed.Options{TCPAddr: "127.0.0.1:0", Token: token, TCPIdentity: &rpc.Identity{UID: 4321, GID: 8765},
				ServerToken: serverToken, WarnLogf: w.logf})
			tcp := pbClient(t, d.Addr(), token)
			check(tcp.Info(ctx(t), &pb.InfoRequest{})).ok(t, "Info with the cluster token")
			fake := &pb.JoinRequest{Uuid: "fake-memory-server", Control: "127.0.0.1:1", DataTcp: "127.0.0.1:2",
				Hostname: "attacker", Secret: []byte("attackers-secret")}
			tries := map[string]*pb.JoinReply{
				"TCP, cluster token only":             fakeJoin(t, tcp, ""),
				"TCP, proof keyed with cluster token": fakeJoin(t, tcp, famauth.ServerProof(token, rpc.JoinProofFields(fake)...)),
				"TCP, garbage proof":                  fakeJoin(t, tcp, "00"),
			}
			if serverToken != "" {
				// With a server token even famd's own uid on the Unix
				// socket needs it.
				tries["Unix socket, famd's uid, no proof"] = fakeJoin(t, c, "")
			}
			for what, rep := range tries {
				if rep.GetErr().GetCode() != int32(core.CodeNoPerm) || rep.GetServerId() != 0 {
					t.Errorf("fake memory server joining (%s): %v, server id %d; want FAM_ERR_NOPERM", what, rep.GetErr(), rep.GetServerId())
				}
			}
			if n := w.count("refused a memory server joining"); n != len(tries) {
				t.Errorf("%d refusal warnings logged for %d refused joins: %q", n, len(tries), w.lines)
			}
			servers := check(c.Servers(ctx(t), &pb.ServersRequest{})).ok(t, "Servers")
			if len(servers.GetServers()) != 0 {
				t.Fatalf("memory servers after refused joins: %v", servers.GetServers())
			}
			r := createRegion(t, tcp, "after-fake-join", 1<<20, 0o600)
			for _, id := range r.GetServers() {
				if id != 0 { // 0 is famd's own storage
					t.Fatalf("a region made after the refused joins is placed on servers %v", r.GetServers())
				}
			}
			if serverToken == "" {
				// Without a server token famd's own uid may join on the
				// Unix socket: the kernel vouches for it.
				if rep := fakeJoin(t, c, ""); rep.GetErr() != nil || rep.GetServerId() == 0 {
					t.Fatalf("a join on the Unix socket by famd's own uid: %v", rep.GetErr())
				}
				return
			}
			// The holder of the server token joins, on either socket.
			good := proto.Clone(fake).(*pb.JoinRequest)
			good.Uuid = "real-memory-server"
			rep, err := tcp.Join(metadata.AppendToOutgoingContext(ctx(t), famauth.MDServerProof,
				famauth.ServerProof(serverToken, rpc.JoinProofFields(good)...)), good)
			if err != nil || rep.GetErr() != nil || rep.GetServerId() == 0 {
				t.Fatalf("a join with the server token's proof: %v %v", err, rep.GetErr())
			}
			// A captured proof registers nothing but what it was made for.
			moved := proto.Clone(good).(*pb.JoinRequest)
			moved.Control = "10.6.6.6:1"
			rep, err = tcp.Join(metadata.AppendToOutgoingContext(ctx(t), famauth.MDServerProof,
				famauth.ServerProof(serverToken, rpc.JoinProofFields(good)...)), moved)
			if err != nil || rep.GetErr().GetCode() != int32(core.CodeNoPerm) {
				t.Fatalf("a replayed proof with another control address: %v %v; want FAM_ERR_NOPERM", err, rep.GetErr())
			}
		})
	}
}

// TestMungeIdentity runs famd with --auth munge against a private munged:
// a client process running as nobody over TCP acts as nobody (its own
// 0600 item works, root's is refused), root over TCP acts as root (the
// reverse), and token holders without MUNGE get nothing.
func TestMungeIdentity(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to run a client as a second user (nobody)")
	}
	sock := mungetest.Start(t)
	const token = "munge-test-token"
	d, c := start(t, embed.Options{TCPAddr: "127.0.0.1:0", Token: token, Auth: famauth.ModeMunge, MungeSocket: sock})
	shared := createRegion(t, c, "shared", 1<<20, 0o777)
	a := check(c.Allocate(ctx(t), &pb.AllocateRequest{RegionId: shared.GetId(), Name: "roots", Size: 64, Mode: 0o600})).ok(t, "Allocate").GetItem()
	if err := dataClient(t, "unix", d.DataSocketPath(), "").Put(key(t, a.GetKey()), 0, []byte("root's secret")); err != nil {
		t.Fatal(err)
	}

	// A token holder that does not answer the challenge gets nothing,
	// whatever it claims.
	if _, err := spoofer(t, d.Addr(), token, 0, 0).Info(ctx(t), &pb.InfoRequest{}); status.Code(err) != codes.Unauthenticated {
		t.Fatalf("token-only client of a MUNGE famd: %v, want Unauthenticated", err)
	}

	tokDir, err := os.MkdirTemp("", "famd-munge-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(tokDir) })
	tf := filepath.Join(tokDir, "token")
	if err := os.WriteFile(tf, []byte(token), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(tokDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(tf, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	out := runHelper(t, 65534, "munge-client", "FAMD_ADDR="+d.Addr(), "OPENFAM_TOKEN_FILE="+tf, "OPENFAM_MUNGE_SOCKET="+sock)
	if want := "own item uid=65534 read=mine; root's item: code 2\n"; out != want {
		t.Fatalf("nobody's MUNGE client said %q, want %q", out, want)
	}

	// One client, two connections, calls racing on each: every call is
	// served, as root, after at most one handshake per connection.
	cl := &famauth.Client{Token: token, MungeSocket: sock}
	var wg sync.WaitGroup
	for range 2 {
		conn, err := rpc.DialTCP(d.Addr(), cl, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		fc := pb.NewFamClient(conn)
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rep, err := fc.RegionByID(ctx(t), &pb.RegionByIDRequest{Id: shared.GetId()})
				if err != nil || rep.GetErr() != nil || rep.GetRegion().GetUid() != 0 {
					t.Errorf("concurrent first calls over MUNGE: %v %v", err, rep.GetErr())
				}
			}()
		}
	}
	wg.Wait()

	// Root over TCP with MUNGE: its own item, not nobody's.
	t.Setenv("OPENFAM_AUTH", "munge")
	t.Setenv("OPENFAM_MUNGE_SOCKET", sock)
	f, err := core.Initialize(core.Options{Server: d.Addr(), TokenFile: tf, UID: -1, GID: -1, PEID: 0, PECount: 1, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Finalize()
	it, err := f.Lookup("roots", "shared")
	if err != nil {
		t.Fatalf("root over TCP with MUNGE: Lookup of its own item: %v", err)
	}
	got := make([]byte, 13)
	if err := f.Default().Get(got, it, 0); err != nil || string(got) != "root's secret" {
		t.Fatalf("root over TCP reads %q, %v", got, err)
	}
	if _, err := f.Lookup("nobodys", "shared"); core.CodeOf(err) != core.CodeNoPerm {
		t.Fatalf("root over TCP: Lookup of nobody's 0600 item: %v, want FAM_ERR_NOPERM", err)
	}

	// A client that refuses MUNGE is told why.
	t.Setenv("OPENFAM_AUTH", "token")
	if _, err := core.Initialize(core.Options{Server: d.Addr(), TokenFile: tf, UID: -1, GID: -1, PEID: 0, PECount: 1, Timeout: 5 * time.Second}); err == nil ||
		!strings.Contains(err.Error(), "OPENFAM_AUTH=token") {
		t.Fatalf("OPENFAM_AUTH=token against a MUNGE famd: %v", err)
	}
}

// runHelper runs this test binary as uid (and the same gid) in helper
// mode and returns what it printed.
func runHelper(t *testing.T, uid uint32, mode string, env ...string) string {
	t.Helper()
	bin := copyExecutable(t)
	cmd := exec.Command(bin, "-test.run=^$")
	cmd.Env = append(append(os.Environ(), "FAMD_TEST_HELPER="+mode), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: uid}}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helper %s: %v\nstdout: %s\nstderr: %s", mode, err, out, stderr.String())
	}
	return string(out)
}

// authHelper is the body of the helper modes of the tests above; it
// returns the exit status.
func authHelper(mode string) int {
	switch mode {
	case "nobody-item":
		return nobodyItem()
	case "munge-client":
		return mungeClient()
	}
	fmt.Fprintln(os.Stderr, "unknown helper mode", mode)
	return 2
}

// nobodyItem makes a private region and item as the helper's user, on the
// Unix socket.
func nobodyItem() int {
	f, err := core.Initialize(core.Options{Server: "unix:" + os.Getenv("FAMD_SOCK"), UID: -1, GID: -1, PEID: 0, PECount: 1, Timeout: 10 * time.Second})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer f.Finalize()
	r, err := f.CreateRegion("nobodys-region", 1<<20, 0o700, core.RegionAttr{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	it, err := r.Allocate("secret", 64, 0o600)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := f.Default().Put([]byte("nobody's secret"), it, 0); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	st, err := it.Stat()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Printf("made nobodys-region/secret uid=%d\n", st.UID)
	return 0
}

// mungeClient reaches famd over TCP with MUNGE (famd asks for it; the
// client does not insist): it makes and reads back its own 0600 item and
// tries to look up root's.
func mungeClient() int {
	f, err := core.Initialize(core.Options{Server: os.Getenv("FAMD_ADDR"), UID: -1, GID: -1, PEID: 0, PECount: 1,
		TokenFile: os.Getenv("OPENFAM_TOKEN_FILE"), Timeout: 10 * time.Second})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer f.Finalize()
	r, err := f.LookupRegion("shared")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	it, err := r.Allocate("nobodys", 64, 0o600)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := f.Default().Put([]byte("mine"), it, 0); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	got := make([]byte, 4)
	if err := f.Default().Get(got, it, 0); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	st, err := it.Stat()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	_, err = f.Lookup("roots", "shared")
	fmt.Printf("own item uid=%d read=%s; root's item: code %d\n", st.UID, got, core.CodeOf(err))
	return 0
}
