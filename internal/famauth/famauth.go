// Package famauth is what famd and its clients agree on to authenticate
// control-plane calls over TCP: the cluster token file, and the gRPC
// metadata every call carries. The client (package core) and the server
// (package core/rpc) both use it, so the two sides cannot drift apart.
package famauth

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// Metadata keys a client sends with every call.
const (
	MDAuthorization = "authorization" // "Bearer <cluster token>"
	MDUID           = "x-fam-uid"     // claimed uid, decimal
	MDGID           = "x-fam-gid"     // claimed gid, decimal
	MDSession       = "x-fam-session" // the client's session id, decimal
)

// ReadToken reads a cluster token file: its content with surrounding
// white space removed. It refuses a file that its group or others may
// read or write (chmod 600 it), and an empty one.
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

// TokenCreds are gRPC per-call credentials: the cluster token and the
// identity the caller claims (the token vouches for it).
type TokenCreds struct {
	Token    string
	UID, GID uint32
}

// GetRequestMetadata implements credentials.PerRPCCredentials.
func (t TokenCreds) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{MDAuthorization: "Bearer " + t.Token,
		MDUID: strconv.FormatUint(uint64(t.UID), 10), MDGID: strconv.FormatUint(uint64(t.GID), 10)}, nil
}

// RequireTransportSecurity implements credentials.PerRPCCredentials: the
// token travels in clear text like the data it guards; the cluster network
// is trusted to that extent (mTLS would be the next step).
func (TokenCreds) RequireTransportSecurity() bool { return false }
