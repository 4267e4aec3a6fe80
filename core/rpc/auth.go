package rpc

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gofam/openfam/internal/famauth"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
)

// Metadata keys a TCP client sends with every call (see famauth).
const (
	MDAuthorization = famauth.MDAuthorization // "Bearer <cluster token>"
	MDUID           = famauth.MDUID           // claimed uid, decimal
	MDGID           = famauth.MDGID           // claimed gid, decimal
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
// each call must carry the cluster token.
type tcpAuth struct {
	credentials.CommonAuthInfo
}

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
		return c, tcpAuth{credentials.CommonAuthInfo{SecurityLevel: credentials.NoSecurity}}, nil
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

// authenticate establishes the caller's identity: the kernel's word on a
// Unix socket, else a valid cluster token plus the claimed ids.
func (s *Server) authenticate(ctx context.Context) (identity, error) {
	p, ok := peer.FromContext(ctx)
	if !ok {
		return identity{}, status.Error(codes.Unauthenticated, "no peer information")
	}
	if pc, ok := p.AuthInfo.(PeerCred); ok {
		return identity{pc.UID, pc.GID}, nil
	}
	if s.token == "" {
		return identity{}, status.Error(codes.Unauthenticated, "this famd accepts no TCP clients: it was started without a cluster token")
	}
	md, _ := metadata.FromIncomingContext(ctx)
	auth := first(md, MDAuthorization)
	tok, ok := strings.CutPrefix(auth, "Bearer ")
	if !ok || subtle.ConstantTimeCompare([]byte(tok), []byte(s.token)) != 1 {
		return identity{}, status.Error(codes.Unauthenticated, "missing or wrong cluster token")
	}
	uid, err1 := strconv.ParseUint(first(md, MDUID), 10, 32)
	gid, err2 := strconv.ParseUint(first(md, MDGID), 10, 32)
	if err1 != nil || err2 != nil {
		return identity{}, status.Errorf(codes.Unauthenticated, "%s and %s metadata must carry the caller's uid and gid", MDUID, MDGID)
	}
	return identity{uint32(uid), uint32(gid)}, nil
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
func (s *Server) UnaryInterceptor(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	id, err := s.authenticate(ctx)
	if err != nil {
		return nil, err
	}
	return h(context.WithValue(ctx, identityKey{}, id), req)
}

// StreamInterceptor refuses unauthenticated streams the same way (the
// service has no streaming calls today; this keeps a future one safe).
func (s *Server) StreamInterceptor(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	if _, err := s.authenticate(ss.Context()); err != nil {
		return err
	}
	return h(srv, ss)
}

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
// (host:port) that sends token, uid and gid with every call. timeout
// (> 0) bounds a first connectivity check as for DialUnix. The caller owns
// the connection.
func DialTCP(addr, token string, uid, gid uint32, timeout time.Duration) (*grpc.ClientConn, error) {
	if token == "" {
		return nil, errors.New("a cluster token is needed to reach famd over TCP")
	}
	if err := probe("tcp", addr, timeout); err != nil {
		return nil, err
	}
	return grpc.NewClient("passthrough:///"+addr,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithPerRPCCredentials(famauth.TokenCreds{Token: token, UID: uid, GID: gid}))
}

// probe checks that something listens at addr, so that a wrong address
// fails at dial time with a clear message instead of at the first call.
func probe(network, addr string, timeout time.Duration) error {
	if timeout <= 0 {
		return nil
	}
	c, err := net.DialTimeout(network, addr, timeout)
	if err != nil {
		return fmt.Errorf("famd at %s: %w", addr, err)
	}
	return c.Close()
}

// ReadToken reads a cluster token file (famauth.ReadToken): its content
// with surrounding white space removed, refusing a file its group or
// others may read or write, and an empty one.
func ReadToken(path string) (string, error) { return famauth.ReadToken(path) }
