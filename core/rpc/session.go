package rpc

import (
	"context"
	"strconv"
	"sync"

	"google.golang.org/grpc/metadata"

	pb "github.com/gofam/openfam/spec/proto/openfamv1"
)

// MDSession is the gRPC metadata key carrying a client's session id.
const MDSession = "x-fam-session"

// sessions tracks the clients' Session streams. A key issued to a call
// that names a live session belongs to it and is revoked when the session
// ends, so a client that dies without closing its items leaves nothing
// behind.
type sessions struct {
	mu       sync.Mutex
	next     uint64
	live     map[uint64]struct{}
	stopping chan struct{} // closed by drain: every stream ends
	drained  bool
}

func newSessions() *sessions {
	return &sessions{live: map[uint64]struct{}{}, stopping: make(chan struct{})}
}

func (ss *sessions) open() (uint64, bool) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.drained {
		return 0, false
	}
	ss.next++
	ss.live[ss.next] = struct{}{}
	return ss.next, true
}

func (ss *sessions) close(id uint64) {
	ss.mu.Lock()
	delete(ss.live, id)
	ss.mu.Unlock()
}

func (ss *sessions) isLive(id uint64) bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	_, ok := ss.live[id]
	return ok
}

func (ss *sessions) count() int {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return len(ss.live)
}

func (ss *sessions) drain() {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if !ss.drained {
		ss.drained = true
		close(ss.stopping)
	}
}

// sessionOf returns the live session a call names, or 0.
func (s *Server) sessionOf(ctx context.Context) uint64 {
	md, _ := metadata.FromIncomingContext(ctx)
	id, err := strconv.ParseUint(first(md, MDSession), 10, 64)
	if err != nil || id == 0 || !s.sessions.isLive(id) {
		return 0
	}
	return id
}

// Session gives the caller a session id and holds the stream open until
// the caller goes away or famd stops; then every key of the session is
// revoked.
func (s *Server) Session(_ *pb.SessionRequest, stream pb.Fam_SessionServer) error {
	id, ok := s.sessions.open()
	if !ok {
		return nil
	}
	defer func() {
		s.sessions.close(id)
		s.keys.revokeSession(id)
	}()
	if err := stream.Send(&pb.SessionEvent{Session: id}); err != nil {
		return err
	}
	select {
	case <-stream.Context().Done():
	case <-s.sessions.stopping:
	}
	return nil
}

// Sessions reports how many client sessions are open (for logs and tests).
func (s *Server) Sessions() int { return s.sessions.count() }
