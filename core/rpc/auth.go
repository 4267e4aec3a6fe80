package rpc

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gofam/openfam/internal/famauth"
	"github.com/gofam/openfam/internal/munge"
	pb "github.com/gofam/openfam/spec/proto/openfamv1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
)

// PeerCred is the AuthInfo of a connection on a Unix socket: the identity
// the kernel recorded for the connecting process (SO_PEERCRED), which the
// peer cannot forge.
type PeerCred struct {
	credentials.CommonAuthInfo
	PID      int32
	UID, GID uint32
}

// AuthType names the kind of AuthInfo.
func (PeerCred) AuthType() string { return "peercred" }

// tcpAuth is the AuthInfo of any other connection: it proves nothing, so
// each call must carry the cluster token. It is made once per connection
// and holds that connection's MUNGE handshake (famd --auth munge): the
// challenge nonce outstanding and, once answered, the identity and the
// session secret the connection's calls carry.
type tcpAuth struct {
	credentials.CommonAuthInfo
	*tcpConn
}

// tcpConn is the authentication state of one TCP connection.
type tcpConn struct {
	mu     sync.Mutex
	nonce  string   // the connection's challenge, "" until the first one
	secret string   // session secret, "" before the handshake
	id     identity // valid once secret is set
}

// AuthType names the kind of AuthInfo.
func (tcpAuth) AuthType() string { return "token" }

// serverCreds are famd's transport credentials: no encryption; the
// handshake only records who is on the other end of a Unix socket.
type serverCreds struct{}

// ServerCredentials returns the transport credentials famd's gRPC server
// uses: on a Unix socket the handshake reads the peer's uid and gid with
// SO_PEERCRED (a PeerCred AuthInfo); other connections are accepted
// unauthenticated and left to the per-call token check of the interceptor
// (see Server.UnaryInterceptor). Safe for concurrent use.
func ServerCredentials() credentials.TransportCredentials { return serverCreds{} }

func (serverCreds) ClientHandshake(_ context.Context, _ string, c net.Conn) (net.Conn, credentials.AuthInfo, error) {
	return nil, nil, errors.New("famd transport credentials are for servers only")
}

func (serverCreds) ServerHandshake(c net.Conn) (net.Conn, credentials.AuthInfo, error) {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return c, tcpAuth{credentials.CommonAuthInfo{SecurityLevel: credentials.NoSecurity}, &tcpConn{}}, nil
	}
	cred, err := peerCred(uc)
	if err != nil {
		return nil, nil, fmt.Errorf("reading the Unix peer's credentials: %w", err)
	}
	return c, cred, nil
}

func (serverCreds) Info() credentials.ProtocolInfo {
	return credentials.ProtocolInfo{SecurityProtocol: "peercred"}
}

func (serverCreds) Clone() credentials.TransportCredentials { return serverCreds{} }

func (serverCreds) OverrideServerName(string) error { return nil }

