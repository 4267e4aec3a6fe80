// Package famauth is what famd and its clients agree on to authenticate
// control-plane calls over TCP: the token files, the gRPC metadata calls
// carry, the MUNGE handshake and the memory servers' join proof. The
// client (package core, famctl, memory servers) and the server (package
// core/rpc) both use it, so the two sides cannot drift apart.
//
// Identity over TCP is never claimed by the client. famd either maps
// every TCP caller holding the cluster token to one configured identity
// (mode "token"), or learns each caller's uid and gid from a MUNGE
// credential (mode "munge"): once per connection famd challenges the
// client with a random nonce, the client answers with a MUNGE credential
// whose payload carries that nonce, and famd returns a random session
// secret that the client's later calls on that connection carry.
package famauth

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/gofam/openfam/internal/munge"
	pb "github.com/gofam/openfam/spec/proto/openfamv1"
)

// Metadata keys of control-plane calls.
const (
	MDAuthorization = "authorization"        // client: "Bearer <cluster token>"
	MDSession       = "x-fam-session"        // client: its key-revocation session id, decimal
	MDAuthWant      = "x-fam-auth"           // client: "munge" when it insists on MUNGE (OPENFAM_AUTH=munge)
	MDMungeCred     = "x-fam-munge-cred"     // client: a MUNGE credential answering a challenge
	MDAuthSession   = "x-fam-auth-session"   // client: the session secret famd gave; famd: that secret (trailer)
	MDAuthChallenge = "x-fam-auth-challenge" // famd (trailer of an Unauthenticated reply): "munge <nonce>"
	MDServerProof   = "x-fam-server-proof"   // memory server, on Join: ServerProof
)

// Authentication modes (famd --auth, OPENFAM_AUTH).
const (
	ModeToken = "token" // every TCP caller is famd's one configured identity
	ModeMunge = "munge" // every TCP caller is who its MUNGE credential says
)

// mungePrefix starts the payload of a MUNGE credential answering a
// challenge, so that a credential made for another purpose (or another
// program using the same munged) is not taken as one.
const mungePrefix = "openfam-auth-v1 "

// MungePayload is the payload of the credential that answers the
// challenge nonce: it binds the credential to that famd connection, so
// that it cannot be used on another famd even within its time-to-live.
func MungePayload(nonce string) []byte { return []byte(mungePrefix + nonce) }

// ReadToken reads a token file (the cluster token, or the memory
// servers' server token): its content with surrounding white space
// removed. It refuses a file that its group or others may read or write
// (chmod 600 it), and an empty one.
func ReadToken(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", err
	}
	if perm := st.Mode().Perm(); perm&0o077 != 0 {
		return "", fmt.Errorf("token file %s is accessible by group or others (mode %#o); chmod 600 it", path, perm)
	}
	b, err := io.ReadAll(io.LimitReader(f, 64<<10))
	if err != nil {
		return "", fmt.Errorf("token file %s: %v", path, err)
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" {
		return "", fmt.Errorf("token file %s is empty", path)
	}
	return tok, nil
}

// ServerProof is what a memory server presents (metadata MDServerProof)
// when it joins a metadata famd: an HMAC-SHA256, keyed with the server
// token, of the join request's fields (each length-prefixed). The token
// itself never travels, and a proof is good for exactly the addresses and
// secret it was made for: a captured proof can only register the same
// server again.
func ServerProof(serverToken string, fields ...string) string {
	m := hmac.New(sha256.New, []byte(serverToken))
	m.Write([]byte("openfam-join-v1"))
	var n [8]byte
	for _, f := range fields {
		binary.BigEndian.PutUint64(n[:], uint64(len(f)))
		m.Write(n[:])
		m.Write([]byte(f))
	}
	return hex.EncodeToString(m.Sum(nil))
}

// CheckServerProof reports whether proof is ServerProof(serverToken,
// fields...), in constant time.
func CheckServerProof(serverToken, proof string, fields ...string) bool {
	want := ServerProof(serverToken, fields...)
	return hmac.Equal([]byte(want), []byte(proof))
}

// Client authenticates a client's calls to famd over TCP: the cluster
// token on every call, and the MUNGE handshake when famd asks for it (or
// always, with Mode ModeMunge). Install it with DialOptions; each
// connection dialled with them keeps its own session secret. Safe for
// concurrent use; set the fields before the first DialOptions.
type Client struct {
	// Token is the cluster token.
	Token string
	// Mode is "" (follow famd: MUNGE when it asks), ModeToken (never
	// MUNGE: fail against a famd that requires it) or ModeMunge (insist
	// on MUNGE: fail against a famd that maps TCP callers to one
	// identity).
	Mode string
	// MungeSocket is munged's socket ("" for libmunge's default).
	MungeSocket string
}

// session is the authentication state of one client connection (one
// grpc.ClientConn): famd binds a session secret to the transport
// connection it was made on.
type session struct {
	c      *Client
	mu     sync.Mutex
	secret string // the session secret famd gave, or ""
	gen    uint64 // bumped whenever secret changes
}

