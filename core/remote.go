package core

import (
	"context"
	"errors"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
	gmd "google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/gofam/openfam/core/metadata"
	"github.com/gofam/openfam/core/transport"
	"github.com/gofam/openfam/internal/famauth"
	pb "github.com/gofam/openfam/spec/proto/openfamv1"
)

// remote is the client side of an instance served by famd: the control
// plane over gRPC, the data plane over package transport, and, when famd
// is on this host (a Unix socket), items mapped from descriptors famd
// passes so the data path runs on local memory as in embedded mode.
type remote struct {
	addr    string
	conn    *grpc.ClientConn
	cl      pb.FamClient
	dataP   atomic.Pointer[dataBox] // famd's own data plane: data(), renewed in fabricplane.go
	unix    bool
	timeout time.Duration
	job     string
	token   string // cluster token, for memory servers' data planes
	// tokenFile is read when a memory server must be reached over TCP
	// and famd itself is on a Unix socket.
	tokenFile string
	spin      time.Duration // transport.ClientOptions.Spin of every data plane

	// endSession stops the session loop (see startSession).
	endSession func()
	// revoked is called, from the session loop, with each key famd
	// reports revoked (set once the instance exists).
	revoked atomic.Pointer[func(transport.Key)]

	// Data planes of memory servers, dialled on first use (see
	// memClient).
	mmu  sync.Mutex
	mems map[uint64]DataPlane

	// fab is the libfabric side: the client's provider choice and the
	// endpoint of fabric planes (fabricplane.go).
	fab fabricState

	// staleMaps are item mappings of renewed or released views, retired
	// at Finalize (a racing thread may still use one). shared holds the
	// mappings made from descriptors famd passed, by file, pages and
	// protection, reused by every later view of the same pages (see
	// mapShared) and retired at Finalize too.
	smu       sync.Mutex
	staleMaps [][]byte
	shared    map[mapID][]byte

	// dealloc holds the item incarnations this instance is deallocating
	// right now (see deferRevoke).
	dmu     sync.Mutex
	dealloc map[itemKey]*deallocWait

	// afterBackupCheck, set only by tests (export_test.go), runs between
	// a restore's check that the backup exists and its copy.
	afterBackupCheck func()

	// sess holds the session id every call carries (see startSession);
	// noCtl is set once famd said it serves no control calls on its data
	// plane (see ctlCall).
	sess  *atomic.Uint64
	noCtl atomic.Bool

	// srv is this client's view of memory servers' health (redundant
	// regions, see serverstate.go).
	srv serverStates
}

// DefaultTimeout bounds every call to a famd that does not answer.
const DefaultTimeout = 10 * time.Second

