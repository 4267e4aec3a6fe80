package core

import (
	"context"
	"errors"
	"sync"
	"time"

	pb "github.com/gofam/openfam/spec/proto/openfamv1"
)

// serverStates is what this client believes of each memory server's
// health (issue 16, redundant regions). The metadata famd owns
// membership: it decides that a server is down and tells every client on
// the session stream, so all PEs agree; a client that meets an error on a
// server only reports it as suspect and, meanwhile, routes the operation
// around it (the surviving copy, or reconstruction).
//
// AGREED SURFACE (lead, 2026-11-25): the redundant data path (striped.go)
// calls down and suspect; the membership side (session events) calls
// setDown. Bodies may grow; the signatures stay.
type serverStates struct {
	mu   sync.Mutex
	down map[uint64]bool
	// rebuilding holds the servers famd is rebuilding: writes go to
	// them, reads should not (their copies are not all current yet).
	rebuilding map[uint64]bool

	// report, when set (a client of famd), sends a report to famd;
	// lastReport rate-limits suspect reports per server.
	report     func(id uint64, err error, wroteAround bool) error
	lastReport map[uint64]time.Time
	// aroundBusy and aroundAgain coalesce wroteAround reports per
	// server: one in flight, and one more after it if any came meanwhile.
	aroundBusy, aroundAgain map[uint64]bool
}

// wroteAroundTries bounds how many times a wroteAround report is sent to
// a famd that does not take it (a second apart).
const wroteAroundTries = 30

// reportEvery is the least time between two reports of one server by
// one client: famd probes at once on the first, so more add nothing.
const reportEvery = time.Second

// down reports whether famd has declared memory server id down.
func (s *serverStates) isDown(id uint64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.down[id]
}

// isRebuilding reports whether famd is rebuilding memory server id's
// copies: a read should go to another copy.
func (s *serverStates) isRebuilding(id uint64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rebuilding[id]
}

// setDown records famd's word on server id (true: down, false: up again,
// rebuilt or rebuilding, so writes go to it again).
func (s *serverStates) setDown(id uint64, down bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.down == nil {
		s.down = map[uint64]bool{}
	}
	if down {
		s.down[id] = true
	} else {
		delete(s.down, id)
	}
}

// setState records a state famd sent on the session stream.
func (s *serverStates) setState(id uint64, st pb.ServerState) {
	s.setDown(id, st == pb.ServerState_SERVER_DOWN)
	s.mu.Lock()
	defer s.mu.Unlock()
	if st == pb.ServerState_SERVER_REBUILDING {
		if s.rebuilding == nil {
			s.rebuilding = map[uint64]bool{}
		}
		s.rebuilding[id] = true
	} else {
		delete(s.rebuilding, id)
	}
}

// suspect is called by the data path when an operation on server id
// failed with err (unreachable or timed out). It reports the server to
// famd, which probes it and decides; the report runs in the background
// and at most once a second per server, so the data path never waits on
// famd. A server famd already declared down is not reported again.
func (s *serverStates) suspect(id uint64, err error) {
	s.mu.Lock()
	if s.report == nil || s.down[id] {
		s.mu.Unlock()
		return
	}
	now := time.Now()
	if last, ok := s.lastReport[id]; ok && now.Sub(last) < reportEvery {
		s.mu.Unlock()
		return
	}
	if s.lastReport == nil {
		s.lastReport = map[uint64]time.Time{}
	}
	s.lastReport[id] = now
	report := s.report
	s.mu.Unlock()
	go func() { _ = report(id, err, false) }()
}

// wroteAround is called by the data path when it completed a write to a
// redundant region without server id (the write failed there, err): the
// server's copy may now be older than the survivors', so famd must
// rebuild it even if the server answers again. Unlike suspect, no such
// report is dropped: reports for one server are sent one at a time, and
// one more follows when any came while one was in flight; a report famd
// does not take is sent again every second (up to wroteAroundTries).
// It never waits.
func (s *serverStates) wroteAround(id uint64, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.report == nil {
		return
	}
	if s.aroundBusy[id] {
		s.aroundAgain[id] = true
		return
	}
	if s.aroundBusy == nil {
		s.aroundBusy, s.aroundAgain = map[uint64]bool{}, map[uint64]bool{}
	}
	s.aroundBusy[id] = true
	report := s.report
	go func() {
		for {
			for try := 0; try < wroteAroundTries; try++ {
				if report(id, err, true) == nil {
					break
				}
				time.Sleep(time.Second)
			}
			s.mu.Lock()
			if !s.aroundAgain[id] {
				delete(s.aroundBusy, id)
				s.mu.Unlock()
				return
			}
			delete(s.aroundAgain, id)
			s.mu.Unlock()
		}
	}()
}

// reportTo makes suspect send its reports with cl, each bounded by
// timeout.
func (s *serverStates) reportTo(cl pb.FamClient, timeout time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.report = func(id uint64, err error, wroteAround bool) error {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		msg := ""
		if err != nil {
			msg = err.Error()
		}
		rep, rerr := cl.ReportServer(ctx, &pb.ReportServerRequest{ServerId: id, Error: msg, WroteAround: wroteAround})
		if rerr == nil && rep.GetErr() != nil {
			rerr = errors.New(rep.GetErr().GetMsg())
		}
		return rerr
	}
}

// serverEvent applies a session event's memory server state, if it
// carries one.
func (r *remote) serverEvent(ev *pb.SessionEvent) {
	if id := ev.GetServerId(); id != 0 {
		r.srv.setState(id, ev.GetServerState())
	}
}