func peerCred(uc *net.UnixConn) (PeerCred, error) {
	rc, err := uc.SyscallConn()
	if err != nil {
		return PeerCred{}, err
	}
	var cred *unix.Ucred
	var serr error
	if err := rc.Control(func(fd uintptr) {
		cred, serr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return PeerCred{}, err
	}
	if serr != nil {
		return PeerCred{}, serr
	}
	return PeerCred{
		CommonAuthInfo: credentials.CommonAuthInfo{SecurityLevel: credentials.NoSecurity},
		PID:            cred.Pid, UID: cred.Uid, GID: cred.Gid,
	}, nil
}

// identity is who a call acts for, established by the interceptor.
type identity struct {
	uid, gid uint32
}

type identityKey struct{}

// anonymous is the identity of a call authorised by something other than
// a user identity (a memory server's Join over TCP, see Server.Join): it
// owns nothing and is in no group anyone uses.
var anonymous = identity{uid: 1<<32 - 2, gid: 1<<32 - 2}

// Identity is a uid and gid: the one identity famd gives every TCP caller
// when it authenticates them by cluster token only (famd --tcp-identity).
type Identity struct {
	UID, GID uint32
}

// ParseIdentity reads an Identity written UID:GID (decimal).
func ParseIdentity(s string) (Identity, error) {
	u, g, ok := strings.Cut(s, ":")
	uid, err1 := strconv.ParseUint(u, 10, 32)
	gid, err2 := strconv.ParseUint(g, 10, 32)
	if !ok || err1 != nil || err2 != nil {
		return Identity{}, fmt.Errorf("identity %q: want UID:GID, two decimal numbers", s)
	}
	return Identity{uint32(uid), uint32(gid)}, nil
}

// authenticate establishes the caller's identity: the kernel's word on a
// Unix socket; over TCP the cluster token and then, with --auth token,
// famd's one TCP identity, or with --auth munge, the identity of the
// connection's MUNGE handshake. A uid or gid the client claims is never
// read. The trailer, when not nil, goes back to the client with the reply
// (a MUNGE challenge, or the session secret of a completed handshake).
func (s *Server) authenticate(ctx context.Context, method string) (identity, metadata.MD, error) {
	p, ok := peer.FromContext(ctx)
	if !ok {
		return identity{}, nil, status.Error(codes.Unauthenticated, "no peer information")
	}
	if pc, ok := p.AuthInfo.(PeerCred); ok {
		return identity{pc.UID, pc.GID}, nil, nil
	}
	ta, ok := p.AuthInfo.(tcpAuth)
	if !ok {
		return identity{}, nil, status.Error(codes.Unauthenticated, "connection not made through famd's transport credentials")
	}
	if s.token == "" {
		return identity{}, nil, status.Error(codes.Unauthenticated, "this famd accepts no TCP clients: it was started without a cluster token")
	}
	md, _ := metadata.FromIncomingContext(ctx)
	tok, ok := strings.CutPrefix(first(md, famauth.MDAuthorization), "Bearer ")
	if !ok || subtle.ConstantTimeCompare([]byte(tok), []byte(s.token)) != 1 {
		return identity{}, nil, status.Error(codes.Unauthenticated, "missing or wrong cluster token")
	}
	if method == pb.Fam_Join_FullMethodName {
		// A memory server is authorised by the server credential (see
		// Join), not as a user.
		return anonymous, nil, nil
	}
	if s.auth != famauth.ModeMunge {
		if first(md, famauth.MDAuthWant) == famauth.ModeMunge {
			return identity{}, nil, status.Errorf(codes.Unauthenticated,
				"this famd does not authenticate users with MUNGE (famd --auth token): every TCP client acts as uid %d gid %d; unset OPENFAM_AUTH to accept that",
				s.tcpID.uid, s.tcpID.gid)
		}
		return s.tcpID, nil, nil
	}
	return s.mungeIdentity(ta.tcpConn, md, p.Addr)
}

// mungeIdentity authenticates a TCP call of a famd with --auth munge: by
// the connection's session secret, by a MUNGE credential answering the
// connection's challenge, or else refuses it with a challenge.
func (s *Server) mungeIdentity(c *tcpConn, md metadata.MD, from net.Addr) (identity, metadata.MD, error) {
	if sec := first(md, famauth.MDAuthSession); sec != "" {
		c.mu.Lock()
		ok := c.secret != "" && subtle.ConstantTimeCompare([]byte(sec), []byte(c.secret)) == 1
		id := c.id
		c.mu.Unlock()
		if ok {
			return id, nil, nil
		}
		// A secret of an earlier connection (famd restarted, the client
		// reconnected): ask again.
	}
	if cred := first(md, famauth.MDMungeCred); cred != "" {
		c.mu.Lock()
		nonce := c.nonce
		c.mu.Unlock()
		if nonce == "" {
			return s.challenge(c)
		}
		// Decoding costs a round trip to munged: no lock is held.
		mc, err := munge.Decode(s.opts.MungeSocket, cred)
		if err != nil {
			s.warnf("famd: refused a MUNGE credential from %v: %v", from, err)
			return identity{}, nil, status.Errorf(codes.Unauthenticated, "famd could not validate the MUNGE credential: %v", err)
		}
		if !bytes.Equal(mc.Payload, famauth.MungePayload(nonce)) {
			s.warnf("famd: refused a MUNGE credential of uid %d from %v: it was not made for this connection's challenge", mc.UID, from)
			return identity{}, nil, status.Error(codes.Unauthenticated, "the MUNGE credential does not answer this connection's challenge")
		}
		id := identity{mc.UID, mc.GID}
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.secret != "" && c.id != id {
			s.warnf("famd: refused a MUNGE credential of uid %d from %v: the connection is authenticated as uid %d", mc.UID, from, c.id.uid)
			return identity{}, nil, status.Error(codes.Unauthenticated, "this connection is authenticated as another user")
		}
		if c.secret == "" {
			c.secret, c.id = randomHex(32), id
			s.logf("famd: %v authenticated by MUNGE as uid %d gid %d", from, id.uid, id.gid)
		}
		return id, metadata.Pairs(famauth.MDAuthSession, c.secret), nil
	}
	return s.challenge(c)
}

// challenge refuses a call for want of MUNGE authentication, with the
// connection's challenge nonce in the trailer. A connection has one nonce
// for its life, so that calls racing to authenticate all answer the same
// challenge: each answer is still a distinct credential, which munged
// decodes once only, and the nonce ties them to this connection.
func (s *Server) challenge(c *tcpConn) (identity, metadata.MD, error) {
	c.mu.Lock()
	if c.nonce == "" {
		c.nonce = randomHex(16)
	}
	n := c.nonce
	c.mu.Unlock()
	return identity{}, metadata.Pairs(famauth.MDAuthChallenge, famauth.ModeMunge+" "+n),
		status.Error(codes.Unauthenticated, "this famd authenticates TCP clients with MUNGE (famd --auth munge): the client must answer its challenge (libmunge2 and munged needed on the client host)")
}

// randomHex returns n random bytes from crypto/rand, in hex.
func randomHex(n int) string {
	b := make([]byte, n)
	// crypto/rand.Read does not fail on Linux (it would crash the
	// program rather than return predictable bytes).
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func first(md metadata.MD, key string) string {
	if v := md.Get(key); len(v) > 0 {
		return v[0]
	}
	return ""
}

// UnaryInterceptor authenticates every call before its handler runs: a
// call that cannot be attributed to an identity ends with
// codes.Unauthenticated. Install it with grpc.UnaryInterceptor.
func (s *Server) UnaryInterceptor(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (resp any, err error) {
	id, tr, err := s.authenticate(ctx, info.FullMethod)
	if o := s.opts.Observer; o != nil && !isChallenge(tr) {
		// A MUNGE challenge is the first step of a login, not a failure:
		// only the call that answers it is counted.
		defer func() { observeCall(o, info.FullMethod, resp, err) }()
	}
	if tr != nil {
		_ = grpc.SetTrailer(ctx, tr)
	}
	if err != nil {
		s.warnAuth(ctx, info.FullMethod, tr, err)
		return nil, err
	}
	return h(context.WithValue(ctx, identityKey{}, id), req)
}

// warnAuth logs a call refused for want of authentication at level warn
// (a wrong token is either a misconfigured client or someone guessing).
// A MUNGE challenge (trailer tr holds one) is the first step of a normal
// login, not a failure, and is not logged.
func (s *Server) warnAuth(ctx context.Context, method string, tr metadata.MD, err error) {
	if isChallenge(tr) {
		return
	}
	s.warnf("authentication failed: refused %s from %s: %s", method, peerName(ctx), status.Convert(err).Message())
}

// isChallenge says whether trailer tr carries a MUNGE challenge.
func isChallenge(tr metadata.MD) bool { return len(tr.Get(famauth.MDAuthChallenge)) > 0 }

// StreamInterceptor authenticates streams the same way (a stream cannot
// carry a MUNGE answer: clients authenticate with a unary call first).
func (s *Server) StreamInterceptor(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) (err error) {
	if o := s.opts.Observer; o != nil {
		defer func() { observeCall(o, info.FullMethod, nil, err) }()
	}
	id, tr, err := s.authenticate(ss.Context(), info.FullMethod)
	if tr != nil {
		ss.SetTrailer(tr)
	}
	if err != nil {
		s.warnAuth(ss.Context(), info.FullMethod, tr, err)
		return err
	}
	return h(srv, &identityStream{ServerStream: ss, ctx: context.WithValue(ss.Context(), identityKey{}, id)})
}

// identityStream is a ServerStream whose context carries the caller's
// identity.
type identityStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s *identityStream) Context() context.Context { return s.ctx }

// ServerOptions returns the grpc.ServerOptions famd serves s with: the
// transport credentials and both interceptors.
func (s *Server) ServerOptions() []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.Creds(ServerCredentials()),
		grpc.UnaryInterceptor(s.UnaryInterceptor),
		grpc.StreamInterceptor(s.StreamInterceptor),
		// A client host that vanishes without closing its connection
		// (power loss, partition) is found by keepalive pings, which ends
		// its session and revokes its keys.
		grpc.KeepaliveParams(keepalive.ServerParameters{Time: 30 * time.Second, Timeout: 10 * time.Second}),
	}
}

