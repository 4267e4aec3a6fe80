package core

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
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
	data    DataPlane
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
	mems map[uint64]*transport.Client
}

// DefaultTimeout bounds every call to a famd that does not answer.
const DefaultTimeout = 10 * time.Second

// dialRemote connects to the famd named by opts.Server: "unix:/path" or
// "host:port". On a Unix socket famd learns who the caller is from the
// kernel; over TCP the client presents the cluster token, and famd gives
// it either its one TCP identity or, with MUNGE, the identity of a MUNGE
// credential (famauth.Client: OPENFAM_AUTH, OPENFAM_MUNGE_SOCKET). The
// client never states a uid of its own.
func dialRemote(opts Options) (*remote, error) {
	r := &remote{addr: opts.Server, timeout: opts.Timeout, job: os.Getenv("FAMRUN_JOB"), spin: opts.Spin}
	if r.timeout <= 0 {
		r.timeout = DefaultTimeout
	}
	if r.job == "" {
		r.job = os.Getenv("SLURM_JOB_ID")
	}
	var dopts []grpc.DialOption
	var target, token string
	if path, ok := strings.CutPrefix(opts.Server, "unix:"); ok {
		r.unix = true
		target = "unix:" + path
		dopts = append(dopts, grpc.WithTransportCredentials(insecure.NewCredentials()))
	} else {
		if opts.TokenFile == "" {
			return nil, fmt.Errorf("OPENFAM_SERVER=%s is a TCP address: set OPENFAM_TOKEN_FILE to the cluster token file", opts.Server)
		}
		tok, err := famauth.ReadToken(opts.TokenFile)
		if err != nil {
			return nil, err
		}
		token = tok
		auth, err := famauth.ClientFromEnv(tok)
		if err != nil {
			return nil, err
		}
		target = "passthrough:///" + opts.Server
		dopts = append(dopts, grpc.WithTransportCredentials(insecure.NewCredentials()))
		dopts = append(dopts, auth.DialOptions()...)
	}
	sess := new(atomic.Uint64)
	network, address := "tcp", opts.Server
	if r.unix {
		network, address = "unix", strings.TrimPrefix(opts.Server, "unix:")
	}
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
		return nil, fmt.Errorf("famd at %s: %v", opts.Server, err)
	}
	r.conn = conn
	r.cl = pb.NewFamClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), r.timeout)
	defer cancel()
	info, err := r.cl.Info(ctx, &pb.InfoRequest{}, grpc.WaitForReady(true))
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("famd at %s did not answer within %v: %v", opts.Server, r.timeout, err)
	}
	network, daddr := "tcp", info.GetDataTcp()
	if r.unix && info.GetDataUnix() != "" {
		network, daddr = "unix", info.GetDataUnix()
	}
	if daddr == "" {
		conn.Close()
		return nil, fmt.Errorf("famd at %s announces no data-plane address", opts.Server)
	}
	dc, err := transport.Dial(network, daddr, transport.ClientOptions{Token: token, Timeout: r.timeout, Spin: r.spin})
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("famd data plane at %s: %v", daddr, err)
	}
	nr := newRemote(r.addr, r.cl, dc, r.unix, r.timeout, r.job)
	nr.conn = conn
	nr.startSession(sess)
	nr.token, nr.tokenFile, nr.spin = token, opts.TokenFile, opts.Spin
	return nr, nil
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

func (r *remote) close() {
	if r.endSession != nil {
		r.endSession()
	}
	if r.data != nil {
		r.data.Close()
	}
	r.mmu.Lock()
	for _, c := range r.mems {
		c.Close()
	}
	r.mems = nil
	r.mmu.Unlock()
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
func (r *remote) dataErr(op string, err error) error {
	var te *transport.Error
	switch {
	case err == nil:
		return nil
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
	return &remote{addr: addr, cl: cl, data: data, unix: unix, timeout: timeout, job: job}
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
					once.Do(func() { close(first) })
					backoff = 50 * time.Millisecond
					// Runs until famd ends the stream or goes away.
					for err == nil {
						if ev, err = stream.Recv(); err == nil {
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