// dialRemote connects to the famd named by opts.Server: "unix:/path" or
// "host:port". On a Unix socket famd learns who the caller is from the
// kernel; over TCP the client presents the cluster token, and famd gives
// it either its one TCP identity or, with MUNGE, the identity of a MUNGE
// credential (famauth.Client: OPENFAM_AUTH, OPENFAM_MUNGE_SOCKET). The
// client never states a uid of its own.
//
// Its errors are *Error (Op left empty for the caller to fill in): a
// malformed address is CodeInvalid; nothing listening at the address (no
// socket file, connection refused) is CodeRPC at once, not after the
// timeout; a refused token is CodeNoPerm; a famd that accepts the
// connection but does not answer is CodeTimeout.
func dialRemote(opts Options) (*remote, error) {
	r := &remote{addr: opts.Server, timeout: opts.Timeout, job: os.Getenv("FAMRUN_JOB"), spin: opts.Spin}
	if r.timeout <= 0 {
		r.timeout = DefaultTimeout
	}
	if r.job == "" {
		r.job = os.Getenv("SLURM_JOB_ID")
	}
	network, address, err := parseServer(opts.Server)
	if err != nil {
		return nil, err
	}
	r.unix = network == "unix"
	var dopts []grpc.DialOption
	var target, token string
	if r.unix {
		target = "unix:" + address
		dopts = append(dopts, grpc.WithTransportCredentials(insecure.NewCredentials()))
	} else {
		if opts.TokenFile == "" {
			return nil, Errorf(CodeInvalid, "", "OPENFAM_SERVER=%s is a TCP address: set OPENFAM_TOKEN_FILE to the cluster token file", opts.Server)
		}
		tok, err := famauth.ReadToken(opts.TokenFile)
		if err != nil {
			return nil, Errorf(CodeInvalid, "", "cluster token file: %v", err)
		}
		token = tok
		auth, err := famauth.ClientFromEnv(tok)
		if err != nil {
			return nil, Errorf(CodeInvalid, "", "%v", err)
		}
		target = "passthrough:///" + address
		dopts = append(dopts, grpc.WithTransportCredentials(insecure.NewCredentials()))
		dopts = append(dopts, auth.DialOptions()...)
	}
	// gRPC connects lazily and, with WaitForReady, retries an address
	// nothing listens at until the deadline: a famd that is not running
	// would cost the whole timeout before a vague "deadline exceeded".
	// One plain connection first tells that case apart at once.
	if err := probeFamd(network, address, opts.Server, r.timeout); err != nil {
		return nil, err
	}
	sess := new(atomic.Uint64)
	dopts = append(dopts, grpc.WithUnaryInterceptor(func(ctx context.Context, method string, req, reply any,
		cc *grpc.ClientConn, invoker grpc.UnaryInvoker, o ...grpc.CallOption) error {
		if id := sess.Load(); id != 0 {
			ctx = gmd.AppendToOutgoingContext(ctx, famauth.MDSession, strconv.FormatUint(id, 10))
		}
		awaitRestartedFamd(ctx, cc, network, address)
		return invoker(ctx, method, req, reply, cc, o...)
	}))
	conn, err := grpc.NewClient(target, dopts...)
	if err != nil {
		return nil, Errorf(CodeRPC, "", "famd at %s: %v", opts.Server, err)
	}
	r.conn = conn
	r.cl = pb.NewFamClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), r.timeout)
	defer cancel()
	info, err := r.cl.Info(ctx, &pb.InfoRequest{}, grpc.WaitForReady(true))
	if err != nil {
		conn.Close()
		return nil, firstCallErr(opts.Server, opts.TokenFile, r.timeout, err)
	}
	network, daddr := "tcp", info.GetDataTcp()
	if r.unix && info.GetDataUnix() != "" {
		network, daddr = "unix", info.GetDataUnix()
	}
	if daddr == "" {
		conn.Close()
		return nil, Errorf(CodeRPC, "", "famd at %s announces no data-plane address", opts.Server)
	}
	dc, err := transport.Dial(network, daddr, transport.ClientOptions{Token: token, Timeout: r.timeout, Spin: r.spin})
	if err != nil {
		conn.Close()
		return nil, Errorf(CodeRPC, "", "famd data plane at %s: %v", daddr, err)
	}
	// famd's own data plane: a fabric plane when famd runs a libfabric
	// provider (fabricplane.go); the check of the client's choice fails
	// fam_initialize on a mismatch.
	choice := choiceOf(opts)
	fs := &fabricState{choice: choice, timeout: r.timeout, device: deviceOf(opts)}
	data, err := fs.plane("famd at "+opts.Server, info.GetProvider(), info.GetFabricAddr(), dc)
	if err != nil {
		conn.Close()
		fs.close()
		var e *Error
		if errors.As(err, &e) {
			return nil, e
		}
		return nil, Errorf(CodeRPC, "", "%v", err)
	}
	nr := newRemote(r.addr, r.cl, data, r.unix, r.timeout, r.job)
	nr.fab.choice, nr.fab.ep, nr.fab.timeout, nr.fab.device = choice, fs.ep, r.timeout, fs.device
	if fd, ok := data.(*fabricData); ok {
		fd.renew = nr.renewFamdPlane
	}
	nr.conn = conn
	nr.sess = sess
	nr.srv.reportTo(nr.cl, nr.timeout)
	nr.startSession(sess)
	nr.token, nr.tokenFile, nr.spin = token, opts.TokenFile, opts.Spin
	return nr, nil
}

// serverForms says which OPENFAM_SERVER values dialRemote accepts.
const serverForms = "unix:PATH (famd's socket on this host) or HOST:PORT (famd's TCP address)"

// parseServer splits an OPENFAM_SERVER value into a network and an
// address for net.Dial, refusing anything but "unix:PATH" and
// "HOST:PORT" with a numeric port: a bare word ("bogus") used to be taken
// for a TCP address and failed only after the timeout.
func parseServer(server string) (network, address string, err error) {
	if path, ok := strings.CutPrefix(server, "unix:"); ok {
		if path == "" {
			return "", "", Errorf(CodeInvalid, "", "OPENFAM_SERVER=%q names no socket path; accepted forms: %s", server, serverForms)
		}
		return "unix", path, nil
	}
	host, port, err := net.SplitHostPort(server)
	if err != nil {
		return "", "", Errorf(CodeInvalid, "", "OPENFAM_SERVER=%q is neither a Unix socket nor a TCP address (%v); accepted forms: %s", server, err, serverForms)
	}
	if n, perr := strconv.ParseUint(port, 10, 16); perr != nil || n == 0 {
		return "", "", Errorf(CodeInvalid, "", "OPENFAM_SERVER=%q: port %q is not a number from 1 to 65535; accepted forms: %s", server, port, serverForms)
	}
	if strings.ContainsAny(host, "/ ") {
		return "", "", Errorf(CodeInvalid, "", "OPENFAM_SERVER=%q: %q is not a host name; accepted forms: %s", server, host, serverForms)
	}
	return "tcp", server, nil
}

