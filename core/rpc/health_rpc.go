package rpc

import (
	"context"
	"time"

	"github.com/gofam/openfam/core"
	"github.com/gofam/openfam/core/metadata"
	pb "github.com/gofam/openfam/spec/proto/openfamv1"
)

// The Server's side of memory server membership (issue 16): client
// reports, state changes on every session stream, the redundancy fields
// of region descriptions, and keys re-issued on a server that restarted.

// regionRecorder is the core's listing of every region record, whatever
// its permissions (core.Fam.RegionRecords).
type regionRecorder interface {
	RegionRecords() ([]metadata.Region, error)
}

// wireHealth connects the Cluster's membership to this Server: the
// regions it rebuilds, the sessions it tells, the keys it re-issues.
func (s *Server) wireHealth() {
	c := s.opts.Cluster
	if c == nil {
		return
	}
	if rr, ok := any(s.fam).(regionRecorder); ok {
		c.SetRegionSource(rr.RegionRecords)
	}
	c.OnServerState(s.sessions.notifyServer)
	c.health.mu.Lock()
	c.health.regrant = s.regrantOn
	c.health.delivered = s.sessions.waitDelivered
	c.health.mu.Unlock()
}

// ReportServer takes a client's report that a memory server failed an
// operation: famd probes it at once, and declares it down if the probe
// fails too. Any authenticated caller may report: a report alone never
// makes famd declare a server down that answers its probes.
func (s *Server) ReportServer(ctx context.Context, req *pb.ReportServerRequest) (*pb.Reply, error) {
	if s.opts.Cluster == nil {
		return &pb.Reply{Err: errf(core.CodeNotFound, "famd_report_server", "this famd has no memory servers")}, nil
	}
	why := req.GetError()
	if len(why) > 512 {
		why = why[:512] + "..."
	}
	if why == "" {
		why = "(no error given)"
	}
	if err := s.opts.Cluster.health.report(req.GetServerId(), why, peerName(ctx), req.GetWroteAround()); err != nil {
		return &pb.Reply{Err: errf(core.CodeNotFound, "famd_report_server", "%v", err)}, nil
	}
	return &pb.Reply{}, nil
}

// describeRegion fills ri's redundancy state, when famd has memory
// servers.
func (s *Server) describeRegion(ri *pb.RegionInfo) {
	if s.opts.Cluster != nil && ri != nil {
		s.opts.Cluster.describeRegion(ri)
	}
}

// sendServerStates sends a new session the state of every memory server,
// one event each, after its first event.
func (s *Server) sendServerStates(stream pb.Fam_SessionServer) error {
	if s.opts.Cluster == nil {
		return nil
	}
	ids, sts := s.opts.Cluster.serverStates()
	for i, id := range ids {
		if err := stream.Send(&pb.SessionEvent{ServerId: id, ServerState: sts[i]}); err != nil {
			return err
		}
	}
	return nil
}

// notifyServer queues a server's new state for every open session. It
// runs under the health monitor's lock, in the order of the changes.
func (ss *sessions) notifyServer(id uint64, st pb.ServerState) {
	ss.mu.Lock()
	ss.serverGen++
	gen := ss.serverGen
	live := make([]*session, 0, len(ss.live))
	for _, se := range ss.live {
		live = append(live, se)
	}
	ss.mu.Unlock()
	for _, se := range live {
		se.mu.Lock()
		if se.servers == nil {
			se.servers = map[uint64]pb.ServerState{}
		}
		se.servers[id] = st
		se.queuedGen = gen
		se.mu.Unlock()
		select {
		case se.signal <- struct{}{}:
		default:
		}
	}
}

// sendServers sends the session's queued server states.
func (se *session) sendServers(stream pb.Fam_SessionServer) error {
	se.mu.Lock()
	pending, gen := se.servers, se.queuedGen
	se.servers = nil
	se.mu.Unlock()
	for id, st := range pending {
		if err := stream.Send(&pb.SessionEvent{ServerId: id, ServerState: st}); err != nil {
			return err
		}
	}
	se.mu.Lock()
	se.sentGen = max(se.sentGen, gen)
	se.mu.Unlock()
	return nil
}

// waitDelivered waits until every open session was sent the server
// states queued so far, or until deadline; it reports whether they were.
// It polls (every 20 ms): it runs once per recovery, never on a data path.
func (ss *sessions) waitDelivered(deadline time.Time) bool {
	ss.mu.Lock()
	want := ss.serverGen
	ss.mu.Unlock()
	for {
		ss.mu.Lock()
		ok := true
		for _, se := range ss.live {
			se.mu.Lock()
			if se.queuedGen >= want && se.sentGen < se.queuedGen {
				ok = false
			}
			se.mu.Unlock()
		}
		ss.mu.Unlock()
		if ok {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		select {
		case <-ss.stopping:
			return false
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// regrantOn grants again every live key of an item placed on server id
// (it restarted and holds no grants), so that clients holding keys can
// write to it as soon as it is rebuilding. A key revoked meanwhile is
// withdrawn again: a grant must never outlive its revocation.
func (s *Server) regrantOn(id uint64) {
	c := s.opts.Cluster
	s.keys.mu.RLock()
	var es []*entry
	s.keys.eachLocked(func(e *entry) {
		for _, sid := range e.servers {
			if sid == id {
				es = append(es, e)
				break
			}
		}
	})
	s.keys.mu.RUnlock()
	n := 0
	for _, e := range es {
		p, ok := e.it.Placement()
		if !ok {
			continue
		}
		if err := c.grant(p, e.key); err != nil {
			s.logf("famd: granting a key again after memory server %d restarted: %v", id, err)
		} else {
			n++
		}
		if cur, live := s.keys.get(e.key); !live || cur != e {
			c.revoke(e.servers, e.key)
		}
	}
	if len(es) > 0 {
		s.infof("famd: memory server %d restarted: %d of %d live keys on it granted again", id, n, len(es))
	}
}