// ClientFromEnv returns a Client with token and the mode and socket of
// OPENFAM_AUTH and OPENFAM_MUNGE_SOCKET.
func ClientFromEnv(token string) (*Client, error) {
	c := &Client{Token: token, Mode: strings.ToLower(os.Getenv("OPENFAM_AUTH")), MungeSocket: os.Getenv("OPENFAM_MUNGE_SOCKET")}
	switch c.Mode {
	case "", ModeToken, ModeMunge:
	default:
		return nil, fmt.Errorf("OPENFAM_AUTH=%s: want munge, token or nothing", c.Mode)
	}
	if c.Mode == ModeMunge {
		if err := munge.Available(); err != nil {
			return nil, fmt.Errorf("OPENFAM_AUTH=munge: %v", err)
		}
	}
	return c, nil
}

// DialOptions returns the gRPC dial options that authenticate every call
// made on the connection.
func (c *Client) DialOptions() []grpc.DialOption {
	s := &session{c: c}
	return []grpc.DialOption{
		grpc.WithPerRPCCredentials(perRPC{s}),
		grpc.WithChainUnaryInterceptor(s.unary),
		grpc.WithChainStreamInterceptor(s.stream),
	}
}

// perRPC adds the token, the insistence on MUNGE and the session secret to
// every call.
type perRPC struct{ s *session }

func (p perRPC) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	md := map[string]string{MDAuthorization: "Bearer " + p.s.c.Token}
	if p.s.c.Mode == ModeMunge {
		md[MDAuthWant] = ModeMunge
	}
	p.s.mu.Lock()
	if p.s.secret != "" {
		md[MDAuthSession] = p.s.secret
	}
	p.s.mu.Unlock()
	return md, nil
}

// RequireTransportSecurity implements credentials.PerRPCCredentials: the
// token travels in clear text like the data it guards; the cluster network
// is trusted to that extent (mTLS would be the next step).
func (perRPC) RequireTransportSecurity() bool { return false }

func (s *session) generation() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gen
}

// took records a session secret famd returned.
func (s *session) took(tr metadata.MD) {
	if v := tr.Get(MDAuthSession); len(v) > 0 && v[0] != "" {
		s.mu.Lock()
		if s.secret != v[0] {
			s.secret = v[0]
			s.gen++
		}
		s.mu.Unlock()
	}
}

// challenge returns the nonce of famd's MUNGE challenge in err and tr, or
// "" when err is not one.
func challenge(err error, tr metadata.MD) string {
	if status.Code(err) != codes.Unauthenticated {
		return ""
	}
	v := tr.Get(MDAuthChallenge)
	if len(v) == 0 {
		return ""
	}
	nonce, ok := strings.CutPrefix(v[0], ModeMunge+" ")
	if !ok {
		return ""
	}
	return nonce
}

// answer makes the MUNGE credential answering nonce.
func (c *Client) answer(nonce string) (string, error) {
	if c.Mode == ModeToken {
		return "", status.Error(codes.Unauthenticated, "famd requires MUNGE authentication, but OPENFAM_AUTH=token")
	}
	cred, err := munge.Encode(c.MungeSocket, MungePayload(nonce))
	if err != nil {
		return "", status.Errorf(codes.Unauthenticated, "famd requires MUNGE authentication: %v", err)
	}
	return cred, nil
}

// maxHandshakes bounds the challenges one call answers (a connection
// replaced between challenge and answer needs a second one).
const maxHandshakes = 3

// unary runs a call, answering famd's MUNGE challenge and running it again
// when famd refused it for want of one (famd refuses before the handler
// runs, so the call is not repeated).
func (s *session) unary(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn,
	invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	callCtx := ctx
	for i := 0; ; i++ {
		gen := s.generation()
		var tr metadata.MD
		err := invoker(callCtx, method, req, reply, cc, append(opts, grpc.Trailer(&tr))...)
		s.took(tr)
		nonce := challenge(err, tr)
		if nonce == "" || i == maxHandshakes {
			return err
		}
		if s.generation() != gen {
			// Another call authenticated meanwhile: its secret may do.
			callCtx = ctx
			continue
		}
		cred, aerr := s.c.answer(nonce)
		if aerr != nil {
			return aerr
		}
		callCtx = metadata.AppendToOutgoingContext(ctx, MDMungeCred, cred)
	}
}

// probeMethod is the call the stream interceptor authenticates with: it
// is cheap, has no side effects and every famd serves it.
const probeMethod = "/openfam.v1.Fam/Info"

// stream opens a stream. famd cannot take a MUNGE answer on a stream, so
// when it refuses one for want of authentication, the stream's error is
// returned after a unary call has authenticated the connection: the
// caller's retry then succeeds.
func (s *session) stream(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string,
	streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	cs, err := streamer(ctx, desc, cc, method, opts...)
	if err != nil {
		return nil, err
	}
	return &authStream{ClientStream: cs, cc: cc}, nil
}

type authStream struct {
	grpc.ClientStream
	cc   *grpc.ClientConn
	once sync.Once
}

// authProbeTimeout bounds the call that authenticates for a stream.
const authProbeTimeout = 10 * time.Second

func (s *authStream) RecvMsg(m any) error {
	err := s.ClientStream.RecvMsg(m)
	if err != nil && challenge(err, s.Trailer()) != "" {
		s.once.Do(func() {
			ctx, cancel := context.WithTimeout(context.Background(), authProbeTimeout)
			defer cancel()
			_ = s.cc.Invoke(ctx, probeMethod, &pb.InfoRequest{}, new(pb.InfoReply))
		})
	}
	return err
}