// probeFamd makes one connection to famd's control address and closes it,
// turning the ways it can fail into errors that name the address: nothing
// there (no socket file, connection refused) is CodeRPC and comes at
// once; a socket this user may not open is CodeNoPerm; no answer within
// timeout is CodeTimeout.
func probeFamd(network, address, server string, timeout time.Duration) error {
	c, err := net.DialTimeout(network, address, timeout)
	if err == nil {
		return c.Close()
	}
	var ne net.Error
	switch {
	case errors.Is(err, syscall.ENOENT):
		return Errorf(CodeRPC, "", "famd at %s is not running: no socket file %s", server, address)
	case errors.Is(err, syscall.ECONNREFUSED):
		return Errorf(CodeRPC, "", "famd at %s is not running: connection refused", server)
	case errors.Is(err, syscall.EACCES), errors.Is(err, syscall.EPERM):
		return Errorf(CodeNoPerm, "", "famd at %s: this user may not connect to %s (permission denied)", server, address)
	case errors.As(err, &ne) && ne.Timeout():
		return Errorf(CodeTimeout, "", "famd at %s did not accept a connection within %v", server, timeout)
	}
	return Errorf(CodeRPC, "", "famd at %s cannot be reached: %v", server, err)
}

// firstCallErr describes the failure of the first call dialRemote makes,
// after the connection itself succeeded.
func firstCallErr(server, tokenFile string, timeout time.Duration, err error) error {
	st, _ := status.FromError(err)
	switch st.Code() {
	case codes.Unauthenticated, codes.PermissionDenied:
		if strings.Contains(st.Message(), "wrong cluster token") {
			return Errorf(CodeNoPerm, "", "famd at %s refused the client: wrong cluster token (%s does not hold the token famd was started with)", server, tokenFile)
		}
		return Errorf(CodeNoPerm, "", "famd at %s refused the client: %s", server, st.Message())
	case codes.DeadlineExceeded:
		return Errorf(CodeTimeout, "", "famd at %s accepted the connection but did not answer within %v", server, timeout)
	}
	return Errorf(CodeRPC, "", "famd at %s unavailable: %s", server, st.Message())
}

// awaitRestartedFamd lets a call reach a famd that came back after the
// connection to it failed. gRPC keeps such a connection in
// TRANSIENT_FAILURE, failing every call at once with the old error, until
// its reconnect backoff (which grows to two minutes) lets it try again; a
// famd that restarted meanwhile stayed unreachable for that long. When
// something listens at famd's address again, the backoff is cut short and
// the call waits (within its deadline) for the new connection; when
// nothing does, the call goes on at once and fails fast as before.
func awaitRestartedFamd(ctx context.Context, cc *grpc.ClientConn, network, address string) {
	if cc.GetState() != connectivity.TransientFailure {
		return
	}
	d := net.Dialer{Timeout: time.Second}
	c, err := d.DialContext(ctx, network, address)
	if err != nil {
		return
	}
	c.Close()
	cc.ResetConnectBackoff()
	for s := cc.GetState(); s != connectivity.Ready && s != connectivity.Shutdown; s = cc.GetState() {
		if !cc.WaitForStateChange(ctx, s) {
			return
		}
	}
}

// shutdown ends the session and closes every connection.
func (r *remote) shutdown() {
	if r.endSession != nil {
		r.endSession()
	}
	if d := r.data(); d != nil {
		d.Close()
	}
	r.mmu.Lock()
	for _, c := range r.mems {
		c.Close()
	}
	r.mems = nil
	r.mmu.Unlock()
	r.fab.close() // after every plane on it
	if r.conn != nil {
		r.conn.Close()
	}
}

func (r *remote) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), r.timeout)
}

