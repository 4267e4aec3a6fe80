package core

import (
	"errors"
	"testing"
	"time"

	pb "github.com/gofam/openfam/spec/proto/openfamv1"
)

// suspect reports at most once a second per server, never a server
// already down, and never waits for the report.
func TestSuspectIsRateLimitedAndAsync(t *testing.T) {
	var s serverStates
	got := make(chan uint64, 16)
	block := make(chan struct{})
	s.report = func(id uint64, _ error, _ bool) error {
		got <- id
		<-block // a famd that does not answer
		return nil
	}
	defer close(block)
	start := time.Now()
	for range 5 {
		s.suspect(1, errors.New("timeout"))
	}
	s.suspect(2, errors.New("timeout"))
	s.setState(3, pb.ServerState_SERVER_DOWN)
	s.suspect(3, errors.New("timeout"))
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("suspect waited %v on a famd that does not answer", d)
	}
	seen := map[uint64]int{}
	for range 2 {
		seen[<-got]++
	}
	select {
	case id := <-got:
		seen[id]++
	case <-time.After(50 * time.Millisecond):
		// Not a synchronisation: a third report would be a bug however
		// late it came; this only bounds how long the test looks for it.
	}
	if seen[1] != 1 || seen[2] != 1 || seen[3] != 0 {
		t.Fatalf("reports per server %v, want one each for 1 and 2, none for the down server 3", seen)
	}
}

// setState keeps down and rebuilding apart: a rebuilding server is not
// down (writes go to it) but is rebuilding (reads avoid it).
func TestSetState(t *testing.T) {
	var s serverStates
	s.setState(4, pb.ServerState_SERVER_DOWN)
	if !s.isDown(4) || s.isRebuilding(4) {
		t.Fatal("down")
	}
	s.setState(4, pb.ServerState_SERVER_REBUILDING)
	if s.isDown(4) || !s.isRebuilding(4) {
		t.Fatal("rebuilding")
	}
	s.setState(4, pb.ServerState_SERVER_SUSPECT)
	if s.isDown(4) || s.isRebuilding(4) {
		t.Fatal("suspect")
	}
	s.setState(4, pb.ServerState_SERVER_UP)
	if s.isDown(4) || s.isRebuilding(4) {
		t.Fatal("up")
	}
}

// wroteAround reports are never dropped: while one is in flight, any
// number of later ones make exactly one more report after it.
func TestWroteAroundCoalescesWithoutLoss(t *testing.T) {
	var s serverStates
	got := make(chan bool, 16)
	release := make(chan struct{})
	s.report = func(id uint64, _ error, around bool) error {
		got <- around
		<-release
		return nil
	}
	s.wroteAround(5, errors.New("write failed"))
	if !<-got {
		t.Fatal("the report does not say the write went around the server")
	}
	for range 4 {
		s.wroteAround(5, errors.New("write failed"))
	}
	release <- struct{}{} // the first report answers
	if !<-got {
		t.Fatal("the follow-up report does not say the write went around the server")
	}
	close(release)
	// The follow-up's goroutine ends once it is answered; nothing more
	// may come.
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		s.mu.Lock()
		busy := s.aroundBusy[5]
		s.mu.Unlock()
		if !busy {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the reports never finished")
		}
	}
	if len(got) != 0 {
		t.Fatalf("%d extra reports: later ones must coalesce into one", len(got))
	}
}