// DialUnix returns a client connection to famd's gRPC Unix socket at path.
// famd learns the caller's uid and gid from the kernel. With timeout > 0,
// DialUnix first checks that the socket accepts a connection within it and
// fails otherwise; gRPC then connects lazily and reconnects as needed. The
// caller owns the connection and closes it.
func DialUnix(path string, timeout time.Duration) (*grpc.ClientConn, error) {
	if err := probe("unix", path, timeout); err != nil {
		return nil, err
	}
	return grpc.NewClient("unix:"+path, grpc.WithTransportCredentials(insecure.NewCredentials()))
}

// DialTCP returns a client connection to famd's gRPC TCP address
// (host:port) whose calls auth authenticates (the cluster token, and MUNGE
// when famd asks for it or auth insists). timeout (> 0) bounds a first
// connectivity check as for DialUnix. The caller owns the connection.
func DialTCP(addr string, auth *famauth.Client, timeout time.Duration) (*grpc.ClientConn, error) {
	if auth == nil || auth.Token == "" {
		return nil, errors.New("a cluster token is needed to reach famd over TCP")
	}
	if err := probe("tcp", addr, timeout); err != nil {
		return nil, err
	}
	return grpc.NewClient("passthrough:///"+addr,
		append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}, auth.DialOptions()...)...)
}

// probe checks that something listens at addr, so that a wrong address
// fails at dial time with a clear message instead of at the first call.
func probe(network, addr string, timeout time.Duration) error {
	if timeout <= 0 {
		return nil
	}
	c, err := net.DialTimeout(network, addr, timeout)
	switch {
	case err == nil:
		return c.Close()
	case errors.Is(err, syscall.ENOENT):
		return fmt.Errorf("famd at %s is not running: no socket file (%w)", addr, err)
	case errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Errorf("famd at %s is not running: connection refused (%w)", addr, err)
	}
	return fmt.Errorf("famd at %s: %w", addr, err)
}

// ReadToken reads a cluster token file (famauth.ReadToken): its content
// with surrounding white space removed, refusing a file its group or
// others may read or write, and an empty one.
func ReadToken(path string) (string, error) { return famauth.ReadToken(path) }