// famErr turns a reply's domain error, or the call's transport error, into
// an *Error.
func (r *remote) famErr(op string, fe *pb.FamError, err error) error {
	if err != nil {
		st, _ := status.FromError(err)
		switch st.Code() {
		case codes.DeadlineExceeded:
			return Errorf(CodeTimeout, op, "famd at %s did not answer within %v", r.addr, r.timeout)
		case codes.Unauthenticated, codes.PermissionDenied:
			return Errorf(CodeNoPerm, op, "famd at %s refused the client: %s", r.addr, st.Message())
		}
		return Errorf(CodeRPC, op, "famd at %s unavailable: %s", r.addr, st.Message())
	}
	if fe == nil || fe.GetCode() == 0 {
		return nil
	}
	o := fe.GetOp()
	if o == "" {
		o = op
	}
	return &Error{Code: Code(fe.GetCode()), Op: o, Msg: fe.GetMsg()}
}

// dataErr maps a data-plane failure to an *Error.
func dataErr(op string, err error) error {
	if err == nil {
		return nil
	}
	return dataErrOf(op, err)
}

// dataErrOf is dataErr for a failure, apart so that the success path
// allocates nothing (errors.As makes te escape).
func dataErrOf(op string, err error) error {
	var te *transport.Error
	switch {
	case errors.As(err, &te):
		return &Error{Code: Code(te.Code), Op: op, Msg: te.Msg}
	case errors.Is(err, transport.ErrUnavailable):
		return Errorf(CodeRPC, op, "memory server unavailable: %v", err)
	case errors.Is(err, transport.ErrStaleKey):
		return Errorf(CodeNoPerm, op, "access to the data item was revoked")
	}
	return Errorf(CodeRPC, op, "%v", err)
}

func regionFromPB(ri *pb.RegionInfo) metadata.Region {
	a := ri.GetAttr()
	return metadata.Region{ID: ri.GetId(), Name: ri.GetName(), Size: ri.GetSize(), Mode: ri.GetMode(),
		UID: ri.GetUid(), GID: ri.GetGid(), Redundancy: uint8(a.GetRedundancy()), MemoryType: uint8(a.GetMemory()),
		Interleave: uint8(a.GetInterleave()), PermLevel: uint8(a.GetPermLevel()),
		InterleaveSize: ri.GetInterleaveSize(), Servers: ri.GetServers()}
}

func itemFromPB(ii *pb.ItemInfo) metadata.Item {
	return metadata.Item{RegionID: ii.GetRegionId(), Offset: ii.GetOffset(), Size: ii.GetSize(), Name: ii.GetName(),
		Mode: ii.GetMode(), UID: ii.GetUid(), GID: ii.GetGid(), Gen: ii.GetIncarnation()}
}

func keyOf(b []byte) (transport.Key, bool) {
	var k transport.Key
	if len(b) != len(k) {
		return k, false
	}
	copy(k[:], b)
	return k, true
}

// newRemote assembles the client side of a famd-served instance from its
// two planes. dialRemote uses it; unit tests pass doubles that inject
// faults.
func newRemote(addr string, cl pb.FamClient, data DataPlane, unix bool, timeout time.Duration, job string) *remote {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	r := &remote{addr: addr, cl: cl, unix: unix, timeout: timeout, job: job}
	r.dataP.Store(&dataBox{data})
	return r
}

// startSession keeps a Session stream open with famd for as long as the
// instance lives, reopening it when famd restarts, and publishes its id in
// sess, which every call then carries: famd revokes the keys of a session
// when its stream ends, so a crashed program leaves no keys behind. It
// waits (up to the timeout) for the first id so that the program's first
// items are in a session too.
func (r *remote) startSession(sess *atomic.Uint64) {
	ctx, cancel := context.WithCancel(context.Background())
	first := make(chan struct{})
	done := make(chan struct{})
	var endOnce sync.Once
	r.endSession = func() {
		endOnce.Do(func() {
			cancel()
			<-done
		})
	}
	go func() {
		defer close(done)
		var once sync.Once
		backoff := 50 * time.Millisecond
		for ctx.Err() == nil {
			stream, err := r.cl.Session(ctx, &pb.SessionRequest{}, grpc.WaitForReady(true))
			if err == nil {
				var ev *pb.SessionEvent
				if ev, err = stream.Recv(); err == nil {
					sess.Store(ev.GetSession())
					r.serverEvent(ev)
					once.Do(func() { close(first) })
					backoff = 50 * time.Millisecond
					// Runs until famd ends the stream or goes away.
					for err == nil {
						if ev, err = stream.Recv(); err == nil {
							r.serverEvent(ev)
							if k, ok := keyOf(ev.GetRevoked()); ok {
								if fn := r.revoked.Load(); fn != nil {
									(*fn)(k)
								}
							}
						}
					}
					sess.Store(0)
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, 2*time.Second)
		}
	}()
	select {
	case <-first:
	case <-time.After(r.timeout):
	}
}
