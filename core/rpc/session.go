package rpc

import (
	"context"
	"strconv"
	"sync"

	"google.golang.org/grpc/metadata"

	"github.com/gofam/openfam/core/transport"
	"github.com/gofam/openfam/internal/famauth"
	pb "github.com/gofam/openfam/spec/proto/openfamv1"
)

// MDSession is the gRPC metadata key carrying a client's session id.
const MDSession = famauth.MDSession

// sessions tracks the clients' Session streams. A key issued to a call
// that names a live session belongs to it and is revoked when the session
// ends, so a client that dies without closing its items leaves nothing
// behind.
type sessions struct {
	mu       sync.Mutex
	next     uint64
	live     map[uint64]*session
	stopping chan struct{} // closed by drain: every stream ends
	drained  bool
	// serverGen counts memory server state changes queued to sessions
	// (see notifyServer, waitDelivered).
	serverGen uint64
}

// session is one open stream: the revoked keys waiting to be sent.
type session struct {
	mu      sync.Mutex
	revoked [][]byte
	signal  chan struct{}
	// servers holds the memory server states not sent yet, the latest
	// per server; queuedGen and sentGen are the serverGen of the last
	// change queued and the last one sent (issue 16, health.go).
	servers   map[uint64]pb.ServerState
	queuedGen uint64
	sentGen   uint64
}

func newSessions() *sessions {
	return &sessions{live: map[uint64]*session{}, stopping: make(chan struct{})}
}

func (ss *sessions) open() (uint64, *session, bool) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.drained {
		return 0, nil, false
	}
	ss.next++
	se := &session{signal: make(chan struct{}, 1)}
	ss.live[ss.next] = se
	return ss.next, se, true
}

// notify queues key for session id's stream; a session that ended is
// ignored.
func (ss *sessions) notify(id uint64, key transport.Key) {
	ss.mu.Lock()
	se := ss.live[id]
	ss.mu.Unlock()
	if se == nil {
		return
	}
	se.mu.Lock()
	se.revoked = append(se.revoked, append([]byte(nil), key[:]...))
	se.mu.Unlock()
	select {
	case se.signal <- struct{}{}:
	default:
	}
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
	id, se, ok := s.sessions.open()
	if !ok {
		return nil
	}
	_, who := s.view(stream.Context())
	from := peerName(stream.Context())
	s.infof("session %d opened: uid %d gid %d (%s); %d open", id, who.uid, who.gid, from, s.sessions.count())
	defer func() {
		s.sessions.close(id)
		s.keys.revokeSession(id)
		s.infof("session %d ended: uid %d gid %d (%s); its keys revoked; %d open", id, who.uid, who.gid, from, s.sessions.count())
	}()
	if err := stream.Send(&pb.SessionEvent{Session: id}); err != nil {
		return err
	}
	if err := s.sendServerStates(stream); err != nil {
		return err
	}
	for {
		select {
		case <-stream.Context().Done():
			return nil
		case <-s.sessions.stopping:
			return nil
		case <-se.signal:
		}
		se.mu.Lock()
		keys := se.revoked
		se.revoked = nil
		se.mu.Unlock()
		for _, k := range keys {
			if err := stream.Send(&pb.SessionEvent{Revoked: k}); err != nil {
				return err
			}
		}
		if err := se.sendServers(stream); err != nil {
			return err
		}
	}
}

// Sessions reports how many client sessions are open (for logs and tests).
func (s *Server) Sessions() int { return s.sessions.count() }
